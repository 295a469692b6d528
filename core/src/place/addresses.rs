//! Where placement put each buffer, as emission and exchange planning read
//! it.

use alloc::string::String;
use core::fmt;

use crate::lower::{BufferId, BufferRef, TileSchedule};
use ipuc_target::ipu21::topology::LogicalTile;

/// Where placement put each buffer: the byte address of `buffer`'s block on
/// logical `tile` (the start of iteration 0 for iterated buffers).
pub trait BufferAddresses: Sync {
    /// `None` when the buffer has no block on that tile.
    fn base(&self, buffer: BufferId, tile: LogicalTile) -> Option<u32>;
}

/// Placement gave no address for a buffer a tile uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unplaced {
    /// The buffer.
    pub buffer: BufferId,
    /// Its name.
    pub name: String,
    /// The tile.
    pub tile: LogicalTile,
}

impl fmt::Display for Unplaced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "buffer {} `{}` has no SRAM address on logical tile {}",
            self.buffer.0,
            self.name,
            self.tile.get()
        )
    }
}

impl core::error::Error for Unplaced {}

/// Address of `at` on logical `tile` for iteration 0.
pub fn address(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    at: BufferRef,
    tile: LogicalTile,
) -> Result<u32, Unplaced> {
    let unplaced = || Unplaced {
        buffer: at.buffer,
        name: schedule
            .buffer(at.buffer)
            .map(|b| b.name.clone())
            .unwrap_or_default(),
        tile,
    };
    let base = addrs.base(at.buffer, tile).ok_or_else(unplaced)?;
    Ok(base + at.offset)
}
