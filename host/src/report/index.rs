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

/// `p` made absolute without needing it to exist yet (a file of this run
/// is staged until the run commits): its directory resolved through
/// symlinks, then its name.
fn absolute(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| p.to_path_buf(), |d| d.join(p))
    };
    match (joined.parent(), joined.file_name()) {
        (Some(parent), Some(name)) => {
            std::fs::canonicalize(parent).map_or_else(|_| joined.clone(), |d| d.join(name))
        }
        _ => joined,
    }
}

/// `to` relative to the directory `from` (both absolute): `..` for each
/// of `from`'s components past their common prefix, then the rest of `to`.
/// `None` when they share no root (another drive on Windows).
fn relative(from: &Path, to: &Path) -> Option<PathBuf> {
    let (f, t): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return None;
    }
    let mut rel = PathBuf::new();
    for _ in common..f.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c.as_os_str());
    }
    Some(rel)
}

/// A relative path as a URL path: each component's bytes percent-encoded
/// except RFC 3986's unreserved characters, joined by `/`.
pub fn url_path(rel: &Path) -> String {
    rel.components()
        .map(|c| {
            let mut s = String::new();
            for &b in c.as_os_str().as_encoded_bytes() {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    s.push(b as char);
                } else {
                    s.push_str(&format!("%{b:02X}"));
                }
            }
            s
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `path` as a link from a page in `dir` and its label: always relative
/// (`../mem/memory.html` for a file beside the page's directory), so the
/// links keep working when the folder holding them moves, and
/// URL-encoded (a space or `#` in a name is not read as a URL's syntax).
/// Only a path with no root in common with `dir` is an absolute `file://`
/// URL.
fn href(dir: &Path, path: &Path) -> (String, String) {
    let (d, p) = (absolute(dir), absolute(path));
    match relative(&d, &p) {
        Some(rel) => (url_path(&rel), rel.display().to_string()),
        None => (format!("file://{}", p.display()), p.display().to_string()),
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
