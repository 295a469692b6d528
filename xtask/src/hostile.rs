//! `cargo xtask hostile`: the hostile-input matrix of #28. It builds what a
//! hostile user would hand the release `ipuc` — FIFOs, links to
//! `/dev/zero`, directories, 5 GiB sparse files, a full tmpfs, re-sealed
//! packages (a branch-to-self at the entry, outputs aliasing one SRAM
//! range, a 64 GiB output, a loop that never ends), signals during a
//! compile that writes over a previous package — and runs each case with a
//! wall-clock bound, reading the child's peak RSS from `wait4`. Each case
//! must end in a typed error (exit 2, 3 or 4 with an `error:` line that
//! names each path it mentions once, no panic, no signal) or, for the
//! signal cases, in the old file or a complete new one; every previous
//! output must survive a failed write. Signals are sent at fractions of a
//! compile's time (landing wherever they land, each landing reported) and
//! aimed into the package write itself (the write paused by the test hook
//! [`PAUSE_ENV`] while the matrix watches its temporary). Prints the matrix
//! counts and fails unless hangs, aborts, partial files, repeated paths,
//! missed aims and unbounded-memory cases are all 0.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ipuc_core::ipu21::isa::{encode, Imm16Op, Instruction, MReg};
use ipuc_core::package::{self, BindingKind, Package, DIGEST_BYTES};

/// A typed error comes within this; a case running longer is a hang.
const ERROR_SECONDS: u64 = 20;
/// Cases that compile and run a small model first.
const RUN_SECONDS: u64 = 90;
/// Peak RSS a rejected input may cost (the small compiles and runs here
/// peak near 150 MB).
const MEMORY_BOUND_KB: i64 = 1 << 20;
/// `host/src/fsio/write.rs`'s `PAUSE_ENV`: milliseconds every atomic write
/// pauses with half its bytes written and again before its rename.
const PAUSE_ENV: &str = "IPUC_TEST_WRITE_PAUSE_MS";
/// The pause the aimed signal cases ask for.
const PAUSE_MS: u64 = 400;
/// When the device's heartbeat line is due (`progress::HEARTBEAT`), and
/// when the heartbeat case interrupts its endless run.
const HEARTBEAT_SECONDS: u64 = 10;
const HEARTBEAT_CASE_SECONDS: u64 = HEARTBEAT_SECONDS + 3;

/// What a case must end in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Exit 1 or 2 with a message.
    TypedError,
    /// A signal was sent: killed by it, or finished first; either way the
    /// guarded output is the old file or a valid new package.
    Signal,
    /// A signal aimed into the guarded output's write: it must land while
    /// the temporary exists, end the process, and leave the old file.
    AimedSignal,
    /// A run that never ends by itself: it must print the device heartbeat
    /// before it is interrupted (and end from that signal).
    Heartbeat,
}

/// When a case's signal is sent.
#[derive(Clone, Debug)]
enum Trigger {
    /// This long after the start.
    After(Duration),
    /// As soon as a temporary beside the first guarded output holds at
    /// least this many bytes (0: as soon as it exists).
    Writing { at_least: u64 },
}

/// Where a signal landed, seen from outside at the moment it was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Landing {
    /// The process had ended; nothing was sent.
    NotSent,
    /// No temporary yet and the old file in place.
    BeforeWrite,
    /// A temporary beside the output existed: mid-write or before the rename.
    DuringWrite,
    /// The output was already replaced (after the rename).
    AfterRename,
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
    signal: Option<(i32, Trigger)>,
    /// Extra environment for the child.
    env: Vec<(&'static str, String)>,
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
            env: Vec::new(),
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
    /// Signal cases by where the signal landed.
    landed_not_sent: usize,
    landed_before: usize,
    landed_during: usize,
    landed_after_rename: usize,
    /// Aimed signals that landed in the write, SIGINT/SIGTERM and SIGKILL.
    aimed_ok: usize,
    aimed_missed: Vec<String>,
    heartbeats: usize,
    no_heartbeat: Vec<String>,
    repeated_path: Vec<String>,
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
    landing: Option<Landing>,
}

