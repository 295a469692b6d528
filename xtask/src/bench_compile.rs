//! `cargo xtask bench compile`: full-size compiles, timed per stage.
//!
//! Compiles So400m (fused QKV, FP8 −4) at 1, 2 and 27 layers and
//! `siglip-small` at 27 layers with the release `ipuc compile`, and prints
//! per-stage wall times (as `ipuc compile` reports them), peak RSS (the
//! child's `VmHWM`, sampled while it runs), exchange phases, stored rows and
//! events against the lower bound, with the seeds' figures beside ours.
//! Each case runs `--repeat` times (the table gives medians: wall, CPU
//! time — user + system of the child, which is what a shared machine can
//! still measure — and the planning, exchange-scheduling and linking stage
//! times); case names after `--` (e.g. `siglip-so400m-1`) pick cases.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ipuc_core::pipeline::Stage;

use crate::process::spawn_logged;

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
    /// User + system seconds of the child (all its threads).
    cpu: f64,
    peak_rss_kib: u64,
    /// `planning: … N ms` and `stages: …` of `ipuc compile`'s report.
    planning: String,
    stages: String,
    exchange: String,
    error: String,
    /// Where a failed compile stopped ([`failed_stage`]).
    failed_stage: &'static str,
    /// Stopped by the benchmark's timeout (not by `ipuc`).
    timed_out: bool,
}

impl Measured {
    /// "rejected at <stage>", or "stopped after N min in <stage>".
    fn outcome(&self) -> String {
        if self.ok {
            "ok".to_string()
        } else if self.timed_out {
            format!("{} in {}", self.error, self.failed_stage)
        } else {
            format!("rejected at {}", self.failed_stage)
        }
    }
}

/// Case names, as given after `--` to pick cases.
fn case_name(case: &Case) -> String {
    format!("{}-{}", case.workload, case.layers)
}

/// Compiles each case (or those in `only`) `repeat` times with the
/// release `ipuc`, stopping a case at its first failure, and prints the
/// medians as a Markdown table.
pub fn bench_compile(
    root: &Path,
    out: &Path,
    timeout_minutes: u64,
    repeat: usize,
    only: &[String],
) -> Result<()> {
    let known: Vec<String> = CASES.iter().map(case_name).collect();
    if let Some(bad) = only.iter().find(|n| !known.contains(n)) {
        anyhow::bail!("unknown case {bad:?} (known: {})", known.join(", "));
    }
    crate::cargo(root, &crate::BUILD_IPUC_RELEASE)?;
    let ipuc = root.join("target/release/ipuc");
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let timeout = Duration::from_secs(timeout_minutes * 60);
    let mut rows = Vec::new();
    for case in CASES
        .iter()
        .filter(|c| only.is_empty() || only.contains(&case_name(c)))
    {
        let name = case_name(case);
        let args = compile_args(case, &out.join(format!("{name}.ipuc")));
        let runs = measure_runs(&ipuc, &args, out, &name, repeat, timeout)?;
        rows.push((name, runs));
    }
    print_table(&rows);
    Ok(())
}

