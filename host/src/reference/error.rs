//! Errors the reference reports instead of computing garbage.

use std::fmt;

use ipuc_core::ir::{IrError, ValueId};

/// Why the reference could not run.
#[derive(Debug)]
pub enum ReferenceError {
    /// The graph failed verification.
    Graph(IrError),
    /// No weight bound for a graph parameter.
    MissingWeight {
        /// Parameter name.
        name: String,
    },
    /// A weight's shape differs from the parameter's.
    WeightShape {
        /// Parameter name.
        name: String,
        /// Graph shape.
        expected: Vec<usize>,
        /// Bound shape.
        found: Vec<usize>,
    },
    /// No tensor supplied for a graph input.
    MissingInput {
        /// Input name.
        name: String,
    },
    /// A supplied tensor has the wrong shape or element count.
    InputShape {
        /// Input name.
        name: String,
        /// Graph shape.
        expected: Vec<usize>,
        /// Supplied shape.
        found: Vec<usize>,
    },
    /// A value was read before it was computed (a malformed graph that the
    /// verifier let through).
    Unavailable {
        /// The value.
        value: ValueId,
    },
}

impl fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReferenceError::Graph(e) => write!(f, "graph rejected: {e}"),
            ReferenceError::MissingWeight { name } => write!(f, "no weight bound for parameter `{name}`"),
            ReferenceError::WeightShape { name, expected, found } => write!(
                f,
                "weight `{name}` has shape {found:?}, the graph parameter is {expected:?}"
            ),
            ReferenceError::MissingInput { name } => write!(f, "no tensor supplied for graph input `{name}`"),
            ReferenceError::InputShape { name, expected, found } => write!(
                f,
                "input `{name}` has shape {found:?} (or a mismatched element count), the graph expects {expected:?}"
            ),
            ReferenceError::Unavailable { value } => write!(f, "value {value} used before it is defined"),
        }
    }
}

impl std::error::Error for ReferenceError {}

impl From<IrError> for ReferenceError {
    fn from(e: IrError) -> Self {
        ReferenceError::Graph(e)
    }
}
