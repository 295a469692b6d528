//! The arithmetic of each kernel on `f32` working values, free of SRAM and
//! ABI concerns so tests can compare it with straightforward loops.
//!
//! Numerics model the device (`docs/facts/siglip-and-fp8.md` §4): operands
//! arrive decoded exactly (FP16, scaled FP8), products accumulate as the AMP
//! mode does ([`crate::gemm::amp_product`]: F32 or FP16 partials rounded
//! after every K micro-group), other sums are formed in F32, and the caller
//! rounds results to the output type once. Products run on the calling
//! thread (tiles already run in parallel); transcendental functions use the
//! standard library, independent of the FP32 reference's fast
//! approximations. Every rounding point here is written down in
//! `docs/facts/device-numerics.md`, which the host's device-numerics
//! reference implements on its own: once activations are cast to FP8, a
//! last-place F32 difference that flips an FP8 rounding grows over the
//! layers, so both must compute exactly what the contract says.

use ipuc_target::ipu21::timing::AmpMode;
use ipuc_target::numeric::DType;

use ipuc_target::numeric::{round_to_f16, F16Table};
use std::sync::OnceLock;

use super::elements::round_in_place;
use crate::gemm::{amp_product, MatRef, Threads};

/// `acc[m×n] += a[m×k] · b` as the AMP in `mode` accumulates
/// ([`crate::gemm::amp_product`]; `acc` holds partials-type values), with
/// `b` stored `[k, n]` row-major, or `[n, k]` when `b_transposed` (the
/// PyTorch Linear weight layout).
pub fn amp_accumulate(
    mode: AmpMode,
    (m, k, n): (usize, usize, usize),
    a: &[f32],
    b: &[f32],
    b_transposed: bool,
    acc: &mut [f32],
) {
    let bv = if b_transposed {
        MatRef::transposed(b, 0, k)
    } else {
        MatRef::row_major(b, 0, n)
    };
    amp_product(
        mode,
        (m, n, k),
        MatRef::row_major(a, 0, k),
        bv,
        acc,
        Threads::One,
    );
}

/// The scores every attention kernel starts from: `scale · q·kᵀ` over a
/// `qr × hd` query block and `kv × hd` keys, the product in `mode`'s
/// partials, then scaled in the partials' type
/// (`ipuc_target::kernel::attention_mode`: FP16 for FP16 attention).
pub fn attention_scores(
    mode: AmpMode,
    (qr, kv, hd): (usize, usize, usize),
    q: &[f32],
    k: &[f32],
    scale: f32,
) -> Vec<f32> {
    let mut scores = vec![0.0; qr * kv];
    amp_accumulate(mode, (qr, hd, kv), q, k, true, &mut scores);
    let half = half_partials(mode);
    scores
        .iter_mut()
        .for_each(|s| *s = in_partials(half, *s * scale));
    scores
}

/// Whether `mode` accumulates in FP16: the attention's scores, softmax and
/// output are then FP16 values.
fn half_partials(mode: AmpMode) -> bool {
    mode.partials_bytes() == 2
}

/// `v` rounded to FP16 when `half`, else as it is (F32).
fn in_partials(half: bool, v: f32) -> f32 {
    if half {
        round_to_f16(v)
    } else {
        v
    }
}

/// Whole-key attention from its scores: softmax per row in the scores'
/// type ([`attention_softmax_row`]), the probabilities rounded to the
/// operand type `dtype` (the AMP reads them so), then `p·v` in `mode`.
/// Returns `qr × hd` F32 values.
pub fn attention_output(
    mode: AmpMode,
    dtype: DType,
    (qr, kv, hd): (usize, usize, usize),
    mut scores: Vec<f32>,
    v: &[f32],
) -> Vec<f32> {
    if kv > 0 {
        let half = half_partials(mode);
        for row in scores.chunks_mut(kv) {
            attention_softmax_row(half, row);
        }
    }
    probabilities_times_v(mode, dtype, (qr, kv, hd), scores, v)
}

