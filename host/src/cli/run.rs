//! `ipuc run`: compile the SigLIP vision tower, execute the package on the
//! simulated IPU21 and validate it against the FP32 reference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::checks;
use super::device_args::DeviceArgs;
use super::run_report::{
    compare, placed_peak_moment, print_compile_report, print_peak_moment, print_run_report,
    write_patch_audit, write_profile, InferenceCheck,
};
use super::run_summary::{Flags, InferenceSummary, RunSummary};
use super::workload::{
    load_config, load_model_with_origin, load_pixels, workload_name, InputArgs, WorkloadArgs,
};
use crate::compile::{compile, CompileOptions, Compiled, PlanOverBudget};
use crate::device::sim::SimDevice;
use crate::device::DeviceOutput;
use crate::input::write_npy;
use crate::input::PixelValues;
use crate::model::SiglipModel;
use crate::model::{PIXEL_VALUES, POOLER_OUTPUT};
use crate::reference::{run_siglip, Numerics};
use crate::report::placement_map::memory_map_from_placement;
use crate::report::placement_rejection::PlacementRejected;
use crate::report::trace::build_profile;
use crate::report::{write_memory_map, write_rejection, MemoryRejection, Profile};
use crate::weights::{HostTensor, Weights};
use ipuc_core::package::Package;

/// `ipuc run` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub model: WorkloadArgs,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub build: BuildArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Write a machine-readable summary of the run here (`-`: stdout, and
    /// the report goes to stderr). JSON (`host/schemas/summary.schema.json`):
    /// the command line, ipuc version, every planning/numerics flag, seed,
    /// runtime-source and package digests, result, rejection stage and op,
    /// planning/compile seconds, peak bytes/tile, cycles, errors; written
    /// also when compilation is rejected. `cargo xtask sweep` collects these.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
}

/// Execution and validation flags shared by `ipuc run` and `ipuc exec`.
#[derive(clap::Args, Debug, Clone)]
pub struct ExecArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Validate every inference against the device-numerics reference (the
    /// graph's own casts: FP8/FP16 weights, FP16 activations): PASS/FAIL at
    /// --diagnostic-atol / --diagnostic-rtol.
    #[arg(long)]
    pub reference_run: bool,
    /// Also report max abs error and cosine against the FP32 reference for
    /// every output of every inference (not the PASS criterion).
    #[arg(long, requires = "reference_run")]
    pub reference_fp32: bool,
    /// Resident inferences on one loaded package (weights uploaded once),
    /// each validated with --reference-run (1..=10000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=checks::MAX_INFERENCES))]
    pub reference_inferences: u32,
    /// Absolute tolerance of the validation: |device − ref| ≤ atol + rtol·|ref|
    /// (finite, ≥ 0).
    #[arg(long, default_value_t = 0.2, value_parser = checks::tolerance)]
    pub diagnostic_atol: f32,
    /// Relative tolerance of the validation (finite, ≥ 0).
    #[arg(long, default_value_t = 0.05, value_parser = checks::tolerance)]
    pub diagnostic_rtol: f32,
    /// Write the per-tile profile here: `F.ipuprof` (or `F.json`) names the
    /// profile file, with its viewer `F.html`, the Perfetto trace
    /// `F.trace.json` (opens in ui.perfetto.dev) and `F.operations.json`
    /// beside it (`run` adds `F.index.html` and the patch audits), so runs
    /// with other names never share a file; any other path is the run's
    /// directory, which receives `profile.json`, `profile.html`,
    /// `trace.json`, `operations.json` (and `index.html`). Files of an
    /// earlier run at the same paths are replaced, and the replacement
    /// announced.
    #[arg(long)]
    pub profile_output: Option<PathBuf>,
    /// How much of the profile to write: `auto` keeps every sample up to
    /// 1,000,000 and above that summarizes Repeat iterations after the
    /// first (each stays its own span per tile, with its compute, exchange,
    /// sync and patch cycles); `full` keeps every sample at any size;
    /// `summary` summarizes whenever the Repeat runs more than once.
    #[arg(long, value_enum, value_name = "DETAIL", default_value_t = crate::report::ProfileDetail::Auto)]
    pub profile_detail: crate::report::ProfileDetail,
    /// Write the pooled embedding (the family's `pooler_output`: SigLIP's MAP
    /// head, CLIP's post_layernorm class token, ViT's tanh pooler, DINOv2's
    /// class token) as `.npy`.
    #[arg(long)]
    pub output_embedding: Option<PathBuf>,
    /// Cycles a global sync takes after the last tile arrives (modelled).
    /// Default: 126, Poplar's `getMaxIPUSyncDelay` bound, the figure the
    /// planner uses too (`docs/facts/ipu21-target.md` §6; no public IPU21
    /// measurement exists). Range 0..=1000000, so cycle counts cannot wrap.
    #[arg(long, default_value_t = crate::sim::cycle::INTERNAL_SYNC_CYCLES,
          value_parser = clap::value_parser!(u64).range(0..=checks::MAX_SYNC_CYCLES))]
    pub sync_cycles: u64,
    /// Simulated cycles one inference may take on any tile before the run
    /// is stopped as a runaway (a typed fault naming tile and PC). Default:
    /// 16× the package's estimate (+10 M), at most 5·10^10.
    #[arg(long, value_name = "CYCLES",
          value_parser = clap::value_parser!(u64).range(1..=crate::device::sim::DEFAULT_CYCLE_LIMIT))]
    pub cycle_budget: Option<u64>,
}

