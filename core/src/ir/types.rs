//! Element types and shapes of SSA values.

use alloc::vec::Vec;
use core::fmt;

pub use ipuc_target::numeric::DType;

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
