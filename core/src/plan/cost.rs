//! Cycle cost model. Every figure comes from `crate::ipu21::timing`, where
//! each constant cites its source. Lowering emits exactly the kernel calls and
//! transfers the plan describes, so costing those calls *is* costing the
//! program: nothing here re-derives a lowering decision.

use core::num::Saturating as S;

use crate::ipu21::timing as t;
use crate::ir::DType;
use crate::kernel::{Kernel, KernelArgs};

/// AMP multiply-accumulates per cycle for an operand pair: the narrower type
/// sets the engine mode (FP8 only when both operands are FP8).
fn amp_macs_per_cycle(a: DType, b: DType) -> u64 {
    match (a, b) {
        (DType::F8 { .. }, DType::F8 { .. }) => t::AMP_MACS_PER_CYCLE_F8 as u64,
        (DType::F32, _) | (_, DType::F32) => t::AMP_MACS_PER_CYCLE_F32 as u64,
        _ => t::AMP_MACS_PER_CYCLE_F16 as u64,
    }
}

/// Cycles of one AMP GEMM call (`docs/facts/ipu21-target.md` §6):
/// `294 + Σ_{16-K micro-groups} (⌈m·n_pad·16 / MACs⌉ + ⌈groups·G/4⌉)`, with
/// `n_pad` the columns rounded up to 16-column groups and G the per-group
/// weight-feed cost (doubled for FP32 weights).
pub fn gemm_cycles(m: u32, k: u32, n: u32, a: DType, b: DType, b_interleaved: bool) -> u64 {
    let groups = S(u64::from(n.div_ceil(t::AMP_COLUMN_GROUP)));
    let n_pad = groups * w(t::AMP_COLUMN_GROUP);
    let micro = S(u64::from(k.div_ceil(t::AMP_K_MICRO_GROUP)));
    let macs = amp_macs_per_cycle(a, b);
    let row_term = S((w(m) * n_pad * w(t::AMP_K_MICRO_GROUP)).0.div_ceil(macs));
    let mut g = w(if b_interleaved {
        t::AMP_GROUP_CYCLES_INTERLEAVED
    } else {
        t::AMP_GROUP_CYCLES_STANDARD
    });
    if matches!(b, DType::F32) {
        g *= 2;
    }
    let group_term = S((groups * g).0.div_ceil(4));
    (w(t::AMP_CALL_CYCLES) + micro * (row_term + group_term)).0
}

/// Saturating cycle arithmetic: kernel arguments come from argument-block
/// words (the codelets charge [`kernel_cycles`] of what they decode), so a
/// hostile block must give a huge count, never a wrapped small one.
fn w(v: u32) -> S<u64> {
    S(u64::from(v))
}

fn floor_div(v: S<u64>, d: u32) -> S<u64> {
    S(v.0 / u64::from(d))
}

fn ceil(v: S<u64>, d: u32) -> S<u64> {
    S(v.0.div_ceil(u64::from(d)))
}

