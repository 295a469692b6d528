//! Operation kinds and their attributes.
//!
//! Every op kind documents its operands, result and the rules the verifier
//! enforces (see `infer.rs` for the exact shape/dtype rules). Arithmetic ops
//! take F32 or F16; FP8 appears only in storage (inputs, parameters,
//! constants, casts, data movement) and as matmul operands.

use alloc::string::String;
use alloc::vec::Vec;

use super::id::RegionId;
pub use ipuc_target::numeric::Activation;

use super::types::{DType, Shape, TensorType};

/// What an operation computes.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// A named graph input supplied by the host per run (e.g. `pixel_values`).
    /// Top level only; names are unique among inputs and parameters.
    Input {
        /// Host-visible name.
        name: String,
        /// Its type.
        ty: TensorType,
    },
    /// A named weight tensor bound once by the host (HF checkpoint name).
    /// Top level only; names are unique among inputs and parameters.
    Parameter {
        /// Checkpoint name.
        name: String,
        /// Its type.
        ty: TensorType,
    },
    /// A literal tensor; `values` (row-major, one per element) are rounded to
    /// `ty.dtype` when used.
    Constant {
        /// Its type.
        ty: TensorType,
        /// Row-major element values.
        values: Vec<f32>,
    },
    /// Batched matrix product.
    MatMul(MatMul),
    /// Elementwise sum with numpy broadcasting (trailing dims aligned; a dim
    /// broadcasts if it is 1). Both operands share one arithmetic dtype.
    Add,
    /// LayerNorm over the last axis: operands `x [..., D]`, `gamma [D]`,
    /// `beta [D]`; biased variance; `(x − μ)/sqrt(var + eps)·γ + β`.
    LayerNorm {
        /// Added to the variance; finite and > 0.
        eps: f32,
        /// See [`OpKind::GeluTanh`]'s `store`.
        store: Option<DType>,
    },
    /// GELU, tanh approximation: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    GeluTanh {
        /// `None`: the result has the operand's type. `Some(fp8)`: the
        /// result is rounded to the operand's type and then stored as this
        /// FP8 type — exactly `cast(op(x), fp8)`, with the cast an FP8 GEMM
        /// input needs done where the value is produced instead of in a
        /// pass of its own (no second kernel call, no re-read, no re-layout).
        store: Option<DType>,
    },
    /// An element-wise function other than the tanh GELU (CLIP's
    /// `quick_gelu`, the exact erf GELU of ViT and DINOv2, the ViT pooler's
    /// tanh); see [`Activation`].
    Activation {
        /// The function.
        function: Activation,
        /// See [`OpKind::GeluTanh`]'s `store`.
        store: Option<DType>,
    },
    /// Elementwise product with numpy broadcasting (DINOv2's LayerScale
    /// `λ ⊙ x`); the rules of `Add`.
    Mul,
    /// Softmax over the last axis.
    Softmax,
    /// Non-causal scaled-dot-product attention per head:
    /// `softmax(q·kᵀ·scale)·v` with `q [..., Sq, Dk]`, `k [..., Sk, Dk]`,
    /// `v [..., Sk, Dv]` → `[..., Sq, Dv]`; leading dims broadcast.
    Attention {
        /// Score scale, normally `1/sqrt(Dk)`; finite and > 0.
        scale: f32,
    },
    /// `[..., S, H·Dh]` → `[..., H, S, Dh]` (head h takes features h·Dh..(h+1)·Dh).
    SplitHeads {
        /// Number of heads H (divides the last dim).
        heads: usize,
    },
    /// Inverse of `SplitHeads`: `[..., H, S, Dh]` → `[..., S, H·Dh]`.
    MergeHeads,
    /// Same elements in row-major order, new dims (element counts match).
    Reshape {
        /// Result dims.
        shape: Shape,
    },
    /// Axis permutation: result dim i = operand dim `perm[i]`.
    Transpose {
        /// A permutation of `0..rank`.
        perm: Vec<usize>,
    },
    /// Elements `start..end` along `axis` (`start < end ≤ dim`).
    Slice {
        /// Sliced axis.
        axis: usize,
        /// First index kept.
        start: usize,
        /// One past the last index kept.
        end: usize,
    },
    /// Concatenation of ≥ 1 operands of one dtype along `axis`.
    Concat {
        /// Joined axis.
        axis: usize,
    },
    /// im2col for a `patch`×`patch`, stride-`patch`, unpadded convolution:
    /// `[B, C, H, W]` → `[B, (H/p)·(W/p), C·p·p]`, token `row·(W/p) + col`,
    /// features in (channel, ky, kx) order. Trailing rows/columns that do
    /// not fill a patch are dropped (PyTorch `padding="valid"`). The
    /// convolution itself is then a matmul with the weight reshaped to
    /// `[out, C·p·p]`.
    Im2ColPatches {
        /// Kernel size and stride.
        patch: usize,
    },
    /// Elementwise conversion to `to` (round to nearest even).
    Cast {
        /// Target dtype.
        to: DType,
    },
    /// Structured loop; see [`Repeat`].
    Repeat(Repeat),
}

