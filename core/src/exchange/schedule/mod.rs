//! The phase scheduler: list scheduling of transfer pieces over per-tile
//! outgoing and incoming busy intervals, so every tile sends and receives at
//! once.
//!
//! Jobs (a transfer's words to a group of its receivers) are taken
//! largest-remaining-load first: the next job is the one touching the tile
//! with the most stream work still unscheduled, so no receiver is left with
//! a long tail of work once the others are done (on dense random phases this
//! cut 1472 tiles × ≤4000 words × fan-out 64 from 1.265 to 1.202 × the lower
//! bound; a static bottleneck-first order is kept as an option).
//!
//! Each job is placed as one or more *pieces*: the earliest sender start
//! `S` at which the sender's outgoing stream is free on `[S, S+m)` and every
//! receiver `d`'s incoming stream is free on `[S+T(s,d)+1, …+m)` for at
//! least `min_piece_words`; the piece takes the whole common gap. Pieces of one transfer are consecutive source words, so a
//! receiver's pointer usually continues without a new PIC write.
//!
//! Besides stream exclusivity, a placement must keep a tile's receive
//! controls off its own sends' first two events (§2.4), keep XPIC ≥ event 1,
//! and keep send and receive windows that share an SRAM element apart in time
//! (§2.10 rule 5). Violations move the piece later.

use alloc::vec::Vec;

use crate::lookup::LookupMap;

use super::bitmap::EventBits;
use super::error::{ExchangeError, Result};
#[cfg(test)]
use super::intervals::BusyIntervals;
use super::job_order::RemainingLoadOrder;
use super::marks::{EventMarks, CONTROL, PIC, SEND_START, STRICT, XPIC};
use super::pairing::{plan_pairing, TransferPairing};
use super::piece::Piece;
use super::request::{element_mask, ExchangePhase, Transfer};
use super::timeline::paired_source_event;
use super::windows::WindowIndex;
use crate::ipu21::exchange_model::{
    paired_format_lag, pic_lag, GUARD_EVENTS, PAIRED_POINTER_AFTER_FORMAT,
};
use crate::ipu21::tile_set::TileSet;
use crate::ipu21::topology::{mux_time, PhysicalTile, TILE_COUNT};

/// Scheduler knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleOptions {
    /// Smallest piece a transfer is split into (unless fewer words remain).
    /// Smaller pieces fill more gaps but cost receive controls.
    pub min_piece_words: u32,
    /// How far a sender's outgoing load may grow (as a percentage of the
    /// phase's lower bound) by sending a multicast several times to smaller
    /// receiver groups. 0 keeps every multicast whole; otherwise
    /// `schedule_phase` also tries whole multicasts and keeps the shorter.
    pub sender_budget_percent: u32,
    /// Order jobs dynamically by the largest remaining load among their
    /// tiles (instead of by initial load).
    pub remaining_first: bool,
    /// Longest piece, in words, one stream may carry before the scheduler
    /// starts a new piece (the seeds' `--exchange-stream-words`, e.g. B1024);
    /// `None` = a piece takes the whole common gap. Transfers longer than
    /// the cap are sent as 32-bit items (a 64-bit paired job is one piece).
    pub max_stream_words: Option<u32>,
    /// Split a multicast into up to this many receiver groups of
    /// neighbouring pointer lags, where the sender can afford it (its
    /// outgoing load times the groups at most the phase's lower bound);
    /// 0 or 1 never does. A receiver's pointer write lands `pic_lag` =
    /// 52 + 2·row events after its select, and every control must keep 3
    /// events clear of the others (§2.3, §2.5), so back-to-back pieces to
    /// receivers on many rows collide somewhere; receivers of one lag take
    /// them back to back. Stream chains (`chain_links`) remove most such
    /// collisions, so lag groups are only formed for runs too short to
    /// chain (under [`MIN_CHAIN_TRANSFER_WORDS`]), e.g. So400m's LayerNorm
    /// parameter broadcasts (2-word runs from 288 senders to 728
    /// receivers: 5,304 events whole, 4,125 in 23 groups, lower bound
    /// 576); splitting longer runs too gained 1 % of the 27-layer exchange
    /// for 2.6× its scheduling time. Like the sender budget, a split is
    /// only kept when it schedules shorter than whole multicasts
    /// (`schedule_unchecked`). Default 23, one group per tile row at most.
    pub lag_groups: u32,
}

