//! Every fault kind, with its tile, context and PC.

use ipuc_target::ipu21::isa::{Csr, Instruction as I, MReg, SyncZone};

use super::{bytes, phys, reg, tile_with, words, DATA, ENTRY};
use crate::{ContextId, FaultKind, SimFault, Tile};

fn fault_of(program: &[I]) -> SimFault {
    let mut tile = tile_with(program);
    tile.run(100_000).expect_err("program must fault")
}

fn sup(pc_index: u32, kind: FaultKind) -> SimFault {
    SimFault {
        tile: phys(5),
        context: ContextId::SUPERVISOR,
        pc: ENTRY + 4 * pc_index,
        kind,
    }
}

#[test]
fn undecodable_word() {
    let mut tile = tile_with(&[I::Nop, I::Nop]);
    tile.memory_mut().write_u32(ENTRY + 4, 0).unwrap();
    assert_eq!(
        tile.run(100_000),
        Err(sup(1, FaultKind::Undecodable { word: 0 }))
    );
}

#[test]
fn misaligned_and_out_of_range_accesses() {
    assert_eq!(
        fault_of(&[
            I::setzi(reg(1), DATA + 2),
            I::ld32(reg(2), reg(1), MReg::ZERO, 0)
        ]),
        sup(
            1,
            FaultKind::Misaligned {
                addr: DATA + 2,
                width: 4
            }
        )
    );
    assert_eq!(
        fault_of(&[
            I::setzi(reg(1), 0xE_8000),
            I::st32(reg(2), reg(1), MReg::ZERO, 0)
        ]),
        sup(
            1,
            FaultKind::OutOfRange {
                addr: 0xE_8000,
                width: 4
            }
        )
    );
    assert_eq!(
        fault_of(&[
            I::setzi(reg(1), 0x4_BFF0),
            I::ld32(reg(2), reg(1), MReg::ZERO, 0)
        ]),
        sup(
            1,
            FaultKind::OutOfRange {
                addr: 0x4_BFF0,
                width: 4
            }
        )
    );
}

#[test]
fn fetch_outside_executable_region() {
    let f = fault_of(&[I::Bri { target: 0x8_0000 }]);
    assert_eq!(f.kind, FaultKind::FetchOutsideExecutable { addr: 0x8_0000 });
    assert_eq!(f.pc, 0x8_0000);
    let f = fault_of(&[I::setzi(reg(1), ENTRY + 2), I::br(reg(1))]);
    assert_eq!(
        f.kind,
        FaultKind::FetchOutsideExecutable { addr: ENTRY + 2 }
    );
}

#[test]
fn runaway_loop_hits_the_cycle_limit() {
    let f = fault_of(&[I::Bri { target: ENTRY }]);
    assert_eq!(f, sup(0, FaultKind::CycleLimit { limit: 100_000 }));
}

#[test]
fn trap_and_context_rules() {
    assert_eq!(
        fault_of(&[I::Nop, I::Trap { code: 1 }]),
        sup(1, FaultKind::Trap { code: 1 })
    );
    assert_eq!(
        fault_of(&[I::Exitz { r: MReg::ZERO }]),
        sup(0, FaultKind::InvalidForContext { mnemonic: "exitz" })
    );
    assert_eq!(
        fault_of(&[I::get(reg(1), Csr(0x50))]),
        sup(
            0,
            FaultKind::UnmodelledCsr {
                csr: 0x50,
                write: false
            }
        )
    );
    assert_eq!(
        fault_of(&[I::put(Csr::TILE_ID, reg(1))]),
        sup(
            0,
            FaultKind::UnmodelledCsr {
                csr: 3,
                write: true
            }
        )
    );
    let send = I::send(1, 0x100, 0).unwrap();
    assert_eq!(
        fault_of(&[send]),
        sup(0, FaultKind::ExchangeInInterpreter { mnemonic: "send" })
    );
}

/// A worker program at ENTRY + 0x100 started by the supervisor.
fn worker_fault(worker: &[I]) -> SimFault {
    let entry = ENTRY + 0x100;
    let sup = [
        I::setzi(reg(0), entry),
        I::Runall {
            entry: reg(0),
            vertex_base: MReg::ZERO,
            imm: 0,
        },
        I::sync(SyncZone::LOCAL),
        I::br(MReg::ZERO),
    ];
    let mut tile = Tile::new(phys(7));
    tile.load(ENTRY, &bytes(&words(&sup))).unwrap();
    tile.load(entry, &bytes(&words(worker))).unwrap();
    tile.start_supervisor(ENTRY);
    tile.run(100_000).expect_err("worker must fault")
}

#[test]
fn worker_faults_name_the_worker() {
    let f = worker_fault(&[I::Runall {
        entry: reg(0),
        vertex_base: MReg::ZERO,
        imm: 0,
    }]);
    assert_eq!(f.tile, phys(7));
    assert_eq!(f.context, ContextId::worker(0), "worker 0 issues first");
    assert_eq!(f.pc, ENTRY + 0x100);
    assert_eq!(f.kind, FaultKind::InvalidForContext { mnemonic: "runall" });

    let f = worker_fault(&[I::sync(SyncZone::LOCAL)]);
    assert_eq!(f.kind, FaultKind::InvalidForContext { mnemonic: "sync" });

    // Worker k loads from $WSR·2 + 1: only worker 0 is aligned... all are
    // misaligned, worker 0 faults first.
    let f = worker_fault(&[
        I::get(reg(1), Csr::WSR),
        I::setzi(reg(2), DATA + 1),
        I::ld32(reg(3), reg(2), reg(1), 0),
    ]);
    assert_eq!(f.context, ContextId::worker(0));
    assert_eq!(f.pc, ENTRY + 0x108);
    assert_eq!(
        f.kind,
        FaultKind::Misaligned {
            addr: DATA + 1,
            width: 4
        }
    );

    // A worker branching to 0 does not halt the tile: it faults.
    let f = worker_fault(&[I::br(MReg::ZERO)]);
    assert_eq!(f.kind, FaultKind::FetchOutsideExecutable { addr: 0 });
}

