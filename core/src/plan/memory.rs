//! Per-tile memory estimation.
//!
//! The planner checks every moment (one op's execution) against the per-tile
//! data budget. Allocations are either *static* (parameters and inputs, live
//! for the whole program; iterated parameter sequences count `trip_count ×`
//! on their owner tiles) or *dynamic* (activations, op scratch, re-layout
//! staging, live for a span of ops). Static usage is kept exactly, per tile;
//! dynamic usage is first bounded by the sum of each allocation's largest
//! block (cheap), and refined per tile only when that bound exceeds the
//! budget. A rejection is a [`MemoryRejection`] naming the op, the peak tile,
//! the moment and every allocation live there.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use super::layout::Layout;
use super::layout::TILE_COUNT;
use crate::plan::TileBlock;
use ipuc_target::ipu21::sram::MemoryClass;
use ipuc_target::ipu21::sram::{
    INTERLEAVED_BASE, LOADER_REACHABLE_LIMIT, SUPPORT_CHARGE_BYTES, TILE_MEMORY_BUDGET,
};

/// Per-tile bytes available to planned data and code: the tile budget minus
/// the fixed support charge (the runtime state, `ipuc_target::ipu21::sram`). Each
/// tile's estimated linked image is charged inside this budget, as the
/// bytes it spans up to its fetch guard (`plan::code::charge`); placement
/// rounds that up to the whole elements it reserves
/// ([`crate::place::support_reserved`]).
pub const DATA_BUDGET_BYTES: u64 = (TILE_MEMORY_BUDGET - SUPPORT_CHARGE_BYTES) as u64;

/// The share of the tile budget a plan aims to stay within, leaving room
/// for what the planner cannot see (the seeds' and the 95 %
/// headroom target). The compiler plans to it first and to the whole
/// budget only when nothing fits under it.
pub const HEADROOM_PERCENT: u64 = 95;

/// [`HEADROOM_PERCENT`] of the tile budget, in bytes.
pub const HEADROOM_BYTES: u64 = TILE_MEMORY_BUDGET as u64 * HEADROOM_PERCENT / 100;

/// The data budget that keeps a tile within [`HEADROOM_BYTES`].
pub const HEADROOM_DATA_BUDGET_BYTES: u64 = HEADROOM_BYTES - SUPPORT_CHARGE_BYTES as u64;

/// Per-tile bytes of the interleaved region (region 1 up to the loader limit,
/// `ipuc_target::ipu21::sram`): interleaved-class allocations must fit here.
pub const INTERLEAVED_BUDGET_BYTES: u64 = (LOADER_REACHABLE_LIMIT - INTERLEAVED_BASE) as u64;

/// Allocation granule: every block is charged rounded up to the largest
/// alignment lowering gives a buffer ([`ipuc_target::ipu21::sram::MAX_BUFFER_ALIGN`],
/// AMP operands and interleaved data), so a charged block is never smaller
/// than placement's span (`copies × round_up(bytes, align)`).
pub const ALLOCATION_GRANULE: u64 = ipuc_target::ipu21::sram::MAX_BUFFER_ALIGN as u64;

fn granule(bytes: u64) -> u64 {
    bytes.div_ceil(ALLOCATION_GRANULE) * ALLOCATION_GRANULE
}

/// How an allocation's bytes spread over tiles.
#[derive(Clone, Debug, PartialEq)]
pub enum TileBytes {
    /// One block per placement of a layout, `elem` bytes per element.
    Layout {
        /// The layout.
        layout: Layout,
        /// Bytes per element.
        elem: u32,
    },
    /// Explicit blocks (op scratch).
    Blocks(Arc<Vec<TileBlock>>),
}

impl TileBytes {
    /// Largest per-tile block in bytes (after granule rounding).
    pub fn max_bytes(&self) -> u64 {
        match self {
            TileBytes::Layout { layout, elem } => {
                granule(layout.max_block_elements() * *elem as u64)
            }
            TileBytes::Blocks(b) => b.iter().map(|b| granule(b.bytes as u64)).max().unwrap_or(0),
        }
    }

    /// Calls `f(tile, bytes)` for every block.
    pub fn for_each(&self, mut f: impl FnMut(u32, u64)) {
        match self {
            TileBytes::Layout { layout, elem } => {
                let elem = u64::from(*elem);
                layout.for_each_block_elements(|t, n| f(t, granule(n * elem)));
            }
            TileBytes::Blocks(blocks) => {
                for b in blocks.iter() {
                    f(u32::from(b.tile.get()), granule(b.bytes as u64));
                }
            }
        }
    }

