//! One test per instruction group: register and memory effects.

use ipuc_target::ipu21::isa::{Csr, Imm12Op, Imm16Op, Instruction as I, MReg, RegOp, SyncZone};

use super::{bytes, reg, run, tile_with, words, DATA, ENTRY};
use crate::{ContextId, StopReason};

fn setzi(d: u8, imm: u32) -> I {
    I::setzi(reg(d), imm)
}

fn imm16(op: Imm16Op, d: u8, s: u8, imm: i32) -> I {
    I::AluImm16 {
        op,
        d: reg(d),
        s: reg(s),
        imm,
    }
}

fn imm12(op: Imm12Op, d: u8, s: u8, imm: u32) -> I {
    I::AluImm12 {
        op,
        d: reg(d),
        s: reg(s),
        imm,
    }
}

fn rr(op: RegOp, d: u8, a: u8, b: u8) -> I {
    I::AluReg {
        op,
        d: reg(d),
        a: reg(a),
        b: reg(b),
    }
}

#[test]
fn setzi_and_mzero() {
    let t = run(&[
        setzi(1, 0xF_FFFF),
        setzi(15, 7),
        imm16(Imm16Op::Add, 2, 15, 3),
    ]);
    let s = t.supervisor();
    assert_eq!(s.m[1], 0xF_FFFF);
    assert_eq!(s.reg(15), 0, "$m15 stays zero");
    assert_eq!(s.m[2], 3);
}

#[test]
fn immediate16_alu() {
    let t = run(&[
        setzi(1, 10),
        imm16(Imm16Op::Add, 2, 1, -11),    // 10 - 11 = -1
        imm16(Imm16Op::Cmpeq, 3, 1, 10),   // 1
        imm16(Imm16Op::Cmpeq, 4, 1, 11),   // 0
        imm16(Imm16Op::Cmpult, 5, 1, 11),  // 1
        imm16(Imm16Op::Cmpult, 6, 2, 11),  // 0xffffffff < 11 ? 0
        imm16(Imm16Op::Max, 7, 1, 17),     // 17
        imm16(Imm16Op::Min, 8, 1, 263),    // 10
        imm16(Imm16Op::SubFrom, 9, 1, 18), // 18 - 10 = 8
        imm16(Imm16Op::Max, 10, 2, 0),     // signed: max(-1, 0) = 0
    ]);
    let m = t.supervisor().m;
    assert_eq!(m[2], u32::MAX);
    assert_eq!((m[3], m[4], m[5], m[6]), (1, 0, 1, 0));
    assert_eq!((m[7], m[8], m[9], m[10]), (17, 10, 8, 0));
}

#[test]
fn immediate12_alu() {
    let t = run(&[
        setzi(1, 0xF0F0F),
        imm12(Imm12Op::And, 2, 1, 0x0FF),  // 0x0F
        imm12(Imm12Op::Or, 3, 1, 0x100),   // 0xF0F0F | 0x100
        imm12(Imm12Op::Shl, 4, 1, 4),      // 0xF0F0F0
        imm12(Imm12Op::Andc, 5, 1, 0x00F), // 0xF0F00
        imm12(Imm12Op::OrHigh, 6, 1, 0xF00000),
        imm12(Imm12Op::Shr, 7, 1, 8), // 0xF0F
        imm12(Imm12Op::Shl, 8, 1, 31),
    ]);
    let m = t.supervisor().m;
    assert_eq!(m[2], 0x0F);
    assert_eq!(m[3], 0xF0F0F | 0x100);
    assert_eq!(m[4], 0xF0F0F0);
    assert_eq!(m[5], 0xF0F00);
    assert_eq!(m[6], 0xF0F0F | 0xF0_0000);
    assert_eq!(m[7], 0xF0F);
    assert_eq!(m[8], 0x8000_0000);
}

