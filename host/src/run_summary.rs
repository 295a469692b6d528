//! The machine-readable summary of one `ipuc run` (`--summary-json`): what
//! `cargo xtask sweep` and `cargo xtask bench` collect, in the seeds' sweep
//! shape (result, rejection stage and op, planning and compile seconds, peak
//! bytes/tile, cropped cycles, cycles per layer, errors against the
//! references). Every cycle figure is simulated.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::compile::PlanOverBudget;
use crate::report::placement_rejection::PlacementRejected;
use crate::report::Profile;
use crate::run_report::InferenceCheck;

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
}

impl InferenceSummary {
    pub fn from_check(c: &InferenceCheck, words_moved: u64) -> Self {
        let max_abs =
            |v: &crate::run_report::Validation| v.outputs.iter().map(|o| o.1).fold(0f32, f32::max);
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
        }
    }
}

/// The summary of one run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunSummary {
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
    /// `PASS`, `FAIL`, `rejected` (memory), `error`, or `ran` (no reference).
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
}

impl RunSummary {
    /// Fills the run figures from the last inference's profile and every
    /// inference's check.
    pub fn set_run(&mut self, profile: &Profile, inferences: Vec<InferenceSummary>) {
        self.cropped_cycles = profile.span().map(|(s, e)| e - s);
        self.cycle_sources = crate::report::CYCLE_SOURCES
            .iter()
            .map(|(part, how)| (part.to_string(), how.to_string()))
            .collect();
        let spans = profile.iteration_spans();
        self.repeat_iterations = spans.len();
        self.cycles_per_layer = cycles_per_layer(&spans);
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

    /// Writes the summary as pretty JSON.
    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(self)?;
        crate::fsio::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// The seeds' per-layer figure: the Repeat remainder (every iteration after
/// the first) divided by its iterations; one iteration's own span when there
/// is only one.
pub fn cycles_per_layer(spans: &[crate::report::IterationSpan]) -> Option<u64> {
    match spans {
        [] => None,
        [only] => Some(only.cycles()),
        [_, rest @ ..] => {
            let start = rest.iter().map(|s| s.start_cycle).min()?;
            let end = rest.iter().map(|s| s.end_cycle).max()?;
            Some(end.saturating_sub(start) / rest.len() as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::IterationSpan;

    fn span(iteration: u32, start_cycle: u64, end_cycle: u64) -> IterationSpan {
        IterationSpan {
            iteration,
            start_cycle,
            end_cycle,
        }
    }

    #[test]
    fn cycles_per_layer_is_the_remainder_over_its_iterations() {
        assert_eq!(cycles_per_layer(&[]), None);
        assert_eq!(cycles_per_layer(&[span(0, 10, 110)]), Some(100));
        // The first (profiled, warm-up) iteration is left out as the seeds do.
        let spans = [span(0, 0, 500), span(1, 500, 800), span(2, 800, 1100)];
        assert_eq!(cycles_per_layer(&spans), Some(300));
    }
}
