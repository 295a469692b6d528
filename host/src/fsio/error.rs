//! The typed errors of bounded reads and atomic writes.

use std::io;
use std::path::PathBuf;

/// Why a file could not be read or written safely. Carried inside an
/// `io::Error` (see the module docs). Like the OS's own errors, `Display`
/// leaves the path out: every caller says which file it was reading or
/// writing, so the path appears once in the message.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The input is a FIFO, device, directory or socket: reading it could
    /// block forever or never end.
    #[error("is {what}, not a regular file")]
    NotRegular { path: PathBuf, what: &'static str },
    /// The file is larger than anything the tool could use.
    #[error("{size} bytes, more than the {limit} bytes {why}")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
        why: &'static str,
    },
    /// The file grew while it was read (bounded by the limit all the same).
    #[error("changed size while being read (metadata said {expected} bytes)")]
    Changed { path: PathBuf, expected: u64 },
    /// A package file whose section headers do not add up to its size.
    #[error("not a valid ipuc package: {why}")]
    PackageLayout { path: PathBuf, why: String },
    /// The output location cannot take a file (its directory is missing and
    /// cannot be made, is read-only, or the path is a directory).
    #[error("{why}")]
    NotWritable { path: PathBuf, why: String },
}

impl From<FsError> for io::Error {
    fn from(e: FsError) -> io::Error {
        let kind = match e {
            FsError::NotRegular { .. } | FsError::TooLarge { .. } => io::ErrorKind::InvalidInput,
            FsError::Changed { .. } | FsError::PackageLayout { .. } => io::ErrorKind::InvalidData,
            FsError::NotWritable { .. } => io::ErrorKind::PermissionDenied,
        };
        io::Error::new(kind, e)
    }
}

/// What a non-regular file is, in words.
pub fn file_kind(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "neither a regular file nor a directory"
    }
}
