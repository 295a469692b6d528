//! The Repeat frame on the supervisor stack (docs/facts/ipu21-target.md §2.9):
//! word 0 holds the remaining trip count (`count − i` during iteration `i`, the
//! value the Repeat word patcher reads); word `k` (k ≥ 1) holds the current
//! base of the k-th iterated buffer on this tile, advanced by that buffer's
//! [`Buffer::iteration_stride`] at the end of every iteration. Those bases are
//! the one per-iteration address function every body consumer reads.

use alloc::vec::Vec;

use super::{Buffer, BufferId, RepeatStep, TileSchedule};
use ipuc_target::ipu21::topology::LogicalTile;

/// One tile's frame layout for one Repeat.
pub(crate) struct RepeatFrame {
    /// Trip count.
    pub trip_count: u32,
    /// `(buffer, stride)` per pointer slot; slot `k + 1` holds entry `k`.
    pointers: Vec<(BufferId, u32)>,
}

impl RepeatFrame {
    pub fn new(schedule: &TileSchedule, repeat: &RepeatStep, tile: LogicalTile) -> Self {
        let pointers = repeat
            .iterated
            .iter()
            .filter_map(|&id| schedule.buffer(id))
            .filter_map(|b: &Buffer| b.block_on(tile).map(|blk| (b.id, b.iteration_stride(blk))))
            .collect();
        RepeatFrame {
            trip_count: repeat.trip_count,
            pointers,
        }
    }

    /// Frame size: a multiple of 8 bytes (the stack's alignment).
    pub fn bytes(&self) -> u32 {
        let words = 1 + self.pointers.len() as u32;
        (4 * words).div_ceil(8_u32) * 8
    }

    /// Word slot holding `buffer`'s current base, if it is iterated here.
    pub fn slot_of(&self, buffer: BufferId) -> Option<u32> {
        self.pointers
            .iter()
            .position(|&(b, _)| b == buffer)
            .map(|k| k as u32 + 1)
    }

    /// Per-iteration stride of `buffer`'s slot, if it is iterated here.
    pub fn stride_of(&self, buffer: BufferId) -> Option<u32> {
        self.pointers
            .iter()
            .find(|&&(b, _)| b == buffer)
            .map(|&(_, s)| s)
    }

    /// `(slot, buffer)` of every pointer.
    pub fn slots(&self) -> impl Iterator<Item = (u32, BufferId)> + '_ {
        self.pointers
            .iter()
            .enumerate()
            .map(|(k, &(b, _))| (k as u32 + 1, b))
    }

    /// `(slot, stride bytes)` of every pointer.
    pub fn strides(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.pointers
            .iter()
            .enumerate()
            .map(|(k, &(_, s))| (k as u32 + 1, s))
    }
}
