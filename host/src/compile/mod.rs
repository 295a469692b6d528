//! The compiler driver: graph → plan → tile schedule → placement → emission
//! → linked tile images → package. Each stage reports progress and its wall
//! time on stderr; the result carries everything the run report prints.

mod bindings;
mod image;
pub mod phase_dump;

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

use crate::progress::{Progress, Stage};

use ipuc_core::emit::{
    assemble_exchange, emit_programs, exchange_jobs, program_tiles, BufferAddresses, EmitInput,
    ExchangeOptions, ExchangePlan, ExchangeSummary, KernelAbi, PatchAddresses, PatchData, PhaseJob,
    ScheduledJob,
};
use ipuc_core::ipu21::sram::layout;
use ipuc_core::ipu21::topology::LogicalTile;
use ipuc_core::ir::Graph;
use ipuc_core::lower::{lower, BufferId, BufferRole, TileSchedule};
use ipuc_core::package::{self, Package, Segment, SegmentRole, SummaryValue};
use ipuc_core::place::{place_tile, requests, support_reserved, PlacementRequest, TilePlacement};
use ipuc_core::plan::code::CodeCharge;
use ipuc_core::plan::memory::{MemoryRejection, ALLOCATION_GRANULE, DATA_BUDGET_BYTES};
use ipuc_core::plan::{plan_graph_with_progress, Plan, PlanConfig, PlanError, PlanStats};

pub use bindings::INFERENCE_CALL;

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
    /// tile (the built-in `device-asm/static_runtime.S` by default).
    pub runtime: ipuc_core::runtime::RuntimeSource,
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
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            beam_width: ipuc_core::plan::DEFAULT_BEAM_WIDTH,
            tiles: u32::from(ipuc_core::ipu21::topology::TILE_COUNT),
            name: String::from("model"),
            runtime: ipuc_core::runtime::RuntimeSource::builtin(),
            exchange_stream_words: None,
            optimization_steps: 0,
            outgoing_base: true,
            planner_data_budget: None,
        }
    }
}

/// Wall times of the stages, in milliseconds.
#[derive(Clone, Debug, Default)]
pub struct StageTimes {
    pub planning_ms: f64,
    pub lowering_ms: f64,
    /// Buffer placement and the patch-data blocks.
    pub placement_ms: f64,
    pub exchange_ms: f64,
    pub emission_ms: f64,
    pub linking_ms: f64,
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
}

/// What the run report needs from compilation.
#[derive(Clone, Debug)]
pub struct CompileReport {
    pub plan_stats: PlanStats,
    /// Planner's estimated cycles of the whole program.
    pub estimated_cycles: u64,
    /// Planner's per-tile peak estimate (excluding the support charge).
    pub estimated_peak_bytes: u64,
    pub estimated_peak_tile: u32,
    /// Placement's largest per-tile charged bytes (support charge + live
    /// buffers, never above the budget: placement fails otherwise) and tile.
    pub placed_peak_bytes: u32,
    pub placed_peak_tile: u32,
    /// Largest patch-data block (Repeat tables + sharing lists, placed in
    /// the data region and included in `placed_peak_bytes`) on one tile.
    pub patch_data_bytes_per_tile: u64,
    /// Per-tile bytes of the data budget the planner kept for patch data
    /// (0 unless a first plan left no room for it).
    pub patch_allowance_bytes: u64,
    /// Plans redone for patch data (only the table-based program may).
    pub replans: u32,
    /// Tiles whose patch data went to the top of the elements charged for
    /// their image / had to go to the data region.
    pub patch_blocks_in_reservation: usize,
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
    pub code_actual_over_estimate: (f64, u32),
    /// Fewest bytes left between a tile's image and the lowest data above
    /// it (less element and look-ahead guard), and that tile.
    pub code_room_min: (u32, u32),
    pub tiles: usize,
    pub exchange: ExchangeSummary,
    pub times: StageTimes,
    pub package_bytes: usize,
    pub sha256: String,
    /// What `--optimization-steps` did (`None` without it).
    pub optimization: Option<ipuc_core::plan::Improvement>,
}