/// Attributes of [`OpKind::MatMul`].
///
/// Operand `a` is `[..., M, K]` (`[..., K, M]` if `transpose_a`), `b` is
/// `[..., K, N]` (`[..., N, K]` if `transpose_b`, the PyTorch Linear weight
/// layout); leading (batch) dims broadcast numpy-style, so a rank-2 weight
/// serves every batch. Result `[batch..., M, N]` in `out`. Operands may be any
/// dtype including FP8 (products are accumulated at least at `out` precision).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatMul {
    /// Use aᵀ (swap the last two dims of `a`).
    pub transpose_a: bool,
    /// Use bᵀ (swap the last two dims of `b`).
    pub transpose_b: bool,
    /// Result dtype (F32 or F16).
    pub out: DType,
}

/// Attributes of [`OpKind::Repeat`]: run `body` `trip_count` times.
///
/// Operands, in order: `carried` initial values, `invariants` (outer values
/// the body reads unchanged), then `sequences` iterated sequences of
/// `trip_count` values each (sequence-major: all of sequence 0, then all of
/// sequence 1, …). Iteration i sees element i of every sequence.
///
/// Body arguments, in the same order: one per carried value, one per
/// invariant, one per sequence (typed like every element of it). The body
/// yields one value per carried argument (same type); yield j feeds carried
/// argument j of the next iteration. Results are the last iteration's
/// yields. The body is closed: it reads only its arguments and its own
/// results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeat {
    /// The loop body.
    pub body: RegionId,
    /// Iterations (≥ 1).
    pub trip_count: u32,
    /// Number of carried values.
    pub carried: u32,
    /// Number of invariants.
    pub invariants: u32,
    /// Number of iterated sequences.
    pub sequences: u32,
}

impl OpKind {
    /// Lower-case mnemonic (used in errors and dumps).
    pub fn mnemonic(&self) -> &'static str {
        match self {
            OpKind::Input { .. } => "input",
            OpKind::Parameter { .. } => "parameter",
            OpKind::Constant { .. } => "constant",
            OpKind::MatMul(_) => "matmul",
            OpKind::Add => "add",
            OpKind::LayerNorm { .. } => "layer_norm",
            OpKind::GeluTanh { .. } => "gelu_tanh",
            OpKind::Activation { function, .. } => function.name(),
            OpKind::Mul => "mul",
            OpKind::Softmax => "softmax",
            OpKind::Attention { .. } => "attention",
            OpKind::SplitHeads { .. } => "split_heads",
            OpKind::MergeHeads => "merge_heads",
            OpKind::Reshape { .. } => "reshape",
            OpKind::Transpose { .. } => "transpose",
            OpKind::Slice { .. } => "slice",
            OpKind::Concat { .. } => "concat",
            OpKind::Im2ColPatches { .. } => "im2col_patches",
            OpKind::Cast { .. } => "cast",
            OpKind::Repeat(_) => "repeat",
        }
    }

    /// The Repeat attributes, if this is a Repeat.
    pub fn as_repeat(&self) -> Option<&Repeat> {
        match self {
            OpKind::Repeat(r) => Some(r),
            _ => None,
        }
    }

    /// The host-visible name of an input or parameter.
    pub fn external_name(&self) -> Option<&str> {
        match self {
            OpKind::Input { name, .. } | OpKind::Parameter { name, .. } => Some(name),
            _ => None,
        }
    }
}
