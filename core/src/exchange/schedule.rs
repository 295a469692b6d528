//! The phase scheduler: list scheduling of transfer pieces over per-tile
//! outgoing and incoming busy intervals, so every tile sends and receives at
//! once.
//!
//! Transfers are taken bottleneck-first (the transfer touching the most loaded
//! tile goes first). Each is placed as one or more *pieces*: the earliest
//! sender start `S` at which the sender's outgoing stream is free on
//! `[S, S+m)` and every receiver `d`'s incoming stream is free on
//! `[S+T(s,d)+1, …+m)` for at least `min_piece_words`; the piece takes the whole
//! common gap. Pieces of one transfer are consecutive source words, so a
//! receiver's pointer usually continues without a new PIC write.
//!
//! Besides stream exclusivity, a placement must keep a tile's receive
//! controls off its own sends' first two events (§2.4), keep XPIC ≥ event 1,
//! and keep send and receive windows that share an SRAM element apart in time
//! (§2.10 rule 5). Violations move the piece later.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use super::error::{ExchangeError, Result};
use super::intervals::{BusyIntervals, Slot};
use super::request::{element_mask, ExchangePhase};
use crate::target::exchange_model::{pic_lag, GUARD_EVENTS};
use crate::target::topology::{mux_time, PhysicalTile, TILE_COUNT};

/// Scheduler knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleOptions {
    /// Smallest piece a transfer is split into (unless fewer words remain).
    /// Smaller pieces fill more gaps but cost receive controls.
    pub min_piece_words: u32,
    /// How far a sender's outgoing load may grow (as a percentage of the
    /// phase's lower bound) by sending a multicast several times to smaller
    /// receiver groups. 0 keeps every multicast whole.
    pub sender_budget_percent: u32,
}

impl Default for ScheduleOptions {
    fn default() -> Self {
        Self {
            min_piece_words: 32,
            sender_budget_percent: 80,
        }
    }
}

/// One scheduled message: consecutive words of one transfer, sent once and
/// received by the listed destinations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Index of the transfer in the request.
    pub transfer: usize,
    /// First word of the transfer this piece carries.
    pub offset: u32,
    /// Words carried.
    pub words: u32,
    /// Sender's first event `S`.
    pub start: u64,
    /// Indices into the transfer's destinations.
    pub destinations: Vec<u16>,
}

#[derive(Clone, Copy, Debug)]
struct Window {
    mask: u64,
    start: u64,
    end: u64,
    send: bool,
}

#[derive(Default)]
struct TileState {
    out: BusyIntervals,
    inc: BusyIntervals,
    send_starts: BTreeSet<u64>,
    controls: BTreeSet<u64>,
    /// XPIC (select / tear-down) and PIC-pointer events, kept apart so that
    /// tiles in single-control mode can refuse an XPIC and a PIC at one event.
    xpic_events: BTreeSet<u64>,
    pic_events: BTreeSet<u64>,
    /// Never put an XPIC and a PIC control on one event of this tile, so its
    /// row needs no `sendpicp` (and therefore no 8-byte realignment). Set by
    /// [`schedule_pieces_avoiding`] for tiles whose row could not be aligned.
    single_controls: bool,
    windows: Vec<Window>,
}

impl TileState {
    /// Is `c` (a receive control on this tile) on one of its sends' first two events?
    fn control_blocked(&self, c: u64) -> bool {
        self.send_starts.contains(&c) || (c > 0 && self.send_starts.contains(&(c - 1)))
    }
    /// Would a new control at `c` fall within two events of a different
    /// existing control? Keeping distinct control events ≥ 3 apart leaves a
    /// multi-event instruction between any two of them, which the encoder
    /// can split to 8-byte-align a following `sendpicp` (§2.3).
    fn control_crowded(&self, c: u64) -> bool {
        self.controls
            .range(c.saturating_sub(2)..=c + 2)
            .any(|&e| e != c)
    }
    /// Would an XPIC at `x` share an event with a PIC (single-control tiles only)?
    fn xpic_doubles(&self, x: u64) -> bool {
        self.single_controls && self.pic_events.contains(&x)
    }
    /// Would a PIC at `p` share an event with an XPIC (single-control tiles only)?
    fn pic_doubles(&self, p: u64) -> bool {
        self.single_controls && self.xpic_events.contains(&p)
    }
    /// Would a send starting at `s` put a receive control on its first two events?
    fn send_blocked(&self, s: u64) -> bool {
        self.controls.contains(&s) || self.controls.contains(&(s + 1))
    }
    /// Earliest event the window `[start, end)` with `mask` may be moved to,
    /// if it collides with an opposite-kind window sharing an element.
    fn window_clash(&self, mask: u64, start: u64, end: u64, send: bool) -> Option<u64> {
        self.windows
            .iter()
            .filter(|w| w.send != send && w.mask & mask != 0 && w.start < end && start < w.end)
            .map(|w| w.end)
            .max()
    }
}

/// Part of a transfer scheduled as one multicast: all of its words to a
/// subset of its destinations.
struct Job {
    transfer: usize,
    destinations: Vec<u16>,
}

