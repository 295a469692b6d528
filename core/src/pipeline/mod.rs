//! The compile pipeline: graph → plan → tile schedule → placement →
//! exchange scheduling → patch data → emission → linked tile images →
//! package, as named [`Stage`]s. No I/O and no threads: a host supplies
//! [`CompileHooks`] for progress, a clock (stage timings), running
//! independent jobs (tile placement, exchange-phase scheduling, tile
//! linking) in parallel and looking at intermediate results (developer
//! dumps); the default hooks ([`Sequential`]) run everything in order on
//! the calling thread and time nothing. Jobs share nothing mutable and
//! their results are used in job order, so the package is byte-identical
//! whatever runs them.
//!
//! ```
//! use ipuc_core::ir::{DType, GraphBuilder, TensorType};
//! use ipuc_core::pipeline::{compile, CompileOptions};
//! let mut b = GraphBuilder::new();
//! let x = b.input("x", TensorType::new(DType::F16, [1, 8, 32]))?;
//! let w = b.parameter("w", TensorType::new(DType::F16, [16, 32]))?;
//! let y = b.matmul_transposed(x, w, DType::F16)?;
//! b.output("y", y)?;
//! let graph = b.finish()?;
//! let options = CompileOptions { tiles: 4, ..CompileOptions::default() };
//! let package = compile(&graph, &options).unwrap();
//! let bytes = ipuc_target::package::write(&package).unwrap();
//! assert_eq!(ipuc_target::package::read(&bytes).unwrap(), package);
//! # Ok::<(), ipuc_core::ir::IrError>(())
//! ```

mod back;
mod bindings;
mod error;
mod front;
mod link;
mod patch_data;
#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

pub use bindings::{bindings, host_calls, package_dtype};
pub use error::{
    BindingError, CodeDoesNotFit, CompileError, HookError, ImageParts, LinkError,
    PatchDataDoesNotFit, PatchDataFailed, PlacementFailed,
};
pub use link::{
    fixed_code_bytes, kernel_stubs, kernel_symbols, link_tile, step_tables, LinkedTile,
};
pub use patch_data::{check_below, data_segments, place_patch_data, PatchBases};

use crate::ir::Graph;
use crate::lower::{BufferId, TileSchedule};
use crate::place::BufferAddresses;
use crate::place::TilePlacement;
use crate::plan::{Improvement, PlanStats, DEFAULT_BEAM_WIDTH};
use crate::rows::{ExchangePlan, ExchangeSummary, PhaseJob};
use crate::runtime::RuntimeSource;
use ipuc_target::ipu21::topology::{LogicalTile, TILE_COUNT};
use ipuc_target::kernel::KernelAbi;
use ipuc_target::lookup::LookupMap;
use ipuc_target::package::{NativeKernelAbi, Package};

/// Compiler settings (the seeds' planning flags).
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// `--planning-beam-width`.
    pub beam_width: usize,
    /// `--planning-tiles`: logical tiles `0..tiles` the planner may use.
    pub tiles: u32,
    /// Name recorded in the package (e.g. the workload).
    pub name: String,
    /// `--runtime-source`: the static runtime assembled and linked on every
    /// tile (the built-in `target-ipu21/device-asm/static_runtime.S` by default).
    pub runtime: RuntimeSource,
    /// `--exchange-stream-words`: longest piece one exchange stream carries.
    pub exchange_stream_words: Option<u32>,
    /// `--optimization-steps`: local-improvement steps after the beam search.
    pub optimization_steps: u32,
    /// Relocate uniform moving senders inside the Repeat with a
    /// per-iteration `$OUTGOING_BASE` instead of Repeat patch tables
    /// (`--no-outgoing-base` builds the table-based program).
    pub outgoing_base: bool,
    /// Testing only (`--planner-data-budget`): plan against this per-tile
    /// data budget instead of `DATA_BUDGET_BYTES`. Placement still checks
    /// the real budget, so a larger value makes placement, not the
    /// planner, reject a plan that does not fit. `None` normally.
    pub planner_data_budget: Option<u64>,
    /// Fewest key/value blocks per head an attention plan may use
    /// (`PlanConfig::min_key_parts`; 1 = any plan), e.g. to run key-split
    /// attention on a model small enough not to need it.
    pub min_key_parts: u32,
    /// The model the graph was built from, recorded in the package's
    /// description section (`None` for a graph built by hand).
    pub model: Option<crate::description::ModelDescription>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            beam_width: DEFAULT_BEAM_WIDTH,
            tiles: u32::from(TILE_COUNT),
            name: String::from("model"),
            runtime: RuntimeSource::builtin(),
            exchange_stream_words: None,
            optimization_steps: 0,
            outgoing_base: true,
            planner_data_budget: None,
            min_key_parts: 1,
            model: None,
        }
    }
}

