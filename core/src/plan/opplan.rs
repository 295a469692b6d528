//! [`OpPlan`]: one candidate implementation of one IR op, described once.
//!
//! Cost ([`OpPlan::cost`]), the memory estimator (operand, output and scratch
//! allocations) and lowering (the stages, verbatim) all read this object;
//! nothing downstream re-derives a decision it encodes (architecture
//! invariant 4). Re-layouts of operands that arrive in a different layout are
//! derived once, by [`super::relayout`], from the operand's current layout and
//! [`OperandPlan::layout`].

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::cost::{exchange_phase_cycles, kernel_cycles, Cycles};
use super::layout::Layout;
use crate::ir::{DType, OpId};
use crate::plan::TileBlock;
use ipuc_target::ipu21::sram::MemoryClass;
use ipuc_target::kernel::Kernel;

/// A data slot an op's stages refer to; lowering binds slots to buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Slot {
    /// Operand `i` in its required layout ([`OperandPlan::layout`]).
    Operand(u8),
    /// The op's result.
    Output,
    /// Scratch allocation `i` of [`OpPlan::scratch`].
    Scratch(u8),
}

/// A byte position in a slot on one tile (within that tile's block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlotRef {
    /// Which slot.
    pub slot: Slot,
    /// Byte offset within the tile's block.
    pub offset: u32,
}

/// One planned kernel call.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCall {
    /// Logical tile (raw: the planner computes tile ids as layout offsets; checked into `LogicalTile` where blocks and schedules are built).
    pub tile: u32,
    /// What it computes.
    pub kernel: Kernel,
    /// Operands in the kernel's order (output first).
    pub operands: Vec<SlotRef>,
}

/// A receiving end of a planned transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedDestination {
    /// Logical tile (raw: the planner computes tile ids as layout offsets; checked into `LogicalTile` where blocks and schedules are built).
    pub tile: u32,
    /// Where the first run lands.
    pub at: SlotRef,
    /// Byte distance between runs.
    pub pitch: u32,
}

/// A planned block move (`rows` runs of `row_bytes`, word multiples).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedTransfer {
    /// Sender (raw: the planner computes tile ids as layout offsets; checked into `LogicalTile` where blocks and schedules are built).
    pub source_tile: u32,
    /// First run on the sender.
    pub source: SlotRef,
    /// Byte distance between runs on the sender.
    pub source_pitch: u32,
    /// Runs.
    pub rows: u32,
    /// Bytes per run.
    pub row_bytes: u32,
    /// Receivers (multicast), never the sender.
    pub destinations: Vec<PlannedDestination>,
}

/// One BSP step of an op.
#[derive(Clone, Debug, PartialEq)]
pub enum Stage {
    /// Kernel calls (sorted by tile).
    Compute(Vec<PlannedCall>),
    /// Block moves in one exchange phase.
    Exchange(Vec<PlannedTransfer>),
}

impl Stage {
    /// Cycles of this step: the slowest tile's kernels, or the busiest
    /// endpoint's words plus the phase overhead.
    pub fn cycles(&self) -> Cycles {
        match self {
            Stage::Compute(calls) => Cycles {
                compute: max_tile_cycles(calls),
                exchange: 0,
            },
            Stage::Exchange(transfers) => Cycles {
                compute: 0,
                exchange: exchange_phase_cycles(max_endpoint_words(transfers)),
            },
        }
    }
}

/// Slowest tile's total kernel cycles (calls sorted by tile).
pub fn max_tile_cycles(calls: &[PlannedCall]) -> u64 {
    let mut best = 0u64;
    let mut i = 0;
    while i < calls.len() {
        let tile = calls[i].tile;
        let mut sum = 0;
        while i < calls.len() && calls[i].tile == tile {
            sum += kernel_cycles(&calls[i].kernel);
            i += 1;
        }
        best = best.max(sum);
    }
    best
}

