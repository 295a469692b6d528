//! Reading a package file with bounded memory: its size is checked against
//! [`Limit::PACKAGE`] and its section headers are walked with 12-byte reads
//! before the file is read whole, so a file whose declared section lengths
//! do not add up to its size is refused in milliseconds. The bytes read are
//! then validated by `ipuc_target::package::read` (digest first).

use std::io::{self, Read};
use std::path::Path;

use ipuc_target::package::{Section, DIGEST_BYTES, MAGIC};

use super::error::FsError;
use super::limits::Limit;
use super::read::{open_regular, read_rest, within_limit};

/// Bytes of the header (magic, version, reserved) and of a section header
/// (tag u32, length u64); see `ipuc_target::package`'s format notes.
const HEADER_BYTES: u64 = 12;
const SECTION_HEADER_BYTES: u64 = 12;
/// Sections in a package of this format version.
const SECTIONS: usize = Section::ALL.len();

fn layout(path: &Path, why: String) -> io::Error {
    FsError::PackageLayout {
        path: path.to_path_buf(),
        why,
    }
    .into()
}

/// Files up to this size are read whole without the layout walk, so the
/// reader's own errors (magic, then digest, then each section) describe
/// them; the walk bounds the time and memory spent on larger ones.
const READ_WHOLE_BYTES: u64 = 64 << 20;

/// Reads the package file at `path` after checking its layout (above).
pub fn read_package(path: &Path) -> io::Result<Vec<u8>> {
    read_package_walking_above(path, READ_WHOLE_BYTES)
}

/// [`read_package`] with the size above which the layout is walked first.
pub(super) fn read_package_walking_above(path: &Path, read_whole: u64) -> io::Result<Vec<u8>> {
    let (mut file, size) = open_regular(path)?;
    within_limit(path, size, Limit::PACKAGE)?;
    if size <= read_whole {
        drop(file);
        return super::read_bounded(path, Limit::PACKAGE);
    }
    let body_end = size.saturating_sub(DIGEST_BYTES as u64);
    let mut header = [0u8; HEADER_BYTES as usize];
    if size < HEADER_BYTES + DIGEST_BYTES as u64 {
        return Err(layout(
            path,
            format!("{size} bytes, shorter than a package's header and digest"),
        ));
    }
    file.read_exact(&mut header)?;
    if header[..MAGIC.len()] != MAGIC {
        return Err(layout(
            path,
            "not an ipuc package (no IPUCPKG magic in its first 8 bytes)".into(),
        ));
    }
    let mut offset = HEADER_BYTES;
    for section in 1..=SECTIONS {
        let mut h = [0u8; SECTION_HEADER_BYTES as usize];
        if offset + SECTION_HEADER_BYTES > body_end {
            return Err(layout(
                path,
                format!("section {section} would start at byte {offset}, past the end of the sections ({body_end})"),
            ));
        }
        read_at(&mut file, offset, &mut h)?;
        let declared = u64::from_le_bytes(h[4..].try_into().expect("8 bytes"));
        offset = offset
            .checked_add(SECTION_HEADER_BYTES)
            .and_then(|o| o.checked_add(declared))
            .filter(|&end| end <= body_end)
            .ok_or_else(|| {
                layout(
                    path,
                    format!(
                        "section {section} declares {declared} bytes, more than the file's {size} bytes hold"
                    ),
                )
            })?;
    }
    if offset != body_end {
        return Err(layout(
            path,
            format!(
                "the sections end at byte {offset} but the file has {size} bytes ({} before its digest)",
                body_end
            ),
        ));
    }
    std::io::Seek::rewind(&mut file)?;
    read_rest(&mut file, path, size)
}

fn read_at(file: &mut std::fs::File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(offset))?;
    file.read_exact(buf)
}
