//! Execution profile: per tile, per step start/end cycles.
//!
//! Steps are described once in [`Profile::steps`] (kind, operation, Repeat
//! iteration) and every tile's samples refer to them by index, as in a BSP
//! program all tiles run the same step sequence. A Repeat body step executed
//! 27 times is 27 step descriptors, one per iteration.

use std::collections::BTreeSet;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

pub use ipuc_target::package::StepKind;

/// One step of the global program order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileStep {
    pub kind: StepKind,
    pub operation: String,
    /// Repeat iteration (0-based) for steps inside a Repeat body.
    pub iteration: Option<u32>,
    /// A summed step of a summarized profile
    /// ([`Profile::with_iteration_summaries`]): it stands for every step of
    /// its kind in its Repeat iteration, and its sample on a tile lasts as
    /// long as those steps did on that tile, added up.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summed: bool,
}

/// The name a reader knows for `operation` run in Repeat `iteration`: the
/// encoder body's ops are labelled once for all layers
/// (`encoder.layers.*.mlp.fc1`, [`crate::model::LAYER`]); in an iteration
/// the `*` becomes the layer, `encoder.layers.3.mlp.fc1`. Other names are
/// returned as they are.
pub fn operation_in_iteration(operation: &str, iteration: Option<u32>) -> String {
    let layer = crate::model::LAYER;
    match (iteration, operation.strip_prefix(layer)) {
        (Some(i), Some(rest)) => {
            let prefix = layer.trim_end_matches('*');
            format!("{prefix}{i}{rest}")
        }
        _ => operation.to_string(),
    }
}

/// One executed step on one tile: `[step index, start cycle, end cycle)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "(u32, u64, u64)", from = "(u32, u64, u64)")]
pub struct CycleSample {
    pub step: u32,
    pub start_cycle: u64,
    pub end_cycle: u64,
}

impl CycleSample {
    pub fn cycles(&self) -> u64 {
        self.end_cycle.saturating_sub(self.start_cycle)
    }
}

impl From<CycleSample> for (u32, u64, u64) {
    fn from(s: CycleSample) -> Self {
        (s.step, s.start_cycle, s.end_cycle)
    }
}

impl From<(u32, u64, u64)> for CycleSample {
    fn from((step, start_cycle, end_cycle): (u32, u64, u64)) -> Self {
        CycleSample {
            step,
            start_cycle,
            end_cycle,
        }
    }
}

/// The samples of one tile, sorted by start cycle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileSamples {
    /// Physical C600 tile id (the simulator's and the package's);
    /// `profile.html` labels rows by the logical id, physical beside it.
    pub tile: u32,
    pub samples: Vec<CycleSample>,
}

/// A whole run's profile (`profile.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    pub title: String,
    /// True for simulator profiles; figures derived from them say so.
    pub simulated: bool,
    pub clock_hz: u64,
    pub steps: Vec<ProfileStep>,
    pub tiles: Vec<TileSamples>,
    /// Planner estimate vs the simulator's kernel timing model, per kernel
    /// kind (empty for profiles without codelet calls).
    #[serde(default)]
    pub kernels: Vec<KernelKindTiming>,
}

/// Which cycles of a simulator profile come from executed instructions and
/// which from a model (`[(part, how)]`), for every report to print.
pub const CYCLE_SOURCES: [(&str, &str); 6] = [
    (
        "supervisor code",
        "simulated from IPU21 instructions in SRAM",
    ),
    ("worker code", "simulated from IPU21 instructions in SRAM"),
    (
        "patchers (Repeat word, row lists)",
        "simulated from IPU21 instructions in SRAM",
    ),
    (
        "exchange rows",
        "simulated: rows stepped from SRAM by the fabric's own witness, words moved with the route timing model",
    ),
    (
        "kernel bodies (native codelets)",
        "modelled: the simulator's kernel timing model (ipuc_sim::kernel_timing) at the kernel rates of docs/facts/kernel-rates.md (`ipuc rates`: each with its source, measured, vendor-estimated or an estimate; --rate-band prints both ends)",
    ),
    (
        "global sync latency",
        "modelled: a fixed cycle count per sync (--sync-cycles)",
    ),
];

