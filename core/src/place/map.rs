//! Placement output: where each buffer lives on a tile, plus the data the
//! memory-map report draws (reserved ranges, allocations with lifetimes,
//! peak use).

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

use super::error::{PlaceError, PlaceResult};
use super::regions::first_fit;
use super::regions::{class_windows, merge};
use super::request::{BufferId, RegionClass, ReservedKind};
use ipuc_target::ipu21::sram::TILE_MEMORY_BUDGET;
use ipuc_target::ipu21::topology::LogicalTile;

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
    pub key: BufferId,
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

/// A constant data block live for the whole program (e.g. a tile's patch
/// data), placed after the buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstantBlock {
    /// For the memory map.
    pub name: String,
    /// Its bytes.
    pub range: Range<u32>,
}

/// Placement of one tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TilePlacement {
    /// Logical tile.
    pub tile: LogicalTile,
    /// Reserved ranges in address order.
    pub reserved: Vec<ReservedEntry>,
    /// Allocations sorted by key.
    pub allocations: Vec<Allocation>,
    /// Constant blocks live at every step, in placement order.
    pub constants: Vec<ConstantBlock>,
    /// Peak charged bytes: reserved (blocked) bytes, constant blocks and
    /// the buffers live at `peak.step`.
    pub peak: MemoryPeak,
}

impl TilePlacement {
    /// Places a constant block of `bytes` (aligned to `align`, a power of
    /// two) live at every step: the lowest free range of the standard
    /// windows that no buffer, reserved range or earlier constant uses. It
    /// is charged at every step, so the peak grows by `bytes`; a peak over
    /// [`TILE_MEMORY_BUDGET`] is [`PlaceError::OverBudget`] and no room is
    /// [`PlaceError::NoRoom`] (the block gets key `u32::MAX` there).
    pub fn add_constant(&mut self, name: &str, bytes: u32, align: u32) -> PlaceResult<Range<u32>> {
        let tile = self.tile;
        if !align.is_power_of_two() {
            return Err(PlaceError::BadAlignment {
                tile,
                buffer: BufferId(u32::MAX),
                align,
            });
        }
        let blocked = merge(self.reserved.iter().map(|r| r.blocked.clone()).collect());
        let reserved_bytes: u32 = blocked.iter().map(|r| r.end - r.start).sum();
        let charged = self.peak.bytes.saturating_add(bytes);
        if charged > TILE_MEMORY_BUDGET {
            let mut live: Vec<(String, u32)> = self
                .allocations
                .iter()
                .filter(|a| a.first_step <= self.peak.step && self.peak.step <= a.last_step)
                .map(|a| (a.name.clone(), a.range.end - a.range.start))
                .chain(
                    self.constants
                        .iter()
                        .map(|c| (c.name.clone(), c.range.end - c.range.start)),
                )
                .chain(core::iter::once((String::from(name), bytes)))
                .collect();
            live.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            return Err(PlaceError::OverBudget {
                tile,
                step: self.peak.step,
                charged,
                reserved: reserved_bytes,
                budget: TILE_MEMORY_BUDGET,
                live,
            });
        }
        let occupied = merge(
            self.allocations
                .iter()
                .map(|a| a.range.clone())
                .chain(self.constants.iter().map(|c| c.range.clone()))
                .collect(),
        );
        let windows = class_windows(RegionClass::Standard, &blocked);
        match first_fit(&windows, &occupied, bytes, align) {
            Ok(start) => {
                let range = start..start + bytes;
                self.constants.push(ConstantBlock {
                    name: String::from(name),
                    range: range.clone(),
                });
                self.peak.bytes = charged;
                Ok(range)
            }
            Err(largest_free) => Err(PlaceError::NoRoom {
                tile,
                buffer: BufferId(u32::MAX),
                name: String::from(name),
                class: RegionClass::Standard,
                bytes_needed: bytes,
                largest_free,
                live_bytes: occupied.iter().map(|r| r.end - r.start).sum(),
                first_step: 0,
            }),
        }
    }

    /// The allocation of `key`.
    pub fn allocation(&self, key: BufferId) -> Option<&Allocation> {
        self.allocations
            .binary_search_by_key(&key, |a| a.key)
            .ok()
            .map(|i| &self.allocations[i])
    }

    /// Start address of `key` (copy 0).
    pub fn address(&self, key: BufferId) -> Option<u32> {
        self.allocation(key).map(|a| a.range.start)
    }

    /// Allocations in address order (for the memory map).
    pub fn by_address(&self) -> Vec<&Allocation> {
        let mut v: Vec<&Allocation> = self.allocations.iter().collect();
        v.sort_by_key(|a| (a.range.start, a.range.end, a.key));
        v
    }

    /// The highest address a tile's linked image may end at: every byte of
    /// region 0 below the lowest data (buffers, constant blocks, the runtime
    /// state) is free for code, less the element that data shares and the
    /// 64-byte supervisor fetch look-ahead (`docs/facts/ipu21-target.md`
    /// §1.2, §2.10 rules 2–3). At least the planner's code estimate fits,
    /// as placement kept those elements free.
    pub fn code_limit(&self) -> u32 {
        use ipuc_target::ipu21::sram::{EXECUTABLE_MEMORY_LIMIT, SUPERVISOR_FETCH_LOOKAHEAD};
        let lowest = self
            .allocations
            .iter()
            .map(|a| a.range.clone())
            .chain(self.constants.iter().map(|c| c.range.clone()))
            .chain(
                self.reserved
                    .iter()
                    .filter(|r| !r.kind.isolates_elements())
                    .map(|r| r.range.clone()),
            )
            .filter(|r| !r.is_empty())
            .map(|r| r.start)
            .min()
            .unwrap_or(EXECUTABLE_MEMORY_LIMIT)
            .min(EXECUTABLE_MEMORY_LIMIT);
        let floor = if lowest >= EXECUTABLE_MEMORY_LIMIT {
            EXECUTABLE_MEMORY_LIMIT
        } else {
            super::regions::element_bounds(lowest).start
        };
        floor.saturating_sub(SUPERVISOR_FETCH_LOOKAHEAD)
    }

    /// Checks that a linked image of `image_bytes` (from the load address)
    /// ends at or below [`TilePlacement::code_limit`]; otherwise
    /// [`PlaceError::CodeDoesNotFit`] naming the tile, the bytes needed and
    /// the bytes free.
    pub fn check_code(&self, image_bytes: u32) -> PlaceResult<()> {
        use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;
        let limit = self.code_limit();
        let free = limit.saturating_sub(APPLICATION_LOAD_BASE);
        if image_bytes > free {
            return Err(PlaceError::CodeDoesNotFit {
                tile: self.tile,
                image_bytes,
                free_bytes: free,
                limit,
            });
        }
        Ok(())
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
