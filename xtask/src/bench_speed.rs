//! `cargo xtask bench speed` (#42): the release `ipuc` on one model stage
//! by stage — compile, one inference (`exec`, no validation), the
//! device-numerics reference, the FP32 reference and the whole validated
//! run (`run --reference-run --reference-fp32`) — each with its wall time,
//! CPU time (user + system of the child and all its threads, from `wait4`)
//! and peak RSS (`ru_maxrss`).
//!
//! Wall time on a shared machine says little, so a fixed CPU workload (a
//! deterministic integer/float loop, [`fixed_workload`]) is timed in the
//! same run, before and after the stages; each stage's CPU time is also
//! given in units of it, which compares machines (and loads) as a ratio.
//! The package digest and the simulated cycles are printed so a speed
//! change can show it changed nothing else. With `perf` on the PATH
//! (Debian `linux-perf`) one more validated run is recorded at 199 Hz and
//! `perf report`'s top entries printed (`--no-perf` skips it).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// What `bench speed` was told.
pub struct Options {
    pub workload: String,
    pub layers: usize,
    pub ipuc: Option<PathBuf>,
    pub no_perf: bool,
    /// Skip the validated run (the longest stage) and the profile.
    pub skip_run: bool,
    /// Extra flags for every model-building stage (after `--`).
    pub extra: Vec<String>,
}

/// One stage's child process, measured.
struct Measured {
    name: &'static str,
    ok: bool,
    wall: f64,
    user: f64,
    sys: f64,
    peak_rss_kib: u64,
    /// The `result:` line (or the last line of the log on failure).
    result: String,
    digest: Option<String>,
    cycles: Option<u64>,
}

/// The input image sizes of the presets (`host/src/model/config.rs`).
fn image_size(workload: &str) -> Result<usize> {
    Ok(match workload {
        "siglip-so400m" => 378,
        "siglip-small" => 28,
        "clip-vit-l14-336" => 336,
        "vit-b16-224" | "dinov2-l14-224" => 224,
        other => bail!("bench speed: no image size known for workload {other:?}"),
    })
}

/// `pixel_values.npy` (1×3×S×S float32, deterministic values in [−1, 1)),
/// so every stage computes on the same input.
fn write_input(path: &Path, size: usize) -> Result<()> {
    let mut header =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, {size}, {size}), }}");
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..3 * size * size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let unit = (state >> 40) as f32 / (1u64 << 24) as f32;
        bytes.extend_from_slice(&(2.0 * unit - 1.0).to_le_bytes());
    }
    crate::atomic::write(path, bytes)
}

/// The fixed CPU workload: a dependent xorshift/multiply/float chain of a
/// fixed length, single-threaded. Returns (CPU seconds of this thread,
/// wall seconds, checksum).
pub fn fixed_workload() -> (f64, f64, u64) {
    let cpu0 = thread_cpu_seconds();
    let wall0 = Instant::now();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut acc = 1.0f64;
    let mut sum = 0u64;
    for i in 0..400_000_000u64 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        sum = sum.wrapping_add(state.wrapping_mul(i | 1));
        if i & 15 == 0 {
            acc = (acc * 1.000_000_1 + (state >> 11) as f64 * 1e-19).fract() + 1.0;
        }
    }
    let sum = std::hint::black_box(sum ^ acc.to_bits());
    (
        thread_cpu_seconds() - cpu0,
        wall0.elapsed().as_secs_f64(),
        sum,
    )
}

fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs `program args` with stdout+stderr in `log`, waits with `wait4` and
/// returns its measurements.
fn measure(name: &'static str, program: &Path, args: &[String], log: &Path) -> Result<Measured> {
    eprintln!(
        "xtask bench speed: {name}: {} {} (log: {})",
        program.display(),
        args.join(" "),
        log.display()
    );
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = file.try_clone()?;
    let started = Instant::now();
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let (status, usage) = wait4(child.id() as libc::pid_t)?;
    let wall = started.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let result = text
        .lines()
        .rev()
        .find(|l| l.starts_with("result:"))
        .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .to_string();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let ok = status.success();
    if !ok {
        eprintln!("xtask bench speed: {name} failed ({status}): {result}");
    }
    Ok(Measured {
        name,
        ok,
        wall,
        user: tv(usage.ru_utime),
        sys: tv(usage.ru_stime),
        peak_rss_kib: usage.ru_maxrss as u64,
        digest: digest(&text),
        cycles: cycles(&text),
        result,
    })
}

