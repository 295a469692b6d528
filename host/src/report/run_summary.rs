//! The machine-readable summary of one `ipuc run` (`--summary-json`): what
//! `cargo xtask sweep` and `cargo xtask bench` collect, in the seeds' sweep
//! shape (result, rejection stage and op, planning and compile seconds, peak
//! bytes/tile, cropped cycles, cycles per layer, errors against the
//! references). Every cycle figure is simulated.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::memory::PlanOverBudget;
use super::placement_rejection::PlacementRejected;
use super::run::{InferenceCheck, Validation};
use super::Profile;

/// Why a build did not reach the device.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Rejection {
    /// `planning` (the estimator's per-tile peak) or `placement` (the
    /// exact per-tile placement).
    pub stage: String,
    /// The operation at the peak, e.g. `repeat body (×27) op 18 (matmul)`.
    pub op: String,
    /// The tile at the peak.
    pub tile: Option<u32>,
    /// Bytes that tile needs at the peak (support reserve included).
    pub bytes_per_tile: Option<u64>,
    /// The per-tile budget.
    pub budget_bytes: Option<u64>,
}

impl Rejection {
    /// A memory rejection from the compile error, if it is one.
    pub fn from_error(err: &anyhow::Error) -> Option<Rejection> {
        if let Some(PlanOverBudget(r, _)) = err.downcast_ref::<PlanOverBudget>() {
            return Some(Rejection {
                stage: "planning".into(),
                op: format!(
                    "{} op {} ({}), {}",
                    r.region, r.op_index, r.op_name, r.moment
                ),
                tile: Some(r.tile),
                bytes_per_tile: Some(r.total_bytes()),
                budget_bytes: Some(r.budget_bytes),
            });
        }
        let p = err.downcast_ref::<PlacementRejected>()?;
        Some(Rejection {
            stage: "placement".into(),
            op: format!("op {}, {}", p.op_index, p.report.peak_moment),
            tile: Some(p.report.peak_tile),
            bytes_per_tile: Some(p.report.effective_bytes()),
            budget_bytes: Some(p.report.budget.tile_bytes),
        })
    }
}

/// One resident inference.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct InferenceSummary {
    /// Simulated cycles to the last halt.
    pub cycles: u64,
    /// Wall seconds the simulation took.
    pub simulation_seconds: f64,
    /// `Some(pass)` with `--reference-run`.
    pub pass: Option<bool>,
    /// Largest max abs error over the outputs vs the device-numerics reference.
    pub max_abs_error: Option<f32>,
    /// Largest max abs error over the outputs vs FP32 (`--reference-fp32`).
    pub fp32_max_abs_error: Option<f32>,
    /// Smallest cosine over the outputs vs FP32 (`--reference-fp32`).
    pub fp32_cosine: Option<f64>,
    /// Words the exchange fabric moved (simulated).
    pub words_moved: u64,
    /// With a batch of more than one image: each image's verdict and
    /// errors, in input order.
    #[serde(default)]
    pub images: Vec<ImageSummary>,
}

/// One image of a batch against the references.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ImageSummary {
    /// `Some(pass)` with `--reference-run`.
    pub pass: Option<bool>,
    /// Largest max abs error over its outputs vs device numerics.
    pub max_abs_error: Option<f32>,
    /// Largest max abs error over its outputs vs FP32.
    pub fp32_max_abs_error: Option<f32>,
    /// Smallest cosine over its outputs vs FP32.
    pub fp32_cosine: Option<f64>,
}

/// One batch's simulated throughput at the seeds' clock (1.5 GHz): every
/// figure comes from simulated cycles (kernel bodies modelled), never from
/// hardware.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Throughput {
    /// `simulated`: cycles from the simulator, kernel bodies modelled.
    pub source: String,
    /// The clock the rates assume, in Hz.
    pub clock_hz: u64,
    /// Images per batch.
    pub batch: usize,
    /// Simulated cycles of one batch (the last inference, to the last halt).
    pub cycles_per_batch: u64,
    /// `cycles_per_batch / batch`, rounded up.
    pub cycles_per_image: u64,
    /// One batch's latency in milliseconds at `clock_hz`.
    pub latency_ms: f64,
    /// Images per second at `clock_hz`.
    pub images_per_second: f64,
    /// One image's matmul and attention multiply-adds at the FP8 AMP peak
    /// (128 MACs per cycle per tile) on every tile: the compute limit.
    pub fp8_limit_cycles_per_image: Option<u64>,
    /// `cycles_per_image / fp8_limit_cycles_per_image`.
    pub ratio_to_fp8_limit: Option<f64>,
}

