//! The progress watch (`watch.rs`) and the device's slices: a tile that can
//! no longer make progress is a typed fault naming its PCs within a few
//! check intervals, whatever its budget; loops that do make progress (a
//! counter, a store, a clock read) are left alone; a long superstep still
//! reports progress.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ipuc_target::ipu21::isa::{Csr, Imm12Op, Imm16Op, Instruction as I, MReg, SyncZone};

use super::{bytes, phys, reg, tile_with, words, DATA, ENTRY};
use crate::bsp::Progress;
use crate::{ContextId, Device, DeviceError, FaultKind, StopReason, Tile, CHECK_INTERVAL};

/// A budget no test comes near: only the watch can stop these loops.
const NO_BUDGET: u64 = u64::MAX / 2;

/// Cycles within which a loop of `period` supervisor instructions must be
/// found: Brent's search needs at most about 4 × period check intervals,
/// each of `CHECK_INTERVAL` supervisor issues six cycles apart.
fn found_within(period: u64) -> u64 {
    (4 * period + 4) * u64::from(CHECK_INTERVAL) * 6
}

fn imm16(op: Imm16Op, d: u8, s: u8, imm: i32) -> I {
    I::AluImm16 {
        op,
        d: reg(d),
        s: reg(s),
        imm,
    }
}

#[test]
fn a_branch_to_itself_stops_with_its_pc_long_before_the_budget() {
    let mut tile = tile_with(&[I::Nop, I::Bri { target: ENTRY + 4 }]);
    let f = tile.run(NO_BUDGET).expect_err("a self-loop must stop");
    assert_eq!(f.tile, phys(5));
    assert_eq!(f.context, ContextId::SUPERVISOR);
    assert_eq!(f.pc, ENTRY + 4);
    let FaultKind::NoProgress {
        instructions,
        running,
    } = &f.kind
    else {
        panic!("expected NoProgress, got {f}");
    };
    assert_eq!(running, &vec![(ContextId::SUPERVISOR, ENTRY + 4)]);
    assert_eq!(*instructions, u64::from(CHECK_INTERVAL));
    assert!(tile.cycle() <= found_within(1), "{}", tile.cycle());
    let text = f.to_string();
    assert!(
        text.contains("tile 5 supervisor at pc 0x4c014") && text.contains("no progress"),
        "{text}"
    );
}

#[test]
fn loops_of_any_length_are_found() {
    // Periods that do not divide the check interval: the saved sample
    // moves at powers of two, so the repeat is found all the same.
    for period in [3u32, 7, 1000] {
        let mut program = vec![I::Nop; period as usize - 1];
        program.push(I::Bri { target: ENTRY });
        let mut tile = tile_with(&program);
        let f = tile.run(NO_BUDGET).expect_err("an endless loop must stop");
        let FaultKind::NoProgress { instructions, .. } = f.kind else {
            panic!("period {period}: {f}");
        };
        assert_eq!(instructions % u64::from(period), 0, "period {period}");
        assert!(tile.cycle() <= found_within(u64::from(period)));
    }
}

#[test]
fn workers_spinning_under_a_waiting_supervisor_are_named() {
    let worker = ENTRY + 0x100;
    let mut tile = tile_with(&[
        I::setzi(reg(0), worker),
        I::Runall {
            entry: reg(0),
            vertex_base: MReg::ZERO,
            imm: 0,
        },
        I::sync(SyncZone::LOCAL),
    ]);
    let spin = words(&[I::Bri { target: worker }]);
    tile.load(worker, &bytes(&spin)).unwrap();
    let f = tile.run(NO_BUDGET).expect_err("spinning workers must stop");
    let FaultKind::NoProgress { running, .. } = &f.kind else {
        panic!("{f}");
    };
    let expected: Vec<(ContextId, u32)> = (0..6).map(|k| (ContextId::worker(k), worker)).collect();
    assert_eq!(running, &expected);
    assert_eq!((f.context, f.pc), (ContextId::worker(0), worker));
    assert!(f.to_string().contains("worker 5 at 0x4c110"), "{f}");
}

#[test]
fn a_long_counted_loop_is_progress() {
    // 200,000 iterations of `brnzdec` (far more than a check interval):
    // the counter changes every time, so the state never repeats.
    let mut tile = tile_with(&[I::setzi(reg(1), 200_000), I::brnzdec(reg(1), ENTRY + 4)]);
    assert_eq!(tile.run(NO_BUDGET), Ok(StopReason::Halted));
}

/// Eight instructions per iteration, so every sample (a multiple of the
/// check interval) lands at the same PC: with its registers equal too, only
/// what the watch counts beside them tells progress apart.
const EIGHT: u32 = 8;

#[test]
fn a_loop_whose_registers_repeat_but_which_stores_is_progress() {
    // Each iteration counts a word in SRAM down from 100,000 and clears its
    // registers: at every sample the PC and registers are the same, only
    // the memory differs, and the loop ends when the word reaches 0.
    let top = ENTRY + 4;
    let body = [
        I::ld32(reg(2), reg(1), MReg::ZERO, 0),
        imm16(Imm16Op::Add, 2, 2, -1),
        I::st32(reg(2), reg(1), MReg::ZERO, 0),
        imm16(Imm16Op::Cmpeq, 3, 2, 0),
        I::setzi(reg(2), 0),
        I::Nop,
        I::Nop,
        I::brz(reg(3), top),
    ];
    assert_eq!(body.len() as u32, EIGHT);
    let mut program = vec![I::setzi(reg(1), DATA)];
    program.extend(body);
    let mut tile = tile_with(&program);
    tile.memory_mut().write_u32(DATA, 100_000).unwrap();
    assert_eq!(tile.run(NO_BUDGET), Ok(StopReason::Halted));
    assert_eq!(tile.memory().read_u32(DATA), Ok(0));
}