#[test]
fn runall_while_workers_run() {
    let entry = ENTRY + 0x100;
    let sup = [
        I::setzi(reg(0), entry),
        I::Runall {
            entry: reg(0),
            vertex_base: MReg::ZERO,
            imm: 0,
        },
        I::Runall {
            entry: reg(0),
            vertex_base: MReg::ZERO,
            imm: 0,
        },
    ];
    let mut tile = Tile::new(phys(1));
    tile.load(ENTRY, &bytes(&words(&sup))).unwrap();
    tile.load(entry, &bytes(&words(&[I::Bri { target: entry }])))
        .unwrap();
    tile.start_supervisor(ENTRY);
    let f = tile.run(100_000).unwrap_err();
    assert_eq!(f.context, ContextId::SUPERVISOR);
    assert_eq!(f.pc, ENTRY + 8);
    assert_eq!(f.kind, FaultKind::WorkersBusy);
}

#[test]
fn fault_messages_carry_location() {
    let f = fault_of(&[I::Trap { code: 0 }]);
    assert_eq!(f.to_string(), "tile 5 supervisor at pc 0x4c010: trap 0");
}

/// The messages of the error types moved onto `thiserror`, pinned to the
/// text their hand-written `Display`s printed.
#[test]
fn error_messages_are_the_hand_written_ones() {
    use crate::fabric::FabricError;
    use crate::{DeviceError, OperandFault, OperandRule};
    use ipuc_target::ipu21::topology::PhysicalTile;
    let t = PhysicalTile::new(7).unwrap();
    let cases: Vec<(String, String)> = vec![
        (
            SimFault {
                tile: phys(3),
                context: ContextId::SUPERVISOR,
                pc: 0x4c010,
                kind: FaultKind::UnmodelledCsr { csr: 0x41, write: true },
            }
            .to_string(),
            format!(
                "tile 3 {} at pc 0x4c010: write of CSR 0x41, which the simulator does not model as writable",
                ContextId::SUPERVISOR
            ),
        ),
        (
            FaultKind::UnmodelledCsr { csr: 0x41, write: false }.to_string(),
            "read of CSR 0x41, which the simulator does not model".into(),
        ),
        (
            FaultKind::Undecodable { word: 0xAB }.to_string(),
            "undecodable instruction word 0x000000ab".into(),
        ),
        (
            FaultKind::ExchangeCsr { phase: 4, csr: 0x1FF, value: 8 }.to_string(),
            "exchange phase 4: row called with CSR 0x1ff = 0x8, a value the exchange model does not cover".into(),
        ),
        (
            DeviceError::Deadlock { halted: vec![phys(1), phys(2)], waiting: vec![(phys(3), 3)] }.to_string(),
            "deadlock: 2 tile(s) halted (first Some(1)) while 1 wait at a global sync (first Some((3, 3)))".into(),
        ),
        (
            DeviceError::SyncZoneMismatch { superstep: 2, first: (phys(1), 3, 0x4c000), other: (phys(9), 0, 0x4c008) }.to_string(),
            "global sync 2: tile 1 waits in sync zone 3 (pc 0x4c000) but tile 9 in zone 0 (pc 0x4c008); the tiles would never be released together".into(),
        ),
        (
            crate::bsp::RestartError::NotHalted { tile: phys(5) }.to_string(),
            "tile 5 has not halted".into(),
        ),
        (
            crate::bsp::RestartError::EntryCount { entries: 1, tiles: 2 }.to_string(),
            "1 entry points for 2 tiles".into(),
        ),
        (
            FabricError::RowNotExecutable { tile: t, row: (0xa0000, 0xa0010) }.to_string(),
            format!("{t}: exchange row 0xa0000..0xa0010 is not in executable memory (instruction fetch only below 0x80000, facts §2.10 rule 1)"),
        ),
        (
            FabricError::FetchElement { tile: t, send: false, event: 9, address: 0x50040, row: (0x50000, 0x50020) }.to_string(),
            format!("{t}: receive destination 0x50040 at event 9 is in an effective element of the executing row 0x50000..0x50020 (+64-byte fetch look-ahead, facts §2.10 rule 2)"),
        ),
        (
            FabricError::ElementConflict { tile: t, element: 40, send: (0x90000, 1, 5), receive: (0x90100, 3, 12) }.to_string(),
            format!("{t}: send source 0x90000 (events 1..=5) and receive destination 0x90100 (events 3..=12) share effective element 40 while both are active (facts §2.10 rule 5)"),
        ),
        (
            FabricError::SourceOutsideMemory { tile: t, event: 2, address: 0x10 }.to_string(),
            format!("{t}: send at event 2 reads 0x10 outside memory"),
        ),
        (
            OperandFault { operand: "out", addr: 0x90004, rule: OperandRule::OutsideSram { bytes: 64 } }.to_string(),
            "operand out at 0x90004 (64 bytes) is outside SRAM".into(),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}
