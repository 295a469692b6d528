//! Exchange phases of a placed schedule → scheduled IPU21 rows, Repeat patch
//! tables and row-sharing patch lists.
//!
//! Each lowered phase becomes one [`crate::exchange::ExchangePhase`] with SRAM
//! addresses (iteration 0 for sources inside a Repeat), scheduled once. A
//! transfer whose source is an iterated buffer gets a Repeat patch table
//! (stride = the buffer's [`Buffer::iteration_stride`] on the sending tile —
//! the same address function the kernels use). Rows of phases are then
//! shared per tile where only address fields differ; Repeat-patched rows stay
//! private.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::{BufferAddresses, EmitError};
use crate::exchange::{
    schedule_phase_sweeping, Destination, ExchangePhase as WirePhase, ExchangeRow, ScheduleOptions,
    ScheduledPhase, SourceSweep, Transfer as WireTransfer, Width,
};
use crate::ipu21::topology::{LogicalTile, PhysicalTile};
use crate::lower::{
    Buffer, BufferRef, BufferRole, ExchangeStep, RepeatStep, Step, StepIndex, TileSchedule,
};
use crate::patch::audit::{audit, AuditedPhase, PatchAudit};
use crate::patch::repeat::{repeat_patch_plan, IteratedSource, RepeatPatchPlan, RepeatPatchTable};
use crate::patch::sharing::{share_rows, SharingPatchList};

/// How one tile runs one phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileRowUse {
    /// Index into the tile's stored rows.
    pub stored: usize,
    /// Words to write into the stored row before it runs (shared rows only).
    pub sharing: Option<SharingPatchList>,
    /// Words to rewrite per Repeat iteration before the row runs.
    pub repeat: Vec<RepeatPatchTable>,
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
    /// Row uses of the active tiles, by physical tile id.
    pub uses: BTreeMap<u16, TileRowUse>,
}

/// Totals over all phases (for reports and audits).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExchangeSummary {
    /// Phases scheduled.
    pub phases: usize,
    /// Rows stored after sharing.
    pub stored_rows: usize,
    /// Row uses that are served by a shared row (need a patch list).
    pub shared_uses: usize,
    /// Row words rewritten per Repeat iteration.
    pub repeat_patched_words: usize,
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
    pub stored: BTreeMap<u16, Vec<ExchangeRow>>,
    /// Totals.
    pub summary: ExchangeSummary,
}

/// Bytes per exchange word.
const WORD: u32 = 4;

fn physical(tile: u32) -> Result<PhysicalTile, EmitError> {
    Ok(LogicalTile::new(tile)?.physical())
}

/// Address of `at` on logical `tile` for iteration 0.
pub(super) fn address(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    at: BufferRef,
    tile: u32,
) -> Result<u32, EmitError> {
    let unplaced = || EmitError::Unplaced {
        buffer: at.buffer,
        name: schedule
            .buffer(at.buffer)
            .map(|b| b.name.clone())
            .unwrap_or_default(),
        tile,
    };
    let base = addrs.base(at.buffer, tile).ok_or_else(unplaced)?;
    Ok(base + at.offset)
}

/// Per-iteration byte stride of `at`'s buffer on `tile`, when it is iterated.
fn iterated_stride(buffer: &Buffer, tile: u32) -> Option<u32> {
    if !matches!(buffer.role, BufferRole::Iterated { .. }) || buffer.copies <= 1 {
        return None;
    }
    buffer
        .block_on(tile)
        .map(|block| buffer.iteration_stride(block))
}