impl Throughput {
    /// The figures of a batch of `batch` images that took `cycles`, for a
    /// graph of `model_flops` (the whole batch's); the limit is the whole
    /// chip's.
    pub fn of(cycles: u64, batch: usize, model_flops: u64) -> Self {
        let tiles = u32::from(ipuc_target::ipu21::topology::TILE_COUNT);
        let clock = ipuc_target::ipu21::sram::CLOCK_HZ;
        let batch = batch.max(1);
        let per_image = cycles.div_ceil(batch as u64);
        let peak = f64::from(ipuc_target::ipu21::timing::AmpMode::F8F16Partials.macs_per_cycle())
            * f64::from(tiles.max(1));
        let limit = (model_flops > 0)
            .then(|| (model_flops as f64 / 2.0 / batch as f64 / peak).ceil() as u64)
            .filter(|&l| l > 0);
        Throughput {
            source: "simulated".into(),
            clock_hz: clock,
            batch,
            cycles_per_batch: cycles,
            cycles_per_image: per_image,
            latency_ms: cycles as f64 / clock as f64 * 1e3,
            images_per_second: if cycles == 0 {
                0.0
            } else {
                batch as f64 * clock as f64 / cycles as f64
            },
            fp8_limit_cycles_per_image: limit,
            ratio_to_fp8_limit: limit.map(|l| per_image as f64 / l as f64),
        }
    }

    /// The report's lines (each under the default report's width).
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "throughput (simulated, {:.1} GHz clock): batch {}, {} cycles per batch, {} per image",
            self.clock_hz as f64 / 1e9,
            self.batch,
            self.cycles_per_batch,
            self.cycles_per_image
        )];
        let mut second = format!(
            "throughput (simulated): latency {:.3} ms per batch, {:.0} images/s",
            self.latency_ms, self.images_per_second
        );
        if let (Some(l), Some(r)) = (self.fp8_limit_cycles_per_image, self.ratio_to_fp8_limit) {
            second.push_str(&format!(", {r:.1}× the FP8 limit ({l} cycles/image)"));
        }
        lines.push(second);
        lines
    }
}

impl InferenceSummary {
    pub fn from_check(c: &InferenceCheck, words_moved: u64) -> Self {
        let max_abs = |v: &Validation| v.outputs.iter().map(|o| o.1).fold(0f32, f32::max);
        InferenceSummary {
            cycles: c.cycles,
            simulation_seconds: c.wall_seconds,
            pass: c.device.as_ref().map(|v| v.pass),
            max_abs_error: c.device.as_ref().map(max_abs),
            fp32_max_abs_error: c.fp32.as_ref().map(max_abs),
            fp32_cosine: c
                .fp32
                .as_ref()
                .map(|v| v.outputs.iter().map(|o| o.2).fold(f64::INFINITY, f64::min)),
            words_moved,
            images: image_summaries(c),
        }
    }
}

/// Each image's figures from the per-image validations (empty at batch 1).
fn image_summaries(c: &InferenceCheck) -> Vec<ImageSummary> {
    let count = [&c.device, &c.fp32]
        .iter()
        .filter_map(|v| v.as_ref().map(|v| v.images.len()))
        .max()
        .unwrap_or(0);
    fn image(v: &Option<Validation>, k: usize) -> Option<&Vec<(String, f32, f64, usize)>> {
        v.as_ref().and_then(|v| v.images.get(k))
    }
    (0..count)
        .map(|k| ImageSummary {
            pass: c.device.as_ref().map(|v| v.image_pass(k)),
            max_abs_error: image(&c.device, k).map(|o| o.iter().map(|x| x.1).fold(0f32, f32::max)),
            fp32_max_abs_error: image(&c.fp32, k)
                .map(|o| o.iter().map(|x| x.1).fold(0f32, f32::max)),
            fp32_cosine: image(&c.fp32, k)
                .map(|o| o.iter().map(|x| x.2).fold(f64::INFINITY, f64::min)),
        })
        .collect()
}

/// The summary's schema name (`host/schemas/summary.schema.json`).
pub const SCHEMA: &str = "ipuc.run-summary";
/// Its version: 2 added the schema fields, the command, its full command
/// line, the ipuc version, every planning/numerics flag, the runtime
/// source's digest, and `compile`/`exec` summaries.
pub const SCHEMA_VERSION: u32 = 2;