/// Busiest endpoint: max over tiles of words sent (once per multicast) or
/// received, plus [`super::charges::EXCHANGE_PIECE_EVENTS`] per piece it sends or
/// receives (a strided transfer moves one piece per row), in exchange
/// events (one word each).
pub fn max_endpoint_words(transfers: &[PlannedTransfer]) -> u64 {
    let n = super::layout::TILE_COUNT as usize;
    let mut sent = alloc::vec![0u64; n];
    let mut recv = alloc::vec![0u64; n];
    for t in transfers {
        let contiguous =
            t.source_pitch == t.row_bytes && t.destinations.iter().all(|d| d.pitch == t.row_bytes);
        let pieces = if contiguous { 1 } else { u64::from(t.rows) };
        let w = t.rows as u64 * (t.row_bytes / 4) as u64
            + pieces * u64::from(super::charges::EXCHANGE_PIECE_EVENTS);
        if let Some(s) = sent.get_mut(t.source_tile as usize) {
            *s += w;
        }
        for d in &t.destinations {
            if let Some(r) = recv.get_mut(d.tile as usize) {
                *r += w;
            }
        }
    }
    sent.iter().chain(recv.iter()).copied().max().unwrap_or(0)
}

/// How an operand must be laid out for this plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperandPlan {
    /// Layout the stages read.
    pub layout: Layout,
    /// For a parameter (or iterated parameter) not yet stored: where the host
    /// stores it. `None` stores it directly in `layout` (resident); otherwise
    /// the plan re-lays it out into `layout` every time it runs (streamed).
    pub storage: Option<Layout>,
    /// SRAM class the stages need for this operand.
    pub class: MemoryClass,
}

/// An op-internal allocation, live for the whole op.
#[derive(Clone, Debug, PartialEq)]
pub struct ScratchPlan {
    /// Short name for reports (`partials`, `scores`, …).
    pub name: &'static str,
    /// Element type.
    pub dtype: DType,
    /// Per-tile blocks (sorted by tile).
    pub blocks: Arc<Vec<TileBlock>>,
    /// SRAM class.
    pub class: MemoryClass,
    /// Alignment.
    pub align: u32,
}

impl ScratchPlan {
    /// Largest block in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| b.bytes as u64)
            .max()
            .unwrap_or(0)
    }
}

/// Which implementation family a plan belongs to (for reports and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanFamily {
    /// No data movement: the output is operand 0's buffer seen differently.
    View,
    /// Data movement only (slice, concat, im2col).
    Move,
    /// Element-wise or row-wise kernel on the output layout's blocks.
    Local {
        /// Tiles used.
        tiles: u32,
    },
    /// GEMM over a `rows × cols × k` tile grid.
    Gemm {
        /// Row parts of M.
        rows: u32,
        /// Column parts of N.
        cols: u32,
        /// Parts of K (> 1 adds a reduce-scatter).
        k: u32,
        /// Weights streamed from balanced storage (else resident, replicated).
        streamed: bool,
        /// Weights in interleaved memory.
        interleaved: bool,
    },
    /// Attention with `q_parts` query blocks per head group.
    Attention {
        /// Query parts per head.
        q_parts: u32,
        /// Key/value blocks per head (1: every query tile holds all keys;
        /// more: partials combined on the first key block's tile).
        key_parts: u32,
    },
}

/// One candidate implementation of one op.
#[derive(Clone, Debug, PartialEq)]
pub struct OpPlan {
    /// The op.
    pub op: OpId,
    /// Implementation family.
    pub family: PlanFamily,
    /// One entry per IR operand.
    pub operands: Vec<OperandPlan>,
    /// Result layout.
    pub output: Layout,
    /// Result class.
    pub output_class: MemoryClass,
    /// The result is operand 0's buffer (no allocation, no stages).
    pub output_is_view: bool,
    /// Op-internal allocations.
    pub scratch: Vec<ScratchPlan>,
    /// Steps in order.
    pub stages: Vec<Stage>,
    /// Cost of the stages (operand re-layouts are costed when attached).
    pub cost: Cycles,
    /// Human-readable summary.
    pub summary: String,
}

impl OpPlan {
    /// Sum of the stages' cycles.
    pub fn stage_cost(stages: &[Stage]) -> Cycles {
        stages
            .iter()
            .fold(Cycles::default(), |c, s| c.plus(s.cycles()))
    }
}