#[test]
fn a_loop_waiting_for_the_clock_is_progress() {
    // Spin until `$COUNT_L` >> 16 reaches 40 (2,621,440 cycles), clearing
    // the register each time: only the clock changes, and the loop must
    // not be cut short.
    let top = ENTRY;
    let body = [
        I::get(reg(1), Csr::COUNT_L),
        I::AluImm12 {
            op: Imm12Op::Shr,
            d: reg(1),
            s: reg(1),
            imm: 16,
        },
        imm16(Imm16Op::Cmpult, 3, 1, 40),
        I::setzi(reg(1), 0),
        I::Nop,
        I::Nop,
        I::Nop,
        I::Brnz {
            r: reg(3),
            target: top,
        },
    ];
    assert_eq!(body.len() as u32, EIGHT);
    let mut tile = tile_with(&body);
    assert_eq!(tile.run(NO_BUDGET), Ok(StopReason::Halted));
    assert!(tile.cycle() >= 40 << 16, "{}", tile.cycle());
}

fn device_tile(id: u16, program: &[I]) -> Tile {
    let mut p = program.to_vec();
    p.push(I::br(MReg::ZERO));
    let mut t = Tile::new(phys(u32::from(id)));
    t.load(ENTRY, &bytes(&words(&p))).unwrap();
    t.start_supervisor(ENTRY);
    t
}

#[test]
fn the_device_names_every_stalled_tile() {
    // Tiles 0 and 2 spin after a sync; tile 1 finishes the superstep and
    // waits at the second sync.
    let after_sync = ENTRY + 4;
    let spin = [I::sync(SyncZone::INTERNAL), I::Bri { target: after_sync }];
    let fine = [I::sync(SyncZone::INTERNAL), I::sync(SyncZone::INTERNAL)];
    let mut device = Device::new(vec![
        device_tile(0, &spin),
        device_tile(1, &fine),
        device_tile(2, &spin),
    ]);
    let e = device.run(NO_BUDGET).expect_err("two tiles never finish");
    let DeviceError::NoProgress { stalled } = &e else {
        panic!("expected NoProgress, got {e}");
    };
    let named: Vec<(u16, u32)> = stalled.iter().map(|f| (f.tile.get(), f.pc)).collect();
    assert_eq!(named, vec![(0, after_sync), (2, after_sync)]);
    let text = e.to_string();
    assert!(
        text.starts_with("no progress on 2 tile(s): tile 0 (supervisor at 0x4c014), tile 2 (supervisor at 0x4c014)"),
        "{text}"
    );
}

#[test]
fn a_long_superstep_reports_progress_and_runs_as_without_slices() {
    // One superstep of 600,000 cycles in slices of 10,000: the device
    // looks up after every slice, and the result is the same cycle for
    // cycle as one uninterrupted run.
    let program = [I::setzi(reg(1), 100_000), I::brnzdec(reg(1), ENTRY + 4)];
    let reports = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&reports);
    let mut device = Device::new(vec![device_tile(0, &program)])
        .with_slice_cycles(10_000)
        .with_progress(Progress {
            every: std::time::Duration::ZERO,
            report: Box::new(move |status| {
                assert_eq!(status.supersteps, 0);
                seen.fetch_add(1, Ordering::SeqCst);
            }),
        });
    let run = device.run(NO_BUDGET).unwrap();
    assert!(reports.load(Ordering::SeqCst) >= 55, "{reports:?}");
    let mut alone = device_tile(0, &program);
    assert_eq!(alone.run(NO_BUDGET), Ok(StopReason::Halted));
    assert_eq!(run.cycles, alone.cycle());
    assert_eq!(
        device.tiles()[0].samples(),
        alone.samples(),
        "slicing must not change the trace"
    );
}

#[test]
fn a_wait_longer_than_a_slice_still_moves_on() {
    // `delay` holds the supervisor 5,000 cycles, half a thousand slices of
    // 10: each call must still issue, or the device would pause forever.
    let program = [I::delay(5_000), I::Nop];
    let mut device = Device::new(vec![device_tile(0, &program)]).with_slice_cycles(10);
    let run = device.run(NO_BUDGET).unwrap();
    let mut alone = device_tile(0, &program);
    assert_eq!(alone.run(NO_BUDGET), Ok(StopReason::Halted));
    assert_eq!(run.cycles, alone.cycle());
}

#[test]
fn the_default_slice_starts_small_so_progress_comes_from_the_start() {
    // #44: with the default slice (2^26 cycles) a long superstep used to
    // run whole before the first report, minutes of wall time on a busy
    // chip. Slices now start at `FIRST_SLICE_CYCLES` and follow wall time:
    // a superstep of a few million cycles reports many times, and runs as
    // it would unsliced.
    let program = [I::setzi(reg(1), 1_000_000), I::brnzdec(reg(1), ENTRY + 4)];
    let reports = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&reports);
    let mut device = Device::new(vec![device_tile(0, &program)]).with_progress(Progress {
        every: std::time::Duration::ZERO,
        report: Box::new(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        }),
    });
    let run = device.run(NO_BUDGET).unwrap();
    assert!(
        run.cycles > 4 * crate::bsp::FIRST_SLICE_CYCLES,
        "{}",
        run.cycles
    );
    assert!(reports.load(Ordering::SeqCst) >= 4, "{reports:?}");
    let mut alone = device_tile(0, &program);
    assert_eq!(alone.run(NO_BUDGET), Ok(StopReason::Halted));
    assert_eq!(run.cycles, alone.cycle());
}
