//! Child processes of the benchmarks and sweeps: `ipuc` started with its
//! stdout and stderr in one log file, and waited for with a timeout.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Starts `ipuc args` with stdout and stderr both written to `log`.
pub(crate) fn spawn_logged(ipuc: &Path, args: &[String], log: &Path) -> Result<Child> {
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = file.try_clone()?;
    Command::new(ipuc)
        .args(args)
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .spawn()
        .context("starting ipuc")
}

/// Runs `ipuc run` with `args`, stdout+stderr to `log`, killed after
/// `timeout`. `Ok(None)` if it finished, `Ok(Some(msg))` if it was stopped.
pub(crate) fn run_logged(
    ipuc: &Path,
    args: &[String],
    log: &Path,
    timeout: Duration,
) -> Result<Option<String>> {
    eprintln!("xtask: ipuc {} (log: {})", args.join(" "), log.display());
    let mut child = spawn_logged(ipuc, args, log)?;
    let started = Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            return Ok(None);
        }
        if started.elapsed() > timeout {
            child.kill().ok();
            child.wait().ok();
            return Ok(Some(format!(
                "stopped after {} min (--timeout-minutes)",
                timeout.as_secs() / 60
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
