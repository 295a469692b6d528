//! [`PhaseJob::schedule`]: one phase scheduled, checked, given its Repeat
//! patch tables and, with [`ExchangeOptions::outgoing_base`], its uniform
//! moving senders relocated.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::jobs::PhaseJob;
use super::relocate::{relocate_phase, OutgoingBase};
use super::RowsError;
use crate::exchange::{
    check_phase, schedule_unchecked_sweeping, CheckReport, ExchangeRow, ScheduleOptions,
    ScheduledPhase, SourceSweep,
};
use crate::patch::relocate::OutgoingBaseSummary;
use crate::patch::repeat::{repeat_patch_plan, RepeatPatchPlan, RepeatPatchTable};

/// Exchange planning choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExchangeOptions {
    /// Relocate uniform moving senders with a per-iteration `$OUTGOING_BASE`
    /// instead of Repeat patch tables (`--no-outgoing-base` clears it).
    pub outgoing_base: bool,
    /// Scheduler knobs.
    pub schedule: ScheduleOptions,
}

impl Default for ExchangeOptions {
    fn default() -> Self {
        ExchangeOptions {
            outgoing_base: true,
            schedule: ScheduleOptions::default(),
        }
    }
}

/// A scheduled [`PhaseJob`]: rows (relocated senders rebased), the Repeat
/// patch tables they still need, and the relocation's counts.
#[derive(Clone, Debug)]
pub struct ScheduledJob {
    /// What the compile-time check of the scheduled rows saw (run in
    /// every build profile).
    pub check: CheckReport,
    /// The schedule; its rows are the table-based program's (what the
    /// patch audit describes).
    pub scheduled: ScheduledPhase,
    /// Rows as emitted: relocated senders encoded relative to their base.
    pub rows: Vec<ExchangeRow>,
    pub patch_plan: Option<RepeatPatchPlan>,
    /// Repeat patch tables left after relocation, by physical tile.
    pub tables: BTreeMap<u16, Vec<RepeatPatchTable>>,
    /// Relocated senders' bases, by physical tile.
    pub bases: BTreeMap<u16, OutgoingBase>,
    /// This phase's relocation counts.
    pub relocation: OutgoingBaseSummary,
    /// Patch-table words per tile the relocation saved (× iterations).
    pub saved_words: BTreeMap<u16, u64>,
}

impl PhaseJob {
    /// Schedules the phase, checks it (in every build profile) and, inside a Repeat,
    /// derives its patch tables and relocates uniform moving senders
    /// (replaying every iteration). Deterministic and independent of any
    /// other job.
    pub fn schedule(&self, options: ExchangeOptions) -> Result<ScheduledJob, RowsError> {
        let step = self.step.0;
        // Inside a Repeat, every iteration's source must keep clear of
        // concurrent receives (§2.10 rule 5), not only iteration 0's.
        let sweeps: Vec<SourceSweep> = match self.trip_count {
            Some(trips) => self
                .iterated
                .iter()
                .map(|it| SourceSweep {
                    transfer: it.transfer,
                    stride_bytes: it.stride_bytes,
                    iterations: trips,
                })
                .collect(),
            None => Vec::new(),
        };
        let scheduled = schedule_unchecked_sweeping(&self.wire, options.schedule, &sweeps)
            .map_err(|error| RowsError::Exchange { step, error })?;
        // The compile-time check runs in every build profile (release
        // included): every row decoded, the phase replayed with the route
        // model and compared word for word with the request.
        let check = check_phase(&self.wire, &scheduled.rows)
            .map_err(|error| RowsError::Exchange { step, error })?;
        let mut rows = scheduled.rows.clone();
        let mut tables: BTreeMap<u16, Vec<RepeatPatchTable>> = BTreeMap::new();
        let mut bases = BTreeMap::new();
        let mut relocation = OutgoingBaseSummary::default();
        let mut saved_words = BTreeMap::new();
        let patch_plan = match self.trip_count {
            Some(trips) if !self.iterated.is_empty() => {
                let patch = repeat_patch_plan(&self.wire, &scheduled, &self.iterated, trips)
                    .map_err(|error| RowsError::Patch { step, error })?;
                for t in &patch.tables {
                    tables.entry(t.tile.get()).or_default().push(t.clone());
                }
                if options.outgoing_base {
                    let relocated =
                        relocate_phase(self, trips, &mut rows, &mut tables, &mut relocation)?;
                    bases = relocated.bases;
                    saved_words = relocated.saved_words;
                }
                Some(patch)
            }
            _ => None,
        };
        Ok(ScheduledJob {
            check,
            scheduled,
            rows,
            patch_plan,
            tables,
            bases,
            relocation,
            saved_words,
        })
    }
}
