//! The static runtime's routines on the simulator: start-up, the Repeat word
//! patcher, the dispatcher around 24 words, and completion.

//!
//! Lives here rather than in `ipuc-sim` because assembling and linking the
//! runtime needs the compiler's assembler, and the simulator may not depend
//! on `ipuc-core` in any section (`cargo xtask layers`).

use ipuc_core::asm::{assemble, Image};
use ipuc_core::runtime::{link_with_runtime, symbols};
use ipuc_sim::{ContextId, Device, Tile};
use ipuc_target::ipu21::sram::{layout, APPLICATION_LOAD_BASE};
use ipuc_target::ipu21::topology::PhysicalTile;

const TABLE: u32 = 0x9_0000;
const WORD: u32 = 0x6_0000;
const ROW: u32 = 0x6_1000;

fn build(program: &str) -> (Tile, Image) {
    let src = format!("        .globl ipuc_program\nipuc_program:\n{program}");
    let obj = assemble("test.S", &src).unwrap();
    let image = link_with_runtime(&[obj]).unwrap();
    let mut tile = Tile::new(PhysicalTile::new(3).expect("a C600 tile"));
    tile.load(image.base, &image.to_le_bytes()).unwrap();
    tile.start_supervisor(APPLICATION_LOAD_BASE);
    (tile, image)
}

fn run(tile: Tile) -> Tile {
    let mut device = Device::new(vec![tile]);
    let run = device.run(10_000_000).unwrap();
    assert_eq!(run.supersteps, 1, "start-up's sync INTERNAL");
    device.into_tiles().remove(0)
}

#[test]
fn start_up_initialises_csrs_workers_and_completes() {
    let (tile, _) = build("        bri ipuc_static_complete\n");
    let tile = run(tile);
    assert!(tile.is_halted());
    assert_eq!(tile.memory().read_u32(layout::COMPLETION_WORD), Ok(1));
    assert_eq!(tile.supervisor_csr(0xA0), 0x640, "$INCOMING_MUX neutral");
    assert_eq!(tile.supervisor_csr(0xA7), 0, "$OUTGOING_BASE");
    assert_eq!(tile.supervisor().m[11], layout::SUPERVISOR_STACK_TOP);
    for k in 0..6u32 {
        let base = layout::WORKER_AREA + k * layout::WORKER_AREA_STRIDE;
        assert_eq!(tile.supervisor_csr(0x21 + k as u8), base);
        assert_eq!(
            tile.memory().read_u32(base),
            Ok((3 << 3) | k),
            "identity word"
        );
        assert_eq!(
            tile.context(ContextId::worker(k as usize)).sync_context,
            (3 << 3) | k
        );
    }
}

#[test]
fn repeat_word_patcher_selects_the_current_iteration() {
    // Emulate a Repeat of 5 iterations: remaining counts 5, 4, …, 1; after
    // each call copy the patched word into a results array.
    let program = format!(
        "        setzi $m6, 5
.Lloop:
        setzi $m2, {WORD:#x}
        setzi $m3, {TABLE:#x}
        or $m4, $m6, $m15
        setzi $m5, 5
        call $m9, {patch}
        ld32 $m0, $m2, $m15, 0
        sub $m1, 5, $m6
        shl $m1, $m1, 2
        setzi $m7, {TABLE:#x} + 0x100
        st32 $m0, $m7, $m1, 0
        add $m6, $m6, -1
        brnz $m6, .Lloop
        bri ipuc_static_complete
",
        patch = symbols::PATCH_WORD
    );
    let (mut tile, _) = build(&program);
    for i in 0..5u32 {
        tile.memory_mut()
            .write_u32(TABLE + 4 * i, 0xA000 + i)
            .unwrap();
    }
    let tile = run(tile);
    for i in 0..5u32 {
        assert_eq!(
            tile.memory().read_u32(TABLE + 0x100 + 4 * i),
            Ok(0xA000 + i),
            "iteration {i}"
        );
    }
}

/// Dispatcher with `n` entries patching every other word of a row; returns
/// the tile and how many instructions the workers issued after start-up.
fn dispatch(n: u32) -> (Tile, u64) {
    let program = format!(
        "        setzi $m2, {ROW:#x}
        setzi $m3, {TABLE:#x}
        setzi $m4, {TABLE:#x} + 0x1000
        setzi $m5, {n}
        call $m9, {patch}
        bri ipuc_static_complete
",
        patch = symbols::PATCH_ROW
    );
    let (mut tile, _) = build(&program);
    for k in 0..n {
        tile.memory_mut().write_u32(TABLE + 4 * k, 8 * k).unwrap();
        tile.memory_mut()
            .write_u32(TABLE + 0x1000 + 4 * k, 0xBEEF_0000 | k)
            .unwrap();
    }
    let tile = run(tile);
    let worker_issues: u64 = (0..6)
        .map(|k| tile.context(ContextId::worker(k)).issued)
        .sum();
    (tile, worker_issues - 6 * 6) // start-up's initialiser: six instructions each
}

#[test]
fn dispatcher_uses_the_scalar_loop_below_24_and_workers_from_24() {
    for n in [0, 1, 23, 24, 25, 30, 31] {
        let (tile, worker_issues) = dispatch(n);
        for k in 0..n + 2 {
            let got = tile.memory().read_u32(ROW + 8 * k).unwrap();
            if k < n {
                assert_eq!(got, 0xBEEF_0000 | k, "n = {n}, entry {k}");
            } else {
                assert_eq!(got, 0, "n = {n}: word {k} beyond the list untouched");
            }
            assert_eq!(
                tile.memory().read_u32(ROW + 8 * k + 4),
                Ok(0),
                "guard after entry {k}"
            );
        }
        if n < 24 {
            assert_eq!(worker_issues, 0, "n = {n}: scalar path");
        } else {
            assert!(worker_issues > 0, "n = {n}: worker path");
        }
        assert_eq!(
            tile.supervisor().m[11],
            layout::SUPERVISOR_STACK_TOP,
            "frame popped"
        );
    }
}
