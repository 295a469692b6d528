//! Element-wise activations other than the tanh GELU: the IR's
//! `OpKind::Activation`, the `activation` kernel's function code and its
//! f32 definition, shared by the compiler, the codelets and the reference.

/// An element-wise function, each as PyTorch computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Activation {
    /// Exact GELU `0.5·x·(1 + erf(x/√2))` (HF `gelu`).
    GeluErf,
    /// `x·σ(1.702·x)` (HF `quick_gelu`, OpenAI CLIP).
    QuickGelu,
    /// `tanh(x)`.
    Tanh,
}

impl Activation {
    /// All functions, in code order.
    pub const ALL: [Activation; 3] = [Activation::GeluErf, Activation::QuickGelu, Activation::Tanh];

    /// Lower-case name (the op mnemonic).
    pub const fn name(self) -> &'static str {
        match self {
            Activation::GeluErf => "gelu_erf",
            Activation::QuickGelu => "quick_gelu",
            Activation::Tanh => "tanh",
        }
    }

    /// Stable 1-based code (kernel argument blocks).
    pub const fn code(self) -> u32 {
        match self {
            Activation::GeluErf => 1,
            Activation::QuickGelu => 2,
            Activation::Tanh => 3,
        }
    }

    /// The function with `code`.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.code() == code)
    }

    /// The function at `x` in f32, written as PyTorch writes it (one
    /// definition for the reference, the codelets and the lowering oracle).
    pub fn apply(self, x: f32) -> f32 {
        match self {
            // torch GELU(approximate="none"): x·0.5·(1 + erf(x/√2)).
            Activation::GeluErf => {
                x * 0.5 * (1.0 + libm::erff(x * core::f32::consts::FRAC_1_SQRT_2))
            }
            // HF QuickGELUActivation: x·sigmoid(1.702·x).
            Activation::QuickGelu => x * (1.0 / (1.0 + libm::expf(-1.702 * x))),
            Activation::Tanh => libm::tanhf(x),
        }
    }
}
