//! Execution profile: per tile, per step start/end cycles.
//!
//! Steps are described once in [`Profile::steps`] (kind, operation, Repeat
//! iteration) and every tile's samples refer to them by index, as in a BSP
//! program all tiles run the same step sequence. A Repeat body step executed
//! 27 times is 27 step descriptors, one per iteration.

use std::collections::BTreeSet;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

pub use ipuc_core::package::StepKind;

/// One step of the global program order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileStep {
    pub kind: StepKind,
    pub operation: String,
    /// Repeat iteration (0-based) for steps inside a Repeat body.
    pub iteration: Option<u32>,
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
        "modelled: the simulator's kernel timing model (host::sim::kernel_timing)",
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

/// Operation name (prefix) of the one sample per tile that stands for every
/// Repeat iteration after the first in a profile written in the seeds'
/// shape ([`Profile::with_remainder`]).
pub const REPEAT_REMAINDER: &str = "repeat-remainder";

/// Samples above which the written profile (`profile.json`,
/// `profile.html`) keeps only the first Repeat iteration in detail and one
/// remainder sample per tile for the others, as the seeds do: a 27-layer
/// So400m trace is ~27 × 260,000 samples, which a browser does not open in
/// a few seconds. `operations.json` is always summed over every sample.
pub const DETAILED_SAMPLES: usize = 1_000_000;

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

    /// The seeds' shape of a profile with more than one Repeat iteration:
    /// every step outside the Repeat and every step of its first iteration
    /// in detail, and the later iterations as one [`REPEAT_REMAINDER`] step
    /// whose sample on each tile spans that tile's first start to last end
    /// in those iterations. `None` without a second iteration.
    pub fn with_remainder(&self) -> Option<Profile> {
        let last = self.steps.iter().filter_map(|s| s.iteration).max()?;
        if last == 0 {
            return None;
        }
        let mut index = vec![None; self.steps.len()];
        let mut steps = Vec::with_capacity(self.steps.len());
        let mut remainder = None;
        for (i, s) in self.steps.iter().enumerate() {
            if s.iteration.is_some_and(|it| it >= 1) {
                let r = *remainder.get_or_insert_with(|| {
                    steps.push(ProfileStep {
                        kind: StepKind::Compute,
                        operation: format!(
                            "{REPEAT_REMAINDER}: Repeat iterations 1–{last} (one span per tile)"
                        ),
                        iteration: None,
                    });
                    steps.len() - 1
                });
                index[i] = Some((r as u32, true));
            } else {
                index[i] = Some((steps.len() as u32, false));
                steps.push(s.clone());
            }
        }
        let tiles = self
            .tiles
            .iter()
            .map(|t| {
                let mut samples: Vec<CycleSample> = Vec::new();
                let mut at: Option<usize> = None;
                for s in &t.samples {
                    let Some((step, rest)) = index.get(s.step as usize).copied().flatten() else {
                        continue;
                    };
                    if !rest {
                        samples.push(CycleSample { step, ..*s });
                        continue;
                    }
                    match at {
                        Some(k) => {
                            let r = &mut samples[k];
                            r.start_cycle = r.start_cycle.min(s.start_cycle);
                            r.end_cycle = r.end_cycle.max(s.end_cycle);
                        }
                        None => {
                            at = Some(samples.len());
                            samples.push(CycleSample { step, ..*s });
                        }
                    }
                }
                TileSamples {
                    tile: t.tile,
                    samples,
                }
            })
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

    /// The profile as written: itself, or — above [`DETAILED_SAMPLES`] with
    /// more than one Repeat iteration — [`Profile::with_remainder`].
    pub fn for_writing(&self) -> std::borrow::Cow<'_, Profile> {
        if self.sample_count() > DETAILED_SAMPLES {
            if let Some(p) = self.with_remainder() {
                return std::borrow::Cow::Owned(p);
            }
        }
        std::borrow::Cow::Borrowed(self)
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
