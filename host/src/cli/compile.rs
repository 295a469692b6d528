//! `ipuc compile`: build the package only (same flags as `ipuc run`'s model
//! and build options).

use std::path::PathBuf;
use std::time::Instant;

use super::run::{compile_workload, new_summary, BuildArgs};
use super::workload::{check_flags, WorkloadArgs};
use crate::model::ModelSpec;
use crate::report::run::{placed_peak_moment, print_compile_report};
use crate::report::run_summary::RunSummary;

/// `ipuc compile` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub model: WorkloadArgs,
    #[command(flatten)]
    pub build: BuildArgs,
    /// Write a machine-readable summary here (`-`: stdout): the command
    /// line, version, flags, runtime and package digests, compile figures
    /// or the rejection (`host/schemas/summary.schema.json`).
    #[arg(long, help_heading = super::headings::OUTPUTS)]
    pub summary_json: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.summary_json.as_deref() == Some(std::path::Path::new("-")) {
        crate::output::reserve_stdout_for_data();
    }
    let mut outputs = args.build.output_files();
    outputs.extend(
        args.summary_json
            .iter()
            .map(|p| ("--summary-json", p.clone())),
    );
    super::workload::distinct(
        &super::workload::input_files(
            &Default::default(),
            args.model.checkpoint.as_deref(),
            args.build.runtime_source.as_deref(),
        ),
        &outputs,
    )?;
    args.build.check()?;
    if let Some(path) = args
        .summary_json
        .as_deref()
        .filter(|p| *p != std::path::Path::new("-"))
    {
        super::checks::output_file_making_dir("--summary-json", path)?;
    }
    let spec = args.model.spec();
    let flags = super::run::with_build(super::summary::model_flags(&spec), &args.build);
    let mut summary = new_summary("compile", &spec, Some(&args.build), flags)?;
    let result = compile_with_summary(&args, &spec, &mut summary);
    super::summary::finish(&mut summary, args.summary_json.as_deref(), result)
}

fn compile_with_summary(
    args: &Args,
    spec: &ModelSpec,
    summary: &mut RunSummary,
) -> anyhow::Result<()> {
    if args.build.package.is_none() {
        tracing::info!(
            "no --package given; the package is built, checked and hashed but not written"
        );
    }
    check_flags(&args.model)?;
    let workload =
        super::run::resolve_batch(spec, &args.build, &super::workload::InputArgs::default())?;
    summary.flags.vit_batch = workload.batch;
    let t = Instant::now();
    let compiled = compile_workload(&workload, workload.batch.unwrap_or(1), &args.build);
    summary.compile_seconds = t.elapsed().as_secs_f64();
    let (model, _, compiled) = compiled?;
    summary.model_flops = crate::reference::graph_flops(&model.graph);
    let (peak_bytes, peak_tile, _, moment) = placed_peak_moment(&compiled);
    summary.planning_seconds = Some(compiled.report.times.planning_ms / 1e3);
    summary.peak_bytes_per_tile = Some(peak_bytes);
    summary.peak_tile = Some(peak_tile);
    summary.peak_moment = Some(moment);
    summary.package_sha256 = Some(compiled.report.sha256.clone());
    summary.tiles = compiled.report.tiles as u32;
    summary.result = "compiled".into();
    print_compile_report(&compiled.report);
    crate::result_line!(
        "result: COMPILED {}, {} tiles, package {}",
        spec.name(),
        compiled.report.tiles,
        &compiled.report.sha256[..16]
    );
    Ok(())
}
