//! The `Instruction` type: one variant per encoding form of
//! docs/facts/ipu21-target.md §3. Numeric operands are stored as the
//! assembly text shows them; `encode` checks their ranges.

use super::csr::{Csr, SyncZone};
use super::reg::{AReg, MReg};
use super::IsaError;

/// Immediate-16 ALU group, `[31:24]=op, [23:20]=src, [19:16]=dst, [15:0]=imm`
/// (docs/facts/ipu21-target.md §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Imm16Op {
    /// `add $mD, $mS, simm16` — the only form documented as signed.
    Add,
    /// `cmpeq $mD, $mS, imm16`.
    Cmpeq,
    /// `cmpult $mD, $mS, imm16`.
    Cmpult,
    /// `max $mD, $mS, imm16`.
    Max,
    /// `min $mD, $mS, imm16`.
    Min,
    /// `sub $mD, imm16, $mS`: immediate minus register.
    SubFrom,
}

/// Immediate-12 ALU group `[31:24]=0x42`, sub-op in `[15:12]`
/// (docs/facts/ipu21-target.md §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Imm12Op {
    And,
    /// `or`; with immediate 0 it prints as `mov $mD, $mS`.
    Or,
    Shl,
    Andc,
    /// `or $mD, $mS, imm12 << 20`: the stored `imm` is the shifted value.
    OrHigh,
    Shr,
}

/// Register-register ALU group `[31:24]=0x44`
/// (docs/facts/ipu21-target.md §3.3). Every op computes `d = a op b` with `a`,
/// `b` in printed order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegOp {
    Add,
    Andc,
    Cmpeq,
    /// `or`; `or $mD, $m15, $m15` prints as `zero $mD`.
    Or,
    Sort4x16lo,
    Sub,
    Xor,
}

/// Which receive control a `sendpic` writes (`[19:18]`, §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PicTarget {
    Xpic = 0,
    XpicPaired = 1,
    PicPointer = 2,
    PicFormat = 3,
}

/// Which PIC half a `delaypic`/`sendpicp` writes: the receive pointer or the
/// format (§3.4: delaypic `[18]` "0 pointer, 1 format"; sendpicp `[27]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PicField {
    Pointer = 0,
    Format = 1,
}

impl PicTarget {
    pub(crate) const fn from_bits(bits: u32) -> PicTarget {
        match bits & 3 {
            0 => PicTarget::Xpic,
            1 => PicTarget::XpicPaired,
            2 => PicTarget::PicPointer,
            _ => PicTarget::PicFormat,
        }
    }
    /// From the assembly operand value.
    pub fn from_operand(v: u32) -> Result<PicTarget, IsaError> {
        if v < 4 {
            Ok(PicTarget::from_bits(v))
        } else {
            Err(IsaError::FieldRange {
                field: "sel",
                value: v as i64,
                min: 0,
                max: 3,
            })
        }
    }
}

impl PicField {
    pub(crate) const fn from_bits(bits: u32) -> PicField {
        if bits & 1 == 0 {
            PicField::Pointer
        } else {
            PicField::Format
        }
    }
    /// From the assembly operand value.
    pub fn from_operand(v: u32, field: &'static str) -> Result<PicField, IsaError> {
        if v < 2 {
            Ok(PicField::from_bits(v))
        } else {
            Err(IsaError::FieldRange {
                field,
                value: v as i64,
                min: 0,
                max: 1,
            })
        }
    }
}

