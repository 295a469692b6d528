//! Row sharing across phases (§2.8): on one tile, rows with the same *shape*
//! (equal except for SRAM address fields) are placed once. When the uses of
//! a shape differ, every use carries a patch list — the byte offsets of the
//! shape's address words that differ between its uses (shared per shape)
//! and this use's full words at those offsets — written by the runtime's
//! patcher before the phase; rows used once, or re-used unchanged, carry
//! none. Lists of fewer than
//! [`BULK_PATCH_MIN_WORDS`] words go to the scalar supervisor patcher, longer
//! ones to the six-worker bulk patcher. Rows carrying Repeat patches are
//! never shared: their words change per iteration.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::fields::{address_fields, row_shape};
use super::PatchError;
use crate::exchange::ExchangeRow;
use crate::runtime::PATCH_BULK_THRESHOLD_WORDS;
use ipuc_target::ipu21::isa::{m, Instruction};
use ipuc_target::ipu21::tile_set::TileSet;
use ipuc_target::ipu21::topology::PhysicalTile;

/// From this many words a sharing patch list is applied by six workers:
/// the runtime dispatcher's threshold, defined once in
/// [`crate::runtime::PATCH_BULK_THRESHOLD_WORDS`] and linked into the
/// runtime as `ipuc_bulk_patch_min_words`.
pub const BULK_PATCH_MIN_WORDS: usize = PATCH_BULK_THRESHOLD_WORDS as usize;

/// Which runtime routine applies a patch list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Patcher {
    /// `patch_row`: scalar supervisor loop.
    Scalar,
    /// Six-worker bulk patcher (worker `w` patches entries `w, w+6, …`; the
    /// count is [`ipuc_target::ipu21::contexts::WORKERS`]).
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
    /// `None` when the stored words are this use's words: the row is used
    /// by this phase only, or every use of it is word-for-word the same.
    pub patch: Option<SharingPatchList>,
    /// The stored row serves more than one phase.
    pub shared: bool,
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
/// `br $m10` rows are skipped); `repeat_patched[p]` is the set of tiles
/// whose row in phase `p` carries Repeat patches and so must stay private
/// (missing sets are empty).
///
/// Only real sharing is patched: a shape used by one phase is stored as that
/// phase's row with no patch list, and so are shapes whose uses are all
/// word-for-word equal (one row re-used as is). A shape whose uses differ
/// gets a patch list on every use (a use cannot trust the stored words: the
/// previous use of the row may have been another phase), holding only the
/// address words that differ between its uses.
pub fn share_rows(
    phases: &[&[ExchangeRow]],
    repeat_patched: &[TileSet<PhysicalTile>],
) -> Result<SharedRows, PatchError> {
    let (mut groups, shapes) = group_shapes(phases, repeat_patched)?;
    store_rows(phases, &shapes, &mut groups)
}

/// Rows grouped by (tile, shape) for [`share_rows`].
type ShapeGroups = BTreeMap<(PhysicalTile, Vec<u32>), ShapeGroup>;
/// Per phase, each row's shape (`None`: not shared).
type RowShapes = Vec<Vec<Option<Vec<u32>>>>;

/// Pass 1: every shareable use of each (tile, shape), and the address words
/// that differ between those uses; per phase, each row's shape (`None`:
/// Repeat-patched, private to its phase, or an inactive row).
fn group_shapes(
    phases: &[&[ExchangeRow]],
    repeat_patched: &[TileSet<PhysicalTile>],
) -> Result<(ShapeGroups, RowShapes), PatchError> {
    let no_tiles = TileSet::new();
    let private_of = |p: usize| repeat_patched.get(p).unwrap_or(&no_tiles);
    let mut groups: ShapeGroups = BTreeMap::new();
    let mut shapes: RowShapes = Vec::with_capacity(phases.len());
    for (p, rows) in phases.iter().enumerate() {
        let private = private_of(p);
        let mut phase_shapes = Vec::with_capacity(rows.len());
        for row in rows.iter() {
            if row.words.len() <= 1 || private.contains(row.tile) {
                phase_shapes.push(None);
                continue;
            }
            let err = |error| PatchError::Decode {
                tile: row.tile,
                error,
            };
            let shape = row_shape(&row.words).map_err(err)?;
            match groups.get_mut(&(row.tile, shape.clone())) {
                Some(g) => {
                    g.uses += 1;
                    for (o, first, varies) in g.fields.iter_mut() {
                        let w = row
                            .words
                            .get(*o as usize / 4)
                            .ok_or(PatchError::ShapeMismatch { tile: row.tile })?;
                        *varies |= w != first;
                    }
                }
                None => {
                    let fields = address_fields(&row.words)
                        .map_err(err)?
                        .iter()
                        .map(|f| (4 * f.word_index as u32, row.words[f.word_index], false))
                        .collect();
                    groups.insert(
                        (row.tile, shape.clone()),
                        ShapeGroup {
                            uses: 1,
                            fields,
                            stored: None,
                        },
                    );
                }
            }
            phase_shapes.push(Some(shape));
        }
        shapes.push(phase_shapes);
    }
    Ok((groups, shapes))
}

/// Pass 2: store rows in first-use order and give each use its list.
fn store_rows(
    phases: &[&[ExchangeRow]],
    shapes: &[Vec<Option<Vec<u32>>>],
    groups: &mut ShapeGroups,
) -> Result<SharedRows, PatchError> {
    let mut out = SharedRows::default();
    for (p, rows) in phases.iter().enumerate() {
        let mut uses = Vec::new();
        for (row, shape) in rows.iter().zip(&shapes[p]) {
            if row.words.len() <= 1 {
                continue;
            }
            let stored = out.stored.entry(row.tile).or_default();
            let Some(shape) = shape else {
                // Repeat-patched: private to this phase.
                stored.push(row.clone());
                uses.push(RowUse {
                    phase: p,
                    row: StoredRowId {
                        tile: row.tile,
                        index: stored.len() - 1,
                    },
                    patch: None,
                    shared: false,
                });
                continue;
            };
            let g = groups
                .get_mut(&(row.tile, shape.clone()))
                .ok_or(PatchError::ShapeMismatch { tile: row.tile })?;
            let index = match g.stored {
                Some(index) => index,
                None => {
                    stored.push(row.clone());
                    g.stored = Some(stored.len() - 1);
                    stored.len() - 1
                }
            };
            let id = StoredRowId {
                tile: row.tile,
                index,
            };
            let offsets: Vec<u32> = g.fields.iter().filter(|f| f.2).map(|f| f.0).collect();
            let patch = if offsets.is_empty() {
                None
            } else {
                let words = offsets
                    .iter()
                    .map(|&o| row.words.get(o as usize / 4).copied())
                    .collect::<Option<Vec<u32>>>()
                    .ok_or(PatchError::ShapeMismatch { tile: row.tile })?;
                let patcher = Patcher::for_len(words.len());
                Some(SharingPatchList {
                    row: id,
                    offsets,
                    words,
                    patcher,
                })
            };
            uses.push(RowUse {
                phase: p,
                row: id,
                patch,
                shared: g.uses > 1,
            });
        }
        out.uses.push(uses);
    }
    Ok(out)
}

/// Pass-1 view of one (tile, shape): how many phases use it, its address
/// words as `(byte offset, first use's word, differs in some use)`, and
/// where it is stored once pass 2 has placed it.
struct ShapeGroup {
    uses: usize,
    fields: Vec<(u32, u32, bool)>,
    stored: Option<usize>,
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