/// All calls of one kernel kind in a run: the compiler's estimate against
/// what the simulator's kernel timing model charged (both over all tiles).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelKindTiming {
    /// Kernel symbol (`gemm_amp`, `softmax`, …).
    pub kernel: String,
    /// Calls over all tiles.
    pub calls: u64,
    /// Sum of the planner's estimates of those calls.
    pub planned_cycles: u64,
    /// Sum of the cycles the simulator's timing model charged (modelled).
    pub simulated_cycles: u64,
}

impl KernelKindTiming {
    /// Planner error relative to the simulator, in percent
    /// (`(planned − simulated) / simulated × 100`).
    pub fn error_percent(&self) -> f64 {
        if self.simulated_cycles == 0 {
            0.0
        } else {
            (self.planned_cycles as f64 - self.simulated_cycles as f64) * 100.0
                / self.simulated_cycles as f64
        }
    }
}

/// Samples above which the written profile (`profile.json`,
/// `profile.html`, the trace) is summarized ([`ProfileDetail::Auto`]): a
/// 27-layer So400m trace is ~27 × 260,000 samples, which a browser does not
/// open in a few seconds. `operations.json` is always summed over every
/// sample.
pub const DETAILED_SAMPLES: usize = 1_000_000;

/// How much of a profile is written (`--profile-detail`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileDetail {
    /// Every sample up to 1,000,000 (`DETAILED_SAMPLES`), summarized above.
    #[default]
    Auto,
    /// Every sample, whatever the size.
    Full,
    /// Summarized whenever the Repeat runs more than once.
    Summary,
}

/// First and last cycle of one Repeat iteration over all tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationSpan {
    pub iteration: u32,
    pub start_cycle: u64,
    pub end_cycle: u64,
}

impl IterationSpan {
    /// Cycles from the iteration's first step start to its last step end.
    pub fn cycles(&self) -> u64 {
        self.end_cycle.saturating_sub(self.start_cycle)
    }
}

impl Profile {
    /// Checks step references and sample order; sorts nothing.
    pub fn validate(&self) -> Result<()> {
        let mut seen = BTreeSet::new();
        for t in &self.tiles {
            if !seen.insert(t.tile) {
                bail!("profile: tile {} appears twice", t.tile);
            }
            let mut previous_start = 0;
            for (i, s) in t.samples.iter().enumerate() {
                if s.step as usize >= self.steps.len() {
                    bail!(
                        "profile: tile {} sample {i} refers to step {} of {}",
                        t.tile,
                        s.step,
                        self.steps.len()
                    );
                }
                if s.end_cycle < s.start_cycle {
                    bail!(
                        "profile: tile {} sample {i} ends ({}) before it starts ({})",
                        t.tile,
                        s.end_cycle,
                        s.start_cycle
                    );
                }
                if s.start_cycle < previous_start {
                    bail!(
                        "profile: tile {} sample {i} starts before the previous sample",
                        t.tile
                    );
                }
                previous_start = s.start_cycle;
            }
        }
        Ok(())
    }

    /// Cropped span: first sample start to last sample end over all tiles.
    pub fn span(&self) -> Option<(u64, u64)> {
        let samples = self.tiles.iter().flat_map(|t| t.samples.iter());
        let start = samples.clone().map(|s| s.start_cycle).min()?;
        let end = samples.map(|s| s.end_cycle).max()?;
        Some((start, end))
    }

    pub fn span_cycles(&self) -> u64 {
        self.span().map_or(0, |(s, e)| e - s)
    }

