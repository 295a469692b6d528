//! Kernel calls at the ABI level: symbol names, argument blocks and operand
//! extents, shared by emission (which writes argument blocks and loads
//! registers), the package's kernel symbol table and the simulator's
//! codelets (which decode them). The register convention and the block
//! header are in [`crate::ipu21::kernel_abi`].
//!
//! A call is described by a [`KernelArgs`]: the lowered [`Kernel`] (what the
//! planner costed) plus GEMM epilogue options. [`encode`] turns it into
//! argument-block words and [`decode`] back, checking every field. The
//! planner's estimate of a call is `ipuc_core::plan::cost::call_cycles`
//! (estimates live in `plan` only, above this ABI).
//!
//! ```
//! use ipuc_target::numeric::DType;
//! use ipuc_target::kernel::{decode, encode, KernelArgs, KernelSymbol};
//! use ipuc_target::kernel::Kernel;
//! let args = KernelArgs::new(Kernel::Gemm {
//!     m: 8, k: 64, n: 32, a: DType::F16, b: DType::f143(-4), out: DType::F32,
//!     b_transposed: true, b_interleaved: true,
//! });
//! let words = encode(&args);
//! assert_eq!(decode(&words).unwrap(), args);
//! assert_eq!(args.symbol(), KernelSymbol::GemmAmp);
//! assert_eq!(args.symbol().name(), "gemm_amp");
//! ```

mod abi;
mod amp;
mod args;
mod attention;
mod error;
mod kind;
mod operands;

pub use abi::KernelAbi;
pub use amp::{attention_mode, partials_type, AmpProduct};
pub use args::{decode, decode_dtype, decode_header, encode, encode_dtype};
pub use attention::{combine_attention_partials, transposed, PartialRecord};
pub use error::AbiError;
pub use kind::Kernel;
pub use operands::{OperandRole, OperandSpec};

use crate::numeric::DType;

/// Every kernel symbol the package can reference: one native codelet per
/// family, dtype variants selected by the argument block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelSymbol {
    /// `out (+)= a · b (+ bias)` on the AMP.
    GemmAmp,
    /// Sum of k-split partials.
    ReduceAdd,
    /// Element-wise add, optional row broadcast.
    Add,
    /// Row-wise LayerNorm.
    LayerNorm,
    /// Tanh-approximate GELU.
    GeluTanh,
    /// Row-wise softmax.
    Softmax,
    /// Type conversion.
    Cast,
    /// One head's attention for a block of query rows.
    AttentionHead,
    /// Strided local copy (also im2col patch gathering).
    Copy,
    /// One head's attention against one key block (unnormalised partial).
    AttentionPartial,
    /// Combination of key-block attention partials.
    AttentionCombine,
    /// Element-wise activation other than the tanh GELU.
    Activation,
    /// Element-wise product, optional row broadcast.
    Mul,
    /// Local transposed copy of a block.
    Transpose,
}

impl KernelSymbol {
    /// All symbols, in code order.
    pub const ALL: [KernelSymbol; 14] = [
        KernelSymbol::GemmAmp,
        KernelSymbol::ReduceAdd,
        KernelSymbol::Add,
        KernelSymbol::LayerNorm,
        KernelSymbol::GeluTanh,
        KernelSymbol::Softmax,
        KernelSymbol::Cast,
        KernelSymbol::AttentionHead,
        KernelSymbol::Copy,
        KernelSymbol::AttentionPartial,
        KernelSymbol::AttentionCombine,
        KernelSymbol::Activation,
        KernelSymbol::Mul,
        KernelSymbol::Transpose,
    ];

    /// Symbol name in the package's kernel table (equal to
    /// [`Kernel::name`] of the family).
    pub const fn name(self) -> &'static str {
        match self {
            KernelSymbol::GemmAmp => "gemm_amp",
            KernelSymbol::ReduceAdd => "reduce_add",
            KernelSymbol::Add => "add",
            KernelSymbol::LayerNorm => "layer_norm",
            KernelSymbol::GeluTanh => "gelu_tanh",
            KernelSymbol::Softmax => "softmax",
            KernelSymbol::Cast => "cast",
            KernelSymbol::AttentionHead => "attention_head",
            KernelSymbol::Copy => "copy",
            KernelSymbol::AttentionPartial => "attention_partial",
            KernelSymbol::AttentionCombine => "attention_combine",
            KernelSymbol::Activation => "activation",
            KernelSymbol::Mul => "mul",
            KernelSymbol::Transpose => "transpose",
        }
    }

    /// Code in argument-block word 0 (1-based so a zeroed block is rejected).
    pub const fn code(self) -> u8 {
        match self {
            KernelSymbol::GemmAmp => 1,
            KernelSymbol::ReduceAdd => 2,
            KernelSymbol::Add => 3,
            KernelSymbol::LayerNorm => 4,
            KernelSymbol::GeluTanh => 5,
            KernelSymbol::Softmax => 6,
            KernelSymbol::Cast => 7,
            KernelSymbol::AttentionHead => 8,
            KernelSymbol::Copy => 9,
            KernelSymbol::AttentionPartial => 10,
            KernelSymbol::AttentionCombine => 11,
            KernelSymbol::Activation => 12,
            KernelSymbol::Mul => 13,
            KernelSymbol::Transpose => 14,
        }
    }

    /// The symbol with code `code`.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.code() == code)
    }

    /// The symbol called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The symbol implementing `kernel`.
    pub const fn of(kernel: &Kernel) -> Self {
        match kernel {
            Kernel::Gemm { .. } => KernelSymbol::GemmAmp,
            Kernel::ReduceAdd { .. } => KernelSymbol::ReduceAdd,
            Kernel::Add { .. } => KernelSymbol::Add,
            Kernel::LayerNorm { .. } => KernelSymbol::LayerNorm,
            Kernel::Gelu { .. } => KernelSymbol::GeluTanh,
            Kernel::Softmax { .. } => KernelSymbol::Softmax,
            Kernel::Cast { .. } => KernelSymbol::Cast,
            Kernel::Attention { .. } => KernelSymbol::AttentionHead,
            Kernel::Copy { .. } => KernelSymbol::Copy,
            Kernel::AttentionPartial { .. } => KernelSymbol::AttentionPartial,
            Kernel::AttentionCombine { .. } => KernelSymbol::AttentionCombine,
            Kernel::Activation { .. } => KernelSymbol::Activation,
            Kernel::Mul { .. } => KernelSymbol::Mul,
            Kernel::Transpose { .. } => KernelSymbol::Transpose,
        }
    }
}

/// Optional GEMM epilogue. Both default off; other kernels must leave them off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GemmEpilogue {
    /// Add the product to the output's current contents (k-split partials
    /// accumulated in place).
    pub accumulate: bool,
    /// Add a `[n]` bias row, read from the operand after `b`, of this type.
    pub bias: Option<DType>,
}

/// Everything a kernel call needs except addresses.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelArgs {
    /// The lowered kernel.
    pub kernel: Kernel,
    /// GEMM epilogue (ignored and must be default for other kernels).
    pub epilogue: GemmEpilogue,
}

impl KernelArgs {
    /// A call without epilogue.
    pub fn new(kernel: Kernel) -> Self {
        Self {
            kernel,
            epilogue: GemmEpilogue::default(),
        }
    }

    /// Its symbol.
    pub fn symbol(&self) -> KernelSymbol {
        KernelSymbol::of(&self.kernel)
    }
}
