//! Exchange phases: from "these words on these tiles must land at those
//! addresses on those tiles" to checked IPU21 exchange rows
//! (`docs/facts/ipu21-target.md` §2).
//!
//! Pipeline: [`ExchangePhase`] (validated request) → [`plan_pairing`]
//! (which 64-bit requests get 64-bit items, §2.6) → [`schedule_pieces`]
//! (list scheduling over per-tile busy event bits) → [`build_timelines`]
//! (route model: XPIC at `S+T+1`, PIC at `X+52+2·row`, tear-downs, pointer
//! continuation) → [`encode_timeline`] (instruction words) →
//! [`check_phase`] (decode every row, replay, compare with the request).
//!
//! Supervisor contract for the scheduled rows: `$INCOMING_BASE = 0`,
//! `$OUTGOING_BASE = 0`, `$INCOMING_MUX = 0x640` before the call; PIC values
//! and send addresses are then absolute word addresses. Replay and the
//! checker ([`check_phase_with_bases`]) take the bases each tile really holds
//! ([`RowBases`]): `send` streams are relative to `$OUTGOING_BASE`, PIC
//! pointers to `$INCOMING_BASE`, transmitting `sendpicp` addresses absolute
//! (§2.3–§2.4); `patch::relocate::rebase_row` re-encodes a row for given bases.
//!
//! ```
//! use ipuc_core::exchange::{schedule_phase, Destination, ExchangePhase, Transfer, Width};
//! use ipuc_target::ipu21::topology::LogicalTile;
//! let tile = |l| LogicalTile::new(l).unwrap().physical();
//! let phase = ExchangePhase {
//!     transfers: vec![Transfer {
//!         source: tile(0),
//!         source_address: 0x60000,
//!         words: 100,
//!         destinations: vec![Destination { tile: tile(2), address: 0x70000 }],
//!         width: Width::Word32,
//!     }],
//! };
//! let scheduled = schedule_phase(&phase, Default::default()).unwrap();
//! ipuc_core::exchange::check_phase(&phase, &scheduled.rows).unwrap();
//! assert!(scheduled.events >= 100);
//! ```

mod bitmap;
mod check;
mod decode;
mod encode;
mod error;
#[cfg(test)]
mod intervals;
mod job_order;
mod marks;
mod pairing;
mod piece;
mod placement;
mod random;
mod replay;
mod request;
mod schedule;
mod timeline;
mod windows;

#[cfg(test)]
mod tests;

use alloc::vec::Vec;

pub use check::{
    check_decoded_with_bases, check_iterations, check_phase, check_phase_with_bases, compare,
    decode_checked, CheckReport, IterationRows,
};
pub use decode::{decode_row, ControlKind, DecodedControl, DecodedRow, SendRun, TimedInstruction};
pub use encode::{encode_timeline, ExchangeRow};
pub use error::{CheckError, ExchangeError, ReceiveError, Result, RowDecodeError};
pub use pairing::{
    plan_pairing, PairedFallback, PairedReceiveSetup, PairingReport, ReceiverPair, TransferPairing,
};
pub use piece::Piece;
pub use placement::check_row_placement;
pub use random::{
    random_phase, RandomPhaseSpec, SplitMix64, RANDOM_DESTINATION_BASE, RANDOM_SOURCE_BASE,
};
pub use replay::{
    replay, replay_each, validate_bases, RowBases, TileRowView, WordMove, BASE_LIMIT,
};
pub use request::{element_mask, Destination, ExchangePhase, Transfer, Width};
pub use schedule::{schedule_pieces, schedule_pieces_avoiding, ScheduleOptions, SourceSweep};
pub use timeline::{
    build_timelines, paired_source_event, ControlEvent, OutgoingMessage, TileTimeline,
};

use ipuc_target::ipu21::tile_set::TileSet;
use ipuc_target::ipu21::topology::PhysicalTile;

/// A scheduled phase: one row per physical tile (inactive tiles get the
/// one-word `br $m10` row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledPhase {
    /// Indexed by physical tile id.
    pub rows: Vec<ExchangeRow>,
    /// Events until the last row returns.
    pub events: u32,
    /// Largest number of words one tile sends or receives.
    pub lower_bound: u64,
    /// Largest number of events one tile must stream out or in once 64-bit
    /// items are counted as one event each (plus a paired receive's two
    /// margin events and the partner-busy time); equals `lower_bound`
    /// when nothing is paired.
    pub lower_bound_events: u64,
    /// The scheduled pieces (messages), sorted by start.
    pub pieces: Vec<Piece>,
    /// `$INCOMING_FORMAT` / `$INCOMING_MUXPAIR` values paired receivers need
    /// before the phase (§2.6), sorted by tile.
    pub paired_setup: Vec<PairedReceiveSetup>,
    /// Which 64-bit requests were sent as 64-bit items and why others fell back.
    pub pairing: PairingReport,
}

