//! `ipuc hw-check [--target sim|ipu]`: scalar vs six-worker row patcher on
//! the simulated tile (or, later, hardware). Logic in [`patcher`].

use anyhow::Result;

pub mod patcher;

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
    #[command(flatten)]
    pub device: super::device_args::DeviceArgs,
    /// Assemble and link this static runtime (`.S`) instead of the built-in
    /// `device-asm/static_runtime.S` (the seeds' `--runtime-source`).
    #[arg(long, value_name = "F.S")]
    pub runtime_source: Option<std::path::PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    args.device.check()?;
    let runtime = super::checks::runtime_source(args.runtime_source.as_deref())?;
    if args.runtime_source.is_some() {
        println!("runtime: {} (instead of the built-in one)", runtime.name);
    }
    let _lock = args.device.lock()?;
    match args.target {
        Target::Sim => {
            let (text, _passed, failed) = patcher::report(&patcher::SIZES, &runtime)?;
            print!("{text}");
            if failed > 0 {
                return Err(crate::exit::ValidationFailed(format!(
                    "hw-check: {failed} case(s) failed"
                ))
                .into());
            }
            Ok(())
        }
        Target::Ipu => hardware(),
    }
}

fn hardware() -> Result<()> {
    crate::usage_bail!("--target ipu: {}", super::device_args::NO_HARDWARE_BACKEND)
}
