//! Patch audit: how much Repeat and sharing patching a program needs, and
//! which phases could instead use one constant `$OUTGOING_BASE` per sender
//! (the seed report's "displacement runs" and "phase-level eligibility",
//! `docs/facts/seed-vit-repeat-evaluation.txt`).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;

use super::fields::{address_fields, AddressFieldKind};
use super::repeat::RepeatPatchPlan;
use super::sharing::{Patcher, SharedRows};
use super::PatchError;
use crate::exchange::ExchangeRow;
use ipuc_target::ipu21::topology::PhysicalTile;

/// One phase's rows and (inside a Repeat) its patch plan.
#[derive(Clone, Copy, Debug)]
pub struct AuditedPhase<'a> {
    pub rows: &'a [ExchangeRow],
    pub repeat: Option<&'a RepeatPatchPlan>,
    /// Times the phase runs per inference (a Repeat body's trip count, else 1).
    pub executions: u32,
}

/// Whether a phase's moving senders could use one constant outgoing base.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BaseEligibility {
    /// No sender address depends on the iteration.
    Stationary,
    /// Every moving sender has one uniform displacement over its whole row.
    ConstantBase,
    /// Some senders mix displacements: (tile, displacement runs in row order).
    Mixed(Vec<(PhysicalTile, Vec<i64>)>),
}

/// Per-phase findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseAudit {
    pub phase: usize,
    /// Tiles with at least one iteration-dependent send.
    pub moving_senders: usize,
    /// Most Repeat-patched words on one tile.
    pub max_patched_words_per_tile: usize,
    pub eligibility: BaseEligibility,
    /// Row-sharing patch lists called in this phase (one per tile at most).
    pub sharing_sites: usize,
    /// Longest sharing patch list on one tile in this phase (words).
    pub max_sharing_words_per_tile: usize,
    /// Times the phase runs per inference (a Repeat body's trip count, else 1).
    pub executions: u32,
}

/// Whole-program findings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchAudit {
    /// Active rows audited.
    pub rows: usize,
    /// Repeat-patched instruction words.
    pub patched_words: usize,
    /// Rows with at least one changing source.
    pub rows_with_changing_sources: usize,
    /// Of those, rows whose send words all move by one displacement.
    pub uniform_rows: usize,
    /// Displacement runs → number of rows with that many runs (changing rows only).
    pub rows_by_runs: BTreeMap<usize, usize>,
    /// Patched words per row → number of rows.
    pub rows_by_patched_words: BTreeMap<usize, usize>,
    pub phases: Vec<PhaseAudit>,
    /// Sharing patch lists, longest list, and lists going to the bulk patcher.
    pub sharing_sites: usize,
    pub sharing_max_words: usize,
    pub sharing_bulk_sites: usize,
    /// Rows stored after sharing, and the row uses they serve.
    pub sharing_stored_rows: usize,
    pub sharing_uses: usize,
    /// Stored rows used by more than one phase (real sharing).
    pub sharing_shared_rows: usize,
    /// Uses of those rows that run them unpatched (every use word-for-word
    /// the same).
    pub sharing_unpatched_shared_uses: usize,
    /// Words in all sharing patch lists (replacement words; the offsets
    /// tables are as long).
    pub sharing_words: usize,
    /// Sharing patch lists applied and words patched per inference (each
    /// list × its phase's executions).
    pub sharing_lists_per_inference: u64,
    pub sharing_words_per_inference: u64,
    /// What outgoing-base relocation made of the Repeat patches above
    /// (the figures above are the table-based program's).
    pub outgoing_base: super::relocate::OutgoingBaseSummary,
}

/// Maximal runs of equal values.
fn runs(values: &[i64]) -> Vec<i64> {
    let mut out: Vec<i64> = Vec::new();
    for &v in values {
        if out.last() != Some(&v) {
            out.push(v);
        }
    }
    out
}