/// The pipeline's named stages, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// Pareto beam search over operator plans.
    Planning,
    /// `optimization_steps` of local improvement (only when asked for).
    Optimization,
    /// Plan → address-free tile schedule.
    Lowering,
    /// Per-tile SRAM placement (jobs: tiles).
    Placement,
    /// Exchange-phase scheduling, Repeat patches, row sharing (jobs:
    /// phases, largest first).
    ExchangeScheduling,
    /// Each tile's patch data, in its code elements' slack or its data
    /// region.
    PatchData,
    /// Per-tile supervisor programs as assembly text.
    Emission,
    /// Assembling and linking every tile with the runtime (jobs: tiles),
    /// and checking each image below its tile's data.
    Linking,
    /// Tile images, bindings, host call, step tables, package bytes.
    Packaging,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 9] = [
        Stage::Planning,
        Stage::Optimization,
        Stage::Lowering,
        Stage::Placement,
        Stage::ExchangeScheduling,
        Stage::PatchData,
        Stage::Emission,
        Stage::Linking,
        Stage::Packaging,
    ];

    /// Lower-case name for progress lines and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Planning => "planning",
            Stage::Optimization => "optimization",
            Stage::Lowering => "lowering",
            Stage::Placement => "placement",
            Stage::ExchangeScheduling => "exchange scheduling",
            Stage::PatchData => "patch-data placement",
            Stage::Emission => "emission",
            Stage::Linking => "linking",
            Stage::Packaging => "packaging",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the pipeline shows a host once every tile is linked (developer
/// aids, e.g. the image estimate against the linked parts).
pub struct Linked<'a> {
    /// Every tile's linked image, in tile order.
    pub images: &'a [LinkedTile],
    /// The planner's image estimate per logical tile (`Plan::code_bytes`).
    pub code_estimates: &'a [u64],
    /// The scheduled exchange (stored rows per physical tile).
    pub exchange: &'a ExchangePlan,
}

/// What the host supplies to the pipeline. Every method has a default: no
/// progress, no clock, jobs run in order on the calling thread, nothing
/// inspected.
pub trait CompileHooks: Sync {
    /// A line that is not a stage result (what is about to happen, why a
    /// plan is redone).
    fn note(&self, _message: &str) {}
    /// `stage` starts, with `jobs` independent jobs (0 when it has none);
    /// planning and the stages after it run again on a re-plan.
    fn stage_started(&self, _stage: Stage, _jobs: usize) {}
    /// One job of `stage` finished (from any thread running it).
    fn job_finished(&self, _stage: Stage) {}
    /// `done` of `total` units of `stage` are finished, for a stage whose
    /// total is known only once it runs (planning: the top region's ops).
    fn progress(&self, _stage: Stage, _done: u64, _total: u64) {}
    /// `stage` finished after `elapsed_ms` (0 without a clock); `summary`
    /// says what it produced. A stage that fails does not finish.
    fn stage_finished(&self, _stage: Stage, _elapsed_ms: f64, _summary: &str) {}
    /// Milliseconds since any fixed origin, for stage timings.
    fn clock_ms(&self) -> Option<f64> {
        None
    }
    /// Runs independent jobs of `stage` and returns their results in the
    /// order of `jobs` (which is also the order they are best started in:
    /// exchange phases come largest first). Jobs share nothing mutable, so
    /// any order or thread gives the same results and the same package.
    fn run_jobs<J: Sync, R: Send>(
        &self,
        stage: Stage,
        jobs: &[J],
        run: &(dyn Fn(&J) -> R + Sync),
    ) -> Vec<R> {
        let mut out = Vec::with_capacity(jobs.len());
        for job in jobs {
            out.push(run(job));
            self.job_finished(stage);
        }
        out
    }
    /// The exchange phases about to be scheduled, in step order.
    fn exchange_jobs(&self, _jobs: &[PhaseJob]) -> Result<(), HookError> {
        Ok(())
    }
    /// Every tile is linked and checked.
    fn linked(&self, _linked: &Linked<'_>) -> Result<(), HookError> {
        Ok(())
    }
}

