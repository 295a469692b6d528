//! Build facts for `ipuc --version`: the git commit this binary was built
//! from (when built from a git checkout with git on PATH; otherwise it says
//! so) and the build profile.

use std::path::PathBuf;
use std::process::Command;

/// The manifest directory as cargo gives it to this run of the script. Not
/// `env!`: that is fixed when the script is compiled, and cargo reuses a
/// compiled build script for the same package in another checkout (a copied
/// or shared target directory), which then reported the other checkout's
/// commit.
fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()))
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(manifest_dir())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    println!(
        "cargo:rustc-env=IPUC_COMMIT={}",
        commit
            .as_deref()
            .unwrap_or("unknown (not built from a git checkout)")
    );
    println!(
        "cargo:rustc-env=IPUC_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into())
    );
    // Rebuild when HEAD moves: HEAD itself (a branch switch) and the ref it
    // names (a commit). Without git, nothing to watch.
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={}", absolute(&head).display());
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(path) = git(&["rev-parse", "--git-path", &reference]) {
            println!("cargo:rerun-if-changed={}", absolute(&path).display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// `git rev-parse --git-path` answers relative to the manifest directory.
fn absolute(path: &str) -> PathBuf {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        p
    } else {
        manifest_dir().join(p)
    }
}
