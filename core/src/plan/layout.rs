//! Tensor layouts: which tile holds which block of a tensor.
//!
//! Every tensor is viewed as a row-major matrix `[rows, cols]` (leading
//! dimensions folded into rows). A [`Layout`] splits both axes into balanced
//! parts ([`AxisSplit`]) and places the resulting blocks on tiles through
//! strides, optionally replicated. Row, column and 2-D block partitions,
//! replication and balanced linear storage of small vectors (a column split of
//! a one-row tensor in small grains) are all instances of this one form, so
//! block extents are always computed arithmetically: nothing here is
//! per-element or tiles².
//!
//! Balanced splits nest: splitting `n` into `a·b` parts and grouping parts
//! `[i·b, (i+1)·b)` gives exactly the `i`-th part of the split into `a` parts
//! (`⌊i·b·U/(a·b)⌋ = ⌊i·U/a⌋`). Two-level axes and k-split GEMM outputs rely
//! on this.

use core::ops::Range;

use ipuc_target::ipu21::topology::TILE_COUNT as TILE_COUNT_U16;

/// Tiles on the machine as `u32` (`ipuc_target::ipu21::topology::TILE_COUNT`).
pub const TILE_COUNT: u32 = TILE_COUNT_U16 as u32;

/// A balanced split of one axis of `len` elements, in units of `grain`
/// elements, into `outer × inner` parts. Part `q = o·inner + i` covers units
/// `[⌊q·U/P⌋, ⌊(q+1)·U/P⌋)` (`U` units, `P` parts) and sits at tile offset
/// `o·outer_stride + i·inner_stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AxisSplit {
    /// Elements along the axis.
    pub len: u32,
    /// Elements per indivisible unit (keeps blocks word-aligned or AMP-grouped).
    pub grain: u32,
    /// Outer part count.
    pub outer: u32,
    /// Tile offset between consecutive outer parts.
    pub outer_stride: u32,
    /// Inner part count (1 for a one-level split).
    pub inner: u32,
    /// Tile offset between consecutive inner parts.
    pub inner_stride: u32,
}

impl AxisSplit {
    /// The whole axis in one part.
    pub const fn whole(len: u32) -> Self {
        Self {
            len,
            grain: 1,
            outer: 1,
            outer_stride: 0,
            inner: 1,
            inner_stride: 0,
        }
    }

    /// A one-level split into `parts` parts placed `stride` tiles apart.
    pub const fn parts(len: u32, grain: u32, parts: u32, stride: u32) -> Self {
        Self {
            len,
            grain,
            outer: parts,
            outer_stride: stride,
            inner: 1,
            inner_stride: 0,
        }
    }

    /// Total part count.
    pub const fn part_count(&self) -> u32 {
        self.outer * self.inner
    }

    /// Indivisible units along the axis.
    pub const fn units(&self) -> u32 {
        if self.grain == 0 {
            return self.len;
        }
        self.len.div_ceil(self.grain)
    }

    fn unit_start(&self, part: u32) -> u32 {
        let parts = self.part_count().max(1) as u64;
        ((part as u64 * self.units() as u64) / parts) as u32
    }

    /// Element range of part `part` (empty when there are more parts than units).
    pub fn range(&self, part: u32) -> Range<u32> {
        let g = self.grain.max(1);
        let start = self.unit_start(part).saturating_mul(g).min(self.len);
        let end = self.unit_start(part + 1).saturating_mul(g).min(self.len);
        start..end
    }

    /// The part holding element `x` (`x < len`). For empty parts the later
    /// part with the same start is returned, which is the one that holds `x`.
    pub fn part_of(&self, x: u32) -> u32 {
        let units = self.units().max(1) as u64;
        let parts = self.part_count().max(1) as u64;
        let unit = (x / self.grain.max(1)) as u64;
        let q = ((unit + 1) * parts - 1) / units;
        (q as u32).min(self.part_count().saturating_sub(1))
    }

    /// Parts whose ranges intersect `span` (contiguous, possibly with empty parts).
    pub fn parts_touching(&self, span: Range<u32>) -> Range<u32> {
        if span.start >= span.end {
            return 0..0;
        }
        let first = self.part_of(span.start);
        let last = self.part_of(span.end - 1);
        first..last + 1
    }

    /// Largest part extent in elements.
    pub fn max_extent(&self) -> u32 {
        let g = self.grain.max(1);
        let per = self.units().div_ceil(self.part_count().max(1));
        per.saturating_mul(g).min(self.len)
    }

