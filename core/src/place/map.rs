//! Placement output: where each buffer lives on a tile, plus the data the
//! memory-map report draws (reserved ranges, allocations with lifetimes,
//! peak use).

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

use super::request::{BufferKey, RegionClass, ReservedKind};

/// A reserved range as placed on the map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedEntry {
    /// Range name.
    pub name: String,
    /// What it holds.
    pub kind: ReservedKind,
    /// The bytes it occupies.
    pub range: Range<u32>,
    /// The bytes data must keep away from (element-aligned for code and rows).
    pub blocked: Range<u32>,
}

/// One placed buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// Buffer key.
    pub key: BufferKey,
    /// Buffer name.
    pub name: String,
    /// Class it was placed for.
    pub class: RegionClass,
    /// All copies: `range.start + i × stride` is copy `i`.
    pub range: Range<u32>,
    /// Distance between copies (the Repeat's per-iteration stride).
    pub stride: u32,
    /// Number of copies (Repeat trip count for iterated buffers, else 1).
    pub copies: u32,
    /// Bytes of one copy without padding.
    pub bytes: u32,
    /// First step holding data.
    pub first_step: u32,
    /// Last step holding data (inclusive).
    pub last_step: u32,
}

impl Allocation {
    /// Address of copy `iteration` (iteration 0 for single-copy buffers):
    /// the one per-iteration address function `base + iteration × stride`.
    pub fn copy_address(&self, iteration: u32) -> Option<u32> {
        if iteration >= self.copies.max(1) {
            return None;
        }
        Some(self.range.start + iteration * self.stride)
    }
}

/// The largest number of bytes live at once on a tile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryPeak {
    /// Reserved (blocked) bytes plus allocations live at `step`.
    pub bytes: u32,
    /// The step where the peak occurs.
    pub step: u32,
}

/// Placement of one tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TilePlacement {
    /// Logical tile.
    pub tile: u32,
    /// Reserved ranges in address order.
    pub reserved: Vec<ReservedEntry>,
    /// Allocations sorted by key.
    pub allocations: Vec<Allocation>,
    /// Peak live bytes.
    pub peak: MemoryPeak,
}

impl TilePlacement {
    /// The allocation of `key`.
    pub fn allocation(&self, key: BufferKey) -> Option<&Allocation> {
        self.allocations
            .binary_search_by_key(&key, |a| a.key)
            .ok()
            .map(|i| &self.allocations[i])
    }

    /// Start address of `key` (copy 0).
    pub fn address(&self, key: BufferKey) -> Option<u32> {
        self.allocation(key).map(|a| a.range.start)
    }

    /// Allocations in address order (for the memory map).
    pub fn by_address(&self) -> Vec<&Allocation> {
        let mut v: Vec<&Allocation> = self.allocations.iter().collect();
        v.sort_by_key(|a| (a.range.start, a.range.end, a.key));
        v
    }

    /// Highest allocated address + 1 in `window`, if anything lives there.
    pub fn high_water(&self, window: &Range<u32>) -> Option<u32> {
        self.allocations
            .iter()
            .filter(|a| a.range.start >= window.start && a.range.start < window.end)
            .map(|a| a.range.end)
            .max()
    }
}