/// Compilation flags shared by `ipuc run` and `ipuc compile`.
#[derive(clap::Args, Debug, Clone)]
pub struct BuildArgs {
    /// Width of the planner's Pareto beam (1 or more).
    #[arg(long, default_value_t = ipuc_core::plan::DEFAULT_BEAM_WIDTH, value_parser = checks::at_least_one)]
    pub planning_beam_width: usize,
    /// Tiles the planner may use (1..=1472; the C600 has 1472).
    #[arg(long, default_value_t = ipuc_core::ipu21::topology::TILE_COUNT as u32, value_parser = checks::tile_count)]
    pub planning_tiles: u32,
    /// Local-improvement steps after the beam search: re-plan one op at a
    /// time with the others fixed, keep only improvements (prints the
    /// estimated cycles before and after).
    #[arg(long, default_value_t = 0)]
    pub optimization_steps: u32,
    /// Longest piece, in words, one exchange stream carries (the seeds'
    /// B1024 is `--exchange-stream-words 1024`); default: no cap.
    #[arg(long, value_name = "W", value_parser = checks::at_least_one_u32)]
    pub exchange_stream_words: Option<u32>,
    /// Assemble and link this static runtime (`.S`) on every tile instead of
    /// the built-in `target-ipu21/device-asm/static_runtime.S`.
    #[arg(long, value_name = "F.S")]
    pub runtime_source: Option<PathBuf>,
    /// Write the package here.
    #[arg(long)]
    pub package: Option<PathBuf>,
    /// Write the exact per-tile memory placement here (`memory.html`,
    /// `memory.json`, `memory.png`); a plan rejected for memory, by the
    /// planner or by placement, writes one report per rejected candidate
    /// (`rejected-op<N>-<k>.html` + `.json`, by op and candidate) here, or in the current
    /// directory without this flag.
    #[arg(long)]
    pub memory_profile_directory: Option<PathBuf>,
    /// Write the chosen plan here as text: one line per op (a Repeat's body
    /// indented), its implementation (grid, weight mode, parts) and the
    /// planner's estimated cycles.
    #[arg(long, value_name = "F")]
    pub plan_output: Option<PathBuf>,
    /// Build the table-based program: Repeat patch tables for every moving
    /// send word instead of a per-iteration `$OUTGOING_BASE` for uniform
    /// moving senders (to compare cycles, table bytes and per-tile peak).
    #[arg(long)]
    pub no_outgoing_base: bool,
    /// Testing and report inspection: plan against this per-tile data
    /// budget (bytes) instead of the real one. Placement still checks the
    /// real budget, so a larger value forces a placement-stage memory
    /// rejection and its reports, e.g. `--workload siglip-small
    /// --vit-layers 23 --planning-tiles 16 --planner-data-budget 650000`
    /// (exit 3); a smaller one makes the planner itself reject sooner.
    #[arg(long, value_name = "BYTES")]
    pub planner_data_budget: Option<u64>,
}