    /// Bytes on `tile` (0 if none).
    pub fn on_tile(&self, tile: u32) -> u64 {
        let mut total = 0;
        self.for_each(|t, b| {
            if t == tile {
                total += b;
            }
        });
        total
    }
}

/// What an allocation is, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocationKind {
    /// Host-written parameter or input (static).
    Parameter,
    /// Iterated parameter sequence (static, `copies` = trip count).
    IteratedParameter,
    /// An op result.
    Activation,
    /// A Repeat-carried buffer.
    Carried,
    /// Operand re-layout staging.
    Staging,
    /// Op-internal scratch.
    Scratch,
    /// The tile's linked image (code, argument blocks, exchange rows): an
    /// estimate charged up to its fetch guard (`plan::code::charge`).
    Code,
}

/// One logical allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// Name for reports (value or op, and role).
    pub name: String,
    /// Kind.
    pub kind: AllocationKind,
    /// SRAM class.
    pub class: MemoryClass,
    /// Per-tile bytes of one copy.
    pub tiles: TileBytes,
    /// Copies kept at once (trip count for iterated parameters).
    pub copies: u32,
}

impl Allocation {
    /// Largest per-tile footprint.
    pub fn max_bytes(&self) -> u64 {
        self.tiles.max_bytes() * self.copies.max(1) as u64
    }

    /// Adds (or with `sign < 0` removes) this allocation to a per-tile array.
    pub fn accumulate(&self, usage: &mut [u64], add: bool) {
        let copies = self.copies.max(1) as u64;
        self.tiles.for_each(|t, b| {
            if let Some(u) = usage.get_mut(t as usize) {
                if add {
                    *u += b * copies;
                } else {
                    *u = u.saturating_sub(b * copies);
                }
            }
        });
    }
}

/// The per-tile sum of a list of allocations (all copies), with the
/// allocations it was summed from: adding or removing `usage` is the same
/// u64 arithmetic as accumulating each of them, in one pass over the tiles.
/// A Repeat releases the same pending sequence elements from every state of
/// a beam, so the search keeps one per Repeat and reuses it while the
/// allocations are the same ones (`Arc` identity).
#[derive(Clone, Debug)]
pub struct AllocationSum {
    /// The allocations summed, in order.
    pub allocs: Vec<Arc<Allocation>>,
    /// Per-tile bytes of all of them.
    pub usage: Vec<u64>,
    /// Per-tile bytes of the interleaved-class ones (`None`: there are none).
    pub interleaved: Option<Vec<u64>>,
}

impl AllocationSum {
    /// Sums `allocs`.
    pub fn of(allocs: Vec<Arc<Allocation>>) -> Self {
        let mut usage = empty_usage();
        let mut interleaved: Option<Vec<u64>> = None;
        for a in &allocs {
            a.accumulate(&mut usage, true);
            if a.class == MemoryClass::Interleaved {
                a.accumulate(interleaved.get_or_insert_with(empty_usage), true);
            }
        }
        AllocationSum {
            allocs,
            usage,
            interleaved,
        }
    }

