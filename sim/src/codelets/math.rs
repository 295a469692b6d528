//! The arithmetic of each kernel on `f32` working values, free of SRAM and
//! ABI concerns so tests can compare it with straightforward loops.
//!
//! Numerics model the device (`docs/facts/siglip-and-fp8.md` §4): operands
//! arrive decoded exactly (FP16, scaled FP8), products and sums are formed in
//! F32 (AMP with float partials) — or, for FP8 × FP8, in FP16 partials
//! rounded after every 32-K micro-group — and the caller rounds results to
//! the output type once. Matrix products use the `gemm` crate through the
//! reference's wrapper on the calling thread (tiles already run in parallel);
//! transcendental functions use the standard library, independent of the
//! FP32 reference's fast approximations, so that check shares nothing with
//! them. The device-numerics reference does use [`layer_norm`] and
//! [`gelu_tanh`]: once activations are cast to FP8, a last-place F32
//! difference that flips an FP8 rounding grows over the layers, so the
//! reference must compute what the device computes.

use crate::gemm::{fp8_product_f16_partials, gemm, MatRef, Threads};

/// `acc[m×n] += a[m×k] · b`, with `b` stored `[k, n]` row-major, or `[n, k]`
/// when `b_transposed` (the PyTorch Linear weight layout).
pub fn gemm_accumulate(
    (m, k, n): (usize, usize, usize),
    a: &[f32],
    b: &[f32],
    b_transposed: bool,
    acc: &mut [f32],
) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let mut product = vec![0f32; m * n];
    let bv = if b_transposed {
        MatRef::transposed(b, 0, k)
    } else {
        MatRef::row_major(b, 0, n)
    };
    gemm(
        (m, n, k),
        MatRef::row_major(a, 0, k),
        bv,
        &mut product,
        1.0,
        Threads::One,
    );
    for (o, p) in acc.iter_mut().zip(&product) {
        *o += p;
    }
}

/// [`gemm_accumulate`] for FP8 × FP8 operands into FP16 partials
/// ([`crate::gemm::fp8_product_f16_partials`]): `acc` holds FP16 values.
pub fn fp8_gemm_accumulate(
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
    fp8_product_f16_partials((m, n, k), MatRef::row_major(a, 0, k), bv, acc, Threads::One);
}

/// `out[i] = Σ_p parts[p·len + i]`, summed in part order.
pub fn reduce_parts(parts: &[f32], len: usize, out: &mut [f32]) {
    out[..len].fill(0.0);
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

/// Softmax of each `cols`-long row in place (max-subtracted).
pub fn softmax_rows(data: &mut [f32], cols: usize) {
    if cols == 0 {
        return;
    }
    for row in data.chunks_mut(cols) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0;
        for v in row.iter_mut() {
            *v = (*v - max).exp();
            sum += *v;
        }
        let inv = 1.0 / sum;
        for v in row.iter_mut() {
            *v *= inv;
        }
    }
}
