//! `ipuc compile`: build the package only (same flags as `ipuc run`'s model
//! and build options).

use super::run::{compile_workload, BuildArgs};
use super::workload::WorkloadArgs;
use crate::run_report::print_compile_report;

/// `ipuc compile` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub model: WorkloadArgs,
    #[command(flatten)]
    pub build: BuildArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    args.build.check()?;
    if args.build.package.is_none() {
        eprintln!(
            "note: no --package given; the package is built, checked and hashed but not written"
        );
    }
    let (_, _, compiled) =
        compile_workload(&args.model, args.model.vit_batch.unwrap_or(1), &args.build)?;
    print_compile_report(&compiled.report);
    Ok(())
}