    /// Whether this is the sum of exactly `allocs` (the same allocations,
    /// in the same order).
    pub fn sums(&self, allocs: &[Arc<Allocation>]) -> bool {
        self.allocs.len() == allocs.len()
            && self
                .allocs
                .iter()
                .zip(allocs)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// Per-tile bytes of one copy of a layout's allocation, `elem` bytes per
/// element, as a dense array: each tile's granule-rounded blocks summed
/// (what [`TileBytes::for_each`] gives, per tile).
pub fn layout_tile_bytes(layout: &Layout, elem: u32) -> Vec<u64> {
    let mut usage = empty_usage();
    let elem = u64::from(elem);
    layout.for_each_block_elements(|t, n| {
        if let Some(u) = usage.get_mut(t as usize) {
            *u += granule(n * elem);
        }
    });
    usage
}

/// Adds (or removes) `copies` times a dense per-tile array
/// ([`layout_tile_bytes`]) to a per-tile array: the same u64 sums as
/// [`Allocation::accumulate`] block by block, when a removal does not
/// saturate (it removes what was added).
pub fn add_usage_times(usage: &mut [u64], tiles: &[u64], copies: u64, add: bool) {
    if copies == 1 {
        return add_usage(usage, tiles, add);
    }
    for (u, t) in usage.iter_mut().zip(tiles) {
        if add {
            *u += t * copies;
        } else {
            *u = u.saturating_sub(t * copies);
        }
    }
}

/// Adds (or with `add == false` removes, saturating as
/// [`Allocation::accumulate`] does) a per-tile sum to a per-tile array.
pub fn add_usage(usage: &mut [u64], sum: &[u64], add: bool) {
    for (u, s) in usage.iter_mut().zip(sum) {
        if add {
            *u += s;
        } else {
            *u = u.saturating_sub(*s);
        }
    }
}

/// A fresh all-zero per-tile usage array.
pub fn empty_usage() -> Vec<u64> {
    alloc::vec![0; TILE_COUNT as usize]
}

/// One allocation live at the peak, with its bytes on the peak tile.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveAllocation {
    /// Its name.
    pub name: String,
    /// Kind.
    pub kind: AllocationKind,
    /// Class.
    pub class: MemoryClass,
    /// Bytes on the peak tile (all copies).
    pub bytes: u64,
}

/// Why a plan does not fit: everything a report needs, plain data so the host
/// can render it (HTML, JSON) without planner types.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryRejection {
    /// Mnemonic of the op at the peak moment.
    pub op_name: String,
    /// The model's name for that op (e.g. `encoder.layers.*.mlp.fc1`), else
    /// `mnemonic#index`.
    pub op_label: String,
    /// Position of that op in its region (planning order).
    pub op_index: u32,
    /// `top level` or `repeat body (×N)`.
    pub region: String,
    /// The moment, e.g. `during op 14 (matmul, gemm 92×16×1 streamed)`.
    pub moment: String,
    /// Tile with the highest usage at that moment (raw: an index into the
    /// planner's per-tile arrays, as the reports' JSON numbers it).
    pub tile: u32,
    /// Planned bytes on that tile (excluding the support reserve).
    pub peak_bytes: u64,
    /// Support reserve added on every tile.
    pub reserve_bytes: u64,
    /// Tile budget including the reserve.
    pub budget_bytes: u64,
    /// Interleaved-class bytes on that tile at that moment.
    pub interleaved_bytes: u64,
    /// Interleaved region size (interleaved allocations must fit in it).
    pub interleaved_budget_bytes: u64,
    /// How many tiles exceed a budget at that moment.
    pub tiles_over_budget: u32,
    /// Allocations live on that tile at that moment, largest first.
    pub live: Vec<LiveAllocation>,
    /// The most loaded tiles at that moment (at most [`REPORTED_TILES`],
    /// over-budget ones first, `tile` among them) with their planned bytes
    /// and live allocations: what a report's tile picker shows.
    pub tiles: Vec<TileLive>,
    /// Other candidates rejected at the same op (lowest peak first, at most
    /// [`REPORTED_CANDIDATES`] − 1), each a full report of its own.
    pub candidates: Vec<MemoryRejection>,
}

/// Tiles described per rejection ([`MemoryRejection::tiles`]).
pub const REPORTED_TILES: usize = 32;
/// Rejected candidates reported per failing op (this one and its
/// [`MemoryRejection::candidates`]).
pub const REPORTED_CANDIDATES: usize = 8;
/// Allocations `Display` lists (the report files have all of them).
pub const DISPLAYED_ALLOCATIONS: usize = 12;

/// One tile of a rejection: planned bytes (excluding the reserve) and the
/// allocations live on it at the rejected moment, largest first.
#[derive(Clone, Debug, PartialEq)]
pub struct TileLive {
    /// Tile (raw: an index into the planner's per-tile arrays).
    pub tile: u32,
    /// Planned bytes on it at that moment.
    pub bytes: u64,
    /// Live allocations, largest first.
    pub live: Vec<LiveAllocation>,
}

impl MemoryRejection {
    /// Peak including the reserve (what is compared with `budget_bytes`).
    pub fn total_bytes(&self) -> u64 {
        self.peak_bytes + self.reserve_bytes
    }
}

impl fmt::Display for MemoryRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "per-tile memory exceeded in {}, {}: tile {} needs {} bytes ({} planned + {} support reserve) of {}",
            self.region,
            self.moment,
            self.tile,
            self.total_bytes(),
            self.peak_bytes,
            self.reserve_bytes,
            self.budget_bytes
        )?;
        writeln!(
            f,
            "  interleaved {} of {} bytes; {} tiles over budget at this moment",
            self.interleaved_bytes, self.interleaved_budget_bytes, self.tiles_over_budget
        )?;
        for a in self.live.iter().take(DISPLAYED_ALLOCATIONS) {
            writeln!(
                f,
                "  {:>9} B  {:?} {:?}  {}",
                a.bytes, a.kind, a.class, a.name
            )?;
        }
        if self.live.len() > DISPLAYED_ALLOCATIONS {
            let rest = &self.live[DISPLAYED_ALLOCATIONS..];
            writeln!(
                f,
                "  … {} more allocations ({} B) in the report",
                rest.len(),
                rest.iter().map(|a| a.bytes).sum::<u64>()
            )?;
        }
        Ok(())
    }
}