impl Default for ScheduleOptions {
    fn default() -> Self {
        Self {
            min_piece_words: 32,
            sender_budget_percent: 80,
            remaining_first: true,
            max_stream_words: None,
            lag_groups: 23,
        }
    }
}

/// A transfer whose source moves by `stride_bytes` in each of `iterations`
/// Repeat iterations (the rows are scheduled once and Repeat-patched, §2.8).
/// The scheduler keeps every iteration's source span, not only iteration 0's,
/// clear of receive windows sharing an SRAM element (§2.10 rule 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceSweep {
    /// Index of the transfer in the phase.
    pub transfer: usize,
    /// Byte distance between consecutive iterations' sources.
    pub stride_bytes: i64,
    /// Number of iterations (≥ 1).
    pub iterations: u32,
}

/// SRAM elements the span `[addr, addr + bytes)` touches in any iteration of
/// `sweep` (`(stride, iterations)`), or in iteration 0 only without one.
pub(crate) fn swept_mask(addr: u32, bytes: u32, sweep: Option<(i64, u32)>) -> u64 {
    let Some((stride, iterations)) = sweep else {
        return element_mask(addr, bytes);
    };
    let mut mask = 0;
    for i in 0..iterations.max(1) {
        let a = i64::from(addr) + i64::from(i) * stride;
        // Out-of-range iterations are rejected by the Repeat patch plan.
        if let Ok(a) = u32::try_from(a) {
            if a.checked_add(bytes).is_some() {
                mask |= element_mask(a, bytes);
            }
        }
    }
    mask
}

#[derive(Default)]
struct TileState {
    /// The streams as intervals, for the test-only tile walk.
    #[cfg(test)]
    out: BusyIntervals,
    #[cfg(test)]
    inc: BusyIntervals,
    /// Send starts, receive controls, and XPIC and PIC events kept apart
    /// (tiles in single-control mode refuse an XPIC and a PIC at one event),
    /// and the strict events of paired receives (see [`EventMarks`]).
    marks: EventMarks,
    /// Never put an XPIC and a PIC control on one event of this tile, so its
    /// row needs no `sendpicp` (and therefore no 8-byte realignment). Set by
    /// [`schedule_pieces_avoiding`] for tiles whose row could not be aligned.
    single_controls: bool,
    /// SRAM windows of this tile's sends and receives (§2.10 rule 5).
    send_windows: WindowIndex,
    receive_windows: WindowIndex,
    /// `out` and `inc` as bits (the common-gap search reads them 64 events at a time).
    out_bits: EventBits,
    inc_bits: EventBits,
    /// Starts `s` refused by [`Self::send_blocked`].
    send_block: EventBits,
    /// Selects `x` refused by [`Self::receive_controls_blocked`] with this tile's PIC lag.
    receive_block: EventBits,
    /// This tile's PIC lag (`pic_lag`), for `receive_block`.
    lag: u64,
}

