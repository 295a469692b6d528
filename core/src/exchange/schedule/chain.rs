//! Stream chains: short transfers with the same sender and receivers sent
//! back to back as one stream (one select and tear-down for the chain).

use super::*;

/// Longest stream chain: transfers sent back to back as one stream.
pub(super) const MAX_CHAIN: usize = 64;

/// Shortest transfer a chain carries: its receivers' pointer writes must
/// stay 3 events apart (`TileState::control_crowded`).
pub(super) const MIN_CHAIN_TRANSFER_WORDS: u32 = 3;

/// Longest transfer a chain carries: chains are for short runs (a long
/// transfer pays its controls once anyway, and must not wait for a gap as
/// long as the whole chain).
pub(super) const MAX_CHAIN_TRANSFER_WORDS: u32 = 256;

/// For each job, the next job with the same sender and the same receivers
/// (in the same order), which the sender may stream right after it: the
/// receivers keep the sender selected and only move their pointers, so
/// the select and tear-down between the two (and the collisions of those
/// with the pointer writes, `pic_lag` after every select) are saved.
/// So400m's re-layouts move row runs of 16–48 words; chaining them took
/// its one-layer exchange from 225,343 to 199,540 events (lower bound
/// 152,370) and its reserved row space from 41,344 to 27,608 bytes a tile.
/// Paired jobs, and transfers under [`MIN_CHAIN_TRANSFER_WORDS`] or over
/// [`MAX_CHAIN_TRANSFER_WORDS`] or the stream cap (`max_piece`), are never
/// chained; a chain is one stream, so it carries at most the cap in all.
pub(super) fn chain_links(
    phase: &ExchangePhase,
    jobs: &[Job],
    max_piece: u64,
) -> Vec<Option<usize>> {
    let mut next = alloc::vec![None; jobs.len()];
    let mut last: LookupMap<(u16, Vec<u16>), usize> = LookupMap::default();
    for (j, job) in jobs.iter().enumerate() {
        let t = &phase.transfers[job.transfer];
        let words = MIN_CHAIN_TRANSFER_WORDS..=MAX_CHAIN_TRANSFER_WORDS;
        if job.paired || !words.contains(&t.words) || u64::from(t.words) > max_piece {
            continue;
        }
        let tiles = job
            .destinations
            .iter()
            .map(|&k| t.destinations[usize::from(k)].tile.get())
            .collect();
        if let Some(prev) = last.insert((t.source.get(), tiles), j) {
            next[prev] = Some(j);
        }
    }
    next
}

/// One transfer of a stream chain, with its receivers.
pub(super) struct ChainPart<'a> {
    pub(super) transfer: usize,
    pub(super) t: &'a Transfer,
    pub(super) receivers: Vec<Receiver>,
    pub(super) sweep: Option<(i64, u32)>,
}

impl<'a> ChainPart<'a> {
    pub(super) fn new(phase: &'a ExchangePhase, job: &Job, sweep: Option<(i64, u32)>) -> Self {
        let t = &phase.transfers[job.transfer];
        ChainPart {
            transfer: job.transfer,
            t,
            receivers: Receiver::of(t, &job.destinations),
            sweep,
        }
    }
    pub(super) fn words(&self) -> u64 {
        u64::from(self.t.words)
    }
}