/// The default hooks: silent, untimed, sequential.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sequential;

impl CompileHooks for Sequential {}

/// Wall times of the stages, in milliseconds (0 without a clock; summed
/// over re-plans).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Planning and optimization.
    pub planning_ms: f64,
    /// Lowering.
    pub lowering_ms: f64,
    /// Buffer placement and the patch-data blocks.
    pub placement_ms: f64,
    /// Exchange scheduling.
    pub exchange_ms: f64,
    /// Emission.
    pub emission_ms: f64,
    /// Assembling, linking and checking the images.
    pub linking_ms: f64,
    /// Packaging.
    pub packaging_ms: f64,
}

impl StageTimes {
    /// Sum of all stages.
    pub fn total_ms(&self) -> f64 {
        self.planning_ms
            + self.lowering_ms
            + self.placement_ms
            + self.exchange_ms
            + self.emission_ms
            + self.linking_ms
            + self.packaging_ms
    }

    /// Adds `ms` to the figure `stage` is counted in.
    pub fn add(&mut self, stage: Stage, ms: f64) {
        let slot = match stage {
            Stage::Planning | Stage::Optimization => &mut self.planning_ms,
            Stage::Lowering => &mut self.lowering_ms,
            Stage::Placement | Stage::PatchData => &mut self.placement_ms,
            Stage::ExchangeScheduling => &mut self.exchange_ms,
            Stage::Emission => &mut self.emission_ms,
            Stage::Linking => &mut self.linking_ms,
            Stage::Packaging => &mut self.packaging_ms,
        };
        *slot += ms;
    }
}

/// What the run report needs from compilation.
#[derive(Clone, Debug)]
pub struct CompileReport {
    /// Planner statistics of the final plan.
    pub plan_stats: PlanStats,
    /// Planner's estimated cycles of the whole program.
    pub estimated_cycles: u64,
    /// Planner's per-tile peak estimate (excluding the support charge).
    pub estimated_peak_bytes: u64,
    /// Tile of the estimated peak (raw: the planner's per-tile index).
    pub estimated_peak_tile: u32,
    /// Placement's largest per-tile charged bytes (support charge + live
    /// buffers, never above the budget: placement fails otherwise).
    pub placed_peak_bytes: u32,
    /// Tile of the placed peak.
    pub placed_peak_tile: LogicalTile,
    /// Largest patch-data block (Repeat tables + sharing lists) on one tile.
    pub patch_data_bytes_per_tile: u64,
    /// Per-tile bytes of the data budget the planner kept for patch data
    /// (0 unless a first plan left no room for it).
    pub patch_allowance_bytes: u64,
    /// Plans redone for patch data (only the table-based program may).
    pub replans: u32,
    /// Tiles whose patch data went to the top of the elements charged for
    /// their image.
    pub patch_blocks_in_reservation: usize,
    /// Tiles whose patch data had to go to the data region.
    pub patch_blocks_in_data: usize,
    /// Largest exchange-table bytes (rows + patch data) on one tile.
    pub exchange_table_bytes_per_tile: u64,
    /// Largest host-descriptor bytes on one tile.
    pub host_descriptor_bytes_per_tile: u64,
    /// Largest linked code image (runtime + program + rows) on one tile.
    pub code_bytes_per_tile: u64,
    /// Largest planner estimate of a tile's linked image (`plan::code`).
    pub code_estimate_bytes_per_tile: u64,
    /// Largest ratio of a tile's linked image to its estimate (≤ 1 when the
    /// estimate held everywhere) and the tile it occurs on.
    pub code_actual_over_estimate: (f64, LogicalTile),
    /// Fewest bytes left between a tile's image and the lowest data above
    /// it (less element and look-ahead guard), and that tile.
    pub code_room_min: (u32, LogicalTile),
    /// Tiles with a program.
    pub tiles: usize,
    /// Exchange statistics.
    pub exchange: ExchangeSummary,
    /// Stage wall times.
    pub times: StageTimes,
    /// Bytes of the written package.
    pub package_bytes: usize,
    /// SHA-256 of the package bytes, lower-case hex.
    pub sha256: String,
    /// What `optimization_steps` did (`None` without it).
    pub optimization: Option<Improvement>,
    /// The chosen plan, one line per op (`plan::listing`).
    pub plan_lines: Vec<crate::plan::listing::PlanLine>,
}

