//! Multi-tile device: supersteps, the exchange hook, deadlock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ipuc_target::ipu21::isa::{Imm16Op, Instruction as I, MReg, SyncZone};

use super::{bytes, phys, reg, words, DATA, ENTRY};
use crate::{Device, DeviceError, ExchangeFabric, SampleKind, SimFault, Superstep, Tile};

fn tile(id: u16, program: &[I]) -> Tile {
    let mut p = program.to_vec();
    p.push(I::br(MReg::ZERO));
    let mut t = Tile::new(phys(u32::from(id)));
    t.load(ENTRY, &bytes(&words(&p))).unwrap();
    t.start_supervisor(ENTRY);
    t
}

/// A toy fabric: copies word DATA of tile 0 to DATA + 4 of every tile and
/// counts supersteps.
struct CopyFabric {
    calls: Arc<AtomicU64>,
}

impl ExchangeFabric for CopyFabric {
    fn superstep(&self, step: &mut Superstep<'_>) -> Result<(), SimFault> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        assert!(step.zones.iter().all(|z| *z == Some(3)));
        let v = step.tiles[0].memory().read_u32(DATA).unwrap();
        for t in step.tiles.iter_mut() {
            t.memory_mut().write_u32(DATA + 4, v).unwrap();
        }
        Ok(())
    }
}

#[test]
fn tiles_meet_at_internal_sync_and_the_fabric_runs() {
    let store = |v: u32| {
        vec![
            I::setzi(reg(1), DATA),
            I::setzi(reg(2), v),
            I::st32(reg(2), reg(1), MReg::ZERO, 0),
        ]
    };
    // Tile 0 does more work before the sync than tile 1.
    let mut p0 = store(11);
    p0.extend([I::Nop; 10]);
    p0.extend([
        I::sync(SyncZone::INTERNAL),
        I::ld32(reg(3), reg(1), MReg::ZERO, 1),
    ]);
    let mut p1 = store(22);
    p1.extend([
        I::sync(SyncZone::INTERNAL),
        I::ld32(reg(3), reg(1), MReg::ZERO, 1),
    ]);
    let calls = Arc::new(AtomicU64::new(0));
    let mut device = Device::with_fabric(
        vec![tile(0, &p0), tile(1, &p1)],
        Box::new(CopyFabric {
            calls: calls.clone(),
        }),
    )
    .with_sync_cycles(0);
    let run = device.run(1_000_000).unwrap();
    assert_eq!(run.supersteps, 1);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    for t in device.tiles() {
        assert_eq!(t.supervisor().m[3], 11, "tile {} got tile 0's word", t.id());
    }
    // Tile 0 reached the sync at cycle 79 (sync issued at 78); both resume there.
    let t1 = &device.tiles()[1];
    let wait = t1
        .samples()
        .iter()
        .find(|s| matches!(s.kind, SampleKind::SyncWait { .. }))
        .unwrap();
    assert_eq!((wait.start, wait.end), (19, 79));
    // After release at 79, tile 0's supervisor is still inside its issue
    // interval (sync issued at 78 → next issue 84): ld32 84, br 90. Tile 1
    // issues at 79 and 85.
    assert_eq!(device.tiles()[0].cycle(), 91);
    assert_eq!(device.tiles()[1].cycle(), 86);
}

#[test]
fn halted_tile_and_waiting_tile_deadlock() {
    let mut device = Device::new(vec![
        tile(0, &[I::Nop]),
        tile(3, &[I::sync(SyncZone::INTERNAL)]),
    ]);
    assert_eq!(
        device.run(1_000_000),
        Err(DeviceError::Deadlock {
            halted: vec![phys(0)],
            waiting: vec![(phys(3), 3)]
        })
    );
}

#[test]
fn many_tiles_run_in_parallel_between_syncs() {
    // 64 tiles count to their id, sync twice, and halt.
    let tiles = (0..64u16)
        .map(|id| {
            tile(
                id,
                &[
                    I::setzi(reg(1), u32::from(id)),
                    I::brz(reg(1), ENTRY + 16),
                    I::AluImm16 {
                        op: Imm16Op::Add,
                        d: reg(2),
                        s: reg(2),
                        imm: 1,
                    },
                    I::brnzdec(reg(1), ENTRY + 8),
                    I::sync(SyncZone::INTERNAL),
                    I::sync(SyncZone::INTERNAL),
                ],
            )
        })
        .collect();
    let mut device = Device::new(tiles);
    let run = device.run(1_000_000).unwrap();
    assert_eq!(run.supersteps, 2);
    for t in device.tiles() {
        let expect = if t.id() == phys(0) {
            0
        } else {
            u32::from(t.id().get()) + 1
        };
        assert_eq!(t.supervisor().m[2], expect);
        assert_eq!(t.superstep(), 2);
    }
}

