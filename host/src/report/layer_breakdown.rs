//! Where one encoder layer's cycles go, on the critical path of the
//! simulated run: each Repeat step is charged the cycles by which it moves
//! the last tile's finish (`max end of step s − max end of the step before`),
//! summed over the iterations and divided by their count. So the rows add up
//! to the average iteration span, and a step that overlaps a slower one
//! costs nothing.
//!
//! Steps are named by the operation the profile gives them and sorted into
//! what the cycles do: a GEMM's first compute step is its kernels, later
//! ones its K-split partial adds; an exchange before an op's first compute
//! brings its operands, one after it moves its partials. For each GEMM the
//! achieved MACs per cycle per taking-part tile stand beside its AMP mode's
//! peak (`ipuc_target::ipu21::timing::AmpMode`). All cycles are the
//! simulator's (kernel bodies modelled, the rest simulated; see
//! [`super::CYCLE_SOURCES`]).

use std::collections::BTreeMap;

use ipuc_core::ir::{Graph, OpKind};
use ipuc_target::kernel::AmpProduct;
use serde::{Deserialize, Serialize};

use super::{Profile, StepKind};

/// One line of the breakdown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakdownRow {
    /// What the cycles do: `gemm`, `attention`, `exchange: operands`, …
    pub category: String,
    /// The operation (the body's label with the layer as `*`).
    pub operation: String,
    /// Critical-path cycles per iteration.
    pub cycles: u64,
    /// For GEMM kernels: achieved MACs per cycle per taking-part tile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub macs_per_cycle_per_tile: Option<f64>,
    /// For GEMM kernels: the AMP mode's peak and name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_macs_per_cycle: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amp_mode: Option<String>,
    /// For GEMM kernels: tiles that ran the step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiles: Option<usize>,
}

/// The average iteration's critical path, row by row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerBreakdown {
    /// Iterations averaged over.
    pub iterations: u32,
    /// Sum of the rows: the average iteration's critical path.
    pub cycles_per_iteration: u64,
    pub rows: Vec<BreakdownRow>,
    /// Each category family's floor on the whole chip for one layer
    /// ([`layer_floors`]).
    #[serde(default)]
    pub floors: BTreeMap<String, u64>,
    /// The critical-path cycles charged to Repeat steps over all
    /// iterations, before the rows are divided by `iterations` (each row
    /// rounded down): what [`LayerBreakdown::reconcile`] adds up.
    #[serde(skip)]
    pub charged_cycles: u64,
}