/// Every plan the planner tried exceeds the per-tile memory budget. A typed
/// error (reachable with `anyhow::Error::downcast_ref`) so the CLI can write
/// the rejection reports and name them in the message: the rejection (its
/// top dozen allocations, [`ipuc_core::plan::memory::DISPLAYED_ALLOCATIONS`])
/// then, once written, the reported candidate's report (the first path) and
/// how many other candidates' reports lie beside it.
#[derive(Debug, thiserror::Error)]
#[error("{0}{reports}", reports = crate::report::memory::reports_line(.1))]
pub struct PlanOverBudget(pub Box<MemoryRejection>, pub Vec<std::path::PathBuf>);

/// A compiled model.
pub struct Compiled {
    pub package: Package,
    pub bytes: Vec<u8>,
    pub report: CompileReport,
    /// The lowered per-tile schedule the package was emitted from.
    pub schedule: TileSchedule,
    /// Per-tile placement (memory maps).
    pub placements: Vec<TilePlacement>,
}

/// Schedules independent exchange phases in parallel (rayon), advancing
/// `stage` per phase. The result is in job order whatever the thread count,
/// and each phase's schedule depends only on its own job, so packages are
/// byte-identical at any `RAYON_NUM_THREADS`. Larger phases start first so
/// the last thread is not left with the biggest one.
pub fn schedule_phases(
    jobs: &[PhaseJob],
    options: ExchangeOptions,
    stage: &Stage,
) -> Result<Vec<ScheduledJob>, ipuc_core::emit::EmitError> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(jobs[i].weight()), i));
    let mut done: Vec<(usize, Result<ScheduledJob, _>)> = order
        .into_par_iter()
        .with_max_len(1)
        .map(|i| {
            let r = jobs[i].schedule(options);
            stage.inc(1);
            (i, r)
        })
        .collect();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Buffer addresses from per-tile placements.
struct Placed<'a> {
    by_tile: BTreeMap<u32, &'a TilePlacement>,
}

impl BufferAddresses for Placed<'_> {
    fn base(&self, buffer: BufferId, tile: u32) -> Option<u32> {
        self.by_tile.get(&tile)?.address(buffer)
    }
}

/// Compiles `graph` into a package.
pub fn compile(graph: &Graph, kernels: &dyn KernelAbi, opts: &CompileOptions) -> Result<Compiled> {
    compile_with(graph, kernels, opts, 1)
}

/// [`compile`] with attention plans restricted to at least `min_key_parts`
/// key/value blocks per head (`PlanConfig::min_key_parts`; 1 = any plan),
/// e.g. to run key-split attention on a model small enough not to need it.
pub fn compile_with(
    graph: &Graph,
    kernels: &dyn KernelAbi,
    opts: &CompileOptions,
    min_key_parts: u32,
) -> Result<Compiled> {
    compile_with_progress(
        graph,
        kernels,
        opts,
        min_key_parts,
        &Progress::stderr("compile"),
    )
}

