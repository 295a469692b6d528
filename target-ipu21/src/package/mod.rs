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
//! use ipuc_target::package::{self, Package, Segment, SegmentRole, TileImage};
//! use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;
//!
//! let mut p = Package::new("example");
//! let mut tile = TileImage::new(0, APPLICATION_LOAD_BASE);
//! tile.segments.push(Segment::code(APPLICATION_LOAD_BASE, SegmentRole::Runtime, &[0x19e0_0000]));
//! p.tiles.push(tile);
//! let bytes = package::write(&p).unwrap();
//! assert_eq!(package::read(&bytes).unwrap(), p);
//! ```
//!
//! # Format, version 3
//!
//! All integers are little-endian; every variable-length item is preceded by
//! its u32 length or count. Text is UTF-8.
//!
//! ```text
//! header   magic "IPUCPKG\0" (8) · version u16 · reserved u16 = 0
//! section  tag u32 · length u64 · body          (eight sections, in this order)
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
//!   8 description  version u16 · body: what the package was compiled from,
//!                opaque here ([`DescriptionSection`]; its layout is
//!                `ipuc_core::description`'s)
//! digest   SHA-256 (32) of every byte before it
//! ```
//!
//! The reader checks the magic, then the digest, before it reads anything
//! else: any changed byte is a [`PackageError::DigestMismatch`] (or a bad
//! magic), never a package with different contents. The digest is the
//! package's identity: the hash the CLI prints ([`digest_hex`]).
//!
//! Canonical order (enforced by the reader, produced by the writer): tiles,
//! step tables by physical tile; segments by address; kernels, bindings,
//! host calls and summary keys by name; slices by (file offset, tile,
//! address); steps by id. Hence one package has exactly one encoding.

pub mod abi;
mod check;
mod encode;
mod error;
mod model;
mod read;
pub mod wire;

pub use abi::{NativeKernelAbi, INFERENCE_CALL};
pub use error::{PackageError, Result};
pub use model::*;

use alloc::string::String;
use alloc::vec::Vec;

use sha2::{Digest, Sha256};

/// First eight bytes of every package.
pub const MAGIC: [u8; 8] = *b"IPUCPKG\0";

/// The format version this crate writes and reads.
/// 3 added the description section (8).
pub const FORMAT_VERSION: u16 = 3;

/// Length of the SHA-256 digest that ends every package.
pub const DIGEST_BYTES: usize = 32;

/// Smallest possible package: header (12 bytes) and digest.
const MIN_BYTES: usize = 12 + DIGEST_BYTES;

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
    Description = 8,
}

impl Section {
    /// Every section, in file order (a package holds each once).
    pub const ALL: [Section; 8] = [
        Section::Target,
        Section::Tiles,
        Section::Kernels,
        Section::Bindings,
        Section::HostCalls,
        Section::Steps,
        Section::PlanSummary,
        Section::Description,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Section::Target => "target",
            Section::Tiles => "tiles",
            Section::Kernels => "kernels",
            Section::Bindings => "bindings",
            Section::HostCalls => "host calls",
            Section::Steps => "steps",
            Section::PlanSummary => "plan summary",
            Section::Description => "description",
        }
    }
}

/// Encodes `package` canonically and validates the result with [`read`].
/// Same package contents → byte-identical output.
pub fn write(package: &Package) -> Result<Vec<u8>> {
    let bytes = seal(encode::encode(package)?);
    read(&bytes)?;
    Ok(bytes)
}

/// Encodes and seals `package` *without* validating it: a package the
/// reader must refuse, for the tools that test the reader from outside
/// (`cargo xtask hostile` re-seals packages that alias bindings or
/// contradict their description, which `ipuc_core::description` refuses). Everything else writes with [`write`].
pub fn write_unvalidated(package: &Package) -> Result<Vec<u8>> {
    Ok(seal(encode::encode(package)?))
}

/// Decodes and validates package bytes: magic, then the digest over
/// everything before it, then every section.
pub fn read(bytes: &[u8]) -> Result<Package> {
    if bytes.len() >= MAGIC.len() && bytes[..MAGIC.len()] != MAGIC {
        let mut found = [0u8; 8];
        found.copy_from_slice(&bytes[..8]);
        return Err(PackageError::BadMagic { found });
    }
    if bytes.len() < MIN_BYTES {
        return Err(PackageError::Truncated {
            offset: 0,
            field: "header and digest",
            needed: MIN_BYTES,
            available: bytes.len(),
        });
    }
    let body_len = bytes.len() - DIGEST_BYTES;
    let (body, tail) = bytes.split_at(body_len);
    let mut stored = [0u8; DIGEST_BYTES];
    stored.copy_from_slice(tail);
    let computed: [u8; DIGEST_BYTES] = Sha256::digest(body).into();
    if stored != computed {
        return Err(PackageError::DigestMismatch {
            offset: body_len,
            stored,
            computed,
        });
    }
    read::read(body)
}

/// Appends the SHA-256 of `body` (encoded sections, as [`write`] produces
/// them before sealing). Used by the writer, and by tests and fuzz targets
/// that edit package bodies to reach the checks behind the digest.
pub fn seal(mut body: Vec<u8>) -> Vec<u8> {
    let digest = Sha256::digest(&body);
    body.extend_from_slice(&digest);
    body
}

/// The stored digest of package bytes (their last [`DIGEST_BYTES`]),
/// unverified; `None` if the bytes are too short to hold one.
pub fn stored_digest(bytes: &[u8]) -> Option<[u8; DIGEST_BYTES]> {
    if bytes.len() < MIN_BYTES {
        return None;
    }
    let mut d = [0u8; DIGEST_BYTES];
    d.copy_from_slice(&bytes[bytes.len() - DIGEST_BYTES..]);
    Some(d)
}

/// Lower-case hex of the digest of `bytes` as the CLI prints it: the
/// stored digest of a valid package (= SHA-256 of everything before it).
/// For bytes too short to be a package, the SHA-256 of all of them.
pub fn digest_hex(bytes: &[u8]) -> String {
    match stored_digest(bytes) {
        Some(d) => hex(&d),
        None => hex(&Sha256::digest(bytes).into()),
    }
}

/// Lower-case hex of a digest.
pub fn hex(digest: &[u8; DIGEST_BYTES]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * DIGEST_BYTES);
    for &b in digest {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests;