fn wait4(pid: libc::pid_t) -> Result<(std::process::ExitStatus, libc::rusage)> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid out-pointers; `pid` is our own unreaped child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((std::process::ExitStatus::from_raw(status), usage));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("wait4");
        }
    }
}

/// The last `package <16 hex>` in a log.
fn digest(text: &str) -> Option<String> {
    text.rmatch_indices("package ").find_map(|(at, w)| {
        let hex: String = text[at + w.len()..].chars().take(17).collect();
        let h = hex.get(..16)?;
        let ends = hex[16..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        (h.chars().all(|c| c.is_ascii_hexdigit()) && ends).then(|| h.to_string())
    })
}

/// The last `N simulated cycles` figure of a `result:` line.
fn cycles(text: &str) -> Option<u64> {
    let line = text.lines().rev().find(|l| l.starts_with("result:"))?;
    let at = line.find(" simulated cycles")?;
    line[..at]
        .split_whitespace()
        .last()?
        .replace([',', '_'], "")
        .parse()
        .ok()
}

/// `cargo xtask bench speed`.
pub fn bench_speed(root: &Path, out: &Path, opts: &Options) -> Result<()> {
    let ipuc = match &opts.ipuc {
        Some(p) => p.clone(),
        None => crate::sweep::release_ipuc(root)?,
    };
    std::fs::create_dir_all(out)?;
    let input = out.join("pixel_values.npy");
    write_input(&input, image_size(&opts.workload)?)?;
    let s = |x: &str| x.to_string();
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut model = vec![
        s("--workload"),
        opts.workload.clone(),
        s("--vit-layers"),
        opts.layers.to_string(),
        s("--fuse-qkv"),
        s("--fp8-scale"),
        s("-4"),
    ];
    model.extend(opts.extra.iter().cloned());
    let package = out.join("model.ipuc");
    let with = |head: &[&str], tail: &[String]| -> Vec<String> {
        head.iter()
            .map(|h| s(h))
            .chain(tail.iter().cloned())
            .collect()
    };

    let before = fixed_workload();
    eprintln!(
        "xtask bench speed: fixed workload {:.2} s CPU, {:.2} s wall",
        before.0, before.1
    );
    let mut stages = Vec::new();
    let compile = with(&["compile", "-v"], &model)
        .into_iter()
        .chain([s("--package"), path(&package)])
        .collect::<Vec<_>>();
    stages.push(measure(
        "compile",
        &ipuc,
        &compile,
        &out.join("compile.log"),
    )?);
    let exec = vec![
        s("exec"),
        path(&package),
        s("--input"),
        path(&input),
        s("--summary-json"),
        path(&out.join("exec-summary.json")),
    ];
    stages.push(measure("exec", &ipuc, &exec, &out.join("exec.log"))?);
    for (name, numerics) in [
        ("reference (device)", "device"),
        ("reference (FP32)", "fp32"),
    ] {
        let emb = out.join(format!("embedding-{numerics}.npy"));
        let args = with(&["reference"], &model)
            .into_iter()
            .chain([
                s("--input"),
                path(&input),
                s("--output-embedding"),
                path(&emb),
                s("--numerics"),
                s(numerics),
            ])
            .collect::<Vec<_>>();
        stages.push(measure(
            name,
            &ipuc,
            &args,
            &out.join(format!("reference-{numerics}.log")),
        )?);
    }
    let run = with(&["run", "-v"], &model)
        .into_iter()
        .chain([
            s("--input"),
            path(&input),
            s("--reference-run"),
            s("--reference-fp32"),
        ])
        .collect::<Vec<_>>();
    if !opts.skip_run {
        stages.push(measure("validated run", &ipuc, &run, &out.join("run.log"))?);
    }
    let after = fixed_workload();
    print_table(opts, &stages, before, after);
    if opts.no_perf || opts.skip_run {
        println!("profile: skipped (--no-perf or --skip-run)");
    } else {
        profile(&ipuc, &run, out)?;
    }
    if stages.iter().any(|m| !m.ok) {
        bail!(
            "bench speed: a stage failed (see its log in {})",
            out.display()
        );
    }
    Ok(())
}

fn print_table(
    opts: &Options,
    stages: &[Measured],
    before: (f64, f64, u64),
    after: (f64, f64, u64),
) {
    let unit = (before.0 + after.0) / 2.0;
    println!(
        "bench speed: {} {} layers, fused QKV, FP8 -4{}",
        opts.workload,
        opts.layers,
        if opts.extra.is_empty() {
            String::new()
        } else {
            format!(", with {}", opts.extra.join(" "))
        }
    );
    println!(
        "fixed CPU workload: {:.2} s CPU / {:.2} s wall before, {:.2} s CPU / {:.2} s wall after (checksum {:x}); 1 unit = {:.2} CPU s",
        before.0, before.1, after.0, after.1, before.2, unit
    );
    println!("| Stage | Result | Wall s | CPU s (user+sys) | CPU / workload | Peak RSS GiB | Package | Simulated cycles |");
    println!("|---|---|---:|---:|---:|---:|---|---:|");
    for m in stages {
        let cpu = m.user + m.sys;
        println!(
            "| {} | {} | {:.1} | {:.1} ({:.1}+{:.1}) | {:.2} | {:.2} | {} | {} |",
            m.name,
            if m.ok { "ok" } else { "FAILED" },
            m.wall,
            cpu,
            m.user,
            m.sys,
            cpu / unit,
            m.peak_rss_kib as f64 / (1024.0 * 1024.0),
            m.digest.as_deref().unwrap_or("—"),
            m.cycles.map_or_else(|| "—".to_string(), group),
        );
    }
    for m in stages {
        println!("{}: {}", m.name, m.result);
    }
    println!("Wall times on a shared machine are noisy: compare CPU time and the CPU / workload ratio. Cycles are simulated.");
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `perf record` of one validated run and `perf report`'s top entries, or
/// a line saying why not.
fn profile(ipuc: &Path, run: &[String], out: &Path) -> Result<()> {
    let perf_ok = Command::new("perf")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !perf_ok {
        println!("profile: skipped (no `perf` on the PATH; Debian: apt-get install linux-perf)");
        return Ok(());
    }
    let data = out.join("perf.data");
    let mut args = vec![
        "record".to_string(),
        "-F".into(),
        "199".into(),
        "-o".into(),
        data.to_string_lossy().into_owned(),
        "--".into(),
        ipuc.to_string_lossy().into_owned(),
    ];
    args.extend(run.iter().cloned());
    let m = measure(
        "perf record",
        Path::new("perf"),
        &args,
        &out.join("perf-record.log"),
    )?;
    if !m.ok {
        println!(
            "profile: perf record failed (see {}): {}",
            out.join("perf-record.log").display(),
            m.result
        );
        return Ok(());
    }
    let report = Command::new("perf")
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--percent-limit",
            "0.7",
        ])
        .args(["--sort", "symbol", "-i"])
        .arg(&data)
        .stderr(Stdio::null())
        .output()
        .context("perf report")?;
    let text = String::from_utf8_lossy(&report.stdout);
    crate::atomic::write(&out.join("perf-report.txt"), text.as_bytes())?;
    println!("profile of the validated run (perf record -F 199, self time, top entries):");
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .take(25)
    {
        println!("  {}", line.trim());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_and_cycles_are_read_from_the_result_line() {
        let log = "compile: ok\nresult: PASS siglip-small, 935281 simulated cycles, package 677ec940c852c6cc\n";
        assert_eq!(digest(log).as_deref(), Some("677ec940c852c6cc"));
        assert_eq!(cycles(log), Some(935_281));
        assert_eq!(digest("package model.ipuc"), None);
        assert_eq!(group(12_763_670), "12,763,670");
    }
}