/// [`compile_with`] reporting each stage (and bars for long ones) to `progress`.
pub fn compile_with_progress(
    graph: &Graph,
    kernels: &dyn KernelAbi,
    opts: &CompileOptions,
    min_key_parts: u32,
    progress: &Progress,
) -> Result<Compiled> {
    let mut times = StageTimes::default();

    if opts.tiles == 0 || opts.tiles > u32::from(ipuc_core::ipu21::topology::TILE_COUNT) {
        bail!("--planning-tiles must be 1..=1472, got {}", opts.tiles);
    }
    progress.note(&format!(
        "planning on {} tiles (beam width {})…",
        opts.tiles, opts.beam_width
    ));
    // Patch data (Repeat tables, sharing lists) is only known once rows are
    // scheduled on placed addresses. It goes at the top of the elements
    // the planner charged for the tile's image (in the slack of its last
    // element: `plan::code::PATCH_DATA_BYTES`, the per-phase allowance, is
    // 0 today), else in the data region, charged like data; if neither
    // fits the compile fails with a typed error naming the tile (no
    // re-plan).
    // The runtime and kernel stubs start every image: their size is the
    // fixed part of the planner's per-tile image estimate.
    let stubs = image::kernel_stubs(kernels)?;
    let fixed_code = image::fixed_code_bytes(&stubs, &opts.runtime)?;
    let mut allowance: u64 = 0;
    let mut attempt = 0;
    let mut optimization = None;
    let (plan, schedule, placements, exchange_plan, patch_bases, code_estimates) = loop {
        // A bar over the top region's ops (the total is known once the
        // first op is planned).
        let stage = progress.stage("planning", 1);
        let plan: Plan = plan_graph_with_progress(
            graph,
            PlanConfig {
                beam_width: opts.beam_width,
                tiles: opts.tiles,
                budget: opts
                    .planner_data_budget
                    .unwrap_or(DATA_BUDGET_BYTES)
                    .saturating_sub(allowance),
                fixed_code_bytes: u64::from(fixed_code),
                max_stream_words: opts.exchange_stream_words,
                min_key_parts,
                code_charge: CodeCharge::WholeElements,
            },
            &|done, total| {
                stage.set_total(u64::from(total));
                stage.set_position(u64::from(done));
            },
        )
        .map_err(|e| match e {
            PlanError::OutOfMemory(rejection) => {
                anyhow::Error::new(PlanOverBudget(rejection, Vec::new()))
            }
            other => anyhow::anyhow!("{other}"),
        })
        .with_context(|| {
            if allowance == 0 {
                String::from("planning")
            } else {
                format!("planning (re-plan {attempt}, {allowance} bytes/tile kept for patch data)")
            }
        })?;
        let s = plan.stats;
        times.planning_ms += stage.finish(&format!(
            "{} candidates screened, {} body searches, {} cache hits, {} memory rejections{}",
            s.candidates_screened,
            s.body_searches,
            s.cache_hits,
            s.memory_rejections,
            match plan.config.code_charge {
                CodeCharge::WholeElements => "",
                CodeCharge::Span =>
                    "; no plan fit with code charged in whole elements, so this one charges each \
                     image up to its fetch guard (placement checks the whole elements)",
            }
        ));
        let plan = if opts.optimization_steps > 0 {
            let stage = progress.stage("optimization", 0);
            let (plan, stats) = ipuc_core::plan::improve_plan(graph, plan, opts.optimization_steps)
                .map_err(|e| anyhow::anyhow!("{e}"))
                .context("optimization steps")?;
            times.planning_ms += stage.finish(&format!(
                "{} of {} steps run, {} of {} alternatives kept; estimated cycles {} -> {} ({:+.2}%)",
                stats.steps_run,
                stats.steps,
                stats.accepted,
                stats.tried,
                stats.cycles_before,
                stats.cycles_after,
                100.0 * (stats.cycles_after as f64 - stats.cycles_before as f64)
                    / stats.cycles_before.max(1) as f64,
            ));
            optimization = Some(stats);
            plan
        } else {
            plan
        };

        let stage = progress.stage("lowering", 0);
        let schedule: TileSchedule = lower(graph, &plan)
            .map_err(|e| anyhow::anyhow!("{e:?}"))
            .context("lowering")?;
        times.lowering_ms += stage.finish(&format!(
            "{} buffers, {} steps",
            schedule.buffers.len(),
            schedule.step_count
        ));

        // Placement keeps the bottom of region 0 free for each tile's
        // estimated image (the elements the planner charged for it).
        let code_estimate = |tile: u32| code_estimate_of(&plan.code_bytes, tile, fixed_code);
        let requests = requests(&schedule, |t| support_reserved(code_estimate(t)));
        let stage = progress.stage("placement", requests.len() as u64);
        let placed: Vec<_> = requests
            .par_iter()
            .map(|r| {
                let placed = place_tile(r);
                stage.inc(1);
                placed
            })
            .collect();
        // A tile over budget is a typed `PlacementRejected` carrying its
        // memory report (written by the CLI, as for planner rejections).
        let mut placements = crate::report::placement_rejection::placements_or_rejection(
            &schedule, &requests, placed,
        )
        .context("SRAM placement")?;
        times.placement_ms += stage.finish(&format!("{} tiles", placements.len()));

        // Exchange rows need buffer addresses; the Repeat patch tables and
        // sharing lists they imply are data (read by the patchers, never
        // fetched), so each tile's block of them is placed in the data
        // region and charged to the budget like a buffer, not linked with
        // the code.
        let jobs = exchange_jobs(
            &schedule,
            &Placed {
                by_tile: placements.iter().map(|p| (p.tile, p)).collect(),
            },
        )
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("exchange scheduling")?;
        let options = ExchangeOptions {
            outgoing_base: opts.outgoing_base,
            // The sender budget the planner's image estimate assumed.
            schedule: ipuc_core::exchange::ScheduleOptions {
                max_stream_words: opts.exchange_stream_words,
                sender_budget_percent: ipuc_core::plan::code::SENDER_BUDGET_PERCENT as u32,
                ..ipuc_core::exchange::ScheduleOptions::default()
            },
        };
        // Developer aid: the jobs as text, for `ipuc exchange schedule-dump`.
        if let Some(path) = std::env::var_os("IPUC_DUMP_PHASES") {
            std::fs::write(&path, phase_dump::write_jobs(&jobs))
                .with_context(|| format!("writing {}", path.to_string_lossy()))?;
        }
        let stage = progress.stage("exchange scheduling", jobs.len() as u64);
        let scheduled = schedule_phases(&jobs, options, &stage)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("exchange scheduling")?;
        let exchange_plan = assemble_exchange(&jobs, scheduled, options)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("exchange scheduling")?;
        let e = &exchange_plan.summary;
        times.exchange_ms += stage.finish(&format!(
            "{} phases, {} stored rows, {} events (lower bound {})",
            e.phases, e.stored_rows, e.events, e.lower_bound
        ));

        let stage = progress.stage("patch-data placement", 0);
        let result = place_patch_data(&schedule, &exchange_plan, &mut placements, &code_estimate);
        let peak = placements
            .iter()
            .max_by_key(|p| (p.peak.bytes, std::cmp::Reverse(p.tile)))
            .map(|p| (p.peak.bytes, p.tile))
            .unwrap_or((0, 0));
        times.placement_ms += stage.finish(&match &result {
            Ok(b) => format!(
                "largest block {} bytes ({} blocks in their tile's code reservation, {} in the data region); peak {} bytes on tile {}",
                b.largest, b.in_reservation, b.in_data, peak.0, peak.1
            ),
            Err(_) => String::from("does not fit"),
        });
        match result {
            Ok(bases) => {
                let estimates: Vec<u64> = plan.code_bytes.to_vec();
                break (plan, schedule, placements, exchange_plan, bases, estimates);
            }
            // Only the table-based program (`--no-outgoing-base`), whose
            // Repeat tables grow with the trip count and are not in the
            // planner's estimate, may re-plan with a measured allowance.
            Err(e)
                if !opts.outgoing_base
                    && attempt < TABLE_PROGRAM_REPLANS
                    && u64::from(e.largest) > allowance =>
            {
                attempt += 1;
                allowance = u64::from(e.largest).next_multiple_of(ALLOCATION_GRANULE);
                progress.note(&format!(
                    "{e:#}\ncompile: re-planning with {allowance} bytes/tile of the data budget kept for Repeat patch tables"
                ));
            }
            // Otherwise the same rejection report as placement's.
            Err(e) => {
                let placement = placements.iter().find(|p| p.tile == e.tile);
                let parts = crate::report::placement_rejection::PatchDataParts {
                    repeat_bytes: e.repeat_bytes,
                    sharing_bytes: e.sharing_bytes,
                };
                let headline = e.to_string();
                let rejected = crate::report::placement_rejection::patch_data_rejection(
                    &schedule,
                    &placements,
                    e.tile,
                    placement,
                    parts,
                    e.error,
                    headline,
                );
                return Err(anyhow::Error::new(rejected).context("placing patch data"));
            }
        }
    };
    let patch_data_bytes = patch_bases.largest;
    let peak = placements
        .iter()
        .max_by_key(|p| (p.peak.bytes, std::cmp::Reverse(p.tile)))
        .map(|p| (p.peak.bytes, p.tile))
        .unwrap_or((0, 0));

    let stage = progress.stage("emission", 0);
    let addresses = Placed {
        by_tile: placements.iter().map(|p| (p.tile, p)).collect(),
    };
    let programs = emit_programs(&EmitInput {
        schedule: &schedule,
        addresses: &addresses,
        kernels,
        exchange: &exchange_plan,
        patch_addresses: &patch_bases,
    })
    .map_err(|e| anyhow::anyhow!("{e}"))
    .context("emission")?;
    let exchange = exchange_plan.summary.clone();
    let patch_segments: BTreeMap<u32, Vec<Segment>> = programs
        .iter()
        .filter_map(|p| {
            let (base, data) = p.patch.as_ref()?;
            let words = |w: &[u32]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
            let mut segs = Vec::new();
            if data.repeat_bytes() > 0 {
                segs.push(Segment::data(
                    *base,
                    data.repeat_bytes(),
                    SegmentRole::RepeatPatchTable,
                    words(&data.repeat_words),
                ));
            }
            if data.sharing_bytes() > 0 {
                segs.push(Segment::data(
                    base + data.repeat_bytes(),
                    data.sharing_bytes(),
                    SegmentRole::SharingPatchList,
                    words(&data.sharing_words),
                ));
            }
            Some((p.logical_tile, segs))
        })
        .collect();
    times.emission_ms = stage.finish(&format!("{} tile programs", programs.len()));

    let stage = progress.stage("linking", programs.len() as u64);
    let images = programs
        .par_iter()
        .map(|p| {
            let linked = image::link_tile(&stubs, p, &opts.runtime);
            stage.inc(1);
            linked
        })
        .collect::<Result<Vec<_>>>()?;
    // Each image must end below its tile's lowest region-0 data (less that
    // data's element and the fetch look-ahead): a typed error otherwise.
    let by_logical: BTreeMap<u32, &TilePlacement> =
        placements.iter().map(|p| (p.tile, p)).collect();
    let mut ratio = (0.0f64, 0u32);
    let mut room = (u32::MAX, 0u32);
    for img in &images {
        let bytes = img.code_bytes();
        let estimate = code_estimates
            .get(img.logical_tile as usize)
            .copied()
            .unwrap_or(u64::from(fixed_code))
            .max(1);
        let r = f64::from(bytes) / estimate as f64;
        if r > ratio.0 {
            ratio = (r, img.logical_tile);
        }
        let ceiling = patch_bases.code_ceiling.get(&img.logical_tile).copied();
        // A late failure gets the same rejection report as placement's.
        let late = |p: &TilePlacement, e| {
            let (runtime, program, rows) = img.part_bytes();
            let patch_data = ceiling.map_or(0, |_| {
                PatchData::for_tile(&exchange_plan, img.physical_tile).bytes()
            });
            let parts = crate::report::placement_rejection::ImageParts {
                runtime,
                program,
                rows,
                patch_data,
            };
            anyhow::Error::new(crate::report::placement_rejection::code_rejection(
                &schedule,
                &placements,
                p,
                parts,
                e,
            ))
            .context("linking")
        };
        let limit = match by_logical.get(&img.logical_tile) {
            Some(p) => {
                p.check_code(bytes).map_err(|e| late(p, e))?;
                let limit = p.code_limit();
                match ceiling {
                    Some(c) if c < limit => {
                        check_below(img.logical_tile, bytes, c).map_err(|e| late(p, e))?;
                        c
                    }
                    _ => limit,
                }
            }
            None => {
                let empty = place_tile(&PlacementRequest {
                    tile: img.logical_tile,
                    reserved: support_reserved(code_estimate_of(
                        &code_estimates,
                        img.logical_tile,
                        fixed_code,
                    )),
                    ..PlacementRequest::default()
                })
                .map_err(anyhow::Error::new)
                .context("linking")?;
                empty.check_code(bytes).map_err(|e| late(&empty, e))?;
                empty.code_limit()
            }
        };
        let left = (limit - ipuc_core::ipu21::sram::APPLICATION_LOAD_BASE).saturating_sub(bytes);
        if left < room.0 {
            room = (left, img.logical_tile);
        }
    }
    // Developer aid: per-tile image estimate vs the linked parts, for
    // calibrating `plan::code`.
    if let Some(path) = std::env::var_os("IPUC_DUMP_CODE") {
        let mut text = String::from(
            "tile estimate image runtime program rows stored_rows send sendoff delay ctl1 sendpicp other\n",
        );
        for img in &images {
            let (runtime, program, rows) = img.part_bytes();
            let counts = row_instruction_counts(
                exchange_plan
                    .stored
                    .get(&img.physical_tile)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
            );
            text.push_str(&format!(
                "{} {} {} {runtime} {program} {rows} {}\n",
                img.logical_tile,
                code_estimates
                    .get(img.logical_tile as usize)
                    .copied()
                    .unwrap_or(0),
                img.code_bytes(),
                counts.map(|c| c.to_string()).join(" ")
            ));
        }
        std::fs::write(&path, text)
            .with_context(|| format!("writing {}", path.to_string_lossy()))?;
    }
    let code_estimate_max = code_estimates.iter().copied().max().unwrap_or(0);
    times.linking_ms = stage.finish(&format!(
        "{} tile images, largest code image {} bytes (largest estimate {}; image/estimate at most {:.3}, on tile {}; least room left {} bytes, on tile {})",
        images.len(),
        images.iter().map(|i| i.code_bytes()).max().unwrap_or(0),
        code_estimate_max,
        ratio.0,
        ratio.1,
        room.0,
        room.1
    ));

    let stage = progress.stage("packaging", 0);
    let mut pkg = Package::new(format!(
        "ipuc {} ({})",
        env!("CARGO_PKG_VERSION"),
        opts.name
    ));
    for img in &images {
        let mut tile = img.tile_image();
        tile.segments.push(Segment::data(
            layout::STATE_BASE,
            layout::STATE_END - layout::STATE_BASE,
            SegmentRole::State,
            Vec::new(),
        ));
        if let Some(p) = by_logical.get(&img.logical_tile) {
            tile.segments.extend(data_segments(&schedule, p));
        }
        if let Some(segs) = patch_segments.get(&img.logical_tile) {
            tile.segments.extend(segs.iter().cloned());
        }
        tile.segments.sort_by_key(|s| s.address);
        pkg.tiles.push(tile);
    }
    pkg.kernels = image::kernel_symbols(kernels, &images)?;
    pkg.bindings = bindings::bindings(graph, &schedule, &addresses)?;
    pkg.host_calls = bindings::host_calls(&pkg.bindings)?;
    pkg.steps = image::step_tables(&schedule, &images);
    let summary = [
        ("beam_width", SummaryValue::Integer(opts.beam_width as i64)),
        (
            "estimated_cycles",
            SummaryValue::Integer(plan.cycles.total() as i64),
        ),
        (
            "estimated_peak_bytes",
            SummaryValue::Integer(plan.peak_bytes as i64),
        ),
        (
            "exchange_phases",
            SummaryValue::Integer(exchange.phases as i64),
        ),
        ("workload", SummaryValue::Text(opts.name.clone())),
    ];
    // Non-default build settings are recorded too (defaults add nothing, so
    // default packages keep their bytes).
    let extra = [
        opts.exchange_stream_words
            .map(|w| ("exchange_stream_words", SummaryValue::Integer(i64::from(w)))),
        (opts.optimization_steps > 0).then(|| {
            (
                "optimization_steps",
                SummaryValue::Integer(i64::from(opts.optimization_steps)),
            )
        }),
        (!opts.runtime.is_builtin()).then(|| {
            (
                "runtime_source",
                SummaryValue::Text(opts.runtime.name.clone()),
            )
        }),
    ];
    pkg.plan_summary = summary
        .into_iter()
        .chain(extra.into_iter().flatten())
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let bytes = package::write(&pkg)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("writing the package")?;
    // The package's own digest (SHA-256 of the canonical bytes before it),
    // which the reader verifies first.
    let sha256 = package::digest_hex(&bytes);
    times.packaging_ms = stage.finish(&format!("{} bytes", bytes.len()));

    let per_tile = |f: &dyn Fn(&ipuc_core::package::TileImage) -> u64| {
        pkg.tiles.iter().map(f).max().unwrap_or(0)
    };
    let report = CompileReport {
        plan_stats: plan.stats,
        estimated_cycles: plan.cycles.total(),
        estimated_peak_bytes: plan.peak_bytes,
        estimated_peak_tile: plan.peak_tile,
        placed_peak_bytes: peak.0,
        placed_peak_tile: peak.1,
        patch_data_bytes_per_tile: u64::from(patch_data_bytes),
        patch_allowance_bytes: allowance,
        replans: attempt,
        patch_blocks_in_reservation: patch_bases.in_reservation,
        patch_blocks_in_data: patch_bases.in_data,
        exchange_table_bytes_per_tile: per_tile(&|t| {
            t.segments
                .iter()
                .filter(|s| s.role.is_exchange_table())
                .map(|s| u64::from(s.memory_size))
                .sum()
        }),
        host_descriptor_bytes_per_tile: per_tile(&|t| {
            t.role_bytes(ipuc_core::package::SegmentRole::HostDescriptors)
        }),
        code_bytes_per_tile: images
            .iter()
            .map(|i| u64::from(i.code_bytes()))
            .max()
            .unwrap_or(0),
        code_estimate_bytes_per_tile: code_estimate_max,
        code_actual_over_estimate: ratio,
        code_room_min: room,
        tiles: images.len(),
        exchange,
        times,
        package_bytes: bytes.len(),
        sha256,
        optimization,
    };
    if report.tiles == 0 {
        bail!("the schedule uses no tiles");
    }
    Ok(Compiled {
        package: pkg,
        bytes,
        report,
        schedule,
        placements,
    })
}

