//! The stages that decide where everything goes: planning (and the
//! optional improvement steps), lowering, SRAM placement, exchange
//! scheduling and patch-data placement, redone (only for the table-based
//! program) when its patch data does not fit.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::error::{
    CompileError, LinkError, PatchDataDoesNotFit, PatchDataFailed, PlacementFailed,
};
use super::link::{fixed_code_bytes, kernel_stubs};
use super::patch_data::{code_estimate_of, place_patch_data, PatchBases};
use super::{CompileHooks, CompileOptions, Placed, Run, Stage};

use crate::asm::Object;
use crate::exchange::ScheduleOptions;
use crate::ir::Graph;
use crate::lower::{lower, TileSchedule};
use crate::place::{place_tile, requests, support_reserved, TilePlacement};
use crate::plan::code::{CodeCharge, SENDER_BUDGET_PERCENT};
use crate::plan::memory::{
    ALLOCATION_GRANULE, DATA_BUDGET_BYTES, HEADROOM_DATA_BUDGET_BYTES, HEADROOM_PERCENT,
};
use crate::plan::{
    improve_plan, plan_graph_with, BodySearch, Improvement, Plan, PlanConfig, PlanError,
    SearchHooks, SearchJobs,
};
use crate::rows::{assemble_exchange, exchange_jobs, ExchangeOptions, ExchangePlan, PhaseJob};
use crate::runtime::runtime_objects_from;
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::kernel::KernelAbi;

/// How many times the table-based program (`outgoing_base: false`) may
/// re-plan to make room for its Repeat patch tables; the default program
/// never re-plans (its patch data fits the elements charged for code, or
/// the data region, or the compile fails naming the tile).
pub const TABLE_PROGRAM_REPLANS: u32 = 3;

/// Everything placed: what emission, linking and packaging start from.
pub(super) struct Front {
    pub plan: Plan,
    pub optimization: Option<Improvement>,
    pub schedule: TileSchedule,
    pub placements: Vec<TilePlacement>,
    pub exchange: ExchangePlan,
    pub patch: PatchBases,
    /// The kernel stub table, linked after the runtime on every tile.
    pub stubs: Object,
    /// The runtime and its layout symbols, assembled once (linked first on
    /// every tile).
    pub runtime: [Object; 2],
    /// Bytes of runtime + stubs (an image's fixed part).
    pub fixed_code: u32,
    /// Per-tile data bytes kept for patch data, and plans redone for it.
    pub allowance: u64,
    pub replans: u32,
}

/// The planner's independent Repeat-body searches, as planning jobs run
/// by the host ([`CompileHooks::run_jobs`]).
struct PlanningJobs<'h, H>(&'h H);

impl<H: CompileHooks> SearchJobs for PlanningJobs<'_, H> {
    fn run(&self, count: usize, job: &(dyn Fn(usize) -> BodySearch + Sync)) -> Vec<BodySearch> {
        let jobs: Vec<usize> = (0..count).collect();
        self.0.run_jobs(Stage::Planning, &jobs, &|&i| job(i))
    }
}

/// Plans, lowers, places and schedules the exchange; re-plans the
/// table-based program with a measured allowance when its patch data does
/// not fit.
pub(super) fn plan_and_place<H: CompileHooks>(
    run: &mut Run<'_, H>,
    graph: &Graph,
    options: &CompileOptions,
    kernels: &dyn KernelAbi,
) -> Result<Front, CompileError> {
    run.hooks.note(&format!(
        "planning on {} tiles (beam width {})…",
        options.tiles, options.beam_width
    ));
    // The runtime and kernel stubs start every image: their size is the
    // fixed part of the planner's per-tile image estimate.
    let stubs = kernel_stubs(kernels).map_err(CompileError::FixedCode)?;
    let runtime = runtime_objects_from(&options.runtime)
        .map_err(|e| CompileError::FixedCode(LinkError::FixedCode(e)))?;
    let fixed_code = fixed_code_bytes(&stubs, &runtime).map_err(CompileError::FixedCode)?;
    let mut allowance: u64 = 0;
    let mut attempt = 0;
    loop {
        let (plan, optimization) = plan(run, graph, options, fixed_code, allowance, attempt)?;
        let schedule = lower_plan(run, graph, &plan)?;
        let code_estimate =
            |tile: LogicalTile| code_estimate_of(&plan.code_bytes, tile, fixed_code);
        let placed = place_and_schedule(run, schedule, options, &code_estimate)?;
        match placed.patch {
            Ok(patch) => {
                return Ok(Front {
                    plan,
                    optimization,
                    schedule: placed.schedule,
                    placements: placed.placements,
                    exchange: placed.exchange,
                    patch,
                    stubs,
                    runtime,
                    fixed_code,
                    allowance,
                    replans: attempt,
                })
            }
            // Only the table-based program, whose Repeat tables grow with
            // the trip count and are not in the planner's estimate, may
            // re-plan with a measured allowance.
            Err(e)
                if !options.outgoing_base
                    && attempt < TABLE_PROGRAM_REPLANS
                    && u64::from(e.largest) > allowance =>
            {
                attempt += 1;
                allowance = u64::from(e.largest).next_multiple_of(ALLOCATION_GRANULE);
                run.hooks.note(&format!("{e}"));
                run.hooks.note(&format!(
                    "re-planning with {allowance} bytes/tile of the data budget kept for Repeat patch tables"
                ));
            }
            Err(error) => return Err(patch_data_failed(error, placed.schedule, placed.placements)),
        }
    }
}

