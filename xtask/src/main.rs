//! `cargo xtask`: the project's own automation (CI gate, hardware check,
//! fuzz campaigns, benchmarks). Each task shells out to cargo so what it runs
//! is exactly what a developer would type.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

mod atomic;
mod bench_compile;
mod bench_models;
mod bench_sim;
mod bench_speed;
mod bench_throughput;
mod browser;
mod hostile;
mod layers;
mod process;
mod python;
mod sizes;
mod sweep;

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// The CI gate: layer check, fmt check, clippy -D warnings, tests, no-std build of ipuc-core and the embedding example, hw-check, a release run whose compile-time exchange check covers every phase, the Python package's tests over its wheel, the hostile-input matrix.
    Ci,
    /// Fails on an upward import between a crate's layers (the order ARCHITECTURE.md
    /// documents), an import loop among a crate's files of any length, an ipuc crate
    /// named in a manifest (any section) outside its allowed list (the simulator:
    /// ipuc-target alone), or the device-numerics reference naming the simulator,
    /// the planner or lowering.
    Layers,
    /// Files over 800 lines and non-test functions over 80 lines in every
    /// checked crate, longest first, with their counts (a report, not a gate).
    Sizes {
        /// Another checkout to measure (default: this workspace).
        #[arg(long)]
        root: Option<PathBuf>,
    },
    /// CI's Python step alone (#45): the wheel built from `python/`
    /// (release), installed in a venv under the target directory, and
    /// `python/tests` run over it with pytest (needs the release `ipuc`).
    Python,
    /// CI's release step alone: a 2-layer siglip-small run with the release binary whose compile-time exchange check must cover every phase.
    ReleaseCheck,
    /// The hostile-input matrix (#28): FIFOs, /dev/zero links, sparse
    /// files, a full tmpfs, re-sealed packages, signals during writes; each
    /// must be a typed error in bounded time and memory with every previous
    /// output intact. Prints the counts; fails on any hang, abort or
    /// partial file.
    Hostile,
    /// Scalar vs six-worker patcher check on the simulated tile (or hardware).
    HwCheck {
        /// `sim` (default) or `ipu`.
        #[arg(long, default_value = "sim")]
        target: String,
    },
    /// Benchmarks (not tests): `reference` = full 27-layer So400m FP32
    /// reference; `so400m` = the full So400m run (27 layers, fused QKV, FP8
    /// -4, three resident inferences) with the seeds' figures beside ours;
    /// `compile` = So400m compiles at 1, 2 and 27 layers and siglip-small
    /// at 27, per-stage times and peak RSS; `sim` = the simulator's wall
    /// and CPU time, words moved and words/s per package (medians of
    /// `--repeat` runs; by default the full-width So400m at 56 and 112 px);
    /// `models` = the CLIP, ViT and DINOv2 presets at full depth (fused
    /// QKV, FP8 -4), one table row per tower; `speed` = one model (So400m
    /// at `--layers`, fused QKV, FP8 -4) stage by stage — compile, exec,
    /// device-numerics and FP32 references, the validated run — with wall
    /// time, CPU time, peak RSS, a fixed CPU workload for ratios, the
    /// digest and cycles, and a `perf` profile (#42); `throughput` = each
    /// tower (ViT-B/16, CLIP-L/14-336, DINOv2-L/14, So400m) at batch 1, 2,
    /// 4, … until memory rejects: cycles/image, images/s, latency, peak
    /// bytes/tile, compile s, images PASS (#41; `-- vit-b16-224 --batches
    /// 1,16` picks towers and batches).
    Bench {
        /// What to benchmark: `reference`, `so400m`, `compile`, `sim`, `models`, `speed` or
        /// `throughput`.
        what: String,
        /// Output directory (default `target/bench/<what>`: summaries,
        /// logs, packages, profiles).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Stop one compile (`compile`) or run (`models`) after this many minutes.
        #[arg(long, default_value_t = 60)]
        timeout_minutes: u64,
        /// Encoder layers (so400m).
        #[arg(long, default_value_t = 27)]
        layers: usize,
        /// Runs per case (`compile`, `sim`: the table gives medians).
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Extra `ipuc run` flags (after `--`), e.g. `--image-size 56`;
        /// for `compile`, the cases to run (e.g. `-- siglip-so400m-1`); for
        /// `sim`, `FILE.ipuc EXEC-FLAGS…` per case; for `models`, the
        /// presets (default all three) and then `ipuc run` flags, e.g.
        /// `-- vit-b16-224 --vit-layers 2`.
        #[arg(last = true)]
        extra: Vec<String>,
        /// `speed`: the preset to measure.
        #[arg(long, default_value = "siglip-so400m")]
        workload: String,
        /// `speed`: this `ipuc` binary instead of building the release one.
        #[arg(long)]
        ipuc: Option<PathBuf>,
        /// `speed`: no `perf record` of the validated run.
        #[arg(long)]
        no_perf: bool,
        /// `speed`: skip the validated run (and the profile).
        #[arg(long)]
        skip_run: bool,
    },
    /// The seeds' depth sweep: `ipuc run` of So400m (or `--workload`; fused
    /// QKV, FP8 -4 unless told otherwise; --reference-run --reference-fp32)
    /// at each layer count; writes `summary.json` and prints the seeds' table.
    Sweep {
        /// Preset to sweep (`ipuc run --workload`), e.g. `clip-vit-l14-336`.
        #[arg(long, default_value = "siglip-so400m")]
        workload: String,
        /// Layer counts: a comma list, each a count or a range (`1-27`).
        #[arg(long, value_delimiter = ',', value_parser = layer_counts, default_value = "1,2,3,4,8,16,27")]
        layers: Vec<Vec<usize>>,
        /// Output directory (`layers-N/` per count + `summary.json`).
        #[arg(long, default_value = "target/sweep")]
        out: PathBuf,
        /// Stop a run after this many minutes (recorded as an error).
        #[arg(long, default_value_t = 90)]
        timeout_minutes: u64,
        /// Layer counts whose run also writes `--profile-output layers-N/profile`
        /// (profile.html, operations.json, patch-audit.txt, phase-patch-audit.txt).
        #[arg(long, value_delimiter = ',', default_value = "2")]
        profile_layers: Vec<usize>,
        /// Separate Q, K and V projections (the default is the seeds' fused QKV).
        #[arg(long)]
        no_fuse_qkv: bool,
        /// FP16 GEMM weights (the default is the seeds' FP8 at scale -4).
        #[arg(long)]
        fp16_weights: bool,
        /// Extra `ipuc run` flags (after `--`), e.g. `--image-size 56 --planning-tiles 256`.
        #[arg(last = true)]
        extra: Vec<String>,
    },
    /// Render every HTML report of a small run in headless Chromium,
    /// screenshot each, fail on JavaScript errors or empty views.
    BrowserCheck {
        /// Where the run's reports and the screenshots go.
        #[arg(long, default_value = "target/browser-check")]
        out: PathBuf,
        /// Check only these pages (no runs), e.g. a full-size run's
        /// reports: each is loaded without virtual time and its load
        /// time printed (wall, and navigation start to complete render).
        #[arg(long)]
        page: Vec<PathBuf>,
    },
    /// Fuzz campaign: replays the committed regressions, then runs every
    /// cargo-fuzz target (or one) for N seconds from its committed seed
    /// corpus, and prints the table (target, executions, corpus, crashes).
    /// Needs the nightly toolchain; installs cargo-fuzz if missing.
    Fuzz {
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        /// Only this target.
        #[arg(long)]
        target: Option<String>,
    },
    /// The filetests (`filetests/*.ir`: IR text in, expected verify / plan /
    /// compile output checked); `--bless` rewrites the expectations from
    /// what the compiler prints now (review the diff before committing).
    Filetests {
        #[arg(long)]
        bless: bool,
    },
    /// Every property test with N cases (CI runs them with small, seeded
    /// defaults): sets IPUC_PROPTEST_CASES (and PROPTEST_CASES) and runs
    /// the property suites in release.
    Proptest {
        #[arg(long, default_value_t = 1000)]
        cases: u32,
        /// Seed of the case generator (default: the CI seed).
        #[arg(long)]
        seed: Option<u64>,
    },
}