/// Patch-data block bases by logical tile.
struct PatchBases {
    bases: BTreeMap<u32, u32>,
    /// Largest block on one tile.
    largest: u32,
    /// Tiles whose block sits at the top of their code reservation: the
    /// address their image must end at or below (block start less the
    /// 64-byte fetch look-ahead).
    code_ceiling: BTreeMap<u32, u32>,
    /// Blocks placed in the code reservation / in the data region.
    in_reservation: usize,
    in_data: usize,
}

/// How many times the table-based program (`--no-outgoing-base`) may
/// re-plan to make room for its Repeat patch tables; the default program
/// never re-plans (its patch data fits the elements charged for code, or
/// the data region, or the compile fails naming the tile).
const TABLE_PROGRAM_REPLANS: u32 = 3;

/// [`ipuc_core::place::PlaceError::CodeDoesNotFit`] unless an image of
/// `image_bytes` ends at or below `limit`.
fn check_below(
    tile: u32,
    image_bytes: u32,
    limit: u32,
) -> Result<(), ipuc_core::place::PlaceError> {
    let free = limit.saturating_sub(ipuc_core::ipu21::sram::APPLICATION_LOAD_BASE);
    if image_bytes > free {
        return Err(ipuc_core::place::PlaceError::CodeDoesNotFit {
            tile,
            image_bytes,
            free_bytes: free,
            limit,
        });
    }
    Ok(())
}