/// The wire phase of a lowered phase (iteration-0 addresses) and the
/// transfers whose sources move per iteration.
fn wire_phase(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    phase: &ExchangeStep,
) -> Result<(WirePhase, Vec<IteratedSource>), EmitError> {
    let step = phase.index.0;
    let mut wire = WirePhase::default();
    let mut iterated = Vec::new();
    for t in &phase.transfers {
        if t.row_bytes % WORD != 0 || t.source_pitch % WORD != 0 {
            return Err(EmitError::UnalignedTransfer {
                step,
                row_bytes: t.row_bytes,
            });
        }
        let source = physical(t.source_tile)?;
        let src0 = address(schedule, addrs, t.source, t.source_tile)?;
        let mut dests = Vec::with_capacity(t.destinations.len());
        for d in &t.destinations {
            dests.push((
                physical(d.tile)?,
                address(schedule, addrs, d.at, d.tile)?,
                d.pitch,
            ));
        }
        let stride = schedule
            .buffer(t.source.buffer)
            .and_then(|b| iterated_stride(b, t.source_tile));
        // Runs that are contiguous at the source and at every destination
        // travel as one message; otherwise one message per run.
        let contiguous =
            t.source_pitch == t.row_bytes && t.destinations.iter().all(|d| d.pitch == t.row_bytes);
        let (runs, run_bytes) = if contiguous {
            (1, t.rows * t.row_bytes)
        } else {
            (t.rows, t.row_bytes)
        };
        if run_bytes == 0 {
            continue;
        }
        for r in 0..runs {
            let destinations = dests
                .iter()
                .map(|&(tile, base, pitch)| Destination {
                    tile,
                    address: base + r * pitch,
                })
                .collect();
            if let Some(stride) = stride {
                iterated.push(IteratedSource {
                    transfer: wire.transfers.len(),
                    stride_bytes: i64::from(stride),
                });
            }
            wire.transfers.push(WireTransfer {
                source,
                source_address: src0 + r * t.source_pitch,
                words: run_bytes / WORD,
                destinations,
                width: Width::Word32,
            });
        }
    }
    Ok((wire, iterated))
}

/// One exchange phase ready to schedule: its wire request (iteration-0
/// addresses) and, inside a Repeat, the sources that move per iteration.
/// Jobs are independent of each other once buffers are placed, so a host
/// may run [`PhaseJob::schedule`] for many of them in parallel.
#[derive(Clone, Debug)]
pub struct PhaseJob {
    /// The lowered phase's step.
    pub step: StepIndex,
    /// The request the rows must carry out.
    pub wire: WirePhase,
    /// Transfers whose sources move per Repeat iteration.
    pub iterated: Vec<IteratedSource>,
    /// Trip count of the enclosing Repeat, if any.
    pub trip_count: Option<u32>,
}

/// A scheduled [`PhaseJob`]: rows, and the Repeat patch tables they need.
#[derive(Clone, Debug)]
pub struct ScheduledJob {
    pub scheduled: ScheduledPhase,
    pub patch_plan: Option<RepeatPatchPlan>,
}

impl PhaseJob {
    /// Transfer words times destinations: a size measure for progress and
    /// for ordering work (larger jobs first balances threads).
    pub fn weight(&self) -> u64 {
        self.wire
            .transfers
            .iter()
            .map(|t| u64::from(t.words) * t.destinations.len().max(1) as u64)
            .sum()
    }

    /// Schedules the phase (checked in debug builds) and, inside a Repeat,
    /// derives its patch tables. Deterministic and independent of any other job.
    pub fn schedule(&self, options: ScheduleOptions) -> Result<ScheduledJob, EmitError> {
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
        let scheduled = schedule_phase_sweeping(&self.wire, options, &sweeps)
            .map_err(|error| EmitError::Exchange { step, error })?;
        let patch_plan = match self.trip_count {
            Some(trips) if !self.iterated.is_empty() => Some(
                repeat_patch_plan(&self.wire, &scheduled, &self.iterated, trips)
                    .map_err(|error| EmitError::Patch { step, error })?,
            ),
            _ => None,
        };
        Ok(ScheduledJob {
            scheduled,
            patch_plan,
        })
    }
}

/// Every exchange phase of `schedule` as a [`PhaseJob`], in program (pre-)order.
pub fn exchange_jobs(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
) -> Result<Vec<PhaseJob>, EmitError> {
    let mut lowered: Vec<(&ExchangeStep, Option<&RepeatStep>)> = Vec::new();
    schedule.visit(|step, parent| {
        if let Step::Exchange(p) = step {
            lowered.push((p, parent));
        }
    });
    lowered
        .into_iter()
        .map(|(phase, repeat)| {
            let (wire, iterated) = wire_phase(schedule, addrs, phase)?;
            Ok(PhaseJob {
                step: phase.index,
                wire,
                iterated,
                trip_count: repeat.map(|r| r.trip_count),
            })
        })
        .collect()
}

