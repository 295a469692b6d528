//! Cycle cost model. Every kernel rate comes from `ipuc_target::ipu21::rates` at
//! the chosen end (each names its source and what stands behind it), every
//! exchange and patch figure from [`super::charges`]. Lowering emits
//! exactly the kernel calls and transfers the plan describes, so costing
//! those calls *is* costing the program: nothing here re-derives a lowering
//! decision.

use core::num::Saturating as S;

use ipuc_target::ipu21::rates::{self, RateEnd, SoftmaxForm};
use ipuc_target::ipu21::timing as t;

use super::charges as c;
use crate::ir::{Activation, DType};
use crate::runtime::PATCH_BULK_THRESHOLD_WORDS;
use ipuc_target::kernel::{
    attention_mode, partials_type, AmpProduct, Kernel, KernelArgs, PartialRecord,
};

/// The planner charges the rates ipuc chooses (the simulator can be run at
/// either end of their sources; the planner ranks plans at one).
const END: RateEnd = RateEnd::Chosen;

/// Cycles of one AMP GEMM call (`docs/facts/kernel-rates.md`, per mode
/// [`t::AmpMode`]): the AMP passes and feed ([`amp_cycles`]) plus the
/// conversions the kernel performs ([`AmpProduct`]) at the Cast rate.
pub fn gemm_cycles(
    m: u32,
    k: u32,
    n: u32,
    (a, b, out): (DType, DType, DType),
    b_interleaved: bool,
) -> u64 {
    let product = AmpProduct::of(a, b, out);
    let partials = product.partials();
    let converted = [
        (product.convert_a, w(m) * w(k), a, product.operand_type(a)),
        (product.convert_b, w(k) * w(n), b, product.operand_type(b)),
        (product.convert_out, w(m) * w(n), partials, out),
    ];
    let mut cycles = amp_cycles(m, k, n, product.mode, b_interleaved);
    for (converts, elements, from, to) in converted {
        if converts {
            cycles += cast_cycles(elements, from, to);
        }
    }
    cycles.0
}

/// The AMP passes of one product in `mode`: `calls·294 + Σ_{K
/// micro-groups} (⌈m·n_pad·µ / MACs⌉ + feed)`, with µ the mode's K
/// micro-group (K padded to it), `n_pad` the columns rounded up to
/// 16-column groups and the feed G per 64 K per column group.
fn amp_cycles(m: u32, k: u32, n: u32, mode: t::AmpMode, b_interleaved: bool) -> S<u64> {
    let groups = n.div_ceil(t::AMP_COLUMN_GROUP);
    let n_pad = w(groups) * w(t::AMP_COLUMN_GROUP);
    let (micro, calls) = rates::amp_k_geometry(k, mode.k_micro_group(), END);
    let row_term = S((w(m) * n_pad * w(mode.k_micro_group()))
        .0
        .div_ceil(u64::from(mode.macs_per_cycle())));
    let g = mode.feed_cycles_per_group(b_interleaved, END);
    let fp8 = mode == t::AmpMode::F8F16Partials;
    let feed = S(rates::amp_feed_cycles(
        u64::from(groups),
        g,
        mode.k_micro_group(),
        fp8,
        END,
    ));
    S(calls) * w(rates::AMP_CALL.at(END)) + S(micro) * (row_term + feed)
}

/// One head's attention block: two AMP products in the attention's mode
/// (`attention_mode`: FP16 into FP16 partials), a softmax over the scores
/// in that type built from its parts (`rates::softmax_x16`, a per-row
/// cost), the transposition of the value block the AMP takes as `p·v`'s
/// weights and the output's conversion to `out` (a key-split partial: the
/// same over one key block). The scores are formed in the cheaper
/// orientation, as the simulator's kernel model (`ipuc_sim::kernel_timing`)
/// charges them: query-major (`q·kᵀ`, the keys fed as AMP weights) or
/// key-major (`k·qᵀ`, the short query block fed as weights, the
/// probabilities then written transposed for `p·v`). Values that arrive
/// `values_transposed` were transposed by the plan's `transpose` calls.
fn attention_cycles(
    (q_rows, kv_rows, head_dim): (u32, u32, u32),
    (dtype, out): (DType, DType),
    values_transposed: bool,
    form: SoftmaxForm,
) -> S<u64> {
    let mode = attention_mode(dtype);
    let partials = partials_type(mode);
    let scores = |rows: u32, cols: u32| amp_cycles(rows, head_dim, cols, mode, false);
    let elements = w(q_rows) * w(kv_rows);
    let softmax = |rows: u32| {
        x16(elements * w(rates::softmax_x16(partials, dtype, form, END)))
            + w(rows) * w(rates::softmax_row(form, END))
    };
    let transpose = transpose_cycles;
    let query_major = scores(q_rows, kv_rows) + softmax(q_rows);
    // Plus two worker rendezvous to merge the workers' per-query maxima
    // and sums (charged as six-worker call overheads).
    let key_major = scores(kv_rows, q_rows)
        + softmax(kv_rows)
        + transpose(elements)
        + w(2 * rates::SIX_WORKER_CALL.at(END));
    let values = if values_transposed {
        S(0)
    } else {
        transpose(w(kv_rows) * w(head_dim))
    };
    query_major.min(key_major)
        + values
        + amp_cycles(q_rows, kv_rows, head_dim, mode, false)
        + cast_cycles(w(q_rows) * w(head_dim), partials, out)
}

