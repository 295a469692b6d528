//! The barrel cycle model, self-modifying code and codelets.

use std::sync::Arc;

use ipuc_target::ipu21::isa::{encode, Csr, Imm16Op, Instruction as I, MReg, SyncZone};

use super::{bytes, reg, run, tile_with, words, DATA, ENTRY};
use crate::{CodeletTable, FaultKind, FnCodelet, SampleKind, StopReason, Tile};

#[test]
fn supervisor_alone_issues_every_six_cycles() {
    let t = run(&[I::Nop; 10]);
    // 10 nops + the halting branch: issues at 0, 6, ..., 60.
    assert_eq!(t.cycle(), 61);
    assert_eq!(t.supervisor().issued, 11);
}

/// Six workers each running `n` instructions then exitz: the barrel is full,
/// so they take about 6·(n+1) cycles in total, like one worker alone.
#[test]
fn six_workers_fill_the_barrel() {
    let entry = ENTRY + 0x100;
    let sup = [
        I::setzi(reg(0), entry),
        I::Runall {
            entry: reg(0),
            vertex_base: MReg::ZERO,
            imm: 0,
        },
        I::sync(SyncZone::LOCAL),
        I::get(reg(1), Csr::COUNT_L),
        I::br(MReg::ZERO),
    ];
    let mut worker = vec![I::Nop; 9];
    worker.push(I::Exitz { r: MReg::ZERO });
    let mut tile = Tile::new(super::phys(0));
    tile.load(ENTRY, &bytes(&words(&sup))).unwrap();
    tile.load(entry, &bytes(&words(&worker))).unwrap();
    tile.start_supervisor(ENTRY);
    assert_eq!(tile.run(100_000), Ok(StopReason::Halted));
    // runall issues at 6; workers 0..5 issue at 7..=12. At 13 the
    // supervisor's `sync 2` takes a slot, so later rounds run at 14..=19,
    // 20..=25, ...: round r ≥ 1 starts at 14 + 6(r − 1). The tenth
    // instruction (exitz, r = 9) of worker 5 issues at 62 + 5 = 67; sync 2
    // releases the supervisor at 68, where it reads $SCOUNT_L.
    assert_eq!(tile.supervisor().m[1], 68);
}

#[test]
fn stores_to_code_are_seen_by_the_next_fetch() {
    // Overwrite instruction 3 (setzi $m1, 1) with setzi $m1, 2 before it runs.
    let new_word = encode(&I::setzi(reg(1), 2)).unwrap().words()[0];
    let t = run(&[
        I::setzi(reg(2), ENTRY),
        I::setzi(reg(3), new_word & 0xF_FFFF),
        I::AluImm12 {
            op: ipuc_target::ipu21::isa::Imm12Op::OrHigh,
            d: reg(3),
            s: reg(3),
            imm: new_word & 0xFFF0_0000,
        },
        I::st32(reg(3), reg(2), MReg::ZERO, 5),
        I::Nop,
        I::setzi(reg(1), 1),
    ]);
    assert_eq!(t.supervisor().m[1], 2);
}

#[test]
fn decoded_words_are_reused_until_written() {
    // A loop body executed many times is decoded once; writing it re-decodes.
    let mut tile = tile_with(&[
        I::setzi(reg(1), 99),
        I::AluImm16 {
            op: Imm16Op::Add,
            d: reg(2),
            s: reg(2),
            imm: 1,
        },
        I::brnzdec(reg(1), ENTRY + 4),
    ]);
    assert_eq!(tile.run(1_000_000), Ok(StopReason::Halted));
    assert_eq!(tile.supervisor().m[2], 100);
}

#[test]
fn codelet_call_runs_native_code_and_charges_cycles() {
    let kernel = 0x5_0000;
    let mut table = CodeletTable::new();
    table.register(
        kernel,
        Arc::new(FnCodelet::new(
            "add_words",
            |call: &mut crate::CodeletCall<'_>| {
                // [$m2] = [$m3] + $m4
                let a = call
                    .memory
                    .read_u32(call.arg(0))
                    .map_err(|e| format!("{e:?}"))?;
                let out = call.output();
                call.memory
                    .write_u32(out, a + call.arg(1))
                    .map_err(|e| format!("{e:?}"))?;
                Ok(100)
            },
        )),
    );
    let mut tile = tile_with(&[
        I::setzi(reg(2), DATA),
        I::setzi(reg(3), DATA + 4),
        I::setzi(reg(4), 7),
        I::call(reg(10), kernel),
        I::setzi(reg(5), 1),
    ]);
    tile.set_codelets(Arc::new(table));
    tile.memory_mut().write_u32(DATA + 4, 35).unwrap();
    assert_eq!(tile.run(100_000), Ok(StopReason::Halted));
    assert_eq!(tile.memory().read_u32(DATA), Ok(42));
    assert_eq!(
        tile.supervisor().m[5],
        1,
        "execution continued after the call"
    );
    assert_eq!(tile.supervisor().m[10], ENTRY + 16);
    // call issues at 18 and holds the supervisor 100 cycles; setzi at 118,
    // halting branch at 124.
    assert_eq!(tile.cycle(), 125);
    let s = tile
        .samples()
        .iter()
        .find(|s| matches!(s.kind, SampleKind::Codelet { .. }))
        .expect("codelet sample");
    assert_eq!((s.start, s.end), (18, 118));
}

#[test]
fn codelet_errors_are_faults() {
    let kernel = 0x5_0000;
    let mut table = CodeletTable::new();
    table.register(
        kernel,
        Arc::new(FnCodelet::new(
            "broken",
            |_: &mut crate::CodeletCall<'_>| Err("bad shape".to_owned()),
        )),
    );
    let mut tile = tile_with(&[I::call(reg(10), kernel)]);
    tile.set_codelets(Arc::new(table));
    let f = tile.run(100_000).unwrap_err();
    assert_eq!(f.pc, ENTRY);
    assert_eq!(
        f.kind,
        FaultKind::Codelet {
            name: "broken".into(),
            message: "bad shape".into()
        }
    );
}