/// Schedules every exchange phase of `schedule` and shares rows per tile.
pub fn schedule_exchanges(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
) -> Result<ExchangePlan, EmitError> {
    schedule_exchanges_with(schedule, addrs, ScheduleOptions::default())
}

/// [`schedule_exchanges`] with explicit scheduler options (e.g. a stream cap,
/// [`ScheduleOptions::max_stream_words`]), one phase after the other. Hosts
/// with threads use [`exchange_jobs`], run [`PhaseJob::schedule`] in
/// parallel and finish with [`assemble_exchange`].
pub fn schedule_exchanges_with(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    options: ScheduleOptions,
) -> Result<ExchangePlan, EmitError> {
    let jobs = exchange_jobs(schedule, addrs)?;
    let scheduled = jobs
        .iter()
        .map(|j| j.schedule(options))
        .collect::<Result<Vec<_>, _>>()?;
    assemble_exchange(&jobs, scheduled)
}

/// Shares the rows of scheduled phases per tile and builds the program's
/// [`ExchangePlan`]; `scheduled[i]` is `jobs[i]` scheduled.
pub fn assemble_exchange(
    jobs: &[PhaseJob],
    scheduled: Vec<ScheduledJob>,
) -> Result<ExchangePlan, EmitError> {
    if jobs.len() != scheduled.len() {
        return Err(EmitError::PhaseCount {
            jobs: jobs.len(),
            scheduled: scheduled.len(),
        });
    }
    let mut scheduled_rows: Vec<Vec<ExchangeRow>> = Vec::with_capacity(jobs.len());
    let mut tables: Vec<BTreeMap<u16, Vec<RepeatPatchTable>>> = Vec::new();
    let mut patch_plans: Vec<Option<RepeatPatchPlan>> = Vec::new();
    let mut private: Vec<Vec<PhysicalTile>> = Vec::new();
    let mut plan = ExchangePlan::default();
    for (job, done) in jobs.iter().zip(scheduled) {
        let ScheduledJob {
            scheduled,
            patch_plan,
        } = done;
        let mut by_tile: BTreeMap<u16, Vec<RepeatPatchTable>> = BTreeMap::new();
        if let Some(patch) = &patch_plan {
            for t in &patch.tables {
                plan.summary.repeat_patched_words += 1;
                by_tile.entry(t.tile.get()).or_default().push(t.clone());
            }
        }
        patch_plans.push(patch_plan);
        private.push(
            by_tile
                .keys()
                .filter_map(|&t| PhysicalTile::new(u32::from(t)).ok())
                .collect(),
        );
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
        scheduled_rows.push(scheduled.rows);
        tables.push(by_tile);
    }

    let row_refs: Vec<&[ExchangeRow]> = scheduled_rows.iter().map(Vec::as_slice).collect();
    let private_refs: Vec<&[PhysicalTile]> = private.iter().map(Vec::as_slice).collect();
    let shared = share_rows(&row_refs, &private_refs).map_err(|error| EmitError::Patch {
        step: u32::MAX,
        error,
    })?;
    let audited: Vec<AuditedPhase<'_>> = row_refs
        .iter()
        .zip(&patch_plans)
        .map(|(rows, repeat)| AuditedPhase {
            rows,
            repeat: repeat.as_ref(),
        })
        .collect();
    plan.summary.audit = audit(&audited, Some(&shared)).map_err(|error| EmitError::Patch {
        step: u32::MAX,
        error,
    })?;
    let shared_phases = shared.uses.len();
    for (p, uses) in shared.uses.into_iter().enumerate() {
        let rows = jobs
            .get(p)
            .and_then(|j| plan.phases.get_mut(&j.step))
            .ok_or(EmitError::PhaseCount {
                jobs: jobs.len(),
                scheduled: shared_phases,
            })?;
        for u in uses {
            let tile = u.row.tile.get();
            if u.patch.is_some() {
                plan.summary.shared_uses += 1;
            }
            rows.uses.insert(
                tile,
                TileRowUse {
                    stored: u.row.index,
                    sharing: u.patch,
                    repeat: tables[p].remove(&tile).unwrap_or_default(),
                },
            );
        }
    }
    for (tile, rows) in shared.stored {
        plan.summary.stored_rows += rows.len();
        plan.stored.insert(tile.get(), rows);
    }
    plan.summary.phases = jobs.len();
    Ok(plan)
}
