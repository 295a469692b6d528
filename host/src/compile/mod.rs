//! The compiler driver: graph → plan → tile schedule → placement → emission
//! → linked tile images → package. Each stage reports progress and its wall
//! time on stderr; the result carries everything the run report prints.

mod bindings;
mod image;

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use ipuc_core::emit::{emit_programs, BufferAddresses, EmitInput, ExchangeSummary, KernelAbi};
use ipuc_core::ir::Graph;
use ipuc_core::lower::{lower, BufferId, BufferRole, TileSchedule};
use ipuc_core::package::{self, Package, Segment, SegmentRole, SummaryValue};
use ipuc_core::place::{place_tile, requests, support_reserved, BufferKey, TilePlacement};
use ipuc_core::plan::memory::MemoryRejection;
use ipuc_core::plan::{plan_graph, Plan, PlanConfig, PlanError, PlanStats};
use ipuc_core::target::sram::layout;

pub use bindings::INFERENCE_CALL;
pub use image::CODE_END;

/// Compiler settings (the seeds' planning flags).
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// `--planning-beam-width`.
    pub beam_width: usize,
    /// `--planning-tiles`: logical tiles `0..tiles` the planner may use.
    pub tiles: u32,
    /// Name recorded in the package (e.g. the workload).
    pub name: String,
}

/// Wall times of the stages, in milliseconds.
#[derive(Clone, Debug, Default)]
pub struct StageTimes {
    pub planning_ms: f64,
    pub lowering_ms: f64,
    pub placement_ms: f64,
    pub emission_ms: f64,
    pub packaging_ms: f64,
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
    /// Largest exchange-table bytes (rows + patch data) on one tile.
    pub exchange_table_bytes_per_tile: u64,
    /// Largest host-descriptor bytes on one tile.
    pub host_descriptor_bytes_per_tile: u64,
    /// Largest linked code image (runtime + program + rows) on one tile.
    pub code_bytes_per_tile: u64,
    pub tiles: usize,
    pub exchange: ExchangeSummary,
    pub times: StageTimes,
    pub package_bytes: usize,
    pub sha256: String,
}

/// Every plan the planner tried exceeds the per-tile memory budget. A typed
/// error (reachable with `anyhow::Error::downcast_ref`) so the CLI can write
/// the rejection report next to the message.
#[derive(Debug)]
pub struct PlanOverBudget(pub Box<MemoryRejection>);

impl std::fmt::Display for PlanOverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for PlanOverBudget {}

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

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Buffer addresses from per-tile placements.
struct Placed<'a> {
    by_tile: BTreeMap<u32, &'a TilePlacement>,
}

impl BufferAddresses for Placed<'_> {
    fn base(&self, buffer: BufferId, tile: u32) -> Option<u32> {
        self.by_tile.get(&tile)?.address(BufferKey(buffer.0))
    }
}