/// What one layer (the Repeat body) could not run faster than on the
/// whole chip, per category family: GEMMs at their AMP mode's peak,
/// attention's two products at theirs plus its softmax at the sourced
/// rate, element-wise kernels at their sourced rates
/// (`ipuc_target::ipu21::rates`, chosen end), all spread evenly over the
/// 1,472 tiles; every operand byte moved once at the exchange's 4 bytes
/// per cycle per tile. Views move nothing and cost nothing.
pub fn layer_floors(graph: &Graph) -> BTreeMap<String, u64> {
    use ipuc_core::ir::DType;
    use ipuc_target::ipu21::rates::{self, RateEnd, SoftmaxForm};
    use ipuc_target::ipu21::timing::{AmpMode, EXCHANGE_BYTES_PER_CYCLE};
    use ipuc_target::ipu21::topology::TILE_COUNT;
    let end = RateEnd::Chosen;
    let tiles = f64::from(TILE_COUNT);
    let mut x16 = BTreeMap::<&str, f64>::new();
    let mut regions: Vec<_> = Vec::new();
    if let Some(top) = graph.region(graph.top()) {
        for &id in top.ops() {
            if let Some(OpKind::Repeat(rep)) = graph.op(id).map(|o| o.kind()) {
                regions.push(rep.body);
            }
        }
    }
    for body in regions {
        let Some(r) = graph.region(body) else {
            continue;
        };
        for &id in r.ops() {
            let Some(op) = graph.op(id) else { continue };
            let ty = |v: Option<&ipuc_core::ir::ValueId>| v.and_then(|&v| graph.ty(v));
            let elements = |v| ty(v).and_then(|t| t.shape.element_count()).unwrap_or(0) as f64;
            let out = elements(op.results().first());
            let in_dtype = ty(op.operands().first()).map_or(DType::F16, |t| t.dtype);
            let out_dtype = ty(op.results().first()).map_or(DType::F16, |t| t.dtype);
            let macs = (graph.op_flops(id) / 2) as f64;
            let activation = |function| {
                let per_element = rates::mlp_activation_x16(function, in_dtype, end)
                    + rates::cast_x16(in_dtype, out_dtype, end);
                ("element-wise", out * f64::from(per_element))
            };
            let (family, cost_x16) = match op.kind() {
                OpKind::MatMul(_) => {
                    let mode = match (ty(op.operands().first()), ty(op.operands().get(1))) {
                        (Some(a), Some(b)) => AmpProduct::of(a.dtype, b.dtype, out_dtype).mode,
                        _ => AmpMode::F16F16Partials,
                    };
                    ("gemm", 16.0 * macs / f64::from(mode.macs_per_cycle()))
                }
                OpKind::Attention { .. } => {
                    let scores = ty(op.operands().first())
                        .zip(ty(op.operands().get(1)))
                        .map_or(0.0, |(q, k)| {
                            let rows = q.shape.element_count().unwrap_or(0)
                                / q.shape.dim_from_end(0).unwrap_or(1).max(1);
                            let keys = k.shape.dim_from_end(1).unwrap_or(0);
                            (rows * keys) as f64
                        });
                    let mode = ipuc_target::kernel::attention_mode(in_dtype);
                    let partials = ipuc_target::kernel::partials_type(mode);
                    let products = 16.0 * macs / f64::from(mode.macs_per_cycle());
                    // The softmax normalises either the probabilities or
                    // (key-split attention) the outputs: the cheaper.
                    let x16 = |form| f64::from(rates::softmax_x16(partials, in_dtype, form, end));
                    let softmax = (scores * x16(SoftmaxForm::Normalised)).min(
                        scores * x16(SoftmaxForm::Unnormalised)
                            + out * f64::from(rates::binary_x16(partials, end)),
                    );
                    ("attention", products + softmax)
                }
                OpKind::LayerNorm { .. } => (
                    "element-wise",
                    out * f64::from(
                        rates::layer_norm_x16(in_dtype, end)
                            + rates::cast_x16(in_dtype, out_dtype, end),
                    ),
                ),
                OpKind::GeluTanh { .. } => activation(None),
                OpKind::Activation { function, .. } => activation(Some(*function)),
                OpKind::Add | OpKind::Mul => (
                    "element-wise",
                    out * f64::from(rates::binary_x16(out_dtype, end)),
                ),
                OpKind::Softmax => (
                    "element-wise",
                    out * f64::from(rates::softmax_x16(
                        in_dtype,
                        in_dtype,
                        SoftmaxForm::Normalised,
                        end,
                    )),
                ),
                OpKind::Cast { to } => (
                    "element-wise",
                    out * f64::from(rates::cast_x16(in_dtype, *to, end)),
                ),
                _ => continue,
            };
            *x16.entry(family).or_default() += cost_x16;
            let bytes: f64 = op
                .operands()
                .iter()
                .filter_map(|&v| graph.ty(v).and_then(|t| t.size_bytes()))
                .map(|b| b as f64)
                .sum();
            *x16.entry("exchange").or_default() +=
                16.0 * bytes / f64::from(EXCHANGE_BYTES_PER_CYCLE);
        }
    }
    x16.into_iter()
        .map(|(family, c)| (family.to_string(), (c / 16.0 / tiles).ceil() as u64))
        .collect()
}

