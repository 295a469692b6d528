//! Executing a package on the simulated device and validating it: the
//! references `--reference-run`/`--reference-fp32` ask for, the package
//! loaded once, each inference compared with them, the run report and the
//! files `--profile-output`/`--output-embedding`/`--output-hidden-state`
//! name. `ipuc run` and
//! `ipuc exec` share it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use super::checks;
use super::device_args::DeviceArgs;
use crate::device::simulated::{LoadedSim, SimDevice};
use crate::device::DeviceOutput;
use crate::input::{write_npy, PixelValues};
use crate::model::{SiglipModel, LAST_HIDDEN_STATE, PIXEL_VALUES, POOLER_OUTPUT};
use crate::reference::{run_siglip, Numerics, SiglipOutputs};
use crate::report::run::{compare, print_run_report, write_profile, InferenceCheck};
use crate::report::run_summary::{BandEnd, RateBand, Throughput};
use crate::report::trace::build_profile;
use crate::report::Profile;
use crate::weights::{HostTensor, Weights};
use ipuc_target::ipu21::rates::RateEnd;
use ipuc_target::package::Package;

/// Execution and validation flags shared by `ipuc run` and `ipuc exec`.
#[derive(clap::Args, Debug, Clone)]
pub struct ExecArgs {
    #[command(flatten)]
    pub outputs: OutputArgs,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Validate every inference against the device-numerics reference (the
    /// graph's own casts: FP8/FP16 weights, FP16 activations): PASS/FAIL at
    /// --diagnostic-atol / --diagnostic-rtol.
    #[arg(long, help_heading = super::headings::VALIDATION)]
    pub reference_run: bool,
    /// Also report max abs error and cosine against the FP32 reference for
    /// every output of every inference (not the PASS criterion).
    #[arg(long, requires = "reference_run", help_heading = super::headings::VALIDATION)]
    pub reference_fp32: bool,
    /// Resident inferences on one loaded package (weights uploaded once),
    /// each validated with --reference-run (1..=10000).
    #[arg(long, default_value_t = 1, help_heading = super::headings::VALIDATION, value_parser = clap::value_parser!(u32).range(1..=checks::MAX_INFERENCES))]
    pub reference_inferences: u32,
    /// Absolute tolerance of the validation: |device − ref| ≤ atol + rtol·|ref|
    /// (finite, ≥ 0).
    #[arg(long, default_value_t = 0.2, help_heading = super::headings::VALIDATION, value_parser = checks::tolerance)]
    pub diagnostic_atol: f32,
    /// Relative tolerance of the validation (finite, ≥ 0).
    #[arg(long, default_value_t = 0.05, help_heading = super::headings::VALIDATION, value_parser = checks::tolerance)]
    pub diagnostic_rtol: f32,
    /// Cycles a global sync takes after the last tile arrives (modelled).
    /// The default is Poplar's `getMaxIPUSyncDelay` bound, the figure the
    /// planner uses too (`docs/facts/ipu21-target.md` §6; no public IPU21
    /// measurement exists). Range 0..=1000000, so cycle counts cannot wrap.
    #[arg(long, default_value_t = ipuc_sim::cycle::INTERNAL_SYNC_CYCLES, help_heading = super::headings::DEVICE,
          value_parser = clap::value_parser!(u64).range(0..=checks::MAX_SYNC_CYCLES))]
    pub sync_cycles: u64,
    /// Simulated cycles one inference may take on any tile before the run
    /// is stopped as a runaway (a typed fault naming tile and PC). Default:
    /// 16× the package's estimate (+10 M), at most 10^9 whatever the
    /// package claims; this flag sets any budget up to 5·10^10.
    #[arg(long, value_name = "CYCLES", help_heading = super::headings::DEVICE,
          value_parser = clap::value_parser!(u64).range(1..=crate::device::simulated::DEFAULT_CYCLE_LIMIT))]
    pub cycle_budget: Option<u64>,
    /// Where each modelled kernel rate is taken within its sources
    /// (`ipuc rates` prints them): `chosen` is the rate ipuc charges (the
    /// slower where sources disagree), `optimistic` / `conservative` put
    /// every rate at the fast / slow end of its sources.
    #[arg(long, value_enum, value_name = "END", default_value_t = KernelRates::Chosen, help_heading = super::headings::DEVICE)]
    pub kernel_rates: KernelRates,
    /// Also simulate one inference with every kernel rate at its
    /// optimistic end and one at its conservative end, and print the band
    /// beside the simulated cycles (no validation; two more simulations).
    #[arg(long, help_heading = super::headings::DEVICE)]
    pub rate_band: bool,
}

