//! [`Kernel`]: what one kernel call computes (shapes and dtypes, no
//! addresses) — the vocabulary the planner costs, lowering schedules, the
//! argument-block codec encodes and the codelets run.

use crate::numeric::{Activation, DType};

/// The computation a kernel call performs, with everything the codelet needs
/// except addresses. Operand order is given per variant (output first).
#[derive(Clone, Debug, PartialEq)]
pub enum Kernel {
    /// `out[m,n] (+)= a[m,k] · b[k,n]` on the AMP. Operands: out, a, b. `b` is
    /// stored `[n,k]` row-major when `b_transposed`. When `accumulate`, the
    /// result is added to `out`'s current contents.
    Gemm {
        /// Rows of `a` and `out`.
        m: u32,
        /// Inner dimension.
        k: u32,
        /// Columns of `b` and `out`.
        n: u32,
        /// Element type of `a`.
        a: DType,
        /// Element type of `b`.
        b: DType,
        /// Element type of `out`.
        out: DType,
        /// `b` block stored transposed (`[n,k]`, the PyTorch Linear layout).
        b_transposed: bool,
        /// Weights fed from interleaved memory (cheaper column groups).
        b_interleaved: bool,
    },
    /// `out[i] = Σ_p parts[p][i]` over `parts` consecutive blocks of `elements`
    /// each in one operand. Operands: out, partials.
    ReduceAdd {
        /// Elements per part.
        elements: u32,
        /// Number of parts.
        parts: u32,
        /// Partial element type.
        input: DType,
        /// Output element type.
        out: DType,
    },
    /// `out = a + b` on a `[rows, cols]` block; `b` is `[1, cols]` when
    /// `broadcast_rows`. Operands: out, a, b.
    Add {
        /// Rows.
        rows: u32,
        /// Columns.
        cols: u32,
        /// `b` is one row broadcast over all rows.
        broadcast_rows: bool,
        /// Element type (all operands).
        dtype: DType,
    },
    /// Row-wise LayerNorm of a `[rows, cols]` block holding whole rows.
    /// Operands: out, x, gamma, beta.
    LayerNorm {
        /// Rows.
        rows: u32,
        /// Columns (the normalised axis).
        cols: u32,
        /// Variance epsilon.
        eps: f32,
        /// Element type of x (and of the arithmetic's rounding).
        dtype: DType,
        /// Element type of gamma/beta.
        param: DType,
        /// Element type of out: `dtype`, or an FP8 type the result is
        /// converted to after rounding to `dtype` (a fused cast).
        out: DType,
    },
    /// Element-wise tanh-approximate GELU. Operands: out, x.
    Gelu {
        /// Elements.
        elements: u32,
        /// Element type of x (and of the arithmetic's rounding).
        dtype: DType,
        /// Element type of out: `dtype`, or an FP8 type (a fused cast, as
        /// for [`Kernel::LayerNorm`]).
        out: DType,
    },
    /// Element-wise [`Activation`] (quick GELU, erf GELU, tanh). Operands: out, x.
    Activation {
        /// Elements.
        elements: u32,
        /// Element type of x (and of the arithmetic's rounding).
        dtype: DType,
        /// The function.
        function: Activation,
        /// Element type of out: `dtype`, or an FP8 type (a fused cast, as
        /// for [`Kernel::Gelu`]).
        out: DType,
    },
    /// `out = a ⊙ b` on a `[rows, cols]` block (LayerScale); `b` is
    /// `[1, cols]` when `broadcast_rows`. Operands: out, a, b.
    Mul {
        /// Rows.
        rows: u32,
        /// Columns.
        cols: u32,
        /// `b` is one row broadcast over all rows.
        broadcast_rows: bool,
        /// Element type (all operands).
        dtype: DType,
    },
    /// Row-wise softmax of a `[rows, cols]` block. Operands: out, x.
    Softmax {
        /// Rows.
        rows: u32,
        /// Columns.
        cols: u32,
        /// Element type.
        dtype: DType,
    },
    /// Element-wise conversion. Operands: out, x.
    Cast {
        /// Elements.
        elements: u32,
        /// Input type.
        from: DType,
        /// Output type.
        to: DType,
    },
    /// One head's attention for a block of query rows:
    /// `out = softmax(q·kᵀ·scale)·v` with `q [q_rows, head_dim]`,
    /// `k, v [kv_rows, head_dim]`. Operands: out, q, k, v, scores scratch
    /// (`q_rows × kv_rows` F32).
    Attention {
        /// Query rows in the block.
        q_rows: u32,
        /// Key/value rows.
        kv_rows: u32,
        /// Head width.
        head_dim: u32,
        /// Score scale.
        scale: f32,
        /// Element type of q/k/v/out.
        dtype: DType,
    },
    /// One head's attention of a block of query rows against one block of
    /// its keys/values (key-split attention): with `s = q·kᵀ·scale`,
    /// `m = rowmax(s)`, `p = exp(s − m)`, writes the row `[p·v (head_dim),
    /// m, Σp]` per query row, unnormalised, as a
    /// [`crate::kernel::PartialRecord`] (`p·v` in the partials type, `m`
    /// and `Σp` in F32). Operands: partial out (`q_rows` records), q, k,
    /// v, scores scratch (`q_rows × kv_rows` F32).
    AttentionPartial {
        /// Query rows in the block.
        q_rows: u32,
        /// Key/value rows of this key block.
        kv_rows: u32,
        /// Head width.
        head_dim: u32,
        /// Score scale.
        scale: f32,
        /// Element type of q/k/v.
        dtype: DType,
        /// `v` arrives transposed, `head_dim × kv_rows` — the AMP's weight
        /// order for `p·v` — so the kernel does not transpose it itself
        /// (the plan transposed it once, spread over the tiles sharing it).
        values_transposed: bool,
    },
    /// Combines `parts` key-block partials of [`Kernel::AttentionPartial`]
    /// (records stored back to back) into the normalised attention output:
    /// `out = Σ e^{m_p − M}·o_p / Σ e^{m_p − M}·l_p`, `M = max m_p`.
    /// Operands: out (`q_rows × head_dim`), partials.
    AttentionCombine {
        /// Query rows.
        q_rows: u32,
        /// Head width.
        head_dim: u32,
        /// Key blocks combined.
        parts: u32,
        /// Element type of out.
        dtype: DType,
    },
    /// Local strided copy of `rows` runs of `row_bytes` bytes. Operands: dst, src.
    Copy {
        /// Runs.
        rows: u32,
        /// Bytes per run.
        row_bytes: u32,
        /// Source pitch in bytes.
        src_pitch: u32,
        /// Destination pitch in bytes.
        dst_pitch: u32,
    },
    /// Writes the `rows × cols` block of `dtype` elements read from the
    /// input (rows `src_pitch` elements apart) transposed: `cols` rows of
    /// `rows` contiguous elements. Operands: out, in.
    Transpose {
        /// Rows read.
        rows: u32,
        /// Columns read (rows written).
        cols: u32,
        /// Input pitch in elements.
        src_pitch: u32,
        /// Element type.
        dtype: DType,
    },
}

impl Kernel {
    /// Stable symbol-family name (the emission helper maps it to a codelet).
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Gemm { .. } => "gemm_amp",
            Kernel::ReduceAdd { .. } => "reduce_add",
            Kernel::Add { .. } => "add",
            Kernel::LayerNorm { .. } => "layer_norm",
            Kernel::Gelu { .. } => "gelu_tanh",
            Kernel::Activation { .. } => "activation",
            Kernel::Mul { .. } => "mul",
            Kernel::Softmax { .. } => "softmax",
            Kernel::Cast { .. } => "cast",
            Kernel::Attention { .. } => "attention_head",
            Kernel::AttentionPartial { .. } => "attention_partial",
            Kernel::AttentionCombine { .. } => "attention_combine",
            Kernel::Copy { .. } => "copy",
            Kernel::Transpose { .. } => "transpose",
        }
    }
}
