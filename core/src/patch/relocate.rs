//! Rows encoded relative to the exchange base registers (§2.3, §2.4).
//!
//! The scheduler encodes absolute addresses (both bases 0). [`rebase_row`]
//! rewrites such a row into the row that moves the same words when the tile
//! runs it holding `bases`: every `send` source address (the stream start
//! that is relative to `$OUTGOING_BASE`; `sendoff`/`sendpic` continue it)
//! becomes `address − outgoing/4`, every PIC pointer value
//! `pointer − incoming/4`. A transmitting `sendpicp` address is absolute
//! (§2.3) and is left as it is.

use alloc::vec::Vec;

use super::fields::{address_fields, with_address, AddressFieldKind};
use super::PatchError;
use crate::exchange::{decode_row, validate_bases, ReceiveError, RowBases};
use ipuc_target::ipu21::exchange_model::SCTL_PAIRED;
use ipuc_target::ipu21::isa::{encode, Instruction};
use ipuc_target::ipu21::topology::PhysicalTile;

/// `words` (a row with absolute addresses) re-encoded for a tile holding
/// `bases`. Fails when a relative address would be negative or not fit its
/// field, or when the bases are values the model does not cover for this
/// row (e.g. a non-zero outgoing base under 64-bit sends).
pub fn rebase_row(
    tile: PhysicalTile,
    words: &[u32],
    bases: RowBases,
) -> Result<Vec<u32>, PatchError> {
    let decode = |error| PatchError::Decode { tile, error };
    let row = decode_row(words).map_err(decode)?;
    validate_bases(bases, tile, &row).map_err(|e| match e {
        ReceiveError::UncoveredCsr { csr, value, .. } => {
            PatchError::UncoveredBase { tile, csr, value }
        }
        _ => PatchError::ShapeMismatch { tile },
    })?;
    let mut out = words[..row.words].to_vec();
    for field in address_fields(words).map_err(decode)? {
        // The instruction carrying the field (a `sendpicp`'s PIC value is its
        // second word).
        let Some(ti) = row.instructions.iter().find(|ti| {
            ti.word_index == field.word_index
                || (ti.word_index + 1 == field.word_index
                    && matches!(ti.instruction, Instruction::SendPicP { .. }))
        }) else {
            continue;
        };
        let base_words = match (field.kind, ti.instruction) {
            (AddressFieldKind::Send, Instruction::Send { sctl, .. }) => {
                if sctl & SCTL_PAIRED != 0 {
                    // validate_bases allowed this only with outgoing base 0.
                    0
                } else {
                    bases.outgoing / 4
                }
            }
            // The transmitting `sendpicp` address is absolute.
            (AddressFieldKind::Send, _) => 0,
            (AddressFieldKind::PicPointer, _) => bases.incoming / 4,
        };
        if base_words == 0 {
            continue;
        }
        let relative = i64::from(field.word_address) - i64::from(base_words);
        let out_of_range = PatchError::AddressOutOfRange {
            tile,
            word_index: field.word_index,
            iteration: 0,
            address: relative,
        };
        let a = u32::try_from(relative).map_err(|_| out_of_range.clone())?;
        // Fields are re-read from `out`: a `sendpicp` carries two fields.
        let (current, _) =
            ipuc_target::ipu21::isa::decode(&out[ti.word_index..]).map_err(|error| {
                decode(crate::exchange::RowDecodeError::Isa {
                    index: ti.word_index,
                    error,
                })
            })?;
        let enc = encode(&with_address(current, field.kind, a)).map_err(|_| out_of_range)?;
        for (k, w) in enc.words().iter().enumerate() {
            out[ti.word_index + k] = *w;
        }
    }
    Ok(out)
}

/// Whether one moving sender's row can run with a per-iteration
/// `$OUTGOING_BASE` instead of Repeat-patched send words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowRelocation {
    /// Every `send` stream start of the row moves by `displacement_bytes`
    /// per iteration: the base replaces the tables of `relocated` (word
    /// indices). Moving transmitting `sendpicp` words (absolute, §2.3) keep
    /// their tables: `kept`.
    Uniform {
        displacement_bytes: i64,
        relocated: Vec<usize>,
        kept: Vec<usize>,
    },
    /// Only absolute (`sendpicp`) words move: the base cannot help; all of
    /// `kept` stay patched.
    AbsoluteOnly { kept: Vec<usize> },
    /// `send` words with different displacements (stationary ones count as
    /// displacement 0), in row order: one base cannot serve them, so the row
    /// keeps its word patches.
    Mixed { runs: Vec<i64> },
    /// The row sends 64-bit items: a non-zero outgoing base is not covered
    /// by the model (`RowBases::validate`), so the row keeps its patches.
    Paired,
}

