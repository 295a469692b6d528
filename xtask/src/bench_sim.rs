//! `cargo xtask bench sim`: the simulator's speed on packages.
//!
//! Runs the release `ipuc exec PACKAGE …` `--repeat` times per case and
//! prints, per case, the medians of the inference's wall and CPU time
//! (user + system of all the simulator's threads, as `ipuc` reports it —
//! what a shared machine can still measure) with the simulated words moved,
//! simulated words per second of wall and of CPU, and the simulated cycles
//! (which must be the same on every run). Without cases, the full-width
//! So400m models (width 1152, MLP 4304, 16 heads, fused QKV, FP8 −4) at
//! 56×56 and 112×112 pixels and 2 layers are compiled once into the output
//! directory and run. Cases after `--`: each `FILE.ipuc` starts one, the
//! flags after it are its `ipuc exec` flags (e.g. `-- so400m-1.ipuc
//! --workload siglip-so400m --fuse-qkv --fp8-scale -4 --vit-layers 1`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// One package and the flags `ipuc exec` needs for it.
struct Case {
    name: String,
    package: PathBuf,
    flags: Vec<String>,
}

/// What one run printed about its inference.
struct Measured {
    wall: f64,
    cpu: Option<f64>,
    cycles: u64,
    words: u64,
}

/// The full-width So400m flags at `image` pixels and `layers` layers.
fn width_flags(image: u32, layers: u32) -> Vec<String> {
    [
        "--workload",
        "siglip-so400m",
        "--image-size",
        &image.to_string(),
        "--vit-layers",
        &layers.to_string(),
        "--fuse-qkv",
        "--fp8-scale",
        "-4",
    ]
    .map(String::from)
    .to_vec()
}

fn cases(ipuc: &Path, out: &Path, extra: &[String]) -> Result<Vec<Case>> {
    let mut cases: Vec<Case> = Vec::new();
    for arg in extra {
        if arg.ends_with(".ipuc") {
            let package = PathBuf::from(arg);
            cases.push(Case {
                name: package
                    .file_stem()
                    .map_or_else(|| arg.clone(), |s| s.to_string_lossy().into_owned()),
                package,
                flags: Vec::new(),
            });
        } else if let Some(c) = cases.last_mut() {
            c.flags.push(arg.clone());
        } else {
            bail!("`{arg}` before any FILE.ipuc (cases are `FILE.ipuc FLAGS…`)");
        }
    }
    if !cases.is_empty() {
        return Ok(cases);
    }
    for image in [56, 112] {
        let name = format!("so400m-width-{image}px-2-layers");
        let package = out.join(format!("{name}.ipuc"));
        let flags = width_flags(image, 2);
        if !package.exists() {
            eprintln!("xtask bench sim: compiling {}", package.display());
            let status = Command::new(ipuc)
                .arg("compile")
                .args(&flags)
                .arg("--package")
                .arg(&package)
                .status()
                .context("running ipuc compile")?;
            if !status.success() {
                bail!("ipuc compile for {name} failed ({status})");
            }
        }
        cases.push(Case {
            name,
            package,
            flags,
        });
    }
    Ok(cases)
}

/// The `device: inference … in N ms: C simulated cycles, S supersteps, W
/// words moved, X s CPU …` line of `ipuc exec`.
fn parse(text: &str) -> Option<Measured> {
    let line = text
        .lines()
        .find(|l| l.contains("device: inference") && l.contains("words moved"))?;
    let number = |s: &str| s.replace(',', "").trim().parse::<f64>().ok();
    let ms = line.split(" in ").nth(1)?.split(" ms").next()?;
    let after = line.split(" ms: ").nth(1)?;
    let cycles = after.split(" simulated cycles").next()?;
    let words = after
        .split("supersteps, ")
        .nth(1)?
        .split(" words moved")
        .next()?;
    let cpu = after
        .split("words moved, ")
        .nth(1)
        .and_then(|s| s.split(" s CPU").next())
        .and_then(number);
    Some(Measured {
        wall: number(ms)? / 1e3,
        cpu,
        cycles: number(cycles)? as u64,
        words: number(words)? as u64,
    })
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

pub fn bench_sim(root: &Path, out: &Path, repeat: usize, extra: &[String]) -> Result<()> {
    crate::cargo(root, &crate::BUILD_IPUC_RELEASE)?;
    let ipuc = root.join("target/release/ipuc");
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let cases = cases(&ipuc, out, extra)?;
    let mut rows = Vec::new();
    for case in &cases {
        let mut runs = Vec::new();
        for run in 0..repeat.max(1) {
            eprintln!(
                "xtask bench sim ({}/{}): ipuc exec {} {}",
                run + 1,
                repeat.max(1),
                case.package.display(),
                case.flags.join(" ")
            );
            let output = Command::new("nice")
                .args(["-n", "10"])
                .arg(&ipuc)
                .arg("exec")
                // `device: inference …` lines are `-v` diagnostics.
                .arg("-v")
                .arg(&case.package)
                .args(&case.flags)
                .output()
                .context("running ipuc exec")?;
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            crate::atomic::write(&out.join(format!("{}.{run}.log", case.name)), &text)?;
            if !output.status.success() {
                bail!("{}: ipuc exec failed ({})", case.name, output.status);
            }
            let m = parse(&text)
                .with_context(|| format!("{}: no inference line in the output", case.name))?;
            if let Some(first) = runs.first() {
                let first: &Measured = first;
                if (first.cycles, first.words) != (m.cycles, m.words) {
                    bail!(
                        "{}: run {run} simulated {} cycles and {} words, run 0 {} and {}",
                        case.name,
                        m.cycles,
                        m.words,
                        first.cycles,
                        first.words
                    );
                }
            }
            runs.push(m);
        }
        rows.push((case, runs));
    }
    println!(
        "| case | runs | simulated cycles | words moved | inference wall s (median) | CPU s (median) | M words/s wall | M words per CPU s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (case, runs) in &rows {
        let wall = median(runs.iter().map(|m| m.wall).collect()).unwrap_or(f64::NAN);
        let cpu = median(runs.iter().filter_map(|m| m.cpu).collect());
        let words = runs[0].words as f64;
        println!(
            "| {} | {} | {} | {} | {:.2} | {} | {:.1} | {} |",
            case.name,
            runs.len(),
            runs[0].cycles,
            runs[0].words,
            wall,
            cpu.map_or("—".into(), |c| format!("{c:.2}")),
            words / 1e6 / wall,
            cpu.map_or("—".into(), |c| format!("{:.1}", words / 1e6 / c))
        );
    }
    println!(
        "(simulated words moved by the exchange fabric; wall and CPU are the simulator's, on this machine, for one inference after the package is loaded)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_inference_line() {
        let m = parse("x\ndevice: inference 1 of 1 in 16,837 ms: 1,514,034 simulated cycles, 69 supersteps, 263,719,946 words moved, 8.12 s CPU (user + system, all threads; 32.5 M words per CPU second)\n").unwrap();
        assert_eq!((m.cycles, m.words), (1_514_034, 263_719_946));
        assert!((m.wall - 16.837).abs() < 1e-9);
        assert_eq!(m.cpu, Some(8.12));
        let old = parse("device: inference 1 of 1 in 7031 ms: 873,757 simulated cycles, 51 supersteps, 154,899,322 words moved\n").unwrap();
        assert_eq!((old.words, old.cpu), (154_899_322, None));
        assert!(parse("device: package loaded").is_none());
    }
}
