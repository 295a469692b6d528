//! The program's [`ExchangePlan`]: scheduled phases joined, their rows shared
//! per tile, totals and the patch audit.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::jobs::PhaseJob;
use super::relocate::OutgoingBase;
use super::schedule::{ExchangeOptions, ScheduledJob};
use super::{exchange_jobs, RowsError, WORD};
use crate::exchange::{CheckReport, ExchangeRow, ScheduledPhase};
use crate::lower::{StepIndex, TileSchedule};
use crate::patch::audit::{audit, AuditedPhase, PatchAudit};
use crate::patch::relocate::OutgoingBaseSummary;
use crate::patch::repeat::{RepeatPatchPlan, RepeatPatchTable};
use crate::patch::sharing::{share_rows, SharedRows, SharingPatchList};
use crate::place::BufferAddresses;
use ipuc_target::ipu21::tile_set::TileSet;
use ipuc_target::ipu21::topology::PhysicalTile;

/// How one tile runs one phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileRowUse {
    /// Index into the tile's stored rows.
    pub stored: usize,
    /// Words to write into the stored row before it runs (shared rows only).
    pub sharing: Option<SharingPatchList>,
    /// Words to rewrite per Repeat iteration before the row runs.
    pub repeat: Vec<RepeatPatchTable>,
    /// Relocated sender: `$OUTGOING_BASE` comes from this Repeat frame slot
    /// (else the tile runs the row with base 0).
    pub outgoing_base: Option<OutgoingBase>,
}

/// One scheduled phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseRows {
    /// The lowered phase's step.
    pub step: StepIndex,
    /// Events until the last row returns.
    pub events: u32,
    /// Largest number of words one tile sends or receives.
    pub lower_bound: u64,
    /// Row uses of the active tiles, by physical tile.
    pub uses: BTreeMap<PhysicalTile, TileRowUse>,
}

/// Totals over all phases (for reports and audits).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExchangeSummary {
    /// Phases scheduled.
    pub phases: usize,
    /// Rows stored after sharing.
    pub stored_rows: usize,
    /// Row uses with a sharing patch list (uses of a row shared by phases
    /// whose address words differ; rows used once carry none).
    pub shared_uses: usize,
    /// Row words rewritten per Repeat iteration (tables emitted; after
    /// relocation when it is on).
    pub repeat_patched_words: usize,
    /// Phases whose rows the compile-time check decoded, replayed and
    /// compared with the request (every phase, in every build profile),
    /// and the words it saw delivered.
    pub checked_phases: usize,
    pub checked_words: u64,
    /// Sum of phase lengths in events (one execution of each phase).
    pub events: u64,
    /// Sum of the phases' lower bounds.
    pub lower_bound: u64,
    /// Audit of the emitted Repeat patches and sharing patch lists.
    pub audit: PatchAudit,
}

/// All rows of a program.
#[derive(Clone, Debug, Default)]
pub struct ExchangePlan {
    /// Phases by step index.
    pub phases: BTreeMap<StepIndex, PhaseRows>,
    /// Stored rows per physical tile.
    pub stored: BTreeMap<PhysicalTile, Vec<ExchangeRow>>,
    /// Totals.
    pub summary: ExchangeSummary,
}

/// Schedules every exchange phase of `schedule` and shares rows per tile.
pub fn schedule_exchanges(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
) -> Result<ExchangePlan, RowsError> {
    schedule_exchanges_with(schedule, addrs, ExchangeOptions::default())
}

/// [`schedule_exchanges`] with explicit options: scheduler knobs (e.g. a
/// stream cap, [`ScheduleOptions::max_stream_words`]) and outgoing-base
/// relocation; one phase after the other. Hosts with threads use
/// [`exchange_jobs`], run [`PhaseJob::schedule`] in parallel and finish
/// with [`assemble_exchange`].
pub fn schedule_exchanges_with(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    options: ExchangeOptions,
) -> Result<ExchangePlan, RowsError> {
    let jobs = exchange_jobs(schedule, addrs)?;
    let scheduled = jobs
        .iter()
        .map(|j| j.schedule(options))
        .collect::<Result<Vec<_>, _>>()?;
    assemble_exchange(&jobs, scheduled, options)
}