/// Cycles of one kernel call, launch overhead included.
pub fn kernel_cycles(kernel: &Kernel) -> u64 {
    let launch = w(t::KERNEL_LAUNCH_CYCLES);
    let body = match *kernel {
        Kernel::Gemm {
            m,
            k,
            n,
            a,
            b,
            b_interleaved,
            ..
        } => S(gemm_cycles(m, k, n, a, b, b_interleaved)),
        Kernel::ReduceAdd {
            elements,
            parts,
            out,
            ..
        } => {
            let bytes =
                w(elements) * S(out.size_bytes() as u64) * w(parts.saturating_sub(1).max(1));
            ceil(bytes, t::REDUCE_OUTPUT_BYTES_PER_CYCLE)
        }
        Kernel::Add { rows, cols, .. } => ceil(w(rows) * w(cols), t::ADD_ELEMENTS_PER_CYCLE),
        Kernel::LayerNorm { rows, cols, .. } => {
            ceil(
                w(rows) * w(cols) * w(t::LAYER_NORM_CYCLES_PER_ELEMENT_X16),
                16,
            ) + w(rows) * w(t::LAYER_NORM_ROW_CYCLES)
        }
        Kernel::Gelu { elements, .. } => w(elements) * w(t::GELU_CYCLES_PER_ELEMENT),
        // erf, sigmoid and tanh each cost about one transcendental, as the
        // tanh GELU does (modelled, not measured).
        Kernel::Activation { elements, .. } => w(elements) * w(t::GELU_CYCLES_PER_ELEMENT),
        Kernel::Mul { rows, cols, .. } => ceil(w(rows) * w(cols), t::ADD_ELEMENTS_PER_CYCLE),
        Kernel::Softmax { rows, cols, .. } => w(rows) * w(cols) * w(t::SOFTMAX_CYCLES_PER_ELEMENT),
        Kernel::Cast { elements, from, to } => ceil(
            w(elements) * S((from.size_bytes() + to.size_bytes()) as u64),
            t::CAST_BYTES_PER_CYCLE,
        ),
        Kernel::Attention {
            q_rows,
            kv_rows,
            head_dim,
            dtype,
            ..
        }
        | Kernel::AttentionPartial {
            q_rows,
            kv_rows,
            head_dim,
            dtype,
            ..
        } => {
            // Two AMP products (q·kᵀ and p·v) plus a softmax over the scores
            // (a partial: the same over one key block; the row statistics
            // are part of the softmax passes).
            S(gemm_cycles(q_rows, head_dim, kv_rows, dtype, dtype, false))
                + S(gemm_cycles(q_rows, kv_rows, head_dim, dtype, dtype, false))
                + w(q_rows) * w(kv_rows) * w(t::SOFTMAX_CYCLES_PER_ELEMENT)
        }
        Kernel::AttentionCombine {
            q_rows,
            head_dim,
            parts,
            ..
        } => {
            // One rescale-and-add pass over every partial row (Add's
            // rate) plus one exp per query row and part (softmax's rate).
            ceil(
                w(q_rows) * (w(head_dim) + S(2)) * w(parts),
                t::ADD_ELEMENTS_PER_CYCLE,
            ) + w(q_rows) * w(parts) * w(t::SOFTMAX_CYCLES_PER_ELEMENT)
        }
        Kernel::Copy {
            rows, row_bytes, ..
        } => {
            w(t::LOCAL_COPY_CALL_CYCLES)
                + ceil(w(rows) * w(row_bytes), t::LOCAL_COPY_BYTES_PER_CYCLE)
        }
    };
    (launch + body).0
}

/// The planner's estimate for a whole kernel call (defined here, not in
/// `kernel`, so cycle estimates live in `plan` only).
impl KernelArgs {
    /// Cycles the call costs: [`kernel_cycles`] plus the bias epilogue, charged
    /// like a broadcast Add of the output block (`docs/facts/ipu21-target.md`
    /// §6, Add ≈ elements/16). Accumulating is free: the AMP loads its
    /// partials from the output anyway.
    pub fn cycles(&self) -> u64 {
        let mut c = kernel_cycles(&self.kernel);
        if let (Kernel::Gemm { m, n, .. }, Some(_)) = (&self.kernel, self.epilogue.bias) {
            c += (u64::from(*m) * u64::from(*n)).div_ceil(u64::from(t::ADD_ELEMENTS_PER_CYCLE));
        }
        c
    }
}

/// Cycles of one exchange phase in which the busiest tile sends or receives
/// `max_words` 32-bit words: one word per cycle per endpoint plus the internal
/// sync and the route/start latency (`docs/facts/ipu21-target.md` §6). This is a planning bound; the
/// exchange scheduler's phase length is checked against it by its tests.
pub fn exchange_phase_cycles(max_words: u64) -> u64 {
    (w(t::EXCHANGE_PHASE_CYCLES) + floor_div(S(max_words) * S(4), t::EXCHANGE_BYTES_PER_CYCLE)).0
}

