//! Flag checks made before any work starts: numeric ranges (clap value
//! parsers that name the allowed range) and output paths (their directory
//! must exist, so a long compile does not end in "No such file or
//! directory").

use std::path::Path;

use anyhow::{bail, Context, Result};

/// Most resident inferences one run may ask for (`--reference-inferences`):
/// each is a full simulated inference, so more is never useful.
pub const MAX_INFERENCES: i64 = 10_000;

/// Longest modelled global sync (`--sync-cycles`): far above Poplar's 126
/// bound, and small enough that a run's cycle count cannot wrap a u64.
pub const MAX_SYNC_CYCLES: u64 = 1_000_000;

/// A validation tolerance: finite and ≥ 0 (`inf` or NaN would pass every
/// result, a negative one none).
pub fn tolerance(s: &str) -> Result<f32, String> {
    let v: f32 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number (allowed: finite, 0 or more)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{v} is out of range (allowed: finite, 0 or more)"));
    }
    Ok(v)
}

/// A `usize` of at least 1 (`--planning-beam-width`).
pub fn at_least_one(s: &str) -> Result<usize, String> {
    let v: usize = s
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number (allowed: 1 or more)"))?;
    if v == 0 {
        return Err("0 is out of range (allowed: 1 or more)".into());
    }
    Ok(v)
}

/// A `u32` of at least 1 (`--reference-inferences`, counts of passes).
pub fn at_least_one_u32(s: &str) -> Result<u32, String> {
    let v = at_least_one(s)?;
    u32::try_from(v).map_err(|_| format!("{v} is out of range (allowed: 1..={})", u32::MAX))
}

/// A logical tile count `1..=1472` (`--planning-tiles`).
pub fn tile_count(s: &str) -> Result<u32, String> {
    let max = u32::from(ipuc_core::ipu21::topology::TILE_COUNT);
    let v: u64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number (allowed: 1..={max})"))?;
    if v == 0 || v > u64::from(max) {
        return Err(format!("{v} is out of range (allowed: 1..={max})"));
    }
    Ok(v as u32)
}

/// `path` (given as `flag`) is a file ipuc will write: its directory must
/// exist and take a new file (tried now), and it must not be a directory.
pub fn output_file(flag: &str, path: &Path) -> Result<()> {
    crate::fsio::check_writable(path, crate::fsio::OutputKind::File)
        .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))
}

/// `dir` (given as `flag`) is a directory ipuc writes reports into: it is
/// created now (with its parents) and must take a new file, so a path that
/// cannot be one fails first.
pub fn output_dir(flag: &str, dir: &Path) -> Result<()> {
    crate::fsio::check_writable_dir(dir)
        .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", dir.display()))
}

/// [`output_file`] for a file whose writer makes its directory: the
/// directory is made now (`--summary-json`).
pub fn output_file_making_dir(flag: &str, path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        output_dir(flag, dir)?;
    }
    output_file(flag, path)
}

/// `path` (given as `flag`) is a file ipuc will read: it exists and is a
/// regular file (a FIFO, device or directory is refused now, before it
/// could block or never end).
pub fn input_file(flag: &str, path: &Path) -> Result<()> {
    match crate::fsio::open_regular(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{flag} {}: no such file", path.display())
        }
        Err(e) => bail!("{flag} {}: {e}", path.display()),
    }
}

/// `--runtime-source F.S`: the runtime text to assemble and link instead of
/// the built-in `target-ipu21/device-asm/static_runtime.S` (read now, before any work).
pub fn runtime_source(path: Option<&Path>) -> Result<ipuc_core::runtime::RuntimeSource> {
    let Some(path) = path else {
        return Ok(ipuc_core::runtime::RuntimeSource::builtin());
    };
    input_file("--runtime-source", path)?;
    let text = crate::fsio::read_string_bounded(path, crate::fsio::Limit::ASSEMBLY)
        .with_context(|| format!("--runtime-source {}", path.display()))?;
    Ok(ipuc_core::runtime::RuntimeSource {
        name: path.display().to_string(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_name_what_is_allowed() {
        assert_eq!(at_least_one("3"), Ok(3));
        assert_eq!(
            at_least_one("0").unwrap_err(),
            "0 is out of range (allowed: 1 or more)"
        );
        assert!(at_least_one("-1")
            .unwrap_err()
            .contains("not a whole number"));
        assert_eq!(tile_count("1472"), Ok(1472));
        assert_eq!(
            tile_count("1473").unwrap_err(),
            "1473 is out of range (allowed: 1..=1472)"
        );
        assert!(tile_count("0").is_err());
        assert_eq!(at_least_one_u32("2"), Ok(2));
        assert_eq!(tolerance("0.2"), Ok(0.2));
        assert_eq!(tolerance("0"), Ok(0.0));
        for bad in ["inf", "NaN", "-1", "-0.001", "x"] {
            assert!(tolerance(bad).is_err(), "{bad}");
        }
        assert!(at_least_one_u32("0").is_err());
    }

    #[test]
    fn output_paths_are_checked_before_work() {
        let err = output_file("--package", Path::new("/nonexistent-ipuc-dir/x.ipuc"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--package /nonexistent-ipuc-dir/x.ipuc: directory /nonexistent-ipuc-dir does not exist"
        );
        assert!(output_file("--package", Path::new("x.ipuc")).is_ok());
        assert!(output_file("--package", Path::new("/tmp")).is_err());
        assert!(input_file("--image", Path::new("/nonexistent-ipuc.png")).is_err());
        let err = input_file("--image", Path::new("/dev/zero")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--image /dev/zero: is a character device, not a regular file"
        );
    }
}