impl TileState {
    fn new(tile: PhysicalTile, single_controls: bool) -> Self {
        Self {
            single_controls,
            lag: u64::from(pic_lag(tile)),
            ..Self::default()
        }
    }
    /// Marks the outgoing stream busy on `[start, end)` (free before).
    fn busy_out(&mut self, start: u64, end: u64) {
        #[cfg(test)]
        self.out.insert(start, end);
        self.out_bits.set_range(start, end);
    }
    /// Marks the incoming stream busy on `[start, end)` (free before).
    fn busy_in(&mut self, start: u64, end: u64) {
        #[cfg(test)]
        self.inc.insert(start, end);
        self.inc_bits.set_range(start, end);
    }
    /// Adds `marks` at event `e` and refreshes the starts and selects they
    /// may now block (marks only ever add refusals).
    fn mark(&mut self, e: u64, marks: u8) {
        self.marks.mark(e, marks);
        // A refusal already recorded stays (marks only add refusals), so
        // only starts and selects not yet refused are re-evaluated.
        for s in [e.saturating_sub(1), e] {
            if !self.send_block.get(s) && self.send_blocked(s) {
                self.send_block.set(s);
            }
        }
        // A mark at `e` decides selects `x` with `e` within ±2 of `x` or of
        // its pointer write `x + lag`.
        let near = e.saturating_sub(2)..=e + 2;
        let via_pointer = e.saturating_sub(self.lag + 2)..=(e + 2).saturating_sub(self.lag);
        for x in near.chain(via_pointer) {
            if !self.receive_block.get(x) && self.receive_controls_blocked(x, self.lag) {
                self.receive_block.set(x);
            }
        }
    }
    /// Is the stream free on `[start, end)`? Otherwise the first event worth trying.
    fn free(bits: &EventBits, start: u64, end: u64) -> core::result::Result<(), u64> {
        if bits.get(start) {
            return Err(bits.next_clear(start));
        }
        match bits.next_set(start) {
            Some(f) if f < end => Err(f),
            _ => Ok(()),
        }
    }
    /// Is `c` (a receive control on this tile) on one of its sends' first two events?
    fn control_blocked(&self, c: u64) -> bool {
        self.marks.has(c, SEND_START) || (c > 0 && self.marks.has(c - 1, SEND_START))
    }
    /// Would a new control at `c` fall within two events of a different
    /// existing control? Keeping distinct control events ≥ 3 apart leaves a
    /// multi-event instruction between any two of them, which the encoder
    /// can split to 8-byte-align a following `sendpicp` (§2.3).
    fn control_crowded(&self, c: u64) -> bool {
        (c.saturating_sub(2)..=c + 2).any(|e| e != c && self.marks.has(e, CONTROL))
    }
    /// Would an XPIC at `x` share an event with a PIC (single-control tiles only)?
    fn xpic_doubles(&self, x: u64) -> bool {
        self.single_controls && self.marks.has(x, PIC)
    }
    /// Would a PIC at `p` share an event with an XPIC (single-control tiles only)?
    fn pic_doubles(&self, p: u64) -> bool {
        self.single_controls && self.marks.has(p, XPIC)
    }
    /// May a piece's tear-down (an XPIC back to neutral) not go at `e`?
    fn teardown_blocked(&self, e: u64) -> bool {
        self.control_blocked(e) || self.strict(e) || self.control_crowded(e) || self.xpic_doubles(e)
    }
    /// Would a send starting at `s` put a receive control on its first two events?
    fn send_blocked(&self, s: u64) -> bool {
        self.marks.has(s, CONTROL) || self.marks.has(s + 1, CONTROL)
    }
    /// Is a paired receive's control at `c` (nothing else may share it, §2.6)?
    fn strict(&self, c: u64) -> bool {
        self.marks.has(c, STRICT)
    }
    /// May a 32-bit receive select its sender at `x` and write its pointer
    /// at `x + lag`? (Depends only on `x`: not on the piece's length.)
    fn receive_controls_blocked(&self, x: u64, lag: u64) -> bool {
        let p = x + lag;
        self.control_blocked(x)
            || self.control_blocked(p)
            || self.strict(x)
            || self.strict(p)
            || self.control_crowded(x)
            || self.control_crowded(p)
            || self.xpic_doubles(x)
            || self.pic_doubles(p)
    }
    /// The first `x' > x` at which [`Self::receive_controls_blocked`] is false.
    /// Past the last mark (plus the ±2 look-around) nothing blocks, so this ends.
    fn next_receive_controls(&self, x: u64, lag: u64) -> u64 {
        let mut x = x + 1;
        while self.receive_controls_blocked(x, lag) {
            x += 1;
        }
        x
    }
    /// The first `s' > s` at which [`Self::send_blocked`] is false.
    fn next_send_start(&self, s: u64) -> u64 {
        let mut s = s + 1;
        while self.send_blocked(s) {
            s += 1;
        }
        s
    }
    /// Earliest event the window `[start, end)` with `mask` may be moved to,
    /// if it collides with an opposite-kind window sharing an element.
    fn window_clash(&self, mask: u64, start: u64, end: u64, send: bool) -> Option<u64> {
        let opposite = if send {
            &self.receive_windows
        } else {
            &self.send_windows
        };
        opposite.latest_clash(mask, start, end)
    }
}

