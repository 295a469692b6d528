//! `ipuc hw-check [--target sim|ipu]`: scalar vs six-worker row patcher on
//! the simulated tile (or, later, hardware). Logic in [`crate::hwcheck`].

use anyhow::{bail, Result};

use crate::hwcheck;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The embedded IPU21 simulator.
    Sim,
    /// A real IPU through the Poplar SDK.
    Ipu,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to run the check.
    #[arg(long, value_enum, default_value = "sim")]
    pub target: Target,
}

pub fn run(args: Args) -> Result<()> {
    match args.target {
        Target::Sim => {
            let (text, _passed, failed) = hwcheck::report(&hwcheck::SIZES)?;
            print!("{text}");
            if failed > 0 {
                bail!("hw-check: {failed} case(s) failed");
            }
            Ok(())
        }
        Target::Ipu => hardware(),
    }
}

#[cfg(not(feature = "hardware"))]
fn hardware() -> Result<()> {
    bail!("hardware backend not built (enable the `hardware` feature)")
}

#[cfg(feature = "hardware")]
fn hardware() -> Result<()> {
    bail!("hardware backend not implemented yet: `--target ipu` needs the Poplar SDK backend (a later issue)")
}