/// The second refit after linking (at most `back::CODE_REPLACEMENTS` times per compile, see
/// `back::link`): tiles whose linked images ran past their tile's lowest
/// region-0 data are placed again with their code reservation grown to
/// `room` bytes (at least the planner's estimate), and the exchange and the
/// patch data are scheduled and placed again for the new addresses; the
/// plan and the schedule stay. A tile that cannot hold the grown
/// reservation is placement's typed rejection (tile, bytes needed, bytes
/// free), never a silent fallback.
pub(super) fn replace_with_room<H: CompileHooks>(
    run: &mut Run<'_, H>,
    mut front: Front,
    options: &CompileOptions,
    room: &BTreeMap<LogicalTile, u32>,
) -> Result<Front, CompileError> {
    let code_estimate = |tile: LogicalTile| {
        let estimate = code_estimate_of(&front.plan.code_bytes, tile, front.fixed_code);
        room.get(&tile).map_or(estimate, |&r| r.max(estimate))
    };
    let placed = place_and_schedule(run, front.schedule, options, &code_estimate)?;
    // The plan, its fixed code and allowance stay; what placing chose is new.
    front.patch = match placed.patch {
        Ok(patch) => patch,
        Err(error) => return Err(patch_data_failed(error, placed.schedule, placed.placements)),
    };
    front.schedule = placed.schedule;
    front.placements = placed.placements;
    front.exchange = placed.exchange;
    Ok(front)
}

/// A schedule placed with `code_estimate`'s code reservations, its
/// exchange scheduled and its patch data placed, or why the patch data
/// does not fit (for the caller to re-plan or report).
struct PlacedSchedule {
    schedule: TileSchedule,
    placements: Vec<TilePlacement>,
    exchange: ExchangePlan,
    patch: Result<PatchBases, PatchDataDoesNotFit>,
}

/// Placement, exchange scheduling and patch data, in that order (each
/// needs the addresses the one before chose).
fn place_and_schedule<H: CompileHooks>(
    run: &mut Run<'_, H>,
    schedule: TileSchedule,
    options: &CompileOptions,
    code_estimate: &dyn Fn(LogicalTile) -> u32,
) -> Result<PlacedSchedule, CompileError> {
    let (schedule, mut placements) = place(run, schedule, code_estimate)?;
    let exchange = schedule_exchange(run, &schedule, &placements, options)?;
    let patch = patch_data(run, &schedule, &exchange, &mut placements, code_estimate);
    Ok(PlacedSchedule {
        schedule,
        placements,
        exchange,
        patch,
    })
}

/// The typed error of patch data that does not fit, with the schedule and
/// placements its report draws.
fn patch_data_failed(
    error: PatchDataDoesNotFit,
    schedule: TileSchedule,
    placements: Vec<TilePlacement>,
) -> CompileError {
    CompileError::PatchData(Box::new(PatchDataFailed {
        error,
        schedule,
        placements,
    }))
}

