//! `cargo xtask bench compile`: full-size compiles, timed per stage.
//!
//! Compiles So400m (fused QKV, FP8 −4) at 1, 2 and 27 layers and
//! `siglip-small` at 27 layers with the release `ipuc compile`, and prints
//! per-stage wall times (as `ipuc compile` reports them), peak RSS (the
//! child's `VmHWM`, sampled while it runs), exchange phases, stored rows and
//! events against the lower bound, with the seeds' figures beside ours.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// One compile of the benchmark.
struct Case {
    workload: &'static str,
    layers: u32,
    so400m_flags: bool,
}

const CASES: [Case; 4] = [
    Case {
        workload: "siglip-so400m",
        layers: 1,
        so400m_flags: true,
    },
    Case {
        workload: "siglip-so400m",
        layers: 2,
        so400m_flags: true,
    },
    Case {
        workload: "siglip-so400m",
        layers: 27,
        so400m_flags: true,
    },
    Case {
        workload: "siglip-small",
        layers: 27,
        so400m_flags: false,
    },
];

/// What one compile printed and used.
struct Measured {
    ok: bool,
    wall: f64,
    peak_rss_kib: u64,
    /// `planning: … N ms` and `stages: …` of `ipuc compile`'s report.
    planning: String,
    stages: String,
    exchange: String,
    error: String,
}

pub fn bench_compile(root: &Path, out: &Path, timeout_minutes: u64) -> Result<()> {
    crate::cargo(root, &["build", "--release", "-q", "-p", "ipuc"])?;
    let ipuc = root.join("target/release/ipuc");
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut rows = Vec::new();
    for case in &CASES {
        let name = format!("{}-{}", case.workload, case.layers);
        let package = out.join(format!("{name}.ipuc"));
        let mut args = vec![
            "compile".to_string(),
            "--workload".into(),
            case.workload.into(),
            "--vit-layers".into(),
            case.layers.to_string(),
            "--package".into(),
            package.display().to_string(),
        ];
        if case.so400m_flags {
            args.extend(["--fuse-qkv", "--fp8-scale", "-4"].map(String::from));
        }
        eprintln!("xtask bench compile: ipuc {}", args.join(" "));
        let log = out.join(format!("{name}.log"));
        let m = measure(
            &ipuc,
            &args,
            &log,
            Duration::from_secs(timeout_minutes * 60),
        )?;
        rows.push((name, m));
    }
    println!("| compile | result | wall s | peak RSS | planning | stages | exchange |");
    println!("|---|---|---:|---:|---|---|---|");
    for (name, m) in &rows {
        println!(
            "| {name} | {} | {:.1} | {:.2} GiB | {} | {} | {} |",
            if m.ok { "ok" } else { m.error.as_str() },
            m.wall,
            m.peak_rss_kib as f64 / (1024.0 * 1024.0),
            m.planning,
            m.stages,
            m.exchange
        );
    }
    println!(
        "targets (2 cores): So400m 1 layer ≤ 15 s, 27 layers ≤ 60 s (goal 10 s), peak RSS ≤ 8 GiB.\n\
         seeds (larger host, 8–32 threads): 415 s high-level planning for 2 layers at beam 64; 521 s total."
    );
    Ok(())
}

/// Runs `ipuc args`, output to `log`, sampling the child's peak RSS.
fn measure(ipuc: &Path, args: &[String], log: &Path, timeout: Duration) -> Result<Measured> {
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = file.try_clone()?;
    let mut child = Command::new(ipuc)
        .args(args)
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .spawn()
        .context("starting ipuc")?;
    let started = Instant::now();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let mut stopped = None;
    let status = loop {
        // VmHWM is the high-water mark, so the last sample before exit is
        // the peak up to the final sampling interval.
        if let Ok(s) = std::fs::read_to_string(&status_file) {
            if let Some(kib) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
        }
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > timeout {
            child.kill().ok();
            child.wait().ok();
            stopped = Some(format!("stopped after {} min", timeout.as_secs() / 60));
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let wall = started.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|l| l.trim().to_string())
            .unwrap_or_else(|| "—".into())
    };
    let ok = status.is_some_and(|s| s.success());
    let error = stopped.unwrap_or_else(|| {
        text.lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("failed")
            .chars()
            .take(160)
            .collect()
    });
    Ok(Measured {
        ok,
        wall,
        peak_rss_kib: peak,
        planning: line("planning:"),
        stages: line("stages:"),
        exchange: line("exchange:"),
        error,
    })
}