/// The files `ipuc run` and `ipuc exec` write from a run: every flag here
/// is listed under the Outputs help heading (set once, on the struct).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = super::headings::OUTPUTS)]
pub struct OutputArgs {
    /// Write the per-tile profile here: `F.ipuprof` (or `F.json`) names the
    /// profile file, with its viewer `F.html`, the gzipped Perfetto trace
    /// `F.trace.json.gz` (opens in ui.perfetto.dev) and `F.operations.json`
    /// beside it (`run` adds `F.index.html` and the patch audits), so runs
    /// with other names never share a file; any other path is the run's
    /// directory, which receives `profile.json`, `profile.html`,
    /// `trace.json.gz`, `operations.json` (and `index.html`). Files of an
    /// earlier run at the same paths are replaced, and the replacement
    /// announced.
    #[arg(long)]
    pub profile_output: Option<PathBuf>,
    /// How much of the profile to write: `auto` keeps every sample up to
    /// 1,000,000 and above that summarizes Repeat iterations after the
    /// first (each stays its own span per tile, with its compute, exchange,
    /// sync and patch cycles); `full` keeps every sample at any size;
    /// `summary` summarizes whenever the Repeat runs more than once.
    #[arg(long, value_enum, value_name = "DETAIL", default_value_t = crate::report::ProfileDetail::Auto)]
    pub profile_detail: crate::report::ProfileDetail,
    /// Write the pooled embedding (the family's `pooler_output`: SigLIP's MAP
    /// head, CLIP's post_layernorm class token, ViT's tanh pooler, DINOv2's
    /// class token) as `.npy`.
    #[arg(long)]
    pub output_embedding: Option<PathBuf>,
    /// Write the device's last hidden state (`last_hidden_state` `[B,
    /// tokens, D]`: SigLIP after post_layernorm, CLIP the encoder output,
    /// ViT and DINOv2 after the final layernorm; patch features) as `.npy`,
    /// validated with the pooled output under --reference-run.
    #[arg(long, value_name = "F.npy")]
    pub output_hidden_state: Option<PathBuf>,
}

/// `--kernel-rates`: an end of the kernel rates' sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelRates {
    Optimistic,
    #[default]
    Chosen,
    Conservative,
}

impl From<KernelRates> for RateEnd {
    fn from(k: KernelRates) -> RateEnd {
        match k {
            KernelRates::Optimistic => RateEnd::Optimistic,
            KernelRates::Chosen => RateEnd::Chosen,
            KernelRates::Conservative => RateEnd::Conservative,
        }
    }
}

impl ExecArgs {
    /// The files a run writes, by flag: the embedding and every profile file.
    pub fn output_files(&self) -> Vec<(&'static str, std::path::PathBuf)> {
        let mut files = Vec::new();
        if let Some(p) = &self.outputs.output_embedding {
            files.push(("--output-embedding", p.clone()));
        }
        if let Some(p) = &self.outputs.output_hidden_state {
            files.push(("--output-hidden-state", p.clone()));
        }
        if let Some(out) = &self.outputs.profile_output {
            let f = crate::report::ProfileFiles::at(out);
            for p in [
                f.profile_json,
                f.operations_json,
                f.profile_html,
                f.trace_json,
                f.index_html,
                f.patch_audit,
                f.phase_patch_audit,
            ] {
                files.push(("--profile-output", p));
            }
        }
        files
    }

    /// Checks made before any work (device flags, output paths).
    pub fn check(&self) -> Result<()> {
        self.device.check()?;
        if let Some(out) = &self.outputs.profile_output {
            check_profile_output(out)?;
        }
        if let Some(path) = &self.outputs.output_embedding {
            checks::output_file("--output-embedding", path)?;
        }
        if let Some(path) = &self.outputs.output_hidden_state {
            checks::output_file("--output-hidden-state", path)?;
        }
        Ok(())
    }
}