/// The beam search, then any improvement steps.
fn plan<H: CompileHooks>(
    run: &mut Run<'_, H>,
    graph: &Graph,
    options: &CompileOptions,
    fixed_code: u32,
    allowance: u64,
    attempt: u32,
) -> Result<(Plan, Option<Improvement>), CompileError> {
    // One unit per op of the top region (the total is known once the first
    // op is planned).
    let t = run.start(Stage::Planning, 1);
    let config = |budget: u64| PlanConfig {
        beam_width: options.beam_width,
        tiles: options.tiles,
        budget: budget.saturating_sub(allowance),
        fixed_code_bytes: u64::from(fixed_code),
        max_stream_words: options.exchange_stream_words,
        min_key_parts: options.min_key_parts,
        code_charge: CodeCharge::WholeElements,
        gemm_far_end: false,
    };
    let hooks = run.hooks;
    let progress = |done, total| {
        hooks.progress(Stage::Planning, u64::from(done), u64::from(total));
    };
    let jobs = PlanningJobs(hooks);
    let search = || SearchHooks {
        progress: Some(&progress),
        jobs: Some(&jobs),
    };
    // Within the headroom target first; the whole budget only when nothing
    // fits there (a budget given for testing is taken as it is).
    let first = options
        .planner_data_budget
        .unwrap_or(HEADROOM_DATA_BUDGET_BYTES);
    let plan = match plan_graph_with(graph, config(first), search()) {
        Err(PlanError::OutOfMemory(_)) if options.planner_data_budget.is_none() => {
            hooks.note(&format!(
                "nothing fits within {HEADROOM_PERCENT} % of the tile budget: planning to the whole budget"
            ));
            plan_graph_with(graph, config(DATA_BUDGET_BYTES), search())
        }
        other => other,
    }
    .map_err(|error| CompileError::Plan {
        attempt,
        allowance,
        error,
    })?;
    run.finish(Stage::Planning, t, &planning_summary(&plan));
    if options.optimization_steps == 0 {
        return Ok((plan, None));
    }
    let t = run.start(Stage::Optimization, 0);
    let (plan, stats) =
        improve_plan(graph, plan, options.optimization_steps).map_err(CompileError::Optimize)?;
    run.finish(
        Stage::Optimization,
        t,
        &format!(
            "{} of {} steps run, {} of {} alternatives kept; estimated cycles {} -> {} ({:+.2}%)",
            stats.steps_run,
            stats.steps,
            stats.accepted,
            stats.tried,
            stats.cycles_before,
            stats.cycles_after,
            100.0 * (stats.cycles_after as f64 - stats.cycles_before as f64)
                / stats.cycles_before.max(1) as f64,
        ),
    );
    Ok((plan, Some(stats)))
}

/// The planning stage's line: what the search did, and how code was
/// charged when the whole-element charge left no plan that fits.
fn planning_summary(plan: &Plan) -> String {
    let s = plan.stats;
    format!(
        "{} candidates screened, {} body searches, {} cache hits, {} memory rejections{}",
        s.candidates_screened,
        s.body_searches,
        s.cache_hits,
        s.memory_rejections,
        match (plan.config.code_charge, plan.config.gemm_far_end) {
            (CodeCharge::WholeElements, _) => "",
            (CodeCharge::Span, false) =>
                "; no plan fit with code charged in whole elements, so this one charges each \
                 image up to its fetch guard (placement checks the whole elements)",
            (CodeCharge::Span, true) =>
                "; no plan fit with code charged in whole elements, nor up to each image's \
                 fetch guard with GEMMs from tile 0 only, so this one charges up to the fetch \
                 guard and also offers GEMM grids ending at the last tile (placement checks \
                 the whole elements)",
        }
    )
}

fn lower_plan<H: CompileHooks>(
    run: &mut Run<'_, H>,
    graph: &Graph,
    plan: &Plan,
) -> Result<TileSchedule, CompileError> {
    let t = run.start(Stage::Lowering, 0);
    let schedule = lower(graph, plan).map_err(CompileError::Lower)?;
    run.finish(
        Stage::Lowering,
        t,
        &format!(
            "{} buffers, {} steps",
            schedule.buffers.len(),
            schedule.step_count
        ),
    );
    Ok(schedule)
}

