//! Memory images for running one exchange phase on the fabric alone: every
//! byte a phase can touch is mapped with a recognisable pattern, rows are
//! placed in SRAM, and after the run every byte is compared with what the
//! request promises (destinations = source bytes, everything else unchanged).
//! A diagnostic of `ipuc exchange` and of the fabric's tests, outside the
//! device (`sim`), since it reads the compiler's exchange requests.

use ipuc_core::exchange::{ExchangePhase, ExchangeRow};
use ipuc_target::ipu21::topology::PhysicalTile;

use ipuc_sim::fabric::{RowLocation, SparseTileMemory};

/// Where benchmarks and tests place each tile's row (region 0, its own element).
pub const DEFAULT_ROW_ADDRESS: u32 = 0x5_0000;

fn pattern(tile: PhysicalTile, addr: u32, salt: u32) -> u8 {
    let x = (u32::from(tile.get()) << 20) ^ addr ^ salt.wrapping_mul(0x9E37_79B9);
    let x = x.wrapping_mul(0x85EB_CA6B);
    (x ^ (x >> 13) ^ (x >> 24)) as u8
}

/// Builds sparse memories holding every source and destination span of
/// `phase` (merged per tile, filled with patterns) plus each row at `row_address`.
pub fn build_image(
    phase: &ExchangePhase,
    rows: &[ExchangeRow],
    row_address: u32,
    salt: u32,
) -> Result<(SparseTileMemory, Vec<RowLocation>), String> {
    let mut spans: std::collections::BTreeMap<PhysicalTile, Vec<(u32, u32)>> = Default::default();
    for t in &phase.transfers {
        let bytes = t.words * 4;
        spans
            .entry(t.source)
            .or_default()
            .push((t.source_address, t.source_address + bytes));
        for d in &t.destinations {
            spans
                .entry(d.tile)
                .or_default()
                .push((d.address, d.address + bytes));
        }
    }
    let mut mem = SparseTileMemory::default();
    for (tile, mut list) in spans {
        list.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::new();
        for (a, b) in list {
            // Pad a little so writes just outside a span are caught too.
            let (a, b) = (a.saturating_sub(16).max(0x4_C000), (b + 16).min(0xE_8000));
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        for (a, b) in merged {
            let data = (a..b).map(|addr| pattern(tile, addr, salt)).collect();
            if !mem.map(tile, a, data) {
                return Err(format!("{tile}: data spans overlap at {a:#x}"));
            }
        }
    }
    let mut calls = Vec::new();
    for r in rows {
        if r.words.len() <= 1 {
            continue;
        }
        let bytes: Vec<u8> = r.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        if !mem.map(r.tile, row_address, bytes) {
            return Err(format!(
                "{}: row at {row_address:#x} overlaps the phase's data",
                r.tile
            ));
        }
        calls.push(RowLocation {
            tile: r.tile,
            address: row_address,
            bases: ipuc_target::ipu21::exchange_model::RowBases::ZERO,
        });
    }
    Ok((mem, calls))
}

/// Checks `after` against `before` and the request: each destination byte
/// equals its source byte (read from `before`), every other mapped byte is
/// unchanged. Returns the number of bytes compared or a description.
pub fn verify_image(
    phase: &ExchangePhase,
    before: &SparseTileMemory,
    after: &SparseTileMemory,
) -> Result<u64, String> {
    let mut expected = before.clone();
    for t in &phase.transfers {
        let bytes = t.words * 4;
        let src = before
            .slice(t.source, t.source_address, bytes)
            .ok_or("source span not mapped")?
            .to_vec();
        for d in &t.destinations {
            for (k, chunk) in src.chunks(4).enumerate() {
                let w = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                use ipuc_sim::fabric::PhaseMemory;
                if !expected.write_u32(d.tile, d.address + 4 * k as u32, w) {
                    return Err("destination span not mapped".into());
                }
            }
        }
    }
    let mut compared = 0u64;
    for ((ta, aa, da), (tb, ab, db)) in expected.regions().zip(after.regions()) {
        if (ta, aa) != (tb, ab) || da.len() != db.len() {
            return Err("memory layout changed".into());
        }
        if let Some(i) = da.iter().zip(db).position(|(x, y)| x != y) {
            return Err(format!(
                "{ta}: byte {:#x} is {:#04x}, expected {:#04x}",
                aa + i as u32,
                db[i],
                da[i]
            ));
        }
        compared += da.len() as u64;
    }
    Ok(compared)
}
