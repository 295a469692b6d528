//! The element type of tensors and kernel operands: a numeric fact (what
//! a stored element is), shared by the IR, the kernel ABI and packages.

use core::fmt;

use super::{F8Format, Fp8, Overflow, SCALE_MAX, SCALE_MIN};

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16 (with subnormals, as on the IPU).
    F16,
    /// IPU FP8 with a power-of-two tensor scale: value = decode(code) · 2^scale.
    F8 {
        /// F143 or F152.
        format: F8Format,
        /// Metadata scale, valid in [−32, 31] (the verifier checks).
        scale: i8,
    },
}

impl DType {
    /// F143 at `scale`.
    pub const fn f143(scale: i8) -> Self {
        DType::F8 {
            format: F8Format::F143,
            scale,
        }
    }

    /// F152 at `scale`.
    pub const fn f152(scale: i8) -> Self {
        DType::F8 {
            format: F8Format::F152,
            scale,
        }
    }

    /// Bytes per element.
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 => 2,
            DType::F8 { .. } => 1,
        }
    }

    /// True for F32 and F16: the types arithmetic ops accept. FP8 is a storage
    /// and matmul-operand type only.
    pub const fn is_arithmetic(self) -> bool {
        matches!(self, DType::F32 | DType::F16)
    }

    /// True for the FP8 types.
    pub const fn is_fp8(self) -> bool {
        matches!(self, DType::F8 { .. })
    }

    /// True if an FP8 scale is inside the metadata range.
    pub fn is_valid(self) -> bool {
        match self {
            DType::F8 { scale, .. } => (SCALE_MIN..=SCALE_MAX).contains(&scale),
            _ => true,
        }
    }

    /// Round `x` to the nearest value of this type (FP8 overflow per
    /// `overflow`). Invalid FP8 scales are clamped into range.
    pub fn quantize(self, x: f32, overflow: Overflow) -> f32 {
        match self {
            DType::F32 => x,
            DType::F16 => super::round_to_f16(x),
            DType::F8 { format, scale } => {
                let scale = scale.clamp(SCALE_MIN, SCALE_MAX);
                match Fp8::new(format, scale) {
                    Ok(fp8) => fp8.quantize(x, overflow),
                    // Unreachable: the scale was clamped into range above.
                    Err(_) => f32::NAN,
                }
            }
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DType::F32 => f.write_str("f32"),
            DType::F16 => f.write_str("f16"),
            DType::F8 { format, scale } => write!(f, "{}<{}>", format.mnemonic(), scale),
        }
    }
}
