//! 64-bit (paired) transfers: a sender and its partner stream to receiver
//! pairs, with every paired control on an event no other control uses.

use super::*;

/// Places one paired job as a single piece (§2.6): the earliest sender start
/// `S` where the sender streams `words / 2` items, its partner is idle
/// (partner busy), and every member of every receiving pair is free from one
/// event before its source select to one event after the stream (the paired
/// memory writes lag one event more than 32-bit ones, so the margins keep
/// neighbouring 32-bit writes and the format window apart), with every
/// paired control on an event no other control uses.
///
/// "Partner busy" (§2.6: the sender's partner is reserved for the sender's
/// row): read conservatively as "the partner neither sends nor receives
/// while the paired message streams".
pub(super) fn place_paired(
    tiles: &mut [TileState],
    transfer: usize,
    t: &Transfer,
    destinations: &[u16],
    sweep: Option<(i64, u32)>,
) -> Result<Piece> {
    let items = u64::from(t.words / 2);
    let guard = u64::from(GUARD_EVENTS);
    let partner = t.source.pair_partner();
    struct Member {
        tile: PhysicalTile,
        /// Source select relative to `S`.
        offset: i64,
        format_lag: u64,
        owns: bool,
        address: u32,
    }
    let mut members = Vec::with_capacity(destinations.len());
    for pair in destinations.chunks(2) {
        let [early, late] = pair else {
            return Err(ExchangeError::Internal("paired job with an odd receiver"));
        };
        let e = t.destinations[usize::from(*early)].tile;
        let offset = paired_source_event(0, t.source, e);
        for (k, owns) in [(*early, true), (*late, false)] {
            let d = t.destinations[usize::from(k)];
            members.push(Member {
                tile: d.tile,
                offset,
                format_lag: u64::from(paired_format_lag(d.tile)),
                owns,
                address: d.address,
            });
        }
    }
    let earliest = members
        .iter()
        .map(|m| (2 - m.offset).max(0) as u64)
        .max()
        .unwrap_or(0);
    let src_mask = swept_mask(t.source_address, t.words * 4, sweep);
    let mut s = earliest;
    let mut steps = 0u64;
    let start = 'search: loop {
        steps += 1;
        if steps > 50_000_000 {
            return Err(ExchangeError::Internal("paired placement made no progress"));
        }
        let st = &tiles[t.source.index()];
        if let Err(next) = TileState::free(&st.out_bits, s, s + items) {
            s = next.max(s + 1);
            continue;
        }
        if st.send_blocked(s) {
            s += 1;
            continue;
        }
        if let Some(next) = st.window_clash(src_mask, s, s + items + guard, true) {
            s = next.max(s + 1);
            continue;
        }
        let pt = &tiles[partner.index()];
        for list in [&pt.out_bits, &pt.inc_bits] {
            if let Err(next) = TileState::free(list, s, s + items) {
                s = next.max(s + 1);
                continue 'search;
            }
        }
        for m in &members {
            let rt = &tiles[m.tile.index()];
            let x = (s as i64 + m.offset) as u64;
            if let Err(next) = TileState::free(&rt.inc_bits, x - 1, x + items + 1) {
                s = ((next as i64 + 1 - m.offset).max(s as i64 + 1)) as u64;
                continue 'search;
            }
            let f = x + m.format_lag;
            let p = f + u64::from(PAIRED_POINTER_AFTER_FORMAT);
            let own = [x, x + items];
            let controls = [f, p, f + items];
            let mine = if m.owns { &own[..] } else { &[][..] };
            for &c in mine.iter().chain(controls.iter()) {
                if rt.control_blocked(c) || rt.marks.has(c, CONTROL) || rt.control_crowded(c) {
                    s += 1;
                    continue 'search;
                }
            }
            let mask = element_mask(m.address, t.words * 4);
            if let Some(next) = rt.window_clash(mask, p, p + items + guard, false) {
                s = ((next as i64 - m.offset - m.format_lag as i64).max(s as i64 + 1)) as u64;
                continue 'search;
            }
        }
        break s;
    };
    let st = &mut tiles[t.source.index()];
    st.busy_out(start, start + items);
    st.mark(start, SEND_START);
    st.send_windows
        .insert(src_mask, start, start + items + guard);
    let pt = &mut tiles[partner.index()];
    pt.busy_out(start, start + items);
    pt.busy_in(start, start + items);
    for m in &members {
        let rt = &mut tiles[m.tile.index()];
        let x = (start as i64 + m.offset) as u64;
        let f = x + m.format_lag;
        let p = f + u64::from(PAIRED_POINTER_AFTER_FORMAT);
        rt.busy_in(x - 1, x + items + 1);
        if m.owns {
            for c in [x, x + items] {
                rt.mark(c, CONTROL | STRICT | XPIC);
            }
        }
        for c in [f, p, f + items] {
            rt.mark(c, CONTROL | STRICT | PIC);
        }
        rt.receive_windows
            .insert(element_mask(m.address, t.words * 4), p, p + items + guard);
    }
    Ok(Piece {
        transfer,
        offset: 0,
        words: t.words,
        start,
        destinations: destinations.to_vec(),
        paired: true,
    })
}