impl BuildArgs {
    /// Output paths checked (or, for directories, created) before work.
    pub fn check(&self) -> Result<()> {
        if let Some(path) = &self.package {
            checks::output_file("--package", path)?;
        }
        if let Some(dir) = &self.memory_profile_directory {
            checks::output_dir("--memory-profile-directory", dir)?;
        }
        if let Some(path) = &self.plan_output {
            checks::output_file("--plan-output", path)?;
        }
        if let Some(path) = &self.runtime_source {
            checks::input_file("--runtime-source", path)?;
        }
        Ok(())
    }
}

/// Checks `--profile-output`'s place before work: a `.ipuprof`/`.json` file
/// gets its directory created, anything else is created as a directory.
pub fn check_profile_output(out: &std::path::Path) -> Result<()> {
    let dir = crate::report::ProfileFiles::at(out).dir();
    if dir.as_os_str().is_empty() {
        Ok(())
    } else {
        checks::output_dir("--profile-output", &dir)
    }
}

/// Builds and compiles the model the flags describe, for `batch` images.
pub fn compile_workload(
    model: &WorkloadArgs,
    batch: usize,
    build: &BuildArgs,
) -> Result<(crate::model::SiglipModel, crate::weights::Weights, Compiled)> {
    if batch != 1 {
        // The reference runs any batch; the planner's broadcasts (position
        // add, MAP-head probe) are written for one image.
        bail!("--vit-batch {batch}: the device compiler supports batch 1 only (`ipuc reference` runs any batch)");
    }
    let (siglip, weights, origin) = load_model_with_origin(model, batch)?;
    let description = super::package_model::describe_model(model, &siglip, origin)?;
    crate::say!(
        "model: {} ({} layers, {} tokens, width {}, weights {})",
        workload_name(model),
        siglip.layers,
        siglip.config.num_tokens(),
        siglip.config.hidden_size,
        match (model.fp8_scale, model.fp8_weights_only) {
            (Some(s), true) => format!("FP8 F143 at scale {s}, FP16 activations"),
            (Some(s), false) => format!(
                "FP8 F143 at scale {s}, GEMM activations FP8 at scale {}",
                model.fp8_activation_scale
            ),
            (None, _) => "FP16".into(),
        }
    );
    let compiled = compile(
        &siglip.graph,
        &crate::device::sim::kernel_abi(),
        &CompileOptions {
            beam_width: build.planning_beam_width,
            tiles: build.planning_tiles,
            name: workload_name(model),
            runtime: checks::runtime_source(build.runtime_source.as_deref())?,
            exchange_stream_words: build.exchange_stream_words,
            optimization_steps: build.optimization_steps,
            outgoing_base: !build.no_outgoing_base,
            planner_data_budget: build.planner_data_budget,
            min_key_parts: 1,
            model: Some(description),
        },
    )
    .map_err(|err| with_rejection_report(err, build))?;
    if let Some(dir) = &build.memory_profile_directory {
        let path = dir.join("memory.html");
        let map = memory_map_from_placement(
            &format!("{} memory placement", workload_name(model)),
            &compiled.schedule,
            &compiled.placements,
        );
        write_memory_map(&path, &map)?;
        tracing::info!(
            "memory map written to {} (+ memory.json, memory.png: all {} tiles)",
            path.display(),
            map.tiles.len() + map.unused_tiles.len()
        );
    }
    if let Some(path) = &build.plan_output {
        let text = crate::report::plan_listing(&siglip.graph, &compiled.report);
        crate::fsio::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing the plan to {}", path.display()))?;
        tracing::info!("plan written to {}", path.display());
    }
    if let Some(path) = &build.package {
        crate::fsio::write_atomic(path, &compiled.bytes)
            .with_context(|| format!("writing the package to {}", path.display()))?;
        tracing::info!("package written to {}", path.display());
    }
    Ok((siglip, weights, compiled))
}

