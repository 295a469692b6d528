//! Mnemonic + evaluated operands → `Instruction`. Shared by the assembler
//! (constant operands) and the linker (symbolic operands), so both apply the
//! same operand rules.

use alloc::string::{String, ToString};

use super::error::{AsmErrorKind, Loc};
use super::object::MAX_OPERANDS;
use ipuc_target::ipu21::isa::{
    AReg, Csr, Imm12Op, Imm16Op, Instruction, MReg, PicField, PicTarget, RegOp, SyncZone,
};

/// An operand after expression evaluation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RVal {
    MReg(MReg),
    MRegPostInc(MReg),
    AReg(AReg),
    Csr(Csr),
    Value(i64),
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct ROp<'a> {
    pub val: RVal,
    pub loc: Loc,
    pub text: &'a str,
}

/// An instruction's evaluated operands: as many as its
/// [`Operands`](super::object::Operands), so
/// the same ISA capacity and no allocation per instruction.
pub(crate) type ROps<'a> = heapless::Vec<ROp<'a>, MAX_OPERANDS>;

type BResult<T> = Result<T, (Loc, AsmErrorKind)>;

/// Every mnemonic the assembler accepts, with its operand count(s) as text
/// and its size in words.
const MNEMONICS: &[(&str, &str, u32)] = &[
    ("setzi", "2", 1),
    ("nop", "0", 1),
    ("call", "2", 1),
    ("br", "1", 1),
    ("exitz", "1", 1),
    ("put", "2", 1),
    ("get", "2", 1),
    ("sync", "1", 1),
    ("trap", "1", 1),
    ("bri", "1", 1),
    ("delay", "1", 1),
    ("sans", "1", 1),
    ("brz", "2", 1),
    ("brnz", "2", 1),
    ("brnzdec", "2", 1),
    ("runall", "3", 1),
    ("ld32", "4", 1),
    ("st32", "4", 1),
    ("st32step", "4", 1),
    ("stm32", "3", 1),
    ("add", "3", 1),
    ("cmpeq", "3", 1),
    ("cmpult", "3", 1),
    ("max", "3", 1),
    ("min", "3", 1),
    ("sub", "3", 1),
    ("and", "3", 1),
    ("or", "3", 1),
    ("shl", "3", 1),
    ("andc", "3", 1),
    ("shr", "3", 1),
    ("xor", "3", 1),
    ("sort4x16lo", "3", 1),
    ("mov", "2", 1),
    ("zero", "1", 1),
    ("send", "3", 1),
    ("sendoff", "3", 1),
    ("sendpic", "3", 1),
    ("sendpicp", "6", 2),
    ("delaypic", "3", 1),
    ("delayxpic", "3", 1),
];

/// Size in words of an instruction with this mnemonic, or `None` if unknown.
pub(crate) fn mnemonic_words(mnemonic: &str) -> Option<u32> {
    MNEMONICS.iter().find(|m| m.0 == mnemonic).map(|m| m.2)
}

fn expected(what: &'static str, op: &ROp<'_>) -> (Loc, AsmErrorKind) {
    (
        op.loc,
        AsmErrorKind::Expected {
            what,
            found: op.text.to_string(),
        },
    )
}

fn mreg(op: &ROp<'_>) -> BResult<MReg> {
    match op.val {
        RVal::MReg(r) => Ok(r),
        _ => Err(expected("register", op)),
    }
}

fn value(op: &ROp<'_>) -> BResult<i64> {
    match op.val {
        RVal::Value(v) => Ok(v),
        _ => Err(expected("integer expression", op)),
    }
}

/// A non-negative operand that fits 32 bits; the encoder checks the field width.
fn uval(op: &ROp<'_>) -> BResult<u32> {
    let v = value(op)?;
    u32::try_from(v).map_err(|_| {
        (
            op.loc,
            AsmErrorKind::ValueRange {
                what: "operand",
                value: v,
                min: 0,
                max: u32::MAX as i64,
            },
        )
    })
}

fn ival(op: &ROp<'_>) -> BResult<i32> {
    let v = value(op)?;
    i32::try_from(v).map_err(|_| {
        (
            op.loc,
            AsmErrorKind::ValueRange {
                what: "operand",
                value: v,
                min: i32::MIN as i64,
                max: i32::MAX as i64,
            },
        )
    })
}

fn csr(op: &ROp<'_>) -> BResult<Csr> {
    match op.val {
        RVal::Csr(c) => Ok(c),
        RVal::Value(v) => u8::try_from(v).map(Csr).map_err(|_| {
            (
                op.loc,
                AsmErrorKind::ValueRange {
                    what: "CSR index",
                    value: v,
                    min: 0,
                    max: 255,
                },
            )
        }),
        _ => Err(expected("CSR name or index", op)),
    }
}

