//! [`TileBlock`]: one tile's rectangle of a value — the operand extent
//! vocabulary shared by the planner's memory estimate, lowering's buffers and
//! placement.

use core::ops::Range;

use ipuc_target::ipu21::topology::LogicalTile;

/// One tile's block of a buffer: the rectangle of the value's 2-D view
/// (`[rows, cols]`, leading dims folded into rows) it holds, stored
/// row-major with pitch `cols.len() × element bytes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileBlock {
    /// Logical tile (the planner's index).
    pub tile: LogicalTile,
    /// Rows of the value held.
    pub rows: Range<u32>,
    /// Columns of the value held.
    pub cols: Range<u32>,
    /// Bytes of one copy of the block (one iteration for iterated buffers),
    /// excluding alignment padding.
    pub bytes: u32,
}