/// The no-std target that proves `ipuc-core` (and a toolchain embedding
/// it, `examples/embed`) needs no `std`.
const NO_STD_TARGET: &str = "thumbv7em-none-eabi";

fn main() -> Result<()> {
    let cli = Cli::parse();
    let root = workspace_root();
    match cli.task {
        Task::Ci => ci(&root),
        Task::Python => python::python_tests(&root),
        Task::Layers => check_layers(&root),
        Task::Sizes { root: other } => {
            sizes::report(other.as_deref().unwrap_or(&root)).map_err(anyhow::Error::msg)
        }
        Task::ReleaseCheck => release_exchange_check(&root),
        Task::Hostile => hostile::hostile(&root),
        Task::HwCheck { target } => hw_check(&root, &target),
        Task::BrowserCheck { out, page } if !page.is_empty() => {
            browser::check_pages(&page, &root.join(out))
        }
        Task::BrowserCheck { out, .. } => browser::browser_check(&root, &root.join(out)),
        Task::Fuzz { seconds, target } => fuzz(&root, seconds, target.as_deref()),
        Task::Proptest { cases, seed } => proptest(&root, cases, seed),
        Task::Filetests { bless } => filetests(&root, bless),
        Task::Bench {
            what,
            out,
            timeout_minutes,
            layers,
            repeat,
            extra,
            workload,
            ipuc,
            no_perf,
            skip_run,
        } => {
            let out = root.join(out.unwrap_or_else(|| PathBuf::from("target/bench").join(&what)));
            match what.as_str() {
                "reference" => bench_reference(&root),
                "so400m" => sweep::bench_so400m(&root, &out, layers, &extra),
                "sim" => bench_sim::bench_sim(&root, &out, repeat, &extra),
                "models" => bench_models::bench_models(&root, &out, timeout_minutes, &extra),
                "throughput" => {
                    bench_throughput::bench_throughput(&root, &out, timeout_minutes, &extra)
                }
                "speed" => bench_speed::bench_speed(
                    &root,
                    &out,
                    &bench_speed::Options {
                        workload,
                        layers,
                        ipuc,
                        no_perf,
                        skip_run,
                        extra,
                    },
                ),
                "compile" => {
                    bench_compile::bench_compile(&root, &out, timeout_minutes, repeat, &extra)
                }
                other => {
                    bail!("unknown benchmark {other:?} (known: reference, so400m, compile, sim, models, speed, throughput)")
                }
            }
        }
        Task::Sweep {
            workload,
            layers,
            out,
            timeout_minutes,
            profile_layers,
            no_fuse_qkv,
            fp16_weights,
            extra,
        } => sweep::sweep(
            &root,
            &workload,
            &root.join(out),
            &layers.concat(),
            timeout_minutes,
            &profile_layers,
            sweep::Build {
                fuse_qkv: !no_fuse_qkv,
                fp8_scale: if fp16_weights {
                    None
                } else {
                    sweep::Build::SEEDS.fp8_scale
                },
            },
            &extra,
        ),
    }
}

