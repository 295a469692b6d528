//! What placement needs to know about one tile: its reserved ranges and the
//! logical buffers that live there, address-free.

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;
use ipuc_target::ipu21::topology::LogicalTile;

pub use crate::lower::BufferId;

/// Region class of a buffer: the lowering's [`MemoryClass`] (standard
/// buffers fill region 0's data area first, then overflow to region 1;
/// interleaved buffers use region 1 only).
pub use ipuc_target::ipu21::sram::MemoryClass as RegionClass;

/// What a reserved range holds; decides how far data must keep away from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReservedKind {
    /// Runtime state (completion word, stacks, worker areas): data may sit
    /// right next to it.
    State,
    /// Instruction words (runtime, generated supervisor code). No data may
    /// share an effective element with code, counting the 64-byte fetch
    /// look-ahead past its end (`docs/facts/ipu21-target.md` §2.10 rules 2–3).
    Code,
    /// Exchange-row tables: executed like code, so the same element rule
    /// applies (`docs/facts/ipu21-target.md` §2.10 rule 2).
    ExchangeRows,
    /// Host exchange window and other fixed buffers the runtime owns.
    HostWindow,
}

impl ReservedKind {
    /// Does data have to stay out of the effective elements this range touches?
    pub const fn isolates_elements(self) -> bool {
        matches!(self, ReservedKind::Code | ReservedKind::ExchangeRows)
    }
}

/// A fixed range of a tile's SRAM that placement must not use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedRange {
    /// For the memory map (e.g. `runtime code`, `exchange rows`).
    pub name: String,
    /// What it holds.
    pub kind: ReservedKind,
    /// Byte addresses.
    pub range: Range<u32>,
}

/// One logical buffer on one tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferRequest {
    /// Key (unique within the tile's request).
    pub key: BufferId,
    /// For reports and the memory map.
    pub name: String,
    /// Bytes of one copy (one Repeat iteration for iterated buffers).
    pub bytes: u32,
    /// Copies laid out back to back at [`BufferRequest::stride`]: the trip
    /// count for a Repeat-iterated parameter sequence, else 1.
    pub copies: u32,
    /// Start alignment in bytes (power of two; also the stride's granule).
    pub align: u32,
    /// Region class.
    pub class: RegionClass,
    /// First and last step (inclusive) at which the buffer holds data.
    /// Buffers live across Repeat iterations (iterated, carried, invariant)
    /// span the whole Repeat.
    pub first_step: u32,
    /// See [`BufferRequest::first_step`].
    pub last_step: u32,
}

impl BufferRequest {
    /// Distance between consecutive copies: one copy rounded up to the
    /// alignment, so every iteration's block starts aligned.
    pub fn stride(&self) -> Option<u32> {
        let a = self.align.max(1);
        self.bytes.div_ceil(a).checked_mul(a)
    }

    /// Bytes the allocation spans (`copies × stride`); `None` on overflow.
    pub fn span(&self) -> Option<u32> {
        self.stride()?.checked_mul(self.copies.max(1))
    }

    /// Do the two buffers hold data at a common step?
    pub fn overlaps_in_time(&self, other: &BufferRequest) -> bool {
        self.first_step <= other.last_step && other.first_step <= self.last_step
    }
}

/// Two buffers that must not share an effective SRAM element (e.g. an AMP
/// kernel's left operand and its output, `docs/facts/ipu21-target.md` §2.10
/// rule 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ElementConflict {
    /// One side.
    pub a: BufferId,
    /// The other side.
    pub b: BufferId,
}

/// Everything placement needs for one tile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlacementRequest {
    /// Logical tile.
    pub tile: LogicalTile,
    /// Ranges owned by the runtime, code and exchange tables.
    pub reserved: Vec<ReservedRange>,
    /// Buffers to place.
    pub buffers: Vec<BufferRequest>,
    /// Pairs that must live in different effective elements.
    pub conflicts: Vec<ElementConflict>,
    /// Pairs better kept in different effective elements, where the tile
    /// has room: a buffer the tile sends from and one it receives into in
    /// the same exchange phase. Sharing an element is legal, but then the
    /// scheduler must keep the two windows apart in time (§2.10 rule 5),
    /// which serialises the tile's sends and receives.
    pub apart: Vec<ElementConflict>,
}