/// A memory rejection gets its HTML report written (and its path printed)
/// before the error goes up.
fn with_rejection_report(mut err: anyhow::Error, build: &BuildArgs) -> anyhow::Error {
    let dir = build
        .memory_profile_directory
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    let written = if let Some(rejected) = err.downcast_mut::<PlanOverBudget>() {
        let reports = MemoryRejection::all_from_plan(&rejected.0, build.planning_tiles);
        write_rejections(&dir, rejected.0.op_index, &reports).map(|paths| rejected.1 = paths)
    } else if let Some(rejected) = err.downcast_mut::<PlacementRejected>() {
        write_rejections(
            &dir,
            rejected.op_index,
            std::slice::from_ref(&rejected.report),
        )
        .map(|paths| rejected.paths = paths)
    } else {
        return err;
    };
    // The error names the reports after its top dozen allocations.
    match written {
        Ok(()) => err,
        Err(write_err) => err.context(format!("could not write the memory report: {write_err:#}")),
    }
}

/// Writes `rejected-op<N>-<k>.html` + `.json` for every report into `dir`:
/// named by the op and the candidate's rank (0 = the reported one, then by
/// peak), so a rerun of the same build replaces its own reports (each file
/// written atomically, and the replacement announced) instead of piling up
/// new ones; an earlier run's reports of the same op beyond this run's
/// candidates (`-<k>` for k ≥ the count) are removed, and that announced
/// too, so the directory never mixes two runs' candidates of one op.
pub fn write_rejections(
    dir: &std::path::Path,
    op_index: u32,
    reports: &[MemoryRejection],
) -> Result<Vec<PathBuf>> {
    let name = |k: usize| dir.join(format!("rejected-op{op_index}-{k:04}.html"));
    let paths = reports
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let path = name(k);
            if path.exists() {
                tracing::warn!(
                    "warning: replacing the earlier rejection report {}",
                    path.display()
                );
            }
            write_rejection(&path, r)?;
            Ok(path)
        })
        .collect::<Result<Vec<_>>>()?;
    // An earlier run's reports of this op past this run's candidates.
    let prefix = format!("rejected-op{op_index}-");
    let mut stale: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
                return false;
            };
            let Some((k, ext)) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split_once('.'))
            else {
                return false;
            };
            (ext == "html" || ext == "json")
                && k.len() == 4
                && k.parse::<usize>().is_ok_and(|k| k >= reports.len())
        })
        .collect();
    stale.sort();
    for p in &stale {
        std::fs::remove_file(p).with_context(|| {
            format!(
                "removing the earlier run's rejection report {}",
                p.display()
            )
        })?;
    }
    if let Some(first) = stale.first() {
        tracing::warn!(
            "warning: removed {} file(s) of an earlier run's rejection reports of op {op_index} beyond this run's {} candidate(s) (from {})",
            stale.len(),
            reports.len(),
            first.display()
        );
    }
    Ok(paths)
}

pub fn run(args: Args) -> Result<()> {
    if args.summary_json.as_deref() == Some(Path::new("-")) {
        crate::output::reserve_stdout_for_data();
    }
    args.build.check()?;
    args.exec.check()?;
    if let Some(path) = &args.summary_json {
        if path != Path::new("-") {
            checks::output_file_making_dir("--summary-json", path)?;
        }
    }
    let mut summary = new_summary(
        "run",
        &args.model,
        Some(&args.build),
        with_exec(
            with_build(super::summary::model_flags(&args.model), &args.build),
            &args.exec,
        ),
    )?;
    let result = run_with_summary(&args, &mut summary);
    let result = super::summary::finish(&mut summary, args.summary_json.as_deref(), result);
    if let (Err(err), Some(out)) = (&result, &args.exec.profile_output) {
        // A rejected run still gets its index: the rejection reports (and
        // the summary) are its artifacts.
        if let Some(index) = write_rejection_index(&args, err, out)? {
            crate::say!(
                "index: {} (links the memory-rejection reports)",
                index.display()
            );
        }
    }
    result
}

