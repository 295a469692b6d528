//! Planner tests on small hand-built graphs.

use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

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
    mlp_graph(tokens, width, hidden, layers, weight, false)
}

/// A top-level projection x0 = x·w0ᵀ before `layers` residual MLP blocks
/// without bias (x0 + gelu(x0·w1ᵀ)·w2ᵀ), FP16: the projection's staging and
/// output are live while the Repeat's iterated weights (chosen only when
/// the Repeat is planned) already sit in SRAM.
pub(crate) fn projected_residual_mlp(
    tokens: usize,
    width: usize,
    hidden: usize,
    layers: u32,
) -> Graph {
    mlp_graph(tokens, width, hidden, layers, DType::F16, true)
}

/// The graphs of [`residual_mlp`] (bias, no projection) and
/// [`projected_residual_mlp`] (projection, no bias).
fn mlp_graph(
    tokens: usize,
    width: usize,
    hidden: usize,
    layers: u32,
    weight: DType,
    projected: bool,
) -> Graph {
    let mut b = GraphBuilder::new();
    let x = b
        .input("x", TensorType::new(DType::F16, [1, tokens, width]))
        .unwrap();
    let w0 = projected.then(|| {
        b.parameter("w0", TensorType::new(DType::F16, [width, width]))
            .unwrap()
    });
    let (mut w1, mut b1, mut w2) = (Vec::new(), Vec::new(), Vec::new());
    for l in 0..layers {
        w1.push(
            b.parameter(
                &format!("l{l}.w1"),
                TensorType::new(weight, [hidden, width]),
            )
            .unwrap(),
        );
        if !projected {
            b1.push(
                b.parameter(&format!("l{l}.b1"), TensorType::new(DType::F16, [hidden]))
                    .unwrap(),
            );
        }
        w2.push(
            b.parameter(
                &format!("l{l}.w2"),
                TensorType::new(weight, [width, hidden]),
            )
            .unwrap(),
        );
    }
    let x = match w0 {
        Some(w0) => b.matmul_transposed(x, w0, DType::F16).unwrap(),
        None => x,
    };
    let body = b.begin_repeat(layers).unwrap();
    let h = b.carried(&body, x).unwrap();
    let w1a = b.iterated(&body, &w1).unwrap();
    let b1a = (!projected).then(|| b.iterated(&body, &b1).unwrap());
    let w2a = b.iterated(&body, &w2).unwrap();
    let mut y = b.matmul_transposed(h, w1a, DType::F16).unwrap();
    if let Some(b1a) = b1a {
        y = b.add(y, b1a).unwrap();
    }
    let y = b.gelu_tanh(y).unwrap();
    let y = b.matmul_transposed(y, w2a, DType::F16).unwrap();
    let next = b.add(h, y).unwrap();
    let out = b.end_repeat(&body, &[next]).unwrap();
    b.output("y", out[0]).unwrap();
    b.finish().unwrap()
}

/// The small Repeat the plan and lowering tests share: three residual MLP
/// blocks (16 tokens, width 64, hidden 128, FP16) planned on 64 tiles.
pub(crate) fn small_repeat() -> (Graph, Plan) {
    let g = residual_mlp(16, 64, 128, 3, DType::F16);
    let plan = plan_graph(
        &g,
        PlanConfig {
            tiles: 64,
            ..PlanConfig::default()
        },
    )
    .unwrap();
    (g, plan)
}

