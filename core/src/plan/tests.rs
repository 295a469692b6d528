//! Planner tests on small hand-built graphs.

use alloc::format;
use alloc::vec::Vec;

use super::*;
use crate::ir::{DType, Graph, GraphBuilder, TensorType};

/// `layers` residual MLP blocks as one Repeat: x + gelu(x·w1ᵀ + b1)·w2ᵀ.
pub(crate) fn residual_mlp(
    tokens: usize,
    width: usize,
    hidden: usize,
    layers: u32,
    weight: DType,
) -> Graph {
    let mut b = GraphBuilder::new();
    let x = b
        .input("x", TensorType::new(DType::F16, [1, tokens, width]))
        .unwrap();
    let mut w1 = Vec::new();
    let mut b1 = Vec::new();
    let mut w2 = Vec::new();
    for l in 0..layers {
        w1.push(
            b.parameter(
                &format!("l{l}.w1"),
                TensorType::new(weight, [hidden, width]),
            )
            .unwrap(),
        );
        b1.push(
            b.parameter(&format!("l{l}.b1"), TensorType::new(DType::F16, [hidden]))
                .unwrap(),
        );
        w2.push(
            b.parameter(
                &format!("l{l}.w2"),
                TensorType::new(weight, [width, hidden]),
            )
            .unwrap(),
        );
    }
    let body = b.begin_repeat(layers).unwrap();
    let h = b.carried(&body, x).unwrap();
    let w1a = b.iterated(&body, &w1).unwrap();
    let b1a = b.iterated(&body, &b1).unwrap();
    let w2a = b.iterated(&body, &w2).unwrap();
    let y = b.matmul_transposed(h, w1a, DType::F16).unwrap();
    let y = b.add(y, b1a).unwrap();
    let y = b.gelu_tanh(y).unwrap();
    let y = b.matmul_transposed(y, w2a, DType::F16).unwrap();
    let next = b.add(h, y).unwrap();
    let out = b.end_repeat(&body, &[next]).unwrap();
    b.output("y", out[0]).unwrap();
    b.finish().unwrap()
}

#[test]
fn plans_a_small_repeat_and_reuses_the_body_frontier() {
    let g = residual_mlp(16, 64, 128, 3, DType::F16);
    let plan = plan_graph(
        &g,
        PlanConfig {
            tiles: 64,
            ..PlanConfig::default()
        },
    )
    .unwrap();
    assert!(plan.cycles.total() > 0);
    assert!(plan.peak_bytes > 0 && plan.peak_bytes <= plan.config.budget);
    let repeat = plan
        .ops
        .iter()
        .find_map(|p| p.repeat.as_ref())
        .expect("repeat planned");
    assert_eq!(repeat.ops.len(), 5);
    // Every outer branch reaching the Repeat with the same input layout hits the cache.
    assert!(plan.stats.body_searches >= 1);
    assert!(plan.stats.cache_hits + plan.stats.body_searches >= 1);
}

#[test]
fn over_budget_plans_are_rejected_with_a_report() {
    // 64 layers of 256×2048 FP16 weights on 4 tiles cannot fit.
    let g = residual_mlp(8, 256, 2048, 64, DType::F16);
    let err = plan_graph(
        &g,
        PlanConfig {
            tiles: 4,
            beam_width: 8,
            ..PlanConfig::default()
        },
    )
    .unwrap_err();
    let PlanError::OutOfMemory(r) = err else {
        panic!("expected a memory rejection, got {err:?}")
    };
    assert!(r.total_bytes() > r.budget_bytes);
    assert!(r.tile < 4);
    assert!(!r.live.is_empty());
    // The live list adds up to the peak.
    let sum: u64 = r.live.iter().map(|a| a.bytes).sum();
    assert_eq!(sum, r.peak_bytes, "{r}");
    // The body's first op (the up-projection) is where the 64-layer weight
    // sequences first coexist; both show up, 64 copies each.
    assert_eq!((r.op_name.as_str(), r.op_index), ("matmul", 0), "{r}");
    assert!(r.region.contains("repeat body"), "{r}");
    assert!(r.moment.contains("matmul"), "{r}");
    assert!(r.tiles_over_budget >= 1);
    for seq in ["l0.w1 ×64", "l0.w2 ×64"] {
        let a = r
            .live
            .iter()
            .find(|a| a.name == seq)
            .unwrap_or_else(|| panic!("{seq} missing from\n{r}"));
        assert_eq!(a.kind, memory::AllocationKind::IteratedParameter);
        assert_eq!(a.bytes % 64, 0);
    }
}

#[test]
fn lowered_small_repeat_is_structurally_sound() {
    let g = residual_mlp(16, 64, 128, 3, DType::F16);
    let plan = plan_graph(
        &g,
        PlanConfig {
            tiles: 64,
            ..PlanConfig::default()
        },
    )
    .unwrap();
    let s = crate::lower::lower(&g, &plan).unwrap();
    crate::lower::check::check(&s).unwrap();
    let repeats: Vec<_> = s
        .steps
        .iter()
        .filter(|st| matches!(st, crate::lower::schedule::Step::Repeat(_)))
        .collect();
    assert_eq!(repeats.len(), 1);
    let crate::lower::schedule::Step::Repeat(r) = repeats[0] else {
        unreachable!()
    };
    assert_eq!(r.trip_count, 3);
    assert_eq!(r.iterated.len(), 3);
    assert_eq!(r.carried.len(), 1);
    for &b in &r.iterated {
        assert_eq!(s.buffers[b.index()].copies, 3);
    }
}

