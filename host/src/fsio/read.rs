//! Bounded reads of regular files.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

use super::error::{file_kind, FsError};
use super::limits::Limit;

/// Opens `path` for reading and returns it with its size, if it is a
/// regular file (symlinks followed). Opened non-blocking, so a FIFO is
/// reported instead of waiting forever for a writer; the flag changes
/// nothing for a regular file.
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(FsError::NotRegular {
            path: path.to_path_buf(),
            what: file_kind(meta.file_type()),
        }
        .into());
    }
    Ok((file, meta.len()))
}

/// Reads a whole regular file of at most `limit` bytes (checked from its
/// metadata before reading, and again while reading, so a file that grows
/// meanwhile cannot make the read unbounded).
pub fn read_bounded(path: &Path, limit: Limit) -> io::Result<Vec<u8>> {
    let (mut file, size) = open_regular(path)?;
    within_limit(path, size, limit)?;
    read_rest(&mut file, path, size)
}

/// A file of `size` bytes at `path` is [`FsError::TooLarge`] above `limit`.
pub(super) fn within_limit(path: &Path, size: u64, limit: Limit) -> io::Result<()> {
    if size > limit.bytes {
        return Err(FsError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit: limit.bytes,
            why: limit.why,
        }
        .into());
    }
    Ok(())
}

/// The rest of `file` (at `path`), which its metadata said is `size`
/// bytes from here: a file that grew or shrank since is
/// [`FsError::Changed`], so the read stays bounded.
pub(super) fn read_rest(file: &mut File, path: &Path, size: u64) -> io::Result<Vec<u8>> {
    // `size` ≤ the caller's limit, which is far below usize::MAX on 64-bit
    // hosts.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(size.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != size {
        return Err(FsError::Changed {
            path: path.to_path_buf(),
            expected: size,
        }
        .into());
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_string_bounded(path: &Path, limit: Limit) -> io::Result<String> {
    String::from_utf8(read_bounded(path, limit)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}