/// One `--layers` item: `N` or `A-B` (inclusive), each at least 1.
fn layer_counts(item: &str) -> Result<Vec<usize>, String> {
    let count = |s: &str| match s.trim().parse::<usize>() {
        Ok(0) => Err("a layer count is at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{s:?} is not a layer count ({e})")),
    };
    match item.split_once('-') {
        None => Ok(vec![count(item)?]),
        Some((a, b)) => {
            let (a, b) = (count(a)?, count(b)?);
            if a > b {
                return Err(format!("range {item:?} runs backwards"));
            }
            Ok((a..=b).collect())
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

pub(crate) fn cargo(root: &Path, args: &[&str]) -> Result<()> {
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(root)
        .status()
        .with_context(|| format!("starting cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

fn check_layers(root: &Path) -> Result<()> {
    let violations = layers::check_workspace(root).map_err(anyhow::Error::msg)?;
    for v in &violations {
        eprintln!("{v}");
    }
    if !violations.is_empty() {
        bail!(
            "xtask layers: {} import(s) break a crate's layer order, close a loop, cross the device boundary or break the reference's independence",
            violations.len()
        );
    }
    for c in layers::CRATES {
        eprintln!(
            "xtask layers: {} follows {} with no import loop",
            c.name,
            c.layers.join(" → ")
        );
    }
    for (name, _, allowed) in layers::ALLOWED_DEPENDENCIES {
        eprintln!("xtask layers: {name} depends on {allowed:?} alone of the ipuc crates");
    }
    for (folder, forbidden, _) in layers::INDEPENDENT {
        eprintln!(
            "xtask layers: {folder} names none of {}",
            forbidden.join(", ")
        );
    }
    Ok(())
}

fn ci(root: &Path) -> Result<()> {
    check_layers(root)?;
    cargo(root, &["fmt", "--all", "--check"])?;
    cargo(
        root,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    cargo(root, &["test", "--workspace"])?;
    // The core and the embedding example (a graph compiled to a package
    // with ipuc-core alone) build without `std`.
    cargo(
        root,
        &[
            "build",
            "-p",
            "ipuc-core",
            "-p",
            "ipuc-embed",
            "--target",
            NO_STD_TARGET,
        ],
    )?;
    hw_check(root, "sim")?;
    release_exchange_check(root)?;
    // The Python package over its wheel (#45): a few minutes, most of it
    // the wheel's build on top of the release build above.
    python::python_tests(root)?;
    // About three minutes on two cores: every case is a small compile, a
    // small run or less.
    hostile::hostile(root)?;
    eprintln!("xtask ci: all steps passed");
    Ok(())
}

/// Issue #13 item 4: the compile-time exchange check (every row decoded,
/// replayed with the route model, compared with its request) runs in
/// release builds too. `test --workspace` compiles with debug assertions,
/// so CI also compiles and runs a 2-layer siglip-small package with the
/// release binary and requires `exchange check: N of N phases` (N > 0) in
/// its report, and a PASS.
fn release_exchange_check(root: &Path) -> Result<()> {
    let args = [
        "run",
        // The full report (`exchange check:` is a detail line).
        "-v",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "2",
        "--planning-tiles",
        "64",
        "--reference-run",
    ];
    let out = Command::new(env!("CARGO"))
        .args(RUN_IPUC_RELEASE)
        .args(args)
        .current_dir(root)
        .output()
        .context("starting the release run")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "release run failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with("exchange check: "))
        .context("the release run printed no `exchange check:` line")?;
    let counts: Vec<u64> = line
        .trim_start_matches("exchange check: ")
        .split_whitespace()
        .take(3)
        .filter_map(|w| w.parse().ok())
        .collect();
    match counts[..] {
        [checked, phases] if checked == phases && phases > 0 => {}
        _ => bail!("release run: not every exchange phase was checked: {line}"),
    }
    if !stdout.lines().any(|l| l == "validation[0]: PASS") {
        bail!("release run did not PASS:\n{stdout}");
    }
    eprintln!("xtask ci: release build: {line}");
    Ok(())
}

/// `cargo run --release -q -p ipuc --`: the release binary (built if needed)
/// with the arguments that follow.
pub const RUN_IPUC_RELEASE: [&str; 6] = ["run", "--release", "-q", "-p", "ipuc", "--"];

/// `cargo build --release -q -p ipuc`: the release binary benchmarks time.
pub const BUILD_IPUC_RELEASE: [&str; 5] = ["build", "--release", "-q", "-p", "ipuc"];

/// Runs the release binary with `args` ([`RUN_IPUC_RELEASE`]).
fn ipuc_release(root: &Path, args: &[&str]) -> Result<()> {
    let all: Vec<&str> = RUN_IPUC_RELEASE.iter().chain(args).copied().collect();
    cargo(root, &all)
}

fn hw_check(root: &Path, target: &str) -> Result<()> {
    ipuc_release(root, &["hw-check", "--target", target])
}

/// Runs the filetests, rewriting their expectations with `bless`.
fn filetests(root: &Path, bless: bool) -> Result<()> {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["test", "-p", "ipuc-core", "--test", "filetests"])
        .current_dir(root);
    if bless {
        cmd.env("IPUC_BLESS", "1");
    }
    let status = cmd.status().context("starting cargo test")?;
    if !status.success() {
        bail!("filetests failed ({status}); `cargo xtask filetests --bless` rewrites them");
    }
    Ok(())
}

/// Runs the property suites with `cases` cases each.
fn proptest(root: &Path, cases: u32, seed: Option<u64>) -> Result<()> {
    let cases = cases.to_string();
    let seed = seed.map(|s| s.to_string());
    let suites: [&[&str]; 3] = [
        &[
            "-p",
            "ipuc-core",
            "--lib",
            "--",
            "package::tests::mutations",
            "place::tests",
        ],
        &[
            "-p",
            "ipuc-core",
            "--test",
            "ir_props",
            "--test",
            "isa_roundtrip",
        ],
        &[
            "-p",
            "ipuc-tests",
            "--test",
            "exchange_props",
            "--test",
            "towers_props",
        ],
    ];
    for suite in suites {
        let mut args = vec!["test", "--release"];
        args.extend_from_slice(suite);
        eprintln!("xtask proptest: cargo {} ({cases} cases)", args.join(" "));
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(&args)
            .current_dir(root)
            .env("IPUC_PROPTEST_CASES", &cases)
            .env("PROPTEST_CASES", &cases);
        if let Some(s) = &seed {
            cmd.env("IPUC_PROPTEST_SEED", s);
        }
        let status = cmd.status().context("starting cargo test")?;
        if !status.success() {
            bail!(
                "property suite `cargo {}` failed ({status})",
                args.join(" ")
            );
        }
    }
    eprintln!("xtask proptest: every property suite passed {cases} cases");
    Ok(())
}

/// One target's campaign result.
struct FuzzRow {
    target: String,
    executions: u64,
    corpus: usize,
    crashes: usize,
    regressions: usize,
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// libFuzzer's last "Done N runs" line.
fn executions(log: &str) -> u64 {
    log.lines()
        .rev()
        .find_map(|l| {
            let rest = l.strip_prefix("Done ")?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// Campaign over the cargo-fuzz targets (see `Task::Fuzz`). Built without a
/// sanitizer (the code under test is safe Rust: libFuzzer finds panics,
/// overflow-check failures, timeouts and OOMs) and with debug assertions, so
/// every unchecked arithmetic overflow is a crash.
/// Seeds that are sources of the repository, copied into `corpus` as they
/// are now rather than committed under `fuzz/seeds` (a committed copy goes
/// stale when the source changes): the static runtime for `assemble`.
fn copy_live_seeds(root: &Path, target: &str, corpus: &Path) -> Result<()> {
    let live: &[(&str, &str)] = match target {
        "assemble" => &[("device-asm/static_runtime.S", "static_runtime.S")],
        _ => &[],
    };
    for (source, name) in live {
        std::fs::copy(root.join(source), corpus.join(name))
            .with_context(|| format!("copying the live seed {source}"))?;
    }
    Ok(())
}

/// Runs every fuzz target (or `only`) for `seconds` each, after
/// replaying its committed regressions, and prints a table of the runs.
fn fuzz(root: &Path, seconds: u64, only: Option<&str>) -> Result<()> {
    let fuzz_dir = root.join("fuzz");
    let targets = fuzz_targets(root, &fuzz_dir, only)?;
    let logs = root.join("target/fuzz-logs");
    std::fs::create_dir_all(&logs)?;
    let mut rows = Vec::new();
    for t in &targets {
        let seeds = fuzz_dir.join("seeds").join(t);
        let corpus = fuzz_dir.join("corpus").join(t);
        let regressions = fuzz_dir.join("regressions").join(t);
        let artifacts = fuzz_dir.join("artifacts").join(t);
        std::fs::create_dir_all(&corpus)?;
        std::fs::create_dir_all(&artifacts)?;
        copy_live_seeds(root, t, &corpus)?;
        let before = files_in(&artifacts).len();
        let replayed = replay_regressions(&fuzz_dir, t, &regressions)?;
        let (log, status) = fuzz_run(&fuzz_dir, t, seconds, &corpus, &seeds, &logs)?;
        let crashes = files_in(&artifacts).len().saturating_sub(before);
        if !status.success() && crashes == 0 {
            bail!(
                "fuzz target {t} did not run ({status}); see {}",
                logs.join(format!("{t}.log")).display()
            );
        }
        rows.push(FuzzRow {
            target: t.clone(),
            executions: executions(&log),
            corpus: files_in(&corpus).len(),
            crashes,
            regressions: replayed,
        });
    }
    print_fuzz_table(&rows, seconds)
}

// `+nightly` is understood by the rustup proxy (`cargo` on PATH), not by
// the toolchain's own cargo binary that `$CARGO` names.
const RUSTUP_CARGO: &str = "cargo";

/// The fuzz targets `cargo fuzz list` names (only `only`, if given),
/// installing cargo-fuzz first when it is missing.
fn fuzz_targets(root: &Path, fuzz_dir: &Path, only: Option<&str>) -> Result<Vec<String>> {
    let have = Command::new(RUSTUP_CARGO)
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have {
        cargo(root, &["install", "cargo-fuzz", "--locked"])?;
    }
    let listing = Command::new(RUSTUP_CARGO)
        .args(["+nightly", "fuzz", "list"])
        .current_dir(fuzz_dir)
        .output()
        .context("cargo fuzz list")?;
    let targets: Vec<String> = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty() && only.is_none_or(|o| o == *t))
        .map(String::from)
        .collect();
    if targets.is_empty() {
        bail!("no fuzz targets matched");
    }
    Ok(targets)
}

/// Committed regressions first: each must run clean. Returns how many
/// were replayed.
fn replay_regressions(fuzz_dir: &Path, t: &str, regressions: &Path) -> Result<usize> {
    let replay = files_in(regressions);
    if !replay.is_empty() {
        // Given as the corpus (files only), so libFuzzer runs each
        // once; after `--` cargo-fuzz would add the corpus directory
        // and libFuzzer would take every argument for a directory.
        let mut args: Vec<String> = ["+nightly", "fuzz", "run", "-s", "none", t]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(replay.iter().map(|p| p.display().to_string()));
        let status = Command::new(RUSTUP_CARGO)
            .args(&args)
            .current_dir(fuzz_dir)
            .status()?;
        if !status.success() {
            bail!(
                "fuzz target {t}: a committed regression in {} fails again",
                regressions.display()
            );
        }
    }
    Ok(replay.len())
}

/// One target fuzzed for `seconds` from its corpus and seeds; its stderr
/// is kept in `logs`. Returns the log and cargo-fuzz's exit status.
fn fuzz_run(
    fuzz_dir: &Path,
    t: &str,
    seconds: u64,
    corpus: &Path,
    seeds: &Path,
    logs: &Path,
) -> Result<(String, std::process::ExitStatus)> {
    eprintln!("xtask fuzz: {t} for {seconds} s");
    let corpus_s = corpus.display().to_string();
    let seeds_s = seeds.display().to_string();
    let mut args = vec!["+nightly", "fuzz", "run", "-s", "none", t, &corpus_s];
    if seeds.is_dir() {
        args.push(&seeds_s);
    }
    let max_time = format!("-max_total_time={seconds}");
    // An input that takes over 10 s is a hang; 2 GiB is an OOM.
    args.extend([
        "--",
        &max_time,
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-print_final_stats=1",
    ]);
    let out = Command::new(RUSTUP_CARGO)
        .args(&args)
        .current_dir(fuzz_dir)
        .stdout(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("cargo fuzz run {t}"))?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    atomic::write(&logs.join(format!("{t}.log")), &log)?;
    Ok((log, out.status))
}

/// The runs as a Markdown table and a count; an error naming the targets
/// that crashed.
fn print_fuzz_table(rows: &[FuzzRow], seconds: u64) -> Result<()> {
    println!("| target | executions | corpus | crashes | regressions replayed |");
    println!("|---|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.target, r.executions, r.corpus, r.crashes, r.regressions
        );
    }
    let total: u64 = rows.iter().map(|r| r.executions).sum();
    let crashed: Vec<&str> = rows
        .iter()
        .filter(|r| r.crashes > 0)
        .map(|r| r.target.as_str())
        .collect();
    println!(
        "{} targets, {seconds} s each, {total} executions, {} with crashes",
        rows.len(),
        crashed.len()
    );
    if !crashed.is_empty() {
        bail!(
            "fuzz targets found failures: {} (inputs in fuzz/artifacts/<target>; commit fixed ones to fuzz/regressions/<target>)",
            crashed.join(", ")
        );
    }
    Ok(())
}

/// `ipuc reference --workload siglip-so400m` (27 layers, random weights) on
/// a deterministic random 1×3×378×378 input, in release.
fn bench_reference(root: &Path) -> Result<()> {
    let dir = root.join("target/bench");
    std::fs::create_dir_all(&dir)?;
    let input = dir.join("pixel_values_1x3x378x378.npy");
    // .npy v1.0: magic, version, header length, dict padded to 64 bytes, data.
    let mut header =
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 378, 378), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..3 * 378 * 378 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let unit = (state >> 40) as f32 / (1u64 << 24) as f32;
        bytes.extend_from_slice(&(2.0 * unit - 1.0).to_le_bytes());
    }
    atomic::write(&input, bytes)?;
    let input = input.to_string_lossy().into_owned();
    let output = dir.join("embedding.npy").to_string_lossy().into_owned();
    ipuc_release(
        root,
        &[
            "reference",
            "--workload",
            "siglip-so400m",
            "--input",
            &input,
            "--output-embedding",
            &output,
        ],
    )
}
