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
pub mod patch_audit;
pub mod perfetto;
pub mod placement_map;
pub mod placement_rejection;
pub mod plan_listing;
pub mod profile;
pub mod profile_html;
pub mod run;
pub mod run_summary;
pub mod template;
pub mod text_table;
pub mod trace;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod viewer_check;

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
    CycleSample, IterationSpan, KernelKindTiming, Profile, ProfileDetail, ProfileStep, StepKind,
    TileSamples, CYCLE_SOURCES,
};

/// Paths a run's profile writes (by [`write_profile`], the patch audit and
/// the index): one place names them all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileFiles {
    pub profile_json: PathBuf,
    pub operations_json: PathBuf,
    pub profile_html: PathBuf,
    /// The Chrome/Perfetto trace ([`perfetto`]), gzipped
    /// (`trace.json.gz`): Perfetto and chrome://tracing open it as it is.
    pub trace_json: PathBuf,
    /// The run's artifact index ([`index`]).
    pub index_html: PathBuf,
    pub patch_audit: PathBuf,
    pub phase_patch_audit: PathBuf,
}

impl ProfileFiles {
    /// `out` ending in `.ipuprof` (the seeds' profile file) or `.json` names
    /// the profile file, and every other file is named after it beside it
    /// (`model.ipuprof` → `model.html`, as the seeds name the viewer, and
    /// `model.operations.json`, `model.trace.json.gz`, `model.index.html`,
    /// `model.patch-audit.txt`, `model.phase-patch-audit.txt`), so runs
    /// with different names share a directory without sharing a file;
    /// anything else is the run's own directory, which receives
    /// `profile.json`, `profile.html`, `operations.json`, `trace.json.gz`,
    /// `index.html` and the patch audits.
    pub fn at(out: &Path) -> Self {
        let named = out
            .extension()
            .is_some_and(|e| e == "json" || e == "ipuprof");
        match out.file_stem().filter(|_| named) {
            Some(stem) => {
                let dir = out.parent().map(Path::to_path_buf).unwrap_or_default();
                let beside = |suffix: &str| {
                    let mut name = stem.to_os_string();
                    name.push(suffix);
                    dir.join(name)
                };
                ProfileFiles {
                    profile_json: out.to_path_buf(),
                    operations_json: beside(".operations.json"),
                    profile_html: beside(".html"),
                    trace_json: beside(".trace.json.gz"),
                    index_html: beside(".index.html"),
                    patch_audit: beside(".patch-audit.txt"),
                    phase_patch_audit: beside(".phase-patch-audit.txt"),
                }
            }
            None => ProfileFiles {
                profile_json: out.join("profile.json"),
                operations_json: out.join("operations.json"),
                profile_html: out.join("profile.html"),
                trace_json: out.join("trace.json.gz"),
                index_html: out.join("index.html"),
                patch_audit: out.join("patch-audit.txt"),
                phase_patch_audit: out.join("phase-patch-audit.txt"),
            },
        }
    }

    /// The directory the files go to.
    pub fn dir(&self) -> PathBuf {
        self.profile_html
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// Every file, in the order they are listed.
    pub fn all(&self) -> [&PathBuf; 7] {
        [
            &self.profile_html,
            &self.trace_json,
            &self.operations_json,
            &self.profile_json,
            &self.index_html,
            &self.patch_audit,
            &self.phase_patch_audit,
        ]
    }

    /// Files of an earlier run at these paths: a run replaces them (it
    /// never writes over another name's files, see [`ProfileFiles::at`])
    /// and says so, once, listing them.
    pub fn announce_replaced(&self) {
        warn_replacing(
            self.all().map(|p| p.as_path()),
            "profile files",
            "give --profile-output another name to keep them",
        );
    }
}

/// Says, once, which of `paths` an earlier run left and this one replaces
/// (`what` names them, `keep` says how to keep them).
fn warn_replacing<'a>(paths: impl IntoIterator<Item = &'a Path>, what: &str, keep: &str) {
    let existing: Vec<String> = paths
        .into_iter()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !existing.is_empty() {
        tracing::warn!(
            "warning: replacing an earlier run's {what} ({}); {keep}",
            existing.join(", ")
        );
    }
}

fn write_file(path: &Path, contents: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    crate::fsio::write_atomic(path, contents).with_context(|| format!("writing {}", path.display()))
}

/// Writes the profile, its viewer, `operations.json` and the gzipped
/// Perfetto trace (see [`ProfileFiles::at`] for where): the profile, viewer
/// and trace at
/// `detail` ([`Profile::for_writing`]), `operations.json` summed over every
/// sample.
pub fn write_profile(out: &Path, profile: &Profile, detail: ProfileDetail) -> Result<ProfileFiles> {
    let files = ProfileFiles::at(out);
    let written = profile.for_writing(detail);
    let html = profile_html::render(&written)?;
    files.announce_replaced();
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
    write_file(
        &files.trace_json,
        &gzip(perfetto::render(&written).as_bytes())?,
    )?;
    Ok(files)
}

/// `bytes` gzipped (the trace: JSON of many near-identical events, which
/// compresses about 15-fold).
pub fn gzip(bytes: &[u8]) -> Result<Vec<u8>> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 8),
        flate2::Compression::default(),
    );
    gz.write_all(bytes)?;
    Ok(gz.finish()?)
}

/// Writes the interactive memory map to `path` (HTML), its data next to it
/// (same name, `.json`) and the all-tiles overview picture (same name,
/// `.png`).
pub fn write_memory_map(path: &Path, map: &MemoryMap) -> Result<()> {
    let html = memory_html::render_memory_map(map)?;
    warn_replacing(
        [
            path.to_path_buf(),
            path.with_extension("json"),
            path.with_extension("png"),
        ]
        .iter()
        .map(|p| p.as_path()),
        "memory map",
        "give --memory-profile-directory another directory to keep it",
    );
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
