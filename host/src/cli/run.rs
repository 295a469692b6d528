//! `ipuc run`: compile the SigLIP vision tower, execute the package on the
//! simulated IPU21 and validate it against the FP32 reference.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use super::batch::BatchFlag;
use super::checks;

use super::execute::{execute, fail_unless_passed, print_result_line, ExecArgs};
use super::rejection_reports::{with_rejection_report, write_rejection_index};
use super::workload::{
    load_config, load_model_unweighted, load_model_with_origin, load_pixels, InputArgs,
    WorkloadArgs,
};
use crate::compile::{compile, CompileOptions, Compiled};
use crate::model::ModelSpec;
use crate::report::patch_audit::write_patch_audit;
use crate::report::placement_map::memory_map_from_placement;
use crate::report::run::{print_compile_report, print_peak_moment, InferenceCheck};
use crate::report::run_summary::{Flags, RunSummary};
use crate::report::write_memory_map;

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
    #[arg(long, help_heading = super::headings::OUTPUTS)]
    pub summary_json: Option<PathBuf>,
}

/// Compilation flags shared by `ipuc run` and `ipuc compile`.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = super::headings::PLANNING)]
pub struct BuildArgs {
    /// Width of the planner's Pareto beam (1..=1024).
    #[arg(long, default_value_t = ipuc_core::plan::DEFAULT_BEAM_WIDTH, value_parser = checks::beam_width)]
    pub planning_beam_width: usize,
    /// Tiles the planner may use (1..=1472; the C600 has 1472).
    #[arg(long, default_value_t = ipuc_target::ipu21::topology::TILE_COUNT as u32, value_parser = checks::tile_count)]
    pub planning_tiles: u32,
    /// Local-improvement steps after the beam search: re-plan one op at a
    /// time with the others fixed, keep only improvements (prints the
    /// estimated cycles before and after). At most 1000: the search stops
    /// at the first pass that improves nothing.
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(checks::MAX_OPTIMIZATION_STEPS)))]
    pub optimization_steps: u32,
    /// Longest piece, in words, one exchange stream carries (the seeds'
    /// B1024 is `--exchange-stream-words 1024`); default: no cap.
    #[arg(long, value_name = "W", value_parser = checks::at_least_one_u32)]
    pub exchange_stream_words: Option<u32>,
    /// Assemble and link this static runtime (`.S`) on every tile instead of
    /// the built-in `device-asm/static_runtime.S`.
    #[arg(long, value_name = "F.S")]
    pub runtime_source: Option<PathBuf>,
    /// Write the package here.
    #[arg(long, help_heading = super::headings::OUTPUTS)]
    pub package: Option<PathBuf>,
    /// Write the exact per-tile memory placement here (`memory.html`,
    /// `memory.json`, `memory.png`); a plan rejected for memory, by the
    /// planner or by placement, writes one report per rejected candidate
    /// (`rejected-op<N>-<k>.html` + `.json`, by op and candidate) here, or in the current
    /// directory without this flag.
    #[arg(long, help_heading = super::headings::OUTPUTS)]
    pub memory_profile_directory: Option<PathBuf>,
    /// Write the chosen plan here as text: one line per op (a Repeat's body
    /// indented), its implementation (grid, weight mode, parts) and the
    /// planner's estimated cycles.
    #[arg(long, value_name = "F", help_heading = super::headings::OUTPUTS)]
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
    /// The files a build writes, by flag: the package, the plan listing and
    /// the memory map's three files.
    pub fn output_files(&self) -> Vec<(&'static str, PathBuf)> {
        let mut files = Vec::new();
        if let Some(p) = &self.package {
            files.push(("--package", p.clone()));
        }
        if let Some(p) = &self.plan_output {
            files.push(("--plan-output", p.clone()));
        }
        if let Some(d) = &self.memory_profile_directory {
            for name in ["memory.html", "memory.json", "memory.png"] {
                files.push(("--memory-profile-directory", d.join(name)));
            }
        }
        files
    }

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

