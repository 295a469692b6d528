//! Atomic writes and early writability checks.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::cleanup;
use super::error::FsError;

/// What an output location will hold (for [`check_writable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// One file at the path; its directory must exist.
    File,
    /// A directory of files, made (with its parents) if missing.
    Directory,
}

/// The directory a file at `path` goes into ("." for a bare name).
fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn not_writable(path: &Path, why: impl Into<String>) -> io::Error {
    FsError::NotWritable {
        path: path.to_path_buf(),
        why: why.into(),
    }
    .into()
}

/// A temporary beside the final path: hidden, named after it, in the same
/// directory so the rename never crosses a file system.
fn temporary_in(dir: &Path, path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let name = path
        .file_name()
        .ok_or_else(|| not_writable(path, "the path names no file"))?;
    tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .tempfile_in(dir)
}

/// Writes `contents` to `path` atomically: to a temporary beside it, synced,
/// then renamed over it. Readers see the old file or the new one, never a
/// part; on any error the temporary is removed and the old file kept. A
/// symlink at `path` is replaced by the file (its target is not touched).
/// The new file keeps an existing file's permissions, else gets 0644.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = directory_of(path);
    let mut tmp = temporary_in(&dir, path)?;
    let _pending = cleanup::pending(tmp.path());
    tmp.write_all(contents)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map_or(0o644, |m| m.permissions().mode() & 0o7777);
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(mode))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename itself reaches the disk with the directory; a file system
    // that cannot sync a directory still has the complete file in place.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Checks, before any long work, that an output can be written at `path`:
/// for a file, its directory exists and takes a new file (tried with a
/// temporary, removed at once) and the path is not a directory; for a
/// directory, it is made if missing and takes a new file.
pub fn check_writable(path: &Path, kind: OutputKind) -> io::Result<()> {
    let dir = match kind {
        OutputKind::File => {
            if fs::metadata(path).is_ok_and(|m| m.is_dir()) {
                return Err(not_writable(path, "is a directory"));
            }
            let dir = directory_of(path);
            if !dir.is_dir() {
                return Err(not_writable(
                    path,
                    format!("directory {} does not exist", dir.display()),
                ));
            }
            dir
        }
        OutputKind::Directory => {
            if path.exists() && !path.is_dir() {
                return Err(not_writable(path, "exists and is not a directory"));
            }
            fs::create_dir_all(path)
                .map_err(|e| not_writable(path, format!("cannot be made a directory: {e}")))?;
            path.to_path_buf()
        }
    };
    let probe = match kind {
        OutputKind::File => path.to_path_buf(),
        OutputKind::Directory => path.join("probe"),
    };
    temporary_in(&dir, &probe).map(drop).map_err(|e| {
        not_writable(
            path,
            format!("cannot create a file in {}: {e}", dir.display()),
        )
    })
}

/// [`check_writable`] for a directory.
pub fn check_writable_dir(path: &Path) -> io::Result<()> {
    check_writable(path, OutputKind::Directory)
}
