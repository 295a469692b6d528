//! `index.html`: one page linking every artifact a run wrote (profile,
//! operations, memory map and picture, rejection reports, package, …),
//! rendered from a `minijinja` template (auto-escaped).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

/// How the reports number tiles.
const TILE_IDS: &str = "Tile numbers in every page are logical ids (the planner's numbering), with the physical C600 id beside them; profile.json and `ipuc inspect` key tiles by physical id, memory.json and the rejection JSON by logical id";

/// One file a run wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    pub path: PathBuf,
    /// What it is, for a reader.
    pub what: String,
}

#[derive(Serialize)]
struct Row {
    href: String,
    label: String,
    what: String,
    bytes: String,
}

/// `path` as a link from a page in `dir`: relative when inside `dir`,
/// else absolute (`file://`).
fn href(dir: &Path, path: &Path) -> (String, String) {
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (d, p) = (abs(dir), abs(path));
    match p.strip_prefix(&d) {
        Ok(rel) => {
            let s = rel.display().to_string();
            (s.clone(), s)
        }
        Err(_) => (format!("file://{}", p.display()), p.display().to_string()),
    }
}

/// Renders the index page for `artifacts` as seen from `dir`.
pub fn render(
    title: &str,
    stats: &[(String, String)],
    dir: &Path,
    artifacts: &[Artifact],
) -> Result<String> {
    let rows: Vec<Row> = artifacts
        .iter()
        .map(|a| {
            let (href, label) = href(dir, &a.path);
            Row {
                href,
                label,
                what: a.what.clone(),
                // A file of this run is staged until the run commits.
                bytes: crate::fsio::output_len(&a.path)
                    .map(super::html::thousands)
                    .unwrap_or_else(|| "missing".into()),
            }
        })
        .collect();
    Ok(super::template::render_page(
        "index.html",
        title,
        "",
        None,
        "",
        minijinja::context! {
            stats,
            artifacts => rows,
            tile_ids => TILE_IDS,
        },
    )?)
}

/// Writes the index at `path` (links relative to its directory) and
/// returns the path.
pub fn write(
    title: &str,
    stats: &[(String, String)],
    path: &Path,
    artifacts: &[Artifact],
) -> Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new(""));
    let html = render(title, stats, dir, artifacts)?;
    crate::fsio::write_atomic(path, html.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path.to_path_buf())
}
