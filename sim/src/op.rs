//! The simulator's pre-decoded instruction form.
//!
//! `core::ipu21::isa` owns the encoding; this module turns a decoded
//! [`Instruction`] into an [`Op`] whose operands are ready to execute (branch
//! targets as byte addresses, immediates extended and scaled), so the
//! interpreter's hot loop does no bit twiddling. Ops are cached per word in
//! [`super::memory::TileMemory`].

/// ALU operation of [`Op::Alu`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AluOp {
    Add,
    /// `a − b`.
    Sub,
    And,
    /// `a & !b`.
    Andc,
    Or,
    Xor,
    /// `a << b` (0 when `b ≥ 32`).
    Shl,
    /// Logical `a >> b` (0 when `b ≥ 32`).
    Shr,
    /// `(a == b) as u32`.
    CmpEq,
    /// `(a < b) as u32`, unsigned.
    CmpUlt,
    /// Signed maximum.
    Max,
    /// Signed minimum.
    Min,
    /// `lo16(a) | lo16(b) << 16`.
    Sort4x16Lo,
}

impl AluOp {
    /// Apply to two operand values.
    #[inline]
    pub fn apply(self, a: u32, b: u32) -> u32 {
        match self {
            AluOp::Add => a.wrapping_add(b),
            AluOp::Sub => a.wrapping_sub(b),
            AluOp::And => a & b,
            AluOp::Andc => a & !b,
            AluOp::Or => a | b,
            AluOp::Xor => a ^ b,
            AluOp::Shl => a.checked_shl(b).unwrap_or(0),
            AluOp::Shr => a.checked_shr(b).unwrap_or(0),
            AluOp::CmpEq => u32::from(a == b),
            AluOp::CmpUlt => u32::from(a < b),
            AluOp::Max => (a as i32).max(b as i32) as u32,
            AluOp::Min => (a as i32).min(b as i32) as u32,
            AluOp::Sort4x16Lo => (a & 0xFFFF) | (b << 16),
        }
    }
}

/// An ALU source operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// MRF register `$mN` (`$m15` reads as zero).
    Reg(u8),
    /// Immediate, already extended to 32 bits.
    Imm(u32),
}

/// Branch condition of [`Op::Branch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    /// Taken when the register is zero.
    Zero,
    /// Taken when the register is non-zero.
    NonZero,
    /// Taken when the register is non-zero, which is then decremented.
    NonZeroDec,
}

/// Exchange instructions are resolved by the exchange fabric, not the
/// interpreter; the op only records which one it was (for fault messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeKind {
    Send,
    SendOff,
    SendPic,
    SendPicP,
    DelayPic,
    DelayXpic,
}

impl ExchangeKind {
    /// Assembly mnemonic.
    pub fn mnemonic(self) -> &'static str {
        match self {
            ExchangeKind::Send => "send",
            ExchangeKind::SendOff => "sendoff",
            ExchangeKind::SendPic => "sendpic",
            ExchangeKind::SendPicP => "sendpicp",
            ExchangeKind::DelayPic => "delaypic",
            ExchangeKind::DelayXpic => "delayxpic",
        }
    }
}

