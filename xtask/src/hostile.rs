//! `cargo xtask hostile`: the hostile-input matrix of #28. It builds what a
//! hostile user would hand the release `ipuc` — FIFOs, links to
//! `/dev/zero`, directories, 5 GiB sparse files, a full tmpfs, re-sealed
//! packages (a branch-to-self at the entry, outputs aliasing one SRAM
//! range, a 64 GiB output), signals during a compile that writes over a
//! previous package — and runs each case with a wall-clock bound, reading
//! the child's peak RSS from `wait4`. Each case must end in a typed error
//! (exit 2, 3 or 4 with an `error:` line, no panic, no signal) or, for the
//! signal cases, in the old file or a complete new one; every previous
//! output must survive a failed write. Prints the matrix counts and fails
//! unless hangs, aborts, partial files and unbounded-memory cases are all 0.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ipuc_core::ipu21::isa::{encode, Instruction};
use ipuc_core::package::{self, BindingKind, Package, DIGEST_BYTES};

/// A typed error comes within this; a case running longer is a hang.
const ERROR_SECONDS: u64 = 20;
/// Cases that compile and run a small model first.
const RUN_SECONDS: u64 = 90;
/// Peak RSS a rejected input may cost (the small compiles and runs here
/// peak near 150 MB).
const MEMORY_BOUND_KB: i64 = 1 << 20;

/// What a case must end in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Exit 1 or 2 with a message.
    TypedError,
    /// A signal was sent: killed by it, or finished first; either way the
    /// guarded output is the old file or a valid new package.
    Signal,
}

struct Case {
    name: String,
    args: Vec<String>,
    expect: Expect,
    seconds: u64,
    /// Outputs whose previous bytes must survive (or, for signal cases,
    /// be replaced by a valid package).
    guarded: Vec<(PathBuf, Vec<u8>)>,
    /// A signal and when to send it.
    signal: Option<(i32, Duration)>,
}

impl Case {
    fn error(name: impl Into<String>, args: &[&str]) -> Case {
        Case {
            name: name.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            expect: Expect::TypedError,
            seconds: ERROR_SECONDS,
            guarded: Vec::new(),
            signal: None,
        }
    }

    fn guard(mut self, path: &Path) -> Case {
        let bytes = fs::read(path).unwrap_or_default();
        self.guarded.push((path.to_path_buf(), bytes));
        self
    }

    fn long(mut self) -> Case {
        self.seconds = RUN_SECONDS;
        self
    }
}

#[derive(Default)]
struct Matrix {
    cases: usize,
    typed: usize,
    signal_ok: usize,
    hangs: Vec<String>,
    aborts: Vec<String>,
    partial: Vec<String>,
    untyped: Vec<String>,
    unbounded: Vec<String>,
    leftover_after_kill: usize,
    leftover: Vec<String>,
    slowest: (f64, String),
    largest: (i64, String),
}

struct Ended {
    /// Exit code, or the signal that ended the process.
    code: Option<i32>,
    signal: Option<i32>,
    seconds: f64,
    max_rss_kb: i64,
    timed_out: bool,
}