/// What a graph op is, by its label.
struct OpInfo {
    kind: &'static str,
    macs: u64,
    mode: Option<(u32, &'static str)>,
}

fn op_info(graph: &Graph) -> BTreeMap<String, OpInfo> {
    let mut map = BTreeMap::new();
    let mut regions = vec![graph.top()];
    while let Some(region) = regions.pop() {
        let Some(r) = graph.region(region) else {
            continue;
        };
        for &id in r.ops() {
            let Some(op) = graph.op(id) else { continue };
            if let OpKind::Repeat(rep) = op.kind() {
                regions.push(rep.body);
            }
            let Some(label) = graph.label(id) else {
                continue;
            };
            let mode = match op.kind() {
                OpKind::MatMul(mm) => {
                    let ty = |i: usize| op.operands().get(i).and_then(|&v| graph.ty(v));
                    match (ty(0), ty(1)) {
                        (Some(a), Some(b)) => {
                            let m = AmpProduct::of(a.dtype, b.dtype, mm.out).mode;
                            Some((m.macs_per_cycle(), m.name()))
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            map.insert(
                label.to_string(),
                OpInfo {
                    kind: op.kind().mnemonic(),
                    // One multiply-add is two FLOPs.
                    macs: graph.op_flops(id) / 2,
                    mode,
                },
            );
        }
    }
    map
}

/// A step's operation as the graph labels it, and what the step does for
/// it: profile steps name the layer (`encoder.layers.3.mlp.fc1`) and
/// lowering suffixes a re-layout or a scratch (`… operand 0 relayout`).
fn graph_label(operation: &str) -> (String, Option<&str>) {
    let (base, purpose) = match operation.split_once(' ') {
        Some((b, p)) => (b, Some(p)),
        None => (operation, None),
    };
    let prefix = crate::model::LAYER.trim_end_matches('*');
    let label = match base
        .strip_prefix(prefix)
        .and_then(|rest| rest.split_once('.'))
    {
        Some((layer, rest)) if layer.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{}.{rest}", crate::model::LAYER)
        }
        _ => base.to_string(),
    };
    (label, purpose)
}

/// The breakdown's category of a step of `step_kind` for an op of
/// `kind` (its graph op's), `purpose` lowering's own (operand staging),
/// `seen` when the op already computed in this iteration (its later
/// steps are K-split partials).
fn category_of(step_kind: StepKind, kind: &str, purpose: Option<&str>, seen: bool) -> String {
    match step_kind {
        StepKind::Sync => "sync wait".to_string(),
        StepKind::Patch => "patching".to_string(),
        StepKind::Exchange if seen => format!("exchange: {kind} partials"),
        StepKind::Exchange => match purpose {
            Some(p) if p.contains("operand") => format!("exchange: {kind} operands"),
            _ => format!("exchange: {kind}"),
        },
        // Lowering's own steps for an op (operand staging copies).
        StepKind::Compute if purpose.is_some() => "element-wise: staging copy".to_string(),
        StepKind::Compute => match (kind, seen) {
            ("matmul", false) => "gemm".to_string(),
            ("matmul", true) => "gemm: K-split partial adds".to_string(),
            ("attention", _) => "attention".to_string(),
            ("", _) => "compute".to_string(),
            (k, _) => format!("element-wise: {k}"),
        },
    }
}

/// The last finish and the number of taking-part tiles of every step.
fn step_ends(profile: &Profile) -> (Vec<u64>, Vec<usize>) {
    let mut end = vec![0u64; profile.steps.len()];
    let mut tiles = vec![0usize; profile.steps.len()];
    for s in profile.tiles.iter().flat_map(|t| &t.samples) {
        let i = s.step as usize;
        if i < end.len() {
            end[i] = end[i].max(s.end_cycle);
            tiles[i] += 1;
        }
    }
    (end, tiles)
}

/// One row from its `(category, operation)` key and its sums over `n`
/// iterations (cycles, kernel cycles for MAC rates, most tiles); GEMM rows
/// carry the achieved MAC rate and their mode's peak.
fn breakdown_row(
    (category, operation): (String, String),
    (cycles, kernel, used): (u64, u64, usize),
    info: Option<&OpInfo>,
    n: u64,
) -> BreakdownRow {
    let gemm = category == "gemm";
    let rate = (gemm && kernel > 0 && used > 0)
        .then(|| info.map(|o| o.macs as f64 * n as f64 / (kernel as f64 * used as f64)))
        .flatten();
    let mode = if gemm {
        info.and_then(|o| o.mode)
    } else {
        None
    };
    BreakdownRow {
        category,
        operation,
        cycles: cycles / n,
        macs_per_cycle_per_tile: rate,
        peak_macs_per_cycle: mode.map(|m| m.0),
        amp_mode: mode.map(|m| m.1.to_string()),
        tiles: gemm.then_some(used),
    }
}

/// The breakdown of `profile`'s Repeat iterations (`None` without any).
pub fn layer_breakdown(profile: &Profile, graph: &Graph) -> Option<LayerBreakdown> {
    let (end, tiles) = step_ends(profile);
    let infos = op_info(graph);
    let iterations = profile
        .steps
        .iter()
        .filter_map(|s| s.iteration)
        .max()
        .map(|i| i + 1)?;
    // (category, operation) → (cycles, kernel cycles for MAC rates, tiles).
    let mut rows: BTreeMap<(String, String), (u64, u64, usize)> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    let mut computed: BTreeMap<(u32, String), bool> = BTreeMap::new();
    // Walk the steps in the order they finish, not by index: the profile
    // numbers a step when it first sees it, so a GEMM's K-split partial
    // adds (same operation, later in the iteration) can carry a later
    // number than the next op's steps and would be charged to them.
    let mut by_finish: Vec<usize> = (0..profile.steps.len()).filter(|&i| tiles[i] > 0).collect();
    by_finish.sort_by_key(|&i| (end[i], i));
    let mut last_end = 0u64;
    for i in by_finish {
        let step = &profile.steps[i];
        let cycles = end[i].saturating_sub(last_end);
        last_end = last_end.max(end[i]);
        let Some(iteration) = step.iteration else {
            continue;
        };
        let (label, purpose) = graph_label(&step.operation);
        let info = infos.get(&label);
        let kind = info.map_or("", |o| o.kind);
        let seen = computed
            .get(&(iteration, label.clone()))
            .copied()
            .unwrap_or(false);
        let category = category_of(step.kind, kind, purpose, seen);
        if step.kind == StepKind::Compute && purpose.is_none() {
            computed.insert((iteration, label.clone()), true);
        }
        let key = (category, label);
        let entry = rows.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            (0, 0, 0)
        });
        entry.0 += cycles;
        if key.0 == "gemm" {
            entry.1 += cycles;
            entry.2 = entry.2.max(tiles[i]);
        }
    }
    let n = u64::from(iterations);
    let charged_cycles = rows.values().map(|r| r.0).sum();
    let rows: Vec<BreakdownRow> = order
        .into_iter()
        .map(|key| {
            let sums = rows[&key];
            let info = infos.get(&key.1);
            breakdown_row(key, sums, info, n)
        })
        .collect();
    Some(LayerBreakdown {
        iterations,
        cycles_per_iteration: rows.iter().map(|r| r.cycles).sum(),
        rows,
        floors: layer_floors(graph),
        charged_cycles,
    })
}

/// The two per-layer figures a run prints, reconciled: the Repeat's pace
/// ([`super::profile::cycles_per_layer`]) and the breakdown's sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerLayer {
    /// Iterations in all.
    pub iterations: u64,
    /// The Repeat's figure: `paced` over `iterations − 1`.
    pub pace: u64,
    /// Iterations 1.. from their first start to their last end.
    pub paced: u64,
    /// The breakdown's figure.
    pub breakdown: u64,
    /// What the breakdown charged besides `paced`: iteration 0's critical
    /// path up to iteration 1's first start (negative if less).
    pub first: i64,
    /// Cycles the rows lost rounding down (`charged − iterations ×
    /// breakdown`).
    pub rounding: u64,
}

impl PerLayer {
    /// One line (under 120 characters for any run that fits the chip):
    /// the breakdown's figure as the sum it is, beside the Repeat's.
    pub fn line(&self) -> String {
        format!(
            "  = {}; the Repeat's {} = {}",
            self.breakdown_sum(),
            self.pace,
            self.pace_sum()
        )
    }

