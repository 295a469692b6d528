//! `ipuc compile`: build the package only (same flags as `ipuc run`'s model
//! and build options).

use std::path::PathBuf;

use super::run::{compile_recorded, new_summary, BuildArgs, WeightUse};
use super::workload::{check_flags, WorkloadArgs};
use crate::model::ModelSpec;
use crate::report::run::print_compile_report;
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
    super::summary::reserve_stdout(args.summary_json.as_deref());
    let mut outputs = args.build.output_files();
    outputs.extend(super::summary::output_file(args.summary_json.as_deref()));
    super::workload::distinct(
        &super::workload::input_files(
            &Default::default(),
            args.model.checkpoint.as_deref(),
            args.build.runtime_source.as_deref(),
        ),
        &outputs,
    )?;
    args.build.check()?;
    super::summary::check_path(args.summary_json.as_deref())?;
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
    let workload = super::run::resolve_batch(
        spec,
        args.model.vit_batch,
        &args.build,
        &super::workload::InputArgs::default(),
    )?;
    summary.flags.vit_batch = workload.batch;
    let (_, _, compiled) = compile_recorded(
        summary,
        &workload,
        workload.batch.unwrap_or(1),
        &args.build,
        WeightUse::Unused,
    )?;
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