/// One attention row's softmax as poplibs builds it: the maximum, each
/// `exp(s − m)` (in FP16 when `half`: the difference and the exponential
/// each rounded to FP16), their sum in F32, its inverse (rounded to FP16
/// when `half`) and the normalising multiply, rounded likewise.
fn attention_softmax_row(half: bool, row: &mut [f32]) {
    let (_, sum) = exp_from_max_in(half, row);
    let inv = in_partials(half, 1.0 / sum);
    for v in row.iter_mut() {
        *v = in_partials(half, *v * inv);
    }
}

/// `p·v` in `mode` with the probabilities (normalised or not) first
/// rounded to the operand type `dtype`, as the AMP reads them.
fn probabilities_times_v(
    mode: AmpMode,
    dtype: DType,
    (qr, kv, hd): (usize, usize, usize),
    mut p: Vec<f32>,
    v: &[f32],
) -> Vec<f32> {
    round_in_place(&mut p, dtype);
    let mut out = vec![0.0; qr * hd];
    amp_accumulate(mode, (qr, kv, hd), &p, v, false, &mut out);
    out
}

/// One key block's share of key-split attention: per query row the
/// unnormalised `exp(s − m)·v` (the exponentials rounded to `dtype` for
/// the AMP), then the row maximum `m` and the exponentials' F32 sum `l` —
/// `qr × (hd + 2)` F32 values, which
/// `ipuc_target::kernel::combine_attention_partials` merges.
pub fn attention_partial(
    mode: AmpMode,
    dtype: DType,
    (qr, kv, hd): (usize, usize, usize),
    mut scores: Vec<f32>,
    v: &[f32],
) -> Vec<f32> {
    let mut stats = vec![(0f32, 0f32); qr];
    let half = half_partials(mode);
    for (row, st) in scores.chunks_mut(kv.max(1)).zip(stats.iter_mut()) {
        *st = exp_from_max_in(half, row);
    }
    let pv = probabilities_times_v(mode, dtype, (qr, kv, hd), scores, v);
    let mut out = Vec::with_capacity(qr * (hd + 2));
    for (row, (m, l)) in pv.chunks(hd.max(1)).zip(&stats) {
        out.extend_from_slice(row);
        out.push(*m);
        out.push(*l);
    }
    out
}

/// `out[i] = Σ_p parts[p·len + i]`, summed in part order.
pub fn reduce_parts(parts: &[f32], len: usize, out: &mut [f32]) {
    // From −0, the neutral start: the sum is the first part's plus the
    // others (`docs/facts/device-numerics.md` §4), as `add` gives a pair.
    out[..len].fill(-0.0);
    if len == 0 {
        return;
    }
    for part in parts.chunks_exact(len) {
        for (o, v) in out.iter_mut().zip(part) {
            *o += v;
        }
    }
}

/// `a + b` over a `[rows, cols]` block; `b` is one `[cols]` row when
/// `broadcast` (bias add).
pub fn add(a: &[f32], b: &[f32], cols: usize, broadcast: bool, out: &mut [f32]) {
    if broadcast {
        if cols == 0 {
            return;
        }
        for (o_row, a_row) in out.chunks_mut(cols).zip(a.chunks(cols)) {
            for ((o, x), y) in o_row.iter_mut().zip(a_row).zip(b) {
                *o = x + y;
            }
        }
    } else {
        for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
            *o = x + y;
        }
    }
}

/// `out = a ⊙ b`, `b` one `cols`-wide row broadcast over `a`'s rows when
/// `broadcast`.
pub fn mul(a: &[f32], b: &[f32], cols: usize, broadcast: bool, out: &mut [f32]) {
    if broadcast {
        if cols == 0 {
            return;
        }
        for (o_row, a_row) in out.chunks_mut(cols).zip(a.chunks(cols)) {
            for ((o, x), y) in o_row.iter_mut().zip(a_row).zip(b) {
                *o = x * y;
            }
        }
    } else {
        for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
            *o = x * y;
        }
    }
}

