//! Repeat patch tables (§2.8, §2.9, §5.3).
//!
//! Inside a structured Repeat a transfer's source may be iteration `i` of a
//! sequence stored at `base + i·stride`. Rows are scheduled once, for
//! iteration 0; then every address-bearing send word that carries such a
//! source (the first `send` of a message and every transmitting `sendpicp`)
//! gets a table with one full replacement word per iteration. Before the row
//! runs, the supervisor calls the runtime's `patch_word` with the repeat's
//! remaining-count slot, which stores `table[total − remaining]` over the word.

use alloc::vec::Vec;

use super::fields::{address_fields, with_address, AddressField, AddressFieldKind};
use super::PatchError;
use crate::exchange::{decode_row, ExchangePhase, ScheduledPhase};
use ipuc_target::ipu21::isa::{encode, m, Instruction};
use ipuc_target::ipu21::sram::{TILE_MEMORY_BASE, TILE_MEMORY_END};
use ipuc_target::ipu21::topology::PhysicalTile;

/// A transfer whose source moves by `stride_bytes` per iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IteratedSource {
    /// Index of the transfer in the phase.
    pub transfer: usize,
    /// Byte distance between consecutive iterations' sources.
    pub stride_bytes: i64,
}

/// One patched row word and its replacement for every iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepeatPatchTable {
    pub tile: PhysicalTile,
    /// Index of the patched word in the tile's row.
    pub word_index: usize,
    /// `words[i]` is the word to run in iteration `i` (`words[0]` = the row's word).
    pub words: Vec<u32>,
    /// Source displacement per iteration in bytes (the transfer's stride).
    pub displacement_bytes: i64,
    /// The transfer whose source this word addresses.
    pub transfer: usize,
}

/// All Repeat patch tables of one phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepeatPatchPlan {
    pub iterations: u32,
    pub tables: Vec<RepeatPatchTable>,
}

/// The supervisor call that applies one table before the row runs
/// (`ipu_stack_static_patch_word` ABI, §5.3): `$m2` = word address,
/// `$m3` = table, `$m4` = remaining count (repeat frame slot 0 at `$m11`),
/// `$m5` = total iterations; returns through `$m9`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepeatPatchCall {
    /// Byte address of the patched word.
    pub word_address: u32,
    /// Byte address of the table of per-iteration words.
    pub table_address: u32,
    pub iterations: u32,
}

const SETZI_LIMIT: u32 = 1 << 20;

impl RepeatPatchCall {
    /// The instruction sequence: three `setzi`, one `ld32` of the remaining
    /// count and `call $m9, patch_word`.
    pub fn instructions(&self, patch_word_entry: u32) -> Result<Vec<Instruction>, PatchError> {
        for (what, address) in [
            ("patched word address", self.word_address),
            ("table address", self.table_address),
            ("iteration count", self.iterations),
        ] {
            if address >= SETZI_LIMIT {
                return Err(PatchError::AddressTooLarge { what, address });
            }
        }
        Ok(alloc::vec![
            Instruction::setzi(m::M2, self.word_address),
            Instruction::setzi(m::M3, self.table_address),
            Instruction::ld32(m::M4, m::M11, ipuc_target::ipu21::isa::MReg::ZERO, 0),
            Instruction::setzi(m::M5, self.iterations),
            Instruction::call(m::M9, patch_word_entry),
        ])
    }
}

/// Pieces per sending tile as sorted `(start, end, transfer)` for lookups.
fn pieces_by_tile(
    phase: &ExchangePhase,
    scheduled: &ScheduledPhase,
) -> Vec<Vec<(u64, u64, usize)>> {
    let mut by_tile =
        alloc::vec![Vec::new(); usize::from(ipuc_target::ipu21::topology::TILE_COUNT)];
    for p in &scheduled.pieces {
        if let Some(t) = phase.transfers.get(p.transfer) {
            by_tile[t.source.index()].push((p.start, p.start + u64::from(p.words), p.transfer));
        }
    }
    for list in &mut by_tile {
        list.sort_unstable();
    }
    by_tile
}

/// The transfer whose message `list` (one tile's pieces) sends at `event`.
fn transfer_at(list: &[(u64, u64, usize)], event: u32) -> Option<usize> {
    let e = u64::from(event);
    let idx = list.partition_point(|p| p.0 <= e).checked_sub(1)?;
    let (start, end, transfer) = list[idx];
    (start <= e && e < end).then_some(transfer)
}

