//! Per-operation summaries of a profile (`operations.json`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::profile::{KernelKindTiming, Profile, StepKind, CYCLE_SOURCES};

/// `operations.json`: where the cycles come from, the planner-vs-simulated
/// kernel table and the per-operation summaries.
#[derive(Clone, Debug, Serialize)]
pub struct OperationsFile {
    /// True for simulator profiles.
    pub simulated: bool,
    /// `part → how its cycles are obtained` (simulated vs modelled).
    pub cycle_sources: BTreeMap<&'static str, &'static str>,
    /// Per kernel kind: planner estimate vs the simulator's timing model.
    pub kernel_timing: Vec<KernelTimingRow>,
    pub operations: Vec<OperationSummary>,
}

/// One row of [`OperationsFile::kernel_timing`].
#[derive(Clone, Debug, Serialize)]
pub struct KernelTimingRow {
    #[serde(flatten)]
    pub kind: KernelKindTiming,
    /// `(planned − simulated) / simulated × 100`.
    pub planner_error_percent: f64,
}

impl OperationsFile {
    pub fn of(profile: &Profile) -> Self {
        Self {
            simulated: profile.simulated,
            cycle_sources: CYCLE_SOURCES.into_iter().collect(),
            kernel_timing: profile
                .kernels
                .iter()
                .map(|k| KernelTimingRow {
                    kind: k.clone(),
                    planner_error_percent: k.error_percent(),
                })
                .collect(),
            operations: summarize(profile),
        }
    }
}

/// Everything the profile says about one operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationSummary {
    pub operation: String,
    /// Samples (tile × step executions).
    pub count: u64,
    /// Sum of sample cycles over all tiles (tile-cycles).
    pub total_cycles: u64,
    pub min_cycles: u64,
    pub max_cycles: u64,
    /// Cycles during which at least one tile is in one of the operation's
    /// steps (union of the steps' first-start..last-end spans).
    pub wall_cycles: u64,
    /// Distinct tiles with at least one sample.
    pub tiles: u32,
    /// Tile-cycles per step kind.
    pub cycles_by_kind: BTreeMap<StepKind, u64>,
}

/// Summaries sorted by wall cycles (largest first), then name.
pub fn summarize(profile: &Profile) -> Vec<OperationSummary> {
    struct Acc {
        count: u64,
        total: u64,
        min: u64,
        max: u64,
        tiles: BTreeSet<u32>,
        by_kind: BTreeMap<StepKind, u64>,
    }
    let mut by_op: BTreeMap<&str, Acc> = BTreeMap::new();
    // Per step: (first start, last end) over tiles, for wall cycles.
    let mut step_span: Vec<Option<(u64, u64)>> = vec![None; profile.steps.len()];
    for t in &profile.tiles {
        for s in &t.samples {
            let Some(step) = profile.steps.get(s.step as usize) else {
                continue;
            };
            let c = s.cycles();
            let acc = by_op.entry(step.operation.as_str()).or_insert_with(|| Acc {
                count: 0,
                total: 0,
                min: u64::MAX,
                max: 0,
                tiles: BTreeSet::new(),
                by_kind: BTreeMap::new(),
            });
            acc.count += 1;
            acc.total += c;
            acc.min = acc.min.min(c);
            acc.max = acc.max.max(c);
            acc.tiles.insert(t.tile);
            *acc.by_kind.entry(step.kind).or_default() += c;
            let span = &mut step_span[s.step as usize];
            *span = Some(match *span {
                None => (s.start_cycle, s.end_cycle),
                Some((a, b)) => (a.min(s.start_cycle), b.max(s.end_cycle)),
            });
        }
    }
    // Wall cycles: length of the union of the operation's step spans (its
    // compute and sync steps overlap, so plain sums would double count).
    let mut spans: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for (step, span) in profile.steps.iter().zip(&step_span) {
        if let Some(s) = span {
            spans.entry(step.operation.as_str()).or_default().push(*s);
        }
    }
    let wall: BTreeMap<&str, u64> = spans
        .into_iter()
        .map(|(op, s)| (op, union_length(s)))
        .collect();
    let mut out: Vec<OperationSummary> = by_op
        .into_iter()
        .map(|(op, a)| OperationSummary {
            operation: op.to_string(),
            count: a.count,
            total_cycles: a.total,
            min_cycles: a.min,
            max_cycles: a.max,
            wall_cycles: wall.get(op).copied().unwrap_or(0),
            tiles: a.tiles.len() as u32,
            cycles_by_kind: a.by_kind,
        })
        .collect();
    out.sort_by(|a, b| {
        b.wall_cycles
            .cmp(&a.wall_cycles)
            .then_with(|| a.operation.cmp(&b.operation))
    });
    out
}

/// Total length covered by a set of intervals.
fn union_length(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.sort_unstable();
    let mut total = 0;
    let mut current: Option<(u64, u64)> = None;
    for (a, b) in spans {
        current = match current {
            Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += cb - ca;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    total + current.map_or(0, |(a, b)| b - a)
}