/// Checks `--profile-output`'s place before work: a `.ipuprof`/`.json` file
/// gets its directory created, anything else is created as a directory.
pub fn check_profile_output(out: &std::path::Path) -> Result<()> {
    let dir = crate::report::ProfileFiles::at(out).dir();
    if dir.as_os_str().is_empty() {
        Ok(())
    } else {
        checks::output_dir("--profile-output", &dir)
    }
}

/// The references each inference is compared with: device numerics (the
/// graph's own casts and the package's K splits) and plain FP32.
struct References {
    device: Option<SiglipOutputs>,
    fp32: Option<SiglipOutputs>,
}

/// Loads `package` on the simulated device with `weights`, runs the
/// inferences `args` asks for on `pixels`, validates them against the
/// references of `model` and prints the run report; returns each
/// inference's cycles and validation, and the last inference's profile.
/// The weights are consumed: the references borrow them, then loading
/// frees each tensor once it is in the device's SRAM, so the simulation
/// runs without the host's f32 copy.
pub fn execute(
    package: &Package,
    title: &str,
    model: &SiglipModel,
    weights: Weights,
    pixels: &PixelValues,
    args: &ExecArgs,
) -> Result<Execution> {
    let references = run_references(package, model, &weights, pixels, args)?;
    // Held for the device's lifetime (dropped with this function's locals
    // after the reports).
    let _lock = args.device.lock()?;
    let mut resident = load(package, weights, args, args.kernel_rates.into())?;
    let (checks, out) = infer_and_check(&mut resident, pixels, &references, args)?;
    let band_ends = if args.rate_band {
        Some(rate_band_ends(&mut resident, package, pixels)?)
    } else {
        None
    };
    drop(resident);
    let profile = build_profile(package, &out.profile, title);
    let band = band_ends.map(|band| print_rate_band(band, args, &profile));
    print_run_report(
        package,
        &out,
        &profile,
        &checks,
        args.diagnostic_atol,
        args.diagnostic_rtol,
    );
    if let Some(last) = checks.last() {
        let flops = crate::reference::graph_flops(&model.graph);
        for line in Throughput::of(last.cycles, pixels.batch(), flops).lines() {
            crate::say!("{line}");
        }
    }
    print_layer_breakdown(&profile, model);
    if let Some(dir) = &args.outputs.profile_output {
        write_profile(dir, &profile, args.outputs.profile_detail)?;
    }
    if let Some(path) = &args.outputs.output_embedding {
        write_output(path, &out, POOLER_OUTPUT, "--output-embedding")?;
    }
    if let Some(path) = &args.outputs.output_hidden_state {
        write_output(path, &out, LAST_HIDDEN_STATE, "--output-hidden-state")?;
    }
    Ok(Execution {
        checks,
        profile,
        band,
    })
}

/// What [`execute`] measured: every inference's check, the last one's
/// profile, and the band at the rates' ends when asked for.
pub struct Execution {
    pub checks: Vec<InferenceCheck>,
    pub profile: Profile,
    pub band: Option<RateBand>,
}

/// One inference at each end of the kernel rates' sources (not
/// validated: the rates change cycles, never values) on the package
/// already resident (its weights are not reloaded: an inference on a
/// resident package starts from the same state as the first).
fn rate_band_ends(
    resident: &mut LoadedSim,
    package: &Package,
    pixels: &PixelValues,
) -> Result<RateBand> {
    resident.set_progress(crate::progress::Progress::quiet(), None);
    let inputs = pixel_inputs(pixels);
    let mut at = |end: RateEnd| -> Result<BandEnd> {
        tracing::info!("rate band: one inference at the {} rates…", end.name());
        resident.set_kernel_rates(end)?;
        let out = resident
            .infer(&inputs)
            .with_context(|| format!("the inference at the {} rates", end.name()))?;
        let profile = build_profile(package, &out.profile, "rate band");
        Ok(BandEnd::of(&profile, out.profile.cycles))
    };
    Ok(RateBand {
        optimistic: at(RateEnd::Optimistic)?,
        conservative: at(RateEnd::Conservative)?,
    })
}

