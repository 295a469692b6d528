//! The IPU21 scalar/exchange instruction set: register and CSR names, the
//! [`Instruction`] type, [`encode`], [`decode`] and disassembly (`Display`).
//!
//! Encodings follow docs/facts/ipu21-target.md §3; for the forms it marks as
//! inferred or contradictory we follow its recommendation and say so next to
//! the constant (`encode.rs`).
//!
//! ```
//! use ipuc_target::ipu21::isa::{decode, encode, m, Csr, Instruction};
//! let put = Instruction::put(Csr::INCOMING_MUX, m::M2);
//! let enc = encode(&put).unwrap();
//! assert_eq!(enc.words(), &[0x432080A0]);
//! assert_eq!(decode(enc.words()).unwrap(), (put, 1));
//! assert_eq!(put.to_string(), "put $INCOMING_MUX, $m2");
//! ```

mod csr;
mod decode;
mod disasm;
mod encode;
mod instr;
mod reg;

use core::fmt;

pub use csr::{
    Csr, CsrContext, CsrInfo, CsrSpace, SyncZone, CSR_TABLE, SYNC_ZONE_NAMES,
    WORKER_SYNC_CONTEXT_CSR,
};
pub use decode::decode;
pub use disasm::Disasm;
pub use encode::{encode, MAX_TARGET, NOP_WORD, SENDPICP_ALIGN};
pub use instr::{Imm12Op, Imm16Op, Instruction, PicField, PicTarget, RegOp};
pub use reg::{m, AReg, MReg, ARF_COUNT, MRF_COUNT};

/// One encoded instruction: one word, or two for `sendpicp` (prefix + payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoded {
    words: [u32; 2],
    len: usize,
}

impl Encoded {
    pub(crate) const fn one(w: u32) -> Encoded {
        Encoded {
            words: [w, 0],
            len: 1,
        }
    }
    pub(crate) const fn two(w0: u32, w1: u32) -> Encoded {
        Encoded {
            words: [w0, w1],
            len: 2,
        }
    }
    /// The encoded words (length 1 or 2).
    pub fn words(&self) -> &[u32] {
        &self.words[..self.len]
    }
}

/// ISA-level errors: operand ranges when encoding, unknown or inexact words
/// when decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsaError {
    /// An operand does not fit its field.
    FieldRange {
        field: &'static str,
        value: i64,
        min: i64,
        max: i64,
    },
    /// An operand is not a multiple of `align`.
    Misaligned {
        field: &'static str,
        value: u32,
        align: u32,
    },
    /// A register number outside `$m0..$m15` / `$a0..$a15`.
    BadRegister { file: char, index: u32 },
    /// A CSR name in the upper space (unreachable by `get`/`put`).
    UpperCsr { index: u16 },
    /// A name that is not in the CSR table.
    UnknownCsrName,
    /// `decode` was given no words.
    NoWords,
    /// No documented form matches this word.
    UnknownWord { word: u32 },
    /// The word matches a form but has bits set outside its fields.
    ReservedBits {
        word: u32,
        mnemonic: &'static str,
        stray: u32,
    },
    /// A `sendpicp` prefix without its payload word.
    MissingPayload { word: u32 },
}

impl fmt::Display for IsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IsaError::FieldRange {
                field,
                value,
                min,
                max,
            } => {
                write!(f, "{field} value {value} out of range {min}..={max}")
            }
            IsaError::Misaligned {
                field,
                value,
                align,
            } => {
                write!(
                    f,
                    "{field} value {value:#x} is not a multiple of {align:#x}"
                )
            }
            IsaError::BadRegister { file, index } => {
                write!(f, "no register ${file}{index} (0..=15)")
            }
            IsaError::UpperCsr { index } => {
                write!(
                    f,
                    "CSR {index:#x} is in the upper space; get/put reach 0..=255 only"
                )
            }
            IsaError::UnknownCsrName => f.write_str("unknown CSR name"),
            IsaError::NoWords => f.write_str("no instruction words to decode"),
            IsaError::UnknownWord { word } => write!(f, "unknown instruction word {word:#010x}"),
            IsaError::ReservedBits {
                word,
                mnemonic,
                stray,
            } => {
                write!(f, "word {word:#010x} looks like `{mnemonic}` but has bits {stray:#010x} outside its fields")
            }
            IsaError::MissingPayload { word } => {
                write!(
                    f,
                    "sendpicp prefix {word:#010x} is missing its payload word"
                )
            }
        }
    }
}

impl core::error::Error for IsaError {}