/// Part of a transfer scheduled as one multicast: all of its words to a
/// subset of its destinations.
struct Job {
    transfer: usize,
    destinations: Vec<u16>,
    /// 64-bit items to receiver pairs (`destinations` = early, late, …).
    paired: bool,
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
    pairing: &[TransferPairing],
    out_load: &[u64],
    lower_bound: u64,
    options: ScheduleOptions,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    let budget = lower_bound * u64::from(options.sender_budget_percent) / 100;
    for (ti, t) in phase.transfers.iter().enumerate() {
        let load = out_load[t.source.index()].max(1);
        let by_budget = (budget / load) as usize;
        // Lag groups only for runs too short to chain, and only where the
        // sender can afford to send that often.
        let by_lag = match options.lag_groups {
            0 | 1 => 0,
            _ if t.words >= MIN_CHAIN_TRANSFER_WORDS => 0,
            g => (g as usize).min((lower_bound / load) as usize),
        };
        let groups = by_budget.max(by_lag);
        let plan = &pairing[ti];
        if !plan.singles.is_empty() {
            let mut idx = plan.singles.clone();
            let route = |k: u16| mux_time(t.source, t.destinations[usize::from(k)].tile);
            if by_lag > by_budget {
                // Receivers of neighbouring pointer lags together (see
                // `ScheduleOptions::lag_groups`), by route offset within a lag.
                idx.sort_by_key(|&k| (pic_lag(t.destinations[usize::from(k)].tile), route(k), k));
            } else {
                // By route offset, so a group's members start close together.
                idx.sort_by_key(|&k| (route(k), k));
            }
            let per = idx.len().div_ceil(groups.clamp(1, idx.len()));
            for chunk in idx.chunks(per) {
                let mut destinations = chunk.to_vec();
                destinations.sort_unstable();
                jobs.push(Job {
                    transfer: ti,
                    destinations,
                    paired: false,
                });
            }
        }
        if !plan.pairs.is_empty() {
            let mut pairs = plan.pairs.clone();
            pairs.sort_by_key(|p| {
                let e = t.destinations[usize::from(p.early)].tile;
                (paired_source_event(0, t.source, e), p.early)
            });
            // Paired receives keep their own lag rules (§2.6): budget only.
            let per = pairs.len().div_ceil(by_budget.clamp(1, pairs.len()));
            for chunk in pairs.chunks(per) {
                jobs.push(Job {
                    transfer: ti,
                    destinations: chunk.iter().flat_map(|p| [p.early, p.late]).collect(),
                    paired: true,
                });
            }
        }
    }
    jobs
}

/// Does `options`' sender budget split any multicast of `phase` into
/// several jobs? (If not, scheduling with budget 0 gives the same jobs.)
pub(crate) fn splits_multicasts(phase: &ExchangePhase, options: ScheduleOptions) -> bool {
    let (pairing, _, _) = plan_pairing(phase);
    let (out_load, in_load) = event_loads(phase, &pairing);
    let lower_bound = out_load.iter().chain(&in_load).copied().max().unwrap_or(0);
    let jobs = split_multicasts(phase, &pairing, &out_load, lower_bound, options);
    let whole: usize = pairing
        .iter()
        .map(|p| usize::from(!p.singles.is_empty()) + usize::from(!p.pairs.is_empty()))
        .sum();
    jobs.len() != whole
}

