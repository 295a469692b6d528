//! Patch data placed as data: each tile's Repeat tables and sharing lists
//! as one block at the top of the elements the planner charged for its
//! image (when it fits there) or as a constant block in its data region;
//! the check that a linked image ends below its tile's data; and the
//! zero-initialised data segments covering a tile's placed buffers.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::error::PatchDataDoesNotFit;
use crate::emit::{program_tiles, PatchAddresses, PatchData};
use crate::lower::{BufferRole, TileSchedule};
use crate::place::{
    element_bounds, place_tile, support_reserved, PlaceError, PlacementRequest, TilePlacement,
};
use crate::rows::ExchangePlan;
use ipuc_target::ipu21::sram::{
    layout, APPLICATION_LOAD_BASE, BASE_BUFFER_ALIGN, EXECUTABLE_MEMORY_LIMIT,
    SUPERVISOR_FETCH_LOOKAHEAD,
};
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::lookup::LookupMap;
use ipuc_target::package::{Segment, SegmentRole};

/// Patch-data block bases by logical tile.
#[derive(Clone, Debug, Default)]
pub struct PatchBases {
    /// Looked up by tile only (`PatchAddresses::patch_base`).
    bases: LookupMap<LogicalTile, u32>,
    /// Largest block on one tile.
    pub largest: u32,
    /// Tiles whose block sits at the top of their code reservation: the
    /// address their image must end at or below (block start less the
    /// 64-byte fetch look-ahead).
    pub code_ceiling: BTreeMap<LogicalTile, u32>,
    /// Blocks placed in the code reservation / in the data region.
    pub in_reservation: usize,
    /// Blocks placed in the data region.
    pub in_data: usize,
}

/// [`PlaceError::CodeDoesNotFit`] unless an image of
/// `image_bytes` ends at or below `limit`.
pub fn check_below(tile: LogicalTile, image_bytes: u32, limit: u32) -> Result<(), PlaceError> {
    let free = limit.saturating_sub(APPLICATION_LOAD_BASE);
    if image_bytes > free {
        return Err(PlaceError::CodeDoesNotFit {
            tile,
            image_bytes,
            free_bytes: free,
            limit,
        });
    }
    Ok(())
}

impl PatchAddresses for PatchBases {
    fn patch_base(&self, tile: LogicalTile) -> Option<u32> {
        self.bases.get(&tile).copied()
    }
}

/// Places every tile's patch data ([`PatchData::for_tile`]) as a constant
/// block in its data region; tiles that hold no buffer get a placement of
/// their own. Fails with placement's typed error (budget or room) naming
/// the tile.
pub fn place_patch_data(
    schedule: &TileSchedule,
    exchange: &ExchangePlan,
    placements: &mut Vec<TilePlacement>,
    code_estimate: &dyn Fn(LogicalTile) -> u32,
) -> Result<PatchBases, PatchDataDoesNotFit> {
    let mut blocks = Vec::new();
    for tile in program_tiles(schedule) {
        let data = PatchData::for_tile(exchange, tile.physical());
        if data.bytes() > 0 {
            blocks.push((tile, data));
        }
    }
    let largest = blocks.iter().map(|(_, d)| d.bytes()).max().unwrap_or(0);
    let mut bases = LookupMap::default();
    let mut code_ceiling = BTreeMap::new();
    let (mut in_reservation, mut in_data) = (0, 0);
    for (tile, data) in blocks {
        // First choice: the top of the elements reserved for the image,
        // above the planner's estimate and its fetch look-ahead: no budget
        // beyond what the planner charged. The estimate's rows part is a
        // model, so an image may still end past it: `back::link` then
        // moves the block to the data region.
        if let Some(base) = reservation_base(code_estimate(tile), data.bytes()) {
            bases.insert(tile, base);
            code_ceiling.insert(tile, base - SUPERVISOR_FETCH_LOOKAHEAD);
            in_reservation += 1;
            continue;
        }
        in_data += 1;
        let base = place_in_data(tile, &data, largest, placements, code_estimate)?;
        bases.insert(tile, base);
    }
    Ok(PatchBases {
        bases,
        largest,
        code_ceiling,
        in_reservation,
        in_data,
    })
}

