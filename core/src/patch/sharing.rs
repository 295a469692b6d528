//! Row sharing across phases (§2.8): on one tile, rows with the same *shape*
//! (equal except for SRAM address fields) are placed once. Every use carries
//! a patch list — the byte offsets of the shape's address words (shared per
//! shape) and this use's full words at those offsets — written by the
//! runtime's patcher before the phase. Lists of fewer than
//! [`BULK_PATCH_MIN_WORDS`] words go to the scalar supervisor patcher, longer
//! ones to the six-worker bulk patcher. Rows carrying Repeat patches are
//! never shared: their words change per iteration.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::fields::{address_fields, row_shape};
use super::PatchError;
use crate::exchange::ExchangeRow;
use crate::ipu21::isa::{m, Instruction};
use crate::ipu21::timing::PATCH_BULK_THRESHOLD_WORDS;
use crate::ipu21::topology::PhysicalTile;

/// From this many words a sharing patch list is applied by six workers:
/// the runtime dispatcher's threshold, defined once in
/// [`crate::ipu21::timing::PATCH_BULK_THRESHOLD_WORDS`] and linked into the
/// runtime as `ipuc_bulk_patch_min_words`.
pub const BULK_PATCH_MIN_WORDS: usize = PATCH_BULK_THRESHOLD_WORDS as usize;

/// Which runtime routine applies a patch list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Patcher {
    /// `patch_row`: scalar supervisor loop.
    Scalar,
    /// Six-worker bulk patcher (worker `w` patches entries `w, w+6, …`).
    Bulk,
}

impl Patcher {
    /// The patcher for a list of `words` entries.
    pub fn for_len(words: usize) -> Self {
        if words >= BULK_PATCH_MIN_WORDS {
            Patcher::Bulk
        } else {
            Patcher::Scalar
        }
    }
}

/// Identifies one stored row: tile plus index among that tile's stored rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoredRowId {
    pub tile: PhysicalTile,
    pub index: usize,
}

/// What one use of a stored row must write before it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharingPatchList {
    pub row: StoredRowId,
    /// Byte offsets into the stored row (shared by every use of the shape).
    pub offsets: Vec<u32>,
    /// This use's words at those offsets.
    pub words: Vec<u32>,
    pub patcher: Patcher,
}

/// One use of a row by a phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowUse {
    pub phase: usize,
    pub row: StoredRowId,
    /// Empty when the row is not shared (its stored words are this use's words).
    pub patch: Option<SharingPatchList>,
}

/// Rows placed on the tiles after sharing, and how each phase uses them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedRows {
    /// Stored rows per tile, in first-use order.
    pub stored: BTreeMap<PhysicalTile, Vec<ExchangeRow>>,
    /// `uses[phase]` = that phase's row uses (one per active tile).
    pub uses: Vec<Vec<RowUse>>,
}