/// Classifies a row given the Repeat tables of its tile for this phase
/// (`(word index, displacement bytes)` per table).
pub fn classify_row(
    tile: PhysicalTile,
    words: &[u32],
    tables: &[(usize, i64)],
) -> Result<RowRelocation, PatchError> {
    let row = decode_row(words).map_err(|error| PatchError::Decode { tile, error })?;
    let moved = |w: usize| tables.iter().find(|t| t.0 == w).map(|t| t.1);
    let mut relative: Vec<(usize, i64)> = Vec::new();
    let mut kept = Vec::new();
    for ti in &row.instructions {
        match ti.instruction {
            Instruction::Send { sctl, .. } => {
                if sctl & SCTL_PAIRED != 0 {
                    return Ok(RowRelocation::Paired);
                }
                relative.push((ti.word_index, moved(ti.word_index).unwrap_or(0)));
            }
            Instruction::SendPicP { sctl, .. } if sctl != 0 => {
                if sctl & SCTL_PAIRED != 0 {
                    return Ok(RowRelocation::Paired);
                }
                if moved(ti.word_index).is_some() {
                    kept.push(ti.word_index);
                }
            }
            _ => {}
        }
    }
    let mut runs: Vec<i64> = Vec::new();
    for &(_, d) in &relative {
        if runs.last() != Some(&d) {
            runs.push(d);
        }
    }
    Ok(match runs.as_slice() {
        [] | [0] => RowRelocation::AbsoluteOnly { kept },
        [d] => RowRelocation::Uniform {
            displacement_bytes: *d,
            relocated: relative.iter().map(|r| r.0).collect(),
            kept,
        },
        _ => RowRelocation::Mixed { runs },
    })
}

/// One sender row relocated by a per-iteration `$OUTGOING_BASE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelocatedSender {
    pub tile: PhysicalTile,
    /// Step index of the phase.
    pub step: u32,
    /// Repeat frame slot whose value (`base + i·stride`) the supervisor puts
    /// into `$OUTGOING_BASE` before the row in iteration `i`.
    pub frame_slot: u32,
    /// The slot's value in iteration 0 (the row is encoded relative to it).
    pub base: u32,
    /// Per-iteration displacement (= the slot's stride).
    pub displacement_bytes: i64,
}

/// What outgoing-base relocation did to a program's Repeat patch tables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutgoingBaseSummary {
    /// Relocation was requested (`--no-outgoing-base` turns it off).
    pub enabled: bool,
    /// Phases with at least one relocated sender row.
    pub phases_relocated: usize,
    /// Relocated sender rows (= rows whose `$OUTGOING_BASE` moves).
    pub sender_rows: usize,
    /// Repeat-patched words whose tables the bases replaced.
    pub words_relocated: usize,
    /// Repeat-patched words left (the tables still emitted).
    pub words_left: usize,
    /// Largest patch-table bytes one tile saves (words × iterations × 4).
    pub max_table_bytes_saved_per_tile: u64,
    /// Rows kept on word patches because their sends mix displacements,
    /// and their patched words.
    pub mixed_rows: usize,
    pub mixed_words: usize,
    /// Moving transmitting-`sendpicp` words (absolute, §2.3): still patched.
    pub absolute_words: usize,
    /// Rows with 64-bit sends kept on word patches, and their words.
    pub paired_rows: usize,
    pub paired_words: usize,
    /// Uniform rows kept on word patches for another reason (no frame slot
    /// with their stride, or an address that cannot be made base-relative),
    /// and their words.
    pub unrelocatable_rows: usize,
    pub unrelocatable_words: usize,
    /// Every relocated row, in step then tile order.
    pub senders: Vec<RelocatedSender>,
}

impl OutgoingBaseSummary {
    /// Adds one phase's counts (`enabled`, `words_left` and the per-tile
    /// maximum are whole-program figures, set by the caller).
    pub fn add(&mut self, phase: OutgoingBaseSummary) {
        self.phases_relocated += phase.phases_relocated;
        self.sender_rows += phase.sender_rows;
        self.words_relocated += phase.words_relocated;
        self.mixed_rows += phase.mixed_rows;
        self.mixed_words += phase.mixed_words;
        self.absolute_words += phase.absolute_words;
        self.paired_rows += phase.paired_rows;
        self.paired_words += phase.paired_words;
        self.unrelocatable_rows += phase.unrelocatable_rows;
        self.unrelocatable_words += phase.unrelocatable_words;
        self.senders.extend(phase.senders);
    }
}

impl core::fmt::Display for OutgoingBaseSummary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "outgoing base: {} phases relocated, {} sender rows, {} Repeat-patched words left, {} patch-table bytes saved per tile (max)",
            self.phases_relocated,
            self.sender_rows,
            self.words_left,
            self.max_table_bytes_saved_per_tile
        )?;
        if !self.enabled {
            return f.write_str(" [off: --no-outgoing-base]");
        }
        write!(
            f,
            " [{} words relocated; kept: {} mixed rows ({} words), {} sendpicp words, {} paired rows ({} words), {} other rows ({} words)]",
            self.words_relocated,
            self.mixed_rows,
            self.mixed_words,
            self.absolute_words,
            self.paired_rows,
            self.paired_words,
            self.unrelocatable_rows,
            self.unrelocatable_words
        )
    }
}
