//! Exchange phases of a placed schedule → scheduled IPU21 rows, Repeat patch
//! tables and row-sharing patch lists.
//!
//! Each lowered phase becomes one [`crate::exchange::ExchangePhase`] with SRAM
//! addresses (iteration 0 for sources inside a Repeat), scheduled once. A
//! transfer whose source is an iterated buffer gets a Repeat patch table
//! (stride = the buffer's [`Buffer::iteration_stride`] on the sending tile —
//! the same address function the kernels use). With outgoing-base
//! relocation ([`ExchangeOptions::outgoing_base`]), a moving sender whose
//! `send` words all move by one displacement instead runs its row with
//! `$OUTGOING_BASE` = the Repeat frame slot of its source buffer (`base +
//! i·stride`, the kernels' address function again) and the row encoded
//! relative to that slot's iteration-0 value; its tables are dropped (words
//! of absolute `sendpicp`s, rows mixing displacements and 64-bit rows keep
//! theirs, counted in [`OutgoingBaseSummary`]). Every iteration of a
//! relocated phase is replayed with the bases the tiles will hold.
//! Rows of phases are then shared per tile where only address fields
//! differ; Repeat-patched and relocated rows stay private.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use bitvec::vec::BitVec;

use super::repeat::RepeatFrame;
use super::{BufferAddresses, EmitError};
use crate::exchange::{
    check_iterations, check_phase, decode_checked, schedule_unchecked_sweeping, CheckReport,
    DecodedRow, Destination, ExchangeError, ExchangePhase as WirePhase, ExchangeRow, IterationRows,
    RowBases, ScheduleOptions, ScheduledPhase, SourceSweep, Transfer as WireTransfer, Width,
};
use crate::ipu21::tile_set::TileSet;
use crate::ipu21::topology::{LogicalTile, PhysicalTile};
use crate::lower::{
    Buffer, BufferId, BufferRef, BufferRole, ExchangeStep, RepeatStep, Step, StepIndex,
    TileSchedule,
};
use crate::patch::audit::{audit, AuditedPhase, PatchAudit};
use crate::patch::relocate::{
    classify_row, rebase_row, OutgoingBaseSummary, RelocatedSender, RowRelocation,
};
use crate::patch::repeat::{
    phase_for_iteration, repeat_patch_plan, IteratedSource, RepeatPatchPlan, RepeatPatchTable,
};
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
    /// Relocated sender: `$OUTGOING_BASE` comes from this Repeat frame slot
    /// (else the tile runs the row with base 0).
    pub outgoing_base: Option<OutgoingBase>,
}

/// A relocated sender's base: the frame slot holding `base + i·stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutgoingBase {
    /// Word slot of the Repeat frame (`ld32 …, $m11, $m15, slot`).
    pub frame_slot: u32,
    /// Its value in iteration 0: the row's send addresses are relative to it.
    pub base: u32,
}

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

/// Bytes per exchange word.
const WORD: u32 = 4;