/// Row-wise LayerNorm: `(x − μ) / sqrt(var + eps) · γ + β`, biased variance,
/// two passes in F32.
pub fn layer_norm(x: &[f32], gamma: &[f32], beta: &[f32], eps: f32, out: &mut [f32]) {
    let cols = gamma.len();
    if cols == 0 {
        return;
    }
    for (o, row) in out.chunks_mut(cols).zip(x.chunks(cols)) {
        let mean = row.iter().sum::<f32>() / cols as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / cols as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for (((o, v), g), b) in o.iter_mut().zip(row).zip(gamma).zip(beta) {
            *o = (v - mean) * inv * g + b;
        }
    }
}

/// `gelu_pytorch_tanh`: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

/// The tanh GELU of an FP16 value in FP16 arithmetic, as poplibs' half
/// loop runs it (`docs/facts/device-numerics.md` §6): `c` = x clamped to
/// ±6, `c² `, `c³`, `φ = α·c + αβ·c³` (one mix, one rounding), `tanh φ`,
/// `+ 1`, `· 0.5`, `· x`, each result rounded to FP16, with the half
/// constants α = 0x3A6C and αβ = 0x28A6 of the loop.
pub fn gelu_tanh_f16(x: f32) -> f32 {
    static TABLE: OnceLock<F16Table> = OnceLock::new();
    let table = TABLE.get_or_init(|| F16Table::of(gelu_tanh_f16_steps));
    table.get(x).unwrap_or_else(|| gelu_tanh_f16_steps(x))
}

/// [`gelu_tanh_f16`] step by step.
pub(crate) fn gelu_tanh_f16_steps(x: f32) -> f32 {
    let r = round_to_f16;
    let alpha = half::f16::from_bits(0x3A6C).to_f32();
    let alpha_beta = half::f16::from_bits(0x28A6).to_f32();
    let c = x.clamp(-6.0, 6.0);
    let c3 = r(c * r(c * c));
    let phi = r(alpha * c + alpha_beta * c3);
    r(r(0.5 * r(r(phi.tanh()) + 1.0)) * x)
}

/// Softmax of each `cols`-long row in place (max-subtracted).
pub fn softmax_rows(data: &mut [f32], cols: usize) {
    if cols == 0 {
        return;
    }
    for row in data.chunks_mut(cols) {
        let (_, sum) = exp_from_max(row);
        let inv = 1.0 / sum;
        for v in row.iter_mut() {
            *v *= inv;
        }
    }
}

/// `row[i] = exp(row[i] − m)` for the row maximum `m`; returns `m` and the
/// exponentials' sum, added in F32 in row order (both softmax kernels'
/// first passes).
fn exp_from_max(row: &mut [f32]) -> (f32, f32) {
    exp_from_max_in(false, row)
}

/// [`exp_from_max`] in FP16 when `half`: `s − m` and its exponential each
/// rounded to FP16 (poplibs' half subtract and `f16v2exp`); the sum stays
/// F32 (poplibs reduces the row sums to FLOAT).
fn exp_from_max_in(half: bool, row: &mut [f32]) -> (f32, f32) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = if half {
            exp_f16(round_to_f16(*v - max))
        } else {
            (*v - max).exp()
        };
        sum += *v;
    }
    (max, sum)
}

/// `f16v2exp` of an FP16 value: its exponential rounded to FP16.
fn exp_f16(x: f32) -> f32 {
    let steps = |x: f32| round_to_f16(x.exp());
    static TABLE: OnceLock<F16Table> = OnceLock::new();
    let table = TABLE.get_or_init(|| F16Table::of(steps));
    table.get(x).unwrap_or_else(|| steps(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp16_exponential_table_is_the_rounded_exponential() {
        for bits in 0..=u16::MAX {
            let x = half::f16::from_bits(bits).to_f32();
            let want = round_to_f16(x.exp());
            assert_eq!(exp_f16(x).to_bits(), want.to_bits(), "{bits:#06x}");
        }
        let x = 1.0 + f32::EPSILON;
        assert_eq!(exp_f16(x).to_bits(), round_to_f16(x.exp()).to_bits());
    }
}
