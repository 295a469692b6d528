//! `cargo xtask ci`'s Python step (issue #45): builds the `ipuc` wheel from
//! `python/` with maturin (release profile, which reuses the release
//! build of the host library CI has just made), installs it in a venv
//! under the target directory and runs `python/tests` with pytest against
//! it, the CLI round trips with the release binary. Without `python3` the
//! step is skipped, saying so.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The Python packages the step installs from PyPI into its venv.
const TOOLS: [&str; 4] = ["maturin>=1.5,<2", "pytest", "numpy", "pillow"];

/// Cargo's target directory (`CARGO_TARGET_DIR`, else `target/`).
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => root.join(d),
        None => root.join("target"),
    }
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    eprintln!("xtask python: {what}");
    let status = cmd.status().with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Builds the wheel, installs it in a venv and runs pytest over it.
pub fn python_tests(root: &Path) -> Result<()> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let found = Command::new(&python)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!(
            "xtask python: SKIPPED: no `{python}` on PATH (set PYTHON=…); the Python package's tests did not run"
        );
        return Ok(());
    }
    let target = target_dir(root);
    let venv = target.join("python-venv");
    let bin = venv.join("bin");
    if !bin.join("python").exists() {
        run(
            Command::new(&python).args(["-m", "venv"]).arg(&venv),
            &format!("{python} -m venv {}", venv.display()),
        )?;
    }
    run(
        Command::new(bin.join("python"))
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(TOOLS),
        &format!("pip install {}", TOOLS.join(" ")),
    )?;
    let wheels = target.join("python-wheels");
    if wheels.exists() {
        std::fs::remove_dir_all(&wheels)
            .with_context(|| format!("removing {}", wheels.display()))?;
    }
    run(
        Command::new(bin.join("maturin"))
            .args(["build", "--release", "-q", "-o"])
            .arg(&wheels)
            .current_dir(root.join("python"))
            .env("CARGO_TARGET_DIR", &target),
        "maturin build --release (python/)",
    )?;
    let wheel = std::fs::read_dir(&wheels)
        .with_context(|| format!("listing {}", wheels.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .with_context(|| format!("maturin left no wheel in {}", wheels.display()))?;
    run(
        Command::new(bin.join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--force-reinstall",
                "--no-deps",
            ])
            .arg(&wheel),
        &format!("pip install {}", wheel.display()),
    )?;
    let cli = target.join("release").join("ipuc");
    if !cli.exists() {
        bail!(
            "{} is missing: the Python tests run the CLI built by the release steps before them",
            cli.display()
        );
    }
    run(
        Command::new(bin.join("python"))
            .args([
                "-m",
                "pytest",
                "python/tests",
                "-q",
                "-p",
                "no:cacheprovider",
            ])
            .current_dir(root)
            .env("IPUC_BIN", &cli)
            .env("IPUC_REQUIRE_CLI", "1"),
        "pytest python/tests (over the installed wheel)",
    )
}
