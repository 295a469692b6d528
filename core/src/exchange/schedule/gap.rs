//! The gap search: the earliest start every tile of a piece accepts, and the
//! control-event and element rules a placement at that start must keep.

use super::*;

/// Earliest `S ≥ candidate` where the sender and every receiver are free for
/// at least `min_len` events, the sender may start a message (no receive
/// control on its first two events) and every receiver may take its select
/// and pointer controls; returns `S` and the common free length (≤ `cap`).
///
/// Read 64 events at a time from every tile's bits: a start is refused if
/// the sender's outgoing stream or a receiver's incoming stream (shifted by
/// its route offset) is busy there, or the sender's `send_block` or a
/// receiver's `receive_block` bit is set; the answer is the first unrefused
/// start whose common free run (the first busy bit of any stream) is at
/// least `min_len`. That is the least start every tile accepts, the same as
/// asking tiles one by one ([`find_common_gap_walk`], tests only). `probe`
/// is the order receivers are read in: one that fills a whole window moves
/// to the front, so busy windows are dismissed after a few reads.
pub(super) fn find_common_gap(
    tiles: &[TileState],
    source: PhysicalTile,
    receivers: &[Receiver],
    probe: &mut [usize],
    candidate: u64,
    min_len: u64,
    cap: u64,
) -> (u64, u64) {
    let st = &tiles[source.index()];
    // s ≥ earliest guarantees x ≥ 1 for every receiver.
    let at = |s: u64, r: &Receiver| (s as i64 + r.offset) as u64;
    // Past `busy_end`, no stream is busy.
    let busy_end = receivers
        .iter()
        .map(|r| {
            let end = tiles[r.tile.index()].inc_bits.end() as i64;
            end.saturating_sub(r.offset).max(0) as u64
        })
        .fold(st.out_bits.end(), u64::max);
    // The first event at or after `e` that neither `busy` nor `blocked` refuses.
    let first_accepted = |busy: &EventBits, blocked: &EventBits, mut e: u64| loop {
        let w = busy.window(e) | blocked.window(e);
        if w != u64::MAX {
            return e + u64::from(w.trailing_ones());
        }
        e += 64;
    };
    let mut s = candidate;
    'windows: loop {
        // Refusals (busy or blocked) in [s, s + 64). A tile that refuses the
        // whole window alone moves `s` to the first start it accepts.
        let mut w = st.out_bits.window(s) | st.send_block.window(s);
        if w == u64::MAX {
            s = first_accepted(&st.out_bits, &st.send_block, s);
            continue;
        }
        for i in 0..probe.len() {
            let r = &receivers[probe[i]];
            let rt = &tiles[r.tile.index()];
            let x = at(s, r);
            let own = rt.inc_bits.window(x) | rt.receive_block.window(x);
            if own == u64::MAX {
                let y = first_accepted(&rt.inc_bits, &rt.receive_block, x);
                s += y - x;
                probe.swap(0, i);
                continue 'windows;
            }
            w |= own;
            if w == u64::MAX {
                probe.swap(0, i);
                break;
            }
        }
        if w == u64::MAX {
            s += 64;
            continue;
        }
        s += u64::from(w.trailing_ones());
        // Every tile accepts `s`: measure the common free run from it.
        let run = common_free_run(tiles, st, receivers, s, busy_end, cap);
        if run >= min_len {
            return (s, run.min(cap));
        }
        // Every start up to the busy event ends a run shorter than `min_len`.
        s += run + 1;
    }
}

/// The free run common to the sender's outgoing stream and every
/// receiver's incoming stream (at its route offset) from `s`, read 64
/// events at a time; `cap` once past `busy_end`, where nothing is busy.
fn common_free_run(
    tiles: &[TileState],
    st: &TileState,
    receivers: &[Receiver],
    s: u64,
    busy_end: u64,
    cap: u64,
) -> u64 {
    let mut run = 0u64;
    loop {
        let e = s + run;
        if e >= busy_end {
            return cap;
        }
        let mut b = st.out_bits.window(e);
        for r in receivers {
            // s ≥ earliest guarantees x ≥ 1 for every receiver.
            b |= tiles[r.tile.index()]
                .inc_bits
                .window((e as i64 + r.offset) as u64);
        }
        let z = u64::from(b.trailing_zeros());
        run += z;
        if z < 64 || run >= cap {
            return run;
        }
    }
}