#[test]
fn register_alu() {
    let t = run(&[
        setzi(1, 0x12345),
        setzi(2, 0xFF00F),
        rr(RegOp::Add, 3, 1, 2),
        rr(RegOp::Andc, 4, 2, 1),
        rr(RegOp::Cmpeq, 5, 1, 1),
        rr(RegOp::Cmpeq, 6, 1, 2),
        rr(RegOp::Or, 7, 1, 2),
        rr(RegOp::Sort4x16lo, 8, 1, 2),
        rr(RegOp::Sub, 9, 1, 2),
        rr(RegOp::Xor, 10, 1, 2),
        I::zero(reg(11)),
    ]);
    let m = t.supervisor().m;
    assert_eq!(m[3], 0x12345 + 0xFF00F);
    assert_eq!(m[4], 0xFF00F & !0x12345);
    assert_eq!((m[5], m[6]), (1, 0));
    assert_eq!(m[7], 0x12345 | 0xFF00F);
    assert_eq!(m[8], 0x2345 | (0xF00F << 16));
    assert_eq!(
        m[9],
        0x12345u32.wrapping_sub(0xFF00F),
        "sub follows printed order"
    );
    assert_eq!(m[10], 0x12345 ^ 0xFF00F);
    assert_eq!(m[11], 0);
}

#[test]
fn loads_and_stores() {
    let mut tile = tile_with(&[
        setzi(1, DATA),
        setzi(2, 8),
        I::ld32(reg(3), reg(1), reg(2), 1), // [DATA + 8 + 4]
        I::Ld32Reg {
            d: reg(4),
            base: reg(1),
            index: reg(2),
            offset: reg(2),
        }, // [DATA + 8 + 32]
        setzi(5, 0xABCDE),
        I::st32(reg(5), reg(1), reg(2), 2), // [DATA + 16]
        I::St32Step {
            s: reg(5),
            base: reg(1),
            index: reg(2),
            imm: 3,
        }, // [DATA + 8], $m2 += 12
        setzi(6, 3),
        I::Stm32 {
            s: reg(2),
            base: reg(1),
            offset: reg(6),
        }, // [DATA + 12] = 20
    ]);
    tile.memory_mut().write_u32(DATA + 12, 0x1111).unwrap();
    tile.memory_mut().write_u32(DATA + 40, 0x2222).unwrap();
    assert_eq!(tile.run(1_000_000), Ok(StopReason::Halted));
    let m = tile.supervisor().m;
    assert_eq!((m[3], m[4]), (0x1111, 0x2222));
    assert_eq!(m[2], 20, "st32step post-increments by 4·imm");
    let mem = tile.memory();
    assert_eq!(mem.read_u32(DATA + 16), Ok(0xABCDE));
    assert_eq!(mem.read_u32(DATA + 8), Ok(0xABCDE));
    assert_eq!(mem.read_u32(DATA + 12), Ok(20));
    assert_eq!(mem.read_u32(DATA + 4), Ok(0), "neighbours untouched");
}

#[test]
fn branches() {
    // Count a loop with brnzdec, test brz/brnz both ways, bri over a trap.
    let base = ENTRY;
    let at = |i: u32| base + 4 * i;
    let program = [
        setzi(1, 4),                  // 0
        imm16(Imm16Op::Add, 2, 2, 1), // 1: loop body
        I::brnzdec(reg(1), at(1)),    // 2
        I::brz(reg(3), at(5)),        // 3: taken ($m3 = 0)
        I::Trap { code: 0 },          // 4: skipped
        I::Brnz {
            r: reg(3),
            target: at(4),
        }, // 5: not taken
        I::Bri { target: at(8) },     // 6
        I::Trap { code: 1 },          // 7: skipped
        I::Brz {
            r: reg(2),
            target: at(4),
        }, // 8: not taken ($m2 = 5)
    ];
    let t = run(&program);
    let m = t.supervisor().m;
    assert_eq!(m[2], 5, "brnzdec from 4 runs the body 5 times");
    assert_eq!(m[1], 0, "brnzdec leaves zero behind");
}

#[test]
fn call_and_br_link() {
    let at = |i: u32| ENTRY + 4 * i;
    let t = run(&[
        I::call(reg(10), at(3)),  // 0
        setzi(2, 2),              // 1 (after return)
        I::Bri { target: at(5) }, // 2
        setzi(1, 1),              // 3: callee
        I::br(reg(10)),           // 4
        setzi(3, 3),              // 5
    ]);
    let m = t.supervisor().m;
    assert_eq!((m[1], m[2], m[3]), (1, 2, 3));
    assert_eq!(m[10], at(1));
}

