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
//! where the CPU has AVX2 and FMA, else plain Rust. Both add the products
//! in the same K order (the AVX2 one with fused multiply-adds, which round
//! the same: a product of two widened f32 is exact in f64) and round with
//! the same IEEE operations ([`round_f16_lanes`] and its four-lane twin),
//! so they give the same bits; the tests compare both with the scalar
//! definition in `device.rs`.
//!
//! The operands are widened to f64 and packed once per call (lhs in row
//! tiles `[k][MR]`, rhs in column panels `[k][NR]`, zero-padded), K runs in
//! cache blocks of whole micro-groups, and rayon splits the rows.

use std::cell::Cell;

use rayon::prelude::*;

use super::products::Mat;

/// Rows of an output tile (6 × 8: twelve accumulators, two rhs vectors
/// and a broadcast fill the sixteen AVX2 registers).
const MR: usize = 6;
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
#[inline(always)]
pub(super) fn round_f16_lanes(x: f64) -> f64 {
    let r = round_to_grid_lanes(x, 1.0 / 16384.0, 65536.0, F16_MAGIC);
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

/// `1.5 · 2^(52 − 10)`, FP16's [`round_to_grid_lanes`] `magic`.
const F16_MAGIC: f64 = 6_597_069_766_656.0;

/// `x` to the nearest multiple of its binade's quantum, ties to even, on a
/// grid whose normal binades start at `least_normal` (below it the
/// subnormal quantum), branch-free. `magic` is `1.5 · 2^(52 − mantissa
/// bits)`, `top` a power of two at or above the format's largest binade.
///
/// With |x|'s binade 2^e clamped between `least_normal` and `top`, the
/// quantum is 2^(e − mantissa); `c = 2^e · magic` has that quantum as its
/// ulp and is so much larger than |x| that |x| + c stays in `c`'s binade,
/// so |x| + c rounds |x| to the quantum (ties to even, the f64 addition's
/// own single rounding) and taking `c` away again is exact; then `x`'s sign
/// goes back on (rounding to nearest, ties to even, is symmetric). Above
/// `top` the clamp keeps `c` finite and the result is beyond the format's
/// largest finite value. NaN gives a NaN, ±∞ gives ±∞.
#[inline(always)]
pub(super) fn round_to_grid_lanes(x: f64, least_normal: f64, top: f64, magic: f64) -> f64 {
    const SIGN: u64 = 1 << 63;
    const EXPONENT: u64 = 0x7ff << 52;
    let a = f64::from_bits(x.to_bits() & !SIGN);
    // Comparisons rather than `f64::max`/`min` (no NaN handling needed).
    let e = if a > least_normal { a } else { least_normal };
    let e = if e < top { e } else { top };
    let c = f64::from_bits(e.to_bits() & EXPONENT) * magic;
    let r = (a + c) - c;
    f64::from_bits(r.to_bits() | (x.to_bits() & SIGN))
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
    // Every element is written, so the buffers can be reused from this
    // thread's last call (no fresh pages to fault in per product).
    let mut lhs = take_buffer(&LHS, tiles * k * MR);
    lhs.par_chunks_mut(k * MR)
        .enumerate()
        .for_each(|(t, tile)| {
            for i in 0..MR {
                let r = t * MR + i;
                if r < m {
                    for (kk, c) in range.clone().enumerate() {
                        tile[kk * MR + i] = f64::from(a.at(r, c));
                    }
                } else {
                    (0..k).for_each(|kk| tile[kk * MR + i] = 0.0);
                }
            }
        });
    let mut rhs = take_buffer(&RHS, panels * k * NR);
    rhs.par_chunks_mut(k * NR)
        .enumerate()
        .for_each(|(p, panel)| {
            let cols = NR.min(n - p * NR);
            for (row, r) in panel.chunks_exact_mut(NR).zip(range.clone()) {
                for (j, v) in row[..cols].iter_mut().enumerate() {
                    *v = f64::from(b.at(r, p * NR + j));
                }
                row[cols..].fill(0.0);
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
    LHS.set(lhs);
    RHS.set(rhs);
}

thread_local! {
    /// The packed operands' buffers, kept between calls on each thread.
    static LHS: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
    static RHS: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}

/// This thread's kept buffer (empty if a call on this thread still holds
/// it), at `len` elements of unspecified value.
fn take_buffer(kept: &'static std::thread::LocalKey<Cell<Vec<f64>>>, len: usize) -> Vec<f64> {
    let mut buffer = kept.take();
    buffer.resize(len, 0.0);
    buffer
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
/// in `2 · MR` four-lane vectors each (row `i`, columns `4h..4h + 4` in vector
/// `2i + h`), the same additions in the same order per element. It fuses
/// each multiply-add (`vfmadd`): the product of two f64 widened from f32 is
/// exact in f64 (48 significant bits, no overflow or underflow), so
/// rounding `x·y + s` once is rounding the exact product's sum, as the
/// portable multiply-then-add does, bit for bit.
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
                s[0] = _mm256_fmadd_pd(x, lo, s[0]);
                s[1] = _mm256_fmadd_pd(x, hi, s[1]);
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
    if HALF {
        for p in acc.iter_mut() {
            *p = canonical_nan_avx2(*p);
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

/// [`round_f16_lanes`] on four lanes, the same operations — `maxpd(a, m)`
/// is `if a > m { a } else { m }`, `minpd` likewise, the sign bit's
/// and/andnot/or, the same ordered `>` — except NaN: a NaN stays some NaN
/// here (NaN + anything is NaN, and so is its rounding), and the tile
/// kernel writes the canonical NaN for it when it stores the partials
/// ([`canonical_nan_avx2`]), which is all the scalar version's NaN select
/// would have changed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn round_f16_avx2(x: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m256d {
    use std::arch::x86_64::*;
    let sign = _mm256_set1_pd(-0.0);
    let sx = _mm256_and_pd(x, sign);
    let a = _mm256_andnot_pd(sign, x);
    let e = _mm256_max_pd(a, _mm256_set1_pd(1.0 / 16384.0));
    let e = _mm256_min_pd(e, _mm256_set1_pd(65536.0));
    let e = _mm256_and_pd(e, _mm256_set1_pd(f64::INFINITY));
    let c = _mm256_mul_pd(e, _mm256_set1_pd(F16_MAGIC));
    let r = _mm256_sub_pd(_mm256_add_pd(a, c), c);
    let over = _mm256_cmp_pd::<_CMP_GT_OQ>(r, _mm256_set1_pd(65504.0));
    let r = _mm256_blendv_pd(r, _mm256_set1_pd(f64::INFINITY), over);
    _mm256_or_pd(r, sx)
}

/// Every NaN lane replaced by the canonical NaN (`f64::NAN`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn canonical_nan_avx2(x: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m256d {
    use std::arch::x86_64::*;
    let nan = _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x);
    _mm256_blendv_pd(x, _mm256_set1_pd(f64::NAN), nan)
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
        let r = canonical_nan_avx2(round_f16_avx2(_mm256_setr_pd(c[0], c[1], c[2], c[3])));
        // SAFETY: `c` holds exactly four f64, exclusively borrowed.
        unsafe { _mm256_storeu_pd(c.as_mut_ptr(), r) };
    }
}
