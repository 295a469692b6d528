//! Tile SRAM map and per-tile memory budget of the IPU21 (C600).

/// First byte of tile SRAM (`docs/facts/ipu21-target.md` §1.2, `TILE_MEMORY_BASE`).
pub const TILE_MEMORY_BASE: u32 = 0x4C000;

/// Bytes of SRAM per tile, 624 KiB (`docs/facts/ipu21-target.md` §1.2, `TILE_MEMORY_SIZE`).
pub const TILE_MEMORY_SIZE: u32 = 0x9C000;

/// One past the last SRAM byte (`docs/facts/ipu21-target.md` §1.2).
pub const TILE_MEMORY_END: u32 = TILE_MEMORY_BASE + TILE_MEMORY_SIZE;

/// Instructions can only be fetched below this address (region 0)
/// (`docs/facts/ipu21-target.md` §1.2, `IPU21_EXECUTABLE_MEMORY_LIMIT`).
pub const EXECUTABLE_MEMORY_LIMIT: u32 = 0x80000;

/// The secondary loader cannot initialise bytes at or above this address
/// (`docs/facts/ipu21-target.md` §1.2, 0x4C010 + 643 frames × 992 bytes).
pub const LOADER_REACHABLE_LIMIT: u32 = 0xE7BB0;

/// Load and entry address of every tile image (`docs/facts/ipu21-target.md` §1.2,
/// `APPLICATION_LOAD_BASE`).
pub const APPLICATION_LOAD_BASE: u32 = 0x4C010;

/// Tile clock assumed for simulated milliseconds (`docs/facts/ipu21-target.md` §1.4).
pub const CLOCK_HZ: u64 = 1_500_000_000;

/// Per-tile bytes the planner may use, *including* the support reserve below
/// (`docs/facts/seed-vit-repeat-evaluation.txt`, "tile budget is 586960 bytes").
pub const TILE_MEMORY_BUDGET: u32 = 586_960;

/// Bytes of the tile budget reserved for package support (runtime, state,
/// worker stacks) (`docs/facts/seed-vit-repeat-evaluation.txt`, "49152-byte
/// package support reserve").
pub const SUPPORT_RESERVE_BYTES: u32 = 49_152;