/// Events each tile streams out and in, given the pairing decisions: a
/// paired transfer costs `words / 2` events on the sender, its partner
/// (partner busy) and each receiver (plus the two guard events of a paired
/// receive window).
pub(crate) fn event_loads(
    phase: &ExchangePhase,
    pairing: &[TransferPairing],
) -> (Vec<u64>, Vec<u64>) {
    let n = usize::from(TILE_COUNT);
    let (mut out, mut inc) = (alloc::vec![0u64; n], alloc::vec![0u64; n]);
    for (t, plan) in phase.transfers.iter().zip(pairing) {
        let words = u64::from(t.words);
        if !plan.singles.is_empty() {
            out[t.source.index()] += words;
            for &k in &plan.singles {
                inc[t.destinations[usize::from(k)].tile.index()] += words;
            }
        }
        if !plan.pairs.is_empty() {
            let items = words / 2;
            out[t.source.index()] += items;
            out[t.source.pair_partner().index()] += items;
            inc[t.source.pair_partner().index()] += items;
            for p in &plan.pairs {
                for k in [p.early, p.late] {
                    inc[t.destinations[usize::from(k)].tile.index()] += items + 2;
                }
            }
        }
    }
    (out, inc)
}

struct Receiver {
    index: u16,
    tile: PhysicalTile,
    /// `T(s,d) + 1`: receiver XPIC event minus sender start.
    offset: i64,
    /// XPIC → first memory write.
    lag: u64,
}

impl Receiver {
    /// The receivers of a job: `destinations` index `t`'s destinations.
    fn of(t: &Transfer, destinations: &[u16]) -> Vec<Receiver> {
        destinations
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
            .collect()
    }
}

/// The earliest sender start: every receiver's XPIC select must be at
/// event ≥ 1 (multicast shift, §2.5).
fn earliest_start(receivers: &[Receiver]) -> u64 {
    receivers
        .iter()
        .map(|r| (1 - r.offset).max(0) as u64)
        .max()
        .unwrap_or(0)
}

/// Schedules a validated phase into pieces. Deterministic.
pub fn schedule_pieces(phase: &ExchangePhase, options: ScheduleOptions) -> Result<Vec<Piece>> {
    schedule_pieces_avoiding(phase, options, &TileSet::new(), &[])
}

