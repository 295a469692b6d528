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

use ipuc_target::lookup::LookupMap;

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
use ipuc_target::ipu21::exchange_model::{
    paired_format_lag, pic_lag, GUARD_EVENTS, PAIRED_POINTER_AFTER_FORMAT,
};
use ipuc_target::ipu21::tile_set::TileSet;
use ipuc_target::ipu21::topology::{mux_time, PhysicalTile, TILE_COUNT};

mod tile_state;
use tile_state::*;
mod multicast;
use multicast::*;
pub(crate) use multicast::{event_loads, splits_multicasts};
mod chain;
use chain::*;
mod gap;
use gap::*;
mod place;
use place::*;
mod paired;
use paired::*;

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

/// Part of a transfer scheduled as one multicast: all of its words to a
/// subset of its destinations.
struct Job {
    transfer: usize,
    destinations: Vec<u16>,
    /// 64-bit items to receiver pairs (`destinations` = early, late, …).
    paired: bool,
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
    let sweep_of = sweeps_by_transfer(phase, sweeps)?;
    let pairing = capped_pairing(phase, options);
    let (out_load, in_load) = event_loads(phase, &pairing);
    let lower_bound = out_load
        .iter()
        .chain(in_load.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let jobs = split_multicasts(phase, &pairing, &out_load, lower_bound, options);
    let order = static_order(phase, &jobs, &out_load, &in_load);

    let mut tiles = tile_states(single_control_tiles)?;
    let mut pieces = Vec::new();
    let (min_piece, max_piece) = piece_bounds(options);

    // Remaining (unscheduled) stream load per tile: with `remaining_first`,
    // the next job is the one touching the tile with the most work left.
    // Streams are outgoing (tile index) then incoming (TILE_COUNT + index).
    let mut load_order = options
        .remaining_first
        .then(|| remaining_load_order(phase, &jobs, &in_load));
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
        let chain = chain_from(ji, (phase, &jobs), &chain_next, &placed, max_piece);
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
        place_job(
            &mut tiles,
            (phase, &jobs[ji]),
            sweep_of[ti],
            (min_piece, max_piece),
            &mut pieces,
        )?;
    }
    pieces.sort_by_key(|p| (p.start, p.transfer, p.offset));
    Ok(pieces)
}

/// One job on its own: a paired transfer as one piece, any other in
/// pieces of `bounds` words.
fn place_job(
    tiles: &mut [TileState],
    (phase, job): (&ExchangePhase, &Job),
    sweep: Option<(i64, u32)>,
    bounds: (u64, u64),
    pieces: &mut Vec<Piece>,
) -> Result<()> {
    let ti = job.transfer;
    let t = &phase.transfers[ti];
    if job.paired {
        pieces.push(place_paired(tiles, ti, t, &job.destinations, sweep)?);
        return Ok(());
    }
    place_pieces(tiles, t, ti, &job.destinations, sweep, bounds, pieces)
}

/// Every tile's scheduling state, those in `single_control_tiles` never
/// to take two controls on one event.
fn tile_states(single_control_tiles: &TileSet<PhysicalTile>) -> Result<Vec<TileState>> {
    (0..TILE_COUNT)
        .map(|i| {
            let tile = PhysicalTile::new(u32::from(i))
                .map_err(|_| ExchangeError::Internal("tile index out of range"))?;
            Ok(TileState::new(tile, single_control_tiles.contains(tile)))
        })
        .collect()
}

/// The shortest and longest piece, in words (the shortest never above
/// the longest).
fn piece_bounds(options: ScheduleOptions) -> (u64, u64) {
    let min_piece = u64::from(options.min_piece_words.max(1));
    let max_piece = options
        .max_stream_words
        .map_or(u64::MAX, |w| u64::from(w.max(1)));
    (min_piece.min(max_piece), max_piece)
}

/// Job `ji` and the unplaced jobs chained after it (`chain_next`): a
/// chain is one stream, so together at most `max_piece` words and
/// [`MAX_CHAIN`] jobs.
fn chain_from(
    ji: usize,
    (phase, jobs): (&ExchangePhase, &[Job]),
    chain_next: &[Option<usize>],
    placed: &[bool],
    max_piece: u64,
) -> Vec<usize> {
    let mut chain = alloc::vec![ji];
    let mut chain_words = u64::from(phase.transfers[jobs[ji].transfer].words);
    while let Some(&next) = chain.last().and_then(|&j| chain_next[j].as_ref()) {
        chain_words += u64::from(phase.transfers[jobs[next].transfer].words);
        if placed[next] || chain.len() >= MAX_CHAIN || chain_words > max_piece {
            break;
        }
        chain.push(next);
    }
    chain
}

