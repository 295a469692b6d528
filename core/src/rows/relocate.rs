//! Outgoing-base relocation of one Repeat phase: uniform moving senders run
//! their row with `$OUTGOING_BASE` from a Repeat frame slot instead of
//! per-iteration patch tables (row classification and rebasing are
//! `patch::relocate`'s), then every iteration is replayed with the bases the
//! tiles will hold.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use bitvec::vec::BitVec;

use super::jobs::PhaseJob;
use super::RowsError;
use crate::exchange::{
    check_iterations, decode_checked, DecodedRow, ExchangeError, ExchangeRow, IterationRows,
    RowBases,
};
use crate::patch::relocate::{
    classify_row, rebase_row, OutgoingBaseSummary, RelocatedSender, RowRelocation,
};
use crate::patch::repeat::{phase_for_iteration, RepeatPatchTable};
use ipuc_target::ipu21::topology::PhysicalTile;

/// A relocated sender's base: the frame slot holding `base + i·stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutgoingBase {
    /// Word slot of the Repeat frame (`ld32 …, $m11, $m15, slot`).
    pub frame_slot: u32,
    /// Its value in iteration 0: the row's send addresses are relative to it.
    pub base: u32,
}

/// A phase's relocated senders (row replaced, tables dropped): their
/// bases, and the patch-table words each tile no longer stores
/// (× iterations).
pub(super) struct PhaseRelocation {
    pub bases: BTreeMap<u16, OutgoingBase>,
    pub saved_words: BTreeMap<u16, u64>,
}

/// Relocates the uniform moving senders of one Repeat phase in place
/// (`rows`, `by_tile`), counting into `summary`, and replays every
/// iteration with the bases the tiles will hold.
pub(super) fn relocate_phase(
    job: &PhaseJob,
    trip_count: u32,
    rows: &mut [ExchangeRow],
    by_tile: &mut BTreeMap<u16, Vec<RepeatPatchTable>>,
    summary: &mut OutgoingBaseSummary,
) -> Result<PhaseRelocation, RowsError> {
    let relocation = relocate_senders(job, rows, by_tile, summary, trip_count)?;
    by_tile.retain(|_, t| !t.is_empty());
    if relocation.bases.is_empty() {
        return Ok(relocation);
    }
    summary.phases_relocated += 1;
    check_relocated(job, trip_count, rows, by_tile, summary, &relocation.bases)?;
    Ok(relocation)
}

/// Rebases the row of every sender whose patched words all move by one
/// displacement that a Repeat frame slot follows, drops the tables it no
/// longer needs, and counts every row it leaves alone by why.
fn relocate_senders(
    job: &PhaseJob,
    rows: &mut [ExchangeRow],
    by_tile: &mut BTreeMap<u16, Vec<RepeatPatchTable>>,
    summary: &mut OutgoingBaseSummary,
    trip_count: u32,
) -> Result<PhaseRelocation, RowsError> {
    let step = job.step.0;
    let mut bases = BTreeMap::new();
    let mut saved_words = BTreeMap::new();
    for (&tile, tables) in by_tile.iter_mut() {
        let Some(row) = rows
            .iter_mut()
            .find(|r| r.tile.get() == tile && r.words.len() > 1)
        else {
            continue;
        };
        let n = tables.len();
        let Some(UniformMove {
            displacement,
            relocated,
            kept,
        }) = uniform_move(row, tables, step, summary)?
        else {
            continue;
        };
        let choice = frame_base(
            job,
            tables.iter().filter(|t| relocated.contains(&t.word_index)),
            displacement,
        );
        let rebased = choice.and_then(|(base, _)| {
            rebase_row(
                row.tile,
                &row.words,
                RowBases {
                    outgoing: base,
                    incoming: 0,
                },
            )
            .ok()
        });
        let (Some(words), Some((base, frame_slot))) = (rebased, choice) else {
            summary.unrelocatable_rows += 1;
            summary.unrelocatable_words += n;
            continue;
        };
        row.words = words;
        tables.retain(|t| !relocated.contains(&t.word_index));
        summary.absolute_words += kept.len();
        summary.sender_rows += 1;
        summary.words_relocated += relocated.len();
        *saved_words.entry(tile).or_default() += relocated.len() as u64 * u64::from(trip_count);
        summary.senders.push(RelocatedSender {
            tile: row.tile,
            step,
            frame_slot,
            base,
            displacement_bytes: displacement,
        });
        bases.insert(tile, OutgoingBase { frame_slot, base });
    }
    Ok(PhaseRelocation { bases, saved_words })
}

/// A sender row whose address words all move by one displacement per
/// iteration: those the base replaces, and absolute ones that keep their
/// tables (`patch::relocate::RowRelocation::Uniform`).
struct UniformMove {
    displacement: i64,
    relocated: Vec<usize>,
    kept: Vec<usize>,
}

