//! Reports: execution profiles (`profile.json`, `operations.json`,
//! `profile.html`), memory maps and memory-rejection reports (HTML), the
//! package view behind `ipuc inspect`, the chosen plan as text, and the
//! package hash.
//!
//! Every HTML file is standalone: inline CSS and JS, data embedded as JSON,
//! no network resources.

pub mod artifact;
pub mod description_view;
pub mod hash;
pub mod html;
pub mod index;
pub mod layer_breakdown;
pub mod memory;
pub mod memory_html;
pub mod memory_png;
pub mod operations;
pub mod package_view;
pub mod placement_map;
pub mod placement_rejection;
pub mod plan_listing;
pub mod profile;
pub mod profile_html;
pub mod template;
pub mod text_table;

#[cfg(test)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use hash::{package_hash_line, sha256_hex};
pub use memory::{
    Allocation, AllocationClass, LiveAllocation, Liveness, MemoryBudget, MemoryMap,
    MemoryRejection, TileMemoryMap, TilePeak,
};
pub use operations::{summarize, OperationSummary};
pub use plan_listing::plan_listing;
pub use profile::{
    CycleSample, IterationSpan, KernelKindTiming, Profile, ProfileStep, StepKind, TileSamples,
    CYCLE_SOURCES,
};

/// Paths written by [`write_profile`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileFiles {
    pub profile_json: PathBuf,
    pub operations_json: PathBuf,
    pub profile_html: PathBuf,
}

impl ProfileFiles {
    /// `out` ending in `.ipuprof` (the seeds' profile file) or `.json` names
    /// the profile file, and its viewer is named after it (`model.ipuprof`
    /// → `model.html`, as the seeds name it; the others go next to it);
    /// anything else is a directory that receives `profile.json`,
    /// `profile.html` and `operations.json`.
    pub fn at(out: &Path) -> Self {
        let named = out
            .extension()
            .is_some_and(|e| e == "json" || e == "ipuprof");
        let (dir, json, html) = match out.file_stem().filter(|_| named) {
            Some(stem) => {
                let mut html = stem.to_os_string();
                html.push(".html");
                let dir = out.parent().map(Path::to_path_buf).unwrap_or_default();
                (dir.clone(), out.to_path_buf(), dir.join(html))
            }
            None => (
                out.to_path_buf(),
                out.join("profile.json"),
                out.join("profile.html"),
            ),
        };
        ProfileFiles {
            profile_json: json,
            operations_json: dir.join("operations.json"),
            profile_html: html,
        }
    }
}

fn write_file(path: &Path, contents: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    crate::fsio::write_atomic(path, contents).with_context(|| format!("writing {}", path.display()))
}

/// Writes `profile.json`, `operations.json` and `profile.html` (see
/// [`ProfileFiles::at`] for where); above [`profile::DETAILED_SAMPLES`]
/// samples the first two in the seeds' shape ([`Profile::for_writing`]).
pub fn write_profile(out: &Path, profile: &Profile) -> Result<ProfileFiles> {
    let files = ProfileFiles::at(out);
    // A long Repeat is written in the seeds' shape (first iteration in
    // detail, one remainder span per tile); the operation summaries count
    // every sample.
    let written = profile.for_writing();
    let html = profile_html::render(&written)?;
    // Never silently: an earlier run's files at these paths are replaced,
    // and the user is told which.
    for path in [
        &files.profile_json,
        &files.operations_json,
        &files.profile_html,
    ] {
        if path.exists() {
            tracing::warn!(
                "warning: replacing {} (written by an earlier run)",
                path.display()
            );
        }
    }
    write_file(
        &files.profile_json,
        &serde_json::to_vec(&artifact::PROFILE.wrap(&*written))?,
    )?;
    write_file(
        &files.operations_json,
        &serde_json::to_vec_pretty(
            &artifact::OPERATIONS.wrap(&operations::OperationsFile::of(profile)),
        )?,
    )?;
    write_file(&files.profile_html, html.as_bytes())?;
    Ok(files)
}

/// Writes the interactive memory map to `path` (HTML), its data next to it
/// (same name, `.json`) and the all-tiles overview picture (same name,
/// `.png`).
pub fn write_memory_map(path: &Path, map: &MemoryMap) -> Result<()> {
    let html = memory_html::render_memory_map(map)?;
    write_file(path, html.as_bytes())?;
    write_file(
        &path.with_extension("json"),
        &serde_json::to_vec(&artifact::MEMORY_MAP.wrap(map))?,
    )?;
    write_file(&path.with_extension("png"), &memory_png::render(map)?)
}

/// Writes a memory-rejection report to `path` (HTML) and its data next to
/// it (same name, `.json`).
pub fn write_rejection(path: &Path, rejection: &MemoryRejection) -> Result<()> {
    write_file(path, memory_html::render_rejection(rejection)?.as_bytes())?;
    write_file(
        &path.with_extension("json"),
        &serde_json::to_vec_pretty(&artifact::MEMORY_REJECTION.wrap(rejection))?,
    )
}
