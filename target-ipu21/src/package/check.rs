//! Memory rules the reader applies to each record as it parses it: segments
//! inside SRAM and disjoint, code only where it can be fetched, binding slices
//! inside their tile's tensor or scratch segments (never code, exchange
//! rows, argument blocks or runtime state) and covering the tensor, and no
//! SRAM byte holding two different tensor bytes, whatever classes the two
//! bindings are.

use alloc::vec::Vec;

use super::error::{PackageError, Result};
use super::model::{BindingKind, BindingSlice, Segment, SegmentRole, TargetFacts, TileImage};

/// Instructions are 32-bit words (`docs/facts/ipu21-target.md` §0).
const INSTRUCTION_BYTES: u32 = 4;

/// Checks one segment against the target and the previous segment of the
/// same tile (segments arrive sorted by address).
pub fn segment(
    offset: usize,
    tile: u32,
    target: &TargetFacts,
    s: &Segment,
    previous_end: Option<u64>,
) -> Result<()> {
    if s.memory_size == 0 {
        return Err(PackageError::EmptySegment {
            offset,
            tile,
            address: s.address,
        });
    }
    let memory_end = target.tile_memory_end();
    if s.address < target.tile_memory_base || s.end() > memory_end {
        return Err(PackageError::SegmentOutsideMemory {
            offset,
            tile,
            address: s.address,
            end: s.end(),
            memory_start: target.tile_memory_base,
            memory_end,
        });
    }
    if let Some(previous_end) = previous_end {
        if u64::from(s.address) < previous_end {
            return Err(PackageError::SegmentOverlap {
                offset,
                tile,
                address: s.address,
                previous_end,
            });
        }
    }
    if s.flags.is_executable() && s.end() > u64::from(target.executable_limit) {
        return Err(PackageError::ExecutableAboveLimit {
            offset,
            tile,
            address: s.address,
            end: s.end(),
            limit: target.executable_limit,
        });
    }
    let data_len = s.data.len() as u64;
    if data_len > u64::from(s.memory_size) {
        return Err(PackageError::DataLongerThanMemory {
            offset,
            tile,
            address: s.address,
            data_len,
            memory_size: s.memory_size,
        });
    }
    let data_end = u64::from(s.address) + data_len;
    if data_len > 0 && data_end > u64::from(target.loader_limit) {
        return Err(PackageError::DataAboveLoaderLimit {
            offset,
            tile,
            address: s.address,
            data_end,
            limit: target.loader_limit,
        });
    }
    Ok(())
}

/// The segment of `tile` containing `[address, address + size)`, if any.
/// Segments are sorted by address and disjoint.
pub fn containing_segment(tile: &TileImage, address: u32, size: u64) -> Option<&Segment> {
    let i = tile.segments.partition_point(|s| s.address <= address);
    let s = tile.segments.get(i.checked_sub(1)?)?;
    (u64::from(address) + size <= s.end()).then_some(s)
}

/// True when `address` can be the target of a supervisor call on `tile`.
pub fn is_code_address(tile: &TileImage, address: u32) -> bool {
    address.is_multiple_of(INSTRUCTION_BYTES)
        && containing_segment(tile, address, u64::from(INSTRUCTION_BYTES))
            .is_some_and(|s| s.flags.is_executable())
}

/// A kernel entry must be an aligned address in the executable region.
pub fn is_kernel_address(target: &TargetFacts, address: u32) -> bool {
    address.is_multiple_of(INSTRUCTION_BYTES)
        && address >= target.tile_memory_base
        && address < target.executable_limit
}