/// A summary of `command` with the model's shape (when its config loads)
/// and, for a build, the runtime source's digest.
pub fn new_summary(
    command: &str,
    model: &WorkloadArgs,
    build: Option<&BuildArgs>,
    flags: Flags,
) -> Result<RunSummary> {
    let mut summary = RunSummary::new(command, flags);
    if let Some(build) = build {
        summary.tiles = build.planning_tiles;
        let (name, sha) = super::summary::runtime_digest(build.runtime_source.as_deref())?;
        summary.runtime_source = Some(name);
        summary.runtime_source_sha256 = Some(sha);
    }
    if let Ok(config) = load_config(model) {
        summary.layers = model.vit_layers.unwrap_or(config.num_hidden_layers);
        summary.tokens = config.num_tokens();
        summary.width = config.hidden_size;
    }
    Ok(summary)
}

/// `index.html` next to where the profile would have gone, linking the
/// memory-rejection reports `err` names (`None` for other errors).
fn write_rejection_index(
    args: &Args,
    err: &anyhow::Error,
    out: &std::path::Path,
) -> Result<Option<PathBuf>> {
    use crate::report::index::{self, Artifact};
    let (stage, paths) = if let Some(r) = err.downcast_ref::<PlanOverBudget>() {
        ("planner", &r.1)
    } else if let Some(r) = err.downcast_ref::<PlacementRejected>() {
        ("placement", &r.paths)
    } else {
        return Ok(None);
    };
    let mut artifacts = Vec::new();
    for (k, p) in paths.iter().enumerate() {
        let what = if k == 0 {
            format!("memory rejection ({stage}): the reported candidate, interactive")
        } else {
            format!("memory rejection ({stage}): rejected candidate {k}, interactive")
        };
        artifacts.push(Artifact {
            path: p.clone(),
            what,
        });
        artifacts.push(Artifact {
            path: p.with_extension("json"),
            what: "its data (JSON)".into(),
        });
    }
    if let Some(p) = args.summary_json.as_ref().filter(|p| p.as_os_str() != "-") {
        artifacts.push(Artifact {
            path: p.clone(),
            what: "the run's machine-readable summary (JSON)".into(),
        });
    }
    let index_path = crate::report::ProfileFiles::at(out).index_html;
    let stats = vec![
        ("workload".to_string(), workload_name(&args.model)),
        (
            "result".to_string(),
            format!("rejected by the {stage}: over the per-tile memory budget"),
        ),
    ];
    index::write(
        &format!("ipuc run {} (rejected)", workload_name(&args.model)),
        &stats,
        &index_path,
        &artifacts,
    )
    .map(Some)
}

