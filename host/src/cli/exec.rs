//! `ipuc exec PACKAGE`: execute a package file on the simulated IPU21 and
//! validate it, without compiling. The package describes its model (config,
//! layers, numerics, weight origin), so nothing else is needed: random
//! weights are drawn again from the recorded seed, a checkpoint is read from
//! its recorded path (or `--checkpoint`) and its digest checked. Model flags
//! given anyway must agree with the package.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::package_model::{check_weights, resolve, summary_line, ModelChecks};
use super::run::{execute, fail_unless_passed, ExecArgs};
use super::workload::{load_model_with_origin, load_pixels, workload_name, InputArgs};

/// `ipuc exec` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The package file (as written by `ipuc compile` / `ipuc run --package`).
    pub package: PathBuf,
    #[command(flatten)]
    pub model: ModelChecks,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
}

pub fn run(args: Args) -> Result<()> {
    args.exec.check()?;
    let bytes = std::fs::read(&args.package)
        .with_context(|| format!("reading the package {}", args.package.display()))?;
    let package =
        ipuc_core::package::read(&bytes).with_context(|| args.package.display().to_string())?;
    println!(
        "package: {} ({} bytes, sha256 {}), {} tiles, producer {}",
        args.package.display(),
        bytes.len(),
        ipuc_core::package::digest_hex(&bytes),
        package.tiles.len(),
        package.producer
    );
    let recorded = package.description.model.as_ref();
    let workload = resolve(recorded, &args.model)
        .with_context(|| format!("the model of {}", args.package.display()))?;
    if let Some(d) = recorded {
        eprintln!("model: from the package: {}", summary_line(d));
    }
    let pixels = load_pixels(&args.input, &workload)?;
    let (model, weights, origin) = load_model_with_origin(&workload, pixels.batch())?;
    if let Some(d) = recorded {
        check_weights(&d.weights, &origin)?;
    }
    let (checks, _) = execute(
        &package,
        &format!(
            "ipuc exec {} ({}, simulated)",
            args.package.display(),
            workload_name(&workload)
        ),
        &model,
        &weights,
        &pixels,
        &args.exec,
    )?;
    fail_unless_passed(&checks)
}
