//! Address-bearing fields of exchange row words, and row *shapes* (the row
//! with every SRAM address field zeroed, §2.8).

use alloc::vec::Vec;

use crate::exchange::{decode_row, RowDecodeError};
use ipuc_target::ipu21::exchange_model::SCTL_PAIRED;
use ipuc_target::ipu21::isa::{encode, Instruction, PicField, PicTarget};

/// What an address field addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AddressFieldKind {
    /// Source word address of a `send` or transmitting `sendpicp` prefix.
    Send,
    /// Receive pointer in `delaypic`, `sendpic` (PIC pointer) or the inline
    /// word of a `sendpicp`.
    PicPointer,
}

/// One row word that carries an SRAM address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AddressField {
    /// Index of the word in the row.
    pub word_index: usize,
    pub kind: AddressFieldKind,
    /// The address it holds: in words, or in 8-byte units for the source of
    /// a 64-bit send (`item_bytes` = 8).
    pub word_address: u32,
    /// Bytes per unit of `word_address`: 8 for 64-bit sends, else 4.
    pub item_bytes: u32,
    /// Event the instruction starts at.
    pub event: u32,
}

/// Every address-bearing word of a row, in row order.
pub fn address_fields(words: &[u32]) -> Result<Vec<AddressField>, RowDecodeError> {
    let row = decode_row(words)?;
    let mut out = Vec::new();
    for ti in &row.instructions {
        let mut push = |word_index, kind, word_address, item_bytes| {
            out.push(AddressField {
                word_index,
                kind,
                word_address,
                item_bytes,
                event: ti.start,
            })
        };
        let unit = |sctl: u32| if sctl & SCTL_PAIRED != 0 { 8 } else { 4 };
        match ti.instruction {
            Instruction::Send { addr, sctl, .. } => {
                push(ti.word_index, AddressFieldKind::Send, addr, unit(sctl))
            }
            Instruction::SendPicP {
                addr,
                sctl,
                psel,
                pic,
                ..
            } => {
                if sctl != 0 {
                    push(ti.word_index, AddressFieldKind::Send, addr, unit(sctl));
                }
                if psel == PicField::Pointer {
                    push(ti.word_index + 1, AddressFieldKind::PicPointer, pic, 4);
                }
            }
            Instruction::DelayPic {
                sel: PicField::Pointer,
                value,
                ..
            } => push(ti.word_index, AddressFieldKind::PicPointer, value, 4),
            Instruction::SendPic {
                sel: PicTarget::PicPointer,
                value,
                ..
            } => push(ti.word_index, AddressFieldKind::PicPointer, value, 4),
            _ => {}
        }
    }
    Ok(out)
}

/// Replaces the address of `instr` (the field at `kind`) with `word_address`.
pub(crate) fn with_address(
    instr: Instruction,
    kind: AddressFieldKind,
    word_address: u32,
) -> Instruction {
    match (instr, kind) {
        (Instruction::Send { n, sctl, .. }, AddressFieldKind::Send) => Instruction::Send {
            n,
            addr: word_address,
            sctl,
        },
        (
            Instruction::SendPicP {
                n,
                sctl,
                psel,
                xpic,
                pic,
                ..
            },
            AddressFieldKind::Send,
        ) if sctl != 0 => Instruction::SendPicP {
            n,
            addr: word_address,
            sctl,
            psel,
            xpic,
            pic,
        },
        (
            Instruction::SendPicP {
                n,
                addr,
                sctl,
                psel: psel @ PicField::Pointer,
                xpic,
                ..
            },
            AddressFieldKind::PicPointer,
        ) => Instruction::SendPicP {
            n,
            addr,
            sctl,
            psel,
            xpic,
            pic: word_address,
        },
        (
            Instruction::DelayPic {
                n,
                sel: sel @ PicField::Pointer,
                ..
            },
            AddressFieldKind::PicPointer,
        ) => Instruction::DelayPic {
            n,
            sel,
            value: word_address,
        },
        (
            Instruction::SendPic {
                n,
                sel: sel @ PicTarget::PicPointer,
                ..
            },
            AddressFieldKind::PicPointer,
        ) => Instruction::SendPic {
            n,
            sel,
            value: word_address,
        },
        (other, _) => other,
    }
}

/// The row with every address field zeroed: rows with equal shapes differ
/// only in addresses and can share one placed copy (§2.8).
pub fn row_shape(words: &[u32]) -> Result<Vec<u32>, RowDecodeError> {
    let row = decode_row(words)?;
    let mut shape = words[..row.words].to_vec();
    for ti in &row.instructions {
        let mut i = ti.instruction;
        for kind in [AddressFieldKind::Send, AddressFieldKind::PicPointer] {
            i = with_address(i, kind, 0);
        }
        // Zeroing an address keeps every field in range, so encoding succeeds;
        // fall back to the original words if it ever did not.
        if let Ok(enc) = encode(&i) {
            for (k, w) in enc.words().iter().enumerate() {
                shape[ti.word_index + k] = *w;
            }
        }
    }
    Ok(shape)
}
