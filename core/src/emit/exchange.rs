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
    SourceSweep, Transfer as WireTransfer, Width,
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

/// Schedules every exchange phase of `schedule` and shares rows per tile.
pub fn schedule_exchanges(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
) -> Result<ExchangePlan, EmitError> {
    schedule_exchanges_with(schedule, addrs, ScheduleOptions::default())
}

/// [`schedule_exchanges`] with explicit scheduler options (e.g. a stream cap,
/// [`ScheduleOptions::max_stream_words`]).
pub fn schedule_exchanges_with(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    options: ScheduleOptions,
) -> Result<ExchangePlan, EmitError> {
    // (phase, enclosing Repeat) in pre-order.
    let mut lowered: Vec<(&ExchangeStep, Option<&RepeatStep>)> = Vec::new();
    schedule.visit(|step, parent| {
        if let Step::Exchange(p) = step {
            lowered.push((p, parent));
        }
    });

    let mut scheduled_rows: Vec<Vec<ExchangeRow>> = Vec::with_capacity(lowered.len());
    let mut tables: Vec<BTreeMap<u16, Vec<RepeatPatchTable>>> = Vec::new();
    let mut patch_plans: Vec<Option<RepeatPatchPlan>> = Vec::new();
    let mut private: Vec<Vec<PhysicalTile>> = Vec::new();
    let mut plan = ExchangePlan::default();
    for (phase, repeat) in &lowered {
        let step = phase.index.0;
        let (wire, iterated) = wire_phase(schedule, addrs, phase)?;
        // Inside a Repeat, every iteration's source must keep clear of
        // concurrent receives (§2.10 rule 5), not only iteration 0's.
        let sweeps: Vec<SourceSweep> = match repeat {
            Some(r) => iterated
                .iter()
                .map(|it| SourceSweep {
                    transfer: it.transfer,
                    stride_bytes: it.stride_bytes,
                    iterations: r.trip_count,
                })
                .collect(),
            None => Vec::new(),
        };
        let scheduled = schedule_phase_sweeping(&wire, options, &sweeps)
            .map_err(|error| EmitError::Exchange { step, error })?;
        let mut by_tile: BTreeMap<u16, Vec<RepeatPatchTable>> = BTreeMap::new();
        let mut patch_plan = None;
        if let (Some(r), false) = (repeat, iterated.is_empty()) {
            let patch = repeat_patch_plan(&wire, &scheduled, &iterated, r.trip_count)
                .map_err(|error| EmitError::Patch { step, error })?;
            for t in &patch.tables {
                plan.summary.repeat_patched_words += 1;
                by_tile.entry(t.tile.get()).or_default().push(t.clone());
            }
            patch_plan = Some(patch);
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
            phase.index,
            PhaseRows {
                step: phase.index,
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
    for (p, uses) in shared.uses.into_iter().enumerate() {
        let (phase, _) = lowered[p];
        let rows = plan
            .phases
            .get_mut(&phase.index)
            .expect("every lowered phase was inserted above");
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
    plan.summary.phases = lowered.len();
    Ok(plan)
}