/// The band beside the chosen rates' figures (`chosen`: the validated
/// inference's profile).
fn print_rate_band(band: RateBand, args: &ExecArgs, chosen: &Profile) -> RateBand {
    let here = BandEnd::of(chosen, 0);
    crate::say!(
        "simulated band: {} cropped cycles at the {} rates (band {}–{}: every kernel rate at its optimistic / conservative end)",
        here.cropped_cycles,
        RateEnd::from(args.kernel_rates).name(),
        band.optimistic.cropped_cycles,
        band.conservative.cropped_cycles,
    );
    if let (Some(l), Some(lo), Some(hi)) = (
        here.cycles_per_layer,
        band.optimistic.cycles_per_layer,
        band.conservative.cycles_per_layer,
    ) {
        crate::say!("simulated band: {l} cycles per layer (band {lo}–{hi})");
    }
    band
}

/// The pixel values as the device's input map.
fn pixel_inputs(pixels: &PixelValues) -> BTreeMap<String, HostTensor> {
    let mut inputs = BTreeMap::new();
    inputs.insert(
        PIXEL_VALUES.to_string(),
        HostTensor {
            shape: pixels.shape.to_vec(),
            data: pixels.data.clone(),
        },
    );
    inputs
}

/// The forward passes on the host that `args` asks for, before the device
/// runs (each one's time is logged). Both at once when both are asked
/// for: each keeps the two cores about 1.7 busy on its own, so together
/// they fill the gaps (#42: the validated run's references 21.8 s of wall
/// time one after the other); they share the weights, and each output is
/// the one it computes alone (the forward passes are deterministic at any
/// thread count).
fn run_references(
    package: &Package,
    model: &SiglipModel,
    weights: &Weights,
    pixels: &PixelValues,
    args: &ExecArgs,
) -> Result<References> {
    let k_splits = if args.reference_run {
        super::package_model::description_of(package)?.k_splits
    } else {
        Vec::new()
    };
    let device = || -> Result<Option<SiglipOutputs>> {
        if !args.reference_run {
            return Ok(None);
        }
        tracing::info!(
            "reference: device-numerics forward pass (the graph's own casts, the package's {} K splits)…",
            k_splits.len()
        );
        let numerics = (Numerics::Device, k_splits.as_slice());
        let r = run_siglip(model, weights, pixels, numerics, None)
            .context("device-numerics reference")?;
        log_reference_speed("device-numerics", &r);
        Ok(Some(r))
    };
    let fp32 = || -> Result<Option<SiglipOutputs>> {
        if !args.reference_fp32 {
            return Ok(None);
        }
        tracing::info!("reference: FP32 forward pass…");
        let r = run_siglip(model, weights, pixels, (Numerics::Fp32, &[]), None)
            .context("FP32 reference")?;
        log_reference_speed("FP32", &r);
        Ok(Some(r))
    };
    let (device, fp32) = rayon::join(device, fp32);
    Ok(References {
        device: device?,
        fp32: fp32?,
    })
}

fn log_reference_speed(name: &str, r: &SiglipOutputs) {
    tracing::info!(
        "reference: {name} forward pass in {:.2} s ({:.1} GFLOP/s; alongside the other reference when both run)",
        r.seconds,
        r.gflops_per_second()
    );
}

/// The package loaded once on a simulated device set up from `args`
/// (sync cycles, cycle budget), consuming the weights.
fn load(package: &Package, weights: Weights, args: &ExecArgs, rates: RateEnd) -> Result<LoadedSim> {
    let t = Instant::now();
    let mut sim = SimDevice::with_rates(package, rates)?;
    sim.sync_cycles = args.sync_cycles;
    sim.cycle_limit = args
        .cycle_budget
        .unwrap_or_else(|| crate::device::simulated::cycle_budget(package, args.sync_cycles));
    let resident = sim
        .load_consuming(package, weights)
        .context("loading the package on the simulated device")?;
    tracing::info!(
        "device: package loaded once ({} bytes of images and weights) in {:.2} s",
        resident.loaded_bytes(),
        t.elapsed().as_secs_f64()
    );
    Ok(resident)
}

