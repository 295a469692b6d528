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

/// Widest planner beam (`--planning-beam-width`). Every state of the beam
/// carries its own per-tile memory profile over the chip's 1472 tiles, and
/// the beam holds its states and their successors at once: a state costs
/// about 1.3 MB at 1472 tiles (siglip-small, 2 layers: 0.6 GB peak at
/// width 256, 1.4 GB at 1024), so 1024 — 16× the default — keeps a
/// compile within a couple of GB, where 10,000 climbed past 7.6 GB and
/// aborted.
pub const MAX_BEAM_WIDTH: usize = 1024;

/// Most local-improvement passes (`--optimization-steps`): each re-plans
/// every op once, and the search stops at the first pass that improves
/// nothing, so real plans settle within a few; more would only let a
/// typo keep a compile busy.
pub const MAX_OPTIMIZATION_STEPS: u32 = 1000;

/// `--planning-beam-width`: `1..=`[`MAX_BEAM_WIDTH`].
pub fn beam_width(s: &str) -> Result<usize, String> {
    let v: usize = s
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number (allowed: 1..={MAX_BEAM_WIDTH})"))?;
    if v == 0 {
        return Err(format!("0 is out of range (allowed: 1..={MAX_BEAM_WIDTH})"));
    }
    if v > MAX_BEAM_WIDTH {
        return Err(format!(
            "{v} is out of range (allowed: 1..={MAX_BEAM_WIDTH}: each beam state holds a per-tile memory profile of the chip, about 1.3 MB)"
        ));
    }
    Ok(v)
}

/// A validation tolerance: finite and ≥ 0 (`inf` or NaN would pass every
/// result, a negative one none). Judged as written (in f64), before the
/// f32 it is used as: `-1e-300` rounds to `-0` in f32, which a check on
/// the f32 would take for zero; `1e39` becomes an f32 infinity. `-0` is
/// zero and accepted.
pub fn tolerance(s: &str) -> Result<f32, String> {
    let allowed = "allowed: finite, 0 or more";
    let wide: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number ({allowed})"))?;
    if wide.is_nan() || wide < 0.0 {
        return Err(format!("{s} is out of range ({allowed})"));
    }
    let v = wide as f32;
    if !v.is_finite() {
        return Err(format!(
            "{s} is out of range ({allowed}, at most {})",
            f32::MAX
        ));
    }
    // `-0` becomes `0`, so no negative sign reaches a report.
    Ok(v.abs())
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
    let max = u32::from(ipuc_target::ipu21::topology::TILE_COUNT);
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

/// Where a write to (or a read of) `path` lands: its directory's device and
/// inode, and the name in it. An output is renamed into place, so a symlink
/// at its path is replaced, not followed (its name is the key); an input is
/// read through its symlinks (its target's name is). Directories are
/// compared by identity, so a bind mount or `a/../a` does not hide a clash.
/// `None` when the location does not exist (an input is then missing, which
/// its own check reports; an output's directory is checked later).
fn file_key(path: &Path, follow: bool) -> Option<(u64, u64, std::ffi::OsString)> {
    use std::os::unix::fs::MetadataExt;
    let resolved = if follow {
        std::fs::canonicalize(path).ok()?
    } else {
        path.to_path_buf()
    };
    let name = resolved.file_name()?.to_os_string();
    let dir = match resolved.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    let meta = std::fs::metadata(dir).ok()?;
    Some((meta.dev(), meta.ino(), name))
}

/// No output is written where an input is read, and no two outputs share a
/// file: the rename at the end of the run would replace the input with
/// the output (exit 0, input gone) or one output with another. A usage
/// error naming both flags, found before any work.
pub fn distinct_files(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<()> {
    let outs: Vec<_> = outputs
        .iter()
        .filter(|(_, p)| *p != Path::new("-"))
        .map(|&(flag, p)| (flag, p, file_key(p, false)))
        .collect();
    for &(in_flag, input) in inputs {
        let Some(key) = file_key(input, true) else {
            continue;
        };
        if let Some((flag, out, _)) = outs.iter().find(|(_, _, k)| k.as_ref() == Some(&key)) {
            crate::usage_bail!(
                "{}: writing the output would destroy the input",
                one_file(flag, out, in_flag, input)
            );
        }
    }
    for (i, (flag_a, a, key_a)) in outs.iter().enumerate() {
        for (flag_b, b, key_b) in &outs[i + 1..] {
            if flag_a != flag_b && key_a.is_some() && key_a == key_b {
                crate::usage_bail!(
                    "{}: one output would replace the other",
                    one_file(flag_a, a, flag_b, b)
                );
            }
        }
    }
    Ok(())
}

/// "`a` and `b` name one file": the path once when both spell it alike
/// (errors name each path once), both spellings when they differ.
fn one_file(flag_a: &str, a: &Path, flag_b: &str, b: &Path) -> String {
    if a == b {
        format!("{flag_a} and {flag_b} both name {}", a.display())
    } else {
        format!(
            "{flag_a} {} and {flag_b} {} are one file",
            a.display(),
            b.display()
        )
    }
}

/// The files a `--checkpoint` names: `config.json`, `model.safetensors`
/// and any `preprocessor_config.json` in a directory, or the weights file
/// itself.
pub fn checkpoint_files(dir: Option<&Path>) -> Vec<std::path::PathBuf> {
    match dir {
        Some(d) if d.is_dir() => {
            let mut files = vec![
                d.join(crate::weights::CONFIG_FILE),
                d.join(crate::weights::WEIGHTS_FILE),
            ];
            let processor = d.join(crate::input::processor::PREPROCESSOR_FILE);
            if processor.exists() {
                files.push(processor);
            }
            files
        }
        Some(f) => vec![f.to_path_buf()],
        None => Vec::new(),
    }
}

/// `--runtime-source F.S`: the runtime text to assemble and link instead of
/// the built-in `device-asm/static_runtime.S` (read now, before any work).
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
        assert_eq!(tolerance("-0"), Ok(0.0));
        assert!(tolerance("-0").unwrap().is_sign_positive());
        for bad in ["inf", "NaN", "-1", "-0.001", "x", "-1e-300", "1e39", "-inf"] {
            assert!(tolerance(bad).is_err(), "{bad}");
        }
        assert!(at_least_one_u32("0").is_err());
        assert_eq!(beam_width("1024"), Ok(1024));
        for bad in ["0", "1025", "10000", "18446744073709551616", "-1"] {
            assert!(beam_width(bad).is_err(), "{bad}");
        }
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