/// `--vit-batch max` (`flag`) resolved: the model at the largest batch
/// that fits (found by compiling, saying which); any other value as it is.
pub fn resolve_batch(
    model: &ModelSpec,
    flag: Option<BatchFlag>,
    build: &BuildArgs,
    input: &InputArgs,
) -> Result<ModelSpec> {
    if flag != Some(BatchFlag::Largest) {
        return Ok(model.clone());
    }
    if !input.image.is_empty() || input.images.is_some() || input.input.is_some() {
        crate::usage_bail!(
            "--vit-batch max picks the batch; the inputs given fix it already (drop --vit-batch)"
        );
    }
    let found = largest_batch(model, build, super::batch::SEARCH_LIMIT)?;
    let Some(batch) = found else {
        // Batch 1 does not fit: compile it again for its rejection.
        compile_workload(
            &ModelSpec {
                batch: Some(1),
                ..model.clone()
            },
            1,
            build,
            WeightUse::Unused,
        )?;
        anyhow::bail!("--vit-batch max: batch 1 does not fit");
    };
    crate::say!("--vit-batch max: {batch} images, the largest batch that fits");
    Ok(ModelSpec {
        batch: Some(batch),
        ..model.clone()
    })
}

/// The largest batch up to `limit` whose compile fits (no artifacts
/// written while searching).
fn largest_batch(model: &ModelSpec, build: &BuildArgs, limit: usize) -> Result<Option<usize>> {
    super::batch::largest_fitting(limit, &mut fits_at(model, build))
}

/// Whether the model compiles at a batch: a memory rejection is `false`,
/// other errors are errors (the searches' probe). It writes no artifact;
/// the compile's report is quiet and one line says what it found.
fn fits_at<'a>(model: &'a ModelSpec, build: &BuildArgs) -> impl FnMut(usize) -> Result<bool> + 'a {
    let probe_build = BuildArgs {
        package: None,
        memory_profile_directory: None,
        plan_output: None,
        ..build.clone()
    };
    move |batch| {
        let at = ModelSpec {
            batch: Some(batch),
            ..model.clone()
        };
        super::batch::quiet_probe(batch, &mut |b| {
            compile_once(&at, b, &probe_build, WeightUse::Unused).map(|_| ())
        })
    }
}

/// A compiled model: its graph, its weights when they were asked for
/// ([`WeightUse`]) and the compile.
pub type CompiledWorkload = (
    crate::model::SiglipModel,
    Option<crate::weights::Weights>,
    Compiled,
);

/// Whether the caller of a compile uses the model's weights. No compile
/// output depends on them, and random ones are a function of the seed, so
/// a compile whose weights are unused does not draw random ones (a
/// checkpoint's are bound and checked all the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightUse {
    /// The weights come back with the package.
    Used,
    /// Random weights are not drawn (`None` comes back).
    Unused,
}

/// Builds and compiles the model the flags describe, for `batch` images.
/// A batch of more than one that does not fit is a memory rejection that
/// names the largest batch that does.
pub fn compile_workload(
    model: &ModelSpec,
    batch: usize,
    build: &BuildArgs,
    weights: WeightUse,
) -> Result<CompiledWorkload> {
    let err = match compile_once(model, batch, build, weights) {
        Ok(compiled) => return Ok(compiled),
        // This batch's rejection reports, written before the search's
        // probes run (which write none).
        Err(err) => with_rejection_report(
            err,
            build.memory_profile_directory.as_deref(),
            build.planning_tiles,
        ),
    };
    if batch <= 1 || !crate::exit::is_memory_rejection(&err) {
        return Err(err);
    }
    let note = super::batch::rejection_note(batch, &mut fits_at(model, build))?;
    Err(err.context(note))
}

/// [`compile_workload`], recorded in `summary`: its wall time (also when
/// it fails), then what the compile made.
pub fn compile_recorded(
    summary: &mut RunSummary,
    workload: &ModelSpec,
    batch: usize,
    build: &BuildArgs,
    weights: WeightUse,
) -> Result<CompiledWorkload> {
    let t = Instant::now();
    let compiled = compile_workload(workload, batch, build, weights);
    summary.compile_seconds = t.elapsed().as_secs_f64();
    let (model, weights, compiled) = compiled?;
    super::summary::record_compile(summary, &model.graph, &compiled);
    Ok((model, weights, compiled))
}

