//! Instruction → word(s). Every opcode and field position is defined here
//! once, with its source in docs/facts/ipu21-target.md §3.

use super::instr::{Imm12Op, Imm16Op, Instruction, RegOp};
use super::{Encoded, IsaError};

// ---- Control, system and CSR forms (§3.1) ----
/// `setzi`: `[31:24]=0x19, [23:20]=D, [19:0]=imm` (§3.1, confirmed).
pub(crate) const OP_SETZI: u32 = 0x19;
/// IPU21 `nop` (§1.5 / §3.1, confirmed SDK/hardware word).
pub const NOP_WORD: u32 = 0x19E0_0000;
/// `call $mL, target`: `[31:24]=0x18, [23:20]=L, [19]=0, [18:0]=target/4` (§3.1).
pub(crate) const OP_CALL: u32 = 0x18;
/// `br`/`exitz`/`put` share `[31:24]=0x43`, told apart by `[15:12]` (§3.1).
pub(crate) const OP_BR_EXITZ_PUT: u32 = 0x43;
pub(crate) const SUB_BR: u32 = 0x0;
pub(crate) const SUB_EXITZ: u32 = 0x4;
/// `put CSR, $mS`: register at `[23:20]` — §3.5 (a) recommends bits 23:20 over
/// the RE note's 11:8 (IPU1 listing, ipu-stack encoder and driver agree).
pub(crate) const SUB_PUT: u32 = 0x8;
/// `get`/`sync`/`trap` share `[31:24]=0x41`; `[23:20]` = 0 (get) or 8 (sync/trap).
pub(crate) const OP_GET_SYNC: u32 = 0x41;
pub(crate) const GET_SEL: u32 = 0x0;
pub(crate) const SYNC_SEL: u32 = 0x8;
/// Within `[31:20]=0x418`: `[15:12]` = 0 sync, 1 trap (§3.1).
pub(crate) const SUB_SYNC: u32 = 0x0;
pub(crate) const SUB_TRAP: u32 = 0x1;
/// `bri`/`delay`/`sans` share `[31:24]=0x40` and are told apart by `[23:19]` (§3.1).
pub(crate) const OP_CTL_IMM19: u32 = 0x40;
pub(crate) const SEL_BRI: u32 = 0b10000;
pub(crate) const SEL_DELAY: u32 = 0b10100;
pub(crate) const SEL_SANS: u32 = 0b11000;
/// `brz`/`brnzdec`: `[31:24]=0x13`, `[19]` = 0 brz / 1 brnzdec (§3.1).
pub(crate) const OP_BRZ: u32 = 0x13;
/// `brnz`: `[31:24]=0x11, [19]=0` (§3.1).
pub(crate) const OP_BRNZ: u32 = 0x11;
/// `runall $mE, $mV, imm`: `[31:24]=0x15`, V at `[15:12]` (§3.1, one example,
/// §3.5 (d) unresolved). Our choice: E at `[23:20]` and imm at `[11:0]`, the
/// same src0/src1/zimm12 layout as `ld32` (`[19:16]`, ld32's destination slot,
/// must be zero since runall writes no register). Both choices agree with the
/// only example `0x1500F000` = `runall $m0, $m15, 0`. Verify on IPU21.
pub(crate) const OP_RUNALL: u32 = 0x15;

// ---- Memory forms (§3.2) ----
/// `ld32 $mD, $mB, $mI, zimm12`: `[23:20]=B, [19:16]=D, [15:12]=I, [11:0]` (§3.2).
pub(crate) const OP_LD32: u32 = 0x01;
/// `st32` (§3.2).
pub(crate) const OP_ST32: u32 = 0x4F;
/// `st32step` (§3.2).
pub(crate) const OP_ST32STEP: u32 = 0x4E;
/// `ld32` register offset: `[23:20]=B, [19:16]=O, [15:12]=I, [7:4]=D` (§3.2).
pub(crate) const OP_LD32_REG: u32 = 0x4D;
/// `stm32 $mS, $mB, $mO`: `[23:20]=B, [19:16]=S, [15:12]=O` (§3.2).
pub(crate) const OP_STM32: u32 = 0x4C;