impl PatchAddresses for PatchBases {
    fn patch_base(&self, tile: u32) -> Option<u32> {
        self.bases.get(&tile).copied()
    }
}

/// A tile's patch data did not fit (budget or room).
#[derive(Debug, thiserror::Error)]
#[error(
    "logical tile {tile}: {} bytes of patch data ({repeat_bytes} of Repeat tables, {sharing_bytes} of sharing lists; largest on any tile {largest}) do not fit: {error}",
    repeat_bytes + sharing_bytes
)]
struct PatchDataDoesNotFit {
    tile: u32,
    repeat_bytes: u32,
    sharing_bytes: u32,
    /// Largest patch data of any tile of this plan.
    largest: u32,
    error: ipuc_core::place::PlaceError,
}

/// Places every tile's patch data ([`PatchData::for_tile`]) as a constant
/// block in its data region; tiles that hold no buffer get a placement of
/// their own. Fails with placement's typed error (budget or room) naming
/// the tile.
fn place_patch_data(
    schedule: &TileSchedule,
    exchange: &ExchangePlan,
    placements: &mut Vec<TilePlacement>,
    code_estimate: &dyn Fn(u32) -> u32,
) -> Result<PatchBases, PatchDataDoesNotFit> {
    let mut blocks = Vec::new();
    for tile in program_tiles(schedule) {
        // Invariant: program tiles come from the schedule's blocks, calls and
        // transfers, whose tiles lowering checked against the C600.
        let Ok(logical) = LogicalTile::new(tile) else {
            continue;
        };
        let data = PatchData::for_tile(exchange, logical.physical().get());
        if data.bytes() > 0 {
            blocks.push((tile, data));
        }
    }
    let largest = blocks.iter().map(|(_, d)| d.bytes()).max().unwrap_or(0);
    let mut bases = BTreeMap::new();
    let mut code_ceiling = BTreeMap::new();
    let (mut in_reservation, mut in_data) = (0, 0);
    for (tile, data) in blocks {
        // First choice: the top of the elements reserved for the image,
        // above the planner's estimate (an upper bound of the image) and
        // its fetch look-ahead: no budget beyond what the planner charged.
        {
            use ipuc_core::ipu21::sram::{APPLICATION_LOAD_BASE, SUPERVISOR_FETCH_LOOKAHEAD};
            let estimate_end = APPLICATION_LOAD_BASE.saturating_add(code_estimate(tile));
            let top = ipuc_core::place::element_bounds(
                estimate_end.saturating_sub(1).max(APPLICATION_LOAD_BASE),
            )
            .end
            .min(layout::STATE_BASE);
            let base = top.saturating_sub(data.bytes()) / PATCH_DATA_ALIGN * PATCH_DATA_ALIGN;
            if base >= estimate_end.saturating_add(SUPERVISOR_FETCH_LOOKAHEAD)
                && top <= ipuc_core::ipu21::sram::EXECUTABLE_MEMORY_LIMIT
            {
                bases.insert(tile, base);
                code_ceiling.insert(tile, base - SUPERVISOR_FETCH_LOOKAHEAD);
                in_reservation += 1;
                continue;
            }
        }
        in_data += 1;
        let fail = |error| PatchDataDoesNotFit {
            tile,
            repeat_bytes: data.repeat_bytes(),
            sharing_bytes: data.sharing_bytes(),
            largest,
            error,
        };
        let index = match placements.binary_search_by_key(&tile, |p| p.tile) {
            Ok(i) => i,
            Err(i) => {
                let empty = PlacementRequest {
                    tile,
                    reserved: support_reserved(code_estimate(tile)),
                    ..PlacementRequest::default()
                };
                placements.insert(i, place_tile(&empty).map_err(fail)?);
                i
            }
        };
        let range = placements[index]
            .add_constant(PATCH_DATA_NAME, data.bytes(), PATCH_DATA_ALIGN)
            .map_err(fail)?;
        bases.insert(tile, range.start);
    }
    Ok(PatchBases {
        bases,
        largest,
        code_ceiling,
        in_reservation,
        in_data,
    })
}

