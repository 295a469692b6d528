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

mod cases;
mod child;
mod matrix;
mod reseal;
mod wide;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use ipuc_target::package;

use matrix::Matrix;

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
    /// Exit 2, 3 or 4 with an `error:` line (the case's `code` and
    /// `needles` when it names them); exit 0 is a silent wrong result.
    TypedError,
    /// Exit 0, or a usage error (2) when the value is out of range: a
    /// numeric flag at an edge value.
    UsageOrSuccess,
    /// Exit 0, its guarded outputs replaced by complete files.
    Success,
    /// A signal aimed into the commit of an output set (after its first
    /// rename): held back until the last rename, then it ends the
    /// process, and every file of the set is new.
    AimedCommit,
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
    /// As soon as a temporary beside guarded output `file` holds at least
    /// this many bytes (0: as soon as it exists).
    Writing { file: usize, at_least: u64 },
    /// As soon as guarded output `file` holds other bytes than before.
    Replaced { file: usize },
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
    /// The class the matrix counts the case in.
    class: &'static str,
    args: Vec<String>,
    expect: Expect,
    /// The exit code a typed error must have, when one is right.
    code: Option<i32>,
    /// Text stderr must hold (what the error must say).
    needles: Vec<String>,
    seconds: u64,
    /// Outputs whose previous bytes must survive (or, for signal cases,
    /// be replaced by a valid package).
    guarded: Vec<(PathBuf, Vec<u8>)>,
    /// The guarded outputs are one artifact set: all old or all new.
    set: bool,
    /// A signal and when to send it.
    signal: Option<(i32, Trigger)>,
    /// Extra environment for the child.
    env: Vec<(&'static str, String)>,
}

impl Case {
    fn error(name: impl Into<String>, args: &[&str]) -> Case {
        Case {
            name: name.into(),
            class: "",
            args: args.iter().map(|s| s.to_string()).collect(),
            expect: Expect::TypedError,
            code: None,
            needles: Vec::new(),
            seconds: ERROR_SECONDS,
            guarded: Vec::new(),
            set: false,
            signal: None,
            env: Vec::new(),
        }
    }

    /// A typed error with exit `code` whose message holds each needle.
    fn exits(mut self, code: i32, needles: &[&str]) -> Case {
        self.code = Some(code);
        self.needles = needles.iter().map(|n| n.to_string()).collect();
        self
    }

    fn expect(mut self, expect: Expect) -> Case {
        self.expect = expect;
        self
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

/// Builds the cases in `target/hostile` and runs them with the release
/// `ipuc`, in order: the typed-error cases, the heartbeat of an endless
/// run (whose package the re-sealed cases wrote), then the signal cases.
pub fn hostile(root: &Path) -> Result<()> {
    crate::cargo(root, &["build", "--release", "-q", "-p", "ipuc"])?;
    let bin = root.join("target/release/ipuc");
    let work = root.join("target/hostile");
    let full = work.join("full");
    if full.exists() {
        let _ = Command::new("umount").arg(&full).output();
    }
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work)?;
    let fixtures = root.join("tests/fixtures/siglip");
    let base = cases::compile_base(&bin, &work)?;
    let base_bytes = fs::read(&base)?;
    let base_pkg = package::read(&base_bytes)?;

    let mut typed = tag(
        cases::not_regular_files(&work, &fixtures, &base)?,
        "not a regular file",
    );
    typed.extend(tag(cases::sparse_files(&work, &fixtures)?, "sparse file"));
    typed.extend(wide::checkpoint_families(root, &work)?);
    typed.extend(tag(
        cases::resealed(&work, &base_bytes, &base_pkg)?,
        "re-sealed package",
    ));
    typed.extend(wide::resealed_wide(&work, &base_pkg)?);
    let counting = work.join("counting-loop-on-the-first-tile.ipuc");
    typed.extend(wide::budget_claim(
        &work,
        &package::read(&fs::read(&counting)?)?,
    )?);
    typed.extend(wide::same_paths(root, &work, &base)?);
    typed.extend(wide::numeric_flags(&work, &base));
    typed.extend(wide::long_names(&work, &base)?);
    let heartbeat = cases::heartbeat(&work);
    let mounted = cases::full_tmpfs(&full).is_some();
    if mounted {
        // The set's previous files go in before the disk is filled.
        typed.extend(wide::full_disk_set(&full)?);
        typed.extend(tag(cases::full_disk(&work, &full)?, "full disk"));
    }
    let mut signals = tag(
        cases::signals(&bin, &work, &base_bytes)?,
        "signal during a package write",
    );
    signals.extend(wide::artifact_sets(&work)?);

    let mut m = Matrix::default();
    let logs = work.join("logs");
    fs::create_dir_all(&logs)?;
    let total = Instant::now();
    for (i, case) in typed.iter().enumerate() {
        run_and_judge(&bin, case, &logs.join(format!("{i:03}.err")), &mut m)?;
    }
    run_and_judge(&bin, &heartbeat, &logs.join("heartbeat.err"), &mut m)?;
    for (i, case) in signals.iter().enumerate() {
        // The previous package is the base one each time.
        for (path, before) in &case.guarded {
            fs::write(path, before)?;
        }
        let log = logs.join(format!("signal-{i:03}.err"));
        run_and_judge(&bin, case, &log, &mut m)?;
    }
    if mounted {
        let _ = Command::new("umount").arg(&full).output();
    }
    m.print(total.elapsed().as_secs_f64());
    if m.failed() {
        bail!("the hostile matrix has failures (listed above)");
    }
    Ok(())
}

/// `cases` counted in `class`.
fn tag(cases: Vec<Case>, class: &'static str) -> Vec<Case> {
    cases
        .into_iter()
        .map(|mut c| {
            c.class = class;
            c
        })
        .collect()
}

/// Runs one case with its stderr to `log` and judges how it ended.
fn run_and_judge(bin: &Path, case: &Case, log: &Path, m: &mut Matrix) -> Result<()> {
    let ended = child::run(bin, case, log)?;
    let stderr = fs::read_to_string(log).unwrap_or_default();
    m.judge(case, &ended, &stderr);
    Ok(())
}
