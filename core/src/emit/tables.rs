//! Patch data of one tile: the Repeat patch tables and row-sharing patch
//! lists its exchange phases use.
//!
//! The runtime's patchers read these words with ordinary loads and store
//! them into rows (`docs/facts/ipu21-target.md` §2.8); they are never
//! fetched as instructions, so they need not sit below the executable limit
//! (§1.2) — only code and exchange rows do. They therefore live in the data
//! region as one constant block per tile, placed and charged against the
//! budget like any buffer ([`crate::place::TilePlacement::add_constant`]),
//! instead of growing the code area.
//!
//! Layout of the block: every Repeat patch table (one replacement word per
//! iteration), then every sharing patch list (byte offsets, then
//! replacement words), each in step order.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::lower::StepIndex;
use crate::rows::ExchangePlan;
use ipuc_target::ipu21::topology::{LogicalTile, PhysicalTile};

/// Bytes per table word.
const WORD: u32 = 4;

/// Where one phase's patch data sits, as byte offsets from the block base.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct PhasePatch {
    /// Sharing list: offsets table, replacement-words table, entry count.
    pub sharing: Option<(u32, u32, u32)>,
    /// Repeat tables: (patched word index in the row, table offset).
    pub repeat: Vec<(u32, u32)>,
}

/// One tile's patch data and where each phase's part of it sits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchData {
    /// Repeat patch tables, in step order (`trip_count` words each).
    pub repeat_words: Vec<u32>,
    /// Sharing patch lists, in step order (offsets, then words).
    pub sharing_words: Vec<u32>,
    phases: BTreeMap<StepIndex, PhasePatch>,
}

impl PatchData {
    /// The patch data physical tile `physical` needs for `exchange`.
    pub fn for_tile(exchange: &ExchangePlan, physical: PhysicalTile) -> Self {
        let mut data = PatchData::default();
        let mut sharing: Vec<(StepIndex, &[u32], &[u32])> = Vec::new();
        for (step, phase) in &exchange.phases {
            let Some(u) = phase.uses.get(&physical) else {
                continue;
            };
            let mut patch = PhasePatch::default();
            for t in &u.repeat {
                patch
                    .repeat
                    .push((t.word_index as u32, WORD * data.repeat_words.len() as u32));
                data.repeat_words.extend_from_slice(&t.words);
            }
            if let Some(list) = &u.sharing {
                sharing.push((*step, &list.offsets, &list.words));
            }
            data.phases.insert(*step, patch);
        }
        // Sharing lists follow every Repeat table.
        let base = data.repeat_bytes();
        for (step, offsets, words) in sharing {
            let offs = base + WORD * data.sharing_words.len() as u32;
            data.sharing_words.extend_from_slice(offsets);
            let vals = base + WORD * data.sharing_words.len() as u32;
            data.sharing_words.extend_from_slice(words);
            if let Some(p) = data.phases.get_mut(&step) {
                p.sharing = Some((offs, vals, offsets.len() as u32));
            }
        }
        data
    }

    /// Bytes of the Repeat tables (the sharing lists start here).
    pub fn repeat_bytes(&self) -> u32 {
        WORD * self.repeat_words.len() as u32
    }

    /// Bytes of the sharing lists.
    pub fn sharing_bytes(&self) -> u32 {
        WORD * self.sharing_words.len() as u32
    }

    /// Bytes of the whole block.
    pub fn bytes(&self) -> u32 {
        self.repeat_bytes() + self.sharing_bytes()
    }

    /// Where `step`'s patch data sits.
    pub(super) fn phase(&self, step: StepIndex) -> Option<&PhasePatch> {
        self.phases.get(&step)
    }
}

/// Where each tile's patch-data block was placed.
pub trait PatchAddresses: Sync {
    /// Base address of logical `tile`'s block (`None` if it has none).
    fn patch_base(&self, tile: LogicalTile) -> Option<u32>;
}
