//! Word(s) → instruction, in the unambiguous order of
//! docs/facts/ipu21-target.md §3.4. Exact: after extracting the fields the
//! decoder re-encodes and rejects the word if any bit differs, so bits outside
//! the documented fields are an error rather than silently ignored.

use super::csr::{Csr, SyncZone};
use super::encode::*;
use super::instr::{Imm12Op, Imm16Op, Instruction, PicField, PicTarget};
use super::reg::{AReg, MReg};
use super::{encode, IsaError};

fn m(word: u32, lo: u32) -> MReg {
    MReg::from_field(word >> lo)
}

fn bits(word: u32, hi: u32, lo: u32) -> u32 {
    (word >> lo) & ((1u32 << (hi - lo + 1)) - 1)
}

/// Decodes the instruction at the start of `words`; returns it and the number
/// of words it occupies (2 for `sendpicp`, whose second word is payload).
pub fn decode(words: &[u32]) -> Result<(Instruction, usize), IsaError> {
    let Some(&word) = words.first() else {
        return Err(IsaError::NoWords);
    };
    let instr = decode_fields(word, words.get(1).copied())?;
    // Exactness check: every bit must be accounted for by the fields.
    let again = encode(&instr)?;
    let expect = again.words();
    for (i, &w) in expect.iter().enumerate() {
        // `expect.len()` is 2 only for sendpicp, for which decode_fields
        // already required the payload word.
        let got = words.get(i).copied().unwrap_or(0);
        if got != w {
            return Err(IsaError::ReservedBits {
                word: got,
                mnemonic: instr.mnemonic(),
                stray: got ^ w,
            });
        }
    }
    Ok((instr, expect.len()))
}