/// The planner's image estimate of `tile` (the fixed part when it has none).
fn code_estimate_of(estimates: &[u64], tile: u32, fixed: u32) -> u32 {
    estimates
        .get(tile as usize)
        .map_or(fixed, |&b| u32::try_from(b).unwrap_or(u32::MAX))
}

/// Memory-map name of a tile's patch-data block.
const PATCH_DATA_NAME: &str = "patch data (Repeat tables, sharing lists)";
/// Word tables: 8-byte aligned like every other data block (the patchers
/// read 32-bit words, `docs/facts/ipu21-target.md` §2.8).
const PATCH_DATA_ALIGN: u32 = ipuc_core::lower::schedule::BASE_BUFFER_ALIGN;

/// Zero-initialised data segments covering every placed buffer of a tile:
/// the union of its allocations, one segment per disjoint range, tagged
/// `Tensor` when a host-bound buffer (input, weight, output) lives in it.
fn data_segments(schedule: &TileSchedule, placement: &TilePlacement) -> Vec<Segment> {
    let mut ranges: Vec<(u32, u32, bool)> = placement
        .allocations
        .iter()
        .map(|a| {
            let bound = schedule.buffer(a.key).is_some_and(|b| {
                matches!(
                    b.role,
                    BufferRole::Input { .. }
                        | BufferRole::Parameter { .. }
                        | BufferRole::Iterated { .. }
                        | BufferRole::Output { .. }
                )
            }) || schedule.outputs.iter().any(|o| o.buffer.0 == a.key.0);
            (a.range.start, a.range.end, bound)
        })
        .filter(|r| r.1 > r.0)
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32, bool)> = Vec::new();
    for (start, end, bound) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => {
                last.1 = last.1.max(end);
                last.2 |= bound;
            }
            _ => merged.push((start, end, bound)),
        }
    }
    merged
        .into_iter()
        .map(|(start, end, bound)| {
            let role = if bound {
                SegmentRole::Tensor
            } else {
                SegmentRole::Scratch
            };
            Segment::data(start, end - start, role, Vec::new())
        })
        .collect()
}

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// Developer aid (`IPUC_DUMP_CODE`): a tile's stored rows and their
/// instructions by kind: [rows, send, sendoff, delay, one-word control
/// (delaypic, delayxpic, sendpic), sendpicp, other].
fn row_instruction_counts(rows: &[ipuc_core::exchange::ExchangeRow]) -> [u64; 7] {
    use ipuc_core::ipu21::isa::{decode, Instruction as I};
    let mut c = [0u64; 7];
    c[0] = rows.len() as u64;
    for row in rows {
        let mut i = 0;
        while i < row.words.len() {
            let Ok((instr, n)) = decode(&row.words[i..]) else {
                break;
            };
            let k = match instr {
                I::Send { .. } => 1,
                I::SendOff { .. } => 2,
                I::Delay { .. } => 3,
                I::DelayPic { .. } | I::DelayXPic { .. } | I::SendPic { .. } => 4,
                I::SendPicP { .. } => 5,
                _ => 6,
            };
            c[k] += 1;
            i += n.max(1);
        }
    }
    c
}