/// Where a patch block of `bytes` goes at the top of the elements reserved
/// for an image estimated at `estimate` bytes, if it fits there above the
/// estimate and its 64-byte fetch look-ahead.
fn reservation_base(estimate: u32, bytes: u32) -> Option<u32> {
    let estimate_end = APPLICATION_LOAD_BASE.saturating_add(estimate);
    let top = element_bounds(estimate_end.saturating_sub(1).max(APPLICATION_LOAD_BASE))
        .end
        .min(layout::STATE_BASE);
    let base = top.saturating_sub(bytes) / PATCH_DATA_ALIGN * PATCH_DATA_ALIGN;
    (base >= estimate_end.saturating_add(SUPERVISOR_FETCH_LOOKAHEAD)
        && top <= EXECUTABLE_MEMORY_LIMIT)
        .then_some(base)
}

/// Places `tile`'s patch data as a constant block in its data region (a
/// tile that holds no buffer gets a placement of its own) and returns its
/// base; placement's typed error (budget or room) names the tile.
fn place_in_data(
    tile: LogicalTile,
    data: &PatchData,
    largest: u32,
    placements: &mut Vec<TilePlacement>,
    code_estimate: &dyn Fn(LogicalTile) -> u32,
) -> Result<u32, PatchDataDoesNotFit> {
    let fail = |error| PatchDataDoesNotFit {
        tile,
        repeat_bytes: data.repeat_bytes(),
        sharing_bytes: data.sharing_bytes(),
        largest,
        error,
    };
    let index = match placements.binary_search_by_key(&tile, |p| p.tile) {
        Ok(i) => i,
        Err(i) => {
            let empty = PlacementRequest {
                tile,
                reserved: support_reserved(code_estimate(tile)),
                ..PlacementRequest::default()
            };
            placements.insert(i, place_tile(&empty).map_err(fail)?);
            i
        }
    };
    let range = placements[index]
        .add_constant(PATCH_DATA_NAME, data.bytes(), PATCH_DATA_ALIGN)
        .map_err(fail)?;
    Ok(range.start)
}

impl PatchBases {
    /// The refit of a tile whose linked image ran past its patch data at
    /// the top of its code reservation (the image estimate is a model of
    /// the rows, not a bound): the block moves to the tile's data region
    /// ([`TilePlacement::add_constant`], charged like data against the
    /// tile's budget), so the image is bounded only by the tile's lowest
    /// data again. Returns the block's new base; the tile's program must be
    /// emitted again (it loads the block's address). A tile whose block is
    /// not in its reservation is left alone (`Ok(None)`).
    pub fn move_to_data(
        &mut self,
        tile: LogicalTile,
        data: &PatchData,
        placements: &mut Vec<TilePlacement>,
        code_estimate: &dyn Fn(LogicalTile) -> u32,
    ) -> Result<Option<u32>, PatchDataDoesNotFit> {
        if self.code_ceiling.remove(&tile).is_none() {
            return Ok(None);
        }
        let base = place_in_data(tile, data, self.largest, placements, code_estimate)?;
        self.bases.insert(tile, base);
        self.in_reservation = self.in_reservation.saturating_sub(1);
        self.in_data = self.in_data.saturating_add(1);
        Ok(Some(base))
    }
}

/// The planner's image estimate of `tile` (the fixed part when it has none).
pub fn code_estimate_of(estimates: &[u64], tile: LogicalTile, fixed: u32) -> u32 {
    estimates
        .get(tile.index())
        .map_or(fixed, |&b| u32::try_from(b).unwrap_or(u32::MAX))
}

/// Memory-map name of a tile's patch-data block.
const PATCH_DATA_NAME: &str = "patch data (Repeat tables, sharing lists)";
/// Word tables: 8-byte aligned like every other data block (the patchers
/// read 32-bit words, `docs/facts/ipu21-target.md` §2.8).
const PATCH_DATA_ALIGN: u32 = BASE_BUFFER_ALIGN;

