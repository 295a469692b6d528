//! The AMP product of `device.rs` (contract §3) as one fused f64 kernel:
//! per output tile of [`MR`] rows × [`NR`] columns, each K micro-group's
//! products are summed in registers and added to the partials with one
//! rounding, in group order, without a separate product buffer.
//!
//! Why any order of work gives the device's bits: within a micro-group
//! every product and partial sum is exact in f64 (§3), so the order the
//! products are added in cannot change the group's sum; the partial is
//! `round(acc + sum)` once per group, group after group, as the scalar
//! definition does. Partials are kept in f64 between groups (an FP16 or
//! F32 value is exact in f64) and stored to the f32 output between K
//! blocks, which changes no bit either.
//!
//! Two builds of the tile kernel, chosen at run time: AVX2 intrinsics
//! where the CPU has AVX2 and FMA, else plain Rust. Both multiply then add
//! (no FMA; a product of two widened f32 is exact in f64 anyway, so even an
//! inexact group sum would round the same), add in the same K order, and
//! round with the same IEEE operations ([`round_f16_lanes`] and its
//! four-lane twin), so they give the same bits; the tests compare both with
//! the scalar definition in `device.rs`.
//!
//! The operands are widened to f64 and packed once per call (lhs in row
//! tiles `[k][MR]`, rhs in column panels `[k][NR]`, zero-padded), K runs in
//! cache blocks of whole micro-groups, and rayon splits the rows.

use rayon::prelude::*;

use super::products::Mat;

/// Rows of an output tile.
const MR: usize = 4;
/// Columns of an output tile (two AVX2 vectors of f64).
const NR: usize = 8;
/// K per cache block, rounded up to whole micro-groups: one row tile's
/// block (`MR · KC` f64) and one column panel's (`NR · KC`) stay in L1, a
/// task's rows' block in L2.
const KC: usize = 256;
/// Most row tiles per rayon task (bounds a task's lhs block in L2).
const MAX_TILES_PER_TASK: usize = 32;

/// The nearest FP16 value of `x` in one rounding (ties to even, overflow to
/// ±∞, subnormals kept, NaN to the canonical NaN), as an f64, without
/// branches: the same function as `device::round_f16_exact` (the unit test
/// there compares them bit for bit).
///
/// With `x`'s binade 2^e clamped to FP16's [2^-14, 2^16], the quantum is
/// 2^(e − 10); `c = 1.5 · 2^(e + 42)` has that quantum as its ulp and is so
/// much larger than `x` that `x + c` stays in `c`'s binade, so `x + c`
/// rounds `x` to the quantum (ties to even, the f64 addition's own single
/// rounding) and taking `c` away again is exact. The sign goes back on for
/// a value that rounds to zero. Above 2^16 the clamp keeps `c` finite and
/// the result is far beyond FP16's largest finite value, so ±∞.
#[inline(always)]
pub(super) fn round_f16_lanes(x: f64) -> f64 {
    const LEAST_NORMAL: f64 = 1.0 / 16384.0; // 2^-14
    const TOP: f64 = 65536.0; // 2^16
    const EXPONENT: u64 = 0x7ff << 52;
    let a = f64::from_bits(x.to_bits() & !(1 << 63));
    // Comparisons rather than `f64::max`/`min`: NaN's result is replaced
    // below, so no NaN handling is needed here.
    let a = if a > LEAST_NORMAL { a } else { LEAST_NORMAL };
    let a = if a < TOP { a } else { TOP };
    let c = f64::from_bits(((a.to_bits() & EXPONENT) + (42 << 52)) | (1 << 51));
    let r = ((x + c) - c).copysign(x);
    let r = if r.abs() > 65504.0 {
        f64::INFINITY.copysign(x)
    } else {
        r
    };
    if x.is_nan() {
        f64::NAN
    } else {
        r
    }
}

/// The partials type's rounding of an exact sum, as an f64.
#[inline(always)]
fn round_partials<const HALF: bool>(x: f64) -> f64 {
    if HALF {
        round_f16_lanes(x)
    } else {
        f64::from(x as f32)
    }
}

/// `acc[m×n] = round_p(… round_p(acc + Σ_{k ∈ group 0} a·b) …)` over K
/// `range` of `a` (m × K) and `b` (K × n), `group` K per micro-group, FP16
/// partials when `half` (else F32).
pub(super) fn fused_product(
    how: (bool, usize),
    shape: (usize, usize),
    range: std::ops::Range<usize>,
    a: Mat<'_>,
    b: Mat<'_>,
    acc: &mut [f32],
) {
    fused_product_with(false, how, shape, range, a, b, acc);
}

