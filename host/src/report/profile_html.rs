//! `profile.html`: a standalone canvas timeline of a [`Profile`].
//!
//! The data is embedded as compact JSON (interned operation names, shared
//! step descriptors, per-tile delta-encoded samples) so a 1472-tile profile
//! with thousands of steps per tile stays a file a browser opens quickly.

use serde::Serialize;

use super::html::{embed_json, thousands};
use super::operations::{summarize, OperationSummary};
use super::profile::{Profile, StepKind};
use super::template::render_page;

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
    /// Per step: `[kind index, operation index, iteration or -1, summed
    /// (0/1)]`.
    steps: Vec<[i64; 4]>,
    /// Logical tile ids (the planner's numbering), in order.
    tiles: Vec<u32>,
    /// Physical C600 id of each (the simulator's and the package's).
    physical: Vec<u32>,
    /// Per tile, flat triples: step index delta, start minus previous end,
    /// duration (all cycles relative, so numbers stay short).
    samples: Vec<Vec<i64>>,
    span: [u64; 2],
    /// `[iteration, start, end, compute, exchange, sync, patch]`: the
    /// iteration's span and its tile-cycles per step kind.
    iterations: Vec<[u64; 7]>,
    /// The profile is summarized: Repeat iterations after the first are
    /// one summed sample per step kind per tile.
    summarized: bool,
    /// The op lane: steps in order of their first start, consecutive steps
    /// of one operation merged into one block `[operation index, start,
    /// end]` (first start to last end over all tiles); a summarized
    /// iteration is one block `[-1 − iteration, start, end]`.
    lane: Vec<[i64; 3]>,
    operations: Vec<OperationSummary>,
}

/// A kernel-timing table row, numbers formatted for the page.
#[derive(Serialize)]
struct KernelRow<'a> {
    kernel: &'a str,
    calls: String,
    planned: String,
    simulated: String,
    error: String,
}

/// Planner estimate vs the simulator's kernel timing model per kernel kind.
fn kernel_rows(profile: &Profile) -> Vec<KernelRow<'_>> {
    profile
        .kernels
        .iter()
        .map(|k| KernelRow {
            kernel: &k.kernel,
            calls: thousands(k.calls),
            planned: thousands(k.planned_cycles),
            simulated: thousands(k.simulated_cycles),
            error: format!("{:+.1}%", k.error_percent()),
        })
        .collect()
}

/// Logical id of physical C600 tile `tile` (itself if out of range).
pub(crate) fn logical_tile(tile: u32) -> u32 {
    ipuc_target::ipu21::topology::PhysicalTile::new(tile)
        .map_or(tile, |t| u32::from(t.logical().get()))
}

/// The op lane of `profile` ([`TimelineData::lane`]): `key` of each step
/// (its operation index, or −1 − iteration for a summed step).
fn op_lane(profile: &Profile, key: &[i64]) -> Vec<[i64; 3]> {
    let mut span = vec![(u64::MAX, 0u64); profile.steps.len()];
    for s in profile.tiles.iter().flat_map(|t| t.samples.iter()) {
        if let Some(x) = span.get_mut(s.step as usize) {
            x.0 = x.0.min(s.start_cycle);
            x.1 = x.1.max(s.end_cycle);
        }
    }
    // In time order (a summarized profile lists its summed steps last).
    let mut order: Vec<usize> = (0..span.len())
        .filter(|&i| span[i].0 <= span[i].1)
        .collect();
    order.sort_by_key(|&i| (span[i].0, i));
    let mut lane: Vec<[i64; 3]> = Vec::new();
    for step in order {
        let (start, end) = (span[step].0 as i64, span[step].1 as i64);
        match lane.last_mut() {
            Some(last) if last[0] == key[step] => {
                last[1] = last[1].min(start);
                last[2] = last[2].max(end);
            }
            _ => lane.push([key[step], start, end]),
        }
    }
    lane
}