/// Zero-initialised data segments covering every placed buffer of a tile:
/// the union of its allocations, one segment per disjoint range, tagged
/// `Tensor` when a host-bound buffer (input, weight, output) lives in it.
pub fn data_segments(schedule: &TileSchedule, placement: &TilePlacement) -> Vec<Segment> {
    let mut ranges: Vec<(u32, u32, bool)> = placement
        .allocations
        .iter()
        .map(|a| {
            let bound = schedule.buffer(a.key).is_some_and(|b| {
                matches!(
                    b.role,
                    BufferRole::Input { .. }
                        | BufferRole::Parameter { .. }
                        | BufferRole::Iterated { .. }
                        | BufferRole::Output { .. }
                )
            }) || schedule.outputs.iter().any(|o| o.buffer.0 == a.key.0);
            (a.range.start, a.range.end, bound)
        })
        .filter(|r| r.1 > r.0)
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32, bool)> = Vec::new();
    for (start, end, bound) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => {
                last.1 = last.1.max(end);
                last.2 |= bound;
            }
            _ => merged.push((start, end, bound)),
        }
    }
    merged
        .into_iter()
        .map(|(start, end, bound)| {
            let role = if bound {
                SegmentRole::Tensor
            } else {
                SegmentRole::Scratch
            };
            Segment::data(start, end - start, role, Vec::new())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_target::ipu21::sram::TILE_MEMORY_BUDGET;

    fn sharing(bytes: u32) -> PatchData {
        let mut data = PatchData::default();
        data.sharing_words = alloc::vec![7; bytes as usize / 4];
        data
    }

    /// The tile-662 case of So400m FP16 at 12 layers, in small: the block
    /// sits at the top of the code element above the estimate, the linked
    /// image ends past the estimate and into the block's look-ahead; the
    /// refit moves the block to the data region and the image fits below
    /// the tile's data.
    #[test]
    fn an_image_past_its_estimate_gets_its_patch_block_moved_to_the_data_region() {
        let tile = LogicalTile::new(5).unwrap();
        let element_end = element_bounds(APPLICATION_LOAD_BASE).end;
        let estimate: u32 = element_end - APPLICATION_LOAD_BASE - 2_000;
        let data = sharing(912);
        let base = reservation_base(estimate, data.bytes()).unwrap();
        assert_eq!(base + data.bytes(), element_end);
        let ceiling = base - SUPERVISOR_FETCH_LOOKAHEAD;
        let mut bases = PatchBases {
            largest: data.bytes(),
            in_reservation: 1,
            ..PatchBases::default()
        };
        bases.bases.insert(tile, base);
        bases.code_ceiling.insert(tile, ceiling);
        // 1,200 bytes past the estimate: past the block's ceiling, still
        // inside the element placement reserved.
        let image = estimate + 1_200;
        assert!(matches!(
            check_below(tile, image, ceiling),
            Err(PlaceError::CodeDoesNotFit { free_bytes, .. }) if free_bytes == ceiling - APPLICATION_LOAD_BASE
        ));
        let mut placements = Vec::new();
        let moved = bases
            .move_to_data(tile, &data, &mut placements, &|_| estimate)
            .unwrap()
            .unwrap();
        assert!(moved >= element_end, "{moved:#x}");
        assert_eq!(bases.patch_base(tile), Some(moved));
        assert_eq!((bases.in_reservation, bases.in_data), (0, 1));
        assert!(!bases.code_ceiling.contains_key(&tile));
        assert_eq!(placements.len(), 1);
        placements[0].check_code(image).unwrap();
        assert!(placements[0].code_limit() >= element_end - SUPERVISOR_FETCH_LOOKAHEAD);
        // A block no longer (or never) in the reservation is left alone.
        assert_eq!(
            bases
                .move_to_data(tile, &data, &mut placements, &|_| estimate)
                .unwrap(),
            None
        );
    }

    /// No room for the block in the data region is the typed error naming
    /// the tile and the block's bytes, never a silent fallback.
    #[test]
    fn a_moved_block_without_room_is_a_typed_error_naming_the_tile() {
        let tile = LogicalTile::new(9).unwrap();
        let data = sharing(TILE_MEMORY_BUDGET / 4 * 4);
        let mut bases = PatchBases::default();
        bases.bases.insert(tile, 0x5C000);
        bases
            .code_ceiling
            .insert(tile, 0x5C000 - SUPERVISOR_FETCH_LOOKAHEAD);
        let err = bases
            .move_to_data(tile, &data, &mut Vec::new(), &|_| 60_000)
            .unwrap_err();
        assert_eq!(err.tile, tile);
        assert_eq!(err.sharing_bytes, data.bytes());
        assert!(matches!(err.error, PlaceError::OverBudget { tile: t, .. } if t == tile));
    }
}
