//! Disassembly text (`Display`), in the syntax the assembler accepts.

use core::fmt;

use super::csr::{Csr, CsrContext};
use super::instr::{Imm12Op, Imm16Op, Instruction, RegOp};
use super::reg::MReg;

/// Disassembly that prints CSR names for a given context (`$WSR`, `$COUNT_L`
/// in worker code; `$SSR`, `$SCOUNT_L` for the supervisor).
pub struct Disasm<'a> {
    instr: &'a Instruction,
    context: CsrContext,
}

struct CsrIn(Csr, CsrContext);

impl fmt::Display for CsrIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.name_in(self.1) {
            Some(name) => f.write_str(name),
            None => write!(f, "{}", self.0 .0),
        }
    }
}

impl Instruction {
    /// Disassembly for code running in `context`; `Display` uses the
    /// supervisor's names.
    pub fn disasm(&self, context: CsrContext) -> Disasm<'_> {
        Disasm {
            instr: self,
            context,
        }
    }
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.disasm(CsrContext::Supervisor).fmt(f)
    }
}

impl fmt::Display for Disasm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Instruction as I;
        let mn = self.instr.mnemonic();
        let ctx = self.context;
        match *self.instr {
            I::Setzi { d, imm } => write!(f, "{mn} {d}, {imm:#x}"),
            I::Nop => f.write_str(mn),
            I::Call { link, target } => write!(f, "{mn} {link}, {target:#x}"),
            I::Br { r } | I::Exitz { r } => write!(f, "{mn} {r}"),
            I::Put { csr, s } => write!(f, "{mn} {}, {s}", CsrIn(csr, ctx)),
            I::Get { d, csr } => write!(f, "{mn} {d}, {}", CsrIn(csr, ctx)),
            I::Sync { zone } => write!(f, "{mn} {zone}"),
            I::Trap { code } => write!(f, "{mn} {code}"),
            I::Bri { target } => write!(f, "{mn} {target:#x}"),
            I::Delay { n } | I::Sans { n } => write!(f, "{mn} {n}"),
            I::Brz { r, target } | I::Brnz { r, target } | I::Brnzdec { r, target } => {
                write!(f, "{mn} {r}, {target:#x}")
            }
            I::Runall {
                entry,
                vertex_base,
                imm,
            } => write!(f, "{mn} {entry}, {vertex_base}, {imm}"),
            I::Ld32 {
                d,
                base,
                index,
                imm,
            } => write!(f, "{mn} {d}, {base}, {index}, {imm}"),
            I::St32 {
                s,
                base,
                index,
                imm,
            } => write!(f, "{mn} {s}, {base}, {index}, {imm}"),
            I::St32Step {
                s,
                base,
                index,
                imm,
            } => write!(f, "{mn} {s}, {base}, {index}+=, {imm}"),
            I::Ld32Reg {
                d,
                base,
                index,
                offset,
            } => write!(f, "{mn} {d}, {base}, {index}, {offset}"),
            I::Stm32 { s, base, offset } => write!(f, "{mn} {s}, {base}, {offset}"),
            I::AluImm16 {
                op: Imm16Op::SubFrom,
                d,
                s,
                imm,
            } => write!(f, "{mn} {d}, {imm}, {s}"),
            I::AluImm16 { d, s, imm, .. } => write!(f, "{mn} {d}, {s}, {imm}"),
            I::AluImm12 {
                op: Imm12Op::Or,
                d,
                s,
                imm: 0,
            } => write!(f, "mov {d}, {s}"),
            I::AluImm12 {
                op: Imm12Op::OrHigh,
                d,
                s,
                imm,
            } => write!(f, "{mn} {d}, {s}, {imm:#x}"),
            I::AluImm12 { d, s, imm, .. } => write!(f, "{mn} {d}, {s}, {imm}"),
            I::AluReg {
                op: RegOp::Or,
                d,
                a: MReg::ZERO,
                b: MReg::ZERO,
            } => write!(f, "zero {d}"),
            I::AluReg { d, a, b, .. } => write!(f, "{mn} {d}, {a}, {b}"),
            I::ZeroA { d } => write!(f, "{mn} {d}"),
            I::Send { n, addr, sctl } => write!(f, "{mn} {n}, {addr:#x}, {sctl}"),
            I::SendOff { n, delta, sctl } => write!(f, "{mn} {n}, {delta}, {sctl}"),
            I::SendPic { n, sel, value } => write!(f, "{mn} {n}, {}, {value:#x}", sel as u32),
            I::SendPicP {
                n,
                addr,
                sctl,
                psel,
                xpic,
                pic,
            } => {
                write!(
                    f,
                    "{mn} {n}, {addr:#x}, {sctl}, {}, {xpic:#x}, {pic:#x}",
                    psel as u32
                )
            }
            I::DelayPic { n, sel, value } => write!(f, "{mn} {n}, {}, {value:#x}", sel as u32),
            I::DelayXPic { n, paired, value } => {
                write!(f, "{mn} {n}, {}, {value:#x}", paired as u32)
            }
        }
    }
}