/// Shares the rows of scheduled phases per tile and builds the program's
/// [`ExchangePlan`]; `scheduled[i]` is `jobs[i]` scheduled with `options`.
pub fn assemble_exchange(
    jobs: &[PhaseJob],
    scheduled: Vec<ScheduledJob>,
    options: ExchangeOptions,
) -> Result<ExchangePlan, RowsError> {
    if jobs.len() != scheduled.len() {
        return Err(RowsError::PhaseCount {
            jobs: jobs.len(),
            scheduled: scheduled.len(),
        });
    }
    let mut scheduled_rows: Vec<Vec<ExchangeRow>> = Vec::with_capacity(jobs.len());
    let mut audited_rows: Vec<Vec<ExchangeRow>> = Vec::with_capacity(jobs.len());
    let mut tables: Vec<BTreeMap<u16, Vec<RepeatPatchTable>>> = Vec::new();
    let mut relocations: Vec<BTreeMap<u16, OutgoingBase>> = Vec::with_capacity(jobs.len());
    let mut patch_plans: Vec<Option<RepeatPatchPlan>> = Vec::new();
    // Per phase, the tiles whose row carries Repeat patches or a relocated
    // base (a tile set: keys of both maps, each tile once).
    let mut private: Vec<TileSet<PhysicalTile>> = Vec::new();
    let mut relocation = OutgoingBaseSummary {
        enabled: options.outgoing_base,
        ..OutgoingBaseSummary::default()
    };
    let mut saved_words: BTreeMap<u16, u64> = BTreeMap::new();
    let mut plan = ExchangePlan::default();
    for (job, done) in jobs.iter().zip(scheduled) {
        let ScheduledJob {
            check,
            scheduled,
            rows,
            patch_plan,
            tables: by_tile,
            bases,
            relocation: phase_relocation,
            saved_words: phase_saved,
        } = done;
        add_phase(&mut plan, job, &scheduled, &check);
        plan.summary.repeat_patched_words += by_tile.values().map(Vec::len).sum::<usize>();
        relocation.add(phase_relocation);
        for (tile, words) in phase_saved {
            *saved_words.entry(tile).or_default() += words;
        }
        patch_plans.push(patch_plan);
        private.push(
            by_tile
                .keys()
                .chain(bases.keys())
                .filter_map(|&t| PhysicalTile::new(u32::from(t)).ok())
                .collect(),
        );
        relocations.push(bases);
        // The audit describes the table-based program (before relocation).
        audited_rows.push(scheduled.rows);
        scheduled_rows.push(rows);
        tables.push(by_tile);
    }
    relocation.words_left = plan.summary.repeat_patched_words;
    relocation.max_table_bytes_saved_per_tile =
        saved_words.values().copied().max().unwrap_or(0) * u64::from(WORD);

    let row_refs: Vec<&[ExchangeRow]> = scheduled_rows.iter().map(Vec::as_slice).collect();
    let shared = share_rows(&row_refs, &private).map_err(|error| RowsError::Patch {
        step: u32::MAX,
        error,
    })?;
    plan.summary.audit = audit_phases(&audited_rows, &patch_plans, jobs, &shared)?;
    plan.summary.audit.outgoing_base = relocation;
    attach_uses(&mut plan, jobs, shared, &mut tables, &relocations)?;
    plan.summary.phases = jobs.len();
    Ok(plan)
}

/// A scheduled phase's entry in `plan` (its row uses come later) and its
/// share of the totals.
fn add_phase(
    plan: &mut ExchangePlan,
    job: &PhaseJob,
    scheduled: &ScheduledPhase,
    check: &CheckReport,
) {
    plan.summary.checked_phases += 1;
    plan.summary.checked_words += check.words_delivered;
    plan.summary.events += u64::from(scheduled.events);
    plan.summary.lower_bound += scheduled.lower_bound;
    plan.phases.insert(
        job.step,
        PhaseRows {
            step: job.step,
            events: scheduled.events,
            lower_bound: scheduled.lower_bound,
            uses: BTreeMap::new(),
        },
    );
}

/// Each phase's row use per tile (stored row, sharing patch list, the
/// Repeat tables it still needs, its relocated base) and the stored rows,
/// into `plan`.
fn attach_uses(
    plan: &mut ExchangePlan,
    jobs: &[PhaseJob],
    shared: SharedRows,
    tables: &mut [BTreeMap<u16, Vec<RepeatPatchTable>>],
    relocations: &[BTreeMap<u16, OutgoingBase>],
) -> Result<(), RowsError> {
    let shared_phases = shared.uses.len();
    for (p, uses) in shared.uses.into_iter().enumerate() {
        let rows = jobs
            .get(p)
            .and_then(|j| plan.phases.get_mut(&j.step))
            .ok_or(RowsError::PhaseCount {
                jobs: jobs.len(),
                scheduled: shared_phases,
            })?;
        for u in uses {
            let tile = u.row.tile.get();
            if u.patch.is_some() {
                plan.summary.shared_uses += 1;
            }
            rows.uses.insert(
                u.row.tile,
                TileRowUse {
                    stored: u.row.index,
                    sharing: u.patch,
                    repeat: tables[p].remove(&tile).unwrap_or_default(),
                    outgoing_base: relocations[p].get(&tile).copied(),
                },
            );
        }
    }
    for (tile, rows) in shared.stored {
        plan.summary.stored_rows += rows.len();
        plan.stored.insert(tile, rows);
    }
    Ok(())
}

/// The patch audit of the table-based program (each phase's rows before
/// relocation, with its Repeat patch plan) under the row sharing.
fn audit_phases(
    audited_rows: &[Vec<ExchangeRow>],
    patch_plans: &[Option<RepeatPatchPlan>],
    jobs: &[PhaseJob],
    shared: &SharedRows,
) -> Result<PatchAudit, RowsError> {
    let audited: Vec<AuditedPhase<'_>> = audited_rows
        .iter()
        .zip(patch_plans)
        .zip(jobs)
        .map(|((rows, repeat), job)| AuditedPhase {
            rows,
            repeat: repeat.as_ref(),
            executions: job.trip_count.unwrap_or(1),
        })
        .collect();
    audit(&audited, Some(shared)).map_err(|error| RowsError::Patch {
        step: u32::MAX,
        error,
    })
}