/// One executable instruction. Register operands are MRF indices 0..=15.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Nop,
    /// `$d = imm` (zero-extended 20 bits).
    Setzi {
        d: u8,
        imm: u32,
    },
    /// `$link = pc + 4; pc = target`.
    Call {
        link: u8,
        target: u32,
    },
    /// `pc = $r`.
    Br {
        r: u8,
    },
    /// `pc = target`.
    Bri {
        target: u32,
    },
    /// Conditional branch on `$r`.
    Branch {
        cond: Cond,
        r: u8,
        target: u32,
    },
    /// Worker exit; exit status is `$r == 0`.
    Exitz {
        r: u8,
    },
    /// CSR write.
    Put {
        csr: u16,
        s: u8,
    },
    /// CSR read.
    Get {
        d: u8,
        csr: u16,
    },
    /// Synchronise on a zone (`docs/facts/ipu21-target.md §1.7`).
    Sync {
        zone: u8,
    },
    /// Raise a breakpoint exception.
    Trap {
        code: u8,
    },
    /// Wait `events` cycles (`delay n` waits n + 1).
    Delay {
        events: u32,
    },
    /// `sans n` (semantics unknown, `docs/facts/ipu21-target.md §1.7`).
    Sans {
        n: u32,
    },
    /// Start all six workers at `$entry` with vertex base `$vertex + offset`.
    Runall {
        entry: u8,
        vertex: u8,
        offset: u32,
    },
    /// `$d = [$base + $index + offset]`.
    Ld32 {
        d: u8,
        base: u8,
        index: u8,
        offset: u32,
    },
    /// `$d = [$base + $index + 4·$offset]`.
    Ld32Reg {
        d: u8,
        base: u8,
        index: u8,
        offset: u8,
    },
    /// `[$base + $index + offset] = $s`.
    St32 {
        s: u8,
        base: u8,
        index: u8,
        offset: u32,
    },
    /// `[$base + $index] = $s; $index += step`.
    St32Step {
        s: u8,
        base: u8,
        index: u8,
        step: u32,
    },
    /// `[$base + 4·$offset] = $s`.
    Stm32 {
        s: u8,
        base: u8,
        offset: u8,
    },
    /// `$d = op(a, b)`.
    Alu {
        op: AluOp,
        d: u8,
        a: Src,
        b: Src,
    },
    /// `$aD = 0` (ARF).
    ZeroA {
        d: u8,
    },
    /// An exchange instruction occupying `words` words.
    Exchange {
        kind: ExchangeKind,
        words: u8,
    },
}

impl Op {
    /// Size of the instruction in bytes.
    pub fn size(self) -> u32 {
        match self {
            Op::Exchange { words, .. } => 4 * u32::from(words),
            _ => 4,
        }
    }
}

use ipuc_target::ipu21::isa::{self, Imm12Op, Imm16Op, Instruction, MReg, RegOp};

#[inline]
fn r(m: MReg) -> u8 {
    m.index()
}

