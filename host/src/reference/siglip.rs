//! The reference for a built SigLIP model: bind, run, pick the outputs.

use std::time::Instant;

use super::{graph_flops, Numerics, Progress, Reference, ReferenceError, Tensor};
use crate::input::PixelValues;
use crate::model::{SiglipModel, LAST_HIDDEN_STATE, PIXEL_VALUES, POOLER_OUTPUT};
use crate::weights::Weights;
use ipuc_core::description::KSplit;

/// What the SigLIP reference produces, with its timing.
#[derive(Clone, Debug)]
pub struct SiglipOutputs {
    /// `[B, tokens, D]`: the family's `last_hidden_state` (after the final
    /// LayerNorm, except CLIP's: the encoder output itself).
    pub last_hidden_state: Tensor,
    /// `[B, D]`: the family's `pooler_output` (absent for SigLIP without
    /// its MAP head and ViT without its pooler).
    pub pooler_output: Option<Tensor>,
    /// Matmul + attention FLOPs of the graph.
    pub flops: u64,
    /// Wall time of the forward pass (binding excluded; for device numerics
    /// it includes rounding each parameter as it is read).
    pub seconds: f64,
    /// Process CPU time (user + system) spent in the forward pass, where
    /// the OS reports it (Linux): on a loaded machine, CPU time / threads
    /// estimates the unloaded wall time better than the wall clock does.
    pub cpu_seconds: Option<f64>,
    /// The first op whose result held a NaN or an infinity, if any did.
    pub first_non_finite: Option<super::NonFinite>,
}

impl SiglipOutputs {
    /// Achieved GFLOP/s of the forward pass.
    pub fn gflops_per_second(&self) -> f64 {
        self.flops as f64 / self.seconds.max(1e-9) / 1e9
    }
}

/// Run `model` on `pixels` with `weights` (borrowed, never copied whole:
/// see [`Reference`]) in `numerics`, summing the
/// products a compiled program splits over K as it does (`k_splits`, from
/// its package; empty: every product in one sequence).
pub fn run_siglip(
    model: &SiglipModel,
    weights: &Weights,
    pixels: &PixelValues,
    (numerics, k_splits): (Numerics, &[KSplit]),
    progress: Option<Progress>,
) -> Result<SiglipOutputs, ReferenceError> {
    let mut reference = Reference::new(&model.graph, weights, numerics)?.with_k_splits(k_splits)?;
    if let Some(p) = progress {
        reference = reference.with_progress(p);
    }
    let input = Tensor::new(pixels.shape.to_vec(), pixels.data.clone());
    let cpu_start = process_cpu_seconds();
    let start = Instant::now();
    let mut out = reference.run(&[(PIXEL_VALUES, input)])?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = match (cpu_start, process_cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let last_hidden_state = out
        .remove(LAST_HIDDEN_STATE)
        .ok_or(ReferenceError::Unavailable {
            value: model.last_hidden_state,
        })?;
    Ok(SiglipOutputs {
        last_hidden_state,
        pooler_output: out.remove(POOLER_OUTPUT),
        flops: graph_flops(&model.graph),
        seconds,
        cpu_seconds,
        first_non_finite: reference.first_non_finite().cloned(),
    })
}

/// utime + stime of this process from `/proc/self/stat` (fields 14 and 15,
/// in clock ticks of 1/100 s on Linux), or `None` elsewhere.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may contain spaces; fields resume after ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
