//! The ipuc package: a versioned binary container for one IPU21 application.
//!
//! A package holds every tile's SRAM image (segments), the native-kernel
//! symbol table, bindings of inputs/outputs/weights to tile address ranges,
//! host call descriptors, optional per-tile step tables for the profile and a
//! plan summary. The simulator loads packages only through [`read`]; the
//! compiler produces them only through [`write`], which validates with the
//! same reader, so an invalid package is never written.
//!
//! ```
//! use ipuc_core::package::{self, Package, Segment, SegmentRole, TileImage};
//! use ipuc_core::ipu21::sram::APPLICATION_LOAD_BASE;
//!
//! let mut p = Package::new("example");
//! let mut tile = TileImage::new(0, APPLICATION_LOAD_BASE);
//! tile.segments.push(Segment::code(APPLICATION_LOAD_BASE, SegmentRole::Runtime, &[0x19e0_0000]));
//! p.tiles.push(tile);
//! let bytes = package::write(&p).unwrap();
//! assert_eq!(package::read(&bytes).unwrap(), p);
//! ```
//!
//! # Format, version 1
//!
//! All integers are little-endian; every variable-length item is preceded by
//! its u32 length or count. Text is UTF-8.
//!
//! ```text
//! header   magic "IPUCPKG\0" (8) · version u16 · reserved u16 = 0
//! section  tag u32 · length u64 · body          (seven sections, in this order)
//!   1 target     producer str · tile_count u32 · memory_base u32 · memory_size u32
//!                · executable_limit u32 · loader_limit u32 · clock_hz u64
//!   2 tiles      n · { physical u32 · entry u32 · nseg · { address u32 · memory_size u32
//!                · flags u8 (R1 W2 X4) · role u8 · reserved u16 · data blob } }
//!   3 kernels    n · { name str · address u32 }
//!   4 bindings   n · { kind u8 · dtype u8 · scale i8 · reserved u8 · name str · rank · dims u64…
//!                · nslice · { file_offset u64 · tile u32 · tile_address u32 · size u32 } }
//!   5 host calls n · { name str · command u32 · phases u32 · invocations u32
//!                · inputs n·{binding str · file_offset u64 · size u64} · outputs (same) }
//!   6 steps      nops · op str… · ntables · { tile u32 · n · { step u32 · kind u8
//!                · has_repeat u8 · reserved u16 · operation u32 · code_address u32
//!                · repeat u32 · trip_count u32 } }
//!   7 plan       n · { key str · tag u8 (0 text, 1 i64, 2 f64 bits) · value }
//! ```
//!
//! Canonical order (enforced by the reader, produced by the writer): tiles,
//! step tables by physical tile; segments by address; kernels, bindings,
//! host calls and summary keys by name; slices by (file offset, tile,
//! address); steps by id. Hence one package has exactly one encoding.

mod check;
mod encode;
mod error;
mod model;
mod read;
mod wire;

pub use error::{PackageError, Result};
pub use model::*;

use alloc::vec::Vec;

/// First eight bytes of every package.
pub const MAGIC: [u8; 8] = *b"IPUCPKG\0";

/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// Section tags, in the order they appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Section {
    Target = 1,
    Tiles = 2,
    Kernels = 3,
    Bindings = 4,
    HostCalls = 5,
    Steps = 6,
    PlanSummary = 7,
}

impl Section {
    pub const fn name(self) -> &'static str {
        match self {
            Section::Target => "target",
            Section::Tiles => "tiles",
            Section::Kernels => "kernels",
            Section::Bindings => "bindings",
            Section::HostCalls => "host calls",
            Section::Steps => "steps",
            Section::PlanSummary => "plan summary",
        }
    }
}

/// Encodes `package` canonically and validates the result with [`read`].
/// Same package contents → byte-identical output.
pub fn write(package: &Package) -> Result<Vec<u8>> {
    let bytes = encode::encode(package)?;
    read::read(&bytes)?;
    Ok(bytes)
}

/// Decodes and validates package bytes.
pub fn read(bytes: &[u8]) -> Result<Package> {
    read::read(bytes)
}

#[cfg(test)]
mod tests;