/// Shares rows across phases. `phases[p]` are phase `p`'s rows (inactive
/// `br $m10` rows are skipped); `repeat_patched[p]` lists tiles whose row in
/// phase `p` carries Repeat patches and so must stay private.
pub fn share_rows(
    phases: &[&[ExchangeRow]],
    repeat_patched: &[&[PhysicalTile]],
) -> Result<SharedRows, PatchError> {
    let mut out = SharedRows::default();
    // (tile, shape) → (stored index, offsets)
    let mut by_shape: BTreeMap<(PhysicalTile, Vec<u32>), (usize, Vec<u32>)> = BTreeMap::new();
    for (p, rows) in phases.iter().enumerate() {
        let private: &[PhysicalTile] = repeat_patched.get(p).copied().unwrap_or(&[]);
        let mut uses = Vec::new();
        for row in rows.iter().filter(|r| r.words.len() > 1) {
            let err = |error| PatchError::Decode {
                tile: row.tile,
                error,
            };
            let stored = out.stored.entry(row.tile).or_default();
            if private.contains(&row.tile) {
                stored.push(row.clone());
                uses.push(RowUse {
                    phase: p,
                    row: StoredRowId {
                        tile: row.tile,
                        index: stored.len() - 1,
                    },
                    patch: None,
                });
                continue;
            }
            let shape = row_shape(&row.words).map_err(err)?;
            match by_shape.get(&(row.tile, shape.clone())) {
                Some((index, offsets)) => {
                    let words = offsets
                        .iter()
                        .map(|&o| row.words.get(o as usize / 4).copied())
                        .collect::<Option<Vec<u32>>>()
                        .ok_or(PatchError::ShapeMismatch { tile: row.tile })?;
                    let id = StoredRowId {
                        tile: row.tile,
                        index: *index,
                    };
                    let patcher = Patcher::for_len(words.len());
                    uses.push(RowUse {
                        phase: p,
                        row: id,
                        patch: Some(SharingPatchList {
                            row: id,
                            offsets: offsets.clone(),
                            words,
                            patcher,
                        }),
                    });
                }
                None => {
                    let offsets: Vec<u32> = address_fields(&row.words)
                        .map_err(err)?
                        .iter()
                        .map(|f| 4 * f.word_index as u32)
                        .collect();
                    stored.push(row.clone());
                    let index = stored.len() - 1;
                    let id = StoredRowId {
                        tile: row.tile,
                        index,
                    };
                    // The first use patches too: a later use may have
                    // overwritten the stored words before this phase runs again.
                    let words = offsets
                        .iter()
                        .map(|&o| row.words[o as usize / 4])
                        .collect::<Vec<_>>();
                    let patcher = Patcher::for_len(words.len());
                    uses.push(RowUse {
                        phase: p,
                        row: id,
                        patch: Some(SharingPatchList {
                            row: id,
                            offsets: offsets.clone(),
                            words,
                            patcher,
                        }),
                    });
                    by_shape.insert((row.tile, shape), (index, offsets));
                }
            }
        }
        out.uses.push(uses);
    }
    Ok(out)
}

impl SharedRows {
    /// Words stored on all tiles (what sharing costs in SRAM).
    pub fn stored_words(&self) -> usize {
        self.stored.values().flatten().map(|r| r.words.len()).sum()
    }

    /// The row `use_` runs, after its patch list is applied to `stored`
    /// (what the runtime patcher does on the device).
    pub fn apply(&mut self, use_: &RowUse) -> Option<&ExchangeRow> {
        let rows = self.stored.get_mut(&use_.row.tile)?;
        let row = rows.get_mut(use_.row.index)?;
        if let Some(p) = &use_.patch {
            for (&o, &w) in p.offsets.iter().zip(&p.words) {
                *row.words.get_mut(o as usize / 4)? = w;
            }
        }
        Some(row)
    }
}

/// The supervisor call applying one patch list (`patch_row` ABI, §5.3):
/// `$m2` = row base, `$m3` = offsets table, `$m4` = words table,
/// `$m5` = entry count; returns through `$m9`. The bulk patcher uses the
/// same registers at its own entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharingPatchCall {
    pub row_address: u32,
    pub offsets_address: u32,
    pub words_address: u32,
    pub entries: u32,
    pub patcher: Patcher,
}

impl SharingPatchCall {
    /// `setzi` ×4 and `call $m9, entry` (entry chosen by the patcher kind).
    pub fn instructions(
        &self,
        scalar_entry: u32,
        bulk_entry: u32,
    ) -> Result<Vec<Instruction>, PatchError> {
        for (what, address) in [
            ("row address", self.row_address),
            ("offsets table", self.offsets_address),
            ("words table", self.words_address),
            ("entry count", self.entries),
        ] {
            if address >= 1 << 20 {
                return Err(PatchError::AddressTooLarge { what, address });
            }
        }
        let entry = match self.patcher {
            Patcher::Scalar => scalar_entry,
            Patcher::Bulk => bulk_entry,
        };
        Ok(alloc::vec![
            Instruction::setzi(m::M2, self.row_address),
            Instruction::setzi(m::M3, self.offsets_address),
            Instruction::setzi(m::M4, self.words_address),
            Instruction::setzi(m::M5, self.entries),
            Instruction::call(m::M9, entry),
        ])
    }
}