// ---- Integer ALU forms (§3.3) ----
/// Immediate-16 opcodes (§3.3).
pub(crate) const OP_ADD_IMM16: u32 = 0x22;
pub(crate) const OP_CMPEQ_IMM16: u32 = 0x28;
pub(crate) const OP_CMPULT_IMM16: u32 = 0x2A;
pub(crate) const OP_MAX_IMM16: u32 = 0x30;
pub(crate) const OP_MIN_IMM16: u32 = 0x33;
pub(crate) const OP_SUB_IMM16: u32 = 0x39;
/// Immediate-12 group `[31:24]=0x42`, sub-op at `[15:12]` (§3.3).
pub(crate) const OP_ALU_IMM12: u32 = 0x42;
/// `and` immediate = sub-op 8 (IPU1 listing, 4 words) — §3.5 (b) recommends it
/// over ipu-stack's unexercised sub-op 0 (`0x42800001`). Verify on IPU21.
pub(crate) const SUB_AND: u32 = 0x8;
pub(crate) const SUB_OR: u32 = 0x9;
pub(crate) const SUB_SHL: u32 = 0xA;
pub(crate) const SUB_ANDC: u32 = 0xB;
/// `or` with `imm12 << 20` (§3.3, confirmed by 10).
pub(crate) const SUB_OR_HIGH: u32 = 0xC;
pub(crate) const SUB_SHR: u32 = 0xD;
/// Register-register group `[31:24]=0x44` (§3.3).
pub(crate) const OP_ALU_REG: u32 = 0x44;
/// `(sub-op-high [11:8], sub-op-low [3:0])` per op (§3.3).
pub(crate) const REG_OPS: [(RegOp, u32, u32); 7] = [
    (RegOp::Add, 0, 1),
    (RegOp::Andc, 1, 0),
    (RegOp::Cmpeq, 1, 2),
    (RegOp::Or, 3, 1),
    (RegOp::Sort4x16lo, 5, 3),
    // `sub` prints its sources in the opposite field order to the others
    // (§3.5 (c)). Our choice: the printed text is the semantics, `sub d, x, y`
    // = x − y, so x sits at [15:12] and y at [23:20]. This matches the IPU1
    // bootloader's use (`sub $m4, $m4, $m8` = end − base before `shr 2`).
    (RegOp::Sub, 6, 2),
    (RegOp::Xor, 7, 1),
];
/// ARF `zero $aD` = `0x58F0FE00 | D<<4` (§3.3, confirmed by 8 IPU1 words).
pub(crate) const ZERO_A_BASE: u32 = 0x58F0_FE00;

// ---- Exchange forms (§3.4) ----
/// `send`: `[31:27]=0b01111`, decode mask `0xF8000000`.
pub(crate) const SEND_BASE: u32 = 0x7800_0000;
/// `sendoff`: `[31:27]=0b01110, [20]=0`, decode mask `0xF8100000`.
pub(crate) const SENDOFF_BASE: u32 = 0x7000_0000;
/// `sendpic`: `[31:27]=0b01110, [20]=1`.
pub(crate) const SENDPIC_BASE: u32 = 0x7010_0000;
/// `sendpicp` prefix: `[31:28]=0xF`.
pub(crate) const SENDPICP_BASE: u32 = 0xF000_0000;
/// `delaypic`: `[31:26]=0b011000`, decode mask `0xFC000000`.
pub(crate) const DELAYPIC_BASE: u32 = 0x6000_0000;
/// `delayxpic`: `[31:26]=0b011001`.
pub(crate) const DELAYXPIC_BASE: u32 = 0x6400_0000;
/// `sendpicp` must sit at an 8-byte aligned address (§3.4).
pub const SENDPICP_ALIGN: u32 = 8;

/// Largest byte address a 19-bit word-address target field reaches.
pub const MAX_TARGET: u32 = (1 << 21) - 4;

fn unsigned(field: &'static str, value: u32, bits: u32) -> Result<u32, IsaError> {
    if bits < 32 && value >> bits != 0 {
        Err(IsaError::FieldRange {
            field,
            value: value as i64,
            min: 0,
            max: ((1u64 << bits) - 1) as i64,
        })
    } else {
        Ok(value)
    }
}

/// A branch/call target: 4-byte aligned byte address, encoded as a 19-bit word address.
fn target(value: u32) -> Result<u32, IsaError> {
    if value & 3 != 0 {
        return Err(IsaError::Misaligned {
            field: "target",
            value,
            align: 4,
        });
    }
    if value > MAX_TARGET {
        return Err(IsaError::FieldRange {
            field: "target",
            value: value as i64,
            min: 0,
            max: MAX_TARGET as i64,
        });
    }
    Ok(value / 4)
}