fn run_with_summary(args: &Args, summary: &mut RunSummary) -> Result<()> {
    let pixels = load_pixels(&args.input, &args.model)?;
    let t = Instant::now();
    let compiled = compile_workload(&args.model, pixels.batch(), &args.build);
    summary.compile_seconds = t.elapsed().as_secs_f64();
    let (model, weights, compiled) = compiled?;
    summary.model_flops = crate::reference::graph_flops(&model.graph);
    print_compile_report(&compiled.report);
    print_peak_moment(&compiled);
    let (peak_bytes, peak_tile, _, moment) = placed_peak_moment(&compiled);
    summary.planning_seconds = Some(compiled.report.times.planning_ms / 1e3);
    summary.peak_bytes_per_tile = Some(peak_bytes);
    summary.peak_tile = Some(peak_tile);
    summary.peak_moment = Some(moment);
    summary.package_sha256 = Some(compiled.report.sha256.clone());
    summary.tiles = compiled.report.tiles as u32;
    // What is tested is what is shipped: execute the package bytes (the ones
    // written with --package), read back through the validating reader.
    let shipped = ipuc_core::package::read(&compiled.bytes)
        .context("reading back the package just written")?;
    tracing::info!(
        "device: executing the package read back from its {} bytes (sha256 {})",
        compiled.bytes.len(),
        compiled.report.sha256
    );
    let (checks, profile) = execute(
        &shipped,
        &format!("ipuc run {} (simulated)", workload_name(&args.model)),
        &model,
        &weights,
        &pixels,
        &args.exec,
    )?;
    summary.set_run(
        &profile,
        &model.graph,
        checks
            .iter()
            .map(|c| InferenceSummary::from_check(c, c.words_moved))
            .collect(),
    );
    if let Some(out) = &args.exec.profile_output {
        write_patch_audit(out, &compiled.report.exchange.audit)?;
        // The summary as it stands (rewritten when the run ends), so the
        // index can link it with its size.
        if let Some(path) = args
            .summary_json
            .as_deref()
            .filter(|p| *p != Path::new("-"))
        {
            summary.write(path)?;
        }
        let index = write_index(args, &compiled, &checks, out)?;
        crate::say!(
            "index: {} (links every artifact of this run)",
            index.display()
        );
    }
    print_result_line(
        &checks,
        &workload_name(&args.model),
        &compiled.report.sha256,
    );
    fail_unless_passed(&checks)
}

impl ExecArgs {
    /// Checks made before any work (device flags, output paths).
    pub fn check(&self) -> Result<()> {
        self.device.check()?;
        if let Some(out) = &self.profile_output {
            check_profile_output(out)?;
        }
        if let Some(path) = &self.output_embedding {
            checks::output_file("--output-embedding", path)?;
        }
        Ok(())
    }
}

/// [`crate::exit::ValidationFailed`] if any inference failed its validation.
pub fn fail_unless_passed(checks: &[InferenceCheck]) -> Result<()> {
    let validated: Vec<bool> = checks
        .iter()
        .filter_map(|c| c.device.as_ref().map(|v| v.pass))
        .collect();
    let failed = validated.iter().filter(|&&p| !p).count();
    if failed > 0 {
        return Err(crate::exit::ValidationFailed(format!(
            "reference validation FAILED ({failed} of {} inferences)",
            validated.len()
        ))
        .into());
    }
    Ok(())
}

/// The one line a script greps for (stdout): `result: PASS|FAIL|NOT
/// VALIDATED`, the workload, the last inference's simulated cycles and the
/// package digest.
pub fn print_result_line(checks: &[InferenceCheck], workload: &str, package_sha256: &str) {
    let validated: Vec<bool> = checks
        .iter()
        .filter_map(|c| c.device.as_ref().map(|v| v.pass))
        .collect();
    let verdict = if validated.is_empty() {
        "NOT VALIDATED (no --reference-run)"
    } else if validated.iter().all(|&p| p) {
        "PASS"
    } else {
        "FAIL"
    };
    let cycles = checks.last().map_or(0, |c| c.cycles);
    crate::result_line!(
        "result: {verdict} {workload}, {cycles} simulated cycles, package {}",
        &package_sha256[..package_sha256.len().min(16)]
    );
}