/// Splits multicasts whose receivers would be hard to align into smaller
/// groups, as far as the sender's spare outgoing capacity allows.
///
/// A multicast needs every receiver free at once (shifted by its route
/// time); with many receivers such common gaps appear late. Sending the same
/// words several times to smaller groups costs sender time, which is spare
/// whenever the sender's load is below the phase's lower bound — typically
/// the case in high fan-out phases where receivers are the bottleneck. Each
/// sender may grow its load to `sender_budget_percent` of the lower bound.
fn split_multicasts(
    phase: &ExchangePhase,
    out_load: &[u64],
    lower_bound: u64,
    options: ScheduleOptions,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (ti, t) in phase.transfers.iter().enumerate() {
        let fanout = t.destinations.len();
        let load = out_load[t.source.index()].max(1);
        let budget = lower_bound * u64::from(options.sender_budget_percent) / 100;
        let groups = ((budget / load) as usize).clamp(1, fanout);
        // Receivers sorted by route offset so a group's members start close together.
        let mut idx: Vec<u16> = (0..fanout as u16).collect();
        idx.sort_by_key(|&k| (mux_time(t.source, t.destinations[usize::from(k)].tile), k));
        let per = fanout.div_ceil(groups);
        for chunk in idx.chunks(per) {
            let mut destinations = chunk.to_vec();
            destinations.sort_unstable();
            jobs.push(Job {
                transfer: ti,
                destinations,
            });
        }
    }
    jobs
}

struct Receiver {
    index: u16,
    tile: PhysicalTile,
    /// `T(s,d) + 1`: receiver XPIC event minus sender start.
    offset: i64,
    /// XPIC → first memory write.
    lag: u64,
}

/// Schedules a validated phase into pieces. Deterministic.
pub fn schedule_pieces(phase: &ExchangePhase, options: ScheduleOptions) -> Result<Vec<Piece>> {
    schedule_pieces_avoiding(phase, options, &[])
}

/// [`schedule_pieces`] where the tiles listed in `single_control_tiles`
/// (physical ids) never get an XPIC and a PIC control on the same event, so
/// their rows need no `sendpicp`. Used to reschedule after a row could not
/// be 8-byte aligned (see [`super::schedule_unchecked`]).
pub fn schedule_pieces_avoiding(
    phase: &ExchangePhase,
    options: ScheduleOptions,
    single_control_tiles: &[PhysicalTile],
) -> Result<Vec<Piece>> {
    phase.validate()?;
    let (out_load, in_load) = phase.loads();
    let lower_bound = out_load
        .iter()
        .chain(in_load.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let jobs = split_multicasts(phase, &out_load, lower_bound, options);
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    let priority = |j: &Job| {
        let t = &phase.transfers[j.transfer];
        let rx = j
            .destinations
            .iter()
            .map(|&k| in_load[t.destinations[usize::from(k)].tile.index()])
            .max()
            .unwrap_or(0);
        out_load[t.source.index()].max(rx)
    };
    order.sort_by_key(|&i| {
        (
            core::cmp::Reverse(priority(&jobs[i])),
            core::cmp::Reverse(phase.transfers[jobs[i].transfer].words),
            i,
        )
    });

    let mut tiles: Vec<TileState> = (0..TILE_COUNT).map(|_| TileState::default()).collect();
    for t in single_control_tiles {
        tiles[t.index()].single_controls = true;
    }
    let mut pieces = Vec::new();
    let min_piece = u64::from(options.min_piece_words.max(1));

    for &ji in &order {
        let ti = jobs[ji].transfer;
        let t = &phase.transfers[ti];
        let receivers: Vec<Receiver> = jobs[ji]
            .destinations
            .iter()
            .map(|&k| {
                let d = &t.destinations[usize::from(k)];
                Receiver {
                    index: k,
                    tile: d.tile,
                    offset: i64::from(mux_time(t.source, d.tile)) + 1,
                    lag: u64::from(pic_lag(d.tile)),
                }
            })
            .collect();
        // Every receiver's XPIC select must be at event ≥ 1 (multicast shift, §2.5).
        let earliest = receivers
            .iter()
            .map(|r| (1 - r.offset).max(0) as u64)
            .max()
            .unwrap_or(0);
        let mut remaining = u64::from(t.words);
        let mut offset = 0u64;
        let mut candidate = earliest;
        let mut guard_steps = 0u64;
        while remaining > 0 {
            guard_steps += 1;
            if guard_steps > 50_000_000 {
                return Err(ExchangeError::Internal("scheduler made no progress"));
            }
            let min_len = remaining.min(min_piece);
            let (start, len) =
                find_common_gap(&tiles, t.source, &receivers, candidate, min_len, remaining);
            let src_addr = t.source_address + (offset as u32) * 4;
            match placement_problem(
                &tiles, t.source, &receivers, start, len, min_len, src_addr, t, offset,
            ) {
                Err(next) => {
                    candidate = next.max(start + 1);
                    continue;
                }
                Ok(len) => {
                    place(&mut tiles, t, &receivers, start, len, offset);
                    pieces.push(Piece {
                        transfer: ti,
                        offset: offset as u32,
                        words: len as u32,
                        start,
                        destinations: receivers.iter().map(|r| r.index).collect(),
                    });
                    remaining -= len;
                    offset += len;
                    candidate = start + len;
                }
            }
        }
    }
    pieces.sort_by_key(|p| (p.start, p.transfer, p.offset));
    Ok(pieces)
}

/// Earliest `S ≥ candidate` where the sender and every receiver are free for
/// at least `min_len` events; returns `S` and the common free length (≤ `cap`).
fn find_common_gap(
    tiles: &[TileState],
    source: PhysicalTile,
    receivers: &[Receiver],
    candidate: u64,
    min_len: u64,
    cap: u64,
) -> (u64, u64) {
    let mut s = candidate;
    'search: loop {
        let mut len = cap;
        match tiles[source.index()].out.slot(s) {
            Slot::BusyUntil(b) => {
                s = b;
                continue 'search;
            }
            Slot::FreeUntil(f) => {
                if f - s < min_len {
                    s = f;
                    continue 'search;
                }
                len = len.min(f - s);
            }
        }
        for r in receivers {
            // s ≥ earliest guarantees x ≥ 1.
            let x = (s as i64 + r.offset) as u64;
            match tiles[r.tile.index()].inc.slot(x) {
                Slot::BusyUntil(b) => {
                    s = (b as i64 - r.offset) as u64;
                    continue 'search;
                }
                Slot::FreeUntil(f) => {
                    if f - x < min_len {
                        s = (f as i64 - r.offset) as u64;
                        continue 'search;
                    }
                    len = len.min(f - x);
                }
            }
        }
        return (s, len);
    }
}