/// An MLP activation over `elements` (`None`: the tanh GELU) stored as
/// `out`.
fn activation_cycles(
    elements: S<u64>,
    function: Option<Activation>,
    dtype: DType,
    out: DType,
) -> S<u64> {
    x16(elements * w(rates::mlp_activation_x16(function, dtype, END)))
        + fused_cast_cycles(elements, dtype, out)
}

/// `elements` written transposed, at the panel-transpose rate.
fn transpose_cycles(elements: S<u64>) -> S<u64> {
    x16(elements * w(rates::PANEL_TRANSPOSE.at(END)))
}

/// A conversion of `elements` from `from` to `to` at the Cast rate.
fn cast_cycles(elements: S<u64>, from: DType, to: DType) -> S<u64> {
    x16(elements * w(rates::cast_x16(from, to, END)))
}

/// LayerNorm of `rows × cols` stored as `out`: the work of the busiest of
/// the six workers at one issue every six cycles, with rows dealt to the
/// workers or — fewer rows than workers, a block of one token row — each
/// row's columns dealt to them and their partial statistics merged after
/// two rendezvous (charged as six-worker call overheads): whichever is
/// cheaper, as the simulator's codelet model charges it. A row on one
/// worker runs at a sixth of the tile's rate, which a per-tile rate hides.
fn layer_norm_cycles(rows: u32, cols: u32, dtype: DType, out: DType) -> S<u64> {
    let workers = S(ipuc_target::ipu21::contexts::WORKERS_U64);
    let per_worker = |units: S<u64>| S(units.0.div_ceil(workers.0));
    let per_element = w(rates::layer_norm_x16(dtype, END) + rates::cast_x16(dtype, out, END));
    let worker = |rows: S<u64>, cols: S<u64>| {
        let row = x16(cols * per_element) + w(rates::ROW_OVERHEAD_LAYER_NORM.at(END));
        rows * row * workers
    };
    let by_rows = worker(per_worker(w(rows)), w(cols));
    let by_cols = w(2 * rates::SIX_WORKER_CALL.at(END)) + worker(w(rows), per_worker(w(cols)));
    by_rows.min(by_cols)
}

/// An element-wise Add or Mul: the slower of the element-wise rate and
/// the memory port moving both operands and the result (element-wise
/// operands live in standard memory), as the simulator's codelet model
/// charges it.
fn binary_cycles(rows: u32, cols: u32, broadcast_rows: bool, dtype: DType) -> S<u64> {
    let elements = w(rows) * w(cols);
    let b = if broadcast_rows { w(cols) } else { elements };
    let bytes = (elements + elements + b) * S(dtype.size_bytes() as u64);
    x16(elements * w(rates::binary_x16(dtype, END))).max(ceil(bytes, rates::STANDARD_PORT.at(END)))
}

/// A conversion fused into the kernel that produces the value: charged at
/// the Cast rate, like the separate pass it replaces, less its call and
/// its re-read of the operand.
fn fused_cast_cycles(elements: S<u64>, arith: DType, out: DType) -> S<u64> {
    cast_cycles(elements, arith, out)
}

