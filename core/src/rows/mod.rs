//! Exchange planning: the exchange phases of a placed schedule → scheduled,
//! checked IPU21 rows, Repeat patch tables, outgoing-base relocation and
//! row-sharing patch lists ([`ExchangePlan`]), which emission then writes
//! out. It sits between `patch` (the row-level primitives it drives) and
//! `emit`.
//!
//! Each lowered phase becomes one [`crate::exchange::ExchangePhase`] with SRAM
//! addresses (iteration 0 for sources inside a Repeat), scheduled once. A
//! transfer whose source is an iterated buffer gets a Repeat patch table
//! (stride = the buffer's [`crate::lower::Buffer::iteration_stride`] on the
//! sending tile — the same address function the kernels use). With outgoing-base
//! relocation ([`ExchangeOptions::outgoing_base`]), a moving sender whose
//! `send` words all move by one displacement instead runs its row with
//! `$OUTGOING_BASE` = the Repeat frame slot of its source buffer (`base +
//! i·stride`, the kernels' address function again) and the row encoded
//! relative to that slot's iteration-0 value; its tables are dropped (words
//! of absolute `sendpicp`s, rows mixing displacements and 64-bit rows keep
//! theirs, counted in [`crate::patch::relocate::OutgoingBaseSummary`]).
//! Every iteration of a relocated phase is replayed with the bases the
//! tiles will hold.
//! Rows of phases are then shared per tile where only address fields
//! differ; Repeat-patched and relocated rows stay private.
//!
//! [`exchange_jobs`] turns each lowered phase into an independent
//! [`PhaseJob`] (`jobs`); [`PhaseJob::schedule`] schedules, checks and
//! patches one phase (`schedule`) and relocates its senders (`relocate`);
//! [`assemble_exchange`] shares rows across phases and totals the plan
//! (`assemble`).

mod assemble;
mod error;
mod jobs;
mod relocate;
mod schedule;

pub use assemble::{
    assemble_exchange, schedule_exchanges, schedule_exchanges_with, ExchangePlan, ExchangeSummary,
    PhaseRows, TileRowUse,
};
pub use error::RowsError;
pub use jobs::{exchange_jobs, PhaseJob};
pub use relocate::OutgoingBase;
pub use schedule::{ExchangeOptions, ScheduledJob};

/// Bytes per exchange word.
const WORD: u32 = 4;
