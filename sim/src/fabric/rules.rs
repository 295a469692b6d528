//! §2.10 rules 2 and 5 on a phase's actual traffic: no send source or receive
//! destination in an element of the executing row (with its fetch
//! look-ahead), and no send and receive sharing an element on one tile while
//! both are active.

use super::*;

/// A stepped row's byte span `[start, end)`.
pub(super) fn row_span(r: &SteppedRow) -> (u32, u32) {
    let start = r.location.address;
    (start, start.saturating_add(4 * r.words))
}

/// One contiguous piece of a phase's traffic inside one effective element
/// on each side: a run of moves with consecutive source and destination
/// words whose events advance by at most one per word.
#[derive(Clone, Copy, Debug)]
pub(super) struct Piece {
    pub(super) src_tile: PhysicalTile,
    pub(super) dst_tile: PhysicalTile,
    pub(super) src_element: u32,
    pub(super) dst_element: u32,
    /// First source / destination byte address.
    pub(super) src_address: u32,
    pub(super) dst_address: u32,
    pub(super) read: (u32, u32),
    pub(super) write: (u32, u32),
    pub(super) last_src: u32,
    pub(super) last_dst: u32,
}

/// Receive horizon after a transfer's last write (§2.10 rule 5, "≈ last
/// write + 5").
pub(super) const RECEIVE_HORIZON_EVENTS: u32 = 5;

/// Words from byte `addr` on (a multiple of 4) that share its effective
/// element, counting no further than the 32-bit wrap (at least 1).
pub(super) fn words_in_element(addr: u32) -> u64 {
    let a = u64::from(addr);
    let end = if addr < INTERLEAVED_BASE {
        (a / u64::from(ELEMENT_SIZE) + 1) * u64::from(ELEMENT_SIZE)
    } else {
        let base = u64::from(INTERLEAVED_BASE);
        let size = u64::from(INTERLEAVED_ELEMENT_SIZE);
        base + ((a - base) / size + 1) * size
    };
    (end.min(1 << 32) - a).div_ceil(4).max(1)
}

/// Calls `f` with each piece of `moves` (sorted by destination) in order,
/// in one pass: the pieces their word moves make, taken one element-bounded
/// stretch of a run at a time (inside one, every word continues the piece
/// of the word before). Streamed rather than collected: a phase can have
/// millions of pieces, and a vector of them (grown, then dropped every
/// superstep) cost more page faults and copies than the check itself.
pub(super) fn for_each_piece(
    moves: &[MoveRun],
    mut f: impl FnMut(&Piece) -> Result<(), FabricError>,
) -> Result<(), FabricError> {
    let mut current: Option<Piece> = None;
    for r in moves {
        let mut i = 0u32;
        while i < r.words {
            let m = r.single(i);
            let (src, dst) = (m.src_word.wrapping_mul(4), m.dst_word.wrapping_mul(4));
            let stretch = words_in_element(src)
                .min(words_in_element(dst))
                .min(u64::from(r.words - i)) as u32;
            let last = r.single(i + stretch - 1);
            i += stretch;
            let (se, de) = (effective_element(src), effective_element(dst));
            if let Some(p) = current.as_mut() {
                let continues = p.src_tile == m.src_tile
                    && p.dst_tile == m.dst_tile
                    && p.src_element == se
                    && p.dst_element == de
                    && m.src_word == p.last_src.wrapping_add(1)
                    && m.dst_word == p.last_dst.wrapping_add(1)
                    && m.read_event.wrapping_sub(p.read.1) <= 1
                    && m.write_event.wrapping_sub(p.write.1) <= 1;
                if continues {
                    p.read.1 = last.read_event;
                    p.write.1 = last.write_event;
                    p.last_src = last.src_word;
                    p.last_dst = last.dst_word;
                    continue;
                }
                f(p)?;
            }
            current = Some(Piece {
                src_tile: m.src_tile,
                dst_tile: m.dst_tile,
                src_element: se,
                dst_element: de,
                src_address: src,
                dst_address: dst,
                read: (m.read_event, last.read_event),
                write: (m.write_event, last.write_event),
                last_src: last.src_word,
                last_dst: last.dst_word,
            });
        }
    }
    match current {
        Some(p) => f(&p),
        None => Ok(()),
    }
}

/// A piece's two memory windows: `(tile, element, first event, last event,
/// address, is_write)` for its send side, then its receive side (whose
/// window extends by the receive horizon).
pub(super) type Window = (PhysicalTile, u32, u32, u32, u32, bool);