/// Sixteenths of a cycle to cycles, rounded up.
fn x16(v: S<u64>) -> S<u64> {
    ceil(v, 16)
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
    let launch = w(rates::KERNEL_LAUNCH.at(END));
    let body = match *kernel {
        Kernel::Gemm {
            m,
            k,
            n,
            a,
            b,
            out,
            b_interleaved,
            ..
        } => S(gemm_cycles(m, k, n, (a, b, out), b_interleaved)),
        Kernel::ReduceAdd {
            elements,
            parts,
            input,
            out,
        } => S(rates::reduce_cycles(
            u64::from(elements),
            parts,
            input,
            out,
            END,
        )),
        Kernel::Add {
            rows,
            cols,
            broadcast_rows,
            dtype,
        }
        | Kernel::Mul {
            rows,
            cols,
            broadcast_rows,
            dtype,
        } => binary_cycles(rows, cols, broadcast_rows, dtype),
        Kernel::LayerNorm {
            rows,
            cols,
            dtype,
            out,
            ..
        } => layer_norm_cycles(rows, cols, dtype, out),
        Kernel::Gelu {
            elements,
            dtype,
            out,
        } => activation_cycles(w(elements), None, dtype, out),
        Kernel::Activation {
            elements,
            dtype,
            out,
            function,
        } => activation_cycles(w(elements), Some(function), dtype, out),
        Kernel::Softmax { rows, cols, dtype } => {
            let form = SoftmaxForm::Normalised;
            x16(w(rows) * w(cols) * w(rates::softmax_x16(dtype, dtype, form, END)))
                + w(rows) * w(rates::softmax_row(form, END))
        }
        Kernel::Cast { elements, from, to } => cast_cycles(w(elements), from, to),
        Kernel::Attention {
            q_rows,
            kv_rows,
            head_dim,
            dtype,
            ..
        } => attention_cycles(
            (q_rows, kv_rows, head_dim),
            (dtype, dtype),
            false,
            SoftmaxForm::Normalised,
        ),
        Kernel::AttentionPartial {
            q_rows,
            kv_rows,
            head_dim,
            dtype,
            values_transposed,
            ..
        } => attention_cycles(
            (q_rows, kv_rows, head_dim),
            (dtype, PartialRecord::of(head_dim, dtype).element),
            values_transposed,
            SoftmaxForm::Unnormalised,
        ),
        Kernel::Transpose { rows, cols, .. } => transpose_cycles(w(rows) * w(cols)),
        Kernel::AttentionCombine {
            q_rows,
            head_dim,
            parts,
            dtype,
        } => {
            // One rescale-and-add pass in F32 over every partial row (its
            // `p·v` widened from the record's type first) plus one exp per
            // query row and part.
            let widened = w(q_rows) * w(head_dim) * w(parts);
            x16(w(q_rows) * (w(head_dim) + S(2)) * w(parts) * w(rates::binary_x16(DType::F32, END)))
                + cast_cycles(
                    widened,
                    PartialRecord::of(head_dim, dtype).element,
                    DType::F32,
                )
                + x16(w(q_rows) * w(parts) * w(rates::exp_x16(DType::F32, END)))
        }
        Kernel::Copy {
            rows, row_bytes, ..
        } => ceil(w(rows) * w(row_bytes), rates::LOCAL_COPY.at(END)),
    };
    // Every kernel but the AMP's products runs as one six-worker call
    // (`runall`, worker start, rendezvous), as the simulator charges it;
    // the AMP kernels' calls are in their products' cost.
    let call = match kernel {
        Kernel::Gemm { .. } | Kernel::Attention { .. } | Kernel::AttentionPartial { .. } => S(0),
        _ => w(rates::SIX_WORKER_CALL.at(END)),
    };
    (launch + call + body).0
}

/// The planner's estimate for a whole kernel call: [`kernel_cycles`] plus
/// the bias epilogue, charged as a broadcast Add of the output block
/// ([`binary_cycles`]). Accumulating is free: the AMP loads its partials
/// from the output anyway. A function of `plan`, not a method of the ABI's
/// `KernelArgs`, so estimates live here only.
pub fn call_cycles(args: &KernelArgs) -> u64 {
    let mut c = S(kernel_cycles(&args.kernel));
    if let (Kernel::Gemm { m, n, out, .. }, Some(_)) = (&args.kernel, args.epilogue.bias) {
        c += binary_cycles(*m, *n, true, *out);
    }
    c.0
}

/// Cycles of one exchange phase in which the busiest tile sends or receives
/// `max_words` 32-bit words: one word per cycle per endpoint plus the internal
/// sync and the route/start latency (`docs/facts/ipu21-target.md` §6). This is a planning bound; the
/// exchange scheduler's phase length is checked against it by its tests.
pub fn exchange_phase_cycles(max_words: u64) -> u64 {
    (w(c::EXCHANGE_PHASE_CYCLES) + floor_div(S(max_words) * S(4), t::EXCHANGE_BYTES_PER_CYCLE)).0
}

