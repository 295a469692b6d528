//! What the planner decides per op: [`PlannedOp`] (implementation,
//! re-layouts, storage choices) and, for a Repeat, its [`BodyPlan`] — the
//! vocabulary lowering reads. (The two types nest, so they live together.)

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::cost::Cycles;
use super::layout::Layout;
use super::memory::Allocation;
use super::opplan::OpPlan;
use crate::ir::{OpId, ValueId};
use ipuc_target::ipu21::sram::MemoryClass;

/// An operand re-laid out into a staging buffer before its op runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperandRelayout {
    /// Operand position.
    pub operand: u8,
    /// Where the value is.
    pub from: Layout,
    /// Where the op reads it.
    pub to: Layout,
    /// Bytes per element.
    pub elem: u32,
}

/// A source value whose storage this op chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageChoice {
    /// The value.
    pub value: ValueId,
    /// Its storage layout.
    pub layout: Layout,
    /// SRAM class.
    pub class: MemoryClass,
}

/// One planned op of a region, as lowering reads it.
#[derive(Clone, Debug)]
pub struct PlannedOp {
    /// The op.
    pub op: OpId,
    /// Its implementation (absent for a Repeat).
    pub plan: Option<Arc<OpPlan>>,
    /// Operand re-layouts to run first.
    pub relayouts: Vec<OperandRelayout>,
    /// Storage decided here for source operands.
    pub storage: Vec<StorageChoice>,
    /// The planned body, for a Repeat.
    pub repeat: Option<Arc<BodyPlan>>,
}

/// A planned Repeat body, ready to attach to any outer state with the same
/// boundary.
#[derive(Clone, Debug)]
pub struct BodyPlan {
    /// Body ops in order.
    pub ops: Vec<PlannedOp>,
    /// Cycles of one iteration (including carried write-backs).
    pub cycles: Cycles,
    /// Layout of each carried buffer.
    pub carried_layouts: Vec<Layout>,
    /// Layout of each invariant argument (as the boundary gave it).
    pub invariant_layouts: Vec<Layout>,
    /// Storage of each iterated argument (one allocation, `trip_count` copies).
    pub iterated: Vec<(ValueId, Arc<Allocation>)>,
    /// Per-tile bytes of `iterated` (all copies): what the Repeat adds to
    /// the enclosing region's statics, summed once.
    pub iterated_usage: Arc<Vec<u64>>,
    /// Interleaved-class part of `iterated_usage` (`None`: no iterated
    /// storage is interleaved).
    pub iterated_il: Option<Arc<Vec<u64>>>,
    /// Exact per-tile peak over the body's moments (iterated storage and
    /// carried buffers included).
    pub peak_tile: Arc<Vec<u64>>,
    /// `peak_tile` without the iterated storage: what the body adds to the
    /// enclosing region's dynamic usage (the iterated storage becomes static
    /// there).
    pub dyn_tile: Arc<Vec<u64>>,
    /// Interleaved-class part of `dyn_tile`.
    pub dyn_il_tile: Arc<Vec<u64>>,
    /// Max of `peak_tile`.
    pub peak: u64,
    /// Estimated image bytes the body's code, argument blocks and rows add
    /// to each tile (emitted once, whatever the trip count), beyond
    /// `code_all` (`plan::code`).
    pub code_tiles: Arc<Vec<u64>>,
    /// Estimated image bytes the body adds to every tile.
    pub code_all: u64,
}