    /// Tile offset of part `part`.
    pub const fn tile_offset(&self, part: u32) -> u32 {
        let inner = if self.inner == 0 { 1 } else { self.inner };
        (part / inner) * self.outer_stride + (part % inner) * self.inner_stride
    }

    /// Every part in order as `(range(q), tile_offset(q))`, stepped without
    /// divisions (the planner walks every block of every live allocation at
    /// every moment, so this loop is its innermost one).
    fn walk(&self) -> AxisWalk {
        let parts = u64::from(self.part_count().max(1));
        let units = u64::from(self.units());
        AxisWalk {
            left: self.part_count(),
            unit: 0,
            rem: 0,
            step: units / parts,
            step_rem: units % parts,
            parts,
            grain: self.grain.max(1),
            len: self.len,
            inner: if self.inner == 0 { 1 } else { self.inner },
            i: 0,
            outer_offset: 0,
            outer_stride: self.outer_stride,
            inner_stride: self.inner_stride,
        }
    }
}

/// [`AxisSplit::walk`]: part `q`'s unit start `⌊q·U/P⌋` kept as a quotient
/// and remainder advanced by `U / P` and `U mod P` per part.
#[derive(Clone, Debug)]
struct AxisWalk {
    left: u32,
    /// `⌊q·U/P⌋` and `q·U mod P` of the current part `q`.
    unit: u64,
    rem: u64,
    step: u64,
    step_rem: u64,
    parts: u64,
    grain: u32,
    len: u32,
    inner: u32,
    /// `q mod inner` and `⌊q / inner⌋ · outer_stride`.
    i: u32,
    outer_offset: u32,
    outer_stride: u32,
    inner_stride: u32,
}

impl AxisWalk {
    fn element(&self, unit: u64) -> u32 {
        // `unit ≤ U ≤ u32::MAX`, as in `AxisSplit::range`.
        (unit as u32).saturating_mul(self.grain).min(self.len)
    }
}

impl Iterator for AxisWalk {
    type Item = (Range<u32>, u32);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let start = self.element(self.unit);
        self.unit += self.step;
        self.rem += self.step_rem;
        if self.rem >= self.parts {
            self.rem -= self.parts;
            self.unit += 1;
        }
        let end = self.element(self.unit);
        let offset = self.outer_offset + self.i * self.inner_stride;
        self.i += 1;
        if self.i == self.inner {
            self.i = 0;
            self.outer_offset += self.outer_stride;
        }
        Some((start..end, offset))
    }
}

/// A rectangle of a `[rows, cols]` tensor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    /// Row range.
    pub rows: Range<u32>,
    /// Column range.
    pub cols: Range<u32>,
}

impl Block {
    /// Elements in the block.
    pub fn elements(&self) -> u64 {
        (self.rows.len() as u64) * (self.cols.len() as u64)
    }
    /// True when the block holds no element.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() || self.cols.is_empty()
    }
    /// Intersection with `other` (possibly empty).
    pub fn intersect(&self, other: &Block) -> Block {
        let rows = self.rows.start.max(other.rows.start)..self.rows.end.min(other.rows.end);
        let cols = self.cols.start.max(other.cols.start)..self.cols.end.min(other.cols.end);
        Block { rows, cols }
    }
}

/// Where a tensor's blocks live: block `(rq, cq)` replica `r` is on tile
/// `first_tile + rows.tile_offset(rq) + cols.tile_offset(cq) + r·replica_stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Layout {
    /// Tile of block (0, 0), replica 0 (raw: the base of the layout's tile
    /// arithmetic; `validate` bounds every tile it reaches).
    pub first_tile: u32,
    /// Row split.
    pub rows: AxisSplit,
    /// Column split.
    pub cols: AxisSplit,
    /// Copies of every block.
    pub replicas: u32,
    /// Tile offset between replicas.
    pub replica_stride: u32,
}

/// A layout whose tiles fall outside the machine or collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// Some block would sit on a tile `>= TILE_COUNT`.
    TileOutOfRange {
        /// Highest tile the layout reaches.
        max_tile: u32,
    },
    /// A part or replica count is zero.
    EmptySplit,
}

impl core::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::TileOutOfRange { max_tile } => {
                write!(
                    f,
                    "layout reaches tile {max_tile}, machine has {TILE_COUNT}"
                )
            }
            Self::EmptySplit => write!(f, "layout has a zero part or replica count"),
        }
    }
}