/// Places every tile (jobs: tiles), keeping the bottom of region 0 free
/// for each tile's estimated image (the elements the planner charged for
/// it). Any refused tile is a [`PlacementFailed`] carrying the schedule and
/// the requests, from which a host can build a memory report.
fn place<H: CompileHooks>(
    run: &mut Run<'_, H>,
    schedule: TileSchedule,
    code_estimate: &dyn Fn(LogicalTile) -> u32,
) -> Result<(TileSchedule, Vec<TilePlacement>), CompileError> {
    let requests = requests(&schedule, |t| support_reserved(code_estimate(t)));
    let t = run.start(Stage::Placement, requests.len());
    let placed = run.hooks.run_jobs(Stage::Placement, &requests, &place_tile);
    let mut placements = Vec::with_capacity(placed.len());
    let mut errors = Vec::new();
    for p in placed {
        match p {
            Ok(p) => placements.push(p),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(CompileError::Placement(Box::new(PlacementFailed {
            errors,
            schedule,
            requests,
        })));
    }
    run.finish(Stage::Placement, t, &format!("{} tiles", placements.len()));
    Ok((schedule, placements))
}

/// Schedules every exchange phase (jobs: phases, started largest first so
/// the last thread is not left with the biggest one), then the Repeat
/// patches and row sharing over all of them.
fn schedule_exchange<H: CompileHooks>(
    run: &mut Run<'_, H>,
    schedule: &TileSchedule,
    placements: &[TilePlacement],
    options: &CompileOptions,
) -> Result<ExchangePlan, CompileError> {
    let jobs = exchange_jobs(schedule, &Placed::new(placements)).map_err(CompileError::Exchange)?;
    let exchange_options = ExchangeOptions {
        outgoing_base: options.outgoing_base,
        // The sender budget the planner's image estimate assumed.
        schedule: ScheduleOptions {
            max_stream_words: options.exchange_stream_words,
            sender_budget_percent: SENDER_BUDGET_PERCENT as u32,
            ..ScheduleOptions::default()
        },
    };
    run.hooks.exchange_jobs(&jobs).map_err(CompileError::Hook)?;
    let t = run.start(Stage::ExchangeScheduling, jobs.len());
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    // Largest first, so the last jobs to finish are short. A job's time
    // follows its (transfer, destination) pairs, the receivers the
    // scheduler places pieces for (So400m, 27 layers: 4–12 µs a pair over
    // the phases taking most time), not its words: the check replays in
    // runs and a Repeat's later iterations are mostly derived from the
    // first. The order changes only which worker runs what, never a result
    // (results come back in job order).
    let cost =
        |j: &PhaseJob| -> usize { j.wire.transfers.iter().map(|t| t.destinations.len()).sum() };
    order.sort_by_key(|&i| (core::cmp::Reverse(cost(&jobs[i])), i));
    let started: Vec<&PhaseJob> = order.iter().map(|&i| &jobs[i]).collect();
    let done = run
        .hooks
        .run_jobs(Stage::ExchangeScheduling, &started, &|job| {
            job.schedule(exchange_options)
        });
    // Back to step order; the first failing phase in that order is the error.
    let mut by_step: Vec<_> = order.into_iter().zip(done).collect();
    by_step.sort_by_key(|(i, _)| *i);
    let scheduled = by_step
        .into_iter()
        .map(|(_, r)| r)
        .collect::<Result<Vec<_>, _>>()
        .map_err(CompileError::Exchange)?;
    let exchange =
        assemble_exchange(&jobs, scheduled, exchange_options).map_err(CompileError::Exchange)?;
    let e = &exchange.summary;
    let summary = format!(
        "{} phases, {} stored rows, {} events (lower bound {})",
        e.phases, e.stored_rows, e.events, e.lower_bound
    );
    run.finish(Stage::ExchangeScheduling, t, &summary);
    Ok(exchange)
}

/// Places every tile's patch data (the stage line says where it went, or
/// that it does not fit).
fn patch_data<H: CompileHooks>(
    run: &mut Run<'_, H>,
    schedule: &TileSchedule,
    exchange: &ExchangePlan,
    placements: &mut Vec<TilePlacement>,
    code_estimate: &dyn Fn(LogicalTile) -> u32,
) -> Result<PatchBases, PatchDataDoesNotFit> {
    let t = run.start(Stage::PatchData, 0);
    let result = place_patch_data(schedule, exchange, placements, code_estimate);
    let (peak, tile) = placed_peak(placements);
    let summary = match &result {
        Ok(b) => format!(
            "largest block {} bytes ({} blocks in their tile's code reservation, {} in the data region); peak {peak} bytes on tile {}",
            b.largest,
            b.in_reservation,
            b.in_data,
            tile.get()
        ),
        Err(_) => String::from("does not fit"),
    };
    run.finish(Stage::PatchData, t, &summary);
    result
}

/// Placement's largest per-tile charge and its tile (the lowest on a tie).
pub(super) fn placed_peak(placements: &[TilePlacement]) -> (u32, LogicalTile) {
    placements
        .iter()
        .max_by_key(|p| (p.peak.bytes, core::cmp::Reverse(p.tile)))
        .map(|p| (p.peak.bytes, p.tile))
        .unwrap_or_default()
}