    /// Both figures as the sums they are: `breakdown = (iteration 0 +
    /// iterations 1.. − rounding) / iterations; pace = iterations 1.. /
    /// (iterations − 1)`.
    pub fn sums(&self) -> String {
        format!(
            "{} = {}; {} = {}",
            self.breakdown,
            self.breakdown_sum(),
            self.pace,
            self.pace_sum()
        )
    }

    fn breakdown_sum(&self) -> String {
        let later = match self.iterations - 1 {
            1 => "iteration 1".to_string(),
            m => format!("iterations 1-{m}"),
        };
        format!(
            "({} iteration 0 + {} {later} - {} rounding) / {}",
            self.first, self.paced, self.rounding, self.iterations
        )
    }

    fn pace_sum(&self) -> String {
        format!("{} / {}", self.paced, self.iterations - 1)
    }
}

impl LayerBreakdown {
    /// The breakdown's per-layer figure against the Repeat's pace over
    /// `spans` (the same profile's iterations): the breakdown averages the
    /// critical path over every iteration, the first included, and rounds
    /// each row down; the pace leaves the first iteration out and measures
    /// iterations 1.. from the first start to the last end. `None` with
    /// fewer than two iterations (the two figures are then one span).
    pub fn reconcile(&self, spans: &[super::IterationSpan]) -> Option<PerLayer> {
        let n = u64::from(self.iterations);
        if n < 2 || spans.len() as u64 != n {
            return None;
        }
        let rest = &spans[1..];
        let start = rest.iter().map(|s| s.start_cycle).min()?;
        let end = rest.iter().map(|s| s.end_cycle).max()?;
        let paced = end.saturating_sub(start);
        Some(PerLayer {
            iterations: n,
            pace: paced / (n - 1),
            paced,
            breakdown: self.cycles_per_iteration,
            first: self.charged_cycles as i64 - paced as i64,
            rounding: self
                .charged_cycles
                .saturating_sub(n * self.cycles_per_iteration),
        })
    }