/// A rejection is an error on its own too (a host may report it as one);
/// its `Display` says everything, so it has no `source()`.
impl core::error::Error for MemoryRejection {}

/// Exact per-tile peak of one moment: `base[t] + Σ dynamic[t]`. Returns the
/// peak bytes and the (lowest-numbered) peak tile.
pub fn exact_peak(base: &[u64], dynamic: &[&Allocation]) -> (u64, u32) {
    let mut usage: Vec<u64> = base.to_vec();
    for a in dynamic {
        a.accumulate(&mut usage, true);
    }
    peak_of(&usage)
}

/// Highest entry and its tile.
pub fn peak_of(usage: &[u64]) -> (u64, u32) {
    let mut best = (0u64, 0u32);
    for (t, &u) in usage.iter().enumerate() {
        if u > best.0 {
            best = (u, t as u32);
        }
    }
    best
}

/// [`peak_of`] of `a[t] + b[t]` (over the shorter of the two), without
/// the array.
pub fn peak_of_sum(a: &[u64], b: &[u64]) -> (u64, u32) {
    let mut best = (0u64, 0u32);
    for (t, (x, y)) in a.iter().zip(b).enumerate() {
        let u = x + y;
        if u > best.0 {
            best = (u, t as u32);
        }
    }
    best
}

/// Per-tile usage of one moment as an array (for Repeat composition).
pub fn moment_usage(base: &[u64], dynamic: &[&Allocation]) -> Vec<u64> {
    let mut usage: Vec<u64> = base.to_vec();
    for a in dynamic {
        a.accumulate(&mut usage, true);
    }
    usage
}

/// Outcome of checking one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MomentCheck {
    /// Peak bytes (exact if `exact`, else an upper bound).
    pub peak: u64,
    /// Whether the per-tile refinement ran.
    pub exact: bool,
    /// Peak tile (meaningful when `exact`; raw: a per-tile array index).
    pub tile: u32,
}

/// Cheap bound first; per-tile refinement only when the bound exceeds `budget`.
pub fn check_moment(
    base: &[u64],
    base_max: u64,
    dynamic: &[&Allocation],
    budget: u64,
) -> MomentCheck {
    let bound = base_max + dynamic.iter().map(|a| a.max_bytes()).sum::<u64>();
    if bound <= budget {
        return MomentCheck {
            peak: bound,
            exact: false,
            tile: 0,
        };
    }
    let (peak, tile) = exact_peak(base, dynamic);
    MomentCheck {
        peak,
        exact: true,
        tile,
    }
}

/// Interleaved-class check of one moment: `(peak, tile)` of the per-tile
/// interleaved usage when its cheap bound exceeds the interleaved budget,
/// else `None` (fits).
pub fn interleaved_excess(
    base: &[u64],
    base_max: u64,
    dynamic: &[&Allocation],
) -> Option<(u64, u32)> {
    let il: Vec<&Allocation> = dynamic
        .iter()
        .copied()
        .filter(|a| a.class == MemoryClass::Interleaved)
        .collect();
    let bound = base_max + il.iter().map(|a| a.max_bytes()).sum::<u64>();
    if bound <= INTERLEAVED_BUDGET_BYTES {
        return None;
    }
    let (peak, tile) = exact_peak(base, &il);
    (peak > INTERLEAVED_BUDGET_BYTES).then_some((peak, tile))
}

/// Interleaved-class bytes of `allocs` on `tile`.
pub fn interleaved_on_tile<'a>(tile: u32, allocs: impl Iterator<Item = &'a Allocation>) -> u64 {
    allocs
        .filter(|a| a.class == MemoryClass::Interleaved)
        .map(|a| a.tiles.on_tile(tile) * a.copies.max(1) as u64)
        .sum()
}

