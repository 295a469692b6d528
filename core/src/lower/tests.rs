//! Lowering tests on the planner's small hand-built graphs: structure of the
//! lowered Repeat, and the f32 oracle against a direct reference.

use alloc::format;
use alloc::vec::Vec;

use crate::ir::{DType, Graph};
use crate::plan::tests::{residual_mlp, small_repeat};
use crate::plan::{plan_graph, PlanConfig};

#[test]
fn lowered_small_repeat_is_structurally_sound() {
    let (g, plan) = small_repeat();
    let s = super::lower(&g, &plan).unwrap();
    super::check::check(&s).unwrap();
    let repeats: Vec<_> = s
        .steps
        .iter()
        .filter(|st| matches!(st, super::schedule::Step::Repeat(_)))
        .collect();
    assert_eq!(repeats.len(), 1);
    let super::schedule::Step::Repeat(r) = repeats[0] else {
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
        let s = super::lower(&g, &plan).unwrap();
        let mut ex = super::oracle::Executor::new(&s, |n| tensor_for(&g, n)).unwrap();
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

/// `docs/facts/ipu21-target.md` §2.10 rule 6 as lowering leaves it: every
/// operand of every AMP call (GEMM, attention) sits in a buffer aligned to
/// 32 bytes at a 32-byte offset, its output buffer is interleaved-class, and
/// so are the weights of a GEMM that claims them interleaved. (Attention is
/// covered end to end: the device enforces the rule on siglip-small runs.)
#[test]
fn amp_calls_meet_rule_6_after_lowering() {
    use super::schedule::{MemoryClass, Step, AMP_BUFFER_ALIGN};
    use ipuc_target::kernel::Kernel;
    let (g, plan) = small_repeat();
    let s = super::lower(&g, &plan).unwrap();
    let mut amp_calls = 0;
    s.visit(|step, _| {
        let Step::Compute(c) = step else { return };
        for call in &c.calls {
            let claimed = match call.kernel {
                Kernel::Gemm { b_interleaved, .. } => b_interleaved,
                Kernel::Attention { .. } | Kernel::AttentionPartial { .. } => false,
                _ => continue,
            };
            amp_calls += 1;
            for (i, r) in call.operands.iter().enumerate() {
                let b = &s.buffers[r.buffer.index()];
                assert!(b.align >= AMP_BUFFER_ALIGN, "{}: align {}", b.name, b.align);
                assert_eq!(r.offset % AMP_BUFFER_ALIGN, 0, "{}", b.name);
                if i == 0 || (i == 2 && claimed) {
                    assert_eq!(b.class, MemoryClass::Interleaved, "{}", b.name);
                }
            }
        }
    });
    assert!(amp_calls > 0);
}
