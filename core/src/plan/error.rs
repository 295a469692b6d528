//! Planning errors.

use alloc::boxed::Box;
use alloc::string::String;
use core::fmt;

use super::layout::LayoutError;
use super::memory::MemoryRejection;
use crate::ir::{Graph, OpId};

/// The op an error is about: its id, and the model's name for it (the
/// graph builder's label, e.g. `embeddings.patch_embedding`) when it has
/// one, so that a message names what the user wrote, not an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRef {
    /// The op.
    pub id: OpId,
    /// Its label in the graph.
    pub label: Option<String>,
}

impl OpRef {
    /// `id` with its label in `graph`.
    pub fn of(graph: &Graph, id: OpId) -> Self {
        OpRef {
            id,
            label: graph.label(id).map(String::from),
        }
    }
}

impl OpRef {
    /// The op with its mnemonic: `` `label` (matmul, op 6) `` or `op 6 (matmul)`.
    fn with_mnemonic<'a>(&'a self, mnemonic: &'a str) -> OpWithMnemonic<'a> {
        OpWithMnemonic(self, mnemonic)
    }
}

struct OpWithMnemonic<'a>(&'a OpRef, &'a str);

impl fmt::Display for OpWithMnemonic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let OpWithMnemonic(op, mnemonic) = self;
        match &op.label {
            Some(label) => write!(f, "`{label}` ({mnemonic}, op {})", op.id.index()),
            None => write!(f, "op {} ({mnemonic})", op.id.index()),
        }
    }
}

impl fmt::Display for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.label {
            Some(label) => write!(f, "`{label}` (op {})", self.id.index()),
            None => write!(f, "op {}", self.id.index()),
        }
    }
}

/// Result alias for planning.
pub type PlanResult<T> = Result<T, PlanError>;

/// Why a graph could not be planned.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanError {
    /// The graph uses something the planner has no implementation for.
    Unsupported {
        /// The op.
        op: OpRef,
        /// Its mnemonic.
        op_name: &'static str,
        /// What is missing.
        reason: &'static str,
    },
    /// A value id, op id or region id that the graph does not have.
    MalformedGraph {
        /// What was looked up.
        what: &'static str,
    },
    /// A block move whose run is not a whole number of 32-bit words.
    UnalignedTransfer {
        /// The op being planned.
        op: OpRef,
        /// Bytes per run.
        row_bytes: u32,
    },
    /// A layout that does not fit the machine.
    Layout {
        /// The op being planned.
        op: OpRef,
        /// Why.
        error: LayoutError,
    },
    /// Every candidate exceeded the per-tile memory budget; the report is the
    /// lowest-peak rejection seen.
    OutOfMemory(Box<MemoryRejection>),
    /// An op had no candidate at all (e.g. shapes too small for any layout).
    NoCandidate {
        /// The op.
        op: OpRef,
        /// Its mnemonic.
        op_name: &'static str,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported {
                op,
                op_name,
                reason,
            } => write!(f, "{}: unsupported: {reason}", op.with_mnemonic(op_name)),
            Self::MalformedGraph { what } => write!(f, "malformed graph: unknown {what}"),
            Self::UnalignedTransfer { op, row_bytes } => {
                write!(
                    f,
                    "{op}: block move of {row_bytes} bytes per run is not a multiple of 4"
                )
            }
            Self::Layout { op, error } => write!(f, "{op}: {error}"),
            Self::OutOfMemory(r) => write!(f, "{r}"),
            Self::NoCandidate { op, op_name } => {
                write!(
                    f,
                    "{}: no candidate implementation",
                    op.with_mnemonic(op_name)
                )
            }
        }
    }
}

impl core::error::Error for PlanError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DType, GraphBuilder, TensorType};
    use alloc::format;
    use alloc::string::ToString;

    /// Errors name an op by the model's label when it has one.
    #[test]
    fn ops_are_named_by_their_labels() {
        let mut b = GraphBuilder::new();
        let x = b.input("x", TensorType::new(DType::F32, [2, 4])).unwrap();
        let y = b.add(x, x).unwrap();
        let z = b.add(y, y).unwrap();
        b.label(y, "embeddings.patch_embedding").unwrap();
        b.output("z", z).unwrap();
        let g = b.finish().unwrap();
        let op = |v| g.defining_op(v).unwrap();
        let named = PlanError::NoCandidate {
            op: OpRef::of(&g, op(y)),
            op_name: "add",
        };
        assert_eq!(
            named.to_string(),
            format!(
                "`embeddings.patch_embedding` (add, op {}): no candidate implementation",
                op(y).index()
            )
        );
        let unnamed = OpRef::of(&g, op(z));
        assert_eq!(unnamed.to_string(), format!("op {}", op(z).index()));
    }
}