/// Each transfer's source sweep (`(stride, iterations)`), by transfer index.
fn sweeps_by_transfer(
    phase: &ExchangePhase,
    sweeps: &[SourceSweep],
) -> Result<Vec<Option<(i64, u32)>>> {
    let mut sweep_of: Vec<Option<(i64, u32)>> = alloc::vec![None; phase.transfers.len()];
    for sw in sweeps {
        let slot = sweep_of
            .get_mut(sw.transfer)
            .ok_or(ExchangeError::Internal(
                "source sweep names a missing transfer",
            ))?;
        *slot = Some((sw.stride_bytes, sw.iterations));
    }
    Ok(sweep_of)
}

/// The phase's 64-bit pairing decisions, with every transfer over the
/// stream cap sent as 32-bit items (a paired job is placed as one piece).
fn capped_pairing(phase: &ExchangePhase, options: ScheduleOptions) -> Vec<TransferPairing> {
    let (mut pairing, _, _) = plan_pairing(phase);
    if let Some(cap) = options.max_stream_words {
        for (p, t) in pairing.iter_mut().zip(&phase.transfers) {
            if t.words > cap && !p.pairs.is_empty() {
                *p = TransferPairing {
                    pairs: Vec::new(),
                    singles: (0..t.destinations.len() as u16).collect(),
                };
            }
        }
    }
    pairing
}

/// Jobs by their busiest tile's initial load, largest first (then longest
/// transfer, then job index): the static order.
fn static_order(
    phase: &ExchangePhase,
    jobs: &[Job],
    out_load: &[u64],
    in_load: &[u64],
) -> Vec<usize> {
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
    order
}

/// The dynamic order: remaining (unscheduled) stream load per tile, so the
/// next job is the one touching the tile with the most work left. Streams
/// are outgoing (tile index) then incoming (`TILE_COUNT` + index).
fn remaining_load_order(
    phase: &ExchangePhase,
    jobs: &[Job],
    in_load: &[u64],
) -> RemainingLoadOrder {
    let n = usize::from(TILE_COUNT);
    let cost = |j: &Job| {
        let t = &phase.transfers[j.transfer];
        u64::from(if j.paired { t.words / 2 } else { t.words })
    };
    let mut load = alloc::vec![0u64; 2 * n];
    for j in jobs {
        load[phase.transfers[j.transfer].source.index()] += cost(j);
    }
    load[n..].copy_from_slice(in_load);
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
}

/// Places transfer `ti` (`t`) to `destinations` as pieces: at each step the
/// earliest common gap of the sender and every receiver long enough for a
/// piece (`min_piece`, at most `max_piece` words), moved later while the
/// placement rules refuse it.
fn place_pieces(
    tiles: &mut [TileState],
    t: &Transfer,
    ti: usize,
    destinations: &[u16],
    sweep: Option<(i64, u32)>,
    (min_piece, max_piece): (u64, u64),
    pieces: &mut Vec<Piece>,
) -> Result<()> {
    let receivers = Receiver::of(t, destinations);
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
            tiles,
            t.source,
            &receivers,
            &mut probe,
            candidate,
            min_len,
            remaining.min(max_piece),
        );
        #[cfg(test)]
        assert_walk_agrees(
            tiles,
            t,
            &receivers,
            &probe,
            (candidate, min_len, remaining.min(max_piece)),
            (start, len),
        );
        let leftover = Leftover {
            remaining,
            min_piece,
        };
        let src_addr = t.source_address + (offset as u32) * 4;
        let problem = placement_problem(
            tiles, t.source, &receivers, start, len, leftover, src_addr, t, offset, sweep,
        );
        let len = match problem {
            Err(next) => {
                candidate = next.max(start + 1);
                continue;
            }
            Ok(len) => len,
        };
        place(
            tiles,
            t,
            &receivers,
            start,
            len,
            offset,
            sweep,
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
    Ok(())
}

/// Tests only: the bit search's gap (`found`) is the one asking the tiles
/// one by one gives ([`find_common_gap_walk`]).
#[cfg(test)]
fn assert_walk_agrees(
    tiles: &[TileState],
    t: &Transfer,
    receivers: &[Receiver],
    probe: &[usize],
    (candidate, min_len, max_len): (u64, u64, u64),
    found: (u64, u64),
) {
    let (start, len) = found;
    assert_eq!(
        (start, len),
        find_common_gap_walk(
            tiles,
            t.source,
            receivers,
            &mut probe.to_vec(),
            candidate,
            min_len,
            max_len,
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
            for r in receivers {
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
}