/// One IPU21 instruction (one word, or two for `sendpicp`).
///
/// Branch and call targets are absolute **byte** addresses (encoded as word
/// addresses, §3.1). `send`/`sendpicp` addresses are **word** addresses relative
/// to `$OUTGOING_BASE`, as the listings print them (§3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    /// `setzi $mD, zimm20`.
    Setzi { d: MReg, imm: u32 },
    /// IPU21 `nop` (`0x19E00000`, the bit pattern of `setzi $m14, 0`).
    Nop,
    /// `call $mL, target`: `$mL` = return address, jump to target.
    Call { link: MReg, target: u32 },
    /// `br $mR`.
    Br { r: MReg },
    /// `exitz $mR`.
    Exitz { r: MReg },
    /// `put CSR, $mS`.
    Put { csr: Csr, s: MReg },
    /// `get $mD, CSR`.
    Get { d: MReg, csr: Csr },
    /// `sync zone`.
    Sync { zone: SyncZone },
    /// `trap n` (n in 0..=15).
    Trap { code: u32 },
    /// `bri target`.
    Bri { target: u32 },
    /// `delay n`: n+1 cycles/events.
    Delay { n: u32 },
    /// `sans n`.
    Sans { n: u32 },
    /// `brz $mR, target`.
    Brz { r: MReg, target: u32 },
    /// `brnz $mR, target`.
    Brnz { r: MReg, target: u32 },
    /// `brnzdec $mR, target`.
    Brnzdec { r: MReg, target: u32 },
    /// `runall $mE, $mV, imm`: start all six workers at `$mE` with vertex
    /// base `$mV` (field layout inferred, see `encode`).
    Runall {
        entry: MReg,
        vertex_base: MReg,
        imm: u32,
    },
    /// `ld32 $mD, $mB, $mI, zimm12`: `$mD = [B + I + 4·imm]`.
    Ld32 {
        d: MReg,
        base: MReg,
        index: MReg,
        imm: u32,
    },
    /// `st32 $mS, $mB, $mI, zimm12`: `[B + I + 4·imm] = $mS`.
    St32 {
        s: MReg,
        base: MReg,
        index: MReg,
        imm: u32,
    },
    /// `st32step $mS, $mB, $mI+=, zimm12`: store, then post-increment `$mI`.
    St32Step {
        s: MReg,
        base: MReg,
        index: MReg,
        imm: u32,
    },
    /// `ld32 $mD, $mB, $mI, $mO` (register offset, in words).
    Ld32Reg {
        d: MReg,
        base: MReg,
        index: MReg,
        offset: MReg,
    },
    /// `stm32 $mS, $mB, $mO`.
    Stm32 { s: MReg, base: MReg, offset: MReg },
    /// Immediate-16 ALU op; `imm` is signed for `add`, 0..=65535 otherwise.
    AluImm16 {
        op: Imm16Op,
        d: MReg,
        s: MReg,
        imm: i32,
    },
    /// Immediate-12 ALU op; `imm` is the printed operand value.
    AluImm12 {
        op: Imm12Op,
        d: MReg,
        s: MReg,
        imm: u32,
    },
    /// Register-register ALU op: `d = a op b` (printed `op $mD, $mA, $mB`).
    AluReg {
        op: RegOp,
        d: MReg,
        a: MReg,
        b: MReg,
    },
    /// `zero $aD` (ARF).
    ZeroA { d: AReg },
    /// `send n, addr, sctl`: n = items − 1.
    Send { n: u32, addr: u32, sctl: u32 },
    /// `sendoff n, delta, sctl`: n = items − 1 (≤ 4095).
    SendOff { n: u32, delta: u32, sctl: u32 },
    /// `sendpic n, sel, value`.
    SendPic { n: u32, sel: PicTarget, value: u32 },
    /// `sendpicp n, addr, sctl, psel, xpic, pic` — prefix word plus inline
    /// payload word (`xpic << 18 | pic`); must sit at an 8-byte aligned address.
    SendPicP {
        n: u32,
        addr: u32,
        sctl: u32,
        psel: PicField,
        xpic: u32,
        pic: u32,
    },
    /// `delaypic n, sel, value`.
    DelayPic { n: u32, sel: PicField, value: u32 },
    /// `delayxpic n, paired, value`.
    DelayXPic { n: u32, paired: bool, value: u32 },
}

fn items_minus_one(items: u32, max_items: u32) -> Result<u32, IsaError> {
    if items == 0 || items > max_items {
        Err(IsaError::FieldRange {
            field: "items",
            value: items as i64,
            min: 1,
            max: max_items as i64,
        })
    } else {
        Ok(items - 1)
    }
}