/// A compiled model: the package, its bytes and what produced it.
pub struct Compiled {
    /// The package.
    pub package: Package,
    /// Its canonical bytes (`package::write`).
    pub bytes: Vec<u8>,
    /// What its description section records (`crate::description`).
    pub description: crate::description::Description,
    /// Figures for the run report.
    pub report: CompileReport,
    /// The lowered per-tile schedule the package was emitted from.
    pub schedule: TileSchedule,
    /// Per-tile placement (memory maps).
    pub placements: Vec<TilePlacement>,
}

/// Compiles `graph` into a package with the native kernel ABI and the
/// default (sequential, silent) hooks.
pub fn compile(graph: &Graph, options: &CompileOptions) -> Result<Package, CompileError> {
    compile_with(graph, options, &NativeKernelAbi, &Sequential).map(|c| c.package)
}

/// [`compile`] with an explicit kernel ABI and host hooks; returns the
/// package with its bytes, schedule, placements and report.
pub fn compile_with<H: CompileHooks>(
    graph: &Graph,
    options: &CompileOptions,
    kernels: &dyn KernelAbi,
    hooks: &H,
) -> Result<Compiled, CompileError> {
    if options.tiles == 0 || options.tiles > u32::from(TILE_COUNT) {
        return Err(CompileError::Tiles {
            tiles: options.tiles,
        });
    }
    let mut run = Run {
        hooks,
        times: StageTimes::default(),
    };
    let front = front::plan_and_place(&mut run, graph, options, kernels)?;
    back::emit_link_package(&mut run, graph, options, kernels, front)
}

/// One compilation's hooks and the stage times measured through them.
struct Run<'h, H: CompileHooks> {
    hooks: &'h H,
    times: StageTimes,
}

impl<H: CompileHooks> Run<'_, H> {
    /// `stage` starts with `jobs` jobs; returns its start time.
    fn start(&self, stage: Stage, jobs: usize) -> Option<f64> {
        self.hooks.stage_started(stage, jobs);
        self.hooks.clock_ms()
    }

    /// Records `stage`'s time since `started` and reports it finished.
    fn finish(&mut self, stage: Stage, started: Option<f64>, summary: &str) {
        let elapsed = match (started, self.hooks.clock_ms()) {
            (Some(a), Some(b)) => (b - a).max(0.0),
            _ => 0.0,
        };
        self.times.add(stage, elapsed);
        self.hooks.stage_finished(stage, elapsed, summary);
    }
}

/// Buffer addresses from per-tile placements (looked up by tile only).
struct Placed<'a> {
    by_tile: LookupMap<LogicalTile, &'a TilePlacement>,
}

impl<'a> Placed<'a> {
    fn new(placements: &'a [TilePlacement]) -> Self {
        Placed {
            by_tile: placements.iter().map(|p| (p.tile, p)).collect(),
        }
    }
}

impl BufferAddresses for Placed<'_> {
    fn base(&self, buffer: BufferId, tile: LogicalTile) -> Option<u32> {
        self.by_tile.get(&tile)?.address(buffer)
    }
}
