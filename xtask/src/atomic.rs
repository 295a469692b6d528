//! Whole-file outputs of the benchmarks and sweeps (summaries, logs, the
//! generated input), written as `ipuc` writes its own: to a temporary beside
//! the final path, synced, then renamed over it, so an interrupted sweep
//! leaves the previous complete file rather than a cut one, and a symlink
//! at the path is replaced rather than followed. (The live child logs of
//! `process` are the exception: they are read while they grow.)

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `contents` to `path` atomically.
pub(crate) fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".xtask-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary beside {}", path.display()))?;
    tmp.write_all(contents.as_ref())
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_a_symlink_and_keeps_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        std::fs::write(&target, "previous").unwrap();
        let link = dir.path().join("summary.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        super::write(&link, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "previous");
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary left behind");
    }
}