/// Convenience constructors for code generators. Those that translate an item
/// count into the `n = items − 1` field check it; the rest leave range checks
/// to `encode`.
impl Instruction {
    /// `send items-1, word_addr, sctl` (1..=64 items).
    pub fn send(items: u32, word_addr: u32, sctl: u32) -> Result<Instruction, IsaError> {
        Ok(Instruction::Send {
            n: items_minus_one(items, 64)?,
            addr: word_addr,
            sctl,
        })
    }
    /// `sendoff items-1, delta, sctl` (1..=4096 items).
    pub fn sendoff(items: u32, delta: u32, sctl: u32) -> Result<Instruction, IsaError> {
        Ok(Instruction::SendOff {
            n: items_minus_one(items, 4096)?,
            delta,
            sctl,
        })
    }
    /// `sendpicp items-1, word_addr, sctl, psel, xpic, pic` (1..=64 items).
    pub fn sendpicp(
        items: u32,
        word_addr: u32,
        sctl: u32,
        psel: PicField,
        xpic: u32,
        pic: u32,
    ) -> Result<Instruction, IsaError> {
        Ok(Instruction::SendPicP {
            n: items_minus_one(items, 64)?,
            addr: word_addr,
            sctl,
            psel,
            xpic,
            pic,
        })
    }
    pub const fn setzi(d: MReg, imm: u32) -> Instruction {
        Instruction::Setzi { d, imm }
    }
    pub const fn call(link: MReg, target: u32) -> Instruction {
        Instruction::Call { link, target }
    }
    pub const fn br(r: MReg) -> Instruction {
        Instruction::Br { r }
    }
    pub const fn put(csr: Csr, s: MReg) -> Instruction {
        Instruction::Put { csr, s }
    }
    pub const fn get(d: MReg, csr: Csr) -> Instruction {
        Instruction::Get { d, csr }
    }
    pub const fn sync(zone: SyncZone) -> Instruction {
        Instruction::Sync { zone }
    }
    pub const fn delay(n: u32) -> Instruction {
        Instruction::Delay { n }
    }
    pub const fn brz(r: MReg, target: u32) -> Instruction {
        Instruction::Brz { r, target }
    }
    pub const fn brnzdec(r: MReg, target: u32) -> Instruction {
        Instruction::Brnzdec { r, target }
    }
    pub const fn ld32(d: MReg, base: MReg, index: MReg, imm: u32) -> Instruction {
        Instruction::Ld32 {
            d,
            base,
            index,
            imm,
        }
    }
    pub const fn st32(s: MReg, base: MReg, index: MReg, imm: u32) -> Instruction {
        Instruction::St32 {
            s,
            base,
            index,
            imm,
        }
    }
    /// `add $mD, $mS, simm16`.
    pub const fn add_imm(d: MReg, s: MReg, imm: i32) -> Instruction {
        Instruction::AluImm16 {
            op: Imm16Op::Add,
            d,
            s,
            imm,
        }
    }
    /// `shl $mD, $mS, imm`.
    pub const fn shl_imm(d: MReg, s: MReg, imm: u32) -> Instruction {
        Instruction::AluImm12 {
            op: Imm12Op::Shl,
            d,
            s,
            imm,
        }
    }
    /// `mov $mD, $mS` (= `or $mD, $mS, 0`).
    pub const fn mov(d: MReg, s: MReg) -> Instruction {
        Instruction::AluImm12 {
            op: Imm12Op::Or,
            d,
            s,
            imm: 0,
        }
    }
    /// `zero $mD` (= `or $mD, $m15, $m15`).
    pub const fn zero(d: MReg) -> Instruction {
        Instruction::AluReg {
            op: RegOp::Or,
            d,
            a: MReg::ZERO,
            b: MReg::ZERO,
        }
    }
    pub const fn delaypic(n: u32, sel: PicField, value: u32) -> Instruction {
        Instruction::DelayPic { n, sel, value }
    }
    pub const fn delayxpic(n: u32, paired: bool, value: u32) -> Instruction {
        Instruction::DelayXPic { n, paired, value }
    }

    /// The form `decode` returns for this instruction's encoding: identical
    /// except that `setzi $m14, 0` is the `nop` word and decodes as `Nop`.
    pub fn canonical(self) -> Instruction {
        match self {
            Instruction::Setzi { d, imm: 0 } if d.index() == 14 => Instruction::Nop,
            other => other,
        }
    }

    /// Number of 32-bit words this instruction occupies.
    pub const fn word_count(&self) -> usize {
        match self {
            Instruction::SendPicP { .. } => 2,
            _ => 1,
        }
    }

    /// The assembler mnemonic.
    pub const fn mnemonic(&self) -> &'static str {
        use Instruction as I;
        match self {
            I::Setzi { .. } => "setzi",
            I::Nop => "nop",
            I::Call { .. } => "call",
            I::Br { .. } => "br",
            I::Exitz { .. } => "exitz",
            I::Put { .. } => "put",
            I::Get { .. } => "get",
            I::Sync { .. } => "sync",
            I::Trap { .. } => "trap",
            I::Bri { .. } => "bri",
            I::Delay { .. } => "delay",
            I::Sans { .. } => "sans",
            I::Brz { .. } => "brz",
            I::Brnz { .. } => "brnz",
            I::Brnzdec { .. } => "brnzdec",
            I::Runall { .. } => "runall",
            I::Ld32 { .. } | I::Ld32Reg { .. } => "ld32",
            I::St32 { .. } => "st32",
            I::St32Step { .. } => "st32step",
            I::Stm32 { .. } => "stm32",
            I::AluImm16 { op, .. } => match op {
                Imm16Op::Add => "add",
                Imm16Op::Cmpeq => "cmpeq",
                Imm16Op::Cmpult => "cmpult",
                Imm16Op::Max => "max",
                Imm16Op::Min => "min",
                Imm16Op::SubFrom => "sub",
            },
            I::AluImm12 { op, .. } => match op {
                Imm12Op::And => "and",
                Imm12Op::Or | Imm12Op::OrHigh => "or",
                Imm12Op::Shl => "shl",
                Imm12Op::Andc => "andc",
                Imm12Op::Shr => "shr",
            },
            I::AluReg { op, .. } => match op {
                RegOp::Add => "add",
                RegOp::Andc => "andc",
                RegOp::Cmpeq => "cmpeq",
                RegOp::Or => "or",
                RegOp::Sort4x16lo => "sort4x16lo",
                RegOp::Sub => "sub",
                RegOp::Xor => "xor",
            },
            I::ZeroA { .. } => "zero",
            I::Send { .. } => "send",
            I::SendOff { .. } => "sendoff",
            I::SendPic { .. } => "sendpic",
            I::SendPicP { .. } => "sendpicp",
            I::DelayPic { .. } => "delaypic",
            I::DelayXPic { .. } => "delayxpic",
        }
    }
}