fn is_reg(op: &ROp<'_>) -> bool {
    matches!(op.val, RVal::MReg(_))
}

fn isa(
    mnemonic: &'static str,
    loc: Loc,
) -> impl Fn(ipuc_target::ipu21::isa::IsaError) -> (Loc, AsmErrorKind) {
    move |error| (loc, AsmErrorKind::Isa { mnemonic, error })
}

fn no_encoding(mnemonic: &str, loc: Loc, detail: &'static str) -> (Loc, AsmErrorKind) {
    (
        loc,
        AsmErrorKind::NoEncoding {
            mnemonic: String::from(mnemonic),
            detail,
        },
    )
}

/// Builds the instruction `mnemonic ops...`; `loc` is the mnemonic's position.
pub(crate) fn build(mnemonic: &str, ops: &[ROp<'_>], loc: Loc) -> BResult<Instruction> {
    use Instruction as I;
    let Some(&(name, count, _)) = MNEMONICS.iter().find(|m| m.0 == mnemonic) else {
        return Err((loc, AsmErrorKind::UnknownMnemonic(mnemonic.into())));
    };
    if count.parse::<usize>().ok() != Some(ops.len()) {
        return Err((
            loc,
            AsmErrorKind::OperandCount {
                name: name.into(),
                expected: count,
                found: ops.len(),
            },
        ));
    }
    let o = |i: usize| &ops[i];
    Ok(match name {
        "setzi" => I::Setzi {
            d: mreg(o(0))?,
            imm: uval(o(1))?,
        },
        "nop" => I::Nop,
        "call" => I::Call {
            link: mreg(o(0))?,
            target: uval(o(1))?,
        },
        "br" => I::Br { r: mreg(o(0))? },
        "exitz" => I::Exitz { r: mreg(o(0))? },
        "put" => I::Put {
            csr: csr(o(0))?,
            s: mreg(o(1))?,
        },
        "get" => I::Get {
            d: mreg(o(0))?,
            csr: csr(o(1))?,
        },
        "sync" => {
            let z = uval(o(0))?;
            let zone = u8::try_from(z)
                .ok()
                .and_then(|z| SyncZone::new(z).ok())
                .ok_or((
                    o(0).loc,
                    AsmErrorKind::ValueRange {
                        what: "sync zone",
                        value: z as i64,
                        min: 0,
                        max: 15,
                    },
                ))?;
            I::Sync { zone }
        }
        "trap" => I::Trap { code: uval(o(0))? },
        "bri" => I::Bri {
            target: uval(o(0))?,
        },
        "delay" => I::Delay { n: uval(o(0))? },
        "sans" => I::Sans { n: uval(o(0))? },
        "brz" => I::Brz {
            r: mreg(o(0))?,
            target: uval(o(1))?,
        },
        "brnz" => I::Brnz {
            r: mreg(o(0))?,
            target: uval(o(1))?,
        },
        "brnzdec" => I::Brnzdec {
            r: mreg(o(0))?,
            target: uval(o(1))?,
        },
        "runall" => I::Runall {
            entry: mreg(o(0))?,
            vertex_base: mreg(o(1))?,
            imm: uval(o(2))?,
        },
        "ld32" => {
            let (d, base, index) = (mreg(o(0))?, mreg(o(1))?, mreg(o(2))?);
            if is_reg(o(3)) {
                I::Ld32Reg {
                    d,
                    base,
                    index,
                    offset: mreg(o(3))?,
                }
            } else {
                I::Ld32 {
                    d,
                    base,
                    index,
                    imm: uval(o(3))?,
                }
            }
        }
        "st32" => I::St32 {
            s: mreg(o(0))?,
            base: mreg(o(1))?,
            index: mreg(o(2))?,
            imm: uval(o(3))?,
        },
        "st32step" => {
            let RVal::MRegPostInc(index) = o(2).val else {
                return Err(expected("post-incremented register ($mN+=)", o(2)));
            };
            I::St32Step {
                s: mreg(o(0))?,
                base: mreg(o(1))?,
                index,
                imm: uval(o(3))?,
            }
        }
        "stm32" => I::Stm32 {
            s: mreg(o(0))?,
            base: mreg(o(1))?,
            offset: mreg(o(2))?,
        },
        "sub" if !is_reg(o(1)) => I::AluImm16 {
            op: Imm16Op::SubFrom,
            d: mreg(o(0))?,
            s: mreg(o(2))?,
            imm: ival(o(1))?,
        },
        "add" | "cmpeq" | "cmpult" | "max" | "min" | "sub" | "and" | "or" | "shl" | "andc"
        | "shr" | "xor" | "sort4x16lo" => alu(name, ops, loc)?,
        "mov" => I::AluImm12 {
            op: Imm12Op::Or,
            d: mreg(o(0))?,
            s: mreg(o(1))?,
            imm: 0,
        },
        "zero" => match o(0).val {
            RVal::MReg(d) => Instruction::zero(d),
            RVal::AReg(d) => I::ZeroA { d },
            _ => return Err(expected("register", o(0))),
        },
        "send" => I::Send {
            n: uval(o(0))?,
            addr: uval(o(1))?,
            sctl: uval(o(2))?,
        },
        "sendoff" => I::SendOff {
            n: uval(o(0))?,
            delta: uval(o(1))?,
            sctl: uval(o(2))?,
        },
        "sendpic" => {
            let sel = PicTarget::from_operand(uval(o(1))?).map_err(isa("sendpic", o(1).loc))?;
            I::SendPic {
                n: uval(o(0))?,
                sel,
                value: uval(o(2))?,
            }
        }
        "sendpicp" => {
            let psel =
                PicField::from_operand(uval(o(3))?, "psel").map_err(isa("sendpicp", o(3).loc))?;
            I::SendPicP {
                n: uval(o(0))?,
                addr: uval(o(1))?,
                sctl: uval(o(2))?,
                psel,
                xpic: uval(o(4))?,
                pic: uval(o(5))?,
            }
        }
        "delaypic" => {
            let sel =
                PicField::from_operand(uval(o(1))?, "sel").map_err(isa("delaypic", o(1).loc))?;
            I::DelayPic {
                n: uval(o(0))?,
                sel,
                value: uval(o(2))?,
            }
        }
        "delayxpic" => {
            let paired = match uval(o(1))? {
                0 => false,
                1 => true,
                v => {
                    return Err((
                        o(1).loc,
                        AsmErrorKind::ValueRange {
                            what: "delayxpic sel",
                            value: v as i64,
                            min: 0,
                            max: 1,
                        },
                    ))
                }
            };
            I::DelayXPic {
                n: uval(o(0))?,
                paired,
                value: uval(o(2))?,
            }
        }
        _ => return Err((loc, AsmErrorKind::UnknownMnemonic(mnemonic.into()))),
    })
}

/// Three-operand integer ALU forms: register-register when the last operand
/// is a register, otherwise the immediate group that has this op.
fn alu(name: &'static str, ops: &[ROp<'_>], loc: Loc) -> BResult<Instruction> {
    let d = mreg(&ops[0])?;
    let a = mreg(&ops[1])?;
    if is_reg(&ops[2]) {
        let b = mreg(&ops[2])?;
        let op = match name {
            "add" => RegOp::Add,
            "andc" => RegOp::Andc,
            "cmpeq" => RegOp::Cmpeq,
            "or" => RegOp::Or,
            "sort4x16lo" => RegOp::Sort4x16lo,
            "sub" => RegOp::Sub,
            "xor" => RegOp::Xor,
            // §3.3: no register-register encodings known for these.
            _ => {
                return Err(no_encoding(
                    name,
                    loc,
                    "the register-register form has no known encoding (facts §3.3)",
                ))
            }
        };
        return Ok(Instruction::AluReg { op, d, a, b });
    }
    let imm16 = |op| -> BResult<Instruction> {
        Ok(Instruction::AluImm16 {
            op,
            d,
            s: a,
            imm: ival(&ops[2])?,
        })
    };
    let imm12 = |op| -> BResult<Instruction> {
        Ok(Instruction::AluImm12 {
            op,
            d,
            s: a,
            imm: uval(&ops[2])?,
        })
    };
    match name {
        "add" => imm16(Imm16Op::Add),
        "cmpeq" => imm16(Imm16Op::Cmpeq),
        "cmpult" => imm16(Imm16Op::Cmpult),
        "max" => imm16(Imm16Op::Max),
        "min" => imm16(Imm16Op::Min),
        "and" => imm12(Imm12Op::And),
        "shl" => imm12(Imm12Op::Shl),
        "andc" => imm12(Imm12Op::Andc),
        "shr" => imm12(Imm12Op::Shr),
        "or" => {
            // 12-bit immediates use sub-op 9; larger values must be a 12-bit
            // value shifted left by 20 (sub-op 0xC), §3.3.
            let v = uval(&ops[2])?;
            let op = if v < 1 << 12 {
                Imm12Op::Or
            } else {
                Imm12Op::OrHigh
            };
            Ok(Instruction::AluImm12 {
                op,
                d,
                s: a,
                imm: v,
            })
        }
        "sub" => Err(no_encoding(
            name,
            loc,
            "register minus immediate has no encoding; write `add` with the negated value",
        )),
        _ => Err(no_encoding(
            name,
            loc,
            "the immediate form has no known encoding (facts §3.3)",
        )),
    }
}