fn imm16(op: Imm16Op, imm: i32) -> Result<u32, IsaError> {
    // `add` is documented as simm16; the others as imm16, which we take as
    // zero-extended 0..=65535 (§3.3; only small positive examples exist).
    let (min, max) = match op {
        Imm16Op::Add => (-32768, 32767),
        _ => (0, 65535),
    };
    if imm < min || imm > max {
        return Err(IsaError::FieldRange {
            field: "imm16",
            value: imm as i64,
            min: min as i64,
            max: max as i64,
        });
    }
    Ok((imm as u32) & 0xFFFF)
}

fn imm16_opcode(op: Imm16Op) -> u32 {
    match op {
        Imm16Op::Add => OP_ADD_IMM16,
        Imm16Op::Cmpeq => OP_CMPEQ_IMM16,
        Imm16Op::Cmpult => OP_CMPULT_IMM16,
        Imm16Op::Max => OP_MAX_IMM16,
        Imm16Op::Min => OP_MIN_IMM16,
        Imm16Op::SubFrom => OP_SUB_IMM16,
    }
}

fn imm12(op: Imm12Op, imm: u32) -> Result<(u32, u32), IsaError> {
    let sub = match op {
        Imm12Op::And => SUB_AND,
        Imm12Op::Or => SUB_OR,
        Imm12Op::Shl => SUB_SHL,
        Imm12Op::Andc => SUB_ANDC,
        Imm12Op::OrHigh => SUB_OR_HIGH,
        Imm12Op::Shr => SUB_SHR,
    };
    let field = if op == Imm12Op::OrHigh {
        if imm & 0xF_FFFF != 0 {
            return Err(IsaError::Misaligned {
                field: "imm12<<20",
                value: imm,
                align: 1 << 20,
            });
        }
        imm >> 20
    } else {
        unsigned("imm12", imm, 12)?
    };
    Ok((sub, field))
}

/// The `[11:8]`/`[3:0]` sub-op pair of a register-register op.
pub(crate) fn reg_subops(op: RegOp) -> (u32, u32) {
    let mut found = (0, 0);
    for (o, hi, lo) in REG_OPS {
        if o == op {
            found = (hi, lo);
        }
    }
    found
}