/// Deterministic test data for a named tensor.
fn data(name: &str, n: usize) -> Vec<f32> {
    let mut h: u32 = name
        .bytes()
        .fold(2166136261, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    (0..n)
        .map(|_| {
            h ^= h << 13;
            h ^= h >> 17;
            h ^= h << 5;
            (h % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

fn tensor_for(g: &Graph, name: &str) -> Option<Vec<f32>> {
    let v = g.external(name)?;
    let n = g.ty(v)?.shape.element_count()?;
    Some(data(name, n).into_iter().map(|x| x * 0.2).collect())
}

#[test]
fn lowered_residual_mlp_computes_the_reference_result() {
    let (tokens, width, hidden, layers) = (16usize, 64usize, 128usize, 3u32);
    let g = residual_mlp(tokens, width, hidden, layers, DType::F16);
    for tiles in [64u32, 7] {
        let plan = plan_graph(
            &g,
            PlanConfig {
                tiles,
                ..PlanConfig::default()
            },
        )
        .unwrap();
        let s = crate::lower::lower(&g, &plan).unwrap();
        let mut ex = crate::lower::exec::Executor::new(&s, |n| tensor_for(&g, n)).unwrap();
        ex.run().unwrap();
        let got = &ex.outputs().unwrap()["y"];
        // Reference: x + gelu(x·w1ᵀ + b1)·w2ᵀ per layer, in f32.
        let mut x = tensor_for(&g, "x").unwrap();
        for l in 0..layers {
            let w1 = tensor_for(&g, &format!("l{l}.w1")).unwrap();
            let b1 = tensor_for(&g, &format!("l{l}.b1")).unwrap();
            let w2 = tensor_for(&g, &format!("l{l}.w2")).unwrap();
            let mut next = x.clone();
            for t in 0..tokens {
                let h: Vec<f32> = (0..hidden)
                    .map(|j| {
                        let z: f32 = (0..width)
                            .map(|p| x[t * width + p] * w1[j * width + p])
                            .sum::<f32>()
                            + b1[j];
                        0.5 * z * (1.0 + libm::tanhf(0.797_884_6 * (z + 0.044_715 * z * z * z)))
                    })
                    .collect();
                for o in 0..width {
                    next[t * width + o] +=
                        (0..hidden).map(|j| h[j] * w2[o * hidden + j]).sum::<f32>();
                }
            }
            x = next;
        }
        let err = got
            .iter()
            .zip(&x)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(err < 1e-3, "tiles {tiles}: max abs error {err}");
    }
}

/// A top-level projection before `layers` residual MLP blocks: the
/// projection's staging and output are live while the Repeat's iterated
/// weights (chosen only when the Repeat is planned) already sit in SRAM.
fn projected_residual_mlp(tokens: usize, width: usize, hidden: usize, layers: u32) -> Graph {
    let mut b = GraphBuilder::new();
    let x = b
        .input("x", TensorType::new(DType::F16, [1, tokens, width]))
        .unwrap();
    let w0 = b
        .parameter("w0", TensorType::new(DType::F16, [width, width]))
        .unwrap();
    let (mut w1, mut w2) = (Vec::new(), Vec::new());
    for l in 0..layers {
        w1.push(
            b.parameter(
                &format!("l{l}.w1"),
                TensorType::new(DType::F16, [hidden, width]),
            )
            .unwrap(),
        );
        w2.push(
            b.parameter(
                &format!("l{l}.w2"),
                TensorType::new(DType::F16, [width, hidden]),
            )
            .unwrap(),
        );
    }
    let x0 = b.matmul_transposed(x, w0, DType::F16).unwrap();
    let body = b.begin_repeat(layers).unwrap();
    let h = b.carried(&body, x0).unwrap();
    let w1a = b.iterated(&body, &w1).unwrap();
    let w2a = b.iterated(&body, &w2).unwrap();
    let y = b.matmul_transposed(h, w1a, DType::F16).unwrap();
    let y = b.gelu_tanh(y).unwrap();
    let y = b.matmul_transposed(y, w2a, DType::F16).unwrap();
    let next = b.add(h, y).unwrap();
    let out = b.end_repeat(&body, &[next]).unwrap();
    b.output("y", out[0]).unwrap();
    b.finish().unwrap()
}

/// The estimator bounds what placement charges, tile by tile: placing the
/// lowered plan with the runtime's fixed ranges never charges a tile more
/// than `SUPPORT_CHARGE_BYTES` + the planner's peak for that tile. (Before
/// statics were charged at every moment, the bytes of weights whose
/// storage the planner chose late were missing from earlier moments.)
#[test]
fn placement_never_charges_more_than_the_estimate() {
    use crate::place::{place_schedule, support_reserved};
    use crate::target::sram::SUPPORT_CHARGE_BYTES;
    let graphs = [
        projected_residual_mlp(64, 128, 256, 4),
        residual_mlp(32, 128, 256, 5, DType::F16),
    ];
    for g in &graphs {
        for tiles in [2, 3, 4, 8, 16] {
            let plan = plan_graph(
                g,
                PlanConfig {
                    tiles,
                    beam_width: 8,
                    ..PlanConfig::default()
                },
            )
            .unwrap();
            let s = crate::lower::lower(g, &plan).unwrap();
            let placed = place_schedule(&s, |_| support_reserved()).unwrap();
            for t in &placed.tiles {
                let estimate = plan.tile_peaks[t.tile as usize];
                assert!(
                    u64::from(t.peak.bytes) <= u64::from(SUPPORT_CHARGE_BYTES) + estimate,
                    "{tiles} tiles: tile {} charged {} at step {} > {} + estimate {estimate}",
                    t.tile,
                    t.peak.bytes,
                    t.peak.step,
                    SUPPORT_CHARGE_BYTES
                );
            }
            assert_eq!(
                plan.peak_bytes,
                plan.tile_peaks.iter().copied().max().unwrap()
            );
        }
    }
}