/// The flags a result depends on, as given (or, for `exec`, as the package
/// records them). `None`: the command has no such flag.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Flags {
    pub workload: Option<String>,
    pub checkpoint: Option<String>,
    /// Seed of random weights and of the synthetic input.
    pub seed: u64,
    pub vit_layers: Option<usize>,
    pub vit_batch: Option<usize>,
    pub image_size: Option<usize>,
    pub fuse_qkv: bool,
    pub fp8_scale: Option<i8>,
    /// The activation scale of FP8 × FP8 GEMMs (`None`: FP16 activations).
    pub fp8_activation_scale: Option<i8>,
    pub planning_beam_width: Option<usize>,
    pub planning_tiles: Option<u32>,
    pub optimization_steps: Option<u32>,
    pub exchange_stream_words: Option<u32>,
    pub outgoing_base: Option<bool>,
    pub planner_data_budget: Option<u64>,
    pub reference_run: Option<bool>,
    pub reference_fp32: Option<bool>,
    pub reference_inferences: Option<u32>,
    pub diagnostic_atol: Option<f32>,
    pub diagnostic_rtol: Option<f32>,
    pub sync_cycles: Option<u64>,
}

/// The summary of one `run`, `compile` or `exec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunSummary {
    /// [`SCHEMA`] and [`SCHEMA_VERSION`].
    pub schema: String,
    pub schema_version: u32,
    /// `run`, `compile` or `exec`.
    pub command: String,
    /// The full command line, program name first.
    pub command_line: Vec<String>,
    /// `ipuc --version` of the binary that wrote it.
    pub ipuc_version: String,
    pub flags: Flags,
    /// The static runtime's source (path, or the built-in name) and the
    /// SHA-256 of its text.
    pub runtime_source: Option<String>,
    pub runtime_source_sha256: Option<String>,
    pub workload: String,
    pub layers: usize,
    pub tokens: usize,
    pub width: usize,
    pub fuse_qkv: bool,
    pub fp8_scale: Option<i8>,
    pub tiles: u32,
    /// Floating-point operations of one inference (2 per multiply-add, the
    /// reference's count over the graph).
    pub model_flops: u64,
    /// `PASS`, `FAIL`, `rejected` (memory), `error`, `ran` (no reference),
    /// or `compiled` (`ipuc compile`).
    pub result: String,
    pub rejection: Option<Rejection>,
    /// The error's message when `result` is `error` or `rejected`.
    pub error: Option<String>,
    /// Planner wall seconds (the whole compile when planning rejected it).
    pub planning_seconds: Option<f64>,
    /// Wall seconds of the whole compile (to the package or the rejection).
    pub compile_seconds: f64,
    /// Placement's charged per-tile peak (support included) and its tile.
    pub peak_bytes_per_tile: Option<u32>,
    pub peak_tile: Option<u32>,
    /// The moment of that peak, as placement reports it.
    pub peak_moment: Option<String>,
    pub package_sha256: Option<String>,
    /// Cropped span of the last inference (first to last step).
    pub cropped_cycles: Option<u64>,
    /// Repeat iterations seen in the profile.
    pub repeat_iterations: usize,
    /// Remainder span (iterations after the first) / its iterations; the
    /// single iteration's span for one layer.
    pub cycles_per_layer: Option<u64>,
    /// Worst over every inference and output.
    pub max_abs_error: Option<f32>,
    pub fp32_max_abs_error: Option<f32>,
    pub fp32_cosine: Option<f64>,
    pub inferences: Vec<InferenceSummary>,
    /// Where the cycle figures come from (simulated from instructions or
    /// modelled), per part, as every report says
    /// ([`crate::report::CYCLE_SOURCES`]); set with the run figures.
    #[serde(default)]
    pub cycle_sources: std::collections::BTreeMap<String, String>,
    /// Where an average encoder layer's cycles go on the critical path
    /// (`report::layer_breakdown`), with each GEMM's achieved MAC rate.
    #[serde(default)]
    pub layer_breakdown: Option<crate::report::layer_breakdown::LayerBreakdown>,
    /// The same inference with every modelled kernel rate at the
    /// optimistic and at the conservative end of its sources
    /// (`--rate-band`).
    #[serde(default)]
    pub rate_band: Option<RateBand>,
    /// The batch's simulated throughput (runs and execs only).
    #[serde(default)]
    pub throughput: Option<Throughput>,
}