/// Places a prefix of `parts` (at least the first, whole) as one stream:
/// the earliest start where the sender and every receiver are free for the
/// first transfer, then as many of the following transfers as fit there,
/// back to back, with the receivers' pointer writes and the final tear-down
/// clear of other controls. Returns how many parts were placed: 0 when no
/// start among the first [`CHAIN_TRIES`] tried suits the chain (the first
/// job is then scheduled on its own, as any other).
pub(super) fn place_chain(
    tiles: &mut [TileState],
    parts: &[ChainPart<'_>],
    pieces: &mut Vec<Piece>,
) -> usize {
    let first = &parts[0];
    let source = first.t.source;
    let receivers = &first.receivers;
    let total: u64 = parts.iter().map(ChainPart::words).sum();
    let mut probe: Vec<usize> = (0..receivers.len()).collect();
    let mut candidate = earliest_start(receivers);
    for _ in 0..CHAIN_TRIES {
        let (start, len) = find_common_gap(
            tiles,
            source,
            receivers,
            &mut probe,
            candidate,
            first.words(),
            total,
        );
        match chain_problem(tiles, parts, start, len) {
            Err(next) => candidate = next.max(start + 1),
            Ok(count) => {
                let mut s = start;
                for (i, part) in parts[..count].iter().enumerate() {
                    let ends = StreamEnds {
                        select: i == 0,
                        teardown: i + 1 == count,
                    };
                    let words = part.words();
                    place(
                        tiles,
                        part.t,
                        &part.receivers,
                        s,
                        words,
                        0,
                        part.sweep,
                        ends,
                    );
                    pieces.push(Piece {
                        transfer: part.transfer,
                        offset: 0,
                        words: part.t.words,
                        start: s,
                        destinations: part.receivers.iter().map(|r| r.index).collect(),
                        paired: false,
                    });
                    s += words;
                }
                return count;
            }
        }
    }
    0
}

/// Candidate starts [`place_chain`] tries before leaving the first job to
/// be scheduled alone.
pub(super) const CHAIN_TRIES: u32 = 4096;

/// How many of `parts` may stream back to back from `start` within a
/// common free run of `len` events, or the next start worth trying. The
/// first part is checked as a lone piece is (its select and pointer); each
/// later one needs a send start its sender's own controls leave free and
/// pointer writes clear of the receivers' other controls; the chain may
/// end after a part whose tear-down is clear of them as a lone piece's
/// must be (and, on a single-control tile, not on one of the chain's own
/// pointer writes).
pub(super) fn chain_problem(
    tiles: &[TileState],
    parts: &[ChainPart<'_>],
    start: u64,
    len: u64,
) -> core::result::Result<usize, u64> {
    let first = &parts[0];
    let st = &tiles[first.t.source.index()];
    if st.send_blocked(start) {
        return Err(st.next_send_start(start));
    }
    for r in &first.receivers {
        let rt = &tiles[r.tile.index()];
        let x = (start as i64 + r.offset) as u64;
        if rt.receive_controls_blocked(x, r.lag) {
            let next = rt.next_receive_controls(x, r.lag);
            return Err(start + (next - x));
        }
    }
    let guard = u64::from(GUARD_EVENTS);
    let mut cum = 0u64;
    let mut count = 0;
    for (i, part) in parts.iter().enumerate() {
        let words = part.words();
        if cum + words > len {
            break;
        }
        let s = start + cum;
        if i > 0 && st.send_blocked(s) {
            break;
        }
        let mask_src = swept_mask(part.t.source_address, part.t.words * 4, part.sweep);
        if let Some(next) = st.window_clash(mask_src, s, s + words + guard, true) {
            if i == 0 {
                return Err(next);
            }
            break;
        }
        let fits = receivers_take(tiles, part, (i, start, cum));
        if !fits {
            break;
        }
        cum += words;
        let ends_here = chain_may_end(tiles, &parts[..=i], start, cum);
        if ends_here {
            count = i + 1;
        }
    }
    if count == 0 {
        return Err(start + 1);
    }
    Ok(count)
}

/// Whether every receiver of `part`, the `i`-th of a chain from `start`
/// (`cum` events into it), may take it: its pointer write clear of the
/// receiver's other controls (after the first part) and its destination
/// elements free while it lands.
fn receivers_take(
    tiles: &[TileState],
    part: &ChainPart<'_>,
    (i, start, cum): (usize, u64, u64),
) -> bool {
    let words = part.words();
    let guard = u64::from(GUARD_EVENTS);
    part.receivers.iter().all(|r| {
        let rt = &tiles[r.tile.index()];
        let p = (start as i64 + r.offset) as u64 + cum + r.lag;
        // Not on another piece's select or tear-down either: a PIC and
        // an XPIC at one event make a `sendpicp`, whose absolute source
        // address a Repeat must patch in every iteration.
        let pointer_ok = i == 0
            || !(rt.control_blocked(p)
                || rt.strict(p)
                || rt.control_crowded(p)
                || rt.marks.has(p, XPIC));
        let dst = part.t.destinations[usize::from(r.index)].address;
        pointer_ok
            && rt
                .window_clash(
                    element_mask(dst, part.t.words * 4),
                    p,
                    p + words + guard,
                    false,
                )
                .is_none()
    })
}

/// Whether a chain of `parts` from `start` may end after its last part
/// (`cum` events in all): the first part's receivers' tear-downs clear,
/// and on a single-control tile not on one of the chain's own pointer
/// writes.
fn chain_may_end(tiles: &[TileState], parts: &[ChainPart<'_>], start: u64, cum: u64) -> bool {
    parts[0].receivers.iter().all(|r| {
        let rt = &tiles[r.tile.index()];
        let x = (start as i64 + r.offset) as u64;
        let end = x + cum;
        // As for a lone piece: a single-control tile cannot take its
        // tear-down with one of the chain's own (unmarked) pointer writes.
        let mut own = 0u64;
        let clear_of_own = !rt.single_controls
            || parts.iter().all(|q| {
                let p = x + own + r.lag;
                own += q.words();
                p != end
            });
        clear_of_own && !rt.teardown_blocked(end)
    })
}
