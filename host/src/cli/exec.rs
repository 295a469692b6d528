//! `ipuc exec PACKAGE`: execute a package file on the simulated IPU21 and
//! validate it, without compiling. The workload flags name the model the
//! package was built for: its weights are uploaded through the package's
//! weight bindings (a package carries no weights) and it is the reference.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::run::{execute, fail_unless_passed, ExecArgs};
use super::workload::{load_model, load_pixels, workload_name, InputArgs, WorkloadArgs};
use crate::report::sha256_hex;

/// `ipuc exec` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The package file (as written by `ipuc compile` / `ipuc run --package`).
    pub package: PathBuf,
    #[command(flatten)]
    pub model: WorkloadArgs,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
}

pub fn run(args: Args) -> Result<()> {
    args.exec.check()?;
    let bytes = crate::fsio::read_package(&args.package)
        .with_context(|| format!("reading the package {}", args.package.display()))?;
    let package =
        ipuc_core::package::read(&bytes).with_context(|| args.package.display().to_string())?;
    println!(
        "package: {} ({} bytes, sha256 {}), {} tiles, producer {}",
        args.package.display(),
        bytes.len(),
        sha256_hex(&bytes),
        package.tiles.len(),
        package.producer
    );
    let pixels = load_pixels(&args.input, &args.model)?;
    let (model, weights) = load_model(&args.model, pixels.batch())?;
    let (checks, _) = execute(
        &package,
        &format!(
            "ipuc exec {} ({}, simulated)",
            args.package.display(),
            workload_name(&args.model)
        ),
        &model,
        &weights,
        &pixels,
        &args.exec,
    )?;
    fail_unless_passed(&checks)
}