/// [`fused_product`], on the portable tile kernel even where AVX2 is
/// available when `portable` (so tests can compare the two builds).
pub(super) fn fused_product_with(
    portable: bool,
    (half, group): (bool, usize),
    (m, n): (usize, usize),
    range: std::ops::Range<usize>,
    a: Mat<'_>,
    b: Mat<'_>,
    acc: &mut [f32],
) {
    let k = range.len();
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let group = group.max(1);
    let kc = KC.div_ceil(group) * group;
    let tiles = m.div_ceil(MR);
    let panels = n.div_ceil(NR);
    // Both operands widened to f64 once, zero-padded to whole tiles:
    // `lhs[t][k][i]` = a(t·MR + i, k), `rhs[p][k][j]` = b(k, p·NR + j).
    let mut lhs = vec![0f64; tiles * k * MR];
    lhs.par_chunks_mut(k * MR)
        .enumerate()
        .for_each(|(t, tile)| {
            for i in 0..MR.min(m - t * MR) {
                let r = t * MR + i;
                for (kk, c) in range.clone().enumerate() {
                    tile[kk * MR + i] = f64::from(a.at(r, c));
                }
            }
        });
    let mut rhs = vec![0f64; panels * k * NR];
    rhs.par_chunks_mut(k * NR)
        .enumerate()
        .for_each(|(p, panel)| {
            let cols = NR.min(n - p * NR);
            for (row, r) in panel.chunks_exact_mut(NR).zip(range.clone()) {
                for (j, v) in row[..cols].iter_mut().enumerate() {
                    *v = f64::from(b.at(r, p * NR + j));
                }
            }
        });
    // Row blocks of whole tiles, enough for every thread to have several.
    let threads = rayon::current_num_threads().max(1);
    let per_task = tiles.div_ceil(4 * threads).clamp(1, MAX_TILES_PER_TASK);
    let shape = Shape {
        portable,
        half,
        group,
        kc,
        k,
        n,
    };
    acc[..m * n]
        .par_chunks_mut(per_task * MR * n)
        .enumerate()
        .for_each(|(i, out)| {
            let t0 = i * per_task;
            let rows = out.len() / n;
            let lhs = &lhs[t0 * k * MR..(t0 + rows.div_ceil(MR)) * k * MR];
            block(&shape, lhs, &rhs, out);
        });
}

/// What every tile of one product shares.
struct Shape {
    portable: bool,
    half: bool,
    group: usize,
    kc: usize,
    k: usize,
    n: usize,
}

/// One row block's outputs `out` (whole rows of `n`), its tiles' packed
/// lhs: every K block, every column panel, every row tile.
fn block(shape: &Shape, lhs: &[f64], rhs: &[f64], out: &mut [f32]) {
    let &Shape {
        portable,
        half,
        group,
        kc,
        k,
        n,
    } = shape;
    #[cfg(target_arch = "x86_64")]
    let avx2 = !portable
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    let avx2 = {
        let _ = portable;
        false
    };
    let rows = out.len() / n;
    let mut k0 = 0;
    while k0 < k {
        let k1 = (k0 + kc).min(k);
        for (p, panel) in rhs.chunks_exact(k * NR).enumerate() {
            let b = &panel[k0 * NR..k1 * NR];
            let c0 = p * NR;
            let cols = NR.min(n - c0);
            for (t, tile) in lhs.chunks_exact(k * MR).enumerate() {
                let a = &tile[k0 * MR..k1 * MR];
                let r0 = t * MR;
                let live = MR.min(rows - r0);
                let mut partials = [[0f64; NR]; MR];
                for (i, row) in partials.iter_mut().enumerate().take(live) {
                    let o = &out[(r0 + i) * n + c0..(r0 + i) * n + c0 + cols];
                    for (p, v) in row.iter_mut().zip(o) {
                        *p = f64::from(*v);
                    }
                }
                match (avx2, half) {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: `avx2` is true only when the CPU has AVX2 and
                    // FMA (detected above), all `tile_avx2` requires.
                    (true, true) => unsafe { tile_avx2::<true>(group, a, b, &mut partials) },
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: as above.
                    (true, false) => unsafe { tile_avx2::<false>(group, a, b, &mut partials) },
                    (_, true) => tile_portable::<true>(group, a, b, &mut partials),
                    (_, false) => tile_portable::<false>(group, a, b, &mut partials),
                }
                for (i, row) in partials.iter().enumerate().take(live) {
                    let o = &mut out[(r0 + i) * n + c0..(r0 + i) * n + c0 + cols];
                    for (v, p) in o.iter_mut().zip(row) {
                        *v = *p as f32;
                    }
                }
            }
        }
        k0 = k1;
    }
}

/// One tile over a K block of whole micro-groups (the last may be short),
/// in plain Rust: `a` is `[k][MR]`, `b` is `[k][NR]`.
fn tile_portable<const HALF: bool>(
    group: usize,
    a: &[f64],
    b: &[f64],
    partials: &mut [[f64; NR]; MR],
) {
    for (ga, gb) in a.chunks(group * MR).zip(b.chunks(group * NR)) {
        let mut sum = [[0f64; NR]; MR];
        for (ak, bk) in ga.chunks_exact(MR).zip(gb.chunks_exact(NR)) {
            for (s, &x) in sum.iter_mut().zip(ak) {
                for (s, &y) in s.iter_mut().zip(bk) {
                    *s += x * y;
                }
            }
        }
        for (p, s) in partials.iter_mut().zip(&sum) {
            for (p, &s) in p.iter_mut().zip(s) {
                *p = round_partials::<HALF>(*p + s);
            }
        }
    }
}

