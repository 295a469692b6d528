//! Rows encoded relative to the exchange base registers (§2.3, §2.4).
//!
//! The scheduler encodes absolute addresses (both bases 0). [`rebase_row`]
//! rewrites such a row into the row that moves the same words when the tile
//! runs it holding `bases`: every `send` source address (the stream start
//! that is relative to `$OUTGOING_BASE`; `sendoff`/`sendpic` continue it)
//! becomes `address − outgoing/4`, every PIC pointer value
//! `pointer − incoming/4`. A transmitting `sendpicp` address is absolute
//! (§2.3) and is left as it is.

use alloc::vec::Vec;

use super::fields::{address_fields, with_address, AddressFieldKind};
use super::PatchError;
use crate::exchange::{decode_row, ReceiveError, RowBases};
use crate::ipu21::exchange_model::SCTL_PAIRED;
use crate::ipu21::isa::{encode, Instruction};
use crate::ipu21::topology::PhysicalTile;

/// `words` (a row with absolute addresses) re-encoded for a tile holding
/// `bases`. Fails when a relative address would be negative or not fit its
/// field, or when the bases are values the model does not cover for this
/// row (e.g. a non-zero outgoing base under 64-bit sends).
pub fn rebase_row(
    tile: PhysicalTile,
    words: &[u32],
    bases: RowBases,
) -> Result<Vec<u32>, PatchError> {
    let decode = |error| PatchError::Decode { tile, error };
    let row = decode_row(words).map_err(decode)?;
    bases.validate(tile, &row).map_err(|e| match e {
        ReceiveError::UncoveredCsr { csr, value, .. } => {
            PatchError::UncoveredBase { tile, csr, value }
        }
        _ => PatchError::ShapeMismatch { tile },
    })?;
    let mut out = words[..row.words].to_vec();
    for field in address_fields(words).map_err(decode)? {
        // The instruction carrying the field (a `sendpicp`'s PIC value is its
        // second word).
        let Some(ti) = row.instructions.iter().find(|ti| {
            ti.word_index == field.word_index
                || (ti.word_index + 1 == field.word_index
                    && matches!(ti.instruction, Instruction::SendPicP { .. }))
        }) else {
            continue;
        };
        let base_words = match (field.kind, ti.instruction) {
            (AddressFieldKind::Send, Instruction::Send { sctl, .. }) => {
                if sctl & SCTL_PAIRED != 0 {
                    // validate() allowed this only with outgoing base 0.
                    0
                } else {
                    bases.outgoing / 4
                }
            }
            // The transmitting `sendpicp` address is absolute.
            (AddressFieldKind::Send, _) => 0,
            (AddressFieldKind::PicPointer, _) => bases.incoming / 4,
        };
        if base_words == 0 {
            continue;
        }
        let relative = i64::from(field.word_address) - i64::from(base_words);
        let out_of_range = PatchError::AddressOutOfRange {
            tile,
            word_index: field.word_index,
            iteration: 0,
            address: relative,
        };
        let a = u32::try_from(relative).map_err(|_| out_of_range.clone())?;
        // Fields are re-read from `out`: a `sendpicp` carries two fields.
        let (current, _) = crate::ipu21::isa::decode(&out[ti.word_index..]).map_err(|error| {
            decode(crate::exchange::RowDecodeError::Isa {
                index: ti.word_index,
                error,
            })
        })?;
        let enc = encode(&with_address(current, field.kind, a)).map_err(|_| out_of_range)?;
        for (k, w) in enc.words().iter().enumerate() {
            out[ti.word_index + k] = *w;
        }
    }
    Ok(out)
}