#[test]
fn csrs() {
    let t = run(&[
        I::get(reg(1), Csr::TILE_ID),
        setzi(2, 0x640),
        I::put(Csr::INCOMING_MUX, reg(2)),
        I::get(reg(3), Csr::INCOMING_MUX),
        I::put(Csr::OUTGOING_BASE, MReg::ZERO),
        I::get(reg(4), Csr::COUNT_L),
        I::get(reg(5), Csr::COUNT_L),
        I::get(reg(6), Csr(0x00)),
    ]);
    let m = t.supervisor().m;
    assert_eq!(m[1], 5, "$TILE_ID is the physical id");
    assert_eq!(m[3], 0x640);
    assert_eq!(t.supervisor_csr(0xA0), 0x640);
    assert_eq!(m[5] - m[4], 6, "$SCOUNT_L advances one issue interval");
    assert_eq!(
        m[6],
        ENTRY + 4 * 7,
        "$PC reads the instruction's own address"
    );
}

#[test]
fn nop_sans_delay_and_zero_a() {
    let t = run(&[
        I::Nop,
        I::Sans { n: 0 },
        I::ZeroA {
            d: ipuc_target::ipu21::isa::AReg::new(3).unwrap(),
        },
        I::delay(20),
    ]);
    // 4 instructions + halt branch: nop, sans, zero at 0/6/12, delay at 18
    // holding 21 cycles, br at 39.
    assert_eq!(t.cycle(), 40);
    assert_eq!(t.supervisor().a[3], 0);
}

#[test]
fn workers_start_join_and_see_their_index() {
    // Workers store (WSR index, $m12, $m13) at $m13 + 16·k.
    let at = |i: u32| ENTRY + 4 * i;
    let worker = at(32);
    let mut sup = vec![
        setzi(0, 0x5_80E0),
        I::put(Csr::WORKER0_BASE, reg(0)),
        imm16(Imm16Op::Add, 0, 0, 0x100),
        I::put(Csr(0x22), reg(0)),
        setzi(0, worker),
        setzi(1, DATA),
        I::Runall {
            entry: reg(0),
            vertex_base: reg(1),
            imm: 0,
        },
        I::sync(SyncZone::LOCAL),
        I::get(reg(7), Csr(0x72)), // $CTXT_STS after the join
        I::br(MReg::ZERO),
    ];
    while sup.len() < 32 {
        sup.push(I::Nop);
    }
    sup.extend([
        I::get(reg(0), Csr::WSR),
        imm12(Imm12Op::Shl, 1, 0, 4),
        I::st32(reg(0), reg(13), reg(1), 0),
        I::st32(reg(12), reg(13), reg(1), 1),
        I::st32(reg(13), reg(13), reg(1), 2),
        I::Exitz { r: MReg::ZERO },
    ]);
    let mut tile = super::Tile::new(super::phys(9));
    tile.load(ENTRY, &bytes(&words(&sup))).unwrap();
    tile.start_supervisor(ENTRY);
    assert_eq!(tile.run(1_000_000), Ok(StopReason::Halted));
    let mem = tile.memory();
    for k in 0..6u32 {
        assert_eq!(mem.read_u32(DATA + 16 * k), Ok(k), "worker {k} index");
        assert_eq!(mem.read_u32(DATA + 16 * k + 8), Ok(DATA), "vertex base");
    }
    assert_eq!(mem.read_u32(DATA + 4), Ok(0x5_80E0), "$m12 = $WORKER0_BASE");
    assert_eq!(
        mem.read_u32(DATA + 16 + 4),
        Ok(0x5_81E0),
        "$m12 = $WORKER1_BASE"
    );
    assert_eq!(
        tile.supervisor().m[7],
        1,
        "only the supervisor is active after sync 2"
    );
    for k in 0..6 {
        let w = tile.context(ContextId::worker(k));
        assert_eq!(w.issued, 6);
        assert_eq!(w.exit_status, 1);
    }
}