/// Lists the allocations on `tile`, largest first.
pub fn live_on_tile<'a>(
    tile: u32,
    allocs: impl Iterator<Item = &'a Allocation>,
) -> Vec<LiveAllocation> {
    let mut live: Vec<LiveAllocation> = allocs
        .filter_map(|a| {
            let bytes = a.tiles.on_tile(tile) * a.copies.max(1) as u64;
            (bytes > 0).then(|| LiveAllocation {
                name: a.name.clone(),
                kind: a.kind,
                class: a.class,
                bytes,
            })
        })
        .collect();
    live.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    live
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn alloc(name: &str, layout: Layout, elem: u32, copies: u32) -> Allocation {
        Allocation {
            name: name.to_string(),
            kind: AllocationKind::Activation,
            class: MemoryClass::Standard,
            tiles: TileBytes::Layout { layout, elem },
            copies,
        }
    }

    #[test]
    fn bound_passes_without_refinement_and_refines_when_it_fails() {
        let base = empty_usage();
        // Two 300 KB allocations on disjoint tiles: bound 600 KB fails, exact 300 KB fits.
        let a = alloc("a", Layout::single(1, 300_000, 0), 1, 1);
        let b = alloc("b", Layout::single(1, 300_000, 1), 1, 1);
        let c = check_moment(&base, 0, &[&a, &b], DATA_BUDGET_BYTES);
        assert!(c.exact);
        assert_eq!((c.peak, c.tile), (300_000, 0));
        // 1000 bytes are charged as 1024: blocks round up to the largest
        // buffer alignment, which bounds placement's span.
        let small = alloc("s", Layout::single(1, 1000, 0), 1, 1);
        let c = check_moment(&base, 0, &[&small], DATA_BUDGET_BYTES);
        assert!(!c.exact);
        assert_eq!(c.peak, 1024);
    }

    #[test]
    fn dense_tile_bytes_and_sums_are_the_block_walk() {
        // Row splits, 2-D splits, replicas and strides that put several
        // blocks on one tile: the dense bytes times the copies, and the sum
        // of several allocations, are what accumulating block by block gives.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(n)) as u32
        };
        for _ in 0..200 {
            let axis = |next: &mut dyn FnMut(u32) -> u32| crate::plan::layout::AxisSplit {
                len: next(3000) + 1,
                grain: [1, 2, 4, 16][next(4) as usize],
                outer: next(40) + 1,
                outer_stride: next(20),
                inner: next(3) + 1,
                inner_stride: next(5),
            };
            let layouts: Vec<Layout> = (0..3)
                .map(|_| Layout {
                    first_tile: next(100),
                    rows: axis(&mut next),
                    cols: axis(&mut next),
                    replicas: next(3) + 1,
                    replica_stride: next(200),
                })
                .collect();
            let allocs: Vec<Arc<Allocation>> = layouts
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let mut a = alloc("a", *l, [1, 2, 4][i], next(30) + 1);
                    if i == 1 {
                        a.class = MemoryClass::Interleaved;
                    }
                    Arc::new(a)
                })
                .collect();
            let mut walked = empty_usage();
            let mut dense = empty_usage();
            for a in &allocs {
                a.accumulate(&mut walked, true);
                let TileBytes::Layout { layout, elem } = &a.tiles else {
                    unreachable!()
                };
                add_usage_times(
                    &mut dense,
                    &layout_tile_bytes(layout, *elem),
                    a.copies.into(),
                    true,
                );
            }
            assert_eq!(walked, dense);
            let sum = AllocationSum::of(allocs.clone());
            assert_eq!(sum.usage, walked);
            assert!(sum.sums(&allocs) && !sum.sums(&allocs[..2]));
            let mut il = empty_usage();
            allocs[1].accumulate(&mut il, true);
            assert_eq!(sum.interleaved.as_ref(), Some(&il));
            // Removing the sum removes every allocation.
            add_usage(&mut walked, &sum.usage, false);
            assert!(walked.iter().all(|&u| u == 0));
            let (peak, tile) = peak_of_sum(&dense, &il);
            let both: Vec<u64> = dense.iter().zip(&il).map(|(a, b)| a + b).collect();
            assert_eq!((peak, tile), peak_of(&both));
        }
    }

    #[test]
    fn iterated_copies_multiply_on_their_owner_tiles() {
        let mut base = empty_usage();
        let seq = Allocation {
            kind: AllocationKind::IteratedParameter,
            ..alloc("w", Layout::row_split(4, 1000, 10, 4), 1, 27)
        };
        seq.accumulate(&mut base, true);
        // 1000-byte blocks are charged 1024 per copy (granule 32).
        assert_eq!(peak_of(&base), (27 * 1024, 10));
        assert_eq!(base[14], 0);
        let live = live_on_tile(12, [&seq].into_iter());
        assert_eq!(live[0].bytes, 27 * 1024);
    }
}
