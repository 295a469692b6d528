//! The cases a hostile user would hand `ipuc`, by kind: inputs that are
//! not regular files, sparse files whose headers contradict their length,
//! re-sealed packages, an endless run's heartbeat, a full disk, and
//! signals while a compile writes over a previous package. Each builder
//! makes the files its cases name under the work directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use ipuc_target::package::{self, Package};

use super::reseal::{aliased_output, counting_loop, huge_output, self_loop};
use super::{
    Case, Expect, Trigger, ERROR_SECONDS, HEARTBEAT_CASE_SECONDS, PAUSE_ENV, PAUSE_MS, RUN_SECONDS,
};

/// The workload every case compiles or runs: one layer of the small model.
const SMALL: [&str; 4] = ["--workload", "siglip-small", "--vit-layers", "1"];

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

pub(super) fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Mounts a 1 MiB tmpfs at `dir` and fills it; `None` (with the reason
/// printed) where the machine does not allow it.
pub(super) fn full_tmpfs(dir: &Path) -> Option<()> {
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

/// Two valid packages are needed: this base one, for re-sealing and as
/// the previous file the signal cases' compile writes over.
pub(super) fn compile_base(bin: &Path, work: &Path) -> Result<PathBuf> {
    let base = work.join("base.ipuc");
    let status = Command::new(bin)
        .args(["compile"])
        .args(SMALL)
        .args(["--planning-tiles", "16", "--package"])
        .arg(&base)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("compiling the base package failed");
    }
    Ok(base)
}

/// A FIFO, a link to `/dev/zero` and a directory, each handed to every
/// command that reads a file (and as a checkpoint's config or weights).
pub(super) fn not_regular_files(work: &Path, fixtures: &Path, base: &Path) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    let fifo = work.join("fifo");
    mkfifo(&fifo)?;
    let zero = work.join("zero");
    std::os::unix::fs::symlink("/dev/zero", &zero)?;
    let dir = work.join("a-directory");
    fs::create_dir_all(&dir)?;
    for (kind, p) in [("fifo", &fifo), ("/dev/zero", &zero), ("directory", &dir)] {
        let p = s(p);
        let out = s(&work.join("o.bin"));
        let (ck, wk) = checkpoints_with(work, fixtures, kind, &p)?;
        let (ck, wk, b) = (s(&ck), s(&wk), s(base));
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
    Ok(cases)
}

/// Two checkpoints whose config (the first) or weights (the second) is
/// `p`, a `kind` that is not a regular file; the other file is a valid
/// fixture.
fn checkpoints_with(
    work: &Path,
    fixtures: &Path,
    kind: &str,
    p: &str,
) -> Result<(PathBuf, PathBuf)> {
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
        std::os::unix::fs::symlink(p, ck.join("config.json"))?;
        std::os::unix::fs::symlink(p, wk.join("model.safetensors"))?;
    }
    Ok((ck, wk))
}

/// 5 GiB sparse files whose headers contradict their length.
pub(super) fn sparse_files(work: &Path, fixtures: &Path) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    let (sp, cfg) = make_sparse_files(work, fixtures)?;
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
    Ok(cases)
}

/// The sparse files of [`sparse_files`] in `WORK/sparse`: a checkpoint
/// whose weights lie, one whose config does (in `ck-config`), a package,
/// a package with a lying section, an npy, a png and an assembly source.
fn make_sparse_files(work: &Path, fixtures: &Path) -> Result<(PathBuf, PathBuf)> {
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
    Ok((sp, cfg))
}

/// Re-sealed packages (valid digests, no sense), each handed to `exec`.
/// The counting loop's file stays for [`heartbeat`].
pub(super) fn resealed(work: &Path, base_bytes: &[u8], base_pkg: &Package) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for (what, bytes) in [
        (
            "self-loop on the first tile",
            self_loop(base_bytes, base_pkg, false)?,
        ),
        (
            "self-loop on every tile",
            self_loop(base_bytes, base_pkg, true)?,
        ),
        (
            "aliased output slices",
            aliased_output(base_bytes, base_pkg)?,
        ),
        ("64 GiB output", huge_output(base_bytes, base_pkg)?),
        (
            "counting loop on the first tile",
            counting_loop(base_bytes, base_pkg)?,
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
    Ok(cases)
}

/// A loop that changes state forever, with the largest budget: the
/// device's heartbeat must show it running, and Ctrl-C must end it.
pub(super) fn heartbeat(work: &Path) -> Case {
    let counting = work.join("counting-loop-on-the-first-tile.ipuc");
    Case {
        name: format!("heartbeat of an endless run, then SIGINT after {HEARTBEAT_CASE_SECONDS} s"),
        class: "heartbeat",
        code: None,
        needles: Vec::new(),
        set: false,
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
    }
}

/// A full disk (the 1 MiB tmpfs at `full`, filled): each output's
/// previous file must survive.
pub(super) fn full_disk(work: &Path, full: &Path) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
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
    fill(full);
    let run_small = small_on_16_tiles("run");
    let compile_small = small_on_16_tiles("compile");
    let with = |base: &[String], more: &[String]| -> Vec<String> {
        base.iter().chain(more).cloned().collect()
    };
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
    Ok(cases)
}

/// `ipuc CMD` on the small workload planned for 16 tiles.
fn small_on_16_tiles(cmd: &str) -> Vec<String> {
    [cmd]
        .into_iter()
        .chain(SMALL)
        .chain(["--planning-tiles", "16"])
        .map(str::to_string)
        .collect()
}

/// Signals while a compile writes over a previous package: SIGINT,
/// SIGTERM and SIGKILL at fractions of the compile's time (timed here by
/// one compile) and aimed into the write. Each case guards `target` with
/// the base package's bytes, which the run writes back before each case.
pub(super) fn signals(bin: &Path, work: &Path, base_bytes: &[u8]) -> Result<Vec<Case>> {
    let target = work.join("signal/out.ipuc");
    fs::create_dir_all(target.parent().unwrap())?;
    let compile_over: Vec<String> = ["compile"]
        .into_iter()
        .chain(SMALL)
        .chain(["--planning-tiles", "24", "--package"])
        .map(str::to_string)
        .chain([s(&target)])
        .collect();
    let timed = Instant::now();
    let st = Command::new(bin)
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
                Trigger::Writing { file: 0, at_least },
            ));
        }
    }
    let cases = signal_cases
        .into_iter()
        .map(|(sig, name, expect, trigger)| {
            let aimed = expect == Expect::AimedSignal;
            Case {
                name,
                class: "signal during a package write",
                code: None,
                needles: Vec::new(),
                set: false,
                args: compile_over.clone(),
                expect,
                seconds: RUN_SECONDS,
                guarded: vec![(target.clone(), base_bytes.to_vec())],
                signal: Some((sig, trigger)),
                env: if aimed {
                    vec![(PAUSE_ENV, PAUSE_MS.to_string())]
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    Ok(cases)
}