/// Encodes one instruction into one word (two for `sendpicp`). Operand-range
/// violations are `IsaError::FieldRange`/`Misaligned` naming the field.
pub fn encode(instr: &Instruction) -> Result<Encoded, IsaError> {
    use Instruction as I;
    let word = match *instr {
        I::Setzi { d, imm } => OP_SETZI << 24 | d.bits() << 20 | unsigned("zimm20", imm, 20)?,
        I::Nop => NOP_WORD,
        I::Call { link, target: t } => OP_CALL << 24 | link.bits() << 20 | target(t)?,
        I::Br { r } => OP_BR_EXITZ_PUT << 24 | r.bits() << 20 | SUB_BR << 12,
        I::Exitz { r } => OP_BR_EXITZ_PUT << 24 | r.bits() << 20 | SUB_EXITZ << 12,
        I::Put { csr, s } => OP_BR_EXITZ_PUT << 24 | s.bits() << 20 | SUB_PUT << 12 | csr.0 as u32,
        I::Get { d, csr } => OP_GET_SYNC << 24 | GET_SEL << 20 | d.bits() << 16 | csr.0 as u32,
        I::Sync { zone } => {
            OP_GET_SYNC << 24 | SYNC_SEL << 20 | SUB_SYNC << 12 | zone.index() as u32
        }
        I::Trap { code } => {
            OP_GET_SYNC << 24 | SYNC_SEL << 20 | SUB_TRAP << 12 | unsigned("trap", code, 4)?
        }
        I::Bri { target: t } => OP_CTL_IMM19 << 24 | SEL_BRI << 19 | target(t)?,
        I::Delay { n } => OP_CTL_IMM19 << 24 | SEL_DELAY << 19 | unsigned("delay", n, 19)?,
        I::Sans { n } => OP_CTL_IMM19 << 24 | SEL_SANS << 19 | unsigned("sans", n, 19)?,
        I::Brz { r, target: t } => OP_BRZ << 24 | r.bits() << 20 | target(t)?,
        I::Brnzdec { r, target: t } => OP_BRZ << 24 | r.bits() << 20 | 1 << 19 | target(t)?,
        I::Brnz { r, target: t } => OP_BRNZ << 24 | r.bits() << 20 | target(t)?,
        I::Runall {
            entry,
            vertex_base,
            imm,
        } => {
            OP_RUNALL << 24
                | entry.bits() << 20
                | vertex_base.bits() << 12
                | unsigned("imm12", imm, 12)?
        }
        I::Ld32 {
            d,
            base,
            index,
            imm,
        } => {
            OP_LD32 << 24
                | base.bits() << 20
                | d.bits() << 16
                | index.bits() << 12
                | unsigned("zimm12", imm, 12)?
        }
        I::St32 {
            s,
            base,
            index,
            imm,
        } => {
            OP_ST32 << 24
                | base.bits() << 20
                | s.bits() << 16
                | index.bits() << 12
                | unsigned("zimm12", imm, 12)?
        }
        I::St32Step {
            s,
            base,
            index,
            imm,
        } => {
            OP_ST32STEP << 24
                | base.bits() << 20
                | s.bits() << 16
                | index.bits() << 12
                | unsigned("zimm12", imm, 12)?
        }
        I::Ld32Reg {
            d,
            base,
            index,
            offset,
        } => {
            OP_LD32_REG << 24
                | base.bits() << 20
                | offset.bits() << 16
                | index.bits() << 12
                | d.bits() << 4
        }
        I::Stm32 { s, base, offset } => {
            OP_STM32 << 24 | base.bits() << 20 | s.bits() << 16 | offset.bits() << 12
        }
        I::AluImm16 { op, d, s, imm } => {
            imm16_opcode(op) << 24 | s.bits() << 20 | d.bits() << 16 | imm16(op, imm)?
        }
        I::AluImm12 { op, d, s, imm } => {
            let (sub, field) = imm12(op, imm)?;
            OP_ALU_IMM12 << 24 | s.bits() << 20 | d.bits() << 16 | sub << 12 | field
        }
        I::AluReg { op, d, a, b } => {
            let (hi, lo) = reg_subops(op);
            // See REG_OPS: `sub` keeps its first printed source at [15:12].
            let (f23, f15) = if op == RegOp::Sub { (b, a) } else { (a, b) };
            OP_ALU_REG << 24 | f23.bits() << 20 | f15.bits() << 12 | hi << 8 | d.bits() << 4 | lo
        }
        I::ZeroA { d } => ZERO_A_BASE | d.bits() << 4,
        I::Send { n, addr, sctl } => {
            SEND_BASE
                | unsigned("n", n, 6)? << 21
                | unsigned("addr", addr, 18)? << 3
                | unsigned("sctl", sctl, 3)?
        }
        I::SendOff { n, delta, sctl } => {
            let n = unsigned("n", n, 12)?;
            SENDOFF_BASE
                | (n & 0x3F) << 21
                | (n >> 6) << 14
                | unsigned("delta", delta, 11)? << 3
                | unsigned("sctl", sctl, 3)?
        }
        I::SendPic { n, sel, value } => {
            // XPIC values are 13 bits (§3.4); PIC values use all 18.
            let bits = match sel {
                super::instr::PicTarget::Xpic | super::instr::PicTarget::XpicPaired => 13,
                _ => 18,
            };
            SENDPIC_BASE
                | unsigned("n", n, 6)? << 21
                | (sel as u32) << 18
                | unsigned("value", value, bits)?
        }
        I::SendPicP {
            n,
            addr,
            sctl,
            psel,
            xpic,
            pic,
        } => {
            let prefix = SENDPICP_BASE
                | (psel as u32) << 27
                | unsigned("n", n, 6)? << 21
                | unsigned("addr", addr, 18)? << 3
                | unsigned("sctl", sctl, 3)?;
            let payload = unsigned("xpic", xpic, 14)? << 18 | unsigned("pic", pic, 18)?;
            return Ok(Encoded::two(prefix, payload));
        }
        I::DelayPic { n, sel, value } => {
            DELAYPIC_BASE
                | unsigned("n", n, 7)? << 19
                | (sel as u32) << 18
                | unsigned("value", value, 18)?
        }
        I::DelayXPic { n, paired, value } => {
            DELAYXPIC_BASE
                | unsigned("n", n, 12)? << 14
                | (paired as u32) << 13
                | unsigned("value", value, 13)?
        }
    };
    Ok(Encoded::one(word))
}