/// Interned operation names and each step's descriptor
/// ([`TimelineData::ops`], [`TimelineData::steps`]).
fn step_descriptors(profile: &Profile) -> (Vec<&str>, Vec<[i64; 4]>) {
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
                i64::from(s.summed),
            ]
        })
        .collect();
    (ops, steps)
}

/// The tiles in logical order, as in the memory reports (the samples carry
/// the simulator's physical ids), each with its logical id.
pub(crate) fn tiles_in_logical_order(profile: &Profile) -> Vec<(u32, &super::TileSamples)> {
    let mut tiles: Vec<(u32, &super::TileSamples)> = profile
        .tiles
        .iter()
        .map(|t| (logical_tile(t.tile), t))
        .collect();
    tiles.sort_by_key(|(logical, t)| (*logical, t.tile));
    tiles
}

/// A tile's samples as [`TimelineData::samples`]' delta-encoded triples.
fn delta_samples(t: &super::TileSamples, span_start: u64) -> Vec<i64> {
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
}

/// [`TimelineData::iterations`]: each iteration's span and tile-cycles per
/// step kind.
fn iteration_rows(profile: &Profile) -> Vec<[u64; 7]> {
    let kind_cycles: std::collections::BTreeMap<u32, [u64; 4]> =
        profile.iteration_kind_cycles().into_iter().collect();
    profile
        .iteration_spans()
        .iter()
        .map(|s| {
            let k = kind_cycles.get(&s.iteration).copied().unwrap_or_default();
            [
                u64::from(s.iteration),
                s.start_cycle,
                s.end_cycle,
                k[0],
                k[1],
                k[2],
                k[3],
            ]
        })
        .collect()
}

/// Renders the standalone timeline page.
pub fn render(profile: &Profile) -> anyhow::Result<String> {
    profile.validate()?;
    let (ops, steps) = step_descriptors(profile);
    let lane_keys: Vec<i64> = steps
        .iter()
        .map(|s| if s[3] == 1 { -1 - s[2] } else { s[1] })
        .collect();
    let lane = op_lane(profile, &lane_keys);
    let (span_start, span_end) = profile.span().unwrap_or((0, 0));
    let tiles = tiles_in_logical_order(profile);
    let mut operations = summarize(profile);
    operations.truncate(TABLE_OPERATIONS);
    let data = TimelineData {
        title: &profile.title,
        simulated: profile.simulated,
        clock_hz: profile.clock_hz,
        kinds: StepKind::ALL.map(StepKind::name),
        ops,
        steps,
        tiles: tiles.iter().map(|(logical, _)| *logical).collect(),
        physical: tiles.iter().map(|(_, t)| t.tile).collect(),
        samples: tiles
            .iter()
            .map(|(_, t)| delta_samples(t, span_start))
            .collect(),
        span: [span_start, span_end],
        iterations: iteration_rows(profile),
        summarized: profile.is_summarized(),
        lane,
        operations,
    };
    let json = embed_json(&data)?;
    let span = span_end - span_start;
    let label = if profile.simulated {
        "simulated"
    } else {
        "measured"
    };
    // Which cycles are simulated and which modelled (simulator profiles only).
    let sources: &[(&str, &str)] = if profile.simulated {
        &super::profile::CYCLE_SOURCES
    } else {
        &[]
    };
    let body = minijinja::context! {
        label,
        span => thousands(span),
        ms => format!("{:.6}", profile.millis(span)),
        ghz => (profile.clock_hz as f64 / 1e9).to_string(),
        tiles => profile.tiles.len(),
        steps => thousands(profile.steps.len() as u64),
        samples => thousands(profile.sample_count() as u64),
        sources,
        kernels => kernel_rows(profile),
        summarized => profile.is_summarized(),
    };
    Ok(render_page(
        "profile.html",
        &profile.title,
        CSS,
        Some(&json),
        SCRIPT,
        body,
    )?)
}
