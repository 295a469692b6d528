//! Errors the reference reports instead of computing garbage.

use ipuc_core::ir::{IrError, ValueId};

/// Why the reference could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// The graph failed verification (its text is part of this one's, so
    /// it is not also a `source`: the cause prints once).
    #[error("graph rejected: {0}")]
    Graph(IrError),
    /// No weight bound for a graph parameter.
    #[error("no weight bound for parameter `{name}`")]
    MissingWeight {
        /// Parameter name.
        name: String,
    },
    /// A weight's shape differs from the parameter's.
    #[error("weight `{name}` has shape {found:?}, the graph parameter is {expected:?}")]
    WeightShape {
        /// Parameter name.
        name: String,
        /// Graph shape.
        expected: Vec<usize>,
        /// Bound shape.
        found: Vec<usize>,
    },
    /// No tensor supplied for a graph input.
    #[error("no tensor supplied for graph input `{name}`")]
    MissingInput {
        /// Input name.
        name: String,
    },
    /// A supplied tensor has the wrong shape or element count.
    #[error("input `{name}` has shape {found:?} (or a mismatched element count), the graph expects {expected:?}")]
    InputShape {
        /// Input name.
        name: String,
        /// Graph shape.
        expected: Vec<usize>,
        /// Supplied shape.
        found: Vec<usize>,
    },
    /// A package's K split does not name a matrix product of this graph
    /// with that K (the package was compiled from another model).
    #[error("the package splits op{op} over K = {k}, but this model's op{op} is {}", match found { Some(k) => format!("a matrix product with K = {k}"), None => "no matrix product".to_string() })]
    KSplit {
        /// The op the package names.
        op: u32,
        /// Its K in the package.
        k: u32,
        /// Its K here, if it is a matrix product.
        found: Option<usize>,
    },
    /// A value was read before it was computed (a malformed graph that the
    /// verifier let through).
    #[error("value {value} used before it is defined")]
    Unavailable {
        /// The value.
        value: ValueId,
    },
}

impl From<IrError> for ReferenceError {
    fn from(e: IrError) -> Self {
        ReferenceError::Graph(e)
    }
}
