//! Parameter specs: what the weights loader (or the random generator) must
//! bind to each graph parameter, under HF checkpoint names (facts §1.3).

use ipuc_core::ir::{DType, ValueId};

/// Prefix of every vision-tower tensor in HF checkpoints (both
/// `SiglipModel` and `SiglipVisionModel` state dicts).
pub const VISION_PREFIX: &str = "vision_model.";

/// What a parameter is, so a random generator can pick a sensible init
/// (e.g. LayerNorm scales near 1) and reports can group bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ParameterRole {
    /// A GEMM weight `[out, in]` (stored FP8 when `fp8_scale` is set).
    GemmWeight,
    /// A GEMM bias `[out]`.
    GemmBias,
    /// LayerNorm γ `[D]`.
    NormScale,
    /// LayerNorm β `[D]`.
    NormBias,
    /// The learned position table `[tokens, D]`.
    PositionEmbedding,
    /// The MAP head's probe `[1, 1, D]`.
    Probe,
    /// The class token (CLIP `class_embedding` `[D]`, ViT/DINOv2
    /// `cls_token` `[1, 1, D]`).
    ClassToken,
    /// DINOv2's LayerScale `λ` `[D]`.
    LayerScale,
}

/// A position table stored for another image size, resized when bound
/// (DINOv2, see [`crate::model::interpolate_positions`]): the source is
/// `[1, 1 + from_side², D]`, the parameter `[1, 1 + to_side², D]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PositionResample {
    /// Patches per side of the stored table.
    pub from_side: usize,
    /// Patches per side the model runs at.
    pub to_side: usize,
}

/// One graph parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ParameterSpec {
    /// The graph parameter's name (an HF checkpoint name, or for fused QKV
    /// a synthetic `…self_attn.qkv_proj.{weight,bias}` name).
    pub name: String,
    /// Shape the graph expects.
    pub shape: Vec<usize>,
    /// Storage dtype the graph expects (convert checkpoint data to it).
    pub dtype: DType,
    /// The parameter's value in the graph.
    pub value: ValueId,
    /// What it is.
    pub role: ParameterRole,
    /// Encoder layer for per-layer parameters (element `layer` of an
    /// iterated sequence of the encoder Repeat).
    pub layer: Option<usize>,
    /// For per-layer parameters: the name with `{i}` in place of the layer.
    pub pattern: Option<String>,
    /// Checkpoint tensors holding the data, concatenated along axis 0 in
    /// this order (one name normally; q, k, v for fused QKV). For reshaped
    /// tensors the row-major data is the same (e.g. the patch weight keeps
    /// its `[D, C, p, p]` checkpoint shape).
    pub sources: Vec<String>,
    /// Set when the (single) source is a position table for another image
    /// size: its shape then follows `from_side`, and it is resized to
    /// `shape` when bound.
    pub resample: Option<PositionResample>,
}

impl ParameterSpec {
    /// Element count.
    pub fn element_count(&self) -> usize {
        self.shape.iter().product()
    }
}

/// The name of an encoder-layer tensor: `pattern` with `{i}` replaced.
pub fn layer_name(pattern: &str, layer: usize) -> String {
    pattern.replace("{i}", &layer.to_string())
}

/// `vision_model.encoder.layers.{i}.<suffix>`.
pub fn layer_pattern(suffix: &str) -> String {
    format!("{VISION_PREFIX}encoder.layers.{{i}}.{suffix}")
}

/// `vision_model.<suffix>`.
pub fn tower_name(suffix: &str) -> String {
    format!("{VISION_PREFIX}{suffix}")
}
