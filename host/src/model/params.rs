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
/// (`--image-size`, see [`crate::model::interpolate_positions`]): the
/// source has `class_rows + from_side²` rows, the parameter `class_rows +
/// to_side²` (in its shape's second-to-last dimension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PositionResample {
    /// Rows before the patch grid, kept as they are: 1 (the class token's)
    /// for CLIP, ViT and DINOv2, 0 for SigLIP.
    pub class_rows: usize,
    /// Patches per side of the stored table.
    pub from_side: usize,
    /// Patches per side the model runs at.
    pub to_side: usize,
}

/// A parameter stored smaller than the graph's: zero rows and columns are
/// appended so that every row is a whole number of 32-bit words in any
/// storage type. An odd row of FP16 or FP8 elements cannot be moved by the
/// exchange (it moves words), so no GEMM layout could be reached: the
/// patch embedding's `C·p·p` inputs are odd for an odd patch size, and an
/// MLP width need not be a multiple of 4 (transformers' SigLIP test config
/// has 37). The padded products are exact zeros, so results are unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZeroPad {
    /// The single source's stored shape (e.g. the conv's `[D, C, p, p]`):
    /// its first dim is its rows, the rest one row each (a vector is a
    /// column).
    pub stored: Vec<usize>,
}

impl ZeroPad {
    fn matrix(shape: &[usize]) -> (usize, usize) {
        let rows = shape.first().copied().unwrap_or(1);
        (rows, shape.iter().skip(1).product())
    }

    /// `data` (of the stored shape) as a tensor of `shape`: each row
    /// widened by trailing zeros, then zero rows appended.
    pub fn widen(&self, data: &[f32], shape: &[usize]) -> Vec<f32> {
        let (_, columns) = Self::matrix(&self.stored);
        let (rows, width) = Self::matrix(shape);
        let mut out = Vec::with_capacity(rows.saturating_mul(width));
        for row in data.chunks(columns.max(1)) {
            out.extend_from_slice(row);
            out.extend(std::iter::repeat_n(0.0, width.saturating_sub(columns)));
        }
        out.resize(rows.saturating_mul(width), 0.0);
        out
    }
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
    /// Set when the (single) source is stored with fewer rows or columns:
    /// its shape then follows `stored`, and it is padded with zeros to
    /// `shape` when bound.
    pub pad: Option<ZeroPad>,
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
