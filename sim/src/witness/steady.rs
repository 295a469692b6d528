//! Steady stretches: events where nothing about a receiver changes, stepped
//! in bulk instead of one by one (the same moves and faults), and the
//! partner-busy rule of 64-bit streams.

use super::*;

/// §2.6 partner busy: while a tile drives 64-bit items its partner neither
/// drives anything nor has a source selected.
pub(super) fn partner_busy(
    tiles: &[Tile],
    at: &[Option<usize>],
    paired_sel: &[Vec<(u32, u32, u32)>],
) -> Result<(), WitnessFault> {
    for t in tiles {
        let me = t.row.location.tile;
        let Some(j) = at[me.pair_partner().index()] else {
            continue;
        };
        let mut paired = t
            .wire
            .iter()
            .filter(|b| b.sctl & SCTL_PAIRED != 0)
            .peekable();
        // Most tiles drive no 64-bit item: their partner's selections are
        // not needed (they were most of this check's time).
        if paired.peek().is_none() {
            continue;
        }
        let p = &tiles[j];
        let ordinary = selections(&p.controls, false);
        for b in paired {
            let (a, z) = (b.start, b.start + b.items);
            let busy = p
                .wire
                .iter()
                .map(|o| (o.start, o.start + o.items))
                .chain(ordinary.iter().map(|s| (s.0, s.1)))
                .chain(paired_sel[j].iter().map(|s| (s.0, s.1)))
                .filter(|&(from, to)| from < z && a < to)
                .map(|(from, _)| from.max(a))
                .min();
            if let Some(event) = busy {
                return Err(WitnessFault {
                    tile: p.row.location.tile,
                    event,
                    address: None,
                    kind: WitnessFaultKind::PartnerBusy { sender: me },
                });
            }
        }
    }
    Ok(())
}

/// A receiver between two events, as the steady-stream fast path of
/// [`receive`] sees it: everything up to and including event `e` is done.
pub(super) struct Steady {
    pub(super) e: u32,
    /// The row's return event.
    pub(super) end: u32,
    pub(super) lag: u32,
    /// The ordinary stream's source (`XPIC_NEUTRAL`: none) and its route
    /// facts (source value, tile, `T(s,d)`, route bit).
    pub(super) xpic: u32,
    pub(super) route: Option<(u32, PhysicalTile, i32, u32)>,
    /// Where the last wire search ended.
    pub(super) near: usize,
    pub(super) pointer: Option<u64>,
    /// First control event after `e`, first paired selection start after `e`.
    pub(super) next_control: Option<u32>,
    pub(super) next_paired: Option<u32>,
    /// The PIC format in force.
    pub(super) format_shown: u32,
}

/// What the events `e + 1 ..= e + events` of a [`Steady`] receiver do.
#[derive(Clone, Copy)]
pub(super) struct SteadyRun {
    pub(super) events: u32,
    /// The mux takes one 32-bit item at every event: (first source byte
    /// address, its read event, source tile).
    pub(super) takes: Option<(u32, u32, PhysicalTile)>,
    /// The first pending entry writes one item at every event.
    pub(super) writes: bool,
}

/// The events after `s.e` that can be taken in one step, if at least one:
/// no control takes effect and no paired stream starts; either the
/// ordinary stream takes an item at every event, all from one burst its
/// source drives on this route and all before the row returns, or nothing
/// is selected; and the writes due are either none or one at every event,
/// from the first pending entry, of 32-bit items that were on the route,
/// with the PIC format off, the PIC pointer inside memory and
/// `GUARD_EVENTS` before the return. Stepping such events one by one does
/// exactly the same (and nothing at events with no write and no selection),
/// so they are taken in bulk; any other event goes the event-by-event way,
/// which raises every fault.
pub(super) fn steady_events(
    s: &mut Steady,
    pending: &VecDeque<InFlight>,
    tiles: &[Tile],
    at: &[Option<usize>],
) -> Option<SteadyRun> {
    let e = s.e;
    let after = |limit: u32| limit.checked_sub(e)?.checked_sub(1);
    let mut k = after(s.end)?;
    if let Some(c) = s.next_control {
        k = k.min(after(c)?);
    }
    if let Some(p) = s.next_paired {
        k = k.min(after(p)?);
    }
    let words_below_wrap =
        |byte: u32| u32::try_from(((1u64 << 32) - u64::from(byte)) / 4).unwrap_or(u32::MAX);
    let mut takes = None;
    if s.xpic != XPIC_NEUTRAL {
        let (_, source, tm, bit) = s.route.filter(|r| r.0 == s.xpic)?;
        // Items taken in the run are written at least `lag` events later,
        // after it.
        k = k.min(s.lag);
        let x = i64::from(e) - i64::from(tm);
        let wire = at[source.index()].map_or(&[][..], |j| tiles[j].wire.as_slice());
        let (b, off) = on_wire_near(wire, x, &mut s.near)?;
        if b.sctl & bit == 0 || b.sctl & SCTL_PAIRED != 0 {
            return None;
        }
        let first = b.first_byte.wrapping_add(4 * off);
        k = k.min(b.items - off).min(words_below_wrap(first));
        takes = Some((first, x as u32, source));
    }
    let mut writes = false;
    match pending.front() {
        Some(f) if f.write == e + 1 => {
            let (src, _) = f.item?;
            if f.format != 0 || s.format_shown != 0 {
                return None;
            }
            k = k.min(f.count).min(words_below_wrap(src));
            if let Some(n) = pending.get(1) {
                k = k.min(after(n.write)?);
            }
            k = k.min(after(s.end.checked_sub(GUARD_EVENTS)?)?);
            let a = s.pointer?;
            if a < u64::from(TILE_MEMORY_BASE) {
                return None;
            }
            let room = u64::from(TILE_MEMORY_END).checked_sub(a)? / 4;
            k = k.min(u32::try_from(room).unwrap_or(u32::MAX));
            writes = true;
        }
        Some(f) if f.write > e + 1 && takes.is_some() => k = k.min(f.write - e - 1),
        None if takes.is_some() => {}
        _ => return None,
    }
    (k > 0).then_some(SteadyRun {
        events: k,
        takes,
        writes,
    })
}

/// Takes the events of `run` (from [`steady_events`]) in one step.
pub(super) fn take_steady(
    s: &mut Steady,
    run: SteadyRun,
    d: PhysicalTile,
    pending: &mut VecDeque<InFlight>,
    moves: &mut Vec<MoveRun>,
) {
    let (e, k) = (s.e, run.events);
    if run.writes {
        if let (Some(f), Some(a)) = (pending.front_mut(), s.pointer) {
            if let Some((src, read)) = f.item {
                push_run(
                    moves,
                    MoveRun {
                        dst_tile: d,
                        dst_word: (a / 4) as u32,
                        src_tile: f.source,
                        src_word: src / 4,
                        read_event: read,
                        write_event: e + 1,
                        words: k,
                        per_event: 1,
                    },
                );
                s.pointer = Some(a + 4 * u64::from(k));
            }
            if f.count == k {
                pending.pop_front();
            } else {
                f.skip(k);
            }
        }
    }
    if let Some((first, read, source)) = run.takes {
        push_in_flight(
            pending,
            InFlight {
                write: e + 1 + s.lag,
                mux: e + 1,
                source,
                item: Some((first, read)),
                format: 0,
                count: k,
            },
        );
    }
    s.e = e + k;
}
