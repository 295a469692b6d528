//! The reference for a built SigLIP model: bind, run, pick the outputs.

use std::time::Instant;

use super::{graph_flops, Numerics, Progress, Reference, ReferenceError, Tensor};
use crate::input::PixelValues;
use crate::model::{SiglipModel, LAST_HIDDEN_STATE, PIXEL_VALUES, POOLER_OUTPUT};
use crate::weights::Weights;

/// What the SigLIP reference produces, with its timing.
#[derive(Clone, Debug)]
pub struct SiglipOutputs {
    /// `[B, tokens, D]` after `post_layernorm`.
    pub last_hidden_state: Tensor,
    /// `[B, D]` MAP-head embedding (absent without the head).
    pub pooler_output: Option<Tensor>,
    /// Matmul + attention FLOPs of the graph.
    pub flops: u64,
    /// Wall time of the forward pass (binding and rounding excluded).
    pub seconds: f64,
}

impl SiglipOutputs {
    /// Achieved GFLOP/s of the forward pass.
    pub fn gflops_per_second(&self) -> f64 {
        self.flops as f64 / self.seconds.max(1e-9) / 1e9
    }
}

/// Run `model` on `pixels` with `weights` in `numerics`.
pub fn run_siglip<'g>(
    model: &'g SiglipModel,
    weights: &Weights,
    pixels: &PixelValues,
    numerics: Numerics,
    progress: Option<Progress<'g>>,
) -> Result<SiglipOutputs, ReferenceError> {
    let mut reference = Reference::new(&model.graph, weights, numerics)?;
    if let Some(p) = progress {
        reference = reference.with_progress(p);
    }
    let input = Tensor::new(pixels.shape.to_vec(), pixels.data.clone());
    let start = Instant::now();
    let mut out = reference.run(&[(PIXEL_VALUES, input)])?;
    let seconds = start.elapsed().as_secs_f64();
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
    })
}