impl Op {
    /// Translate a decoded instruction. Semantic choices for forms the facts
    /// mark as inferred are documented on the match arms.
    pub fn from_instruction(i: &Instruction) -> Op {
        use Instruction as I;
        match *i {
            I::Setzi { d, imm } => Op::Setzi { d: r(d), imm },
            I::Nop => Op::Nop,
            I::Call { link, target } => Op::Call {
                link: r(link),
                target,
            },
            I::Br { r: reg } => Op::Br { r: r(reg) },
            I::Exitz { r: reg } => Op::Exitz { r: r(reg) },
            I::Put { csr, s } => Op::Put {
                csr: u16::from(csr.0),
                s: r(s),
            },
            I::Get { d, csr } => Op::Get {
                d: r(d),
                csr: u16::from(csr.0),
            },
            I::Sync { zone } => Op::Sync { zone: zone.index() },
            // The trap field is 4 bits wide, so the cast cannot truncate.
            I::Trap { code } => Op::Trap {
                code: (code & 0xF) as u8,
            },
            I::Bri { target } => Op::Bri { target },
            I::Delay { n } => Op::Delay { events: n + 1 },
            I::Sans { n } => Op::Sans { n },
            I::Brz { r: reg, target } => Op::Branch {
                cond: Cond::Zero,
                r: r(reg),
                target,
            },
            I::Brnz { r: reg, target } => Op::Branch {
                cond: Cond::NonZero,
                r: r(reg),
                target,
            },
            I::Brnzdec { r: reg, target } => Op::Branch {
                cond: Cond::NonZeroDec,
                r: r(reg),
                target,
            },
            // Vertex base = $mV + 4·imm: the immediate is a word offset like
            // ld32's (field layout inferred, docs/facts/ipu21-target.md §3.5 d).
            I::Runall {
                entry,
                vertex_base,
                imm,
            } => Op::Runall {
                entry: r(entry),
                vertex: r(vertex_base),
                offset: imm.wrapping_mul(4),
            },
            I::Ld32 {
                d,
                base,
                index,
                imm,
            } => Op::Ld32 {
                d: r(d),
                base: r(base),
                index: r(index),
                offset: imm.wrapping_mul(4),
            },
            I::St32 {
                s,
                base,
                index,
                imm,
            } => Op::St32 {
                s: r(s),
                base: r(base),
                index: r(index),
                offset: imm.wrapping_mul(4),
            },
            I::St32Step {
                s,
                base,
                index,
                imm,
            } => Op::St32Step {
                s: r(s),
                base: r(base),
                index: r(index),
                step: imm.wrapping_mul(4),
            },
            I::Ld32Reg {
                d,
                base,
                index,
                offset,
            } => Op::Ld32Reg {
                d: r(d),
                base: r(base),
                index: r(index),
                offset: r(offset),
            },
            I::Stm32 { s, base, offset } => Op::Stm32 {
                s: r(s),
                base: r(base),
                offset: r(offset),
            },
            I::AluImm16 { op, d, s, imm } => {
                // add's immediate is signed; the others are 0..=65535 (isa
                // stores them as the printed value), so `as u32` extends both
                // correctly.
                let k = Src::Imm(imm as u32);
                let (op, a, b) = match op {
                    Imm16Op::Add => (AluOp::Add, Src::Reg(r(s)), k),
                    Imm16Op::Cmpeq => (AluOp::CmpEq, Src::Reg(r(s)), k),
                    Imm16Op::Cmpult => (AluOp::CmpUlt, Src::Reg(r(s)), k),
                    Imm16Op::Max => (AluOp::Max, Src::Reg(r(s)), k),
                    Imm16Op::Min => (AluOp::Min, Src::Reg(r(s)), k),
                    Imm16Op::SubFrom => (AluOp::Sub, k, Src::Reg(r(s))),
                };
                Op::Alu { op, d: r(d), a, b }
            }
            I::AluImm12 { op, d, s, imm } => {
                let op = match op {
                    Imm12Op::And => AluOp::And,
                    Imm12Op::Or | Imm12Op::OrHigh => AluOp::Or,
                    Imm12Op::Shl => AluOp::Shl,
                    Imm12Op::Andc => AluOp::Andc,
                    Imm12Op::Shr => AluOp::Shr,
                };
                Op::Alu {
                    op,
                    d: r(d),
                    a: Src::Reg(r(s)),
                    b: Src::Imm(imm),
                }
            }
            // Printed order: `op $mD, $mA, $mB` computes `a op b`; for `sub`
            // this follows the disassembly text (facts §3.5 c leaves open
            // whether hardware subtracts in field order instead).
            I::AluReg { op, d, a, b } => Op::Alu {
                op: match op {
                    RegOp::Add => AluOp::Add,
                    RegOp::Andc => AluOp::Andc,
                    RegOp::Cmpeq => AluOp::CmpEq,
                    RegOp::Or => AluOp::Or,
                    RegOp::Sort4x16lo => AluOp::Sort4x16Lo,
                    RegOp::Sub => AluOp::Sub,
                    RegOp::Xor => AluOp::Xor,
                },
                d: r(d),
                a: Src::Reg(r(a)),
                b: Src::Reg(r(b)),
            },
            I::ZeroA { d } => Op::ZeroA { d: d.index() },
            I::Send { .. } => Op::Exchange {
                kind: ExchangeKind::Send,
                words: 1,
            },
            I::SendOff { .. } => Op::Exchange {
                kind: ExchangeKind::SendOff,
                words: 1,
            },
            I::SendPic { .. } => Op::Exchange {
                kind: ExchangeKind::SendPic,
                words: 1,
            },
            I::SendPicP { .. } => Op::Exchange {
                kind: ExchangeKind::SendPicP,
                words: 2,
            },
            I::DelayPic { .. } => Op::Exchange {
                kind: ExchangeKind::DelayPic,
                words: 1,
            },
            I::DelayXPic { .. } => Op::Exchange {
                kind: ExchangeKind::DelayXpic,
                words: 1,
            },
        }
    }

    /// Decode the instruction starting with `words[0]` (`words[1]` is the
    /// payload of a two-word `sendpicp`, when present).
    pub fn decode(words: &[u32]) -> Result<Op, isa::IsaError> {
        isa::decode(words).map(|(i, _)| Op::from_instruction(&i))
    }
}