/// Checks control-event and element rules for a piece at `start`; returns the
/// usable length (possibly shortened to move a tear-down off a send start) or
/// the next candidate start.
#[allow(clippy::too_many_arguments)]
fn placement_problem(
    tiles: &[TileState],
    source: PhysicalTile,
    receivers: &[Receiver],
    start: u64,
    len: u64,
    min_len: u64,
    src_addr: u32,
    t: &super::request::Transfer,
    offset: u64,
) -> core::result::Result<u64, u64> {
    let st = &tiles[source.index()];
    if st.send_blocked(start) {
        return Err(start + 1);
    }
    // Try the full length first, then slightly shorter pieces whose tear-down
    // avoids a receiver's send start (or, on single-control tiles, a PIC —
    // possibly the piece's own, when its length equals the PIC lag; hence
    // one word below `min_len` is allowed).
    let shortest = min_len
        .max(len.saturating_sub(3))
        .min(len.saturating_sub(1))
        .max(1);
    let mut m = len;
    'lengths: loop {
        let mask_src = element_mask(src_addr, (m as u32) * 4);
        if let Some(next) =
            st.window_clash(mask_src, start, start + m + u64::from(GUARD_EVENTS), true)
        {
            return Err(next);
        }
        for r in receivers {
            let rt = &tiles[r.tile.index()];
            let x = (start as i64 + r.offset) as u64;
            let p = x + r.lag;
            if rt.control_blocked(x)
                || rt.control_blocked(p)
                || rt.control_crowded(x)
                || rt.control_crowded(p)
                || rt.xpic_doubles(x)
                || rt.pic_doubles(p)
            {
                return Err(start + 1);
            }
            let own_double = rt.single_controls && x + m == p;
            if rt.control_blocked(x + m)
                || rt.control_crowded(x + m)
                || rt.xpic_doubles(x + m)
                || own_double
            {
                if m > shortest {
                    m -= 1;
                    continue 'lengths;
                }
                return Err(start + 1);
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

fn place(
    tiles: &mut [TileState],
    t: &super::request::Transfer,
    receivers: &[Receiver],
    start: u64,
    len: u64,
    offset: u64,
) {
    let guard = u64::from(GUARD_EVENTS);
    let src = &mut tiles[t.source.index()];
    src.out.insert(start, start + len);
    src.send_starts.insert(start);
    src.windows.push(Window {
        mask: element_mask(t.source_address + (offset as u32) * 4, (len as u32) * 4),
        start,
        end: start + len + guard,
        send: true,
    });
    for r in receivers {
        let rt = &mut tiles[r.tile.index()];
        let x = (start as i64 + r.offset) as u64;
        let p = x + r.lag;
        rt.inc.insert(x, x + len);
        rt.controls.insert(x);
        rt.controls.insert(x + len);
        rt.controls.insert(p);
        rt.xpic_events.insert(x);
        rt.xpic_events.insert(x + len);
        rt.pic_events.insert(p);
        let dst = t.destinations[usize::from(r.index)].address + (offset as u32) * 4;
        rt.windows.push(Window {
            mask: element_mask(dst, (len as u32) * 4),
            start: p,
            end: p + len + guard,
            send: false,
        });
    }
}