/// The send and receive windows of piece `p`.
pub(super) fn piece_windows(p: &Piece) -> [Window; 2] {
    [
        (
            p.src_tile,
            p.src_element,
            p.read.0,
            p.read.1,
            p.src_address,
            false,
        ),
        (
            p.dst_tile,
            p.dst_element,
            p.write.0,
            p.write.1.saturating_add(RECEIVE_HORIZON_EVENTS),
            p.dst_address,
            true,
        ),
    ]
}

/// Bit of effective element `element` in a per-tile element mask, `None`
/// past element 63 (such windows are never filtered out).
pub(super) fn element_bit(element: u32) -> Option<u64> {
    1u64.checked_shl(element)
}

/// Rule 5 on one (tile, element) group of windows, sorted by first
/// event: no send window overlaps a receive window.
fn check_group(key: (PhysicalTile, u32), group: &[Window]) -> Result<(), FabricError> {
    if !(group.iter().any(|w| w.5) && group.iter().any(|w| !w.5)) {
        return Ok(());
    }
    // Sorted by first event: sweep, remembering the latest-ending
    // window of each kind seen so far.
    let mut open: [Option<(u32, u32, u32)>; 2] = [None, None];
    for w in group {
        let other = open[usize::from(!w.5)];
        if let Some((a, b, address)) = other.filter(|o| o.1 >= w.2) {
            let this = (w.4, w.2, w.3);
            let that = (address, a, b);
            let (send, receive) = if w.5 { (that, this) } else { (this, that) };
            return Err(FabricError::ElementConflict {
                tile: key.0,
                element: key.1,
                send,
                receive,
            });
        }
        let slot = &mut open[usize::from(w.5)];
        if slot.is_none_or(|o| w.3 > o.1) {
            *slot = Some((w.2, w.3, w.4));
        }
    }
    Ok(())
}

/// §2.10 rules 2 and 5 on the phase's actual traffic: no send source or
/// receive destination in an element of the executing row (with its fetch
/// look-ahead), and no send and receive sharing an element on one tile
/// while both are active.
pub fn check_element_rules(rows: &[SteppedRow], moves: &[MoveRun]) -> Result<(), FabricError> {
    if moves.is_empty() {
        return Ok(());
    }
    let mut fetch: Vec<Option<(u32, u32, u32, u32)>> =
        vec![None; usize::from(ipuc_target::ipu21::topology::TILE_COUNT)];
    for r in rows {
        let (start, end) = row_span(r);
        let guard = end + SUPERVISOR_FETCH_LOOKAHEAD;
        fetch[r.location.tile.index()] = Some((
            effective_element(start),
            effective_element(guard - 1),
            start,
            end,
        ));
    }
    // Pass 1, in piece order: rule 2 on every window (the first offending
    // one faults, as before), and the elements each tile sends from and
    // receives into.
    let tiles = usize::from(ipuc_target::ipu21::topology::TILE_COUNT);
    let (mut sends, mut receives) = (vec![0u64; tiles], vec![0u64; tiles]);
    for_each_piece(moves, |p| {
        for w in piece_windows(p) {
            let (tile, element, first, _, address, is_write) = w;
            if let Some((lo, hi, start, end)) = fetch.get(tile.index()).copied().flatten() {
                if (lo..=hi).contains(&element) {
                    return Err(FabricError::FetchElement {
                        tile,
                        send: !is_write,
                        event: first,
                        address,
                        row: (start, end),
                    });
                }
            }
            let masks = if is_write { &mut receives } else { &mut sends };
            if let (Some(bit), Some(m)) = (element_bit(element), masks.get_mut(tile.index())) {
                *m |= bit;
            }
        }
        Ok(())
    })?;
    // Pass 2: only (tile, element) groups with both a send and a receive
    // window can conflict, so only their windows are kept for sorting
    // (elements past 63 are kept, unfiltered).
    let kept = |w: &Window| {
        let t = w.0.index();
        match element_bit(w.1) {
            Some(bit) => {
                sends.get(t).is_none_or(|m| m & bit != 0)
                    && receives.get(t).is_none_or(|m| m & bit != 0)
            }
            None => true,
        }
    };
    let mut windows: Vec<Window> = Vec::new();
    for_each_piece(moves, |p| {
        windows.extend(piece_windows(p).into_iter().filter(|w| kept(w)));
        Ok(())
    })?;
    // Whole-tuple keys: the parallel sort's order is the serial one's.
    windows.par_sort_unstable();
    // Per (tile, element): any send window overlapping any receive window.
    let mut i = 0;
    while i < windows.len() {
        let key = (windows[i].0, windows[i].1);
        let mut j = i;
        while j < windows.len() && (windows[j].0, windows[j].1) == key {
            j += 1;
        }
        check_group(key, &windows[i..j])?;
        i = j;
    }
    Ok(())
}