/// One compile at `batch`; a memory rejection comes back without its
/// reports (`compile_workload` writes them, the batch search does not).
fn compile_once(
    model: &ModelSpec,
    batch: usize,
    build: &BuildArgs,
    weights: WeightUse,
) -> Result<CompiledWorkload> {
    let config = load_config(model)?;
    let pairs = (batch as u64).saturating_mul(config.num_attention_heads as u64);
    if batch > 1 && pairs > u64::from(build.planning_tiles) {
        return Err(crate::model::ModelError::AttentionPairs {
            batch,
            heads: config.num_attention_heads,
            pairs,
            tiles: build.planning_tiles,
            largest: build.planning_tiles / (config.num_attention_heads.max(1) as u32),
        }
        .into());
    }
    let (siglip, weights, origin) = match weights {
        WeightUse::Used => {
            let (siglip, weights, origin) = load_model_with_origin(model, batch)?;
            (siglip, Some(weights), origin)
        }
        WeightUse::Unused => load_model_unweighted(model, batch)?,
    };
    let description = super::package_model::describe_model(model, &siglip, origin)?;
    crate::say!(
        "model: {} ({} layers, {} tokens, width {}, weights {})",
        model.name(),
        siglip.layers,
        siglip.config.num_tokens(),
        siglip.config.hidden_size,
        match (model.fp8_scale, model.fp8_activation_scale) {
            (Some(s), None) => format!("FP8 F143 at scale {s}, FP16 activations"),
            (Some(s), Some(a)) =>
                format!("FP8 F143 at scale {s}, GEMM activations FP8 at scale {a}"),
            (None, _) => "FP16".into(),
        }
    );
    let compiled = compile(
        &siglip.graph,
        &crate::device::simulated::kernel_abi(),
        &CompileOptions {
            beam_width: build.planning_beam_width,
            tiles: build.planning_tiles,
            name: model.name(),
            runtime: checks::runtime_source(build.runtime_source.as_deref())?,
            exchange_stream_words: build.exchange_stream_words,
            optimization_steps: build.optimization_steps,
            outgoing_base: !build.no_outgoing_base,
            planner_data_budget: build.planner_data_budget,
            min_key_parts: 1,
            model: Some(description),
        },
    )?;
    if let Some(dir) = &build.memory_profile_directory {
        let path = dir.join("memory.html");
        let map = memory_map_from_placement(
            &format!("{} memory placement", model.name()),
            &compiled.schedule,
            &compiled.placements,
        );
        write_memory_map(&path, &map)?;
        crate::say!(
            "memory map: {} (+ memory.json, memory.png: all {} tiles)",
            path.display(),
            map.tiles.len() + map.unused_tiles.len()
        );
    }
    if let Some(path) = &build.plan_output {
        let text = crate::report::plan_listing(&siglip.graph, &compiled.report);
        crate::fsio::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing the plan to {}", path.display()))?;
        crate::say!("plan: {}", path.display());
    }
    if let Some(path) = &build.package {
        crate::fsio::write_atomic(path, &compiled.bytes)
            .with_context(|| format!("writing the package to {}", path.display()))?;
        crate::say!("package: {}", path.display());
    }
    Ok((siglip, weights, compiled))
}