/// `ipuc compile -v` of a case, its package written to `package`.
fn compile_args(case: &Case, package: &Path) -> Vec<String> {
    let mut args = vec![
        "compile".to_string(),
        // Stage lines and the `stages:` figures are `-v` output.
        "-v".into(),
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
    args
}

/// Up to `repeat` (at least one) compiles of `args`, logged under `out`;
/// stops at the first that fails.
fn measure_runs(
    ipuc: &Path,
    args: &[String],
    out: &Path,
    name: &str,
    repeat: usize,
    timeout: Duration,
) -> Result<Vec<Measured>> {
    let mut runs = Vec::new();
    for run in 0..repeat.max(1) {
        eprintln!(
            "xtask bench compile ({}/{}): ipuc {}",
            run + 1,
            repeat.max(1),
            args.join(" ")
        );
        let log = out.join(format!("{name}.{run}.log"));
        let m = measure(ipuc, args, &log, timeout)?;
        let outcome = if m.ok || m.timed_out {
            m.outcome()
        } else {
            format!("{}: {}", m.outcome(), m.error)
        };
        eprintln!(
            "xtask bench compile: {name}: {outcome} in {:.1} s wall, {:.1} s CPU; {}",
            m.wall, m.cpu, m.stages
        );
        let failed = !m.ok;
        runs.push(m);
        if failed {
            break;
        }
    }
    Ok(runs)
}

/// The medians of each case's runs (stages, peak RSS, exchange figures)
/// as a Markdown table, then each case's last stage and exchange lines.
fn print_table(rows: &[(String, Vec<Measured>)]) {
    println!(
        "| compile | result | runs | wall s | CPU s | planning s | lowering s | placement s | exchange scheduling s | emission s | linking s | packaging s | peak RSS | phases | stored rows | events / lower bound | seeds (larger host, 8–32 threads) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for (name, runs) in rows {
        let med = |f: &dyn Fn(&Measured) -> Option<f64>| -> String {
            let mut v: Vec<f64> = runs.iter().filter_map(f).collect();
            v.sort_by(f64::total_cmp);
            match v.len() {
                0 => "—".into(),
                n if n % 2 == 1 => format!("{:.1}", v[n / 2]),
                n => format!("{:.1}", (v[n / 2 - 1] + v[n / 2]) / 2.0),
            }
        };
        let stage = |name: &'static str| {
            move |m: &Measured| stage_ms(&m.stages, Some(name)).map(|ms| ms / 1e3)
        };
        let failed = runs.iter().find(|m| !m.ok);
        let last = runs.last();
        let exchange = last.map(|m| exchange_figures(&m.exchange));
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} GiB | {} | {} | {} | {} |",
            failed.map_or_else(|| "ok".to_string(), Measured::outcome),
            runs.len(),
            med(&|m| Some(m.wall)),
            med(&|m| Some(m.cpu)),
            med(&|m| stage_ms(&m.planning, None).map(|ms| ms / 1e3)),
            med(&stage("lowering")),
            med(&stage("placement")),
            med(&stage("exchange scheduling")),
            med(&stage("emission")),
            med(&stage("linking")),
            med(&stage("packaging")),
            runs.iter().map(|m| m.peak_rss_kib).max().unwrap_or(0) as f64 / (1024.0 * 1024.0),
            exchange.as_ref().map_or("—", |e| e.phases.as_str()),
            exchange.as_ref().map_or("—", |e| e.stored_rows.as_str()),
            exchange.as_ref().map_or("—", |e| e.events.as_str()),
            seeds(name),
        );
    }
    for (name, runs) in rows {
        if let Some(m) = runs.last() {
            println!("{name}: stages: {}; exchange: {}", m.stages, m.exchange);
            if !m.ok {
                println!("{name}: {}: {}", m.outcome(), m.error);
            }
        }
    }
    println!(
        "targets (2 cores): So400m 1 layer ≤ 15 s, 27 layers ≤ 60 s (goal 10 s), peak RSS ≤ 8 GiB.\n\
         seeds (larger host, 8–32 threads): 415 s high-level planning for 2 layers at beam 64; 521 s total."
    );
}

/// The seeds' figure for a case, where they give one (issue #10: a larger
/// host, 8–32 threads).
fn seeds(case: &str) -> &'static str {
    match case {
        "siglip-so400m-2" => "planning 415 s (beam 64); 521 s total",
        _ => "—",
    }
}

/// Phases, stored rows and "events / lower bound (ratio)" from the
/// `exchange:` line (`50 phases, 40215 stored rows (…), …; 248715 events vs
/// lower bound 154684`).
struct ExchangeFigures {
    phases: String,
    stored_rows: String,
    events: String,
}

