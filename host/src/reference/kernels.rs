//! Elementwise and row kernels: LayerNorm, GELU (tanh), softmax, and the
//! fast `exp` they share. Rows run in parallel over rayon.
//!
//! `exp` and `tanh` from libm cost ~5–10 ns each and do not vectorise; the
//! So400m forward evaluates ~8.5 M softmax exponentials and ~3.1 M GELUs per
//! layer, so they would add over a second. [`exp_fast`] is branch-free
//! (Cephes-style range reduction + degree-6 polynomial, ≤ 2 ulp on the
//! range used) and autovectorises.

use rayon::prelude::*;

/// Rows per rayon task for row kernels (amortises scheduling).
const ROWS_PER_TASK: usize = 16;
/// Elements per rayon task for elementwise kernels.
const ELEMS_PER_TASK: usize = 1 << 15;

/// e^x for finite x, accurate to ~2 ulp; saturates to 0 below −87.3 and to
/// ~f32::MAX·… above 88.7 (never reached by softmax, which subtracts the max).
#[inline(always)]
pub fn exp_fast(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so n·LN2_HI is exact for |n| < 2^9.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding then subtracting 1.5·2^23 rounds to the nearest integer
    // without a call to `round` (which would block vectorisation).
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.3, 88.7);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4_f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let er = p * r * r + r + 1.0;
    // 2^n through the exponent field; n ∈ [−126, 128] after the clamp, and
    // 2^128 never occurs because x ≤ 88.7 < 128·ln 2.
    let pow2n = f32::from_bits(((n as i32 + 127).max(0) as u32) << 23);
    er * pow2n
}

/// `gelu_pytorch_tanh`: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), with
/// tanh(u) = 1 − 2/(e^{2u} + 1).
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    let u = SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x);
    let tanh = 1.0 - 2.0 / (exp_fast(2.0 * u) + 1.0);
    0.5 * x * (1.0 + tanh)
}

/// GELU over a buffer, in place.
pub fn gelu_in_place(data: &mut [f32]) {
    data.par_chunks_mut(ELEMS_PER_TASK).for_each(|chunk| {
        for v in chunk {
            *v = gelu_tanh(*v);
        }
    });
}

/// Softmax of each `width`-long row, in place (max-subtracted, f32).
pub fn softmax_rows(data: &mut [f32], width: usize) {
    if width == 0 {
        return;
    }
    data.par_chunks_mut(width * ROWS_PER_TASK).for_each(|rows| {
        for row in rows.chunks_mut(width) {
            softmax_row(row);
        }
    });
}

/// Softmax of one row, in place.
#[inline]
pub fn softmax_row(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut lanes = [0f32; 8];
    let mut chunks = row.chunks_exact_mut(8);
    for c in &mut chunks {
        for (v, l) in c.iter_mut().zip(&mut lanes) {
            *v = exp_fast(*v - max);
            *l += *v;
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for v in chunks.into_remainder() {
        *v = exp_fast(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// Sum of a slice with eight independent accumulators (vectorises; also
/// more accurate than one running sum).
#[inline]
fn lane_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (x, l) in c.iter().zip(&mut lanes) {
            *l += f(*x);
        }
    }
    let mut s: f32 = lanes.iter().sum();
    for x in chunks.remainder() {
        s += f(*x);
    }
    s
}

/// LayerNorm over rows of `width` = γ's length, in place:
/// `(x − μ)/sqrt(var + eps)·γ + β` with the biased variance (two-pass).
pub fn layer_norm_in_place(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    if width == 0 {
        return;
    }
    x.par_chunks_mut(width * ROWS_PER_TASK).for_each(|rows| {
        for row in rows.chunks_mut(width) {
            let mean = lane_sum(row, |v| v) / width as f32;
            let var = lane_sum(row, |v| (v - mean) * (v - mean)) / width as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, &g), &b) in row.iter_mut().zip(gamma).zip(beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_fast_is_accurate() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let got = f64::from(exp_fast(x));
            let want = f64::from(x).exp();
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 4e-7, "relative error {worst}");
        assert_eq!(exp_fast(-1000.0), exp_fast(-87.3));
        assert!(exp_fast(-1000.0) < 1e-37);
    }

    #[test]
    fn gelu_matches_formula() {
        for i in -400..400 {
            let x = i as f32 * 0.025;
            let u = (2.0f64 / std::f64::consts::PI).sqrt()
                * (f64::from(x) + 0.044715 * f64::from(x).powi(3));
            let want = 0.5 * f64::from(x) * (1.0 + u.tanh());
            assert!((f64::from(gelu_tanh(x)) - want).abs() < 2e-6, "{x}");
        }
    }

    #[test]
    fn softmax_and_layer_norm() {
        let mut r = vec![1.0f32, 2.0, 3.0, -1.0, 0.5, 7.0, 2.0, 2.0, 1.0, 0.0];
        let want: Vec<f64> = {
            let e: Vec<f64> = r.iter().map(|&v| f64::from(v).exp()).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|v| v / s).collect()
        };
        softmax_rows(&mut r, 10);
        for (g, w) in r.iter().zip(&want) {
            assert!((f64::from(*g) - w).abs() < 1e-6);
        }
        let mut o = [1.0f32, 2.0, 3.0, 4.0];
        layer_norm_in_place(&mut o, &[1.0, 2.0, 1.0, 1.0], &[0.0, 0.0, 1.0, 0.0], 1e-6);
        let inv = 1.0 / (1.25f32 + 1e-6).sqrt();
        assert!((o[0] + 1.5 * inv).abs() < 1e-6 && (o[1] + 1.0 * inv).abs() < 1e-6);
        assert!((o[2] - (0.5 * inv + 1.0)).abs() < 1e-6 && (o[3] - 1.5 * inv).abs() < 1e-6);
    }
}