/// Runs `bin args` with stdout/stderr to files, reaping it with `wait4`
/// (peak RSS); kills it at the deadline.
fn run(bin: &Path, case: &Case, log: &Path) -> Result<Ended> {
    let out = fs::File::create(log.with_extension("out"))?;
    let err = fs::File::create(log)?;
    let child = Command::new(bin)
        .args(&case.args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .context("starting ipuc")?;
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let mut signalled = false;
    let mut timed_out = false;
    loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our child, not reaped before (we never call
        // `Child::wait`).
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            let (code, signal) = if libc::WIFEXITED(status) {
                (Some(libc::WEXITSTATUS(status)), None)
            } else {
                (None, Some(libc::WTERMSIG(status)))
            };
            return Ok(Ended {
                code,
                signal,
                seconds: start.elapsed().as_secs_f64(),
                max_rss_kb: usage.ru_maxrss,
                timed_out,
            });
        }
        if r < 0 {
            bail!("wait4: {}", std::io::Error::last_os_error());
        }
        if let Some((sig, after)) = case.signal {
            if !signalled && start.elapsed() >= after {
                // SAFETY: signalling our own unreaped child.
                unsafe { libc::kill(pid, sig) };
                signalled = true;
            }
        }
        if !timed_out && start.elapsed() >= Duration::from_secs(case.seconds) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            timed_out = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Hidden temporaries an atomic write leaves beside `path` (`.NAME.*.tmp`).
fn temporaries_beside(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Vec::new();
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with(&prefix) && n.ends_with(".tmp")
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

fn judge(m: &mut Matrix, case: &Case, ended: &Ended, stderr: &str) {
    m.cases += 1;
    let label = format!("{} ({})", case.name, case.args.join(" "));
    if ended.seconds > m.slowest.0 {
        m.slowest = (ended.seconds, case.name.clone());
    }
    if ended.max_rss_kb > m.largest.0 {
        m.largest = (ended.max_rss_kb, case.name.clone());
    }
    if ended.max_rss_kb > MEMORY_BOUND_KB {
        m.unbounded
            .push(format!("{label}: {} MB", ended.max_rss_kb / 1024));
    }
    let panicked = stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE");
    let sent = case.signal.map(|(s, _)| s);
    if ended.timed_out {
        m.hangs.push(label.clone());
    } else if panicked || ended.signal.is_some_and(|s| Some(s) != sent) {
        m.aborts.push(format!(
            "{label}: {:?} {}",
            ended.signal,
            first_line(stderr)
        ));
    } else {
        match case.expect {
            Expect::TypedError => {
                // Usage (2), does-not-fit (3) or bad input (4), as
                // `host/src/exit.rs` defines them; a validation FAIL (1) or
                // an internal error (5) blames the wrong thing.
                if matches!(ended.code, Some(2..=4)) && stderr.contains("error") {
                    m.typed += 1;
                } else {
                    m.untyped.push(format!(
                        "{label}: exit {:?}: {}",
                        ended.code,
                        first_line(stderr)
                    ));
                }
            }
            Expect::Signal => m.signal_ok += 1,
        }
    }
    for (path, before) in &case.guarded {
        let now = fs::read(path).unwrap_or_default();
        let intact =
            now == *before || (case.expect == Expect::Signal && package::read(&now).is_ok());
        if !intact {
            m.partial.push(format!(
                "{label}: {} ({} bytes, was {})",
                path.display(),
                now.len(),
                before.len()
            ));
        }
        let temps = temporaries_beside(path);
        if !temps.is_empty() {
            if sent == Some(libc::SIGKILL) {
                // SIGKILL cannot be caught: counted, then cleared.
                m.leftover_after_kill += temps.len();
            } else {
                m.leftover.push(format!("{label}: {temps:?}"));
            }
            for t in temps {
                let _ = fs::remove_file(t);
            }
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines()
        .rev()
        .find(|l| l.contains("error"))
        .unwrap_or_else(|| s.lines().last().unwrap_or(""))
}

fn mkfifo(path: &Path) -> Result<()> {
    let _ = fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        bail!(
            "mkfifo {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

fn sparse(path: &Path, head: &[u8], len: u64) -> Result<()> {
    fs::write(path, head)?;
    fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .set_len(len)?;
    Ok(())
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Re-seals `body` (package bytes without their digest).
fn reseal(bytes: &[u8], edit: impl FnOnce(&mut Vec<u8>) -> Result<()>) -> Result<Vec<u8>> {
    let mut body = bytes[..bytes.len() - DIGEST_BYTES].to_vec();
    edit(&mut body)?;
    Ok(package::seal(body))
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

/// The package with its first tile's entry word (or every tile's, `all`)
/// replaced by a branch to itself.
fn self_loop(bytes: &[u8], p: &Package, all: bool) -> Result<Vec<u8>> {
    let tile = p.tiles.first().context("package has no tiles")?;
    let seg = tile
        .segments
        .iter()
        .find(|s| s.address <= tile.entry_point && u64::from(tile.entry_point) < s.end())
        .context("no segment holds the entry")?;
    let at = (tile.entry_point - seg.address) as usize;
    let window = seg
        .data
        .get(at..at + 64)
        .context("entry too near the end")?;
    let word = encode(&Instruction::Bri {
        target: tile.entry_point,
    })?
    .words()[0];
    reseal(bytes, |body| {
        let hits = find_all(body, window);
        if hits.is_empty() {
            bail!("entry code not found in the package bytes");
        }
        for &h in hits.iter().take(if all { hits.len() } else { 1 }) {
            body[h..h + 4].copy_from_slice(&word.to_le_bytes());
        }
        Ok(())
    })
}

/// The package with every slice of its first output moved onto the first
/// slice's SRAM range.
fn aliased_output(bytes: &[u8], p: &Package) -> Result<Vec<u8>> {
    let b = p
        .bindings_of(BindingKind::Output)
        .find(|b| b.slices.len() > 1)
        .context("no output with several slices")?;
    let first = b.slices[0];
    reseal(bytes, |body| {
        let mut moved = 0;
        for sl in &b.slices[1..] {
            if sl.size > first.size {
                continue;
            }
            let mut old = sl.file_offset.to_le_bytes().to_vec();
            old.extend_from_slice(&sl.tile.to_le_bytes());
            old.extend_from_slice(&sl.tile_address.to_le_bytes());
            old.extend_from_slice(&sl.size.to_le_bytes());
            for h in find_all(body, &old) {
                body[h + 8..h + 12].copy_from_slice(&first.tile.to_le_bytes());
                body[h + 12..h + 16].copy_from_slice(&first.tile_address.to_le_bytes());
                moved += 1;
            }
        }
        if moved == 0 {
            bail!("no slice could be moved");
        }
        Ok(())
    })
}

/// The package with its first output's leading dimension grown so the
/// tensor declares 64 GiB.
fn huge_output(bytes: &[u8], p: &Package) -> Result<Vec<u8>> {
    let b = p
        .bindings_of(BindingKind::Output)
        .next()
        .context("no output")?;
    let mut record = (b.name.len() as u32).to_le_bytes().to_vec();
    record.extend_from_slice(b.name.as_bytes());
    record.extend_from_slice(&(b.shape.len() as u32).to_le_bytes());
    let rest: u64 = b.shape[1..].iter().product::<u64>() * b.dtype.size_bytes();
    let dim0 = (1u64 << 36) / rest.max(1);
    reseal(bytes, |body| {
        let h = *find_all(body, &record)
            .first()
            .context("binding not found")?;
        let at = h + record.len();
        body[at..at + 8].copy_from_slice(&dim0.to_le_bytes());
        Ok(())
    })
}

/// Mounts a 1 MiB tmpfs at `dir` and fills it; `None` (with the reason
/// printed) where the machine does not allow it.
fn full_tmpfs(dir: &Path) -> Option<()> {
    let _ = fs::create_dir_all(dir);
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(dir)
        .output();
    match out {
        Ok(o) if o.status.success() => Some(()),
        Ok(o) => {
            println!(
                "hostile: full-disk cases skipped: mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        Err(e) => {
            println!("hostile: full-disk cases skipped: cannot run mount: {e}");
            None
        }
    }
}

fn fill(dir: &Path) {
    use std::io::Write;
    if let Ok(mut f) = fs::File::create(dir.join("filler")) {
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }
}

/// Builds the cases in `work` and runs them with `bin`.
pub fn hostile(root: &Path) -> Result<()> {
    crate::cargo(root, &["build", "--release", "-q", "-p", "ipuc"])?;
    let bin = root.join("target/release/ipuc");
    let work = root.join("target/hostile");
    if work.join("full").exists() {
        let _ = Command::new("umount").arg(work.join("full")).output();
    }
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work)?;
    let fixtures = root.join("tests/fixtures/siglip");
    let small = ["--workload", "siglip-small", "--vit-layers", "1"];

    // Two valid packages: the base for re-sealing, and another to write
    // over it in the signal cases.
    let base = work.join("base.ipuc");
    let status = Command::new(&bin)
        .args(["compile"])
        .args(small)
        .args(["--planning-tiles", "16", "--package"])
        .arg(&base)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("compiling the base package failed");
    }
    let base_bytes = fs::read(&base)?;
    let base_pkg = package::read(&base_bytes)?;

    let mut cases = Vec::new();
    // Inputs that are not regular files.
    let fifo = work.join("fifo");
    mkfifo(&fifo)?;
    let zero = work.join("zero");
    std::os::unix::fs::symlink("/dev/zero", &zero)?;
    let dir = work.join("a-directory");
    fs::create_dir_all(&dir)?;
    for (kind, p) in [("fifo", &fifo), ("/dev/zero", &zero), ("directory", &dir)] {
        let p = s(p);
        let out = s(&work.join("o.bin"));
        let ck = work.join(format!("ck-config-{}", kind.replace('/', "")));
        fs::create_dir_all(&ck)?;
        fs::copy(
            fixtures.join("vision-f16/model.safetensors"),
            ck.join("model.safetensors"),
        )?;
        let wk = work.join(format!("ck-weights-{}", kind.replace('/', "")));
        fs::create_dir_all(&wk)?;
        fs::copy(
            fixtures.join("vision-f16/config.json"),
            wk.join("config.json"),
        )?;
        if kind == "directory" {
            fs::create_dir_all(ck.join("config.json"))?;
            fs::create_dir_all(wk.join("model.safetensors"))?;
        } else {
            std::os::unix::fs::symlink(&p, ck.join("config.json"))?;
            std::os::unix::fs::symlink(&p, wk.join("model.safetensors"))?;
        }
        let (ck, wk, b) = (s(&ck), s(&wk), s(&base));
        for (what, args) in [
            ("package", vec!["inspect", &p]),
            (
                "exec package",
                vec!["exec", &p, "--workload", "siglip-small"],
            ),
            (
                "--image",
                vec!["run", "--workload", "siglip-small", "--image", &p],
            ),
            (
                "--input",
                vec!["run", "--workload", "siglip-small", "--input", &p],
            ),
            ("asm source", vec!["asm", &p, "-o", &out]),
            (
                "--runtime-source",
                vec![
                    "compile",
                    "--workload",
                    "siglip-small",
                    "--runtime-source",
                    &p,
                ],
            ),
            (
                "--device-lock",
                vec![
                    "exec",
                    &b,
                    "--workload",
                    "siglip-small",
                    "--vit-layers",
                    "1",
                    "--device-lock",
                    &p,
                ],
            ),
            ("config.json", vec!["compile", "--checkpoint", &ck]),
            ("model.safetensors", vec!["compile", "--checkpoint", &wk]),
            ("phase dump", vec!["exchange", "schedule-dump", &p]),
        ] {
            cases.push(Case::error(format!("{kind} as {what}"), &args));
        }
    }
    // 5 GiB sparse files whose headers contradict their length.
    const FIVE_GIB: u64 = 5 << 30;
    let sp = work.join("sparse");
    fs::create_dir_all(&sp)?;
    let header = br#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
    let mut st = (header.len() as u64).to_le_bytes().to_vec();
    st.extend_from_slice(header);
    sparse(&sp.join("model.safetensors"), &st, FIVE_GIB)?;
    fs::copy(
        fixtures.join("vision-f16/config.json"),
        sp.join("config.json"),
    )?;
    sparse(&sp.join("big.ipuc"), &package::MAGIC, FIVE_GIB)?;
    let mut lie = package::MAGIC.to_vec();
    lie.extend_from_slice(&[2, 0, 0, 0, 1, 0, 0, 0]);
    lie.extend_from_slice(&(1u64 << 40).to_le_bytes());
    sparse(&sp.join("lie.ipuc"), &lie, 1 << 30)?;
    sparse(&sp.join("big.npy"), b"\x93NUMPY\x01\x00", FIVE_GIB)?;
    sparse(&sp.join("big.png"), b"\x89PNG\r\n\x1a\n", FIVE_GIB)?;
    sparse(&sp.join("big.S"), b"nop\n", FIVE_GIB)?;
    let cfg = sp.join("ck-config");
    fs::create_dir_all(&cfg)?;
    sparse(&cfg.join("config.json"), b"{", FIVE_GIB)?;
    fs::copy(
        fixtures.join("vision-f16/model.safetensors"),
        cfg.join("model.safetensors"),
    )?;
    let o = s(&work.join("o.bin"));
    for (what, args) in [
        (
            "sparse safetensors",
            vec!["compile".to_string(), "--checkpoint".into(), s(&sp)],
        ),
        (
            "sparse config.json",
            vec!["compile".into(), "--checkpoint".into(), s(&cfg)],
        ),
        (
            "sparse package",
            vec!["inspect".into(), s(&sp.join("big.ipuc"))],
        ),
        (
            "1 GiB package with a lying section",
            vec!["inspect".into(), s(&sp.join("lie.ipuc"))],
        ),
        (
            "sparse npy",
            vec![
                "run".into(),
                "--workload".into(),
                "siglip-small".into(),
                "--input".into(),
                s(&sp.join("big.npy")),
            ],
        ),
        (
            "sparse png",
            vec![
                "run".into(),
                "--workload".into(),
                "siglip-small".into(),
                "--image".into(),
                s(&sp.join("big.png")),
            ],
        ),
        (
            "sparse asm",
            vec!["asm".into(), s(&sp.join("big.S")), "-o".into(), o.clone()],
        ),
        (
            "sparse runtime",
            vec![
                "compile".into(),
                "--workload".into(),
                "siglip-small".into(),
                "--runtime-source".into(),
                s(&sp.join("big.S")),
            ],
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cases.push(Case::error(what, &args));
    }
    // Re-sealed packages: valid digests, no sense.
    for (what, bytes) in [
        (
            "self-loop on the first tile",
            self_loop(&base_bytes, &base_pkg, false)?,
        ),
        (
            "self-loop on every tile",
            self_loop(&base_bytes, &base_pkg, true)?,
        ),
        (
            "aliased output slices",
            aliased_output(&base_bytes, &base_pkg)?,
        ),
        ("64 GiB output", huge_output(&base_bytes, &base_pkg)?),
    ] {
        let path = work.join(format!("{}.ipuc", what.replace(' ', "-")));
        fs::write(&path, bytes)?;
        let p = s(&path);
        let lock = s(&work.join("device.lock"));
        cases.push(Case::error(
            format!("{what}: exec"),
            &[
                "exec",
                &p,
                "--workload",
                "siglip-small",
                "--vit-layers",
                "1",
                "--device-lock",
                &lock,
            ],
        ));
    }
    // A full disk: each output's previous file must survive.
    let full = work.join("full");
    let mounted = full_tmpfs(&full).is_some();
    if mounted {
        let prev = |name: &str| -> Result<PathBuf> {
            let p = full.join(name);
            if let Some(d) = p.parent() {
                fs::create_dir_all(d)?;
            }
            fs::write(&p, format!("previous {name}\n"))?;
            Ok(p)
        };
        let pkg = prev("out.ipuc")?;
        let mem = prev("mem/memory.json")?;
        let plan = prev("plan.txt")?;
        let bin_out = prev("out.bin")?;
        let summary = prev("summary.json")?;
        let profile = prev("prof/profile.json")?;
        let emb = prev("emb.npy")?;
        let big_src = work.join("big-image.S");
        fs::write(&big_src, "nop\n.space 0x60000\n")?;
        fill(&full);
        let run_small: Vec<String> = [
            "run",
            "--workload",
            "siglip-small",
            "--vit-layers",
            "1",
            "--planning-tiles",
            "16",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let with = |base: &[String], more: &[String]| -> Vec<String> {
            base.iter().chain(more).cloned().collect()
        };
        let compile_small: Vec<String> = [
            "compile",
            "--workload",
            "siglip-small",
            "--vit-layers",
            "1",
            "--planning-tiles",
            "16",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for (what, args, guarded) in [
            (
                "full disk: --package",
                with(&compile_small, &["--package".into(), s(&pkg)]),
                &pkg,
            ),
            (
                "full disk: --memory-profile-directory",
                with(
                    &compile_small,
                    &["--memory-profile-directory".into(), s(&full.join("mem"))],
                ),
                &mem,
            ),
            (
                "full disk: --plan-output",
                with(&compile_small, &["--plan-output".into(), s(&plan)]),
                &plan,
            ),
            (
                "full disk: asm -o",
                vec!["asm".into(), s(&big_src), "-o".into(), s(&bin_out)],
                &bin_out,
            ),
            (
                "full disk: --summary-json",
                with(&run_small, &["--summary-json".into(), s(&summary)]),
                &summary,
            ),
            (
                "full disk: --profile-output",
                with(
                    &run_small,
                    &["--profile-output".into(), s(&full.join("prof"))],
                ),
                &profile,
            ),
            (
                "full disk: --output-embedding",
                with(&run_small, &["--output-embedding".into(), s(&emb)]),
                &emb,
            ),
        ] {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cases.push(Case::error(what, &args).guard(guarded).long());
        }
    }
    // Signals while a compile writes over a previous package.
    let target = work.join("signal/out.ipuc");
    fs::create_dir_all(target.parent().unwrap())?;
    let compile_over: Vec<String> = [
        "compile",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "1",
        "--planning-tiles",
        "24",
        "--package",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([s(&target)])
    .collect();
    let timed = Instant::now();
    let st = Command::new(&bin)
        .args(&compile_over)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !st.success() {
        bail!("the signal cases' compile failed");
    }
    let compile_ms = timed.elapsed().as_millis() as u64;
    let mut signal_cases = Vec::new();
    for (sig, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGKILL, "SIGKILL"),
    ] {
        for pct in [10u64, 50, 90, 95, 98, 100, 102, 105] {
            let after = Duration::from_millis(compile_ms * pct / 100);
            signal_cases.push((sig, name, after));
        }
    }

    let mut m = Matrix::default();
    let logs = work.join("logs");
    fs::create_dir_all(&logs)?;
    let total = Instant::now();
    for (i, case) in cases.iter().enumerate() {
        let log = logs.join(format!("{i:03}.err"));
        let ended = run(&bin, case, &log)?;
        let stderr = fs::read_to_string(&log).unwrap_or_default();
        judge(&mut m, case, &ended, &stderr);
    }
    for (i, (sig, name, after)) in signal_cases.into_iter().enumerate() {
        // The previous package is the base one each time.
        fs::write(&target, &base_bytes)?;
        let case = Case {
            name: format!(
                "{name} after {} ms of a compile writing over a package",
                after.as_millis()
            ),
            args: compile_over.clone(),
            expect: Expect::Signal,
            seconds: RUN_SECONDS,
            guarded: Vec::new(),
            signal: Some((sig, after)),
        }
        .guard(&target);
        let log = logs.join(format!("signal-{i:03}.err"));
        let ended = run(&bin, &case, &log)?;
        let stderr = fs::read_to_string(&log).unwrap_or_default();
        judge(&mut m, &case, &ended, &stderr);
    }
    if mounted {
        let _ = Command::new("umount").arg(&full).output();
    }

    let list = |title: &str, v: &[String]| {
        for l in v {
            println!("  {title}: {l}");
        }
    };
    list("HANG", &m.hangs);
    list("ABORT", &m.aborts);
    list("PARTIAL", &m.partial);
    list("NOT TYPED", &m.untyped);
    list("UNBOUNDED MEMORY", &m.unbounded);
    list("TEMPORARY LEFT", &m.leftover);
    println!(
        "hostile matrix: {} cases, {} typed errors, {} signal cases ending in the old or a complete new file, {} hangs, {} aborts, {} partial files, {} untyped, {} over {} MB, {} temporaries left (SIGINT/SIGTERM: {}; SIGKILL, which cannot be caught: {}); slowest {:.2} s ({}), peak RSS {} MB ({}); {:.1} s in all",
        m.cases,
        m.typed,
        m.signal_ok,
        m.hangs.len(),
        m.aborts.len(),
        m.partial.len(),
        m.untyped.len(),
        m.unbounded.len(),
        MEMORY_BOUND_KB / 1024,
        m.leftover.len() + m.leftover_after_kill,
        m.leftover.len(),
        m.leftover_after_kill,
        m.slowest.0,
        m.slowest.1,
        m.largest.0 / 1024,
        m.largest.1,
        total.elapsed().as_secs_f64(),
    );
    if !(m.hangs.is_empty()
        && m.aborts.is_empty()
        && m.partial.is_empty()
        && m.untyped.is_empty()
        && m.unbounded.is_empty()
        && m.leftover.is_empty())
    {
        bail!("the hostile matrix has failures (listed above)");
    }
    Ok(())
}