/// Cycles to patch `words` instruction words before an exchange row: the
/// supervisor loop below 24 words, the six-worker bulk patcher from 24 on
/// (`docs/facts/seed-vit-repeat-evaluation.txt`: 846/2520/31848 scalar and
/// 450/936/9468 bulk cycles at 24/78/1024 words).
pub fn patch_cycles(words: u32) -> u64 {
    if words == 0 {
        0
    } else if words < PATCH_BULK_THRESHOLD_WORDS {
        (w(c::PATCH_SCALAR_CALL_CYCLES) + w(words) * w(c::PATCH_SCALAR_CYCLES_PER_WORD)).0
    } else {
        c::PATCH_BULK_CALL_CYCLES as u64
            + (words as u64 * c::PATCH_BULK_CYCLES_PER_WORD_X100 as u64).div_ceil(100)
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
        let (f16, f32, f8) = (DType::F16, DType::F32, DType::f143(-4));
        // 64×64×64 FP16 → FP32 partials, standard weights: 4 micro-groups ×
        // (⌈64·64·16/32⌉ = 2048 + 4 groups × 1280/4 = 1280) + 294.
        assert_eq!(
            gemm_cycles(64, 64, 64, (f16, f16, f32), false),
            4 * (2048 + 1280) + 294
        );
        // Interleaved weights: G = 1157.
        assert_eq!(
            gemm_cycles(64, 64, 64, (f16, f16, f32), true),
            4 * (2048 + 1157) + 294
        );
        let interleaved = 4 * (2048 + 1157) + 294;
        // An FP16 output adds the partials' conversion: 4096 × 0.75.
        assert_eq!(
            gemm_cycles(64, 64, 64, (f16, f16, f16), true),
            interleaved + 3072
        );
        // FP8 weights with FP16 activations: the weights are widened first
        // at the FP8 cast rate (4096 × 2).
        assert_eq!(
            gemm_cycles(64, 64, 64, (f16, f8, f32), true),
            interleaved + 8192
        );
        // FP8 × FP8 into FP16 partials: 2 micro-groups of 32 K ×
        // (⌈64·64·32/128⌉ = 1024 + 1157) + 294.
        assert_eq!(
            gemm_cycles(64, 64, 64, (f8, f8, f16), true),
            2 * (1024 + 1157) + 294
        );
        // FP32: a quarter of the FP16-partials rate, twice the feed.
        assert_eq!(
            gemm_cycles(64, 64, 64, (f32, f32, f32), false),
            4 * (4096 + 2560) + 294
        );
        // 20 output columns pad to two groups: 1 × (⌈8·32·16/32⌉ = 128 +
        // ⌈2·1280/4⌉ = 640) + 294.
        assert_eq!(
            gemm_cycles(8, 16, 20, (f16, f16, f32), false),
            128 + 640 + 294
        );
        let k = Kernel::Gemm {
            m: 64,
            k: 64,
            n: 64,
            a: f16,
            b: f16,
            out: f32,
            b_transposed: false,
            b_interleaved: false,
        };
        assert_eq!(kernel_cycles(&k), 4 * (2048 + 1280) + 294 + 11);
    }

    #[test]
    fn each_mode_runs_at_its_facts_rate() {
        // Row term alone (one 16-column group, K one micro-group, many rows):
        // MACs per cycle = m·16·µ / row cycles.
        for mode in t::AmpMode::ALL {
            let (a, b, out) = match mode {
                t::AmpMode::F32 => (DType::F32, DType::F32, DType::F32),
                t::AmpMode::F8F16Partials => (DType::f143(0), DType::f143(0), DType::F16),
                _ => (DType::F16, DType::F16, DType::F32),
            };
            if AmpProduct::of(a, b, out).mode != mode {
                continue; // FP16 partials: no codelet runs that mode
            }
            let mu = mode.k_micro_group();
            let m = 6400;
            let one = gemm_cycles(m, mu, 16, (a, b, out), true);
            let feed = u64::from(mode.feed_cycles_per_group(true, END)).div_ceil(4);
            let row = one - u64::from(rates::AMP_CALL.at(END)) - feed;
            assert_eq!(
                u64::from(m) * 16 * u64::from(mu) / row,
                u64::from(mode.macs_per_cycle()),
                "{mode:?}"
            );
        }
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
        // Saturated, then taken from sixteenths of a cycle to cycles.
        assert!(kernel_cycles(&c) >= u64::MAX / 16);
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