/// A fabric that retires each tile's row call, charging 1 cycle per row word
/// up to its `br $m10`, and writes the row length to DATA.
struct RowFabric;

impl ExchangeFabric for RowFabric {
    fn superstep(&self, step: &mut Superstep<'_>) -> Result<(), SimFault> {
        for t in step.tiles.iter_mut() {
            let Some(call) = t.pending_row_call()? else {
                continue;
            };
            let mut len = 0;
            while t.memory().read_u32(call.row + 4 * len) != Ok(0x43A0_0000) {
                len += 1;
            }
            t.memory_mut().write_u32(DATA, len).unwrap();
            t.finish_row_call(call, 100 + u64::from(len), Arc::from("row"));
        }
        Ok(())
    }
}

#[test]
fn fabric_retires_the_row_call_after_the_sync() {
    let row = ENTRY + 0x200;
    let program = [
        I::sync(SyncZone::INTERNAL),
        I::call(reg(10), row),
        I::setzi(reg(1), 1),
    ];
    let mut t = tile(4, &program);
    let row_words = words(&[I::delay(3), I::delay(4), I::br(reg(10))]);
    t.load(row, &bytes(&row_words)).unwrap();
    let mut device = Device::with_fabric(vec![t], Box::new(RowFabric)).with_sync_cycles(0);
    device.run(1_000_000).unwrap();
    let t = &device.tiles()[0];
    assert_eq!(t.memory().read_u32(DATA), Ok(2), "fabric saw the row");
    assert_eq!(t.supervisor().m[1], 1, "execution continued after the call");
    assert_eq!(t.supervisor().m[10], ENTRY + 8, "link register set");
    // sync at 0 (arrival 1); call issues at 6 and holds 102 cycles; setzi at
    // 108; halting branch at 114.
    assert_eq!(t.cycle(), 115);
    let ex = t
        .samples()
        .iter()
        .find(|s| matches!(s.kind, SampleKind::Exchange { .. }))
        .unwrap();
    assert_eq!((ex.start, ex.end), (6, 108));
}

#[test]
fn the_sync_latency_follows_the_last_arrival() {
    // Same two tiles as above with the default latency: tile 1 waits from
    // 19 to the last arrival (79) plus the 126-cycle sync latency.
    let p = |nops: usize| {
        let mut v = vec![I::Nop; nops];
        v.push(I::sync(SyncZone::INTERNAL));
        v
    };
    let mut device = Device::new(vec![tile(0, &p(13)), tile(1, &p(3))]);
    device.run(1_000_000).unwrap();
    let wait = |t: &Tile| {
        let w = t
            .samples()
            .iter()
            .find(|s| matches!(s.kind, SampleKind::SyncWait { .. }))
            .unwrap();
        (w.start, w.end)
    };
    assert_eq!(crate::cycle::INTERNAL_SYNC_CYCLES, 126);
    assert_eq!(wait(&device.tiles()[0]), (79, 79 + 126));
    assert_eq!(wait(&device.tiles()[1]), (19, 79 + 126));
}

#[test]
fn tiles_waiting_in_different_sync_zones_are_an_error() {
    let mut device = Device::new(vec![
        tile(0, &[I::sync(SyncZone::INTERNAL)]),
        tile(1, &[I::sync(SyncZone::ANS)]),
        tile(2, &[I::Nop, I::sync(SyncZone::EXTERNAL3_SLV)]),
    ]);
    match device.run(1_000_000) {
        Err(DeviceError::SyncZoneMismatch {
            superstep,
            first,
            other,
        }) => {
            assert_eq!(superstep, 0);
            assert_eq!((first.0, first.1), (phys(0), 3));
            assert_eq!((other.0, other.1), (phys(2), 7));
            assert_eq!(other.2, ENTRY + 4, "the pc of tile 2's sync");
        }
        other => panic!("expected a sync-zone mismatch, got {other:?}"),
    }
    // ANS with INTERNAL alone is the exchange-boundary pairing (§2.7).
    let mut device = Device::new(vec![
        tile(0, &[I::sync(SyncZone::INTERNAL)]),
        tile(1, &[I::sync(SyncZone::ANS)]),
    ]);
    assert_eq!(device.run(1_000_000).unwrap().supersteps, 1);
}