/// The simulated figures at both ends of the kernel rates' sources.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RateBand {
    pub optimistic: BandEnd,
    pub conservative: BandEnd,
}

/// One end of a [`RateBand`].
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct BandEnd {
    /// Simulated cycles to the last halt.
    pub cycles: u64,
    /// The cropped span (first to last step).
    pub cropped_cycles: u64,
    /// The Repeat's per-layer pace, when it ran.
    pub cycles_per_layer: Option<u64>,
}

impl BandEnd {
    /// The figures of `profile`, whose run took `cycles` to the last halt.
    pub fn of(profile: &Profile, cycles: u64) -> BandEnd {
        BandEnd {
            cycles,
            cropped_cycles: profile.span().map_or(0, |(s, e)| e - s),
            cycles_per_layer: super::profile::cycles_per_layer(&profile.iteration_spans()),
        }
    }
}

impl RunSummary {
    /// Fills the run figures from the last inference's profile and every
    /// inference's check.
    pub fn set_run(
        &mut self,
        profile: &Profile,
        graph: &ipuc_core::ir::Graph,
        inferences: Vec<InferenceSummary>,
    ) {
        self.cropped_cycles = profile.span().map(|(s, e)| e - s);
        self.layer_breakdown = crate::report::layer_breakdown::layer_breakdown(profile, graph);
        self.cycle_sources = crate::report::CYCLE_SOURCES
            .iter()
            .map(|(part, how)| (part.to_string(), how.to_string()))
            .collect();
        let spans = profile.iteration_spans();
        self.repeat_iterations = spans.len();
        self.cycles_per_layer = super::profile::cycles_per_layer(&spans);
        let worst = |f: fn(&InferenceSummary) -> Option<f32>| {
            inferences.iter().filter_map(f).reduce(f32::max)
        };
        self.max_abs_error = worst(|i| i.max_abs_error);
        self.fp32_max_abs_error = worst(|i| i.fp32_max_abs_error);
        self.fp32_cosine = inferences
            .iter()
            .filter_map(|i| i.fp32_cosine)
            .reduce(f64::min);
        let passes: Vec<bool> = inferences.iter().filter_map(|i| i.pass).collect();
        self.result = if passes.is_empty() {
            "ran".into()
        } else if passes.iter().all(|&p| p) {
            "PASS".into()
        } else {
            "FAIL".into()
        };
        self.inferences = inferences;
    }

    /// A summary of `command` with its schema, command line and version.
    pub fn new(command: &str, flags: Flags) -> Self {
        RunSummary {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            command: command.into(),
            command_line: std::env::args().collect(),
            ipuc_version: crate::VERSION_LONG.into(),
            workload: flags.workload.clone().unwrap_or_default(),
            fuse_qkv: flags.fuse_qkv,
            fp8_scale: flags.fp8_scale,
            flags,
            ..RunSummary::default()
        }
    }

    /// Records how the command ended: on an error, `rejected` (with the
    /// rejection) or `error`, and the message.
    pub fn set_outcome(&mut self, result: &anyhow::Result<()>) {
        let Err(err) = result else { return };
        if self.result.is_empty() || self.result == "compiled" {
            self.rejection = Rejection::from_error(err);
            self.result = if self.rejection.is_some() {
                "rejected".into()
            } else {
                "error".into()
            };
            if self
                .rejection
                .as_ref()
                .is_some_and(|r| r.stage == "planning")
            {
                self.planning_seconds = Some(self.compile_seconds);
            }
        }
        self.error = Some(format!("{err:#}"));
    }

    /// Writes the summary as pretty JSON to `path`, or to stdout for `-`.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        if path == Path::new("-") {
            println!("{text}");
            return Ok(());
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        crate::fsio::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::Throughput;

    /// The throughput lines stay within the default report's 120 columns,
    /// from a tiny tower (a limit of a few cycles, a huge ratio) to a
    /// batch that runs for ten trillion cycles (hours of device time).
    #[test]
    fn throughput_lines_fit_120_columns() {
        for (cycles, batch, flops) in [
            (188_151, 1, 2_816),
            (1, 1, 2),
            (9_999_999_999_999, 4_096, 1 << 50),
            (9_999_999_999_999, 1, 2),
        ] {
            for line in Throughput::of(cycles, batch, flops).lines() {
                assert!(line.chars().count() <= 120, "{line}");
            }
        }
    }
}