/// [`schedule_pieces`] where the tiles in `single_control_tiles` never get
/// an XPIC and a PIC control on the same event, so their rows need no
/// `sendpicp`. Used to reschedule after a row could not be 8-byte aligned
/// (see [`super::schedule_unchecked`]).
pub fn schedule_pieces_avoiding(
    phase: &ExchangePhase,
    options: ScheduleOptions,
    single_control_tiles: &TileSet<PhysicalTile>,
    sweeps: &[SourceSweep],
) -> Result<Vec<Piece>> {
    phase.validate()?;
    let mut sweep_of: Vec<Option<(i64, u32)>> = alloc::vec![None; phase.transfers.len()];
    for sw in sweeps {
        let slot = sweep_of
            .get_mut(sw.transfer)
            .ok_or(ExchangeError::Internal(
                "source sweep names a missing transfer",
            ))?;
        *slot = Some((sw.stride_bytes, sw.iterations));
    }
    let (mut pairing, _, _) = plan_pairing(phase);
    if let Some(cap) = options.max_stream_words {
        // A paired job is placed as one piece: over the cap, 32-bit pieces.
        for (p, t) in pairing.iter_mut().zip(&phase.transfers) {
            if t.words > cap && !p.pairs.is_empty() {
                *p = TransferPairing {
                    pairs: Vec::new(),
                    singles: (0..t.destinations.len() as u16).collect(),
                };
            }
        }
    }
    let (out_load, in_load) = event_loads(phase, &pairing);
    let lower_bound = out_load
        .iter()
        .chain(in_load.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let jobs = split_multicasts(phase, &pairing, &out_load, lower_bound, options);
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

    let mut tiles: Vec<TileState> = (0..TILE_COUNT)
        .map(|i| {
            let tile = PhysicalTile::new(u32::from(i))
                .map_err(|_| ExchangeError::Internal("tile index out of range"))?;
            Ok(TileState::new(tile, single_control_tiles.contains(tile)))
        })
        .collect::<Result<_>>()?;
    let mut pieces = Vec::new();
    let min_piece = u64::from(options.min_piece_words.max(1));
    let max_piece = options
        .max_stream_words
        .map_or(u64::MAX, |w| u64::from(w.max(1)));
    let min_piece = min_piece.min(max_piece);

    // Remaining (unscheduled) stream load per tile: with `remaining_first`,
    // the next job is the one touching the tile with the most work left.
    // Streams are outgoing (tile index) then incoming (TILE_COUNT + index).
    let mut load_order = options.remaining_first.then(|| {
        let n = usize::from(TILE_COUNT);
        let cost = |j: &Job| {
            let t = &phase.transfers[j.transfer];
            u64::from(if j.paired { t.words / 2 } else { t.words })
        };
        let mut load = alloc::vec![0u64; 2 * n];
        for j in &jobs {
            load[phase.transfers[j.transfer].source.index()] += cost(j);
        }
        load[n..].copy_from_slice(&in_load);
        let streams = jobs
            .iter()
            .map(|j| {
                let t = &phase.transfers[j.transfer];
                core::iter::once(t.source.index())
                    .chain(
                        j.destinations
                            .iter()
                            .map(|&k| n + t.destinations[usize::from(k)].tile.index()),
                    )
                    .collect()
            })
            .collect();
        let words = jobs
            .iter()
            .map(|j| phase.transfers[j.transfer].words)
            .collect();
        RemainingLoadOrder::new(load, streams, jobs.iter().map(cost).collect(), words)
    });
    let chain_next = chain_links(phase, &jobs, max_piece);
    let mut placed = alloc::vec![false; jobs.len()];
    let mut next_static = 0usize;
    loop {
        let ji = if let Some(order) = load_order.as_mut() {
            let Some(i) = order.pop() else {
                break;
            };
            i
        } else {
            let Some(&i) = order.get(next_static) else {
                break;
            };
            next_static += 1;
            i
        };
        if core::mem::replace(&mut placed[ji], true) {
            continue;
        }
        let ti = jobs[ji].transfer;
        let t = &phase.transfers[ti];
        // A chain is one stream: together at most the stream cap.
        let mut chain = alloc::vec![ji];
        let mut chain_words = u64::from(t.words);
        while let Some(&next) = chain.last().and_then(|&j| chain_next[j].as_ref()) {
            chain_words += u64::from(phase.transfers[jobs[next].transfer].words);
            if placed[next] || chain.len() >= MAX_CHAIN || chain_words > max_piece {
                break;
            }
            chain.push(next);
        }
        if chain.len() > 1 {
            let parts: Vec<ChainPart<'_>> = chain
                .iter()
                .map(|&j| ChainPart::new(phase, &jobs[j], sweep_of[jobs[j].transfer]))
                .collect();
            let taken = place_chain(&mut tiles, &parts, &mut pieces);
            for &j in chain.iter().take(taken).skip(1) {
                placed[j] = true;
                if let Some(order) = load_order.as_mut() {
                    order.take(j);
                }
            }
            if taken > 0 {
                continue;
            }
        }
        if jobs[ji].paired {
            pieces.push(place_paired(
                &mut tiles,
                ti,
                t,
                &jobs[ji].destinations,
                sweep_of[ti],
            )?);
            continue;
        }
        let receivers = Receiver::of(t, &jobs[ji].destinations);
        let earliest = earliest_start(&receivers);
        let mut probe: Vec<usize> = (0..receivers.len()).collect();
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
            let (start, len) = find_common_gap(
                &tiles,
                t.source,
                &receivers,
                &mut probe,
                candidate,
                min_len,
                remaining.min(max_piece),
            );
            #[cfg(test)]
            assert_eq!(
                (start, len),
                find_common_gap_walk(
                    &tiles,
                    t.source,
                    &receivers,
                    &mut probe.clone(),
                    candidate,
                    min_len,
                    remaining.min(max_piece),
                ),
                "bit search and tile walk disagree: {}",
                {
                    let st = &tiles[t.source.index()];
                    let mut d = alloc::format!(
                        "min_len {min_len} cand {candidate} sender ff {:?} sb {} bit {} bits {:#x}; ",
                        st.out.first_fit(start, min_len),
                        st.send_blocked(start),
                        st.send_block.get(start),
                        st.out_bits.window(start)
                    );
                    for r in &receivers {
                        let rt = &tiles[r.tile.index()];
                        let x = (start as i64 + r.offset) as u64;
                        d += &alloc::format!(
                            "rx {} off {} lag {}/{} ff {:?} rb {} bit {} inc {:#x}; ",
                            r.tile.get(),
                            r.offset,
                            r.lag,
                            rt.lag,
                            rt.inc.first_fit(x, min_len),
                            rt.receive_controls_blocked(x, r.lag),
                            rt.receive_block.get(x),
                            rt.inc_bits.window(x)
                        );
                    }
                    d
                }
            );
            let src_addr = t.source_address + (offset as u32) * 4;
            match placement_problem(
                &tiles,
                t.source,
                &receivers,
                start,
                len,
                Leftover {
                    remaining,
                    min_piece,
                },
                src_addr,
                t,
                offset,
                sweep_of[ti],
            ) {
                Err(next) => {
                    candidate = next.max(start + 1);
                    continue;
                }
                Ok(len) => {
                    place(
                        &mut tiles,
                        t,
                        &receivers,
                        start,
                        len,
                        offset,
                        sweep_of[ti],
                        StreamEnds::BOTH,
                    );
                    pieces.push(Piece {
                        transfer: ti,
                        offset: offset as u32,
                        words: len as u32,
                        start,
                        destinations: receivers.iter().map(|r| r.index).collect(),
                        paired: false,
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

/// Longest stream chain: transfers sent back to back as one stream.
const MAX_CHAIN: usize = 64;

/// Shortest transfer a chain carries: its receivers' pointer writes must
/// stay 3 events apart (`TileState::control_crowded`).
const MIN_CHAIN_TRANSFER_WORDS: u32 = 3;

/// Longest transfer a chain carries: chains are for short runs (a long
/// transfer pays its controls once anyway, and must not wait for a gap as
/// long as the whole chain).
const MAX_CHAIN_TRANSFER_WORDS: u32 = 256;

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
fn chain_links(phase: &ExchangePhase, jobs: &[Job], max_piece: u64) -> Vec<Option<usize>> {
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
struct ChainPart<'a> {
    transfer: usize,
    t: &'a Transfer,
    receivers: Vec<Receiver>,
    sweep: Option<(i64, u32)>,
}

impl<'a> ChainPart<'a> {
    fn new(phase: &'a ExchangePhase, job: &Job, sweep: Option<(i64, u32)>) -> Self {
        let t = &phase.transfers[job.transfer];
        ChainPart {
            transfer: job.transfer,
            t,
            receivers: Receiver::of(t, &job.destinations),
            sweep,
        }
    }
    fn words(&self) -> u64 {
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
fn place_chain(tiles: &mut [TileState], parts: &[ChainPart<'_>], pieces: &mut Vec<Piece>) -> usize {
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
const CHAIN_TRIES: u32 = 4096;

/// How many of `parts` may stream back to back from `start` within a
/// common free run of `len` events, or the next start worth trying. The
/// first part is checked as a lone piece is (its select and pointer); each
/// later one needs a send start its sender's own controls leave free and
/// pointer writes clear of the receivers' other controls; the chain may
/// end after a part whose tear-down is clear of them as a lone piece's
/// must be (and, on a single-control tile, not on one of the chain's own
/// pointer writes).
fn chain_problem(
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
        let fits = part.receivers.iter().all(|r| {
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
        });
        if !fits {
            break;
        }
        cum += words;
        let ends_here = first.receivers.iter().all(|r| {
            let rt = &tiles[r.tile.index()];
            let x = (start as i64 + r.offset) as u64;
            let end = x + cum;
            // As for a lone piece: a single-control tile cannot take its
            // tear-down with one of the chain's own (unmarked) pointer writes.
            let mut own = 0u64;
            let clear_of_own = !rt.single_controls
                || parts[..=i].iter().all(|q| {
                    let p = x + own + r.lag;
                    own += q.words();
                    p != end
                });
            clear_of_own && !rt.teardown_blocked(end)
        });
        if ends_here {
            count = i + 1;
        }
    }
    if count == 0 {
        return Err(start + 1);
    }
    Ok(count)
}

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
fn find_common_gap(
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
        let mut run = 0u64;
        loop {
            let e = s + run;
            if e >= busy_end {
                run = cap;
                break;
            }
            let mut b = st.out_bits.window(e);
            for r in receivers {
                b |= tiles[r.tile.index()].inc_bits.window(at(e, r));
            }
            let z = u64::from(b.trailing_zeros());
            run += z;
            if z < 64 || run >= cap {
                break;
            }
        }
        if run >= min_len {
            return (s, run.min(cap));
        }
        // Every start up to the busy event ends a run shorter than `min_len`.
        s += run + 1;
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
fn find_common_gap_walk(
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
struct Leftover {
    /// Words of the transfer not yet placed.
    remaining: u64,
    /// The scheduler's smallest piece.
    min_piece: u64,
}

impl Leftover {
    /// May a piece of `m` words be placed now?
    fn allows(self, m: u64) -> bool {
        m >= self.remaining || self.remaining - m >= self.min_piece.min(self.remaining / 2).max(1)
    }
    /// The longest allowed piece shorter than `m`, if any.
    fn longest_below(self, m: u64) -> Option<u64> {
        (1..m).rev().find(|&k| self.allows(k))
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
    leftover: Leftover,
    src_addr: u32,
    t: &super::request::Transfer,
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

/// Which ends of a piece its receivers' XPIC marks: a piece inside a
/// stream chain continues the stream before it (no select) or is
/// continued by the next (no tear-down).
#[derive(Clone, Copy)]
struct StreamEnds {
    select: bool,
    teardown: bool,
}

impl StreamEnds {
    const BOTH: StreamEnds = StreamEnds {
        select: true,
        teardown: true,
    };
}

#[allow(clippy::too_many_arguments)]
fn place(
    tiles: &mut [TileState],
    t: &super::request::Transfer,
    receivers: &[Receiver],
    start: u64,
    len: u64,
    offset: u64,
    sweep: Option<(i64, u32)>,
    ends: StreamEnds,
) {
    let guard = u64::from(GUARD_EVENTS);
    let src = &mut tiles[t.source.index()];
    src.busy_out(start, start + len);
    src.mark(start, SEND_START);
    src.send_windows.insert(
        swept_mask(
            t.source_address + (offset as u32) * 4,
            (len as u32) * 4,
            sweep,
        ),
        start,
        start + len + guard,
    );
    for r in receivers {
        let rt = &mut tiles[r.tile.index()];
        let x = (start as i64 + r.offset) as u64;
        let p = x + r.lag;
        rt.busy_in(x, x + len);
        if ends.select {
            rt.mark(x, CONTROL | XPIC);
        }
        if ends.teardown {
            rt.mark(x + len, CONTROL | XPIC);
        }
        rt.mark(p, CONTROL | PIC);
        let dst = t.destinations[usize::from(r.index)].address + (offset as u32) * 4;
        rt.receive_windows
            .insert(element_mask(dst, (len as u32) * 4), p, p + len + guard);
    }
}

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
fn place_paired(
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
