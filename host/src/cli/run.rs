//! `ipuc run`: compile the SigLIP vision tower, execute the package on the
//! simulated IPU21 and validate it against the FP32 reference.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::workload::{load_model, load_pixels, workload_name, InputArgs, WorkloadArgs};
use crate::compile::{compile, CompileOptions, Compiled, PlanOverBudget};
use crate::device::sim::SimDevice;
use crate::device::trace::build_profile;
use crate::device::DeviceOutput;
use crate::input::write_npy;
use crate::model::{PIXEL_VALUES, POOLER_OUTPUT};
use crate::reference::{run_siglip, Numerics};
use crate::report::placement_map::memory_map_from_placement;
use crate::report::{write_memory_map, write_rejection, MemoryRejection};
use crate::run_report::{
    compare, print_compile_report, print_run_report, write_patch_audit, write_profile,
    InferenceCheck,
};
use crate::weights::HostTensor;

/// `ipuc run` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub model: WorkloadArgs,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub build: BuildArgs,
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
    /// each validated with --reference-run (1 or more).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub reference_inferences: u32,
    /// Absolute tolerance of the validation: |device − ref| ≤ atol + rtol·|ref|.
    #[arg(long, default_value_t = 0.2)]
    pub diagnostic_atol: f32,
    /// Relative tolerance of the validation.
    #[arg(long, default_value_t = 0.05)]
    pub diagnostic_rtol: f32,
    /// Write the per-tile profile (JSON), `profile.html` and `operations.json` here.
    #[arg(long)]
    pub profile_output: Option<PathBuf>,
    /// Write the pooled embedding (MAP head output) as `.npy`.
    #[arg(long)]
    pub output_embedding: Option<PathBuf>,
    /// Cycles a global sync takes after the last tile arrives (modelled).
    /// Default: 126, Poplar's `getMaxIPUSyncDelay` bound, the figure the
    /// planner uses too (`docs/facts/ipu21-target.md` §6; no public IPU21
    /// measurement exists).
    #[arg(long, default_value_t = crate::sim::cycle::INTERNAL_SYNC_CYCLES)]
    pub sync_cycles: u64,
}

