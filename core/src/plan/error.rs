//! Planning errors.

use alloc::boxed::Box;
use core::fmt;

use super::layout::LayoutError;
use super::memory::MemoryRejection;
use crate::ir::OpId;

/// Result alias for planning.
pub type PlanResult<T> = Result<T, PlanError>;

/// Why a graph could not be planned.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanError {
    /// The graph uses something the planner has no implementation for.
    Unsupported {
        /// The op.
        op: OpId,
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
        op: OpId,
        /// Bytes per run.
        row_bytes: u32,
    },
    /// A layout that does not fit the machine.
    Layout {
        /// The op being planned.
        op: OpId,
        /// Why.
        error: LayoutError,
    },
    /// Every candidate exceeded the per-tile memory budget; the report is the
    /// lowest-peak rejection seen.
    OutOfMemory(Box<MemoryRejection>),
    /// An op had no candidate at all (e.g. shapes too small for any layout).
    NoCandidate {
        /// The op.
        op: OpId,
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
            } => write!(f, "op {op:?} ({op_name}): unsupported: {reason}"),
            Self::MalformedGraph { what } => write!(f, "malformed graph: unknown {what}"),
            Self::UnalignedTransfer { op, row_bytes } => {
                write!(
                    f,
                    "op {op:?}: block move of {row_bytes} bytes per run is not a multiple of 4"
                )
            }
            Self::Layout { op, error } => write!(f, "op {op:?}: {error}"),
            Self::OutOfMemory(r) => write!(f, "{r}"),
            Self::NoCandidate { op, op_name } => {
                write!(f, "op {op:?} ({op_name}): no candidate implementation")
            }
        }
    }
}

impl core::error::Error for PlanError {}
