//! [`TileSchedule`]: the address-independent per-tile program that lowering
//! produces and that placement, exchange scheduling and emission consume.
//!
//! A schedule is an ordered list of [`Step`]s executed by every tile in BSP
//! fashion: a [`ComputeStep`] lists the kernel calls each tile makes, an
//! [`ExchangeStep`] lists the block moves between tiles (one global sync),
//! and a [`RepeatStep`] holds the loop body **once** with its trip count.
//!
//! Data lives in logical per-tile [`Buffer`]s: each has one block per tile
//! (sizes differ per tile), an alignment, a memory class and a lifetime in
//! step indices, so a placement pass can assign SRAM addresses. Nothing here
//! holds an address. Every operand and transfer endpoint is a
//! [`BufferRef`] (buffer + byte offset); inside a Repeat, an
//! [`BufferRole::Iterated`] buffer resolves through the single address
//! function [`Buffer::iteration_offset`] (`base + iteration × stride`) —
//! kernels, local copies and exchange sends alike (architecture invariant 3).
//! Carried buffers are updated in place: the body's last write targets the
//! same buffer the next iteration reads.
//!
//! Step indices are assigned in pre-order over the whole tree: a Repeat step
//! has its own index and its body steps follow it; a buffer used inside a body
//! has a lifetime within the body's index range, and every buffer live across
//! iterations (iterated, carried, invariant) spans the whole Repeat.

use alloc::string::String;
use alloc::vec::Vec;

use crate::ir::DType;
use crate::plan::TileBlock;
pub use ipuc_target::ipu21::sram::{
    MemoryClass, AMP_BUFFER_ALIGN, BASE_BUFFER_ALIGN, MAX_BUFFER_ALIGN,
};
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::kernel::Kernel;

/// Index of a buffer in [`TileSchedule::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufferId(pub u32);

impl BufferId {
    /// Index into [`TileSchedule::buffers`].
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Pre-order index of a step (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StepIndex(pub u32);

/// What a buffer holds and who fills it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BufferRole {
    /// A graph input written by the host before the run (name = IR input name).
    Input {
        /// Host-visible name.
        name: String,
    },
    /// A parameter written by the host once (name = IR parameter name).
    Parameter {
        /// Checkpoint name.
        name: String,
    },
    /// A literal from the graph (`OpKind::Constant`), written by the host once.
    Constant {
        /// Index of the constant op in the graph's op arena.
        op: u32,
    },
    /// A parameter sequence iterated by a Repeat: iteration `i` holds the
    /// parameter `names[i]`, at `base + i × stride` (see [`Buffer::iteration_stride`]).
    Iterated {
        /// Checkpoint name of each iteration's element (length = trip count).
        names: Vec<String>,
    },
    /// A graph output read back by the host (output position in the graph).
    Output {
        /// Position among the graph's outputs.
        index: u32,
    },
    /// A Repeat-carried value: read at the start of each iteration and
    /// overwritten in place by the body (the residual stream).
    Carried,
    /// An intermediate value produced by a compute or exchange step.
    Activation,
    /// Operator-internal scratch (re-layout staging, partial sums, scores).
    Scratch,
}

/// A logical per-tile allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    /// Its id (= index in [`TileSchedule::buffers`]).
    pub id: BufferId,
    /// Human-readable name (op and value), for reports.
    pub name: String,
    /// What it holds.
    pub role: BufferRole,
    /// Element type.
    pub dtype: DType,
    /// The value's 2-D view `[rows, cols]`.
    pub shape: [u32; 2],
    /// Required start alignment in bytes (power of two).
    pub align: u32,
    /// SRAM class.
    pub class: MemoryClass,
    /// First step that touches it (host-written buffers: step 0).
    pub first_step: StepIndex,
    /// Last step that touches it (outputs: the last step).
    pub last_step: StepIndex,
    /// One entry per tile holding a block, sorted by tile.
    pub blocks: Vec<TileBlock>,
    /// Trip count for [`BufferRole::Iterated`] buffers, else 1.
    pub copies: u32,
}

impl Buffer {
    /// Distance between consecutive iterations' blocks on this tile: the block
    /// rounded up to the alignment. Iterated buffers occupy
    /// `copies × iteration_stride` bytes.
    pub fn iteration_stride(&self, block: &TileBlock) -> u32 {
        let a = self.align.max(1);
        block.bytes.div_ceil(a) * a
    }

    /// The one per-iteration address function (architecture invariant 3):
    /// byte offset of `offset` within iteration `iteration`'s copy, relative to
    /// the buffer's base on `block.tile`. Non-iterated buffers ignore
    /// `iteration`.
    pub fn iteration_offset(&self, block: &TileBlock, iteration: u32, offset: u32) -> u32 {
        if self.copies > 1 {
            iteration * self.iteration_stride(block) + offset
        } else {
            offset
        }
    }

    /// Bytes to allocate on the tile of `block` (all iterations).
    pub fn allocation_bytes(&self, block: &TileBlock) -> u32 {
        self.iteration_stride(block) * self.copies.max(1)
    }

    /// The block on `tile`, if this buffer has one there.
    pub fn block_on(&self, tile: LogicalTile) -> Option<&TileBlock> {
        self.blocks
            .binary_search_by_key(&tile, |b| b.tile)
            .ok()
            .map(|i| &self.blocks[i])
    }
}

/// A place inside a buffer on one tile: `offset` bytes from the start of the
/// tile's block (of the current iteration, for iterated buffers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufferRef {
    /// The buffer.
    pub buffer: BufferId,
    /// Byte offset within the tile's block.
    pub offset: u32,
}