/// Compilation flags shared by `ipuc run` and `ipuc compile`.
#[derive(clap::Args, Debug, Clone)]
pub struct BuildArgs {
    /// Width of the planner's Pareto beam.
    #[arg(long, default_value_t = ipuc_core::plan::DEFAULT_BEAM_WIDTH)]
    pub planning_beam_width: usize,
    /// Tiles the planner may use (1..=1472; the C600 has 1472).
    #[arg(long, default_value_t = ipuc_core::ipu21::topology::TILE_COUNT as u32)]
    pub planning_tiles: u32,
    /// Write the package here.
    #[arg(long)]
    pub package: Option<PathBuf>,
    /// Write the exact per-tile memory placement here (`memory.html` +
    /// `memory.json`); a plan rejected for memory writes its report
    /// (`memory-rejection.html` + `.json`) here, or in the current directory
    /// without this flag.
    #[arg(long)]
    pub memory_profile_directory: Option<PathBuf>,
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
    let (siglip, weights) = load_model(model, batch)?;
    eprintln!(
        "model: {} ({} layers, {} tokens, width {}, weights {})",
        workload_name(model),
        siglip.layers,
        siglip.config.num_tokens(),
        siglip.config.hidden_size,
        match model.fp8_scale {
            Some(s) => format!("FP8 F143 at scale {s}"),
            None => "FP16".into(),
        }
    );
    let compiled = compile(
        &siglip.graph,
        &crate::device::sim::kernel_abi(),
        &CompileOptions {
            beam_width: build.planning_beam_width,
            tiles: build.planning_tiles,
            name: workload_name(model),
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
        eprintln!("memory map written to {} (+ memory.json)", path.display());
    }
    if let Some(path) = &build.package {
        std::fs::write(path, &compiled.bytes)
            .with_context(|| format!("writing the package to {}", path.display()))?;
        eprintln!("package written to {}", path.display());
    }
    Ok((siglip, weights, compiled))
}

/// A memory rejection gets its HTML report written (and its path printed)
/// before the error goes up.
fn with_rejection_report(err: anyhow::Error, build: &BuildArgs) -> anyhow::Error {
    let Some(rejected) = err.downcast_ref::<PlanOverBudget>() else {
        return err;
    };
    let dir = build
        .memory_profile_directory
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    let path = dir.join("memory-rejection.html");
    match write_rejection(&path, &MemoryRejection::from_plan(&rejected.0)) {
        Ok(()) => eprintln!("memory rejection report: {} (+ .json)", path.display()),
        Err(write_err) => {
            return err.context(format!("could not write the memory report: {write_err:#}"))
        }
    }
    err
}

pub fn run(args: Args) -> Result<()> {
    let pixels = load_pixels(&args.input, &args.model)?;
    let (model, weights, compiled) = compile_workload(&args.model, pixels.batch(), &args.build)?;
    print_compile_report(&compiled.report);
    let mut inputs = BTreeMap::new();
    inputs.insert(
        PIXEL_VALUES.to_string(),
        HostTensor {
            shape: pixels.shape.to_vec(),
            data: pixels.data.clone(),
        },
    );

    let device_reference = if args.reference_run {
        let what = match args.model.fp8_scale {
            Some(_) => "FP8 weights, FP16 activations",
            None => "FP16 weights and activations",
        };
        eprintln!("reference: device-numerics forward pass ({what})…");
        let r = run_siglip(&model, weights.clone(), &pixels, Numerics::Device, None)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("device-numerics reference")?;
        eprintln!(
            "reference: {:.2} s ({:.1} GFLOP/s)",
            r.seconds,
            r.gflops_per_second()
        );
        Some(r)
    } else {
        None
    };
    let fp32_reference = if args.reference_fp32 {
        eprintln!("reference: FP32 forward pass…");
        let r = run_siglip(&model, weights.clone(), &pixels, Numerics::Fp32, None)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("FP32 reference")?;
        eprintln!(
            "reference: {:.2} s ({:.1} GFLOP/s)",
            r.seconds,
            r.gflops_per_second()
        );
        Some(r)
    } else {
        None
    };

    let t = Instant::now();
    let mut sim = SimDevice::for_package(&compiled.package)?;
    sim.sync_cycles = args.sync_cycles;
    let mut resident = sim
        .load(&compiled.package, &weights)
        .context("loading the package on the simulated device")?;
    eprintln!(
        "device: package loaded once ({} bytes of images and weights) in {:.2} s",
        resident.loaded_bytes(),
        t.elapsed().as_secs_f64()
    );
    let count = args.reference_inferences;
    let mut last: Option<DeviceOutput> = None;
    let mut checks: Vec<InferenceCheck> = Vec::new();
    for i in 0..count {
        eprintln!("device: resident inference {} of {count}…", i + 1);
        let t = Instant::now();
        let out = resident
            .infer(&inputs)
            .with_context(|| format!("simulated inference {} of {count}", i + 1))?;
        let wall = t.elapsed().as_secs_f64();
        eprintln!("device: finished in {wall:.2} s wall time");
        let check = InferenceCheck {
            cycles: out.profile.cycles,
            wall_seconds: wall,
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
    let profile = build_profile(
        &compiled.package,
        &out.profile,
        &format!("ipuc run {} (simulated)", workload_name(&args.model)),
    );
    print_run_report(
        &compiled,
        &out,
        &profile,
        &checks,
        args.diagnostic_atol,
        args.diagnostic_rtol,
    );
    if let Some(dir) = &args.profile_output {
        write_profile(dir, &profile)?;
        write_patch_audit(dir, &compiled.report.exchange.audit)?;
    }
    if let Some(path) = &args.output_embedding {
        let t = out
            .outputs
            .get(POOLER_OUTPUT)
            .context("the package has no pooled embedding output")?;
        write_npy(path, &t.shape, &t.data)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if checks
        .iter()
        .any(|c| c.device.as_ref().is_some_and(|v| !v.pass))
    {
        anyhow::bail!("reference validation FAILED");
    }
    Ok(())
}