/// Address of `at` on logical `tile` for iteration 0.
pub(super) fn address(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    at: BufferRef,
    tile: LogicalTile,
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
fn iterated_stride(buffer: &Buffer, tile: LogicalTile) -> Option<u32> {
    if !matches!(buffer.role, BufferRole::Iterated { .. }) || buffer.copies <= 1 {
        return None;
    }
    buffer
        .block_on(tile)
        .map(|block| buffer.iteration_stride(block))
}

/// The wire phase of a lowered phase (iteration-0 addresses), the
/// transfers whose sources move per iteration, and each wire transfer's
/// source (logical tile, buffer).
fn wire_phase(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    phase: &ExchangeStep,
) -> Result<WireParts, EmitError> {
    let step = phase.index.0;
    let mut wire = WirePhase::default();
    let mut iterated = Vec::new();
    let mut sources = Vec::new();
    for t in &phase.transfers {
        if t.row_bytes % WORD != 0 || t.source_pitch % WORD != 0 {
            return Err(EmitError::UnalignedTransfer {
                step,
                row_bytes: t.row_bytes,
            });
        }
        let source = t.source_tile.physical();
        let src0 = address(schedule, addrs, t.source, t.source_tile)?;
        let mut dests = Vec::with_capacity(t.destinations.len());
        for d in &t.destinations {
            dests.push((
                d.tile.physical(),
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
            sources.push((t.source_tile, t.source.buffer));
        }
    }
    Ok((wire, iterated, sources))
}

type WireParts = (WirePhase, Vec<IteratedSource>, Vec<(LogicalTile, BufferId)>);

/// Where a moving source's outgoing base would come from: its buffer's
/// Repeat frame slot on the sending tile, the slot's per-iteration stride
/// and its iteration-0 value (the buffer's address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceFrame {
    /// Word slot of the Repeat frame.
    pub slot: u32,
    /// Bytes the slot's value moves per iteration.
    pub stride: u32,
    /// The slot's value in iteration 0.
    pub base: u32,
}

/// Each wire transfer's [`SourceFrame`], if its buffer has a frame slot in
/// `repeat` on the sending tile.
fn source_frames(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    repeat: &RepeatStep,
    sources: &[(LogicalTile, BufferId)],
) -> Result<Vec<Option<SourceFrame>>, EmitError> {
    let mut frames: BTreeMap<LogicalTile, RepeatFrame> = BTreeMap::new();
    let mut out = Vec::with_capacity(sources.len());
    for &(logical, buffer) in sources {
        let frame = frames
            .entry(logical)
            .or_insert_with(|| RepeatFrame::new(schedule, repeat, logical));
        out.push(match (frame.slot_of(buffer), frame.stride_of(buffer)) {
            (Some(slot), Some(stride)) => Some(SourceFrame {
                slot,
                stride,
                base: address(schedule, addrs, BufferRef { buffer, offset: 0 }, logical)?,
            }),
            _ => None,
        });
    }
    Ok(out)
}

/// A phase's relocated senders: row replaced, tables dropped.
struct PhaseRelocation {
    bases: BTreeMap<u16, OutgoingBase>,
}

/// Relocates the uniform moving senders of one Repeat phase in place
/// (`rows`, `by_tile`), counting into `summary`, and replays every
/// iteration with the bases the tiles will hold.
fn relocate_phase(
    job: &PhaseJob,
    trip_count: u32,
    rows: &mut [ExchangeRow],
    by_tile: &mut BTreeMap<u16, Vec<RepeatPatchTable>>,
    summary: &mut OutgoingBaseSummary,
    saved_words: &mut BTreeMap<u16, u64>,
) -> Result<PhaseRelocation, EmitError> {
    let step = job.step.0;
    let mut bases = BTreeMap::new();
    for (&tile, tables) in by_tile.iter_mut() {
        let Some(row) = rows
            .iter_mut()
            .find(|r| r.tile.get() == tile && r.words.len() > 1)
        else {
            continue;
        };
        let marks: Vec<(usize, i64)> = tables
            .iter()
            .map(|t| (t.word_index, t.displacement_bytes))
            .collect();
        let n = tables.len();
        let class = classify_row(row.tile, &row.words, &marks)
            .map_err(|error| EmitError::Patch { step, error })?;
        let (displacement, relocated, kept) = match class {
            RowRelocation::Uniform {
                displacement_bytes,
                relocated,
                kept,
            } => (displacement_bytes, relocated, kept),
            RowRelocation::AbsoluteOnly { kept } => {
                summary.absolute_words += kept.len();
                continue;
            }
            RowRelocation::Mixed { .. } => {
                summary.mixed_rows += 1;
                summary.mixed_words += n;
                continue;
            }
            RowRelocation::Paired => {
                summary.paired_rows += 1;
                summary.paired_words += n;
                continue;
            }
        };
        // The base: the frame slot of the lowest-addressed source buffer
        // among the relocated words' transfers (every relocated address is
        // at or above it), whose stride is the row's displacement.
        let mut choice: Option<(u32, u32)> = None; // (base, slot)
        let mut ok = true;
        for t in tables.iter().filter(|t| relocated.contains(&t.word_index)) {
            match job.frames.get(t.transfer).copied().flatten() {
                Some(f) if i64::from(f.stride) == displacement => {
                    if choice.is_none_or(|c| f.base < c.0) {
                        choice = Some((f.base, f.slot));
                    }
                }
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        let rebased = match (ok, choice) {
            (true, Some((base, _))) => rebase_row(
                row.tile,
                &row.words,
                RowBases {
                    outgoing: base,
                    incoming: 0,
                },
            )
            .ok(),
            _ => None,
        };
        let (Some(words), Some((base, frame_slot))) = (rebased, choice) else {
            summary.unrelocatable_rows += 1;
            summary.unrelocatable_words += n;
            continue;
        };
        row.words = words;
        tables.retain(|t| !relocated.contains(&t.word_index));
        summary.absolute_words += kept.len();
        summary.sender_rows += 1;
        summary.words_relocated += relocated.len();
        *saved_words.entry(tile).or_default() += relocated.len() as u64 * u64::from(trip_count);
        summary.senders.push(RelocatedSender {
            tile: row.tile,
            step,
            frame_slot,
            base,
            displacement_bytes: displacement,
        });
        bases.insert(tile, OutgoingBase { frame_slot, base });
    }
    by_tile.retain(|_, t| !t.is_empty());
    if bases.is_empty() {
        return Ok(PhaseRelocation { bases });
    }
    summary.phases_relocated += 1;
    let displacement: BTreeMap<u16, i64> = summary
        .senders
        .iter()
        .filter(|s| s.step == step)
        .map(|s| (s.tile.get(), s.displacement_bytes))
        .collect();
    // Rows no table patches are the same in every iteration: decoded once
    // (a decode error is kept and reported where that row's turn comes, as
    // when every iteration's rows are decoded in order). A bit per row:
    // it iterates in ascending row order, as the ordered set it replaces.
    let mut patched: BitVec = BitVec::repeat(false, rows.len());
    for t in by_tile.values().flatten() {
        if let Some(k) = rows.iter().position(|r| r.tile == t.tile) {
            patched.set(k, true);
        }
    }
    let decoded: Vec<Option<core::result::Result<DecodedRow, ExchangeError>>> = rows
        .iter()
        .enumerate()
        .map(|(k, r)| (!patched[k]).then(|| decode_checked(r)))
        .collect();
    let fixed: Vec<_> = rows
        .iter()
        .zip(&decoded)
        .map(|(r, d)| (r.tile, d.as_ref()))
        .collect();
    // This iteration's patched rows, decoded.
    let patched_rows = |i: u32| {
        patched
            .iter_ones()
            .map(|k| {
                let mut row = rows[k].clone();
                for t in by_tile.values().flatten().filter(|t| t.tile == row.tile) {
                    if let (Some(slot), Some(&w)) =
                        (row.words.get_mut(t.word_index), t.words.get(i as usize))
                    {
                        *slot = w;
                    }
                }
                (k, decode_checked(&row))
            })
            .collect()
    };
    // Checked as the device runs every iteration: remaining tables applied,
    // relocated senders at base + i·stride (derived from iteration 0 where
    // that is exact, `check_iterations`).
    let outgoing = |tile: PhysicalTile, i: u32| RowBases {
        outgoing: bases.get(&tile.get()).map_or(0, |b| {
            let d = displacement.get(&tile.get()).copied().unwrap_or(0);
            (i64::from(b.base) + i64::from(i) * d) as u32
        }),
        incoming: 0,
    };
    check_iterations(
        &|i| phase_for_iteration(&job.wire, &job.iterated, i),
        &IterationRows {
            fixed: &fixed,
            patched: &patched_rows,
        },
        &outgoing,
        trip_count,
    )
    .map_err(|error| EmitError::Exchange { step, error })?;
    Ok(PhaseRelocation { bases })
}

/// One exchange phase ready to schedule: its wire request (iteration-0
/// addresses) and, inside a Repeat, the sources that move per iteration and
/// where their outgoing bases would come from. Jobs are independent of each
/// other once buffers are placed, so a host may run [`PhaseJob::schedule`]
/// for many of them in parallel.
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
    /// Each wire transfer's Repeat frame slot (inside a Repeat with moving
    /// sources; empty otherwise).
    pub frames: Vec<Option<SourceFrame>>,
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
    /// Transfer words times destinations: a size measure for progress and
    /// for ordering work (larger jobs first balances threads).
    pub fn weight(&self) -> u64 {
        self.wire
            .transfers
            .iter()
            .map(|t| u64::from(t.words) * t.destinations.len().max(1) as u64)
            .sum()
    }

    /// Schedules the phase, checks it (in every build profile) and, inside a Repeat,
    /// derives its patch tables and relocates uniform moving senders
    /// (replaying every iteration). Deterministic and independent of any
    /// other job.
    pub fn schedule(&self, options: ExchangeOptions) -> Result<ScheduledJob, EmitError> {
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
            .map_err(|error| EmitError::Exchange { step, error })?;
        // The compile-time check runs in every build profile (release
        // included): every row decoded, the phase replayed with the route
        // model and compared word for word with the request.
        let check = check_phase(&self.wire, &scheduled.rows)
            .map_err(|error| EmitError::Exchange { step, error })?;
        let mut rows = scheduled.rows.clone();
        let mut tables: BTreeMap<u16, Vec<RepeatPatchTable>> = BTreeMap::new();
        let mut bases = BTreeMap::new();
        let mut relocation = OutgoingBaseSummary::default();
        let mut saved_words = BTreeMap::new();
        let patch_plan = match self.trip_count {
            Some(trips) if !self.iterated.is_empty() => {
                let patch = repeat_patch_plan(&self.wire, &scheduled, &self.iterated, trips)
                    .map_err(|error| EmitError::Patch { step, error })?;
                for t in &patch.tables {
                    tables.entry(t.tile.get()).or_default().push(t.clone());
                }
                if options.outgoing_base {
                    bases = relocate_phase(
                        self,
                        trips,
                        &mut rows,
                        &mut tables,
                        &mut relocation,
                        &mut saved_words,
                    )?
                    .bases;
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
            let (wire, iterated, sources) = wire_phase(schedule, addrs, phase)?;
            let frames = match repeat {
                Some(r) if !iterated.is_empty() => source_frames(schedule, addrs, r, &sources)?,
                _ => Vec::new(),
            };
            Ok(PhaseJob {
                step: phase.index,
                wire,
                iterated,
                trip_count: repeat.map(|r| r.trip_count),
                frames,
            })
        })
        .collect()
}

/// Schedules every exchange phase of `schedule` and shares rows per tile.
pub fn schedule_exchanges(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
) -> Result<ExchangePlan, EmitError> {
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
) -> Result<ExchangePlan, EmitError> {
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
) -> Result<ExchangePlan, EmitError> {
    if jobs.len() != scheduled.len() {
        return Err(EmitError::PhaseCount {
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
        plan.summary.checked_phases += 1;
        plan.summary.checked_words += check.words_delivered;
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
        // The audit describes the table-based program (before relocation).
        audited_rows.push(scheduled.rows);
        scheduled_rows.push(rows);
        tables.push(by_tile);
    }
    relocation.words_left = plan.summary.repeat_patched_words;
    relocation.max_table_bytes_saved_per_tile =
        saved_words.values().copied().max().unwrap_or(0) * u64::from(WORD);

    let row_refs: Vec<&[ExchangeRow]> = scheduled_rows.iter().map(Vec::as_slice).collect();
    let shared = share_rows(&row_refs, &private).map_err(|error| EmitError::Patch {
        step: u32::MAX,
        error,
    })?;
    let audited: Vec<AuditedPhase<'_>> = audited_rows
        .iter()
        .zip(&patch_plans)
        .zip(jobs)
        .map(|((rows, repeat), job)| AuditedPhase {
            rows,
            repeat: repeat.as_ref(),
            executions: job.trip_count.unwrap_or(1),
        })
        .collect();
    plan.summary.audit = audit(&audited, Some(&shared)).map_err(|error| EmitError::Patch {
        step: u32::MAX,
        error,
    })?;
    plan.summary.audit.outgoing_base = relocation;
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
    plan.summary.phases = jobs.len();
    Ok(plan)
}