/// Checks one binding slice: its tile has an image, the range is inside the
/// tensor and inside one writable, non-executable segment of that tile
/// that holds tensors or scratch: the host writes inputs and weights
/// through bindings, so a slice over the supervisor's argument blocks,
/// exchange rows, patch tables, host descriptors or runtime state would
/// let a package's data overwrite its own program.
pub fn slice(
    offset: usize,
    tiles: &[TileImage],
    s: &BindingSlice,
    tensor_bytes: u64,
) -> Result<()> {
    let out_of_range = || PackageError::SliceOutOfRange {
        offset,
        tile: s.tile,
        tile_address: s.tile_address,
        size: s.size,
        file_offset: s.file_offset,
        tensor_bytes,
    };
    if s.size == 0
        || s.file_offset
            .checked_add(u64::from(s.size))
            .is_none_or(|end| end > tensor_bytes)
    {
        return Err(out_of_range());
    }
    let image = tiles
        .binary_search_by_key(&s.tile, |t| t.physical_tile)
        .map(|i| &tiles[i])
        .map_err(|_| PackageError::SliceTileMissing {
            offset,
            tile: s.tile,
        })?;
    let inside = containing_segment(image, s.tile_address, u64::from(s.size)).is_some_and(|seg| {
        seg.flags.contains(super::model::SegmentFlags::WRITE)
            && !seg.flags.is_executable()
            && matches!(seg.role, SegmentRole::Tensor | SegmentRole::Scratch)
    });
    if !inside {
        return Err(PackageError::SliceOutsideSegment {
            offset,
            tile: s.tile,
            tile_address: s.tile_address,
            size: s.size,
        });
    }
    Ok(())
}

/// Every byte of the tensor must be on some tile. Slices are sorted by
/// file offset, so one sweep finds the first gap.
pub fn coverage(offset: usize, slices: &[BindingSlice], tensor_bytes: u64) -> Result<()> {
    let mut covered = 0u64;
    for s in slices {
        if s.file_offset > covered {
            break;
        }
        covered = covered.max(s.file_offset + u64::from(s.size));
    }
    if covered < tensor_bytes {
        return Err(PackageError::BindingNotCovered {
            offset,
            first_missing_byte: covered,
            tensor_bytes,
        });
    }
    Ok(())
}

/// One binding slice's SRAM range and which tensor bytes it holds there.
#[derive(Clone, Copy, Debug)]
pub struct PlacedSlice {
    pub tile: u32,
    pub start: u64,
    pub end: u64,
    /// Offset of the slice's binding record (names the binding).
    pub binding_offset: usize,
    /// The binding's class.
    pub kind: BindingKind,
    /// `tile_address - file_offset`: slices of one binding with equal
    /// deltas put the same tensor byte at the same SRAM byte.
    pub delta: i128,
}

impl PlacedSlice {
    pub fn of(binding_offset: usize, kind: BindingKind, s: &BindingSlice) -> Self {
        PlacedSlice {
            tile: s.tile,
            start: u64::from(s.tile_address),
            end: u64::from(s.tile_address) + u64::from(s.size),
            binding_offset,
            kind,
            delta: i128::from(s.tile_address) - i128::from(s.file_offset),
        }
    }
}

/// Slices that share SRAM must hold the same bytes of the same binding
/// (replication of a range, or a duplicate, is fine; one SRAM byte for two
/// tensor bytes is not). Every pair of classes counts: weights stay
/// resident across inferences, so one sharing SRAM with another weight,
/// an input or an output would be overwritten; inputs are written and
/// outputs read in one host call each, and an input under an output would
/// hand the host its own pixels back. With every SRAM byte holding at most one tensor
/// byte, a binding can be no larger than the SRAM its slices cover, so
/// nothing sized from its shape exceeds what the tiles hold.
pub fn aliasing(mut placed: Vec<PlacedSlice>) -> Result<()> {
    placed.sort_unstable_by_key(|p| (p.tile, p.start, p.end));
    // Of the slices seen so far on this tile, the one reaching furthest:
    // any later slice overlapping an earlier one overlaps this one too.
    let mut reach: Option<PlacedSlice> = None;
    for p in placed {
        match reach {
            Some(o) if o.tile == p.tile && p.start < o.end => {
                if o.binding_offset != p.binding_offset || o.delta != p.delta {
                    return Err(PackageError::SlicesAlias {
                        offset: p.binding_offset,
                        tile: p.tile,
                        tile_address: p.start as u32,
                        other_binding_offset: o.binding_offset,
                        kind: p.kind.name(),
                        other_kind: o.kind.name(),
                    });
                }
                if p.end > o.end {
                    reach = Some(p);
                }
            }
            _ => reach = Some(p),
        }
    }
    Ok(())
}