/// Cycles to patch `words` instruction words before an exchange row: the
/// supervisor loop below 24 words, the six-worker bulk patcher from 24 on
/// (`docs/facts/seed-vit-repeat-evaluation.txt`: 846/2520/31848 scalar and
/// 450/936/9468 bulk cycles at 24/78/1024 words).
pub fn patch_cycles(words: u32) -> u64 {
    if words == 0 {
        0
    } else if words < t::PATCH_BULK_THRESHOLD_WORDS {
        (w(t::PATCH_SCALAR_CALL_CYCLES) + w(words) * w(t::PATCH_SCALAR_CYCLES_PER_WORD)).0
    } else {
        t::PATCH_BULK_CALL_CYCLES as u64
            + (words as u64 * t::PATCH_BULK_CYCLES_PER_WORD_X100 as u64).div_ceil(100)
    }
}

/// A step's cost: the slowest tile sets the pace of a BSP step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cycles {
    /// Compute (slowest tile's kernel calls).
    pub compute: u64,
    /// Exchange phases including syncs.
    pub exchange: u64,
}

impl Cycles {
    /// Total cycles.
    pub const fn total(&self) -> u64 {
        self.compute + self.exchange
    }
    /// Sum of two costs.
    pub const fn plus(self, o: Cycles) -> Cycles {
        Cycles {
            compute: self.compute + o.compute,
            exchange: self.exchange + o.exchange,
        }
    }
    /// `self` repeated `n` times.
    pub const fn times(self, n: u64) -> Cycles {
        Cycles {
            compute: self.compute * n,
            exchange: self.exchange * n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_checked_gemm() {
        // 64×64×64 F16 with standard weights:
        // 4 micro-groups × (⌈64·64·16/64⌉ = 1024 + ⌈4·1063/4⌉ = 1063) + 294 = 8642.
        assert_eq!(gemm_cycles(64, 64, 64, DType::F16, DType::F16, false), 8642);
        // Interleaved weights: 4 × (1024 + 940) + 294 = 8150.
        assert_eq!(gemm_cycles(64, 64, 64, DType::F16, DType::F16, true), 8150);
        // FP8 halves the row term: 4 × (512 + 1063) + 294 = 6594.
        let f8 = DType::f143(-4);
        assert_eq!(gemm_cycles(64, 64, 64, f8, f8, false), 6594);
        // 20 output columns pad to two groups: 1 × (⌈8·32·16/64⌉ = 64 + ⌈2·1063/4⌉ = 532) + 294 = 890.
        assert_eq!(gemm_cycles(8, 16, 20, DType::F16, DType::F16, false), 890);
        let k = Kernel::Gemm {
            m: 64,
            k: 64,
            n: 64,
            a: DType::F16,
            b: DType::F16,
            out: DType::F32,
            b_transposed: false,
            b_interleaved: false,
        };
        assert_eq!(kernel_cycles(&k), 8642 + 11);
    }

    #[test]
    fn hostile_argument_words_saturate_instead_of_wrapping() {
        let k = Kernel::Gemm {
            m: u32::MAX,
            k: u32::MAX,
            n: u32::MAX,
            a: DType::F32,
            b: DType::F32,
            out: DType::F32,
            b_transposed: false,
            b_interleaved: false,
        };
        assert_eq!(kernel_cycles(&k), u64::MAX);
        let c = Kernel::AttentionCombine {
            q_rows: u32::MAX,
            head_dim: u32::MAX,
            parts: u32::MAX,
            dtype: DType::F16,
        };
        assert!(kernel_cycles(&c) > u64::from(u32::MAX) * u64::from(u32::MAX));
        assert!(exchange_phase_cycles(u64::MAX) >= u64::MAX / 4);
    }

    #[test]
    fn patch_cost_matches_seed_measurements_within_ten_percent() {
        for (words, measured) in [(24u32, 450u64), (78, 936), (1024, 9468)] {
            let c = patch_cycles(words);
            assert!(
                c.abs_diff(measured) * 10 <= measured,
                "{words}: {c} vs {measured}"
            );
        }
        // The scalar loop at 23 words costs more than the bulk path at 24.
        assert!(patch_cycles(23) > patch_cycles(24));
        assert_eq!(exchange_phase_cycles(1000), 126 + 126 + 1000);
    }
}