    /// Simulated (or measured) milliseconds for `cycles` at the profile's clock.
    pub fn millis(&self, cycles: u64) -> f64 {
        cycles as f64 * 1e3 / self.clock_hz.max(1) as f64
    }

    pub fn sample_count(&self) -> usize {
        self.tiles.iter().map(|t| t.samples.len()).sum()
    }

    /// A profile with more than one Repeat iteration, summarized: every
    /// step outside the Repeat and every step of its first iteration in
    /// detail; every later iteration stays its own span on every tile, as
    /// one [summed](ProfileStep::summed) sample per step kind (compute,
    /// exchange, sync, patch) lasting as long as that kind's steps did on
    /// that tile in that iteration, laid end to end from the tile's first
    /// start in the iteration (so the iteration's split is true, the order
    /// inside it is not). `None` without a second iteration.
    pub fn with_iteration_summaries(&self) -> Option<Profile> {
        let last = self.steps.iter().filter_map(|s| s.iteration).max()?;
        if last == 0 {
            return None;
        }
        let kinds = StepKind::ALL.len();
        let mut steps = Vec::with_capacity(self.steps.len());
        let map: Vec<To> = self
            .steps
            .iter()
            .map(|s| match s.iteration {
                Some(it) if it >= 1 => To::Summed(it, usize::from(s.kind.code())),
                _ => {
                    steps.push(s.clone());
                    To::Kept(steps.len() as u32 - 1)
                }
            })
            .collect();
        // Summed steps, one per (iteration, kind), iteration-major.
        let summed_base = steps.len() as u32;
        for it in 1..=last {
            for kind in StepKind::ALL {
                steps.push(ProfileStep {
                    kind,
                    operation: format!("Repeat iteration {it}: {} steps summed", kind.name()),
                    iteration: Some(it),
                    summed: true,
                });
            }
        }
        let summed_step =
            |it: u32, kind: usize| summed_base + (it - 1) * kinds as u32 + kind as u32;
        let tiles = self
            .tiles
            .iter()
            .map(|t| summarize_tile(t, &map, kinds, &summed_step))
            .collect();
        Some(Profile {
            title: self.title.clone(),
            simulated: self.simulated,
            clock_hz: self.clock_hz,
            steps,
            tiles,
            kernels: self.kernels.clone(),
        })
    }

    /// Is this a summarized profile (some steps [summed](ProfileStep::summed))?
    pub fn is_summarized(&self) -> bool {
        self.steps.iter().any(|s| s.summed)
    }

    /// The profile as written at `detail`: itself, or
    /// [`Profile::with_iteration_summaries`] (above [`DETAILED_SAMPLES`]
    /// for `Auto`, always for `Summary`, when the Repeat runs more than
    /// once).
    pub fn for_writing(&self, detail: ProfileDetail) -> std::borrow::Cow<'_, Profile> {
        let summarize = match detail {
            ProfileDetail::Full => false,
            ProfileDetail::Summary => true,
            ProfileDetail::Auto => self.sample_count() > DETAILED_SAMPLES,
        };
        if summarize {
            if let Some(p) = self.with_iteration_summaries() {
                return std::borrow::Cow::Owned(p);
            }
        }
        std::borrow::Cow::Borrowed(self)
    }

    /// Tile-cycles of each step kind (in [`StepKind::ALL`] order) in each
    /// Repeat iteration, in iteration order: the iteration's split, the
    /// same whether the profile is summarized or not.
    pub fn iteration_kind_cycles(&self) -> Vec<(u32, [u64; 4])> {
        let mut by: std::collections::BTreeMap<u32, [u64; 4]> = Default::default();
        for s in self.tiles.iter().flat_map(|t| t.samples.iter()) {
            if let Some(step) = self.steps.get(s.step as usize) {
                if let Some(it) = step.iteration {
                    by.entry(it).or_default()[usize::from(step.kind.code())] += s.cycles();
                }
            }
        }
        by.into_iter().collect()
    }

    /// Spans of each Repeat iteration, in iteration order.
    pub fn iteration_spans(&self) -> Vec<IterationSpan> {
        let mut spans: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
        for s in self.tiles.iter().flat_map(|t| t.samples.iter()) {
            if let Some(it) = self.steps.get(s.step as usize).and_then(|st| st.iteration) {
                let e = spans.entry(it).or_insert((u64::MAX, 0));
                e.0 = e.0.min(s.start_cycle);
                e.1 = e.1.max(s.end_cycle);
            }
        }
        spans
            .into_iter()
            .map(|(iteration, (start_cycle, end_cycle))| IterationSpan {
                iteration,
                start_cycle,
                end_cycle,
            })
            .collect()
    }
}