/// One kernel invocation on one tile.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCall {
    /// Logical tile.
    pub tile: LogicalTile,
    /// What it computes.
    pub kernel: Kernel,
    /// Operands in the kernel's documented order (output first).
    pub operands: Vec<BufferRef>,
}

/// Which planned operation a step implements (for profiles and reports).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepOrigin {
    /// Index of the op in planning order (body ops numbered within the body).
    pub op: u32,
    /// Op mnemonic and a short note, e.g. `matmul: A relayout`.
    pub label: String,
}

/// Kernel calls made by tiles between two syncs. Tiles not listed are idle.
#[derive(Clone, Debug, PartialEq)]
pub struct ComputeStep {
    /// Pre-order index.
    pub index: StepIndex,
    /// Originating op.
    pub origin: StepOrigin,
    /// Calls, sorted by tile (a tile may make several, in order).
    pub calls: Vec<KernelCall>,
}

/// A receiving end of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockDestination {
    /// Logical tile.
    pub tile: LogicalTile,
    /// Where the first run lands.
    pub at: BufferRef,
    /// Byte distance between consecutive runs at the destination.
    pub pitch: u32,
}

/// A block move: `rows` runs of `row_bytes` bytes (a multiple of 4: exchange
/// moves 32-bit words) from one tile to one or more tiles (multicast).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockTransfer {
    /// Sending tile (logical).
    pub source_tile: LogicalTile,
    /// Where the first run starts on the sender.
    pub source: BufferRef,
    /// Byte distance between consecutive runs at the source.
    pub source_pitch: u32,
    /// Number of runs.
    pub rows: u32,
    /// Bytes per run.
    pub row_bytes: u32,
    /// Receivers (never the sender itself), sorted by tile.
    pub destinations: Vec<BlockDestination>,
}

impl BlockTransfer {
    /// 32-bit words sent (once, whatever the number of receivers).
    pub fn words(&self) -> u64 {
        self.rows as u64 * (self.row_bytes / 4) as u64
    }
}

/// One exchange phase: all transfers happen between one pair of syncs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeStep {
    /// Pre-order index.
    pub index: StepIndex,
    /// Originating op.
    pub origin: StepOrigin,
    /// Transfers, sorted by source tile.
    pub transfers: Vec<BlockTransfer>,
}

/// A structured loop executed by every tile: the body appears once.
#[derive(Clone, Debug, PartialEq)]
pub struct RepeatStep {
    /// Pre-order index of the Repeat itself (body steps follow).
    pub index: StepIndex,
    /// Originating op.
    pub origin: StepOrigin,
    /// Iterations.
    pub trip_count: u32,
    /// Buffers whose iteration `i` copy is used in iteration `i`
    /// ([`BufferRole::Iterated`]).
    pub iterated: Vec<BufferId>,
    /// Carried buffers, updated in place by the body.
    pub carried: Vec<BufferId>,
    /// The body, executed `trip_count` times.
    pub body: Vec<Step>,
}

/// One step of a tile program.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Kernel calls.
    Compute(ComputeStep),
    /// Block moves between tiles.
    Exchange(ExchangeStep),
    /// Structured loop.
    Repeat(RepeatStep),
}

impl Step {
    /// Pre-order index.
    pub fn index(&self) -> StepIndex {
        match self {
            Step::Compute(s) => s.index,
            Step::Exchange(s) => s.index,
            Step::Repeat(s) => s.index,
        }
    }
}

/// The lowered program of the whole graph.
#[derive(Clone, Debug, PartialEq)]
pub struct TileSchedule {
    /// Every logical buffer, indexed by [`BufferId`].
    pub buffers: Vec<Buffer>,
    /// Top-level steps in execution order.
    pub steps: Vec<Step>,
    /// Number of step indices used (pre-order over the whole tree).
    pub step_count: u32,
    /// Graph outputs in graph-output order.
    pub outputs: Vec<OutputBinding>,
}

/// Where the host reads a graph output: the buffer and, per tile, which
/// rectangle of the output's 2-D view (`[rows, cols]`) it holds, row-major
/// from offset 0. (The buffer's own blocks may describe a different view of
/// the same bytes when the output is a reshape or head merge.)
#[derive(Clone, Debug, PartialEq)]
pub struct OutputBinding {
    /// Graph output name.
    pub name: String,
    /// The buffer holding it.
    pub buffer: BufferId,
    /// Element type.
    pub dtype: DType,
    /// The output's 2-D view.
    pub shape: [u32; 2],
    /// Per-tile rectangles (sorted by tile; replicated outputs list every copy).
    pub blocks: Vec<TileBlock>,
}

impl TileSchedule {
    /// The buffer with id `id`, if any.
    pub fn buffer(&self, id: BufferId) -> Option<&Buffer> {
        self.buffers.get(id.index())
    }

    /// Visits every step in pre-order (Repeat before its body), with the
    /// enclosing Repeat (if any).
    pub fn visit<'a>(&'a self, mut f: impl FnMut(&'a Step, Option<&'a RepeatStep>)) {
        fn walk<'a>(
            steps: &'a [Step],
            parent: Option<&'a RepeatStep>,
            f: &mut impl FnMut(&'a Step, Option<&'a RepeatStep>),
        ) {
            for s in steps {
                f(s, parent);
                if let Step::Repeat(r) = s {
                    walk(&r.body, Some(r), f);
                }
            }
        }
        walk(&self.steps, None, &mut f);
    }
}