impl core::error::Error for LayoutError {}

impl Layout {
    /// Whole tensor on one tile.
    pub const fn single(rows: u32, cols: u32, tile: u32) -> Self {
        Self {
            first_tile: tile,
            rows: AxisSplit::whole(rows),
            cols: AxisSplit::whole(cols),
            replicas: 1,
            replica_stride: 0,
        }
    }

    /// Rows split over `parts` consecutive tiles from `first`.
    pub fn row_split(rows: u32, cols: u32, first: u32, parts: u32) -> Self {
        let parts = parts.clamp(1, rows.max(1));
        Self {
            first_tile: first,
            rows: AxisSplit::parts(rows, 1, parts, 1),
            cols: AxisSplit::whole(cols),
            replicas: 1,
            replica_stride: 0,
        }
    }

    /// Balanced linear storage of a small tensor: its `rows·cols` elements in
    /// `grain`-element chunks over at most `max_tiles` tiles. Only one-row
    /// tensors (vectors) are split by columns; others fall back to rows so
    /// blocks stay rectangles.
    pub fn balanced_linear(rows: u32, cols: u32, grain: u32, first: u32, max_tiles: u32) -> Self {
        if rows <= 1 {
            let units = cols.div_ceil(grain.max(1)).max(1);
            let parts = units.min(max_tiles.max(1));
            Self {
                first_tile: first,
                rows: AxisSplit::whole(rows),
                cols: AxisSplit::parts(cols, grain.max(1), parts, 1),
                replicas: 1,
                replica_stride: 0,
            }
        } else {
            Self::row_split(rows, cols, first, max_tiles)
        }
    }

    /// The layout of columns `cols` of this tensor *in place*, when they are
    /// exactly a run of whole column parts: every tile then holds, for the
    /// window, precisely the block it holds now, so a column slice can be a
    /// view of the buffer (no bytes move). `None` when the window cuts a
    /// part, the column split is two-level, or the run is not itself a
    /// balanced split (checked part by part, at most one pass over the
    /// parts).
    pub fn column_window(&self, cols: Range<u32>) -> Option<Layout> {
        let c = &self.cols;
        if c.inner != 1 || cols.start >= cols.end || cols.end > c.len {
            return None;
        }
        let first = c.part_of(cols.start);
        let last = c.part_of(cols.end - 1);
        if c.range(first).start != cols.start || c.range(last).end != cols.end {
            return None;
        }
        let window = AxisSplit {
            len: cols.end - cols.start,
            outer: last - first + 1,
            ..*c
        };
        let shifted = |q: u32| {
            let r = window.range(q);
            r.start + cols.start..r.end + cols.start
        };
        if (0..window.outer).any(|q| shifted(q) != c.range(first + q)) {
            return None;
        }
        Some(Layout {
            first_tile: self
                .first_tile
                .checked_add(first.checked_mul(c.outer_stride)?)?,
            cols: window,
            ..*self
        })
    }

    /// Tensor rows.
    pub const fn tensor_rows(&self) -> u32 {
        self.rows.len
    }
    /// Tensor columns.
    pub const fn tensor_cols(&self) -> u32 {
        self.cols.len
    }

    /// Distinct blocks (excluding replicas).
    pub const fn block_count(&self) -> u32 {
        self.rows.part_count() * self.cols.part_count()
    }

    /// Tile of block `(rq, cq)`, replica `rep`.
    pub const fn tile_of(&self, rq: u32, cq: u32, rep: u32) -> u32 {
        self.first_tile
            + self.rows.tile_offset(rq)
            + self.cols.tile_offset(cq)
            + rep * self.replica_stride
    }

    /// The block `(rq, cq)`.
    pub fn block(&self, rq: u32, cq: u32) -> Block {
        Block {
            rows: self.rows.range(rq),
            cols: self.cols.range(cq),
        }
    }

    /// Largest block's element count (an upper bound on any tile's share).
    pub fn max_block_elements(&self) -> u64 {
        self.rows.max_extent() as u64 * self.cols.max_extent() as u64
    }

