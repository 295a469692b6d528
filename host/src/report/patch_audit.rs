//! The patch audit as text: `patch-audit.txt` (rows, displacement runs,
//! words per row, sharing) and `phase-patch-audit.txt` (phases by
//! outgoing-base eligibility), each with the seeds' two-layer figures below
//! ours.

use std::path::Path;

use anyhow::{Context, Result};

use ipuc_core::patch::audit::{BaseEligibility, PatchAudit};

/// The patch audit in brief (the full text goes to `patch-audit.txt` with
/// `--profile-output`).
pub(super) fn print_brief(a: &PatchAudit) {
    let (stationary, constant, mixed) = eligibility_counts(a);
    crate::detail!(
        "patch audit: {} Repeat-patched words in {} rows with changing sources ({} with one uniform displacement); phases: {} stationary, {} eligible for a constant outgoing base, {} mixed; {}",
        a.patched_words,
        a.rows_with_changing_sources,
        a.uniform_rows,
        stationary,
        constant,
        mixed,
        a.sharing_line()
    );
    crate::detail!("{}", a.outgoing_base);
}

/// How many phases are stationary, eligible for one constant outgoing base
/// per sender, and mixed.
fn eligibility_counts(a: &PatchAudit) -> (usize, usize, usize) {
    let (mut stationary, mut constant, mut mixed) = (0, 0, 0);
    for p in &a.phases {
        match p.eligibility {
            BaseEligibility::Stationary => stationary += 1,
            BaseEligibility::ConstantBase => constant += 1,
            BaseEligibility::Mixed(_) => mixed += 1,
        }
    }
    (stationary, constant, mixed)
}

/// `items` joined with commas, or `none`.
fn list_or_none(items: Vec<String>) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// The seeds' figures for the two-layer So400m package
/// (docs/facts/seed-vit-repeat-evaluation.txt, "Actual patch and
/// source-displacement structure" and "Phase-level eligibility").
const SEED_PATCH_AUDIT: &str = "\
seeds (2-layer So400m/14@378, fused QKV, FP8 -4; hardware package):
  1,395 Repeat-patched words across 912 rows with changing sources
  908 rows with one uniform displacement; 3 rows with two displacement runs, 1 with three
  rows by patched words: 437 patch 1, 473 patch 2, 1 patches 5, 1 patches 7
  sharing-patcher call sites: 3,377 inside Repeat, 9,966 in total; longest list 78 words
";

const SEED_PHASE_AUDIT: &str = "\
seeds (2-layer So400m/14@378): the Repeat body has 25 exchange phases:
  18 stationary; 4 eligible for one constant outgoing base per sender:
    phase 5 QKV projection: 292 moving senders, max 1 patched word/tile
    phase 16 attention output projection: 144, max 1
    phase 21 MLP up projection: 184, max 2
    phase 25 MLP down projection: 288, max 2
  3 mixed: phase 3 (tile 223, runs [2304, 0]), phase 18 (tiles 524, 526, 2 runs each, max 7 words), phase 19 (tile 524, runs [2304, 0, 2304])
  worst-tile sharing patch: 78 words in phase 15; Repeat's other sharing phases (8, 19) 1 word per tile
";

/// The patch audit as `patch-audit.txt` (rows, displacement runs, words per
/// row, sharing), ours above the seeds' two-layer figures.
pub fn patch_audit_text(a: &PatchAudit) -> String {
    let mut t = String::new();
    t.push_str("ipuc (this package):\n");
    t.push_str(&format!(
        "  {} Repeat-patched words across {} rows with changing sources ({} audited rows)\n",
        a.patched_words, a.rows_with_changing_sources, a.rows
    ));
    let runs: Vec<String> = a
        .rows_by_runs
        .iter()
        .map(|(runs, rows)| format!("{rows} rows with {runs} run(s)"))
        .collect();
    t.push_str(&format!(
        "  {} rows with one uniform displacement; displacement runs: {}\n",
        a.uniform_rows,
        list_or_none(runs)
    ));
    let words: Vec<String> = a
        .rows_by_patched_words
        .iter()
        .map(|(w, rows)| format!("{rows} patch {w}"))
        .collect();
    t.push_str(&format!(
        "  rows by patched words: {}\n",
        list_or_none(words)
    ));
    let repeat_phases = || a.phases.iter().filter(|p| p.executions > 1);
    t.push_str(&format!(
        "  sharing-patcher call sites: {} inside Repeat (longest {} words), {} in total ({} on the six-worker bulk patcher); longest list {} words\n",
        repeat_phases().map(|p| p.sharing_sites).sum::<usize>(),
        repeat_phases()
            .map(|p| p.max_sharing_words_per_tile)
            .max()
            .unwrap_or(0),
        a.sharing_sites,
        a.sharing_bulk_sites,
        a.sharing_max_words
    ));
    t.push_str(&format!(
        "  rows: {} stored for {} uses; {} used by more than one phase ({} uses of them unpatched, identical words); rows used once are not patched\n",
        a.sharing_stored_rows, a.sharing_uses, a.sharing_shared_rows, a.sharing_unpatched_shared_uses
    ));
    t.push_str(&format!(
        "  per inference: {} sharing patch lists applied, {} words patched ({} words in all lists)\n\n",
        a.sharing_lists_per_inference, a.sharing_words_per_inference, a.sharing_words
    ));
    t.push_str(SEED_PATCH_AUDIT);
    t.push_str("\nper phase (ipuc):\n");
    t.push_str(&a.to_string());
    t
}

