//! How large each kind of input may be, checked from metadata before a byte
//! is read. Where the chip bounds what is useful, the limit is derived from
//! it; the others are generous caps for text and containers, said so.

use ipuc_target::ipu21::sram::TILE_MEMORY_SIZE;
use ipuc_target::ipu21::topology::TILE_COUNT;

/// Every tile's SRAM: 1472 × 638,976 = 940,572,672 bytes (the same figure
/// as `model::config::DEVICE_SRAM_BYTES`, which the model checks use).
const CHIP_SRAM: u64 = TILE_COUNT as u64 * TILE_MEMORY_SIZE as u64;

const MIB: u64 = 1 << 20;

/// An upper bound on a file's size, with the reason printed when exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    /// Completes "more than the N bytes …".
    pub why: &'static str,
}

impl Limit {
    /// A package holds at most every tile's SRAM as images; its tables
    /// (bindings, step tables, names) are allowed as much again.
    pub const PACKAGE: Limit = Limit {
        bytes: 2 * CHIP_SRAM,
        why: "a package can need (twice the chip's 940,572,672 bytes of SRAM: images plus their tables)",
    };
    /// `pixel_values` in F32 must fit the chip's SRAM; 1 MiB more for the
    /// `.npy` header.
    pub const NPY: Limit = Limit {
        bytes: CHIP_SRAM + MIB,
        why: "an input can use (the chip's SRAM plus 1 MiB of .npy header)",
    };
    /// `config.json` is a few kilobytes; 16 MiB is a generous cap.
    pub const CONFIG: Limit = Limit {
        bytes: 16 * MIB,
        why: "a config.json may have",
    };
    /// Compressed PNG/JPEG files; decoding is bounded separately.
    pub const IMAGE: Limit = Limit {
        bytes: 256 * MIB,
        why: "an input image may have",
    };
    /// Assembly source: an object is at most one tile's 638,976 bytes, so
    /// 64 MiB of text (about 100 characters per byte) is a generous cap.
    pub const ASSEMBLY: Limit = Limit {
        bytes: 64 * MIB,
        why: "an assembly source may have",
    };
    /// A developer dump of scheduled exchange phases (`IPUC_DUMP_PHASES`).
    pub const PHASE_DUMP: Limit = Limit {
        bytes: 2 * CHIP_SRAM,
        why: "a phase dump may have",
    };
    /// The JSON header of a `.safetensors` file (the `safetensors` crate
    /// refuses headers over 100 MB itself).
    pub const SAFETENSORS_HEADER: Limit = Limit {
        bytes: 100_000_000,
        why: "a safetensors header may have",
    };
}
