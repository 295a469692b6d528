//! Simulator tests: per-instruction semantics, faults, scheduling, codelets
//! and the device. Programs are built from `Instruction` values and encoded
//! with `ipuc_target::ipu21::isa`, so they exercise the real decoder.

mod device;
mod faults;
mod progress;
mod scheduling;
mod semantics;

use ipuc_target::ipu21::isa::{encode, Instruction, MReg};
use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;

use ipuc_target::ipu21::topology::PhysicalTile;

use super::{StopReason, Tile};

/// Physical tile `id` (< 1472).
pub(super) fn phys(id: u32) -> PhysicalTile {
    PhysicalTile::new(id).expect("a C600 tile")
}

/// Where test programs start.
pub(super) const ENTRY: u32 = APPLICATION_LOAD_BASE;
/// A data area for loads and stores.
pub(super) const DATA: u32 = 0x9_0000;

pub(super) fn reg(n: u8) -> MReg {
    MReg::new(n).expect("test register numbers are < 16")
}

pub(super) fn words(program: &[Instruction]) -> Vec<u32> {
    program
        .iter()
        .flat_map(|i| {
            encode(i)
                .expect("test instruction encodes")
                .words()
                .to_vec()
        })
        .collect()
}

pub(super) fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A tile with `program` at `ENTRY`, followed by `br $m15` (halt).
pub(super) fn tile_with(program: &[Instruction]) -> Tile {
    let mut p = program.to_vec();
    p.push(Instruction::br(MReg::ZERO));
    let mut tile = Tile::new(phys(5));
    tile.load(ENTRY, &bytes(&words(&p))).expect("program fits");
    tile.start_supervisor(ENTRY);
    tile
}

/// Run `program` on the supervisor to its halt.
pub(super) fn run(program: &[Instruction]) -> Tile {
    let mut tile = tile_with(program);
    assert_eq!(tile.run(1_000_000), Ok(StopReason::Halted));
    tile
}