/// The phase audit as `phase-patch-audit.txt`: phases with moving senders,
/// constant-base eligible vs mixed (with their displacement runs), the
/// worst tile's Repeat and sharing patch words; the seeds' figures below.
pub fn phase_patch_audit_text(a: &PatchAudit) -> String {
    let mut t = String::new();
    let (stationary, constant, mixed) = eligibility_counts(a);
    let body = a.phases.iter().filter(|p| p.executions > 1).count();
    t.push_str(&format!(
        "ipuc (this package): {} exchange phases ({body} in the Repeat body, run once per iteration): {stationary} stationary, {constant} eligible for one constant outgoing base per sender, {mixed} mixed\n",
        a.phases.len()
    ));
    t.push_str("| Phase | Runs per inference | Moving senders | Max Repeat-patched words on a tile | Base | Sharing lists | Longest sharing list on a tile |\n|---:|---:|---:|---:|---|---:|---:|\n");
    for p in &a.phases {
        let base = match &p.eligibility {
            BaseEligibility::Stationary => "stationary".to_string(),
            BaseEligibility::ConstantBase => "constant base".to_string(),
            BaseEligibility::Mixed(tiles) => {
                let list: Vec<String> = tiles
                    .iter()
                    .take(4)
                    .map(|(tile, runs)| format!("tile {} {runs:?}", tile.get()))
                    .collect();
                format!("mixed: {}", list.join("; "))
            }
        };
        t.push_str(&format!(
            "| {} | {} | {} | {} | {base} | {} | {} |\n",
            p.phase,
            p.executions,
            p.moving_senders,
            p.max_patched_words_per_tile,
            p.sharing_sites,
            p.max_sharing_words_per_tile
        ));
    }
    if let Some(worst) = a
        .phases
        .iter()
        .max_by_key(|p| (p.max_sharing_words_per_tile, std::cmp::Reverse(p.phase)))
    {
        t.push_str(&format!(
            "worst-tile sharing patch: {} words in phase {}\n",
            worst.max_sharing_words_per_tile, worst.phase
        ));
    }
    t.push('\n');
    t.push_str(SEED_PHASE_AUDIT);
    t
}

/// Writes `patch-audit.txt` and `phase-patch-audit.txt` next to the profile
/// (see [`crate::report::ProfileFiles::at`] for the directory).
pub fn write_patch_audit(out: &Path, audit: &PatchAudit) -> Result<()> {
    let files = super::ProfileFiles::at(out);
    for (path, text) in [
        (&files.patch_audit, patch_audit_text(audit)),
        (&files.phase_patch_audit, phase_patch_audit_text(audit)),
    ] {
        crate::fsio::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        crate::detail!("patch audit: {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_core::patch::audit::PhaseAudit;
    use ipuc_target::ipu21::topology::PhysicalTile;

    #[test]
    fn phase_audit_text_counts_phases_and_names_the_worst_sharing_tile() {
        let phase = |phase, moving, eligibility, sharing| PhaseAudit {
            phase,
            moving_senders: moving,
            max_patched_words_per_tile: moving.min(2),
            eligibility,
            sharing_sites: 3,
            max_sharing_words_per_tile: sharing,
            executions: if phase == 0 { 1 } else { 2 },
        };
        let audit = PatchAudit {
            phases: vec![
                phase(0, 0, BaseEligibility::Stationary, 4),
                phase(1, 5, BaseEligibility::ConstantBase, 78),
                phase(
                    2,
                    1,
                    BaseEligibility::Mixed(vec![(PhysicalTile::new(7).unwrap(), vec![2304, 0])]),
                    1,
                ),
            ],
            ..PatchAudit::default()
        };
        let text = phase_patch_audit_text(&audit);
        assert!(
            text.contains("3 exchange phases (2 in the Repeat body, run once per iteration): 1 stationary, 1 eligible for one constant outgoing base per sender, 1 mixed"),
            "{text}"
        );
        assert!(text.contains("mixed: tile 7 [2304, 0]"), "{text}");
        assert!(
            text.contains("worst-tile sharing patch: 78 words in phase 1"),
            "{text}"
        );
        assert!(text.contains("seeds (2-layer So400m/14@378)"), "{text}");
        assert!(
            text.contains("| 1 | 2 | 5 | 2 | constant base | 3 | 78 |"),
            "{text}"
        );
        let text = patch_audit_text(&audit);
        assert!(
            text.contains("sharing-patcher call sites: 6 inside Repeat (longest 78 words)"),
            "{text}"
        );
    }
}
