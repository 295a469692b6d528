//! `cargo xtask browser-check`: renders every HTML report of a small run in
//! headless Chromium (Debian's `chromium`), saves a screenshot of each, and
//! fails on JavaScript errors or views that did not render.
//!
//! Reports set `document.body.dataset.rendered` as the last statement of
//! their script, so a page whose script threw (or never ran) lacks it in
//! the DOM Chromium dumps; Chromium's console log (stderr) is scanned for
//! uncaught errors; a screenshot that is one flat colour counts as empty.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Chromium flags for a quiet, sandbox-free, network-free headless run.
const FLAGS: [&str; 10] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--allow-file-access-from-files",
];

fn chromium() -> Result<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("which").arg(name).output() {
            if out.status.success() {
                let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if !p.is_empty() {
                    return Ok(PathBuf::from(p));
                }
            }
        }
    }
    eprintln!("xtask browser-check: no chromium found; trying `apt-get install -y chromium` (Debian's package)");
    let ok = Command::new("apt-get")
        .args(["install", "-y", "chromium"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if ok {
        return Ok(PathBuf::from("/usr/bin/chromium"));
    }
    bail!("headless Chromium is needed: install Debian's package (`apt-get update && apt-get install -y chromium`, as root) and re-run")
}

/// One page's result.
pub struct PageCheck {
    pub page: PathBuf,
    pub screenshot: PathBuf,
    pub rendered: Option<String>,
    pub errors: Vec<String>,
    pub colours: usize,
}

fn profile_dir(out: &Path, name: &str) -> Result<PathBuf> {
    let d = out.join(format!("chromium-profile-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

fn check_page(browser: &Path, page: &Path, shots: &Path) -> Result<PageCheck> {
    let stem = page
        .strip_prefix(shots.parent().unwrap_or(shots))
        .unwrap_or(page)
        .display()
        .to_string()
        .replace(['/', '\\'], "_");
    let url = format!("file://{}", std::fs::canonicalize(page)?.display());
    let screenshot = shots.join(format!("{}.png", stem.trim_end_matches(".html")));
    let udd = profile_dir(shots, "shot")?;
    let out = Command::new(browser)
        .args(FLAGS)
        .arg(format!("--user-data-dir={}", udd.display()))
        .args([
            "--window-size=1400,1100",
            "--virtual-time-budget=10000",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url)
        .output()
        .with_context(|| format!("running {}", browser.display()))?;
    let mut errors: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("Error")))
        .map(str::to_string)
        .collect();
    let udd = profile_dir(shots, "dom")?;
    let dom = Command::new(browser)
        .args(FLAGS)
        .arg(format!("--user-data-dir={}", udd.display()))
        .args([
            "--virtual-time-budget=10000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(&url)
        .output()
        .with_context(|| format!("running {}", browser.display()))?;
    errors.extend(
        String::from_utf8_lossy(&dom.stderr)
            .lines()
            .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("Error")))
            .map(str::to_string),
    );
    let html = String::from_utf8_lossy(&dom.stdout);
    let rendered = html.find("data-rendered=\"").map(|i| {
        let rest = &html[i + 15..];
        rest[..rest.find('"').unwrap_or(0)].to_string()
    });
    let colours = match image::open(&screenshot) {
        Ok(img) => {
            let rgb = img.to_rgb8();
            let mut seen = std::collections::HashSet::new();
            for p in rgb.pixels().step_by(7) {
                seen.insert(p.0);
                if seen.len() > 64 {
                    break;
                }
            }
            seen.len()
        }
        Err(e) => {
            errors.push(format!("no screenshot: {e}"));
            0
        }
    };
    Ok(PageCheck {
        page: page.to_path_buf(),
        screenshot,
        rendered,
        errors,
        colours,
    })
}

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if !p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("chromium-profile"))
            {
                html_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "html") {
            out.push(p);
        }
    }
}

/// Runs the small workloads, renders every report, prints a table and
/// fails on any JS error, missing render mark or empty screenshot.
pub fn browser_check(root: &Path, out: &Path) -> Result<()> {
    let browser = chromium()?;
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out)?;
    let run = out.join("run");
    let ipuc = |args: &[&str]| -> Result<bool> {
        eprintln!("xtask: ipuc {}", args.join(" "));
        let status = Command::new(env!("CARGO"))
            .args(["run", "--release", "-q", "-p", "ipuc", "--"])
            .args(args)
            .current_dir(root)
            .status()?;
        Ok(status.success())
    };
    let s = |p: &Path| p.display().to_string();
    if !ipuc(&[
        "run",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "2",
        "--planning-tiles",
        "64",
        "--reference-run",
        "--profile-output",
        &s(&run.join("model.ipuprof")),
        "--memory-profile-directory",
        &s(&run.join("memory")),
    ])? {
        bail!("the small run failed");
    }
    // 27 layers on 16 tiles do not fit: the planner writes its rejection reports.
    let rejected = out.join("rejections");
    if ipuc(&[
        "compile",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "27",
        "--planning-tiles",
        "16",
        "--memory-profile-directory",
        &s(&rejected),
    ])? {
        bail!("27 layers on 16 tiles compiled; expected a memory rejection");
    }
    // Placement rejects when the planner is given more room than a tile has
    // (`--planner-data-budget`, a testing flag): its report, and the
    // rejected run's index.
    let placement = out.join("placement-rejection");
    if ipuc(&[
        "run",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "23",
        "--planning-tiles",
        "16",
        "--planner-data-budget",
        "600000",
        "--memory-profile-directory",
        &s(&placement),
        "--profile-output",
        &s(&placement),
    ])? {
        bail!("23 layers on 16 tiles with a 600,000-byte planner budget placed; expected a placement rejection");
    }
    let mut pages = Vec::new();
    html_files(out, &mut pages);
    if pages.is_empty() {
        bail!("no HTML reports were written under {}", out.display());
    }
    let shots = out.join("screenshots");
    std::fs::create_dir_all(&shots)?;
    let mut failed = 0;
    for page in &pages {
        let c = check_page(&browser, page, &shots)?;
        let needs_mark = !page.ends_with("index.html");
        let ok = c.errors.is_empty() && c.colours > 8 && (!needs_mark || c.rendered.is_some());
        if !ok {
            failed += 1;
        }
        println!(
            "{}  {}  rendered={}  colours={}{}  screenshot {}",
            if ok { "ok  " } else { "FAIL" },
            c.page.display(),
            c.rendered.as_deref().unwrap_or("-"),
            c.colours,
            if c.colours > 64 { "+" } else { "" },
            c.screenshot.display()
        );
        for e in &c.errors {
            println!("      {e}");
        }
    }
    for d in ["chromium-profile-shot", "chromium-profile-dom"] {
        let _ = std::fs::remove_dir_all(shots.join(d));
    }
    println!(
        "browser-check: {} passed, {failed} failed",
        pages.len() - failed
    );
    if failed > 0 {
        bail!("{failed} page(s) failed in Chromium");
    }
    Ok(())
}
