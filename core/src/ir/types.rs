//! Element types and shapes of SSA values.

use alloc::vec::Vec;
use core::fmt;

use crate::numeric::{F8Format, Fp8, Overflow, SCALE_MAX, SCALE_MIN};

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
            DType::F16 => crate::numeric::round_to_f16(x),
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

/// Dimensions of a tensor, outermost first. Rank 0 is a scalar.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Shape(Vec<usize>);

impl Shape {
    /// A shape from its dimensions.
    pub fn new(dims: impl Into<Vec<usize>>) -> Self {
        Shape(dims.into())
    }

    /// The dimensions.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Element count, or `None` if it overflows `usize`.
    pub fn element_count(&self) -> Option<usize> {
        self.0.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }

    /// Dimension `axis` counted from the end (0 = last), if present.
    pub fn dim_from_end(&self, axis: usize) -> Option<usize> {
        self.0.len().checked_sub(axis + 1).map(|i| self.0[i])
    }
}

impl From<&[usize]> for Shape {
    fn from(dims: &[usize]) -> Self {
        Shape(dims.to_vec())
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(dims: [usize; N]) -> Self {
        Shape(dims.to_vec())
    }
}

impl From<Vec<usize>> for Shape {
    fn from(dims: Vec<usize>) -> Self {
        Shape(dims)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Shape and element type of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// Dimensions.
    pub shape: Shape,
    /// Element type.
    pub dtype: DType,
}

impl TensorType {
    /// A tensor type.
    pub fn new(dtype: DType, shape: impl Into<Shape>) -> Self {
        TensorType {
            shape: shape.into(),
            dtype,
        }
    }

    /// Storage bytes, or `None` on overflow.
    pub fn size_bytes(&self) -> Option<usize> {
        self.shape
            .element_count()?
            .checked_mul(self.dtype.size_bytes())
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.dtype, self.shape)
    }
}