#[test]
fn plans_a_small_repeat_and_reuses_the_body_frontier() {
    let (_, plan) = small_repeat();
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
fn far_end_gemm_grids_end_at_the_last_tile_and_only_when_asked() {
    // The projection x·w0ᵀ (16 tokens, width 64) is the top region's first
    // op; on 40 tiles its grids (8 × 4 × 1, …) leave tiles unused.
    let g = projected_residual_mlp(16, 64, 128, 2);
    let info = super::region::RegionInfo::new(&g, g.top()).unwrap();
    let op = info.ops[0];
    let grids = |far_end: bool| {
        let cx = super::context::SearchCx::new(
            &g,
            PlanConfig {
                tiles: 40,
                gemm_far_end: far_end,
                ..PlanConfig::default()
            },
        );
        let start = super::state::State::start(&cx, &info, &[]);
        let plans = cx.candidates_for(op, &start).unwrap();
        plans
            .iter()
            .map(|p| {
                let tiles: Vec<u32> = p
                    .stages
                    .iter()
                    .flat_map(|s| match s {
                        super::opplan::Stage::Compute(calls) => {
                            calls.iter().map(|c| c.tile).collect::<Vec<_>>()
                        }
                        super::opplan::Stage::Exchange(t) => {
                            t.iter().map(|t| t.source_tile).collect()
                        }
                    })
                    .collect();
                let (lo, hi) = (*tiles.iter().min().unwrap(), *tiles.iter().max().unwrap());
                (p.summary.clone(), lo, hi, p.output.first_tile)
            })
            .collect::<Vec<_>>()
    };
    let low = grids(false);
    assert!(low
        .iter()
        .all(|(s, lo, _, first)| *lo == 0 && *first == 0 && !s.contains("from tile")));
    let both = grids(true);
    let far: Vec<_> = both
        .iter()
        .filter(|(s, ..)| s.contains("from tile"))
        .collect();
    assert!(!far.is_empty(), "{both:?}");
    for (s, lo, hi, first) in &far {
        assert_eq!(*hi, 39, "{s}");
        assert!(*lo > 0 && *first == *lo, "{s}");
    }
    // The tile-0 grids are all still there, in the same order.
    let kept: Vec<_> = both
        .iter()
        .filter(|(s, ..)| !s.contains("from tile"))
        .collect();
    assert_eq!(kept.len(), low.len());
    // A search offering them plans the whole graph.
    let plan = plan_graph(
        &g,
        PlanConfig {
            tiles: 40,
            gemm_far_end: true,
            ..PlanConfig::default()
        },
    )
    .unwrap();
    assert!(plan.peak_bytes <= plan.config.budget);
}

/// The kernels of a plan's last compute stage (a K split's reduction).
fn reduction_kernels(p: &super::opplan::OpPlan) -> Vec<ipuc_target::kernel::Kernel> {
    p.stages
        .iter()
        .rev()
        .find_map(|s| match s {
            super::opplan::Stage::Compute(calls) => {
                Some(calls.iter().map(|c| c.kernel.clone()).collect())
            }
            super::opplan::Stage::Exchange(_) => None,
        })
        .unwrap_or_default()
}

#[test]
fn a_two_way_k_split_of_the_output_type_is_one_add_without_a_copy() {
    use ipuc_target::kernel::Kernel;
    // FP8 × FP8 into FP16 partials and an FP16 output: a pair of parts is
    // summed by `add` (the own part read in place); more parts go through
    // the copy and the reduce.
    let mut b = GraphBuilder::new();
    let x = b
        .input("x", TensorType::new(DType::f143(0), [1, 32, 2048]))
        .unwrap();
    let w = b
        .parameter("w", TensorType::new(DType::f143(-4), [128, 2048]))
        .unwrap();
    let y = b.matmul_transposed(x, w, DType::F16).unwrap();
    b.output("y", y).unwrap();
    let g = b.finish().unwrap();
    let info = super::region::RegionInfo::new(&g, g.top()).unwrap();
    let cx = super::context::SearchCx::new(
        &g,
        PlanConfig {
            tiles: 16,
            ..PlanConfig::default()
        },
    );
    let start = super::state::State::start(&cx, &info, &[]);
    let plans = cx.candidates_for(info.ops[0], &start).unwrap();
    let (mut pairs, mut reduces) = (0, 0);
    for p in plans.iter() {
        let super::opplan::PlanFamily::Gemm { k, .. } = p.family else {
            continue;
        };
        let kernels = reduction_kernels(p);
        let copies = kernels
            .iter()
            .filter(|k| matches!(k, Kernel::Copy { .. }))
            .count();
        match k {
            1 => {}
            2 => {
                pairs += 1;
                assert_eq!(copies, 0, "{}", p.summary);
                assert!(
                    kernels.iter().all(|k| matches!(
                        k,
                        Kernel::Add {
                            broadcast_rows: false,
                            dtype: DType::F16,
                            ..
                        }
                    )),
                    "{}: {kernels:?}",
                    p.summary
                );
            }
            parts => {
                reduces += 1;
                assert!(copies > 0, "{}", p.summary);
                assert!(
                    kernels
                        .iter()
                        .any(|k| matches!(k, Kernel::ReduceAdd { parts: n, .. } if *n == parts)),
                    "{}",
                    p.summary
                );
            }
        }
    }
    assert!(
        pairs > 0 && reduces > 0,
        "{pairs} pairs, {reduces} reduces: {:?}",
        plans.iter().map(|p| &p.summary).collect::<Vec<_>>()
    );
}

#[test]
fn a_graph_that_fits_only_with_the_span_charge_is_planned_by_the_second_search() {
    use super::code::CodeCharge;
    let g = residual_mlp(8, 64, 128, 4, DType::F16);
    let config = |code_charge, budget| PlanConfig {
        tiles: 4,
        beam_width: 8,
        code_charge,
        budget,
        ..PlanConfig::default()
    };
    let defaults = PlanConfig::default();
    let whole = plan_graph(&g, config(CodeCharge::WholeElements, defaults.budget)).unwrap();
    let span = plan_graph(&g, config(CodeCharge::Span, defaults.budget)).unwrap();
    // The span charge is at most the whole elements, and here strictly less.
    assert!(
        span.peak_bytes < whole.peak_bytes,
        "{} vs {}",
        span.peak_bytes,
        whole.peak_bytes
    );
    // A budget between the two: the whole-element search runs out of memory,
    // the span search fits, and the plan says which search produced it.
    let budget = span.peak_bytes;
    let only_whole = plan_graph_with_stats(&g, config(CodeCharge::WholeElements, budget));
    let direct = plan_graph(&g, config(CodeCharge::Span, budget)).unwrap();
    let plan = only_whole.0.unwrap();
    assert_eq!(plan.config.code_charge, CodeCharge::Span);
    assert!(!plan.config.gemm_far_end);
    assert!(plan.peak_bytes <= budget);
    assert_eq!(plan.peak_bytes, direct.peak_bytes);
    // Its stats count both searches.
    assert!(plan.stats.candidates_screened > direct.stats.candidates_screened);
}

/// Runs the body-search jobs in reverse order (as another thread might
/// finish them), returning them in index order.
struct Reversed(AtomicUsize);

impl SearchJobs for Reversed {
    fn run(&self, count: usize, job: &(dyn Fn(usize) -> BodySearch + Sync)) -> Vec<BodySearch> {
        self.0.fetch_add(count, Ordering::Relaxed);
        let mut out: Vec<(usize, BodySearch)> = (0..count).rev().map(|i| (i, job(i))).collect();
        out.sort_by_key(|(i, _)| *i);
        out.into_iter().map(|(_, o)| o).collect()
    }
}

#[test]
fn body_searches_run_as_jobs_give_the_same_plan_and_statistics() {
    // Mixed FP16 / FP8 weights on a few tiles: several outer branches reach
    // the Repeat with different layouts, so more than one body is searched.
    let g = projected_residual_mlp(64, 256, 1024, 4);
    let config = PlanConfig {
        tiles: 16,
        beam_width: 16,
        ..PlanConfig::default()
    };
    let alone = plan_graph(&g, config).unwrap();
    let jobs = Reversed(AtomicUsize::new(0));
    let hooks = SearchHooks {
        progress: None,
        jobs: Some(&jobs),
    };
    let with_jobs = plan_graph_with(&g, config, hooks).unwrap();
    assert!(alone.stats.body_searches >= 2, "{:?}", alone.stats);
    assert!(
        jobs.0.load(Ordering::Relaxed) > 0,
        "no body search ran as a job"
    );
    assert_eq!(format!("{:?}", alone.ops), format!("{:?}", with_jobs.ops));
    assert_eq!(alone.cycles, with_jobs.cycles);
    assert_eq!(alone.tile_peaks, with_jobs.tile_peaks);
    assert_eq!(alone.code_bytes, with_jobs.code_bytes);
    let counted = |s: PlanStats| {
        (
            s.candidates_screened,
            s.body_searches,
            s.cache_hits,
            s.memory_rejections,
        )
    };
    assert_eq!(counted(alone.stats), counted(with_jobs.stats));
}