pub fn run(args: Args) -> Result<()> {
    super::summary::reserve_stdout(args.summary_json.as_deref());
    let mut outputs = args.build.output_files();
    outputs.extend(args.exec.output_files());
    outputs.extend(super::summary::output_file(args.summary_json.as_deref()));
    super::workload::distinct(
        &super::workload::input_files(
            &args.input,
            args.model.checkpoint.as_deref(),
            args.build.runtime_source.as_deref(),
        ),
        &outputs,
    )?;
    args.build.check()?;
    args.exec.check()?;
    super::workload::check_flags(&args.model)?;
    let spec = args.model.spec();
    super::summary::check_path(args.summary_json.as_deref())?;
    let mut summary = new_summary(
        "run",
        &spec,
        Some(&args.build),
        with_exec(
            with_build(super::summary::model_flags(&spec), &args.build),
            &args.exec,
        ),
    )?;
    let result = run_with_summary(&args, &spec, &mut summary);
    let result = super::summary::finish(&mut summary, args.summary_json.as_deref(), result);
    if let (Err(err), Some(out)) = (&result, &args.exec.outputs.profile_output) {
        // A rejected run still gets its index: the rejection reports (and
        // the summary) are its artifacts.
        if let Some(index) =
            write_rejection_index(&spec.name(), args.summary_json.as_deref(), err, out)?
        {
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
    model: &ModelSpec,
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
        summary.layers = model.layers.unwrap_or(config.num_hidden_layers);
        summary.tokens = config.num_tokens();
        summary.width = config.hidden_size;
    }
    Ok(summary)
}

fn run_with_summary(args: &Args, spec: &ModelSpec, summary: &mut RunSummary) -> Result<()> {
    let workload = resolve_batch(spec, args.model.vit_batch, &args.build, &args.input)?;
    summary.flags.vit_batch = workload.batch;
    let pixels = load_pixels(&args.input, &workload)?;
    let (model, weights, compiled) = compile_recorded(
        summary,
        &workload,
        pixels.batch(),
        &args.build,
        WeightUse::Used,
    )?;
    let weights = weights.context("the weights of a compile that uses them")?;
    print_compile_report(&compiled.report);
    print_peak_moment(&compiled);
    // What is tested is what is shipped: execute the package bytes (the ones
    // written with --package), read back through the validating reader.
    let shipped = ipuc_target::package::read(&compiled.bytes)
        .context("reading back the package just written")?;
    tracing::info!(
        "device: executing the package read back from its {} bytes (sha256 {})",
        compiled.bytes.len(),
        compiled.report.sha256
    );
    let execution = execute(
        &shipped,
        &format!("ipuc run {} (simulated)", workload.name()),
        &model,
        weights,
        &pixels,
        &args.exec,
    )?;
    super::summary::record_execution(summary, &execution, &model.graph, pixels.batch());
    let super::execute::Execution {
        checks, profile, ..
    } = execution;
    if let Some(out) = &args.exec.outputs.profile_output {
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
        let per_layer = summary
            .layer_breakdown
            .as_ref()
            .and_then(|b| b.reconcile(&profile.iteration_spans()));
        let index = write_index(args, &spec.name(), &compiled, &checks, per_layer, out)?;
        crate::say!(
            "index: {} (links every artifact of this run)",
            index.display()
        );
    }
    print_result_line(&checks, &workload.name(), &compiled.report.sha256);
    fail_unless_passed(&checks)
}

/// `index.html` next to the profile, linking every file this run wrote.
fn write_index(
    args: &Args,
    name: &str,
    compiled: &Compiled,
    checks: &[InferenceCheck],
    per_layer: Option<crate::report::layer_breakdown::PerLayer>,
    out: &std::path::Path,
) -> Result<PathBuf> {
    use crate::report::index::{self, Artifact};
    let files = crate::report::ProfileFiles::at(out);
    let mut artifacts = profile_artifacts(&files);
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
    if let Some(p) = &args.build.plan_output {
        artifacts.push(Artifact {
            path: p.clone(),
            what: "the chosen plan: one line per op, its grid and estimated cycles (text)".into(),
        });
    }
    if let Some(p) = args.summary_json.as_ref().filter(|p| p.as_os_str() != "-") {
        artifacts.push(Artifact {
            path: p.clone(),
            what: "the run's machine-readable summary (JSON)".into(),
        });
    }
    if let Some(p) = &args.exec.outputs.output_embedding {
        artifacts.push(Artifact {
            path: p.clone(),
            what: "pooled embedding (.npy, float32)".into(),
        });
    }
    if let Some(p) = &args.exec.outputs.output_hidden_state {
        artifacts.push(Artifact {
            path: p.clone(),
            what: "last hidden state (.npy, float32)".into(),
        });
    }
    let mut stats = vec![
        ("workload".to_string(), name.to_string()),
        ("tiles".to_string(), compiled.report.tiles.to_string()),
        ("validation".to_string(), validation_verdict(checks)),
        (
            "package".to_string(),
            compiled.report.sha256[..16].to_string(),
        ),
    ];
    if let Some(r) = per_layer {
        stats.push((
            "cycles per layer".to_string(),
            format!(
                "{} (the Repeat's pace; the layer breakdown's {}: {})",
                r.pace,
                r.breakdown,
                r.sums()
            ),
        ));
    }
    index::write(
        &format!("ipuc run {name}"),
        &stats,
        &files.index_html,
        &artifacts,
    )
}

/// The files `--profile-output` always holds, as the index lists them.
fn profile_artifacts(files: &crate::report::ProfileFiles) -> Vec<crate::report::index::Artifact> {
    use crate::report::index::Artifact;
    vec![
        Artifact {
            path: files.profile_html.clone(),
            what: "execution timeline per tile (simulated cycles), operations by model name".into(),
        },
        Artifact {
            path: files.trace_json.clone(),
            what: "the same timeline as a Chrome/Perfetto trace, gzipped (open it as it is in ui.perfetto.dev)".into(),
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
    ]
}

/// The index's validation line: PASS or FAIL with the inference counts,
/// or why there was nothing to validate.
fn validation_verdict(checks: &[InferenceCheck]) -> String {
    let validated: Vec<bool> = checks
        .iter()
        .filter_map(|c| c.device.as_ref().map(|v| v.pass))
        .collect();
    match validated.as_slice() {
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
    }
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
