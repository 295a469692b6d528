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

/// Test hook of `cargo xtask hostile`: with this set to a number of
/// milliseconds, every atomic write pauses that long twice — with half its
/// bytes in the temporary, and again with all of them synced, just before
/// the rename — so the matrix can send its signals into the write itself
/// rather than hope to hit it. Unset, it costs one lookup per process.
pub const PAUSE_ENV: &str = "IPUC_TEST_WRITE_PAUSE_MS";

fn test_pause() -> Option<std::time::Duration> {
    static PAUSE: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    *PAUSE.get_or_init(|| {
        let ms: u64 = std::env::var(PAUSE_ENV).ok()?.parse().ok()?;
        Some(std::time::Duration::from_millis(ms))
    })
}

/// The OS error alone: `tempfile` appends "at path <temporary>" to the
/// errors it returns, and the caller names the real path already.
fn without_temporary(e: io::Error) -> io::Error {
    let inner = e
        .get_ref()
        .and_then(|inner| inner.source())
        .and_then(|source| source.downcast_ref::<io::Error>());
    match inner.and_then(io::Error::raw_os_error) {
        Some(code) => io::Error::from_raw_os_error(code),
        None => e,
    }
}

/// Longest file name most file systems take (Linux `NAME_MAX`).
const NAME_MAX: usize = 255;

/// What a temporary's name adds to its stem: `.` + stem + `.` + a process
/// id (at most 10 digits) + `.` + `tempfile`'s 6 random characters +
/// `.tmp`.
const TEMPORARY_EXTRA: usize = 1 + 1 + 10 + 1 + 6 + 4;

/// The part of an output's file name its temporary starts with: the whole
/// name when the temporary still fits [`NAME_MAX`], else its first bytes
/// (on a character boundary). A valid 250-byte output name would otherwise
/// get a temporary the file system refuses ("File name too long");
/// the random part keeps two truncated names apart.
pub fn temporary_stem(name: &str) -> &str {
    let max = NAME_MAX - TEMPORARY_EXTRA;
    if name.len() <= max {
        return name;
    }
    let mut end = max;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// The temporaries of earlier writes to `name` in `dir` whose writer is
/// gone (killed by SIGKILL, which no handler sees): each temporary names its
/// writer's process id, `.NAME.PID.*.tmp`, and one whose process no longer
/// exists is removed. A live writer's (a concurrent write) is left alone.
fn remove_dead_writers_temporaries(dir: &Path, name: &str) {
    let prefix = format!(".{}.", temporary_stem(name));
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .filter(|n| n.ends_with(".tmp"))
        else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid > 0 && !process_exists(pid) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(unix)]
fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_exists(_: i32) -> bool {
    true
}

/// A temporary beside the final path: hidden, named after it and this
/// process, in the same directory so the rename never crosses a file
/// system. Its name is registered for removal on a signal before the file
/// is created, so no signal can fall between the two and leave it behind;
/// one left by a SIGKILL is removed by the next write to the same path.
fn temporary_in(
    dir: &Path,
    path: &Path,
) -> io::Result<(tempfile::NamedTempFile, cleanup::Pending)> {
    let name = path
        .file_name()
        .ok_or_else(|| not_writable(path, "the path names no file"))?;
    let name = name.to_string_lossy();
    remove_dead_writers_temporaries(dir, &name);
    let mut registered = None;
    let file = tempfile::Builder::new()
        .prefix(&format!(
            ".{}.{}.",
            temporary_stem(&name),
            std::process::id()
        ))
        .suffix(".tmp")
        .make_in(dir, |candidate| {
            let pending = cleanup::pending(candidate);
            let mut options = fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let file = options.open(candidate)?;
            registered = Some(pending);
            Ok(file)
        })?;
    let pending = registered.ok_or_else(|| io::Error::other("temporary file not registered"))?;
    Ok((file, pending))
}

/// Writes `contents` to `path` atomically: to a temporary beside it, synced,
/// then renamed over it. Readers see the old file or the new one, never a
/// part; on any error the temporary is removed and the old file kept. A
/// symlink at `path` is replaced by the file (its target is not touched).
/// The new file keeps an existing file's permissions, else gets 0644.
/// Errors are the OS's, without the temporary's name (the caller names
/// `path`).
///
/// Inside an output set ([`begin_outputs`]) the synced temporary is kept
/// instead of renamed, and [`commit_outputs`] renames the whole set at the
/// end of the run; a failed write marks the set so that none of it
/// replaces its previous file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_atomic_inner(path, contents)
        .map_err(without_temporary)
        .inspect_err(|_| {
            if let Some(set) = lock_set().as_mut() {
                set.failed = true;
            }
        })
}

/// One synced temporary waiting for its set's commit.
struct Staged {
    path: PathBuf,
    tmp: tempfile::NamedTempFile,
    len: u64,
    /// Keeps the temporary registered for removal on a signal until it is
    /// renamed (or dropped with the set).
    _pending: cleanup::Pending,
}

/// The outputs of one run, staged until [`commit_outputs`].
struct OutputSet {
    staged: Vec<Staged>,
    /// Files of the previous set this run's set does not replace (an
    /// earlier run's extra rejection reports), removed at the commit.
    removals: Vec<PathBuf>,
    /// A write of this set failed: the set is dropped, not committed.
    failed: bool,
}