/// Compiles `graph` into a package.
pub fn compile(graph: &Graph, kernels: &dyn KernelAbi, opts: &CompileOptions) -> Result<Compiled> {
    let mut times = StageTimes::default();

    if opts.tiles == 0 || opts.tiles > u32::from(ipuc_core::target::topology::TILE_COUNT) {
        bail!("--planning-tiles must be 1..=1472, got {}", opts.tiles);
    }
    eprintln!(
        "compile: planning on {} tiles (beam width {})…",
        opts.tiles, opts.beam_width
    );
    let t = Instant::now();
    let plan: Plan = plan_graph(
        graph,
        PlanConfig {
            beam_width: opts.beam_width,
            tiles: opts.tiles,
            ..PlanConfig::default()
        },
    )
    .map_err(|e| match e {
        PlanError::OutOfMemory(rejection) => anyhow::Error::new(PlanOverBudget(rejection)),
        other => anyhow::anyhow!("{other}"),
    })
    .context("planning")?;
    times.planning_ms = ms_since(t);
    let s = plan.stats;
    eprintln!(
        "compile: planned in {:.0} ms: {} candidates screened, {} body searches, {} cache hits, {} memory rejections",
        times.planning_ms, s.candidates_screened, s.body_searches, s.cache_hits, s.memory_rejections
    );

    let t = Instant::now();
    let schedule: TileSchedule = lower(graph, &plan)
        .map_err(|e| anyhow::anyhow!("{e:?}"))
        .context("lowering")?;
    times.lowering_ms = ms_since(t);
    eprintln!(
        "compile: lowered in {:.0} ms: {} buffers, {} steps",
        times.lowering_ms,
        schedule.buffers.len(),
        schedule.step_count
    );

    let t = Instant::now();
    let requests = requests(&schedule, |_| support_reserved());
    let placements: Vec<TilePlacement> = requests
        .par_iter()
        .map(|r| place_tile(r).map_err(|e| anyhow::anyhow!("{e}")))
        .collect::<Result<_>>()
        .context("SRAM placement")?;
    times.placement_ms = ms_since(t);
    let peak = placements
        .iter()
        .max_by_key(|p| (p.peak.bytes, std::cmp::Reverse(p.tile)))
        .map(|p| (p.peak.bytes, p.tile))
        .unwrap_or((0, 0));
    eprintln!(
        "compile: placed {} tiles in {:.0} ms (peak {} bytes on tile {})",
        placements.len(),
        times.placement_ms,
        peak.0,
        peak.1
    );

    let t = Instant::now();
    let addresses = Placed {
        by_tile: placements.iter().map(|p| (p.tile, p)).collect(),
    };
    let (programs, exchange) = emit_programs(&EmitInput {
        schedule: &schedule,
        addresses: &addresses,
        kernels,
    })
    .map_err(|e| anyhow::anyhow!("{e}"))
    .context("emission")?;
    let stubs = image::kernel_stubs(kernels)?;
    let images = programs
        .par_iter()
        .map(|p| image::link_tile(&stubs, p))
        .collect::<Result<Vec<_>>>()?;
    times.emission_ms = ms_since(t);
    eprintln!(
        "compile: emitted {} tile programs in {:.0} ms ({} exchange phases, {} stored rows)",
        images.len(),
        times.emission_ms,
        exchange.phases,
        exchange.stored_rows
    );

    let t = Instant::now();
    let mut pkg = Package::new(format!(
        "ipuc {} ({})",
        env!("CARGO_PKG_VERSION"),
        opts.name
    ));
    let by_logical: BTreeMap<u32, &TilePlacement> =
        placements.iter().map(|p| (p.tile, p)).collect();
    for img in &images {
        let mut tile = img.tile_image();
        tile.segments.push(Segment::data(
            layout::COMPLETION_WORD,
            layout::DATA_BASE - layout::COMPLETION_WORD,
            SegmentRole::State,
            Vec::new(),
        ));
        if let Some(p) = by_logical.get(&img.logical_tile) {
            tile.segments.extend(data_segments(&schedule, p));
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
    pkg.plan_summary = summary
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let bytes = package::write(&pkg)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("writing the package")?;
    times.packaging_ms = ms_since(t);
    let sha256 = hex(&Sha256::digest(&bytes));

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
        tiles: images.len(),
        exchange,
        times,
        package_bytes: bytes.len(),
        sha256,
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

/// Zero-initialised data segments covering every placed buffer of a tile:
/// the union of its allocations, one segment per disjoint range, tagged
/// `Tensor` when a host-bound buffer (input, weight, output) lives in it.
fn data_segments(schedule: &TileSchedule, placement: &TilePlacement) -> Vec<Segment> {
    let mut ranges: Vec<(u32, u32, bool)> = placement
        .allocations
        .iter()
        .map(|a| {
            let bound = schedule.buffer(BufferId(a.key.0)).is_some_and(|b| {
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
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