    /// Per category, then per row, as text lines (the run report's).
    pub fn lines(&self) -> Vec<String> {
        let mut by_category: BTreeMap<&str, u64> = BTreeMap::new();
        for r in &self.rows {
            let family = r.category.split(':').next().unwrap_or(&r.category);
            *by_category.entry(family).or_default() += r.cycles;
        }
        let total = self.cycles_per_iteration.max(1);
        let mut out = vec![format!(
            "layer breakdown (simulated critical path, average of {} iterations): {} cycles per layer",
            self.iterations, self.cycles_per_iteration
        )];
        let mut families: Vec<_> = by_category.into_iter().collect();
        families.sort_by_key(|f| std::cmp::Reverse(f.1));
        for (family, cycles) in families {
            let floor = self
                .floors
                .get(family)
                .map_or(String::new(), |f| format!("  floor {f:>7} on 1472 tiles"));
            out.push(format!(
                "  {family:<12} {cycles:>9} ({:>4.1} %){floor}",
                cycles as f64 * 100.0 / total as f64
            ));
        }
        let mut rows: Vec<&BreakdownRow> = self.rows.iter().filter(|r| r.cycles > 0).collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.cycles));
        for r in rows {
            let op = r.operation.trim_start_matches("encoder.layers.*.");
            let rate = match (
                r.macs_per_cycle_per_tile,
                r.peak_macs_per_cycle,
                &r.amp_mode,
            ) {
                (Some(a), Some(p), Some(m)) => format!(
                    "  {a:.1} MAC/cycle/tile on {} tiles, {:.0} % of {m} peak {p}",
                    r.tiles.unwrap_or(0),
                    a * 100.0 / f64::from(p)
                ),
                _ => String::new(),
            };
            out.push(format!(
                "    {:>8}  {:<28} {op}{rate}",
                r.cycles, r.category
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::profile::{CycleSample, ProfileStep, TileSamples};

    /// Two iterations that overlap (tiles skew) and rows that do not
    /// divide evenly: the breakdown's figure is exactly the sum the line
    /// gives, and the Repeat's figure is `cycles_per_layer`'s.
    #[test]
    fn the_two_per_layer_figures_reconcile() {
        let step = |kind, op: &str, iteration| ProfileStep {
            kind,
            operation: op.to_string(),
            iteration: Some(iteration),
            summed: false,
        };
        let profile = Profile {
            title: String::new(),
            simulated: true,
            clock_hz: 1,
            steps: vec![
                step(StepKind::Compute, "a", 0),
                step(StepKind::Exchange, "b", 0),
                step(StepKind::Compute, "a", 1),
                step(StepKind::Exchange, "b", 1),
            ],
            tiles: vec![
                TileSamples {
                    tile: 0,
                    samples: [(0, 10, 110), (1, 110, 141), (2, 141, 240), (3, 240, 263)]
                        .into_iter()
                        .map(CycleSample::from)
                        .collect(),
                },
                TileSamples {
                    tile: 1,
                    samples: [(0, 10, 130), (2, 130, 251)]
                        .into_iter()
                        .map(CycleSample::from)
                        .collect(),
                },
            ],
            kernels: Vec::new(),
        };
        let b = layer_breakdown(&profile, &Graph::new()).unwrap();
        let spans = profile.iteration_spans();
        let r = b.reconcile(&spans).unwrap();
        assert_eq!(
            Some(r.pace),
            crate::report::profile::cycles_per_layer(&spans)
        );
        assert_eq!(r.breakdown, b.cycles_per_iteration);
        assert_eq!(
            (r.first + r.paced as i64 - r.rounding as i64) as u64,
            r.breakdown * r.iterations
        );
        // Iteration 1 starts (130) before iteration 0 ends (141); the
        // critical path charges 263 cycles, 130 of them before iteration 1
        // starts, and the exchange row's 23 loses 1 halving.
        assert_eq!((r.paced, r.pace), (263 - 130, 133));
        assert_eq!((r.breakdown, r.first, r.rounding), (131, 130, 1));
        assert_eq!(
            r.line(),
            "  = (130 iteration 0 + 133 iteration 1 - 1 rounding) / 2; the Repeat's 133 = 133 / 1"
        );
        // So400m-sized figures still fit a 120-character line.
        let big = PerLayer {
            iterations: 27,
            pace: 460_313,
            paced: 11_968_138,
            breakdown: 460_290,
            first: 460_000,
            rounding: 26,
        };
        assert!(big.line().chars().count() <= 120, "{}", big.line());
    }

    fn step(kind: StepKind, operation: &str) -> ProfileStep {
        ProfileStep {
            kind,
            operation: operation.to_string(),
            iteration: Some(0),
            summed: false,
        }
    }

    /// A step numbered after a later one (the profile numbers steps when it
    /// first meets them) is still charged its own cycles: the breakdown
    /// walks steps in the order they finish.
    #[test]
    fn a_late_numbered_step_is_charged_where_it_ran() {
        let profile = Profile {
            title: String::new(),
            simulated: true,
            clock_hz: 1,
            steps: vec![
                step(StepKind::Compute, "a"),
                step(StepKind::Patch, "b"),
                step(StepKind::Compute, "a"),
            ],
            tiles: vec![TileSamples {
                tile: 0,
                samples: [(0, 0, 100), (2, 100, 900), (1, 900, 910)]
                    .into_iter()
                    .map(CycleSample::from)
                    .collect(),
            }],
            kernels: Vec::new(),
        };
        let b = layer_breakdown(&profile, &Graph::new()).unwrap();
        let cycles = |category: &str, op: &str| {
            b.rows
                .iter()
                .find(|r| r.category == category && r.operation == op)
                .map(|r| r.cycles)
        };
        assert_eq!(cycles("patching", "b"), Some(10));
        assert_eq!(cycles("compute", "a"), Some(900));
        assert_eq!(b.cycles_per_iteration, 910);
    }
}