impl ScheduledPhase {
    /// Rows of tiles that take part (more than the bare return).
    pub fn active_rows(&self) -> impl Iterator<Item = &ExchangeRow> {
        self.rows.iter().filter(|r| r.words.len() > 1)
    }
}

/// Schedules and encodes a phase. In debug and test builds the result is
/// checked with [`check_phase`] before it is returned.
pub fn schedule_phase(phase: &ExchangePhase, options: ScheduleOptions) -> Result<ScheduledPhase> {
    schedule_phase_sweeping(phase, options, &[])
}

/// [`schedule_phase`] for a phase inside a Repeat whose `sweeps` sources move
/// per iteration (Repeat patch tables, §2.8): SRAM element conflicts
/// (§2.10 rule 5) are avoided for every iteration's source address.
pub fn schedule_phase_sweeping(
    phase: &ExchangePhase,
    options: ScheduleOptions,
    sweeps: &[SourceSweep],
) -> Result<ScheduledPhase> {
    let scheduled = schedule_unchecked_sweeping(phase, options, sweeps)?;
    if cfg!(debug_assertions) {
        check_phase(phase, &scheduled.rows)?;
    }
    Ok(scheduled)
}

/// [`schedule_phase`] without the check (callers that check separately, e.g.
/// benchmarks that time the check on its own).
///
/// Splitting multicasts into smaller receiver groups (the sender budget, or
/// groups of similar pointer lag) helps when receivers are random subsets of
/// the tiles or spread over many rows, but costs when
/// nearly every tile receives nearly every transfer: then whole multicasts
/// line up back to back. Both are scheduled and the shorter phase is kept
/// (ties: the split schedule), so neither shape pays for the other.
pub fn schedule_unchecked(
    phase: &ExchangePhase,
    options: ScheduleOptions,
) -> Result<ScheduledPhase> {
    schedule_unchecked_sweeping(phase, options, &[])
}

/// [`schedule_unchecked`] with Repeat source sweeps (see [`schedule_phase_sweeping`]).
pub fn schedule_unchecked_sweeping(
    phase: &ExchangePhase,
    options: ScheduleOptions,
    sweeps: &[SourceSweep],
) -> Result<ScheduledPhase> {
    let split = schedule_encoded(phase, options, sweeps)?;
    // Without a multicast actually split, the whole-multicast schedule is
    // the same jobs in the same order: the same schedule.
    if !schedule::splits_multicasts(phase, options) {
        return Ok(split);
    }
    let whole = ScheduleOptions {
        sender_budget_percent: 0,
        lag_groups: 0,
        ..options
    };
    match schedule_encoded(phase, whole, sweeps) {
        Ok(w) if w.events < split.events => Ok(w),
        _ => Ok(split),
    }
}

/// Schedules with exactly `options` and encodes every row.
fn schedule_encoded(
    phase: &ExchangePhase,
    options: ScheduleOptions,
    sweeps: &[SourceSweep],
) -> Result<ScheduledPhase> {
    // A row whose `sendpicp` cannot be 8-byte aligned (every instruction
    // since the previous `sendpicp` advances one event, e.g. between tiny
    // messages) is not encodable as scheduled. Such tiles are rescheduled in
    // single-control mode (no XPIC and PIC on one event, hence no
    // `sendpicp`), which always encodes. The set only grows (a tile set: at
    // most every tile), so this ends.
    let mut single: TileSet<PhysicalTile> = TileSet::new();
    loop {
        let pieces = schedule_pieces_avoiding(phase, options, &single, sweeps)?;
        let timelines = build_timelines(phase, &pieces)?;
        let mut rows = Vec::with_capacity(timelines.len());
        let mut events = 0;
        let mut misaligned = Vec::new();
        for (id, tl) in timelines.iter().enumerate() {
            let tile = PhysicalTile::new(id as u32)
                .map_err(|_| ExchangeError::Internal("timeline index"))?;
            match encode_timeline(tile, tl) {
                Ok((_, row)) => {
                    events = events.max(row.events);
                    rows.push(row);
                }
                Err(ExchangeError::SendpicpAlignment { tile, .. }) if !single.contains(tile) => {
                    misaligned.push(tile);
                }
                Err(e) => return Err(e),
            }
        }
        if misaligned.is_empty() {
            let (plans, paired_setup, pairing) = plan_pairing(phase);
            let (out, inc) = schedule::event_loads(phase, &plans);
            let lower_bound_events = out.iter().chain(&inc).copied().max().unwrap_or(0);
            return Ok(ScheduledPhase {
                rows,
                events,
                lower_bound: phase.lower_bound(),
                lower_bound_events,
                pieces,
                paired_setup,
                pairing,
            });
        }
        single.extend(misaligned);
    }
}
