//! Exchange row patching (`docs/facts/ipu21-target.md` §2.8, §2.9, §5.3):
//!
//! - [`repeat`]: Repeat patch tables — inside a structured Repeat, every
//!   address-bearing send word of a row whose source is iteration `i` of an
//!   iterated sequence gets one replacement word per iteration, applied by the
//!   runtime's `patch_word` before the row runs;
//! - [`sharing`]: rows on one tile that differ only in address fields are
//!   stored once; when their uses differ, each use carries a patch list
//!   (byte offsets + words of the differing address words) applied by the
//!   scalar patcher below 24 words and by the six-worker bulk patcher from
//!   24 words; rows used once, or re-used unchanged, carry none;
//! - [`audit`]: a summary of both (rows, displacement runs, per-phase
//!   eligibility for a constant outgoing base) in the shape of the seed
//!   report `docs/facts/seed-vit-repeat-evaluation.txt`.

pub mod audit;
mod fields;
pub mod relocate;
pub mod repeat;
pub mod sharing;

use core::fmt;

use crate::exchange::RowDecodeError;
use ipuc_target::ipu21::isa::IsaError;
use ipuc_target::ipu21::topology::PhysicalTile;

pub use fields::{address_fields, row_shape, AddressField, AddressFieldKind};

/// Errors of the patch layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatchError {
    /// The row does not decode.
    Decode {
        tile: PhysicalTile,
        error: RowDecodeError,
    },
    /// An iterated address leaves its instruction field or SRAM.
    AddressOutOfRange {
        tile: PhysicalTile,
        word_index: usize,
        iteration: u32,
        address: i64,
    },
    /// A stride that is not a multiple of the transfer's item size.
    MisalignedStride { transfer: usize, stride: i64 },
    /// An iterated transfer index that is not in the phase.
    UnknownTransfer { transfer: usize },
    /// A Repeat needs at least one iteration.
    NoIterations,
    /// Re-encoding a patched word failed.
    Isa { tile: PhysicalTile, error: IsaError },
    /// Two uses on one tile disagree about the shape they share (a bug).
    ShapeMismatch { tile: PhysicalTile },
    /// In some iteration, a Repeat-moved send source shares an SRAM element
    /// with a receive on the same tile while both are active (§2.10 rule 5).
    ElementConflict {
        tile: PhysicalTile,
        transfer: usize,
        iteration: u32,
        /// First byte of the moved source span.
        address: u32,
        /// Sender event at which the conflicting send starts.
        event: u64,
    },
    /// A patch table entry point or table address that does not fit `setzi`.
    AddressTooLarge { what: &'static str, address: u32 },
    /// A base register value the exchange model does not cover for this row
    /// (`exchange::RowBases::validate`).
    UncoveredBase {
        tile: PhysicalTile,
        csr: u16,
        value: u32,
    },
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::Decode { tile, error } => write!(f, "{tile}: row does not decode: {error}"),
            PatchError::AddressOutOfRange {
                tile,
                word_index,
                iteration,
                address,
            } => write!(
                f,
                "{tile}: row word {word_index} at iteration {iteration} would address word {address:#x}, outside its field or SRAM"
            ),
            PatchError::MisalignedStride { transfer, stride } => {
                write!(f, "transfer {transfer}: stride {stride} bytes is not item aligned")
            }
            PatchError::UnknownTransfer { transfer } => write!(f, "no transfer {transfer} in the phase"),
            PatchError::NoIterations => f.write_str("a Repeat needs at least one iteration"),
            PatchError::Isa { tile, error } => write!(f, "{tile}: {error}"),
            PatchError::ShapeMismatch { tile } => write!(f, "{tile}: shared rows differ in shape"),
            PatchError::ElementConflict {
                tile,
                transfer,
                iteration,
                address,
                event,
            } => write!(
                f,
                "{tile}: transfer {transfer} in iteration {iteration} sends from {address:#x} (event {event}) while a receive writes the same SRAM element"
            ),
            PatchError::AddressTooLarge { what, address } => {
                write!(f, "{what} {address:#x} does not fit a 20-bit setzi")
            }
            PatchError::UncoveredBase { tile, csr, value } => write!(
                f,
                "{tile}: base CSR {csr:#x} = {value:#x} is not covered by the exchange model for this row"
            ),
        }
    }
}

impl core::error::Error for PatchError {}

#[cfg(test)]
mod tests;