/// Runs `args.reference_inferences` inferences of `pixels`, each compared
/// with the references; returns every check and the last one's output.
fn infer_and_check(
    resident: &mut LoadedSim,
    pixels: &PixelValues,
    references: &References,
    args: &ExecArgs,
) -> Result<(Vec<InferenceCheck>, DeviceOutput)> {
    let inputs = pixel_inputs(pixels);
    let count = args.reference_inferences;
    let mut last: Option<DeviceOutput> = None;
    let mut checks: Vec<InferenceCheck> = Vec::new();
    // One bar with an ETA per inference on a terminal, one line each otherwise.
    resident.set_progress(
        crate::progress::Progress::stderr("device"),
        Some(count.into()),
    );
    let validate = |out: &DeviceOutput, r: &Option<SiglipOutputs>| {
        r.as_ref()
            .map(|r| compare(out, r, args.diagnostic_atol, args.diagnostic_rtol))
            .transpose()
    };
    for i in 0..count {
        let out = resident
            .infer(&inputs)
            .with_context(|| format!("simulated inference {} of {count}", i + 1))?;
        let check = InferenceCheck {
            cycles: out.profile.cycles,
            wall_seconds: out.profile.wall_seconds,
            tiles: out.profile.tiles.len(),
            words_moved: out.profile.words_moved,
            device: validate(&out, &references.device)?,
            fp32: validate(&out, &references.fp32)?,
        };
        checks.push(check);
        last = Some(out);
    }
    let out = last.expect("at least one inference ran");
    Ok((checks, out))
}

/// The headline and the categories in the short report, the rows
/// (indented four spaces) with -v; all of it is in the summary.
fn print_layer_breakdown(profile: &Profile, model: &SiglipModel) {
    if let Some(b) = crate::report::layer_breakdown::layer_breakdown(profile, &model.graph) {
        for (i, l) in b.lines().into_iter().enumerate() {
            if l.starts_with("    ") {
                crate::detail!("{l}");
            } else {
                crate::say!("{l}");
            }
            // Under the headline: how its figure and the Repeat's per-layer
            // figure (printed above) add up.
            if i == 0 {
                if let Some(r) = b.reconcile(&profile.iteration_spans()) {
                    crate::say!("{}", r.line());
                }
            }
        }
    }
}

/// The device's output `name` as `.npy` float32, written atomically with
/// the run's other outputs (whose error names the flag and the file).
fn write_output(path: &std::path::Path, out: &DeviceOutput, name: &str, flag: &str) -> Result<()> {
    let t = out
        .outputs
        .get(name)
        .with_context(|| format!("{flag}: the package has no `{name}` output"))?;
    write_npy(path, &t.shape, &t.data).context(flag.to_string())?;
    crate::say!(
        "{}: wrote {name} {:?} float32 to {}",
        if name == POOLER_OUTPUT {
            "embedding"
        } else {
            "hidden state"
        },
        t.shape,
        path.display()
    );
    Ok(())
}

/// [`crate::exit::ValidationFailed`] if any inference failed its validation.
pub fn fail_unless_passed(checks: &[InferenceCheck]) -> Result<()> {
    let validated: Vec<bool> = checks
        .iter()
        .filter_map(|c| c.device.as_ref().map(|v| v.pass))
        .collect();
    let failed = validated.iter().filter(|&&p| !p).count();
    if failed > 0 {
        return Err(crate::exit::ValidationFailed(format!(
            "reference validation FAILED ({failed} of {} inferences)",
            validated.len()
        ))
        .into());
    }
    Ok(())
}

/// The one line a script greps for (stdout): `result: PASS|FAIL|NOT
/// VALIDATED`, the workload, the last inference's simulated cycles and the
/// package digest.
pub fn print_result_line(checks: &[InferenceCheck], workload: &str, package_sha256: &str) {
    let validated: Vec<bool> = checks
        .iter()
        .filter_map(|c| c.device.as_ref().map(|v| v.pass))
        .collect();
    let verdict = if validated.is_empty() {
        "NOT VALIDATED (no --reference-run)"
    } else if validated.iter().all(|&p| p) {
        "PASS"
    } else {
        "FAIL"
    };
    let cycles = checks.last().map_or(0, |c| c.cycles);
    crate::result_line!(
        "result: {verdict} {workload}, {cycles} simulated cycles, package {}",
        &package_sha256[..package_sha256.len().min(16)]
    );
}
