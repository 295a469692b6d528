//! Placement of a whole [`TileSchedule`]: one [`PlacementRequest`] per tile
//! built from the schedule's buffers and kernel calls, and the resolution of
//! a [`BufferRef`] (plus Repeat iteration) to an SRAM address.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use super::allocate::place_tile;
use super::error::PlaceResult;
use super::map::TilePlacement;
use super::request::{BufferRequest, ElementConflict, PlacementRequest, ReservedRange};
use crate::lower::schedule::{BufferId, BufferRef, ExchangeStep, Step, TileSchedule};
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::kernel::Kernel;

/// Per-tile placement requests for `schedule`. `reserved(tile)` gives the
/// ranges the runtime, code and exchange tables own on that tile. Tiles
/// without buffers get no request.
///
/// Each buffer's block on a tile becomes one request with the schedule's
/// alignment, so the allocation stride equals
/// [`crate::lower::schedule::Buffer::iteration_stride`] — the one
/// per-iteration address function. Every AMP call (GEMM, attention) adds an
/// element conflict between its output and its left operand on its tile
/// (`docs/facts/ipu21-target.md` §2.10 rule 6); every exchange phase asks
/// to keep each tile's send buffers and receive buffers apart (rule 5).
pub fn requests(
    schedule: &TileSchedule,
    mut reserved: impl FnMut(LogicalTile) -> Vec<ReservedRange>,
) -> Vec<PlacementRequest> {
    let mut by_tile: BTreeMap<LogicalTile, PlacementRequest> = BTreeMap::new();
    for buf in &schedule.buffers {
        for block in &buf.blocks {
            let req = by_tile
                .entry(block.tile)
                .or_insert_with(|| PlacementRequest {
                    tile: block.tile,
                    ..PlacementRequest::default()
                });
            req.buffers.push(BufferRequest {
                key: buf.id,
                name: buf.name.clone(),
                bytes: block.bytes,
                copies: buf.copies.max(1),
                align: buf.align,
                class: buf.class,
                first_step: buf.first_step.0,
                last_step: buf.last_step.0,
            });
        }
    }
    schedule.visit(|step, _| {
        if let Step::Exchange(x) = step {
            for (tile, pair) in send_receive_pairs(x) {
                if let Some(req) = by_tile.get_mut(&tile) {
                    req.apart.push(pair);
                }
            }
            return;
        }
        let Step::Compute(c) = step else { return };
        for call in &c.calls {
            let amp = matches!(
                call.kernel,
                Kernel::Gemm { .. } | Kernel::Attention { .. } | Kernel::AttentionPartial { .. }
            );
            let (Some(out), Some(left)) = (call.operands.first(), call.operands.get(1)) else {
                continue;
            };
            if !amp || out.buffer == left.buffer {
                continue;
            }
            if let Some(req) = by_tile.get_mut(&call.tile) {
                req.conflicts.push(ElementConflict {
                    a: left.buffer,
                    b: out.buffer,
                });
            }
        }
    });
    by_tile
        .into_values()
        .map(|mut r| {
            r.conflicts.sort();
            r.conflicts.dedup();
            r.apart.sort();
            r.apart.dedup();
            r.reserved = reserved(r.tile);
            r
        })
        .collect()
}

/// Per tile, each (buffer sent from, buffer received into) pair of the
/// phase `x`.
fn send_receive_pairs(x: &ExchangeStep) -> Vec<(LogicalTile, ElementConflict)> {
    let mut sends: BTreeMap<LogicalTile, BTreeSet<BufferId>> = BTreeMap::new();
    let mut receives: BTreeMap<LogicalTile, BTreeSet<BufferId>> = BTreeMap::new();
    for t in &x.transfers {
        sends
            .entry(t.source_tile)
            .or_default()
            .insert(t.source.buffer);
        for d in &t.destinations {
            receives.entry(d.tile).or_default().insert(d.at.buffer);
        }
    }
    let mut pairs = Vec::new();
    for (tile, sent) in &sends {
        let Some(received) = receives.get(tile) else {
            continue;
        };
        for &a in sent {
            for &b in received.iter().filter(|&&b| b != a) {
                pairs.push((*tile, ElementConflict { a, b }));
            }
        }
    }
    pairs
}

/// Placement of every tile of a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulePlacement {
    /// One entry per tile holding buffers, sorted by tile.
    pub tiles: Vec<TilePlacement>,
}

impl SchedulePlacement {
    /// The placement of logical tile `tile`.
    pub fn tile(&self, tile: LogicalTile) -> Option<&TilePlacement> {
        self.tiles
            .binary_search_by_key(&tile, |t| t.tile)
            .ok()
            .map(|i| &self.tiles[i])
    }

    /// Base address of `buffer` on `tile` (copy 0).
    pub fn address(&self, tile: LogicalTile, buffer: BufferId) -> Option<u32> {
        self.tile(tile)?.address(buffer)
    }

    /// Address of `at` on `tile` in Repeat iteration `iteration`:
    /// `base + iteration × stride + offset` for iterated buffers,
    /// `base + offset` otherwise (the schedule's one address function).
    pub fn resolve(&self, tile: LogicalTile, at: BufferRef, iteration: u32) -> Option<u32> {
        let a = self.tile(tile)?.allocation(at.buffer)?;
        let copy = if a.copies > 1 { iteration } else { 0 };
        a.copy_address(copy)?.checked_add(at.offset)
    }

    /// The tile with the largest peak.
    pub fn peak_tile(&self) -> Option<&TilePlacement> {
        self.tiles
            .iter()
            .max_by_key(|t| (t.peak.bytes, core::cmp::Reverse(t.tile)))
    }
}

/// Places every tile of `schedule`; the first tile that does not fit
/// stops placement with its report.
pub fn place_schedule(
    schedule: &TileSchedule,
    reserved: impl FnMut(LogicalTile) -> Vec<ReservedRange>,
) -> PlaceResult<SchedulePlacement> {
    let tiles = requests(schedule, reserved)
        .iter()
        .map(place_tile)
        .collect::<PlaceResult<Vec<_>>>()?;
    Ok(SchedulePlacement { tiles })
}