/// A sender row's patched words classified: a [`UniformMove`] when they
/// all move by one displacement, else the row is counted in `summary` by
/// why it stays table-patched (`None`).
fn uniform_move(
    row: &ExchangeRow,
    tables: &[RepeatPatchTable],
    step: u32,
    summary: &mut OutgoingBaseSummary,
) -> Result<Option<UniformMove>, RowsError> {
    let n = tables.len();
    let marks: Vec<(usize, i64)> = tables
        .iter()
        .map(|t| (t.word_index, t.displacement_bytes))
        .collect();
    let class = classify_row(row.tile, &row.words, &marks)
        .map_err(|error| RowsError::Patch { step, error })?;
    Ok(match class {
        RowRelocation::Uniform {
            displacement_bytes,
            relocated,
            kept,
        } => Some(UniformMove {
            displacement: displacement_bytes,
            relocated,
            kept,
        }),
        RowRelocation::AbsoluteOnly { kept } => {
            summary.absolute_words += kept.len();
            None
        }
        RowRelocation::Mixed { .. } => {
            summary.mixed_rows += 1;
            summary.mixed_words += n;
            None
        }
        RowRelocation::Paired => {
            summary.paired_rows += 1;
            summary.paired_words += n;
            None
        }
    })
}

/// The base of a relocated row: the frame slot of the lowest-addressed
/// source buffer among the relocated words' transfers (every relocated
/// address is at or above it), whose stride is the row's displacement;
/// `None` if some word's source has no such slot. `(base, slot)`.
fn frame_base<'a>(
    job: &PhaseJob,
    moved: impl Iterator<Item = &'a RepeatPatchTable>,
    displacement: i64,
) -> Option<(u32, u32)> {
    let mut choice: Option<(u32, u32)> = None;
    for t in moved {
        let f = job
            .frames
            .get(t.transfer)
            .copied()
            .flatten()
            .filter(|f| i64::from(f.stride) == displacement)?;
        if choice.is_none_or(|c| f.base < c.0) {
            choice = Some((f.base, f.slot));
        }
    }
    choice
}

/// Replays every iteration of a relocated phase as the device runs it:
/// remaining tables applied, relocated senders at `base + i·stride`.
fn check_relocated(
    job: &PhaseJob,
    trip_count: u32,
    rows: &[ExchangeRow],
    by_tile: &BTreeMap<u16, Vec<RepeatPatchTable>>,
    summary: &OutgoingBaseSummary,
    bases: &BTreeMap<u16, OutgoingBase>,
) -> Result<(), RowsError> {
    let step = job.step.0;
    let displacement: BTreeMap<u16, i64> = summary
        .senders
        .iter()
        .filter(|s| s.step == step)
        .map(|s| (s.tile.get(), s.displacement_bytes))
        .collect();
    // Rows no table patches are the same in every iteration: decoded once
    // (a decode error is kept and reported where that row's turn comes, as
    // when every iteration's rows are decoded in order). A bit per row:
    // it iterates in ascending row order, as the ordered set it replaces.
    let mut patched: BitVec = BitVec::repeat(false, rows.len());
    for t in by_tile.values().flatten() {
        if let Some(k) = rows.iter().position(|r| r.tile == t.tile) {
            patched.set(k, true);
        }
    }
    let decoded: Vec<Option<core::result::Result<DecodedRow, ExchangeError>>> = rows
        .iter()
        .enumerate()
        .map(|(k, r)| (!patched[k]).then(|| decode_checked(r)))
        .collect();
    let fixed: Vec<_> = rows
        .iter()
        .zip(&decoded)
        .map(|(r, d)| (r.tile, d.as_ref()))
        .collect();
    // This iteration's patched rows, decoded.
    let patched_rows = |i: u32| {
        patched
            .iter_ones()
            .map(|k| {
                let mut row = rows[k].clone();
                for t in by_tile.values().flatten().filter(|t| t.tile == row.tile) {
                    if let (Some(slot), Some(&w)) =
                        (row.words.get_mut(t.word_index), t.words.get(i as usize))
                    {
                        *slot = w;
                    }
                }
                (k, decode_checked(&row))
            })
            .collect()
    };
    // Checked as the device runs every iteration: remaining tables applied,
    // relocated senders at base + i·stride (derived from iteration 0 where
    // that is exact, `check_iterations`).
    let outgoing = |tile: PhysicalTile, i: u32| RowBases {
        outgoing: bases.get(&tile.get()).map_or(0, |b| {
            let d = displacement.get(&tile.get()).copied().unwrap_or(0);
            (i64::from(b.base) + i64::from(i) * d) as u32
        }),
        incoming: 0,
    };
    check_iterations(
        &|i| phase_for_iteration(&job.wire, &job.iterated, i),
        &IterationRows {
            fixed: &fixed,
            patched: &patched_rows,
        },
        &outgoing,
        trip_count,
    )
    .map_err(|error| RowsError::Exchange { step, error })?;
    Ok(())
}
