//! `ipuc exec PACKAGE`: execute a package file on the simulated IPU21 and
//! validate it, without compiling. The package describes its model (config,
//! layers, numerics, weight origin), so nothing else is needed: random
//! weights are drawn again from the recorded seed, a checkpoint is read from
//! its recorded path (or `--checkpoint`) and its digest checked. Model flags
//! given anyway must agree with the package.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::execute::ExecArgs;
use super::execute::{execute, fail_unless_passed, print_result_line};
use super::package_model::{resolve, summary_line};
use super::run::new_summary;
use super::workload::{load_model_with_origin, load_pixels, InputArgs};
use crate::model::ModelSpec;
use crate::report::run_summary::RunSummary;

/// `ipuc exec` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The package file (as written by `ipuc compile` / `ipuc run --package`).
    pub package: PathBuf,
    // The model flags: optional here, each one given checked against the
    // package (`package_model::resolve`).
    #[command(flatten)]
    pub model: super::workload::WorkloadArgs,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Write a machine-readable summary here (`-`: stdout): the command
    /// line, version, the package's model and build flags, its digest, the
    /// result and cycles (`host/schemas/summary.schema.json`).
    #[arg(long, help_heading = super::headings::OUTPUTS)]
    pub summary_json: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    super::summary::reserve_stdout(args.summary_json.as_deref());
    if args.model.vit_batch == Some(super::batch::BatchFlag::Largest) {
        crate::usage_bail!(
            "--vit-batch max picks a batch when compiling (run, compile); a package's batch is fixed"
        );
    }
    let mut inputs = vec![("PACKAGE", args.package.clone())];
    inputs.extend(super::workload::input_files(
        &args.input,
        args.model.checkpoint.as_deref(),
        None,
    ));
    let mut outputs = args.exec.output_files();
    outputs.extend(super::summary::output_file(args.summary_json.as_deref()));
    super::workload::distinct(&inputs, &outputs)?;
    args.exec.check()?;
    super::summary::check_path(args.summary_json.as_deref())?;
    let bytes = crate::fsio::read_package(&args.package)
        .with_context(|| format!("reading the package {}", args.package.display()))?;
    let package =
        ipuc_target::package::read(&bytes).with_context(|| args.package.display().to_string())?;
    let digest = ipuc_target::package::digest_hex(&bytes);
    crate::say!(
        "package: {} ({} bytes)",
        args.package.display(),
        bytes.len()
    );
    crate::say!("package sha256 {digest}");
    crate::detail!(
        "package: {} tiles, producer {}",
        package.tiles.len(),
        package.producer
    );
    let description = super::package_model::description_of(&package)
        .with_context(|| args.package.display().to_string())?;
    let recorded = description.model.as_ref();
    let workload = resolve(recorded, &args.model)
        .with_context(|| format!("the model of {}", args.package.display()))?;
    if let Some(d) = recorded {
        crate::say!("model: {}", summary_line(d));
    }
    let mut flags = super::run::with_exec(super::summary::model_flags(&workload), &args.exec);
    if let Some(b) = &description.build {
        flags = super::summary::with_package_build(flags, b);
    }
    let mut summary = new_summary("exec", &workload, None, flags)?;
    summary.package_sha256 = Some(digest.clone());
    if let Some(b) = &description.build {
        summary.tiles = b.planning_tiles;
        summary.runtime_source = Some(b.runtime_name.clone());
        summary.runtime_source_sha256 = Some(hex::encode(b.runtime_sha256));
    }
    let result = exec_with_summary(&args, &package, &workload, &digest, &mut summary);
    super::summary::finish(&mut summary, args.summary_json.as_deref(), result)
}

fn exec_with_summary(
    args: &Args,
    package: &ipuc_target::package::Package,
    workload: &ModelSpec,
    digest: &str,
    summary: &mut RunSummary,
) -> Result<()> {
    let pixels = package_pixels(&args.input, workload)?;
    let (model, weights, _) = load_model_with_origin(workload, pixels.batch())?;
    summary.model_flops = crate::reference::graph_flops(&model.graph);
    let execution = execute(
        package,
        &format!(
            "ipuc exec {} ({}, simulated)",
            args.package.display(),
            workload.name()
        ),
        &model,
        weights,
        &pixels,
        &args.exec,
    )?;
    super::summary::record_execution(summary, &execution, &model.graph, pixels.batch());
    print_result_line(&execution.checks, &workload.name(), digest);
    fail_unless_passed(&execution.checks)
}

/// The inputs for the package's batch: the images or `.npy` given (their
/// count must be the package's batch, a usage error naming both), else
/// that many seeded synthetic images.
fn package_pixels(input: &InputArgs, workload: &ModelSpec) -> Result<crate::input::PixelValues> {
    let given = !input.image.is_empty() || input.images.is_some() || input.input.is_some();
    let Some(batch) = workload.batch.filter(|_| given) else {
        return load_pixels(input, workload);
    };
    let unpinned = ModelSpec {
        batch: None,
        ..workload.clone()
    };
    let pixels = load_pixels(input, &unpinned)?;
    if pixels.batch() != batch {
        let what = if input.images.is_some() {
            "--images"
        } else if input.image.is_empty() {
            "--input"
        } else {
            "--image"
        };
        return Err(super::images::count_mismatch(
            what,
            pixels.batch(),
            "the package's batch (compiled with --vit-batch)",
            batch,
        ));
    }
    Ok(pixels)
}
