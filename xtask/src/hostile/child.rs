//! Running one case's child: spawned with its output to log files, reaped
//! with `wait4` for its peak RSS, signalled when its trigger is due and
//! killed at its deadline.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{Case, Landing, Trigger};

/// How a case's child ended.
pub(super) struct Ended {
    /// Exit code, or the signal that ended the process.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub seconds: f64,
    pub max_rss_kb: i64,
    pub timed_out: bool,
    pub landing: Option<Landing>,
}

/// Runs `bin args` with stdout/stderr to files, reaping it with `wait4`
/// (peak RSS); kills it at the deadline.
pub(super) fn run(bin: &Path, case: &Case, log: &Path) -> Result<Ended> {
    let out = fs::File::create(log.with_extension("out"))?;
    let err = fs::File::create(log)?;
    let mut command = Command::new(bin);
    command
        .args(&case.args)
        .envs(case.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    // ipuc keeps an inherited SIG_IGN (as `nohup` asks), and a shell that
    // runs the matrix in the background without job control hands its
    // children SIGINT ignored: the cases would test the launcher, not
    // ipuc. The signals the matrix sends start at their default action.
    // SAFETY: `signal` is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        command.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let child = command.spawn().context("starting ipuc")?;
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
                Trigger::Writing { file, at_least } => {
                    case.guarded.get(*file).is_some_and(|(path, _)| {
                        temporaries_beside(path)
                            .iter()
                            .any(|t| fs::metadata(t).is_ok_and(|m| m.len() >= *at_least))
                    })
                }
                Trigger::Replaced { file } => case
                    .guarded
                    .get(*file)
                    .is_some_and(|(path, before)| fs::read(path).ok().as_ref() != Some(before)),
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
pub(super) fn temporaries_beside(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Vec::new();
    };
    // `host/src/fsio/write.rs`'s `temporary_stem`: a name too long for a
    // temporary beside it is cut to its first 232 bytes.
    let name = name.to_string_lossy();
    let mut end = name.len().min(255 - 23);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let prefix = format!(".{}.", &name[..end]);
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