/// Runs `bin args` with stdout/stderr to files, reaping it with `wait4`
/// (peak RSS); kills it at the deadline.
fn run(bin: &Path, case: &Case, log: &Path) -> Result<Ended> {
    let out = fs::File::create(log.with_extension("out"))?;
    let err = fs::File::create(log)?;
    let child = Command::new(bin)
        .args(&case.args)
        .envs(case.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .context("starting ipuc")?;
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let mut landing = case.signal.as_ref().map(|_| Landing::NotSent);
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
                landing,
            });
        }
        if r < 0 {
            bail!("wait4: {}", std::io::Error::last_os_error());
        }
        if let Some((sig, trigger)) = &case.signal {
            let guarded = case.guarded.first();
            let due = match trigger {
                Trigger::After(after) => start.elapsed() >= *after,
                Trigger::Writing { at_least } => guarded.is_some_and(|(path, _)| {
                    temporaries_beside(path)
                        .iter()
                        .any(|t| fs::metadata(t).is_ok_and(|m| m.len() >= *at_least))
                }),
            };
            if !signalled && due {
                // Where it lands, seen just before it is sent (the write
                // moves on in the microseconds between).
                landing = Some(match guarded {
                    Some((path, _)) if !temporaries_beside(path).is_empty() => Landing::DuringWrite,
                    Some((path, before)) if fs::read(path).ok().as_ref() != Some(before) => {
                        Landing::AfterRename
                    }
                    _ => Landing::BeforeWrite,
                });
                // SAFETY: signalling our own unreaped child.
                unsafe { libc::kill(pid, *sig) };
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
    let sent = case.signal.as_ref().map(|(s, _)| *s);
    // Where the signals sent at a time landed (aimed ones are judged below).
    match ended.landing.filter(|_| case.expect == Expect::Signal) {
        Some(Landing::NotSent) => m.landed_not_sent += 1,
        Some(Landing::BeforeWrite) => m.landed_before += 1,
        Some(Landing::DuringWrite) => m.landed_during += 1,
        Some(Landing::AfterRename) => m.landed_after_rename += 1,
        None => {}
    }
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
                    if let Some(path) = repeated_path(&case.args, stderr) {
                        m.repeated_path
                            .push(format!("{label}: {path}: {}", first_line(stderr)));
                    }
                } else {
                    m.untyped.push(format!(
                        "{label}: exit {:?}: {}",
                        ended.code,
                        first_line(stderr)
                    ));
                }
            }
            Expect::Signal => m.signal_ok += 1,
            Expect::AimedSignal => {
                let landed = ended.landing == Some(Landing::DuringWrite);
                if landed && ended.signal == sent {
                    m.aimed_ok += 1;
                } else {
                    m.aimed_missed.push(format!(
                        "{label}: landed {:?}, ended by {:?} (exit {:?})",
                        ended.landing, ended.signal, ended.code
                    ));
                }
            }
            Expect::Heartbeat => {
                if stderr.contains("still running after") && ended.signal == sent {
                    m.heartbeats += 1;
                } else {
                    m.no_heartbeat.push(format!(
                        "{label}: ended by {:?} (exit {:?}): {}",
                        ended.signal,
                        ended.code,
                        first_line(stderr)
                    ));
                }
            }
        }
    }
    for (path, before) in &case.guarded {
        let now = fs::read(path).unwrap_or_default();
        // Only a signal sent at some time may have let a new package in;
        // an aimed one lands before the rename, so the old file stays.
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

/// A path argument that an `error` line of `stderr` names more than once
/// (each path should appear once: the OS errors and `fsio`'s leave it to
/// the caller). Paths inside other paths count: `D` in `D/config.json`.
fn repeated_path(args: &[String], stderr: &str) -> Option<String> {
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    args.iter()
        .filter(|a| a.starts_with('/'))
        .find(|a| errors.iter().any(|l| l.matches(a.as_str()).count() > 1))
        .cloned()
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
    let entry = p.tiles.first().context("package has no tiles")?.entry_point;
    let branch = encode(&Instruction::Bri { target: entry })?.words()[0];
    at_entry(bytes, p, all, &[branch])
}

/// The package with its first tile's entry replaced by a loop that counts
/// in `$m1` and never exits: its state changes every time round, so only
/// the cycle budget ends it.
fn counting_loop(bytes: &[u8], p: &Package) -> Result<Vec<u8>> {
    let entry = p.tiles.first().context("package has no tiles")?.entry_point;
    let m1 = MReg::new(1)?;
    let add = Instruction::AluImm16 {
        op: Imm16Op::Add,
        d: m1,
        s: m1,
        imm: 1,
    };
    let words = [
        encode(&add)?.words()[0],
        encode(&Instruction::Bri { target: entry })?.words()[0],
    ];
    at_entry(bytes, p, false, &words)
}

/// The package with `words` written over the code at its first tile's
/// entry (or every tile's with the same entry code, `all`), re-sealed.
fn at_entry(bytes: &[u8], p: &Package, all: bool, words: &[u32]) -> Result<Vec<u8>> {
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
    let new: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    reseal(bytes, |body| {
        let hits = find_all(body, window);
        if hits.is_empty() {
            bail!("entry code not found in the package bytes");
        }
        for &h in hits.iter().take(if all { hits.len() } else { 1 }) {
            body[h..h + new.len()].copy_from_slice(&new);
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
        (
            "counting loop on the first tile",
            counting_loop(&base_bytes, &base_pkg)?,
        ),
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
    // A loop that changes state forever, with the largest budget: the
    // device's heartbeat must show it running, and Ctrl-C must end it.
    let counting = work.join("counting-loop-on-the-first-tile.ipuc");
    let heartbeat = Case {
        name: format!("heartbeat of an endless run, then SIGINT after {HEARTBEAT_CASE_SECONDS} s"),
        args: [
            "exec",
            &s(&counting),
            "--workload",
            "siglip-small",
            "--vit-layers",
            "1",
            "--cycle-budget",
            "50000000000",
            "-v",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect(),
        expect: Expect::Heartbeat,
        seconds: HEARTBEAT_CASE_SECONDS + ERROR_SECONDS,
        guarded: Vec::new(),
        signal: Some((
            libc::SIGINT,
            Trigger::After(Duration::from_secs(HEARTBEAT_CASE_SECONDS)),
        )),
        env: Vec::new(),
    };
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
    let complete = fs::metadata(&target)?.len();
    let signals = [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGKILL, "SIGKILL"),
    ];
    let mut signal_cases = Vec::new();
    for (sig, name) in signals {
        for pct in [10u64, 50, 90, 95, 98, 100, 102, 105] {
            let after = Duration::from_millis(compile_ms * pct / 100);
            signal_cases.push((
                sig,
                format!(
                    "{name} after {} ms of a compile writing over a package",
                    after.as_millis()
                ),
                Expect::Signal,
                Trigger::After(after),
            ));
        }
        // Aimed at the write: half the bytes in the temporary, then all of
        // them synced before the rename (the write pauses at both).
        for (at, at_least) in [("mid-write", 1), ("before the rename", complete)] {
            signal_cases.push((
                sig,
                format!("{name} aimed {at} of a package over a previous one"),
                Expect::AimedSignal,
                Trigger::Writing { at_least },
            ));
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
    {
        let log = logs.join("heartbeat.err");
        let ended = run(&bin, &heartbeat, &log)?;
        let stderr = fs::read_to_string(&log).unwrap_or_default();
        judge(&mut m, &heartbeat, &ended, &stderr);
    }
    for (i, (sig, name, expect, trigger)) in signal_cases.into_iter().enumerate() {
        // The previous package is the base one each time.
        fs::write(&target, &base_bytes)?;
        let aimed = expect == Expect::AimedSignal;
        let case = Case {
            name,
            args: compile_over.clone(),
            expect,
            seconds: RUN_SECONDS,
            guarded: Vec::new(),
            signal: Some((sig, trigger)),
            env: if aimed {
                vec![(PAUSE_ENV, PAUSE_MS.to_string())]
            } else {
                Vec::new()
            },
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
    list("REPEATED PATH", &m.repeated_path);
    list("AIM MISSED", &m.aimed_missed);
    list("NO HEARTBEAT", &m.no_heartbeat);
    println!(
        "hostile matrix: {} cases, {} typed errors ({} naming a path twice), {} heartbeat of an endless run ({} missing), {} signal cases at fractions of a compile ending in the old or a complete new file (landed: {} before the write, {} during it, {} after the rename, {} after the process ended), {} signals aimed into the write that landed there and left the old file ({} missed), {} hangs, {} aborts, {} partial files, {} untyped, {} over {} MB, {} temporaries left (SIGINT/SIGTERM: {}; SIGKILL, which cannot be caught: {}); slowest {:.2} s ({}), peak RSS {} MB ({}); {:.1} s in all",
        m.cases,
        m.typed,
        m.repeated_path.len(),
        m.heartbeats,
        m.no_heartbeat.len(),
        m.signal_ok,
        m.landed_before,
        m.landed_during,
        m.landed_after_rename,
        m.landed_not_sent,
        m.aimed_ok,
        m.aimed_missed.len(),
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
        && m.leftover.is_empty()
        && m.repeated_path.is_empty()
        && m.aimed_missed.is_empty()
        && m.no_heartbeat.is_empty())
    {
        bail!("the hostile matrix has failures (listed above)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::repeated_path;

    #[test]
    fn a_path_named_twice_is_found() {
        let args: Vec<String> = ["inspect", "/x/fifo", "--tile", "3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let twice = "note: /x/fifo twice here is fine\nerror: reading /x/fifo: /x/fifo: is a FIFO";
        assert_eq!(repeated_path(&args, twice), Some("/x/fifo".into()));
        let once = "error: reading /x/fifo: is a FIFO (named pipe), not a regular file";
        assert_eq!(repeated_path(&args, once), None);
        // A directory argument inside a file's path counts too.
        let dir: Vec<String> = vec!["compile".into(), "--checkpoint".into(), "/ck".into()];
        let doubled = "error: /ck/config.json: /ck/config.json: is a directory";
        assert_eq!(repeated_path(&dir, doubled), Some("/ck".into()));
    }
}
