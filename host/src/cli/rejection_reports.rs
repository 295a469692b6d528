//! Memory rejections' artifacts: the HTML and JSON report of every
//! rejected candidate, written before the rejection's error goes up, and
//! the `index.html` that links them when `--profile-output` was given.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::compile::PlanOverBudget;
use crate::report::placement_rejection::PlacementRejected;
use crate::report::{write_rejection, MemoryRejection};

/// A memory rejection gets its HTML report written (and its path printed)
/// before the error goes up.
pub(super) fn with_rejection_report(
    mut err: anyhow::Error,
    memory_profile_directory: Option<&Path>,
    planning_tiles: u32,
) -> anyhow::Error {
    let dir = memory_profile_directory.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let written = if let Some(rejected) = err.downcast_mut::<PlanOverBudget>() {
        let reports = MemoryRejection::all_from_plan(&rejected.0, planning_tiles);
        write_rejections(&dir, rejected.0.op_index, &reports).map(|paths| rejected.1 = paths)
    } else if let Some(rejected) = err.downcast_mut::<PlacementRejected>() {
        write_rejections(
            &dir,
            rejected.op_index,
            std::slice::from_ref(&rejected.report),
        )
        .map(|paths| rejected.paths = paths)
    } else {
        return err;
    };
    // The error names the reports after its top dozen allocations.
    match written {
        Ok(()) => err,
        Err(write_err) => err.context(format!("could not write the memory report: {write_err:#}")),
    }
}

/// Writes `rejected-op<N>-<k>.html` + `.json` for every report into `dir`:
/// named by the op and the candidate's rank (0 = the reported one, then by
/// peak), so a rerun of the same build replaces its own reports (each file
/// written atomically, and the replacement announced) instead of piling up
/// new ones; an earlier run's reports of the same op beyond this run's
/// candidates (`-<k>` for k ≥ the count) are removed, and that announced
/// too, so the directory never mixes two runs' candidates of one op.
pub fn write_rejections(
    dir: &std::path::Path,
    op_index: u32,
    reports: &[MemoryRejection],
) -> Result<Vec<PathBuf>> {
    let name = |k: usize| dir.join(format!("rejected-op{op_index}-{k:04}.html"));
    let paths = reports
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let path = name(k);
            if path.exists() {
                tracing::warn!(
                    "warning: replacing the earlier rejection report {}",
                    path.display()
                );
            }
            write_rejection(&path, r)?;
            Ok(path)
        })
        .collect::<Result<Vec<_>>>()?;
    // An earlier run's reports of this op past this run's candidates.
    let prefix = format!("rejected-op{op_index}-");
    let mut stale: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
                return false;
            };
            let Some((k, ext)) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split_once('.'))
            else {
                return false;
            };
            (ext == "html" || ext == "json")
                && k.len() == 4
                && k.parse::<usize>().is_ok_and(|k| k >= reports.len())
        })
        .collect();
    stale.sort();
    for p in &stale {
        // With this run's set, so an interrupted run keeps them.
        crate::fsio::remove_with_outputs(p).with_context(|| {
            format!(
                "removing the earlier run's rejection report {}",
                p.display()
            )
        })?;
    }
    if let Some(first) = stale.first() {
        tracing::warn!(
            "warning: removed {} file(s) of an earlier run's rejection reports of op {op_index} beyond this run's {} candidate(s) (from {})",
            stale.len(),
            reports.len(),
            first.display()
        );
    }
    Ok(paths)
}

/// `index.html` next to where the profile would have gone, linking the
/// memory-rejection reports `err` names (`None` for other errors), and
/// the run's summary when it went to a file.
pub(super) fn write_rejection_index(
    workload: &str,
    summary_json: Option<&Path>,
    err: &anyhow::Error,
    out: &std::path::Path,
) -> Result<Option<PathBuf>> {
    use crate::report::index::{self, Artifact};
    let (stage, paths) = if let Some(r) = err.downcast_ref::<PlanOverBudget>() {
        ("planner", &r.1)
    } else if let Some(r) = err.downcast_ref::<PlacementRejected>() {
        ("placement", &r.paths)
    } else {
        return Ok(None);
    };
    let mut artifacts = Vec::new();
    for (k, p) in paths.iter().enumerate() {
        let what = if k == 0 {
            format!("memory rejection ({stage}): the reported candidate, interactive")
        } else {
            format!("memory rejection ({stage}): rejected candidate {k}, interactive")
        };
        artifacts.push(Artifact {
            path: p.clone(),
            what,
        });
        artifacts.push(Artifact {
            path: p.with_extension("json"),
            what: "its data (JSON)".into(),
        });
    }
    if let Some(p) = summary_json.filter(|p| p.as_os_str() != "-") {
        artifacts.push(Artifact {
            path: p.to_path_buf(),
            what: "the run's machine-readable summary (JSON)".into(),
        });
    }
    let index_path = crate::report::ProfileFiles::at(out).index_html;
    let stats = vec![
        ("workload".to_string(), workload.to_string()),
        (
            "result".to_string(),
            format!("rejected by the {stage}: over the per-tile memory budget"),
        ),
    ];
    index::write(
        &format!("ipuc run {} (rejected)", workload),
        &stats,
        &index_path,
        &artifacts,
    )
    .map(Some)
}