fn decode_fields(word: u32, next: Option<u32>) -> Result<Instruction, IsaError> {
    use Instruction as I;
    let unknown = Err(IsaError::UnknownWord { word });
    // Exchange forms first, by their §3.4 masks.
    if word & 0xF000_0000 == SENDPICP_BASE {
        let Some(payload) = next else {
            return Err(IsaError::MissingPayload { word });
        };
        return Ok(I::SendPicP {
            n: bits(word, 26, 21),
            addr: bits(word, 20, 3),
            sctl: bits(word, 2, 0),
            psel: PicField::from_bits(word >> 27),
            xpic: bits(payload, 31, 18),
            pic: bits(payload, 17, 0),
        });
    }
    if word & 0xFC00_0000 == DELAYPIC_BASE {
        return Ok(I::DelayPic {
            n: bits(word, 25, 19),
            sel: PicField::from_bits(word >> 18),
            value: bits(word, 17, 0),
        });
    }
    if word & 0xFC00_0000 == DELAYXPIC_BASE {
        return Ok(I::DelayXPic {
            n: bits(word, 25, 14),
            paired: bits(word, 13, 13) == 1,
            value: bits(word, 12, 0),
        });
    }
    if word & 0xF810_0000 == SENDPIC_BASE {
        return Ok(I::SendPic {
            n: bits(word, 26, 21),
            sel: PicTarget::from_bits(word >> 18),
            value: bits(word, 17, 0),
        });
    }
    if word & 0xF800_0000 == SEND_BASE {
        return Ok(I::Send {
            n: bits(word, 26, 21),
            addr: bits(word, 20, 3),
            sctl: bits(word, 2, 0),
        });
    }
    if word & 0xF810_0000 == SENDOFF_BASE {
        let n = bits(word, 26, 21) | bits(word, 19, 14) << 6;
        return Ok(I::SendOff {
            n,
            delta: bits(word, 13, 3),
            sctl: bits(word, 2, 0),
        });
    }
    if word & !0xF0 == ZERO_A_BASE {
        return Ok(I::ZeroA {
            d: AReg::from_field(word >> 4),
        });
    }
    if word == NOP_WORD {
        return Ok(I::Nop);
    }
    let op = word >> 24;
    let t19 = bits(word, 18, 0) * 4;
    let imm12 = bits(word, 11, 0);
    Ok(match op {
        OP_SETZI => I::Setzi {
            d: m(word, 20),
            imm: bits(word, 19, 0),
        },
        OP_CALL => I::Call {
            link: m(word, 20),
            target: t19,
        },
        OP_BR_EXITZ_PUT => match bits(word, 15, 12) {
            SUB_BR => I::Br { r: m(word, 20) },
            SUB_EXITZ => I::Exitz { r: m(word, 20) },
            SUB_PUT => I::Put {
                csr: Csr(bits(word, 7, 0) as u8),
                s: m(word, 20),
            },
            _ => return unknown,
        },
        OP_GET_SYNC => match (bits(word, 23, 20), bits(word, 15, 12)) {
            (GET_SEL, _) => I::Get {
                d: m(word, 16),
                csr: Csr(bits(word, 7, 0) as u8),
            },
            (SYNC_SEL, SUB_SYNC) => I::Sync {
                zone: SyncZone::from_field(word),
            },
            (SYNC_SEL, SUB_TRAP) => I::Trap {
                code: bits(word, 3, 0),
            },
            _ => return unknown,
        },
        OP_CTL_IMM19 => match bits(word, 23, 19) {
            SEL_BRI => I::Bri { target: t19 },
            SEL_DELAY => I::Delay {
                n: bits(word, 18, 0),
            },
            SEL_SANS => I::Sans {
                n: bits(word, 18, 0),
            },
            _ => return unknown,
        },
        OP_BRZ if bits(word, 19, 19) == 0 => I::Brz {
            r: m(word, 20),
            target: t19,
        },
        OP_BRZ => I::Brnzdec {
            r: m(word, 20),
            target: t19,
        },
        OP_BRNZ => I::Brnz {
            r: m(word, 20),
            target: t19,
        },
        OP_RUNALL => I::Runall {
            entry: m(word, 20),
            vertex_base: m(word, 12),
            imm: imm12,
        },
        OP_LD32 => I::Ld32 {
            d: m(word, 16),
            base: m(word, 20),
            index: m(word, 12),
            imm: imm12,
        },
        OP_ST32 => I::St32 {
            s: m(word, 16),
            base: m(word, 20),
            index: m(word, 12),
            imm: imm12,
        },
        OP_ST32STEP => I::St32Step {
            s: m(word, 16),
            base: m(word, 20),
            index: m(word, 12),
            imm: imm12,
        },
        OP_LD32_REG => I::Ld32Reg {
            d: m(word, 4),
            base: m(word, 20),
            index: m(word, 12),
            offset: m(word, 16),
        },
        OP_STM32 => I::Stm32 {
            s: m(word, 16),
            base: m(word, 20),
            offset: m(word, 12),
        },
        OP_ADD_IMM16 => I::AluImm16 {
            op: Imm16Op::Add,
            d: m(word, 16),
            s: m(word, 20),
            imm: word as u16 as i16 as i32,
        },
        OP_CMPEQ_IMM16 | OP_CMPULT_IMM16 | OP_MAX_IMM16 | OP_MIN_IMM16 | OP_SUB_IMM16 => {
            let op = match op {
                OP_CMPEQ_IMM16 => Imm16Op::Cmpeq,
                OP_CMPULT_IMM16 => Imm16Op::Cmpult,
                OP_MAX_IMM16 => Imm16Op::Max,
                OP_MIN_IMM16 => Imm16Op::Min,
                _ => Imm16Op::SubFrom,
            };
            I::AluImm16 {
                op,
                d: m(word, 16),
                s: m(word, 20),
                imm: bits(word, 15, 0) as i32,
            }
        }
        OP_ALU_IMM12 => {
            let (op, imm) = match bits(word, 15, 12) {
                SUB_AND => (Imm12Op::And, imm12),
                SUB_OR => (Imm12Op::Or, imm12),
                SUB_SHL => (Imm12Op::Shl, imm12),
                SUB_ANDC => (Imm12Op::Andc, imm12),
                SUB_OR_HIGH => (Imm12Op::OrHigh, imm12 << 20),
                SUB_SHR => (Imm12Op::Shr, imm12),
                // Sub-op 0 is ipu-stack's unverified `and` (§3.5 (b)); others unseen.
                _ => return unknown,
            };
            I::AluImm12 {
                op,
                d: m(word, 16),
                s: m(word, 20),
                imm,
            }
        }
        OP_ALU_REG => {
            let (hi, lo) = (bits(word, 11, 8), bits(word, 3, 0));
            let Some(&(op, _, _)) = REG_OPS.iter().find(|&&(_, h, l)| h == hi && l == lo) else {
                return unknown;
            };
            let (f23, f15) = (m(word, 20), m(word, 12));
            // See REG_OPS: `sub` prints [15:12] first.
            let (a, b) = if op == super::instr::RegOp::Sub {
                (f15, f23)
            } else {
                (f23, f15)
            };
            I::AluReg {
                op,
                d: m(word, 4),
                a,
                b,
            }
        }
        _ => return unknown,
    })
}
