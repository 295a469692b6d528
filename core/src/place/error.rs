//! Placement errors: each names the tile and the buffer or range at fault,
//! with the numbers that explain it.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

use super::request::{BufferId, RegionClass};
use ipuc_target::ipu21::topology::LogicalTile;

/// Why a tile's buffers could not be placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlaceError {
    /// No free range is large enough for a buffer during its lifetime.
    NoRoom {
        /// Logical tile.
        tile: LogicalTile,
        /// The buffer that did not fit.
        buffer: BufferId,
        /// Its name.
        name: String,
        /// Its class.
        class: RegionClass,
        /// Bytes it needs (all copies).
        bytes_needed: u32,
        /// Largest suitably aligned free range its class offers while it is live.
        largest_free: u32,
        /// Bytes held by other buffers live at the same time in its class's regions.
        live_bytes: u32,
        /// Its first step.
        first_step: u32,
    },
    /// The alignment is zero or not a power of two.
    BadAlignment {
        /// Logical tile.
        tile: LogicalTile,
        /// The buffer.
        buffer: BufferId,
        /// Requested alignment.
        align: u32,
    },
    /// `copies × stride` does not fit in 32 bits.
    SizeOverflow {
        /// Logical tile.
        tile: LogicalTile,
        /// The buffer.
        buffer: BufferId,
        /// Bytes per copy.
        bytes: u32,
        /// Copies.
        copies: u32,
    },
    /// The lifetime ends before it starts.
    BadLifetime {
        /// Logical tile.
        tile: LogicalTile,
        /// The buffer.
        buffer: BufferId,
        /// First step.
        first_step: u32,
        /// Last step.
        last_step: u32,
    },
    /// Two buffers share a key.
    DuplicateBuffer {
        /// Logical tile.
        tile: LogicalTile,
        /// The repeated key.
        buffer: BufferId,
    },
    /// A conflict names a buffer the request does not contain.
    UnknownConflictBuffer {
        /// Logical tile.
        tile: LogicalTile,
        /// The missing key.
        buffer: BufferId,
    },
    /// A conflict pairs a buffer with itself (a buffer cannot keep out of
    /// its own element).
    SelfConflict {
        /// Logical tile.
        tile: LogicalTile,
        /// The buffer.
        buffer: BufferId,
    },
    /// The bytes charged at the tile's peak step (reserved ranges' blocked
    /// bytes plus every buffer live then, all copies and alignment padding)
    /// exceed the per-tile budget.
    OverBudget {
        /// Logical tile.
        tile: LogicalTile,
        /// The step of the peak.
        step: u32,
        /// Bytes charged at that step.
        charged: u32,
        /// Of which the reserved ranges' blocked bytes.
        reserved: u32,
        /// The per-tile budget (`TILE_MEMORY_BUDGET`).
        budget: u32,
        /// Buffers live at that step with their spans, largest first.
        live: Vec<(String, u32)>,
    },
    /// A tile's linked image (runtime, stubs, program, argument blocks,
    /// exchange rows) is longer than the region-0 bytes below its lowest
    /// data, less that data's element and the 64-byte fetch look-ahead.
    CodeDoesNotFit {
        /// Logical tile.
        tile: LogicalTile,
        /// Bytes of the linked image from the load address.
        image_bytes: u32,
        /// Bytes free for it from the load address.
        free_bytes: u32,
        /// The address the image must end at or below.
        limit: u32,
    },
    /// A reserved range is empty, reversed or outside SRAM.
    ReservedOutsideSram {
        /// Logical tile.
        tile: LogicalTile,
        /// Range name.
        name: String,
        /// Its addresses.
        range: Range<u32>,
    },
}

/// Result alias for placement.
pub type PlaceResult<T> = Result<T, PlaceError>;

impl fmt::Display for PlaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlaceError::NoRoom {
                tile,
                buffer,
                name,
                class,
                bytes_needed,
                largest_free,
                live_bytes,
                first_step,
            } => write!(
                f,
                "tile {tile}: buffer {} `{name}` ({class:?}, live from step {first_step}) needs {bytes_needed} bytes but the largest free range is {largest_free} bytes ({live_bytes} bytes held by buffers live at the same time)",
                buffer.0,
                tile = tile.get()
            ),
            PlaceError::BadAlignment { tile, buffer, align } => write!(
                f,
                "tile {tile}: buffer {} has alignment {align}, which is not a power of two",
                buffer.0,
                tile = tile.get()
            ),
            PlaceError::SizeOverflow {
                tile,
                buffer,
                bytes,
                copies,
            } => write!(
                f,
                "tile {tile}: buffer {} of {copies} copies × {bytes} bytes overflows 32-bit addresses",
                buffer.0,
                tile = tile.get()
            ),
            PlaceError::BadLifetime {
                tile,
                buffer,
                first_step,
                last_step,
            } => write!(
                f,
                "tile {tile}: buffer {} lives from step {first_step} to step {last_step}",
                buffer.0,
                tile = tile.get()
            ),
            PlaceError::DuplicateBuffer { tile, buffer } => {
                write!(f, "tile {tile}: buffer {} requested twice", buffer.0,
                tile = tile.get()
            )
            }
            PlaceError::UnknownConflictBuffer { tile, buffer } => write!(
                f,
                "tile {tile}: element conflict names buffer {}, which is not on this tile",
                buffer.0,
                tile = tile.get()
            ),
            PlaceError::SelfConflict { tile, buffer } => write!(
                f,
                "tile {tile}: element conflict pairs buffer {} with itself",
                buffer.0,
                tile = tile.get()
            ),
            PlaceError::OverBudget {
                tile,
                step,
                charged,
                reserved,
                budget,
                live,
            } => {
                write!(
                    f,
                    "tile {tile}: {charged} bytes charged at step {step} ({reserved} reserved + {} in {} live buffers) exceed the budget of {budget} bytes by {}",
                    charged.saturating_sub(*reserved),
                    live.len(),
                    charged.saturating_sub(*budget),
                    tile = tile.get()
                )?;
                for (name, bytes) in live.iter().take(12) {
                    write!(f, "\n  {bytes:>9} B  {name}")?;
                }
                if live.len() > 12 {
                    write!(f, "\n  … {} more", live.len() - 12)?;
                }
                Ok(())
            }
            PlaceError::CodeDoesNotFit {
                tile,
                image_bytes,
                free_bytes,
                limit,
            } => write!(
                f,
                "logical tile {tile}: code, argument blocks and exchange rows need {image_bytes} bytes but only {free_bytes} are free below {limit:#x} (the lowest data's element less the 64-byte fetch look-ahead)",
                tile = tile.get()
            ),
            PlaceError::ReservedOutsideSram { tile, name, range } => write!(
                f,
                "tile {tile}: reserved range `{name}` {:#x}..{:#x} is empty or outside SRAM",
                range.start, range.end,
                tile = tile.get()
            ),
        }
    }
}

impl core::error::Error for PlaceError {}