/// Earliest `S ≥ candidate` where the sender and every receiver are free for
/// at least `min_len` events, the sender may start a message (no receive
/// control on its first two events) and every receiver may take its select
/// and pointer controls; returns `S` and the common free length (≤ `cap`).
///
/// Each refusal moves `S` to the first start that tile could accept, so the
/// answer is the same whatever order tiles are asked in; `probe` is that
/// order, and a tile that refuses moves to its front (the tile that refused
/// last is the likeliest to refuse again), so most candidates are dismissed
/// by the first question.
#[cfg(test)]
pub(super) fn find_common_gap_walk(
    tiles: &[TileState],
    source: PhysicalTile,
    receivers: &[Receiver],
    probe: &mut [usize],
    candidate: u64,
    min_len: u64,
    cap: u64,
) -> (u64, u64) {
    let mut s = candidate;
    let st = &tiles[source.index()];
    'search: loop {
        let mut len = cap;
        let (q, f) = st.out.first_fit(s, min_len);
        if q > s {
            s = q;
            continue 'search;
        }
        len = len.min(f - s);
        if st.send_blocked(s) {
            s = st.next_send_start(s);
            continue 'search;
        }
        for i in 0..probe.len() {
            let r = &receivers[probe[i]];
            let rt = &tiles[r.tile.index()];
            // s ≥ earliest guarantees x ≥ 1.
            let x = (s as i64 + r.offset) as u64;
            let (q, f) = rt.inc.first_fit(x, min_len);
            let next = if q > x {
                q
            } else if rt.receive_controls_blocked(x, r.lag) {
                rt.next_receive_controls(x, r.lag)
            } else {
                len = len.min(f - x);
                continue;
            };
            s = (next as i64 - r.offset) as u64;
            probe.swap(0, i);
            continue 'search;
        }
        return (s, len);
    }
}

/// What is left of a transfer when a piece is placed: a piece may be cut
/// short, but not so short that a sliver is left over (fewer than
/// `min_piece` words, or than half the rest for a short transfer). Each
/// piece costs every receiver a select, a deselect and a pointer write,
/// which must keep clear of the other controls (§2.3), so a one-word
/// remainder waits about a pointer lag for room — measured on So400m's fc2
/// input (24-word runs to 23 receivers): 1640 pieces per receiver, a third
/// of them single words, each followed by a 76-event gap.
#[derive(Clone, Copy)]
pub(super) struct Leftover {
    /// Words of the transfer not yet placed.
    pub(super) remaining: u64,
    /// The scheduler's smallest piece.
    pub(super) min_piece: u64,
}

impl Leftover {
    /// May a piece of `m` words be placed now?
    pub(super) fn allows(self, m: u64) -> bool {
        m >= self.remaining || self.remaining - m >= self.min_piece.min(self.remaining / 2).max(1)
    }
    /// The longest allowed piece shorter than `m`, if any.
    pub(super) fn longest_below(self, m: u64) -> Option<u64> {
        (1..m).rev().find(|&k| self.allows(k))
    }
}

/// Checks control-event and element rules for a piece at `start`; returns the
/// usable length (possibly shortened to move a tear-down off a send start) or
/// the next candidate start.
#[allow(clippy::too_many_arguments)]
pub(super) fn placement_problem(
    tiles: &[TileState],
    source: PhysicalTile,
    receivers: &[Receiver],
    start: u64,
    len: u64,
    leftover: Leftover,
    src_addr: u32,
    t: &Transfer,
    offset: u64,
    sweep: Option<(i64, u32)>,
) -> core::result::Result<u64, u64> {
    let st = &tiles[source.index()];
    if st.send_blocked(start) {
        return Err(st.next_send_start(start));
    }
    // Try the full length first, then slightly shorter pieces whose tear-down
    // avoids a receiver's send start (or, on single-control tiles, a PIC —
    // possibly the piece's own, when its length equals the PIC lag; hence
    // one word below `min_len` is allowed).
    let min_len = leftover.remaining.min(leftover.min_piece);
    let shortest = min_len
        .max(len.saturating_sub(3))
        .min(len.saturating_sub(1))
        .max(1);
    let mut m = len;
    if !leftover.allows(m) {
        // The gap is a little shorter than the rest of the transfer: end
        // the piece early enough that the rest is a piece worth placing.
        match leftover.longest_below(m) {
            Some(shorter) if shorter >= shortest => m = shorter,
            _ => {}
        }
    }
    'lengths: loop {
        let mask_src = swept_mask(src_addr, (m as u32) * 4, sweep);
        if let Some(next) =
            st.window_clash(mask_src, start, start + m + u64::from(GUARD_EVENTS), true)
        {
            return Err(next);
        }
        for r in receivers {
            let rt = &tiles[r.tile.index()];
            let x = (start as i64 + r.offset) as u64;
            let p = x + r.lag;
            if rt.receive_controls_blocked(x, r.lag) {
                // Every start up to the next allowed select is refused by
                // this receiver alone, whatever the others say.
                let next = rt.next_receive_controls(x, r.lag);
                return Err(start + (next - x));
            }
            let own_double = rt.single_controls && x + m == p;
            if rt.teardown_blocked(x + m) || own_double {
                match leftover.longest_below(m) {
                    Some(shorter) if shorter >= shortest => {
                        m = shorter;
                        continue 'lengths;
                    }
                    _ => return Err(start + 1),
                }
            }
            let dst = t.destinations[usize::from(r.index)].address + (offset as u32) * 4;
            let mask_dst = element_mask(dst, (m as u32) * 4);
            if let Some(next) = rt.window_clash(mask_dst, p, p + m + u64::from(GUARD_EVENTS), false)
            {
                return Err((next as i64 - r.offset - r.lag as i64).max(start as i64 + 1) as u64);
            }
        }
        return Ok(m);
    }
}
