//! A batch's images: `--image` given once per image, or `--images DIR`
//! (its PNG/JPEG files sorted by name), each preprocessed by the model's
//! image processor and stacked into `[N, 3, H, W]` in that order.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::input::processor::ImageProcessor;
use crate::input::PixelValues;

/// The image files a run reads, in batch order: every `--image` as given,
/// else `--images DIR`'s images sorted by file name (saying which were
/// taken). Empty when neither flag is given.
pub fn image_paths(image: &[PathBuf], images: Option<&Path>) -> Result<Vec<PathBuf>> {
    let Some(dir) = images else {
        return Ok(image.to_vec());
    };
    let meta = std::fs::metadata(dir).with_context(|| format!("--images {}", dir.display()))?;
    if !meta.is_dir() {
        crate::usage_bail!(
            "--images {}: not a directory (give one image with --image)",
            dir.display()
        );
    }
    let mut found = Vec::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("--images {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("--images {}", dir.display()))?;
        let path = entry.path();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && has_image_extension(&path) {
            found.push(path);
        }
    }
    // By name, bytewise: the same order on every machine and locale.
    found.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    if found.is_empty() {
        anyhow::bail!(
            "--images {}: no .png, .jpg or .jpeg file in the directory",
            dir.display()
        );
    }
    let names: Vec<String> = found
        .iter()
        .map(|p| {
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        })
        .collect();
    crate::say!(
        "images: {} from {} in name order: {}",
        found.len(),
        dir.display(),
        shorten(&names)
    );
    Ok(found)
}

/// `a, b, c` — or the first and last few with a count between them.
fn shorten(names: &[String]) -> String {
    const KEEP: usize = 4;
    if names.len() <= 2 * KEEP {
        return names.join(", ");
    }
    format!(
        "{}, … ({} more) …, {}",
        names[..KEEP].join(", "),
        names.len() - 2 * KEEP,
        names[names.len() - KEEP..].join(", ")
    )
}

fn has_image_extension(path: &Path) -> bool {
    path.extension().is_some_and(|e| {
        let e = e.to_ascii_lowercase();
        e == "png" || e == "jpg" || e == "jpeg"
    })
}

/// Every image through `processor`, stacked as `[N, 3, size, size]` in
/// the order given.
pub fn stack(
    paths: &[PathBuf],
    processor: &ImageProcessor,
    size: usize,
    patch: usize,
) -> Result<PixelValues> {
    let mut data = Vec::with_capacity(paths.len() * 3 * size * size);
    for path in paths {
        let one = PixelValues::from_image_with(path, processor, size, patch)?;
        data.extend_from_slice(&one.data);
    }
    Ok(PixelValues {
        shape: [paths.len(), 3, size, size],
        data,
    })
}

/// The usage error for `given` images (by `what`) against a batch of
/// `batch` (by `whose`).
pub fn count_mismatch(what: &str, given: usize, whose: &str, batch: usize) -> anyhow::Error {
    anyhow::Error::new(crate::exit::UsageError(format!(
        "{what} gives {given} image{} but {whose} is {batch}",
        if given == 1 { "" } else { "s" }
    )))
}