static SET: std::sync::Mutex<Option<OutputSet>> = std::sync::Mutex::new(None);

fn lock_set() -> std::sync::MutexGuard<'static, Option<OutputSet>> {
    // A panic while holding the lock leaves a consistent list (pushes and
    // flags only), so a poisoned lock is still usable.
    SET.lock().unwrap_or_else(|e| e.into_inner())
}

/// Opens this process's output set: from now on every [`write_atomic`]
/// stages its file, and [`commit_outputs`] replaces them all together as
/// the run's last step. A run's outputs are one set (a package with its
/// memory maps, plan and summary; a profile with its viewer, trace and
/// operations), so an interrupted or failed run leaves the previous set
/// whole rather than new files beside old ones.
pub fn begin_outputs() {
    *lock_set() = Some(OutputSet {
        staged: Vec::new(),
        removals: Vec::new(),
        failed: false,
    });
}

/// Removes `path` with the open set's commit (at once without a set): a
/// file of the previous set that the new one has no counterpart for goes
/// when the new set arrives, not before, so an interrupted run leaves
/// the previous set whole.
pub fn remove_with_outputs(path: &Path) -> io::Result<()> {
    if let Some(set) = lock_set().as_mut() {
        set.removals.push(path.to_path_buf());
        return Ok(());
    }
    fs::remove_file(path)
}

/// Renames every staged output into place, signals held back until the
/// last rename (`cleanup`), and closes the set; returns how many files
/// were replaced. When a write of the set failed, nothing is renamed,
/// every temporary is removed and the error says so. Without an open set,
/// nothing to do.
pub fn commit_outputs() -> io::Result<usize> {
    let Some(set) = lock_set().take() else {
        return Ok(0);
    };
    if set.failed {
        let n = set.staged.len();
        drop(set);
        return Err(io::Error::other(format!(
            "an output could not be written, so none of this run's {} other outputs replaced its previous file",
            n
        )));
    }
    let count = set.staged.len();
    if count == 0 && set.removals.is_empty() {
        return Ok(0);
    }
    // A rename that must fail (a directory made at an output's path
    // since it was checked) is found before the first rename, so the set
    // is dropped whole rather than committed in part.
    if let Some(s) = set
        .staged
        .iter()
        .find(|s| fs::symlink_metadata(&s.path).is_ok_and(|m| m.is_dir()))
    {
        return Err(io::Error::other(format!(
            "{} is a directory now, so none of this run's outputs replaced its previous file",
            s.path.display()
        )));
    }
    if !cleanup::begin_commit() {
        // A signal is ending the process; dropping the set removes the
        // temporaries.
        return Err(io::Error::other(
            "interrupted before the outputs were committed",
        ));
    }
    let pause = test_pause();
    let mut dirs = Vec::new();
    let mut result = Ok(count);
    for (i, staged) in set.staged.into_iter().enumerate() {
        if let (Some(pause), true) = (pause, i > 0) {
            // Test hook: a signal aimed between two renames must wait for
            // the last one.
            std::thread::sleep(pause);
        }
        let dir = directory_of(&staged.path);
        if let Err(e) = staged.tmp.persist(&staged.path) {
            result = Err(without_temporary(e.error));
            break;
        }
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    if result.is_ok() {
        for path in &set.removals {
            match fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    result = Err(e);
                    break;
                }
                _ => {}
            }
        }
    }
    for dir in dirs {
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
    }
    cleanup::end_commit();
    result
}

/// The length `path` will have once the open set is committed (its staged
/// contents), else its length on disk; `None` when neither exists.
pub fn output_len(path: &Path) -> Option<u64> {
    if let Some(set) = lock_set().as_ref() {
        if let Some(s) = set.staged.iter().rev().find(|s| s.path == path) {
            return Some(s.len);
        }
    }
    fs::metadata(path).ok().map(|m| m.len())
}

fn write_atomic_inner(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = directory_of(path);
    let (mut tmp, pending) = temporary_in(&dir, path)?;
    let pause = test_pause();
    let half = if pause.is_some() {
        contents.len() / 2
    } else {
        contents.len()
    };
    let (head, tail) = contents.split_at(half);
    tmp.as_file_mut().write_all(head)?;
    if let Some(pause) = pause {
        tmp.as_file_mut().flush()?;
        std::thread::sleep(pause);
    }
    tmp.as_file_mut().write_all(tail)?;
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
    if let Some(pause) = pause {
        std::thread::sleep(pause);
    }
    if let Some(set) = lock_set().as_mut() {
        // A second write to one path in a run replaces the first.
        set.staged.retain(|s| s.path != path);
        set.staged.push(Staged {
            path: path.to_path_buf(),
            tmp,
            len: contents.len() as u64,
            _pending: pending,
        });
        return Ok(());
    }
    tmp.persist(path).map_err(|e| e.error)?;
    drop(pending);
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
        let e = without_temporary(e);
        match kind {
            OutputKind::Directory => not_writable(path, format!("cannot create a file in it: {e}")),
            OutputKind::File => not_writable(
                path,
                format!("cannot create a file in {}: {e}", dir.display()),
            ),
        }
    })
}

/// [`check_writable`] for a directory.
pub fn check_writable_dir(path: &Path) -> io::Result<()> {
    check_writable(path, OutputKind::Directory)
}