/// An old step's place in a summarized profile: a new step (kept) or an
/// (iteration, kind) summed.
enum To {
    Kept(u32),
    Summed(u32, usize),
}

/// One tile's samples summarized: kept steps as they are, each later
/// iteration's samples summed per kind (`kinds` of them) into
/// `summed_step(iteration, kind)`, laid end to end from the iteration's
/// first start on the tile.
fn summarize_tile(
    t: &TileSamples,
    map: &[To],
    kinds: usize,
    summed_step: &dyn Fn(u32, usize) -> u32,
) -> TileSamples {
    let mut samples: Vec<CycleSample> = Vec::new();
    // The iteration being summed: (iteration, first start, cycles per kind).
    let mut open: Option<(u32, u64, Vec<u64>)> = None;
    let close = |open: &mut Option<(u32, u64, Vec<u64>)>, samples: &mut Vec<CycleSample>| {
        if let Some((it, mut at, cycles)) = open.take() {
            for (kind, c) in cycles.into_iter().enumerate().filter(|(_, c)| *c > 0) {
                samples.push(CycleSample {
                    step: summed_step(it, kind),
                    start_cycle: at,
                    end_cycle: at + c,
                });
                at += c;
            }
        }
    };
    for s in &t.samples {
        match map.get(s.step as usize) {
            Some(To::Kept(step)) => {
                close(&mut open, &mut samples);
                samples.push(CycleSample { step: *step, ..*s });
            }
            Some(To::Summed(it, kind)) => {
                if open.as_ref().is_some_and(|o| o.0 != *it) {
                    close(&mut open, &mut samples);
                }
                let o = open.get_or_insert_with(|| (*it, s.start_cycle, vec![0; kinds]));
                o.2[*kind] += s.cycles();
            }
            None => {}
        }
    }
    close(&mut open, &mut samples);
    TileSamples {
        tile: t.tile,
        samples,
    }
}

/// The seeds' per-layer figure: the Repeat remainder (every iteration after
/// the first) divided by its iterations; one iteration's own span when there
/// is only one.
pub fn cycles_per_layer(spans: &[IterationSpan]) -> Option<u64> {
    match spans {
        [] => None,
        [only] => Some(only.cycles()),
        [_, rest @ ..] => {
            let start = rest.iter().map(|s| s.start_cycle).min()?;
            let end = rest.iter().map(|s| s.end_cycle).max()?;
            Some(end.saturating_sub(start) / rest.len() as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(iteration: u32, start_cycle: u64, end_cycle: u64) -> IterationSpan {
        IterationSpan {
            iteration,
            start_cycle,
            end_cycle,
        }
    }

    #[test]
    fn cycles_per_layer_is_the_remainder_over_its_iterations() {
        assert_eq!(cycles_per_layer(&[]), None);
        assert_eq!(cycles_per_layer(&[span(0, 10, 110)]), Some(100));
        // The first (profiled, warm-up) iteration is left out as the seeds do.
        let spans = [span(0, 0, 500), span(1, 500, 800), span(2, 800, 1100)];
        assert_eq!(cycles_per_layer(&spans), Some(300));
    }
}