/// §2.10 rule 5 for every iteration, not only the one the rows were
/// scheduled for: a moved send source may not share an SRAM element with a
/// receive on the same tile while the send and receive windows overlap.
/// (Schedule with `exchange::schedule_phase_sweeping` to avoid this; this
/// check proves it.)
fn check_iteration_elements(
    phase: &ExchangePhase,
    scheduled: &ScheduledPhase,
    stride_of: &[Option<i64>],
    iterations: u32,
) -> Result<(), PatchError> {
    use crate::exchange::{element_mask, paired_source_event};
    use ipuc_target::ipu21::exchange_model::{
        paired_format_lag, pic_lag, GUARD_EVENTS, PAIRED_POINTER_AFTER_FORMAT,
    };
    use ipuc_target::ipu21::topology::mux_time;
    let guard = u64::from(GUARD_EVENTS);
    // Receive windows per tile: (start, end, element mask).
    let mut receives: Vec<Vec<(u64, u64, u64)>> =
        alloc::vec![Vec::new(); usize::from(ipuc_target::ipu21::topology::TILE_COUNT)];
    let mut moved = false;
    for p in &scheduled.pieces {
        let Some(t) = phase.transfers.get(p.transfer) else {
            continue;
        };
        moved |= stride_of.get(p.transfer).copied().flatten().is_some();
        for &k in &p.destinations {
            let Some(d) = t.destinations.get(usize::from(k)) else {
                continue;
            };
            let first_write = if p.paired {
                paired_source_event(p.start, t.source, d.tile)
                    + i64::from(paired_format_lag(d.tile) + PAIRED_POINTER_AFTER_FORMAT)
            } else {
                p.start as i64
                    + i64::from(mux_time(t.source, d.tile))
                    + 1
                    + i64::from(pic_lag(d.tile))
            };
            let w = first_write.max(0) as u64;
            receives[d.tile.index()].push((
                w,
                w + u64::from(p.events()) + guard,
                element_mask(d.address + 4 * p.offset, 4 * p.words),
            ));
        }
    }
    if !moved {
        return Ok(());
    }
    for p in &scheduled.pieces {
        let (Some(t), Some(Some(stride))) = (
            phase.transfers.get(p.transfer),
            stride_of.get(p.transfer).copied(),
        ) else {
            continue;
        };
        let (start, end) = (p.start, p.start + u64::from(p.events()) + guard);
        for i in 0..iterations {
            // In range: checked against SRAM bounds before this is called.
            let address =
                (i64::from(t.source_address + 4 * p.offset) + i64::from(i) * stride) as u32;
            let mask = element_mask(address, 4 * p.words);
            if receives[t.source.index()]
                .iter()
                .any(|&(a, b, m)| m & mask != 0 && a < end && start < b)
            {
                return Err(PatchError::ElementConflict {
                    tile: t.source,
                    transfer: p.transfer,
                    iteration: i,
                    address,
                    event: start,
                });
            }
        }
    }
    Ok(())
}

/// Each transfer's source stride per iteration (`None`: it does not
/// move), checked: a whole number of its items, and every iteration's
/// source span inside SRAM.
fn source_strides(
    phase: &ExchangePhase,
    iterated: &[IteratedSource],
    iterations: u32,
) -> Result<Vec<Option<i64>>, PatchError> {
    let mut stride_of = alloc::vec![None; phase.transfers.len()];
    for it in iterated {
        let t = phase
            .transfers
            .get(it.transfer)
            .ok_or(PatchError::UnknownTransfer {
                transfer: it.transfer,
            })?;
        let item = match t.width {
            crate::exchange::Width::Word32 => 4,
            crate::exchange::Width::Paired64 => 8,
        };
        if it.stride_bytes % item != 0 {
            return Err(PatchError::MisalignedStride {
                transfer: it.transfer,
                stride: it.stride_bytes,
            });
        }
        // Every iteration's whole source span must stay in SRAM.
        for i in [0, i64::from(iterations) - 1] {
            let start = i64::from(t.source_address) + i * it.stride_bytes;
            let end = start + i64::from(t.words) * 4;
            if start < i64::from(TILE_MEMORY_BASE) || end > i64::from(TILE_MEMORY_END) {
                return Err(PatchError::AddressOutOfRange {
                    tile: t.source,
                    word_index: 0,
                    iteration: i as u32,
                    address: start / 4,
                });
            }
        }
        stride_of[it.transfer] = Some(it.stride_bytes);
    }
    Ok(stride_of)
}