/// Loads `package` on the simulated device with `weights`, runs the
/// inferences `args` asks for on `pixels`, validates them against the
/// references of `model` and prints the run report; returns each
/// inference's cycles and validation, and the last inference's profile.
pub fn execute(
    package: &Package,
    title: &str,
    model: &SiglipModel,
    weights: &Weights,
    pixels: &PixelValues,
    args: &ExecArgs,
) -> Result<(Vec<InferenceCheck>, Profile)> {
    let mut inputs = BTreeMap::new();
    inputs.insert(
        PIXEL_VALUES.to_string(),
        HostTensor {
            shape: pixels.shape.to_vec(),
            data: pixels.data.clone(),
        },
    );

    let device_reference = if args.reference_run {
        tracing::info!(
            "reference: device-numerics forward pass (the graph's own casts, the package's {} K splits)…",
            package.description.k_splits.len()
        );
        let numerics = (Numerics::Device, package.description.k_splits.as_slice());
        let r = run_siglip(model, weights.clone(), pixels, numerics, None)
            .context("device-numerics reference")?;
        tracing::info!(
            "reference: {:.2} s ({:.1} GFLOP/s)",
            r.seconds,
            r.gflops_per_second()
        );
        Some(r)
    } else {
        None
    };
    let fp32_reference = if args.reference_fp32 {
        tracing::info!("reference: FP32 forward pass…");
        let r = run_siglip(model, weights.clone(), pixels, (Numerics::Fp32, &[]), None)
            .context("FP32 reference")?;
        tracing::info!(
            "reference: {:.2} s ({:.1} GFLOP/s)",
            r.seconds,
            r.gflops_per_second()
        );
        Some(r)
    } else {
        None
    };

    // Held for the device's lifetime (dropped with `run`'s locals after
    // the reports).
    let _lock = args.device.lock()?;
    let t = Instant::now();
    let mut sim = SimDevice::for_package(package)?;
    sim.sync_cycles = args.sync_cycles;
    sim.cycle_limit = args
        .cycle_budget
        .unwrap_or_else(|| crate::device::sim::cycle_budget(package, args.sync_cycles));
    let mut resident = sim
        .load(package, weights)
        .context("loading the package on the simulated device")?;
    tracing::info!(
        "device: package loaded once ({} bytes of images and weights) in {:.2} s",
        resident.loaded_bytes(),
        t.elapsed().as_secs_f64()
    );
    let count = args.reference_inferences;
    let mut last: Option<DeviceOutput> = None;
    let mut checks: Vec<InferenceCheck> = Vec::new();
    // One bar with an ETA per inference on a terminal, one line each otherwise.
    resident.set_progress(
        crate::progress::Progress::stderr("device"),
        Some(count.into()),
    );
    for i in 0..count {
        let out = resident
            .infer(&inputs)
            .with_context(|| format!("simulated inference {} of {count}", i + 1))?;
        let check = InferenceCheck {
            cycles: out.profile.cycles,
            wall_seconds: out.profile.wall_seconds,
            tiles: out.profile.tiles.len(),
            words_moved: out.profile.words_moved,
            device: device_reference
                .as_ref()
                .map(|r| compare(&out, r, args.diagnostic_atol, args.diagnostic_rtol))
                .transpose()?,
            fp32: fp32_reference
                .as_ref()
                .map(|r| compare(&out, r, args.diagnostic_atol, args.diagnostic_rtol))
                .transpose()?,
        };
        checks.push(check);
        last = Some(out);
    }
    let out = last.expect("at least one inference ran");
    let profile = build_profile(package, &out.profile, title);
    print_run_report(
        package,
        &out,
        &profile,
        &checks,
        args.diagnostic_atol,
        args.diagnostic_rtol,
    );
    if let Some(b) = crate::report::layer_breakdown::layer_breakdown(&profile, &model.graph) {
        // The headline and the categories in the short report, the rows
        // (indented four spaces) with -v; all of it is in the summary.
        for l in b.lines() {
            if l.starts_with("    ") {
                crate::detail!("{l}");
            } else {
                crate::say!("{l}");
            }
        }
    }
    if let Some(dir) = &args.profile_output {
        write_profile(dir, &profile, args.profile_detail)?;
    }
    if let Some(path) = &args.output_embedding {
        let t = out
            .outputs
            .get(POOLER_OUTPUT)
            .context("the package has no pooled embedding output")?;
        // The `.npy` error names the file.
        write_npy(path, &t.shape, &t.data).context("--output-embedding")?;
        crate::say!(
            "embedding: wrote {} {:?} float32 to {}",
            POOLER_OUTPUT,
            t.shape,
            path.display()
        );
    }
    Ok((checks, profile))
}