fn exchange_figures(line: &str) -> ExchangeFigures {
    let number_before = |word: &str| -> Option<u64> {
        let at = line.find(word)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    let number_after = |word: &str| -> Option<u64> {
        let at = line.find(word)? + word.len();
        line[at..].split_whitespace().next()?.parse().ok()
    };
    let show = |v: Option<u64>| v.map_or_else(|| "—".to_string(), |v| v.to_string());
    let events = match (number_before(" events vs"), number_after("lower bound ")) {
        (Some(e), Some(b)) if b > 0 => format!("{e} / {b} ({:.3})", e as f64 / b as f64),
        _ => "—".to_string(),
    };
    ExchangeFigures {
        phases: show(number_before(" phases")),
        stored_rows: show(number_before(" stored rows")),
        events,
    }
}

/// The stage a failed compile stopped in: the first (mandatory) stage
/// without a `compile: <stage> in … ms` line. The stages and their names
/// are the pipeline's own ([`Stage::ALL`], [`Stage::name`]).
fn failed_stage(log: &str) -> &'static str {
    Stage::ALL
        .into_iter()
        .filter(|s| *s != Stage::Optimization)
        .map(Stage::name)
        .find(|s| {
            let done = format!("compile: {s} in ");
            !log.lines().any(|l| l.starts_with(&done))
        })
        .unwrap_or("the end (after packaging)")
}

/// Milliseconds of a stage in `ipuc compile`'s report: `stage` in the
/// `stages:` line (`exchange scheduling 1234 ms, …`), or with `None` the
/// last figure of the `planning:` line (`…, 7085 ms`).
fn stage_ms(line: &str, stage: Option<&str>) -> Option<f64> {
    let part = match stage {
        Some(name) => line
            .split(", ")
            .map(|p| p.trim_start_matches("stages: "))
            .find_map(|p| p.strip_prefix(name))?,
        None => line.rsplit(", ").next()?,
    };
    part.split_whitespace().next()?.parse().ok()
}

/// User + system seconds of a running process (all threads), from `/proc`.
fn cpu_seconds(stat: &str) -> Option<f64> {
    // Fields after the parenthesised command: state is field 3; utime and
    // stime are fields 14 and 15, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Runs `ipuc args`, output to `log`, sampling the child's peak RSS.
fn measure(ipuc: &Path, args: &[String], log: &Path, timeout: Duration) -> Result<Measured> {
    let mut child = spawn_logged(ipuc, args, log)?;
    let started = Instant::now();
    let status_file = format!("/proc/{}/status", child.id());
    let stat_file = format!("/proc/{}/stat", child.id());
    let mut peak = 0u64;
    let mut cpu = 0f64;
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
        if let Some(c) = std::fs::read_to_string(&stat_file)
            .ok()
            .as_deref()
            .and_then(cpu_seconds)
        {
            cpu = cpu.max(c);
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
        std::thread::sleep(Duration::from_millis(100));
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
    let stopped_early = stopped.is_some();
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
        cpu,
        peak_rss_kib: peak,
        planning: line("planning:"),
        stages: line("stages:"),
        exchange: line("exchange:"),
        error,
        failed_stage: failed_stage(&text),
        timed_out: stopped_early,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_times_are_read_from_the_report() {
        let stages = "lowering 374 ms, placement 486 ms, exchange scheduling 329314 ms, emission 4995 ms, linking 28046 ms, packaging 1147 ms (total with planning 420246 ms)";
        assert_eq!(
            stage_ms(stages, Some("exchange scheduling")),
            Some(329314.0)
        );
        assert_eq!(stage_ms(stages, Some("linking")), Some(28046.0));
        assert_eq!(stage_ms(stages, Some("planning")), None);
        let planning = "66756 candidates screened, 8 body searches, 26 cache hits, 4178 memory rejections, 55885 ms";
        assert_eq!(stage_ms(planning, None), Some(55885.0));
        let exchange = "50 phases, 40215 stored rows (6332 used by more than one phase), 15105 row uses with a sharing patch list, 0 Repeat-patched words; 248715 events vs lower bound 154684";
        let e = exchange_figures(exchange);
        assert_eq!(e.phases, "50");
        assert_eq!(e.stored_rows, "40215");
        assert_eq!(e.events, "248715 / 154684 (1.608)");
        assert_eq!(exchange_figures("—").events, "—");
        let log = "compile: planning on 1472 tiles (beam width 64)…\ncompile: planning in 37328 ms: 1 candidates\ncompile: lowering in 5 ms: x\nerror: placement: tile 3 over budget\n";
        assert_eq!(failed_stage(log), "placement");
        assert_eq!(
            failed_stage("error: planning: every plan over budget"),
            "planning"
        );
        let stat = "123 (ipuc (x)) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0";
        assert_eq!(cpu_seconds(stat), Some(3.0));
    }
}
