//! `profile.html`: a standalone canvas timeline of a [`Profile`].
//!
//! The data is embedded as compact JSON (interned operation names, shared
//! step descriptors, per-tile delta-encoded samples) so a 1472-tile profile
//! with thousands of steps per tile stays a file a browser opens quickly.

use serde::Serialize;

use super::html::{embed_json, escape, page, thousands};
use super::operations::{summarize, OperationSummary};
use super::profile::{Profile, StepKind};

const SCRIPT: &str = include_str!("assets/profile.js");
const CSS: &str = include_str!("assets/profile.css");

/// Operations listed in the page's table (the JSON file has all of them).
const TABLE_OPERATIONS: usize = 60;

#[derive(Serialize)]
struct TimelineData<'a> {
    title: &'a str,
    simulated: bool,
    clock_hz: u64,
    kinds: [&'static str; 4],
    ops: Vec<&'a str>,
    /// Per step: `[kind index, operation index, iteration or -1]`.
    steps: Vec<[i64; 3]>,
    tiles: Vec<u32>,
    /// Per tile, flat triples: step index delta, start minus previous end,
    /// duration (all cycles relative, so numbers stay short).
    samples: Vec<Vec<i64>>,
    span: [u64; 2],
    /// `[iteration, start, end]`.
    iterations: Vec<[u64; 3]>,
    operations: Vec<OperationSummary>,
}

/// Which cycles are simulated and which modelled (simulator profiles only).
fn sources_html(profile: &Profile) -> String {
    if !profile.simulated {
        return String::new();
    }
    let rows: String = super::profile::CYCLE_SOURCES
        .iter()
        .map(|(part, how)| format!("<tr><td>{}</td><td>{}</td></tr>", escape(part), escape(how)))
        .collect();
    format!("<section><h2>Where the cycles come from</h2><table><tr><th>part</th><th>cycles</th></tr>{rows}</table></section>")
}

/// Planner estimate vs the simulator's kernel timing model per kernel kind.
fn kernels_html(profile: &Profile) -> String {
    if profile.kernels.is_empty() {
        return String::new();
    }
    let rows: String = profile
        .kernels
        .iter()
        .map(|k| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:+.1}%</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&k.kernel),
                thousands(k.calls),
                thousands(k.planned_cycles),
                thousands(k.simulated_cycles),
                k.error_percent(),
                thousands(k.amp_misaligned),
                thousands(k.amp_output_standard),
                thousands(k.amp_shared_element)
            )
        })
        .collect();
    format!("<section><h2>Kernel timing: planner estimate vs simulator model (tile-cycles over all tiles)</h2><table><tr><th>kernel</th><th>calls</th><th>planner</th><th>simulator (modelled)</th><th>planner error</th><th>AMP operand not 32-byte aligned</th><th>AMP out in standard memory</th><th>AMP left/out same element</th></tr>{rows}</table></section>")
}

/// Renders the standalone timeline page.
pub fn render(profile: &Profile) -> anyhow::Result<String> {
    profile.validate()?;
    let mut ops: Vec<&str> = profile.steps.iter().map(|s| s.operation.as_str()).collect();
    ops.sort_unstable();
    ops.dedup();
    let steps = profile
        .steps
        .iter()
        .map(|s| {
            let op = ops.binary_search(&s.operation.as_str()).unwrap_or(0) as i64;
            [
                i64::from(s.kind.code()),
                op,
                s.iteration.map_or(-1, i64::from),
            ]
        })
        .collect();
    let (span_start, span_end) = profile.span().unwrap_or((0, 0));
    let mut tiles: Vec<_> = profile.tiles.iter().collect();
    tiles.sort_by_key(|t| t.tile);
    let samples = tiles
        .iter()
        .map(|t| {
            let mut flat = Vec::with_capacity(t.samples.len() * 3);
            let (mut prev_step, mut prev_end) = (0i64, span_start as i64);
            for s in &t.samples {
                flat.push(i64::from(s.step) - prev_step);
                flat.push(s.start_cycle as i64 - prev_end);
                flat.push(s.cycles() as i64);
                prev_step = i64::from(s.step);
                prev_end = s.end_cycle as i64;
            }
            flat
        })
        .collect();
    let mut operations = summarize(profile);
    operations.truncate(TABLE_OPERATIONS);
    let data = TimelineData {
        title: &profile.title,
        simulated: profile.simulated,
        clock_hz: profile.clock_hz,
        kinds: StepKind::ALL.map(StepKind::name),
        ops,
        steps,
        tiles: tiles.iter().map(|t| t.tile).collect(),
        samples,
        span: [span_start, span_end],
        iterations: profile
            .iteration_spans()
            .iter()
            .map(|s| [u64::from(s.iteration), s.start_cycle, s.end_cycle])
            .collect(),
        operations,
    };
    let json = embed_json(&data)?;
    let span = span_end - span_start;
    let label = if profile.simulated {
        "simulated"
    } else {
        "measured"
    };
    let body = format!(
        r#"<header>
<h1>{title}<span class="badge">{label}</span></h1>
<div class="stats"><span>span <b>{span}</b> cycles = <b>{ms:.6} ms</b> at {ghz} GHz ({label})</span><span><b>{tiles}</b> tiles</span><span><b>{steps}</b> steps</span><span><b>{samples}</b> samples</span><span id="iterstat"></span></div>
<div class="controls">
<span class="legend" id="legend"></span>
<label>tiles per row <select id="group"></select></label>
<button id="zin" title="zoom in (+)">+</button><button id="zout" title="zoom out (-)">&minus;</button><button id="reset" title="reset view (double-click)">reset</button>
<span class="muted">wheel: zoom · drag: pan · shift+wheel: scroll rows · hover: details</span>
</div>
</header>
<div id="wrap"><canvas id="chart"></canvas></div>
<div id="tip"></div>
{sources}{kernels}<section><h2>Operations (by wall cycles)</h2><div id="ops"></div></section>"#,
        sources = sources_html(profile),
        kernels = kernels_html(profile),
        title = escape(&profile.title),
        span = thousands(span),
        ms = profile.millis(span),
        ghz = profile.clock_hz as f64 / 1e9,
        tiles = profile.tiles.len(),
        steps = thousands(profile.steps.len() as u64),
        samples = thousands(profile.sample_count() as u64),
    );
    Ok(page(&profile.title, CSS, &body, Some(&json), SCRIPT))
}