/// The send instruction `instr` of `tile`'s row (its source field
/// `field`) encoded once per iteration, its source moved by `stride`
/// bytes each time.
fn iteration_words(
    tile: PhysicalTile,
    field: &AddressField,
    instr: Instruction,
    stride: i64,
    iterations: u32,
) -> Result<Vec<u32>, PatchError> {
    let mut words = Vec::with_capacity(iterations as usize);
    for i in 0..iterations {
        let address =
            i64::from(field.word_address) + i64::from(i) * stride / i64::from(field.item_bytes);
        let a = u32::try_from(address).map_err(|_| PatchError::AddressOutOfRange {
            tile,
            word_index: field.word_index,
            iteration: i,
            address,
        })?;
        let enc = encode(&with_address(instr, AddressFieldKind::Send, a)).map_err(|_| {
            PatchError::AddressOutOfRange {
                tile,
                word_index: field.word_index,
                iteration: i,
                address,
            }
        })?;
        words.push(enc.words()[0]);
    }
    Ok(words)
}

/// Builds the Repeat patch tables for `iterations` iterations of a phase
/// scheduled for iteration 0.
pub fn repeat_patch_plan(
    phase: &ExchangePhase,
    scheduled: &ScheduledPhase,
    iterated: &[IteratedSource],
    iterations: u32,
) -> Result<RepeatPatchPlan, PatchError> {
    if iterations == 0 {
        return Err(PatchError::NoIterations);
    }
    let stride_of = source_strides(phase, iterated, iterations)?;
    check_iteration_elements(phase, scheduled, &stride_of, iterations)?;
    let by_tile = pieces_by_tile(phase, scheduled);
    let mut tables = Vec::new();
    for row in &scheduled.rows {
        if row.words.len() <= 1 {
            continue;
        }
        let decoded = decode_row(&row.words).map_err(|error| PatchError::Decode {
            tile: row.tile,
            error,
        })?;
        for field in address_fields(&row.words).map_err(|error| PatchError::Decode {
            tile: row.tile,
            error,
        })? {
            if field.kind != AddressFieldKind::Send {
                continue;
            }
            let Some(transfer) = transfer_at(&by_tile[row.tile.index()], field.event) else {
                continue;
            };
            let Some(stride) = stride_of[transfer] else {
                continue;
            };
            let instr = decoded
                .instructions
                .iter()
                .find(|ti| ti.word_index == field.word_index)
                .map(|ti| ti.instruction)
                .ok_or(PatchError::ShapeMismatch { tile: row.tile })?;
            let words = iteration_words(row.tile, &field, instr, stride, iterations)?;
            tables.push(RepeatPatchTable {
                tile: row.tile,
                word_index: field.word_index,
                words,
                displacement_bytes: stride,
                transfer,
            });
        }
    }
    Ok(RepeatPatchPlan { iterations, tables })
}

impl RepeatPatchPlan {
    /// Applies iteration `i`'s words to `rows` (what the runtime's
    /// `patch_word` calls do on the device).
    pub fn apply(&self, rows: &mut [crate::exchange::ExchangeRow], iteration: u32) {
        for t in &self.tables {
            if let (Some(row), Some(&w)) = (
                rows.iter_mut().find(|r| r.tile == t.tile),
                t.words.get(iteration as usize),
            ) {
                if let Some(slot) = row.words.get_mut(t.word_index) {
                    *slot = w;
                }
            }
        }
    }

    /// The calls for one row placed at `row_address` whose tables start at
    /// `table_base` (tables of this tile laid out consecutively).
    pub fn calls_for_tile(
        &self,
        tile: PhysicalTile,
        row_address: u32,
        table_base: u32,
    ) -> Vec<RepeatPatchCall> {
        let mut calls = Vec::new();
        let mut table = table_base;
        for t in self.tables.iter().filter(|t| t.tile == tile) {
            calls.push(RepeatPatchCall {
                word_address: row_address + 4 * t.word_index as u32,
                table_address: table,
                iterations: self.iterations,
            });
            table += 4 * self.iterations;
        }
        calls
    }
}

/// The phase as iteration `i` sees it: iterated sources moved by `i·stride`.
pub fn phase_for_iteration(
    phase: &ExchangePhase,
    iterated: &[IteratedSource],
    iteration: u32,
) -> ExchangePhase {
    let mut p = phase.clone();
    for it in iterated {
        if let Some(t) = p.transfers.get_mut(it.transfer) {
            t.source_address =
                (i64::from(t.source_address) + i64::from(iteration) * it.stride_bytes) as u32;
        }
    }
    p
}