/// `index.html` next to the profile, linking every file this run wrote.
fn write_index(
    args: &Args,
    compiled: &Compiled,
    checks: &[InferenceCheck],
    out: &std::path::Path,
) -> Result<PathBuf> {
    use crate::report::index::{self, Artifact};
    let files = crate::report::ProfileFiles::at(out);
    let mut artifacts = vec![
        Artifact {
            path: files.profile_html.clone(),
            what: "execution timeline per tile (simulated cycles), operations by model name".into(),
        },
        Artifact {
            path: files.trace_json.clone(),
            what: "the same timeline as a Chrome/Perfetto trace (open in ui.perfetto.dev)".into(),
        },
        Artifact {
            path: files.operations_json.clone(),
            what: "per-operation cycle summary (JSON)".into(),
        },
        Artifact {
            path: files.profile_json.clone(),
            what: "the profile's data (JSON)".into(),
        },
        Artifact {
            path: files.patch_audit.clone(),
            what: "Repeat patch audit per exchange phase".into(),
        },
        Artifact {
            path: files.phase_patch_audit.clone(),
            what: "phases with moving senders: outgoing-base eligibility, worst-tile patch words"
                .into(),
        },
    ];
    if let Some(mem) = &args.build.memory_profile_directory {
        for (name, what) in [
            (
                "memory.html",
                "exact SRAM placement of every tile (interactive)",
            ),
            ("memory.png", "all-tiles memory overview (picture)"),
            ("memory.json", "the memory map's data (JSON)"),
        ] {
            artifacts.push(Artifact {
                path: mem.join(name),
                what: what.into(),
            });
        }
    }
    if let Some(p) = &args.build.package {
        artifacts.push(Artifact {
            path: p.clone(),
            what: format!("the package (SHA-256 {})", compiled.report.sha256),
        });
    }
    if let Some(p) = args.summary_json.as_ref().filter(|p| p.as_os_str() != "-") {
        artifacts.push(Artifact {
            path: p.clone(),
            what: "the run's machine-readable summary (JSON)".into(),
        });
    }
    if let Some(p) = &args.exec.output_embedding {
        artifacts.push(Artifact {
            path: p.clone(),
            what: "pooled embedding (.npy, float32)".into(),
        });
    }
    let validated: Vec<bool> = checks
        .iter()
        .filter_map(|c| c.device.as_ref().map(|v| v.pass))
        .collect();
    let verdict = match validated.as_slice() {
        [] => "not validated (no --reference-run)".to_string(),
        v if v.iter().all(|&p| p) => format!(
            "PASS ({} inferences vs the device-numerics reference)",
            v.len()
        ),
        v => format!(
            "FAIL ({} of {} inferences)",
            v.iter().filter(|&&p| !p).count(),
            v.len()
        ),
    };
    let stats = vec![
        ("workload".to_string(), workload_name(&args.model)),
        ("tiles".to_string(), compiled.report.tiles.to_string()),
        ("validation".to_string(), verdict),
        (
            "package".to_string(),
            compiled.report.sha256[..16].to_string(),
        ),
    ];
    index::write(
        &format!("ipuc run {}", workload_name(&args.model)),
        &stats,
        &files.index_html,
        &artifacts,
    )
}

/// Adds the planning flags as given.
pub fn with_build(mut f: Flags, b: &BuildArgs) -> Flags {
    f.planning_beam_width = Some(b.planning_beam_width);
    f.planning_tiles = Some(b.planning_tiles);
    f.optimization_steps = Some(b.optimization_steps);
    f.exchange_stream_words = b.exchange_stream_words;
    f.outgoing_base = Some(!b.no_outgoing_base);
    f.planner_data_budget = b.planner_data_budget;
    f
}

/// Adds the execution and validation flags.
pub fn with_exec(mut f: Flags, e: &ExecArgs) -> Flags {
    f.reference_run = Some(e.reference_run);
    f.reference_fp32 = Some(e.reference_fp32);
    f.reference_inferences = Some(e.reference_inferences);
    f.diagnostic_atol = Some(e.diagnostic_atol);
    f.diagnostic_rtol = Some(e.diagnostic_rtol);
    f.sync_cycles = Some(e.sync_cycles);
    f
}