    /// Highest tile index used (for bounds checks).
    pub fn max_tile(&self) -> u32 {
        let r = self.rows.part_count().saturating_sub(1);
        let c = self.cols.part_count().saturating_sub(1);
        let rep = self.replicas.saturating_sub(1);
        // Offsets grow with the part index within each level, so the maximum
        // is reached at the last outer and inner index together.
        let row_max = self
            .rows
            .tile_offset(r)
            .max(self.rows.tile_offset(self.rows.inner.saturating_sub(1)));
        let col_max = self
            .cols
            .tile_offset(c)
            .max(self.cols.tile_offset(self.cols.inner.saturating_sub(1)));
        self.first_tile + row_max + col_max + rep * self.replica_stride
    }

    /// Checks part counts and the tile range.
    pub fn validate(&self) -> Result<(), LayoutError> {
        if self.rows.part_count() == 0 || self.cols.part_count() == 0 || self.replicas == 0 {
            return Err(LayoutError::EmptySplit);
        }
        let max_tile = self.max_tile();
        if max_tile >= TILE_COUNT {
            return Err(LayoutError::TileOutOfRange { max_tile });
        }
        Ok(())
    }

    /// Every (tile, block) pair including replicas, in block-major order.
    /// Empty blocks are skipped.
    pub fn placements(&self) -> impl Iterator<Item = (u32, Block)> + '_ {
        (0..self.replicas).flat_map(move |rep| {
            let base = self.first_tile + rep * self.replica_stride;
            self.rows
                .walk()
                .filter(|(rows, _)| !rows.is_empty())
                .flat_map(move |(rows, row_offset)| {
                    self.cols.walk().filter_map(move |(cols, col_offset)| {
                        (!cols.is_empty()).then(|| {
                            (
                                base + row_offset + col_offset,
                                Block {
                                    rows: rows.clone(),
                                    cols,
                                },
                            )
                        })
                    })
                })
        })
    }

    /// Calls `f(tile, elements)` for every non-empty block of
    /// [`Layout::placements`], in the same order (plain loops: the
    /// planner's per-tile memory sums run this at every moment).
    pub fn for_each_block_elements(&self, mut f: impl FnMut(u32, u64)) {
        for rep in 0..self.replicas {
            let base = self.first_tile + rep * self.replica_stride;
            for (rows, row_offset) in self.rows.walk() {
                let r = u64::from(rows.end - rows.start);
                if r == 0 {
                    continue;
                }
                for (cols, col_offset) in self.cols.walk() {
                    let c = u64::from(cols.end - cols.start);
                    if c != 0 {
                        f(base + row_offset + col_offset, r * c);
                    }
                }
            }
        }
    }

    /// Number of distinct tiles holding data (an upper bound when blocks are empty).
    pub const fn tile_span(&self) -> u32 {
        self.block_count() * self.replicas
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn covers_exactly(layout: &Layout) {
        let (r, c) = (layout.tensor_rows() as usize, layout.tensor_cols() as usize);
        let mut count = vec![0u32; r * c];
        assert_eq!(layout.replicas, 1);
        for (_, b) in layout.placements() {
            for row in b.rows.clone() {
                for col in b.cols.clone() {
                    count[row as usize * c + col as usize] += 1;
                }
            }
        }
        assert!(count.iter().all(|&n| n == 1), "{layout:?}");
    }

    #[test]
    fn placements_match_block_and_tile_of() {
        // The division-free walk against the per-part formulas, on two-level
        // splits with empty parts (more parts than units) and replicas.
        let mut x = 0x853c_49e6_748f_ea9bu64;
        let mut next = move |n: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(n)) as u32
        };
        for _ in 0..400 {
            let axis = |big: bool, next: &mut dyn FnMut(u32) -> u32| AxisSplit {
                len: next(if big { 5000 } else { 40 }) + 1,
                grain: [1, 2, 4, 16, 0][next(5) as usize],
                outer: next(12) + 1,
                outer_stride: next(40),
                inner: next(4) + 1,
                inner_stride: next(5),
            };
            let layout = Layout {
                first_tile: next(10),
                rows: axis(true, &mut next),
                cols: axis(false, &mut next),
                replicas: next(3) + 1,
                replica_stride: next(300),
            };
            let mut expected = Vec::new();
            for rep in 0..layout.replicas {
                for rq in 0..layout.rows.part_count() {
                    for cq in 0..layout.cols.part_count() {
                        let b = layout.block(rq, cq);
                        if !b.is_empty() {
                            expected.push((layout.tile_of(rq, cq, rep), b));
                        }
                    }
                }
            }
            let got: Vec<(u32, Block)> = layout.placements().collect();
            assert_eq!(got, expected, "{layout:?}");
            let mut sizes = Vec::new();
            layout.for_each_block_elements(|t, n| sizes.push((t, n)));
            let want: Vec<(u32, u64)> = expected.iter().map(|(t, b)| (*t, b.elements())).collect();
            assert_eq!(sizes, want, "{layout:?}");
        }
    }

    #[test]
    fn balanced_parts_tile_the_axis_and_part_of_inverts_range() {
        for len in [1u32, 2, 7, 64, 729, 1152, 4304] {
            for grain in [1u32, 2, 4, 16] {
                for parts in [1u32, 2, 3, 7, 16, 92, 1472] {
                    let s = AxisSplit::parts(len, grain, parts, 1);
                    let mut next = 0;
                    for q in 0..parts {
                        let r = s.range(q);
                        assert_eq!(r.start, next);
                        assert!(r.len() as u32 <= s.max_extent());
                        for x in [r.start, r.end.saturating_sub(1)] {
                            if !r.is_empty() {
                                assert_eq!(
                                    s.part_of(x),
                                    q,
                                    "len {len} grain {grain} parts {parts} x {x}"
                                );
                            }
                        }
                        next = r.end;
                    }
                    assert_eq!(next, len);
                }
            }
        }
    }

    #[test]
    fn a_column_window_of_whole_parts_is_those_blocks_in_place() {
        // A fused QKV output: 3456 columns in 108 parts of two 16-column
        // groups over 12 row blocks, column parts 2 tiles apart.
        let qkv = Layout {
            first_tile: 5,
            rows: AxisSplit::parts(729, 1, 12, 216),
            cols: AxisSplit::parts(3456, 16, 108, 2),
            replicas: 1,
            replica_stride: 0,
        };
        let k = qkv.column_window(1152..2304).unwrap();
        assert_eq!(k.cols.part_count(), 36);
        assert_eq!(k.first_tile, 5 + 36 * 2);
        let src: Vec<(u32, Block)> = qkv.placements().collect();
        for (tile, b) in k.placements() {
            let shifted = Block {
                rows: b.rows.clone(),
                cols: b.cols.start + 1152..b.cols.end + 1152,
            };
            assert!(src.contains(&(tile, shifted)), "tile {tile}: {b:?}");
        }
        // A window that cuts a part is no view.
        assert_eq!(qkv.column_window(1150..2304), None);
        assert_eq!(qkv.column_window(0..0), None);
        assert_eq!(qkv.column_window(0..3457), None);
    }

    #[test]
    fn nested_splits_agree() {
        for len in [729u32, 1152, 4304] {
            for (a, b) in [(2u32, 3u32), (16, 4), (92, 16)] {
                let fine = AxisSplit::parts(len, 4, a * b, 1);
                let coarse = AxisSplit::parts(len, 4, a, 1);
                for i in 0..a {
                    assert_eq!(fine.range(i * b).start, coarse.range(i).start);
                    assert_eq!(fine.range(i * b + b - 1).end, coarse.range(i).end);
                }
            }
        }
    }

    #[test]
    fn layouts_tile_tensors_exactly() {
        covers_exactly(&Layout::row_split(729, 8, 0, 92));
        covers_exactly(&Layout::balanced_linear(1, 1152, 4, 0, 1472));
        let blocks = Layout {
            first_tile: 3,
            rows: AxisSplit {
                len: 97,
                grain: 1,
                outer: 4,
                outer_stride: 1,
                inner: 3,
                inner_stride: 40,
            },
            cols: AxisSplit::parts(33, 4, 5, 4),
            replicas: 1,
            replica_stride: 0,
        };
        covers_exactly(&blocks);
        blocks.validate().unwrap();
        // Distinct tiles for distinct blocks.
        let mut tiles: alloc::vec::Vec<u32> = blocks.placements().map(|(t, _)| t).collect();
        let n = tiles.len();
        tiles.sort_unstable();
        tiles.dedup();
        assert_eq!(tiles.len(), n);
        assert_eq!(blocks.max_tile(), *tiles.last().unwrap());
    }

    #[test]
    fn small_vectors_are_spread_not_concentrated() {
        let v = Layout::balanced_linear(1, 1152, 4, 0, 1472);
        // 2304 bytes of FP16 spread over 288 tiles: 8 bytes each.
        assert_eq!(v.max_block_elements() * 2, 8);
        assert_eq!(v.block_count(), 288);
        assert!(Layout::single(1, 1, 1472).validate().is_err());
    }
}