/// Audits phases (and optionally the sharing of their rows).
pub fn audit(
    phases: &[AuditedPhase<'_>],
    sharing: Option<&SharedRows>,
) -> Result<PatchAudit, PatchError> {
    let mut a = PatchAudit::default();
    for (pi, phase) in phases.iter().enumerate() {
        let mut moving = 0;
        let mut max_patched = 0;
        let mut mixed = Vec::new();
        for row in phase.rows.iter().filter(|r| r.words.len() > 1) {
            a.rows += 1;
            let fields = address_fields(&row.words).map_err(|error| PatchError::Decode {
                tile: row.tile,
                error,
            })?;
            let patched: BTreeMap<usize, i64> = phase
                .repeat
                .map(|plan| {
                    plan.tables
                        .iter()
                        .filter(|t| t.tile == row.tile)
                        .map(|t| (t.word_index, t.displacement_bytes))
                        .collect()
                })
                .unwrap_or_default();
            let displacements: Vec<i64> = fields
                .iter()
                .filter(|f| f.kind == AddressFieldKind::Send)
                .map(|f| patched.get(&f.word_index).copied().unwrap_or(0))
                .collect();
            let n_patched = patched.len();
            if displacements.iter().all(|&d| d == 0) {
                continue;
            }
            moving += 1;
            max_patched = max_patched.max(n_patched);
            a.patched_words += n_patched;
            a.rows_with_changing_sources += 1;
            *a.rows_by_patched_words.entry(n_patched).or_default() += 1;
            let r = runs(&displacements);
            *a.rows_by_runs.entry(r.len()).or_default() += 1;
            if r.len() == 1 {
                a.uniform_rows += 1;
            } else {
                mixed.push((row.tile, r));
            }
        }
        let eligibility = if moving == 0 {
            BaseEligibility::Stationary
        } else if mixed.is_empty() {
            BaseEligibility::ConstantBase
        } else {
            BaseEligibility::Mixed(mixed)
        };
        a.phases.push(PhaseAudit {
            phase: pi,
            moving_senders: moving,
            max_patched_words_per_tile: max_patched,
            eligibility,
            sharing_sites: 0,
            max_sharing_words_per_tile: 0,
            executions: phase.executions,
        });
    }
    if let Some(s) = sharing {
        a.count_sharing(phases, s);
    }
    Ok(a)
}

impl PatchAudit {
    /// Row sharing's figures: per phase its patch sites and the most words
    /// one patches; over all phases the uses, the lists and words patched
    /// per inference, the rows stored and shared, and the sites by patcher.
    fn count_sharing(&mut self, phases: &[AuditedPhase<'_>], s: &SharedRows) {
        for (pi, uses) in s.uses.iter().enumerate() {
            let executions = u64::from(phases.get(pi).map_or(1, |p| p.executions));
            if let Some(p) = self.phases.get_mut(pi) {
                for list in uses.iter().filter_map(|u| u.patch.as_ref()) {
                    p.sharing_sites += 1;
                    p.max_sharing_words_per_tile =
                        p.max_sharing_words_per_tile.max(list.words.len());
                }
            }
            for u in uses {
                self.sharing_uses += 1;
                match &u.patch {
                    Some(list) => {
                        self.sharing_lists_per_inference += executions;
                        self.sharing_words_per_inference +=
                            executions.saturating_mul(list.words.len() as u64);
                    }
                    None if u.shared => self.sharing_unpatched_shared_uses += 1,
                    None => {}
                }
            }
        }
        let mut per_row: BTreeMap<super::sharing::StoredRowId, usize> = BTreeMap::new();
        for u in s.uses.iter().flatten() {
            *per_row.entry(u.row).or_default() += 1;
        }
        self.sharing_stored_rows = s.stored.values().map(Vec::len).sum();
        self.sharing_shared_rows = per_row.values().filter(|&&n| n > 1).count();
        for list in s.uses.iter().flatten().filter_map(|u| u.patch.as_ref()) {
            self.sharing_sites += 1;
            self.sharing_words += list.words.len();
            self.sharing_max_words = self.sharing_max_words.max(list.words.len());
            if list.patcher == Patcher::Bulk {
                self.sharing_bulk_sites += 1;
            }
        }
    }

    /// Row sharing in one line: stored rows and uses, rows used by more
    /// than one phase, patch lists emitted and applied per inference, words
    /// patched per inference.
    pub fn sharing_line(&self) -> alloc::string::String {
        alloc::format!(
            "sharing: {} stored rows for {} row uses; {} rows used by more than one phase ({} of their uses unpatched: identical words); {} patch lists ({} words, longest {}, {} on the bulk patcher); per inference {} lists applied, {} words patched",
            self.sharing_stored_rows,
            self.sharing_uses,
            self.sharing_shared_rows,
            self.sharing_unpatched_shared_uses,
            self.sharing_sites,
            self.sharing_words,
            self.sharing_max_words,
            self.sharing_bulk_sites,
            self.sharing_lists_per_inference,
            self.sharing_words_per_inference
        )
    }
}

impl fmt::Display for PatchAudit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "rows {}; Repeat-patched words {} across {} rows with changing sources; {} rows uniform",
            self.rows, self.patched_words, self.rows_with_changing_sources, self.uniform_rows
        )?;
        for (runs, rows) in &self.rows_by_runs {
            writeln!(f, "  {rows} rows with {runs} displacement run(s)")?;
        }
        for (words, rows) in &self.rows_by_patched_words {
            writeln!(f, "  {rows} rows patch {words} word(s)")?;
        }
        for p in &self.phases {
            let e = match &p.eligibility {
                BaseEligibility::Stationary => alloc::string::String::from("stationary"),
                BaseEligibility::ConstantBase => {
                    alloc::string::String::from("constant outgoing base eligible")
                }
                BaseEligibility::Mixed(tiles) => {
                    let mut s = alloc::format!("mixed on {} tile(s):", tiles.len());
                    for (t, r) in tiles.iter().take(4) {
                        s.push_str(&alloc::format!(" {} {:?}", t.get(), r));
                    }
                    s
                }
            };
            writeln!(
                f,
                "phase {}: {} moving senders, max {} patched words/tile, {}; {} sharing patch lists, longest {} words",
                p.phase,
                p.moving_senders,
                p.max_patched_words_per_tile,
                e,
                p.sharing_sites,
                p.max_sharing_words_per_tile
            )?;
        }
        writeln!(f, "{}", self.sharing_line())?;
        writeln!(f, "{}", self.outgoing_base)
    }
}