/// [`tile_portable`] on AVX2 registers: the tile's partials and group sums
/// in eight four-lane vectors each (row `i`, columns `4h..4h + 4` in vector
/// `2i + h`), the same IEEE operations in the same order per element —
/// multiply then add (no FMA), and [`round_f16_lanes`] step for step.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn tile_avx2<const HALF: bool>(group: usize, a: &[f64], b: &[f64], partials: &mut [[f64; NR]; MR]) {
    use std::arch::x86_64::*;
    let load = |x: &[f64]| _mm256_setr_pd(x[0], x[1], x[2], x[3]);
    let mut acc = [_mm256_setzero_pd(); 2 * MR];
    for (i, row) in partials.iter().enumerate() {
        acc[2 * i] = load(&row[..4]);
        acc[2 * i + 1] = load(&row[4..]);
    }
    for (ga, gb) in a.chunks(group * MR).zip(b.chunks(group * NR)) {
        let mut sum = [_mm256_setzero_pd(); 2 * MR];
        for (ak, bk) in ga.chunks_exact(MR).zip(gb.chunks_exact(NR)) {
            let (lo, hi) = (load(&bk[..4]), load(&bk[4..]));
            for (s, &x) in sum.chunks_exact_mut(2).zip(ak) {
                let x = _mm256_set1_pd(x);
                s[0] = _mm256_add_pd(s[0], _mm256_mul_pd(x, lo));
                s[1] = _mm256_add_pd(s[1], _mm256_mul_pd(x, hi));
            }
        }
        for (p, s) in acc.iter_mut().zip(&sum) {
            let x = _mm256_add_pd(*p, *s);
            *p = if HALF {
                round_f16_avx2(x)
            } else {
                _mm256_cvtps_pd(_mm256_cvtpd_ps(x))
            };
        }
    }
    for (i, row) in partials.iter_mut().enumerate() {
        // SAFETY: each store writes four f64 into a four-element half of a
        // `[f64; NR]` row (NR = 8), in bounds and exclusively borrowed.
        unsafe {
            _mm256_storeu_pd(row.as_mut_ptr(), acc[2 * i]);
            _mm256_storeu_pd(row.as_mut_ptr().add(4), acc[2 * i + 1]);
        }
    }
}

/// [`round_f16_lanes`] on four lanes, the same operations: `maxpd(a, m)`
/// is `if a > m { a } else { m }` and `minpd` likewise, `copysign` is the
/// sign bit's and/andnot/or, the comparisons are the same ordered `>` and
/// NaN test.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn round_f16_avx2(x: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m256d {
    use std::arch::x86_64::*;
    let sign = _mm256_set1_pd(-0.0);
    let sx = _mm256_and_pd(x, sign);
    let a = _mm256_andnot_pd(sign, x);
    let a = _mm256_max_pd(a, _mm256_set1_pd(1.0 / 16384.0));
    let a = _mm256_min_pd(a, _mm256_set1_pd(65536.0));
    let e = _mm256_and_si256(_mm256_castpd_si256(a), _mm256_set1_epi64x(0x7ff << 52));
    let c = _mm256_or_si256(
        _mm256_add_epi64(e, _mm256_set1_epi64x(42 << 52)),
        _mm256_set1_epi64x(1 << 51),
    );
    let c = _mm256_castsi256_pd(c);
    let r = _mm256_sub_pd(_mm256_add_pd(x, c), c);
    let r = _mm256_or_pd(_mm256_andnot_pd(sign, r), sx);
    let over = _mm256_cmp_pd::<_CMP_GT_OQ>(_mm256_andnot_pd(sign, r), _mm256_set1_pd(65504.0));
    let inf = _mm256_or_pd(_mm256_set1_pd(f64::INFINITY), sx);
    let r = _mm256_blendv_pd(r, inf, over);
    let nan = _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x);
    _mm256_blendv_pd(r, _mm256_set1_pd(f64::NAN), nan)
}

/// [`round_f16_lanes`] through the AVX2 build four lanes at a time where
/// the CPU has it (for the tests), in place.
#[cfg(test)]
pub(super) fn round_f16_vectors(xs: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { round_f16_chunks_avx2(xs) };
        return;
    }
    xs.iter_mut().for_each(|x| *x = round_f16_lanes(*x));
}

#[cfg(all(test, target_arch = "x86_64"))]
#[target_feature(enable = "avx2,fma")]
fn round_f16_chunks_avx2(xs: &mut [f64]) {
    use std::arch::x86_64::*;
    for c in xs.chunks_exact_mut(4) {
        let r = round_f16_avx2(_mm256_setr_pd(c[0], c[1], c[2], c[3]));
        // SAFETY: `c` holds exactly four f64, exclusively borrowed.
        unsafe { _mm256_storeu_pd(c.as_mut_ptr(), r) };
    }
}
