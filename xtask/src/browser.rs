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

/// Longest one Chromium call may take before it is killed and the page
/// counted as failed (a full-size report loads in about 1.5 s here).
const CHROMIUM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `cmd` as [`Command::output`] does (stdout and stderr read as they
/// come, so a 3 MB `--dump-dom` never blocks on a full pipe), but kills it
/// after [`CHROMIUM_TIMEOUT`]: a page or browser that never finishes is an
/// error naming the page, not a hang.
fn output_with_timeout(cmd: &mut Command, page: &Path) -> Result<std::process::Output> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting chromium")?;
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            r.read_to_end(&mut buf).ok();
            buf
        })
    };
    let out = reader(Box::new(child.stdout.take().context("chromium stdout")?));
    let err = reader(Box::new(child.stderr.take().context("chromium stderr")?));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > CHROMIUM_TIMEOUT {
            child.kill().ok();
            child.wait().ok();
            bail!(
                "chromium did not finish {} within {} s (killed)",
                page.display(),
                CHROMIUM_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Ok(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

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
    eprintln!("xtask browser-check: no chromium found; trying `apt-get install -y chromium` (Debian's package; this takes a minute or two before any page is checked)");
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
    /// A profile page's view after load (`data-view`: first and last
    /// cycle on screen).
    pub view: Option<String>,
    /// A profile page's op-lane labels drawn, and how many overlap the
    /// next one (`data-lane-labels`: `x0,x1` extents left to right).
    pub lane_labels: Option<(usize, usize)>,
}

/// Labels in `data-lane-labels` (`x0,x1 x0,x1 …`) and how many of them
/// overlap the label after them.
fn lane_label_overlaps(extents: &str) -> (usize, usize) {
    let mut spans: Vec<(i64, i64)> = extents
        .split_whitespace()
        .filter_map(|p| {
            let (a, b) = p.split_once(',')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect();
    spans.sort();
    let overlaps = spans.windows(2).filter(|w| w[0].1 > w[1].0).count();
    (spans.len(), overlaps)
}

fn profile_dir(out: &Path, name: &str) -> Result<PathBuf> {
    let d = out.join(format!("chromium-profile-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

fn check_page(browser: &Path, page: &Path, shots: &Path) -> Result<PageCheck> {
    check_view(browser, page, None, shots)
}

/// [`check_page`] of `page` opened at `view` (a URL fragment such as
/// `op=NAME` or `q=TEXT`; its screenshot is named after it).
fn check_view(browser: &Path, page: &Path, view: Option<&str>, shots: &Path) -> Result<PageCheck> {
    let stem = page
        .strip_prefix(shots.parent().unwrap_or(shots))
        .unwrap_or(page)
        .display()
        .to_string()
        .replace(['/', '\\'], "_");
    let mut url = format!("file://{}", std::fs::canonicalize(page)?.display());
    let mut shot = stem.trim_end_matches(".html").to_string();
    if let Some(v) = view {
        url.push('#');
        url.push_str(v);
        shot.push('-');
        shot.extend(
            v.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
    }
    let screenshot = shots.join(format!("{shot}.png"));
    let udd = profile_dir(shots, "shot")?;
    let mut out = Command::new(browser);
    out.args(FLAGS)
        .arg(format!("--user-data-dir={}", udd.display()))
        .args([
            "--window-size=1400,1100",
            "--virtual-time-budget=10000",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url);
    let out = output_with_timeout(&mut out, page)
        .with_context(|| format!("running {}", browser.display()))?;
    let mut errors = console_errors(&out.stderr);
    let udd = profile_dir(shots, "dom")?;
    let mut dom = Command::new(browser);
    dom.args(FLAGS)
        .arg(format!("--user-data-dir={}", udd.display()))
        .args([
            "--virtual-time-budget=10000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(&url);
    let dom = output_with_timeout(&mut dom, page)
        .with_context(|| format!("running {}", browser.display()))?;
    let view = attribute(&String::from_utf8_lossy(&dom.stdout), "data-view");
    errors.extend(console_errors(&dom.stderr));
    let html = String::from_utf8_lossy(&dom.stdout);
    let rendered = attribute(&html, "data-rendered");
    let lane_labels = attribute(&html, "data-lane-labels").map(|e| lane_label_overlaps(&e));
    let colours = match colours_in(&screenshot) {
        Ok(n) => n,
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
        view,
        lane_labels,
    })
}

/// The console errors (uncaught exceptions, errors) in Chromium's log.
fn console_errors(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("Error")))
        .map(str::to_string)
        .collect()
}

/// Distinct colours in a screenshot, counting to 65 at most: a blank or
/// failed page shows few.
fn colours_in(screenshot: &Path) -> image::ImageResult<usize> {
    let rgb = image::open(screenshot)?.to_rgb8();
    let mut seen = std::collections::HashSet::new();
    for p in rgb.pixels().step_by(7) {
        seen.insert(p.0);
        if seen.len() > 64 {
            break;
        }
    }
    Ok(seen.len())
}

/// The value of the first `name="…"` attribute in `html`.
fn attribute(html: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let rest = &html[html.find(&key)? + key.len()..];
    Some(rest[..rest.find('"')?].to_string())
}

/// A page loaded in real time (no virtual time budget): Chromium's wall
/// time to load it and dump its DOM, and the page's own navigation-start to
/// complete-render time (`data-render-ms`, set by every report's script).
pub struct LoadTime {
    pub wall_ms: u128,
    pub render_ms: Option<u64>,
    pub rendered: Option<String>,
    pub errors: Vec<String>,
}

fn load_time(browser: &Path, page: &Path, shots: &Path) -> Result<LoadTime> {
    let url = format!("file://{}", std::fs::canonicalize(page)?.display());
    let udd = profile_dir(shots, "timed")?;
    let start = std::time::Instant::now();
    let mut dom = Command::new(browser);
    dom.args(FLAGS)
        .arg(format!("--user-data-dir={}", udd.display()))
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(&url);
    let dom = output_with_timeout(&mut dom, page)
        .with_context(|| format!("running {}", browser.display()))?;
    let wall_ms = start.elapsed().as_millis();
    let html = String::from_utf8_lossy(&dom.stdout);
    Ok(LoadTime {
        wall_ms,
        render_ms: attribute(&html, "data-render-ms").and_then(|v| v.parse().ok()),
        rendered: attribute(&html, "data-rendered"),
        errors: String::from_utf8_lossy(&dom.stderr)
            .lines()
            .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("Error")))
            .map(str::to_string)
            .collect(),
    })
}

/// `cargo xtask browser-check --page P…`: renders the given pages (a
/// screenshot each, as for the small run), then loads each in real time
/// and prints its size and load times; fails on JS errors or a missing
/// render mark.
pub fn check_pages(pages: &[PathBuf], out: &Path) -> Result<()> {
    let browser = chromium()?;
    let shots = out.join("screenshots");
    std::fs::create_dir_all(&shots)?;
    let mut failed = 0;
    for page in pages {
        let c = check_page(&browser, page, &shots)?;
        let t = load_time(&browser, page, &shots)?;
        let bytes = std::fs::metadata(page).map(|m| m.len()).unwrap_or(0);
        // `index.html` has no script, so no render mark.
        let needs_mark = !is_index(page);
        let ok =
            c.errors.is_empty() && t.errors.is_empty() && (!needs_mark || t.rendered.is_some());
        if !ok {
            failed += 1;
        }
        println!(
            "{}  {}  {:.1} MB  load {} ms wall (Chromium start to DOM dump), render {} ms (navigation start to complete render)  rendered={}  screenshot {}",
            if ok { "ok  " } else { "FAIL" },
            page.display(),
            bytes as f64 / 1e6,
            t.wall_ms,
            t.render_ms.map_or("-".into(), |m| m.to_string()),
            t.rendered.as_deref().unwrap_or("-"),
            c.screenshot.display()
        );
        for e in c.errors.iter().chain(&t.errors) {
            println!("      {e}");
        }
    }
    for d in [
        "chromium-profile-shot",
        "chromium-profile-dom",
        "chromium-profile-timed",
    ] {
        let _ = std::fs::remove_dir_all(shots.join(d));
    }
    if failed > 0 {
        bail!("{failed} page(s) failed in Chromium");
    }
    Ok(())
}

/// The profile page opened at an operation (`#op=NAME`: zoomed to it) and
/// at a search (`#q=TEXT`), full and summarized: each renders without
/// error, and the operation link's view is narrower than the whole run.
/// Returns how many failed (each printed).
fn check_profile_views(browser: &Path, run: &Path, shots: &Path) -> Result<usize> {
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("model.ipuprof"))?)?;
    let op = profile["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["operation"].as_str())
        .filter(|o| o.contains("layers.13.mlp.fc1"))
        .min_by_key(|o| o.len())
        .context("no layers.13.mlp.fc1 step in the profile")?
        .to_string();
    let whole = check_view(browser, &run.join("model.html"), None, shots)?.view;
    let mut failed = 0;
    for (page, view) in [
        ("model.html", format!("op={}", op.replace(' ', "%20"))),
        ("model.html", "q=self_attn".to_string()),
        ("summarized.html", "q=mlp.fc1".to_string()),
        // Scrolled to the "Where the cycles come from" table: its prose
        // wraps inside the page.
        ("model.html", "sources".to_string()),
    ] {
        let c = check_view(browser, &run.join(page), Some(&view), shots)?;
        let span = |v: &Option<String>| -> Option<f64> {
            let (a, b) = v.as_deref()?.split_once(',')?;
            Some(b.parse::<f64>().ok()? - a.parse::<f64>().ok()?)
        };
        let zoomed = !view.starts_with("op=")
            || matches!((span(&c.view), span(&whole)), (Some(z), Some(w)) if z < w / 4.0);
        let overlapping = c.lane_labels.map_or(0, |l| l.1);
        let ok = c.errors.is_empty()
            && c.rendered.is_some()
            && c.colours > 8
            && zoomed
            && overlapping == 0;
        if !ok {
            failed += 1;
        }
        println!(
            "{}  {page}#{view}  rendered={}  op-lane labels overlapping={overlapping}  view={} (whole run {})  screenshot {}",
            if ok { "ok  " } else { "FAIL" },
            c.rendered.as_deref().unwrap_or("-"),
            c.view.as_deref().unwrap_or("-"),
            whole.as_deref().unwrap_or("-"),
            c.screenshot.display()
        );
        for e in &c.errors {
            println!("      {e}");
        }
    }
    Ok(failed)
}

/// A Perfetto trace as Perfetto reads it: gzipped Trace Event Format JSON with
/// `traceEvents`, its schema in `otherData`, complete events that never
/// overlap on one thread (Perfetto drops slices that overlap rather than
/// nest). Returns 1 (and prints why) when it is not, else 0.
fn check_trace(path: &Path) -> usize {
    let problem = (|| -> Result<String> {
        let gz = std::fs::read(path)?;
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text)
            .context("not a gzip stream")?;
        let trace: serde_json::Value = serde_json::from_slice(&text)?;
        if trace["otherData"]["schema"] != "ipuc.trace" {
            bail!("otherData.schema is not ipuc.trace");
        }
        if trace.get("displayTimeUnit").is_some() {
            bail!("displayTimeUnit is set: older Perfetto importers take it as the unit of ts");
        }
        let events = trace["traceEvents"].as_array().context("no traceEvents")?;
        let mut tracks: std::collections::BTreeMap<(u64, u64), Vec<(u64, u64)>> =
            Default::default();
        let ns = |v: &serde_json::Value| v.as_f64().map(|x| (x * 1000.0).round() as u64);
        for e in events.iter().filter(|e| e["ph"] == "X") {
            let key = (
                e["pid"].as_u64().context("pid")?,
                e["tid"].as_u64().context("tid")?,
            );
            let (ts, dur) = (ns(&e["ts"]).context("ts")?, ns(&e["dur"]).context("dur")?);
            tracks.entry(key).or_default().push((ts, dur));
        }
        let mut slices = 0;
        for (key, mut v) in tracks.clone() {
            v.sort();
            slices += v.len();
            if let Some(w) = v.windows(2).find(|w| w[0].0 + w[0].1 > w[1].0) {
                bail!(
                    "track {key:?}: a slice at {} ns overlaps the next at {} ns",
                    w[0].0,
                    w[1].0
                );
            }
        }
        Ok(format!(
            "{slices} slices on {} tracks, none overlapping; {} bytes gzipped, {} as JSON",
            tracks.len(),
            gz.len(),
            text.len()
        ))
    })();
    match problem {
        Ok(what) => {
            println!("ok    {}  Perfetto trace: {what}", path.display());
            0
        }
        Err(e) => {
            println!("FAIL  {}  Perfetto trace: {e:#}", path.display());
            1
        }
    }
}

/// A run's artifact index (`index.html`, `model.index.html`): a page
/// without a script, so without a render mark.
fn is_index(page: &Path) -> bool {
    page.file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with("index.html"))
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

/// The `ipuc` arguments of forced-rejection case `case` in
/// `host/tests/fixtures/rejections.txt` (shared with the CLI tests).
fn rejection_args(case: &str) -> Result<Vec<&'static str>> {
    const CASES: &str = include_str!("../../host/tests/fixtures/rejections.txt");
    CASES
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(case)?.strip_prefix(": "))
        .map(|a| a.split_whitespace().collect())
        .ok_or_else(|| anyhow::anyhow!("no case `{case}` in host/tests/fixtures/rejections.txt"))
}

/// Runs the small workloads, renders every report, prints a table and
/// fails on any JS error, missing render mark or empty screenshot.
pub fn browser_check(root: &Path, out: &Path) -> Result<()> {
    let browser = chromium()?;
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out)?;
    let run = out.join("run");
    std::fs::create_dir_all(&run)?;
    let mut failed = write_reports(root, out, &run)?;
    let mut pages = Vec::new();
    html_files(out, &mut pages);
    if pages.is_empty() {
        bail!("no HTML reports were written under {}", out.display());
    }
    let shots = out.join("screenshots");
    std::fs::create_dir_all(&shots)?;
    failed += open_pages(&browser, &pages, &shots)?;
    failed += check_profile_views(&browser, &run, &shots)?;
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

/// Writes every kind of report under `out`: a small run's (in `run`),
/// the same package's summarized profile, and the forced memory
/// rejections'. Returns how many of the run's traces failed their check.
fn write_reports(root: &Path, out: &Path, run: &Path) -> Result<usize> {
    let ipuc = |args: &[&str]| -> Result<bool> {
        eprintln!("xtask: ipuc {}", args.join(" "));
        let status = Command::new(env!("CARGO"))
            .args(crate::RUN_IPUC_RELEASE)
            .args(args)
            .current_dir(root)
            .status()?;
        Ok(status.success())
    };
    let s = |p: &Path| p.display().to_string();
    // 27 layers (the So400m depth) of the small model: a profile of every
    // iteration in full, then the same package's profile summarized.
    if !ipuc(&[
        "run",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "27",
        "--planning-tiles",
        "64",
        "--reference-run",
        "--package",
        &s(&run.join("model.ipuc")),
        "--profile-output",
        &s(&run.join("model.ipuprof")),
        "--memory-profile-directory",
        &s(&run.join("memory")),
    ])? {
        bail!("the small run failed");
    }
    if !ipuc(&[
        "exec",
        &s(&run.join("model.ipuc")),
        "--profile-output",
        &s(&run.join("summarized.ipuprof")),
        "--profile-detail",
        "summary",
    ])? {
        bail!("exec of the small run's package failed");
    }
    let failed = check_trace(&run.join("model.trace.json.gz"))
        + check_trace(&run.join("summarized.trace.json.gz"));
    // The forced memory rejections the CLI tests use
    // (`host/tests/fixtures/rejections.txt`): the planner's, placement's and
    // a late one (patch data), each writing its reports.
    for (case, subcommand) in [
        ("planner", "compile"),
        ("placement", "run"),
        ("patch-data", "run"),
    ] {
        let dir = out.join(format!("{case}-rejection"));
        let mut args = vec![subcommand];
        args.extend(rejection_args(case)?);
        let dir_s = s(&dir);
        args.extend(["--memory-profile-directory", &dir_s]);
        if subcommand == "run" {
            // A rejected run's index links its reports.
            args.extend(["--profile-output", &dir_s]);
        }
        if ipuc(&args)? {
            bail!("the `{case}` case of fixtures/rejections.txt compiled; expected a memory rejection");
        }
    }
    Ok(failed)
}

/// Opens each page in Chromium and prints a line for it; returns how many
/// failed (a JS error, no render mark, or a screenshot of 8 colours or
/// fewer).
fn open_pages(browser: &Path, pages: &[PathBuf], shots: &Path) -> Result<usize> {
    let mut failed = 0;
    for page in pages {
        let c = check_page(browser, page, shots)?;
        let needs_mark = !is_index(page);
        let overlapping = c.lane_labels.map_or(0, |l| l.1);
        let ok = c.errors.is_empty()
            && c.colours > 8
            && (!needs_mark || c.rendered.is_some())
            && overlapping == 0;
        if !ok {
            failed += 1;
        }
        println!(
            "{}  {}  rendered={}  colours={}{}{}  screenshot {}",
            if ok { "ok  " } else { "FAIL" },
            c.page.display(),
            c.rendered.as_deref().unwrap_or("-"),
            c.colours,
            if c.colours > 64 { "+" } else { "" },
            c.lane_labels.map_or(String::new(), |(n, o)| format!(
                "  op-lane labels={n} overlapping={o}"
            )),
            c.screenshot.display()
        );
        for e in &c.errors {
            println!("      {e}");
        }
    }
    Ok(failed)
}
