//! The device's arithmetic, written from `docs/facts/device-numerics.md`
//! alone: FP16 and FP8 rounding, the AMP's products (partials rounded after
//! every K micro-group), K splits, the attention kernels' rounding points,
//! LayerNorm and the tanh GELU. It imports nothing from the simulator or the
//! planner (the `layers` check enforces it), so the device-numerics
//! reference agreeing with a simulated run to max abs 0 means two
//! implementations of one written contract agree, not one implementation
//! with itself. Where they disagree, the contract decides.
//!
//! Products run on the fused f64 kernel of `amp.rs`, one micro-group at a
//! time per output tile: a micro-group's products are exact in f64 (FP8 ×
//! FP8 always; FP16 × FP16 whenever their exponents span less than 2^53,
//! i.e. in every tower we run), so the order they are added in cannot
//! change a bit.

use std::sync::OnceLock;

use rayon::prelude::*;

use ipuc_core::ir::DType;
use ipuc_target::numeric::{F16Table, F8Format};

use super::amp::{fused_product, round_f16_lanes, round_to_grid_lanes};
use super::products::Mat;

/// Nearest FP16 value of `x` (ties to even, overflow to ±∞, subnormals
/// kept), as an f32 (contract §1).
/// Branch-free (it vectorises): the scalar [`round_f16_exact`]'s function
/// (tested bit for bit).
#[inline]
pub fn round_f16(x: f32) -> f32 {
    round_f16_lanes(f64::from(x)) as f32
}

/// Nearest FP16 value of an f64, in **one** rounding (contract §1), the
/// plain scalar definition the branch-free roundings are tested against.
/// Not `half::f16::from_f64`: on x86 with F16C it goes through f32 first,
/// and that double rounding moves values that sit just off an FP16
/// midpoint.
#[cfg(test)]
fn round_f16_exact(x: f64) -> f32 {
    if x.is_nan() {
        return f32::NAN;
    }
    let r = round_to_grid(x, 10, -14);
    if r.abs() > 65504.0 {
        return if r > 0.0 {
            f32::INFINITY
        } else {
            f32::NEG_INFINITY
        };
    }
    r as f32
}

/// `x` to the nearest multiple of its binade's quantum, ties to even, for a
/// format with `mantissa` fraction bits whose normal binades start at
/// 2^`min_exp` (below it the subnormal quantum 2^(min_exp − mantissa)).
/// Exact: every step is a power-of-two scaling or an integer rounding of
/// an f64, and the exponent is read from the bits, not from `log2`. The
/// scalar definition the branch-free roundings are tested against.
#[cfg(test)]
fn round_to_grid(x: f64, mantissa: i32, min_exp: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
    // f64 subnormals are far below every grid here: they round to zero.
    if biased == 0 {
        return 0.0 * x.signum();
    }
    let exp = (biased - 1023).max(min_exp);
    let q = exp - mantissa;
    // |x / 2^q| < 2^(mantissa + 1): adding and taking away 1.5 · 2^52
    // rounds it to an integer, ties to even, in one exact step (the f64
    // addition's own rounding), without a libm call; the sign is put back
    // for a value that rounds to zero.
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    let y = x * pow2(-q);
    ((y + SHIFT) - SHIFT).copysign(y) * pow2(q)
}

/// 2^`e` exactly, for `e` in the f64 normal range (the grids' quanta and
/// their inverses are), else by `powi`.
fn pow2(e: i32) -> f64 {
    if (-1022..=1023).contains(&e) {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        2f64.powi(e)
    }
}

/// Nearest value of the partials type, from an exact f64 (one rounding):
/// the scalar definition the fused kernel ([`fused_product`]) is tested
/// against.
#[cfg(test)]
fn round_partial(half: bool, x: f64) -> f32 {
    if half {
        round_f16_exact(x)
    } else {
        x as f32
    }
}

/// The largest finite magnitude, the smallest normal exponent and the
/// mantissa bits of an FP8 format at scale 0 (contract §2).
fn fp8_limits(format: F8Format) -> (f64, i32, i32) {
    match format {
        F8Format::F143 => (240.0, -7, 3),
        F8Format::F152 => (57344.0, -15, 2),
    }
}

/// Nearest value of FP8 `format` at metadata `scale` (value = code · 2^scale):
/// ties to even, overflow saturates to ±max, NaN and ±∞ give NaN, and zero
/// has one sign (contract §2).
pub fn round_fp8(format: F8Format, scale: i8, x: f32) -> f32 {
    Fp8Grid::new(format, scale).round(x)
}

/// The scalar definition of [`round_fp8`] the branch-free one is tested
/// against.
#[cfg(test)]
fn round_fp8_scalar(format: F8Format, scale: i8, x: f32) -> f32 {
    if !x.is_finite() {
        return f32::NAN;
    }
    let (max, min_exp, mantissa) = fp8_limits(format);
    let unit = 2f64.powi(i32::from(scale));
    let rounded = round_to_grid(f64::from(x) / unit, mantissa, min_exp);
    let value = (rounded.clamp(-max, max) * unit) as f32;
    // One zero: a negative value that rounds to zero is +0.
    if value == 0.0 {
        0.0
    } else {
        value
    }
}

/// One FP8 format at one scale, its constants worked out once, rounding
/// branch-free (so a loop over it vectorises).
#[derive(Clone, Copy, Debug)]
struct Fp8Grid {
    /// 2^scale and 2^-scale: dividing by a power of two is multiplying by
    /// its inverse exactly (an f32 over any i8 scale stays a normal f64).
    unit: f64,
    inverse: f64,
    max: f64,
    least_normal: f64,
    /// 2^(emax + 1): the binade above the largest finite value's.
    top: f64,
    /// 1.5 · 2^(52 − mantissa bits).
    magic: f64,
}

impl Fp8Grid {
    fn new(format: F8Format, scale: i8) -> Self {
        let (max, min_exp, mantissa) = fp8_limits(format);
        let top_exp = ((max.to_bits() >> 52) & 0x7ff) as i32 - 1023 + 1;
        Fp8Grid {
            unit: pow2(i32::from(scale)),
            inverse: pow2(-i32::from(scale)),
            max,
            least_normal: pow2(min_exp),
            top: pow2(top_exp),
            magic: 1.5 * pow2(52 - mantissa),
        }
    }

    #[inline(always)]
    fn round(&self, x: f32) -> f32 {
        let v = f64::from(x) * self.inverse;
        let r = round_to_grid_lanes(v, self.least_normal, self.top, self.magic);
        let r = if r < -self.max { -self.max } else { r };
        let r = if r > self.max { self.max } else { r };
        let value = (r * self.unit) as f32;
        // One zero: a negative value that rounds to zero is +0.
        let value = if value == 0.0 { 0.0 } else { value };
        if x.is_finite() {
            value
        } else {
            f32::NAN
        }
    }
}

/// Every element rounded to `dtype` (F32: unchanged).
pub fn round_in_place(dtype: DType, data: &mut [f32]) {
    match dtype {
        DType::F32 => {}
        DType::F16 => data
            .par_chunks_mut(1 << 15)
            .for_each(|c| c.iter_mut().for_each(|v| *v = round_f16(*v))),
        DType::F8 { format, scale } => {
            let grid = Fp8Grid::new(format, scale);
            data.par_chunks_mut(1 << 15)
                .for_each(|c| c.iter_mut().for_each(|v| *v = grid.round(*v)))
        }
    }
}

/// How an AMP product accumulates (contract §3): its partials type and its
/// K micro-group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accumulation {
    /// FP16 partials (else F32).
    pub half: bool,
    /// K elements per micro-group.
    pub micro_group: usize,
}

impl Accumulation {
    /// A matmul's accumulation from its operand types: FP8 × FP8 into FP16
    /// partials, 32 K per group; anything else into F32 partials, 16 K.
    pub fn of_matmul(a: DType, b: DType) -> Self {
        let fp8 = |d: DType| matches!(d, DType::F8 { .. });
        if fp8(a) && fp8(b) {
            Accumulation {
                half: true,
                micro_group: 32,
            }
        } else {
            Accumulation {
                half: false,
                micro_group: 16,
            }
        }
    }

    /// Attention's two products for operands of `dtype`: FP16 partials
    /// (16 K) unless the operands are F32.
    pub fn of_attention(dtype: DType) -> Self {
        Accumulation {
            half: dtype != DType::F32,
            micro_group: 16,
        }
    }
}

/// `acc[m×n] = round_p(… round_p(acc + Σ_{k ∈ group 0} a·b) …)` over K
/// `range` of `a` (m × K) and `b` (K × n) (contract §3). `acc` holds
/// partials-type values.
pub fn amp_product(
    how: Accumulation,
    (m, n): (usize, usize),
    range: std::ops::Range<usize>,
    a: Mat<'_>,
    b: Mat<'_>,
    acc: &mut [f32],
) {
    fused_product((how.half, how.micro_group), (m, n), range, a, b, acc);
}

/// The K range of part `p` of `parts` (contract §4): K in whole units of
/// `grain`, part `p` starting at unit ⌊p·units/parts⌋.
pub fn k_part(k: usize, grain: usize, parts: usize, p: usize) -> std::ops::Range<usize> {
    let grain = grain.max(1);
    let units = k.div_ceil(grain);
    let parts = parts.max(1);
    let start = (p * units / parts * grain).min(k);
    let end = ((p + 1) * units / parts * grain).min(k);
    start..end
}

/// `c[m×n] = a · b` as a product split into `parts` K parts: each part's
/// partials from zero, the parts added in F32 in part order from the first
/// (contract §4).
pub fn split_product(
    how: Accumulation,
    (m, n, k): (usize, usize, usize),
    parts: usize,
    a: Mat<'_>,
    b: Mat<'_>,
) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    if parts <= 1 {
        amp_product(how, (m, n), 0..k, a, b, &mut c);
        return c;
    }
    // −0 is the sum's neutral start: −0 + x is x for every x, so the sum
    // is the first part's plus the others, as a pair's `add` computes it.
    c.fill(-0.0);
    let mut part = vec![0f32; m * n];
    for p in 0..parts {
        part.fill(0.0);
        amp_product(
            how,
            (m, n),
            k_part(k, how.micro_group, parts, p),
            a,
            b,
            &mut part,
        );
        c.iter_mut().zip(&part).for_each(|(c, v)| *c += v);
    }
    c
}

/// One head's attention `softmax(q·kᵀ·scale)·v` with `(sq, sk, d)` shapes,
/// operands of `dtype`, the keys in `key_parts` blocks (contract §5).
pub fn attention_head(
    dtype: DType,
    key_parts: usize,
    (q, k, v): (&[f32], &[f32], &[f32]),
    (sq, sk, d): (usize, usize, usize),
    scale: f32,
) -> Vec<f32> {
    let how = Accumulation::of_attention(dtype);
    let parts = key_parts.max(1);
    let mut blocks = Vec::with_capacity(parts);
    for p in 0..parts {
        let keys = k_part(sk, 1, parts, p);
        let (kb, vb) = (
            &k[keys.start * d..keys.end * d],
            &v[keys.start * d..keys.end * d],
        );
        let len = keys.len();
        let mut scores = vec![0f32; sq * len];
        amp_product(
            how,
            (sq, len),
            0..d,
            Mat::rows(q, 0, d),
            Mat::transposed(kb, 0, d),
            &mut scores,
        );
        scores
            .iter_mut()
            .for_each(|s| *s = in_partials(how.half, *s * scale));
        blocks.push((scores, vb, len));
    }
    if parts == 1 {
        let (mut p, vb, len) = blocks.swap_remove(0);
        for row in p.chunks_mut(len.max(1)) {
            let (_, sum) = exponentials(how.half, row);
            let inv = in_partials(how.half, 1.0 / sum);
            row.iter_mut()
                .for_each(|e| *e = in_partials(how.half, *e * inv));
        }
        return probabilities_times_values(how, dtype, p, vb, (sq, len, d));
    }
    combine(how, dtype, blocks, (sq, d))
}

/// Key-split attention: per block, unnormalised `exp(s − m)·v` with the
/// row's block maximum `m` and F32 sum `l`; then
/// `Σ e^{m_p − M}·o_p / Σ e^{m_p − M}·l_p` per row, `M` the largest `m_p`.
fn combine(
    how: Accumulation,
    dtype: DType,
    blocks: Vec<(Vec<f32>, &[f32], usize)>,
    (sq, d): (usize, usize),
) -> Vec<f32> {
    let mut partials = Vec::with_capacity(blocks.len());
    for (mut p, vb, len) in blocks {
        // An empty block (more parts than keys) contributes o = 0, m = 0,
        // l = 0 for every row (contract §5).
        let mut stats = vec![(0f32, 0f32); sq];
        for (row, st) in p.chunks_mut(len.max(1)).zip(stats.iter_mut()) {
            *st = exponentials(how.half, row);
        }
        let o = probabilities_times_values(how, dtype, p, vb, (sq, len, d));
        partials.push((o, stats));
    }
    let mut out = vec![0f32; sq * d];
    for (i, acc) in out.chunks_mut(d.max(1)).enumerate().take(sq) {
        let top = partials
            .iter()
            .map(|(_, s)| s[i].0)
            .fold(f32::NEG_INFINITY, f32::max);
        let mut total = 0f32;
        for (o, stats) in &partials {
            let (m, l) = stats[i];
            let weight = libm::expf(m - top);
            total += weight * l;
            acc.iter_mut()
                .zip(&o[i * d..(i + 1) * d])
                .for_each(|(a, x)| *a += weight * x);
        }
        if total > 0.0 {
            acc.iter_mut().for_each(|a| *a /= total);
        }
    }
    out
}

/// `row[i] = exp(row[i] − max)`, the difference and the exponential each
/// in the partials type; returns the maximum and the F32 sum in row order.
fn exponentials(half: bool, row: &mut [f32]) -> (f32, f32) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    // Per element the same steps as one loop would take, in passes (the
    // FP16 exponential from its table, the F32 one by the C library's
    // `expf`); the sum still runs in row order.
    row.iter_mut()
        .for_each(|e| *e = in_partials(half, *e - max));
    if half {
        row.iter_mut().for_each(|e| *e = exp_in_f16(*e));
    } else {
        row.iter_mut().for_each(|e| *e = e.exp());
    }
    let sum = row.iter().fold(0f32, |sum, e| sum + e);
    (max, sum)
}

/// `p·v` with `p` first rounded to the operand type `dtype`.
fn probabilities_times_values(
    how: Accumulation,
    dtype: DType,
    mut p: Vec<f32>,
    v: &[f32],
    (sq, sk, d): (usize, usize, usize),
) -> Vec<f32> {
    round_in_place(dtype, &mut p);
    let mut out = vec![0f32; sq * d];
    amp_product(
        how,
        (sq, d),
        0..sk,
        Mat::rows(&p, 0, sk),
        Mat::rows(v, 0, d),
        &mut out,
    );
    out
}

fn in_partials(half: bool, x: f32) -> f32 {
    if half {
        round_f16(x)
    } else {
        x
    }
}

/// LayerNorm of each `gamma.len()`-wide row (contract §6): mean and biased
/// variance summed in F32 in row order, `(x − μ)·(1/√(var + ε))·γ + β`
/// evaluated left to right in F32.
pub fn layer_norm(x: &[f32], gamma: &[f32], beta: &[f32], eps: f32, out: &mut [f32]) {
    let cols = gamma.len();
    if cols == 0 {
        return;
    }
    for (o, row) in out.chunks_mut(cols).zip(x.chunks(cols)) {
        let mean = row.iter().fold(0f32, |s, v| s + v) / cols as f32;
        let var = row.iter().fold(0f32, |s, v| s + (v - mean) * (v - mean)) / cols as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for (((o, v), g), b) in o.iter_mut().zip(row).zip(gamma).zip(beta) {
            *o = (v - mean) * inv * g + b;
        }
    }
}

/// The tanh GELU in F32 with the C library's `tanhf` (contract §6).
pub fn gelu_tanh(x: f32) -> f32 {
    let u = 0.797_884_6_f32 * (x + 0.044_715 * x * x * x);
    0.5 * x * (1.0 + u.tanh())
}

/// The tanh GELU of an FP16 value in FP16 arithmetic (contract §6: the
/// half loop's steps, each rounded to FP16; its constants α and αβ as
/// FP16 bit patterns).
pub fn gelu_tanh_f16(x: f32) -> f32 {
    static TABLE: OnceLock<F16Table> = OnceLock::new();
    let table = TABLE.get_or_init(|| F16Table::of(gelu_tanh_f16_steps));
    table.get(x).unwrap_or_else(|| gelu_tanh_f16_steps(x))
}

/// The exponential of an FP16 value in FP16.
fn exp_in_f16(x: f32) -> f32 {
    let steps = |x: f32| round_f16(x.exp());
    static TABLE: OnceLock<F16Table> = OnceLock::new();
    let table = TABLE.get_or_init(|| F16Table::of(steps));
    table.get(x).unwrap_or_else(|| steps(x))
}

/// [`gelu_tanh_f16`] step by step.
fn gelu_tanh_f16_steps(x: f32) -> f32 {
    const ALPHA: u16 = 0x3A6C;
    const ALPHA_BETA: u16 = 0x28A6;
    let (alpha, alpha_beta) = (
        half::f16::from_bits(ALPHA).to_f32(),
        half::f16::from_bits(ALPHA_BETA).to_f32(),
    );
    let c = x.clamp(-6.0, 6.0);
    let square = round_f16(c * c);
    let cube = round_f16(c * square);
    let phi = round_f16(alpha * c + alpha_beta * cube);
    let t = round_f16(phi.tanh());
    let half_of = round_f16(0.5 * round_f16(1.0 + t));
    round_f16(half_of * x)
}

#[cfg(test)]
mod tests {
    use super::super::amp::fused_product_with;
    use super::*;

    #[test]
    fn fp16_tables_are_the_steps_on_every_fp16_value() {
        for b in 0..=u16::MAX {
            let x = half::f16::from_bits(b).to_f32();
            let (got, want) = (gelu_tanh_f16(x), gelu_tanh_f16_steps(x));
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{b:#06x}: {got:e} vs {want:e}"
            );
        }
        for b in 0..=u16::MAX {
            let x = half::f16::from_bits(b).to_f32();
            let want = round_f16(x.exp());
            assert_eq!(exp_in_f16(x).to_bits(), want.to_bits(), "exp of {b:#06x}");
        }
        // Not an FP16 value: computed as it stands.
        let x = 1.0 + f32::EPSILON;
        assert_eq!(gelu_tanh_f16(x).to_bits(), gelu_tanh_f16_steps(x).to_bits());
    }

    #[test]
    fn fp8_rounding_matches_the_facts_spot_checks() {
        // docs/facts/siglip-and-fp8.md §3.2 (scale 0, ties to even).
        for (x, want) in [
            (7.25, 7.0),
            (7.75, 8.0),
            (8.5, 8.0),
            (9.5, 10.0),
            (245.0, 240.0),
            (1e9, 240.0),
        ] {
            assert_eq!(round_fp8(F8Format::F143, 0, x), want, "{x}");
        }
        assert_eq!(round_fp8(F8Format::F143, -4, 15.5), 15.0);
        assert_eq!(
            round_fp8(F8Format::F143, 0, 2f32.powi(-11)),
            0.0,
            "half the least subnormal, a tie to zero"
        );
        assert_eq!(
            round_fp8(F8Format::F143, 0, 3.0 * 2f32.powi(-11)),
            2f32.powi(-9)
        );
        assert_eq!(round_fp8(F8Format::F152, 0, 60000.0), 57344.0);
        assert!(round_fp8(F8Format::F152, 0, f32::INFINITY).is_nan());
        assert_eq!(round_fp8(F8Format::F143, 0, -1e-9).to_bits(), 0, "one zero");
    }

    /// The shift-based grid rounding against the textbook one (scale by
    /// `powi`, `round_ties_even`), sign of zero included, on both grids,
    /// over ties, neighbours of ties, subnormal quanta and random bits.
    #[test]
    fn grid_rounding_equals_the_textbook_rounding() {
        fn textbook(x: f64, mantissa: i32, min_exp: i32) -> f64 {
            if x == 0.0 || !x.is_finite() {
                return x;
            }
            let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
            if biased == 0 {
                return 0.0 * x.signum();
            }
            let quantum = 2f64.powi((biased - 1023).max(min_exp) - mantissa);
            (x / quantum).round_ties_even() * quantum
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut xs: Vec<f64> = vec![0.0, -0.0, 1e-300, -1e-300, 65504.0, 65520.0, -65520.0];
        for k in -30..20 {
            for t in [0.5, 1.5, 2.5, 0.25, 0.75] {
                let x = t * 2f64.powi(k);
                xs.extend([x, -x, x.next_up(), x.next_down(), -x.next_up()]);
            }
        }
        for _ in 0..200_000 {
            // Exponents around the grids' range, random mantissa and sign.
            let e = next() % 80 + 1023 - 50;
            xs.push(f64::from_bits((next() & 0x800f_ffff_ffff_ffff) | (e << 52)));
        }
        for (mantissa, min_exp) in [(10, -14), (3, -7), (2, -15)] {
            for &x in &xs {
                let (got, want) = (
                    round_to_grid(x, mantissa, min_exp),
                    textbook(x, mantissa, min_exp),
                );
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{x:e} on ({mantissa}, {min_exp})"
                );
            }
        }
    }

    #[test]
    fn fp16_partials_round_once_from_f64() {
        // Just above the midpoint of 1 and 1 + 2^-10: one rounding goes up;
        // through f32 the 2^-40 is lost, the tie goes to even (down).
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(round_partial(true, x), 1.0 + 2f32.powi(-10));
        assert_eq!(round_partial(true, 65519.99), 65504.0);
        assert_eq!(round_partial(true, 65520.0), f32::INFINITY);
        assert_eq!(
            round_partial(true, 3.0 * 2f64.powi(-26)),
            2f32.powi(-24),
            "subnormal, above the tie"
        );
        assert_eq!(
            round_partial(true, 2f64.powi(-25)),
            0.0,
            "the tie below the least subnormal goes to zero"
        );
    }

    /// xorshift64: deterministic test data.
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// The fused kernel's branch-free FP16 rounding against the scalar
    /// `round_f16_exact`, bit for bit, in its scalar build and its AVX2
    /// one (where the CPU has AVX2): zeros, f64 subnormals, FP16
    /// subnormals and their ties, ties and their neighbours in every
    /// binade, the 65504 / 65520 boundary, ±∞, NaNs and random bits.
    #[test]
    fn branch_free_fp16_rounding_equals_the_scalar_one() {
        use super::super::amp::{round_f16_lanes, round_f16_vectors};
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff8_0000_dead_beef),
            65504.0,
            65519.0,
            65520.0,
            65536.0,
            1e300,
            2f64.powi(-24),
            2f64.powi(-25),
            3.0 * 2f64.powi(-26),
        ];
        for v in [65504.0f64, 65519.0, 65520.0, 65536.0, 2f64.powi(-25)] {
            xs.extend([v.next_up(), v.next_down(), -v.next_up(), -v.next_down()]);
        }
        for k in -40..20 {
            for t in [1.0, 0.5, 1.5, 2.5, 0.25, 0.75, 1.0 + 2f64.powi(-11)] {
                let x = t * 2f64.powi(k);
                xs.extend([x, -x, x.next_up(), x.next_down(), -x.next_up()]);
            }
        }
        for _ in 0..500_000 {
            // Exponents around FP16's range, random mantissa and sign.
            let e = next() % 90 + 1023 - 60;
            xs.push(f64::from_bits((next() & 0x800f_ffff_ffff_ffff) | (e << 52)));
        }
        for _ in 0..100_000 {
            xs.push(f64::from_bits(next()));
        }
        xs.truncate(xs.len() / 4 * 4);
        let mut vectors = xs.clone();
        round_f16_vectors(&mut vectors);
        for (&x, &v) in xs.iter().zip(&vectors) {
            let want = round_f16_exact(x).to_bits();
            let got = (round_f16_lanes(x) as f32).to_bits();
            assert_eq!(got, want, "{x:e} ({:#x})", x.to_bits());
            assert_eq!(
                (v as f32).to_bits(),
                want,
                "vectors: {x:e} ({:#x})",
                x.to_bits()
            );
        }
    }

    /// The branch-free FP16 and FP8 element roundings against their scalar
    /// definitions over a sweep of every 251st f32 bit pattern (all signs,
    /// binades, subnormals, ±∞ and NaNs) plus ties, at several FP8 scales.
    #[test]
    fn branch_free_element_roundings_equal_the_scalar_ones() {
        let mut xs: Vec<f32> = (0..=u32::MAX / 251)
            .map(|i| f32::from_bits(i * 251))
            .collect();
        for k in -30..20 {
            for t in [1.0f32, 1.0625, 1.125, 1.1875, 1.5, 1.0 + 2f32.powi(-11)] {
                let x = t * 2f32.powi(k);
                xs.extend([x, -x, x.next_up(), x.next_down()]);
            }
        }
        xs.extend([0.0, -0.0, 240.0, 248.0, 57344.0, 61440.0, 65504.0, 65520.0]);
        for &x in &xs {
            let want = round_f16_exact(f64::from(x)).to_bits();
            assert_eq!(round_f16(x).to_bits(), want, "FP16 of {x:e}");
        }
        for format in [F8Format::F143, F8Format::F152] {
            for scale in [-128i8, -20, -4, 0, 3, 127] {
                let grid = Fp8Grid::new(format, scale);
                for &x in xs.iter().step_by(3) {
                    let want = round_fp8_scalar(format, scale, x).to_bits();
                    assert_eq!(grid.round(x).to_bits(), want, "{format:?} {scale} {x:e}");
                }
            }
        }
    }

    /// The fused AMP kernel (the AVX2 one where the CPU has it, and the
    /// portable one) against the
    /// scalar definition — `p = round_p(f64(p) + Σ_group a·b)` group after
    /// group — on FP8-like and FP16-like operands with awkward shapes
    /// (partial tiles, a K range not starting at 0, short last groups,
    /// several K blocks), both partials types, starting partials nonzero,
    /// including overflow to ±∞ and NaN partials.
    #[test]
    fn fused_product_equals_the_scalar_definition() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut value = move |fp8: bool| -> f32 {
            let r = next();
            let sign = if r & 1 == 0 { 1.0 } else { -1.0 };
            // Exponent spans small enough that a group's sum is exact in
            // f64 (the contract's premise), so any summation order agrees.
            let (e, bits, low) = if fp8 {
                ((r >> 1) % 16, 3, 9)
            } else {
                ((r >> 1) % 12, 10, 6)
            };
            let mant = 1.0 + ((r >> 8) % (1 << bits)) as f32 / (1 << bits) as f32;
            if (r >> 40).is_multiple_of(17) {
                0.0
            } else {
                sign * mant * 2f32.powi(e as i32 - low)
            }
        };
        for (half, group, fp8) in [(true, 32, true), (true, 16, false), (false, 16, false)] {
            for (m, n, k0, k1) in [
                (1, 1, 0, 3),
                (5, 9, 3, 70),
                (13, 17, 0, 600),
                (4, 8, 32, 96),
                (9, 3, 1, 1),
            ] {
                let k = k1 + 2;
                let a: Vec<f32> = (0..m * k).map(|_| value(fp8)).collect();
                let b: Vec<f32> = (0..k * n).map(|_| value(fp8)).collect();
                let mut start: Vec<f32> = (0..m * n).map(|_| value(false)).collect();
                start[0] = if half { 65504.0 } else { 3e38 };
                if m * n > 2 {
                    start[1] = f32::NAN;
                    start[2] = f32::NEG_INFINITY;
                }
                let (am, bm) = (Mat::rows(&a, 0, k), Mat::transposed(&b, 0, k));
                let mut want = start.clone();
                for r in 0..m {
                    for c in 0..n {
                        let mut p = want[r * n + c];
                        let mut g = k0;
                        while g < k1 {
                            let end = (g + group).min(k1);
                            let sum: f64 = (g..end)
                                .map(|kk| f64::from(am.at(r, kk)) * f64::from(bm.at(kk, c)))
                                .fold(0.0, |s, v| s + v);
                            p = round_partial(half, f64::from(p) + sum);
                            g = end;
                        }
                        want[r * n + c] = p;
                    }
                }
                let mut got = start.clone();
                let how = Accumulation {
                    half,
                    micro_group: group,
                };
                amp_product(how, (m, n), k0..k1, am, bm, &mut got);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{half} {group} {m}×{n} {k0}..{k1}");
                let mut portable = start.clone();
                let what = (half, group);
                fused_product_with(true, what, (m, n), k0..k1, am, bm, &mut portable);
                assert_eq!(bits(&portable), bits(&want), "portable {what:?} {m}×{n}");
            }
        }
    }

    #[test]
    fn k_parts_cover_k_in_whole_groups() {
        let ranges: Vec<_> = (0..3).map(|p| k_part(100, 16, 3, p)).collect();
        assert_eq!(ranges, [0..32, 32..64, 64..100]);
        assert_eq!(
            k_part(5, 1, 8, 0),
            0..0,
            "more parts than keys: empty parts"
        );
    }

    #[test]
    fn fp16_partials_round_after_every_group() {
        // 2048 + 1 + 1: in FP16 partials each 1 is lost when added alone
        // (2049 is not an FP16), but kept when one group holds both.
        let a = [1.0f32; 3];
        let b = [2048.0f32, 1.0, 1.0];
        let mut one_group = [0f32];
        let how = Accumulation {
            half: true,
            micro_group: 32,
        };
        amp_product(
            how,
            (1, 1),
            0..3,
            Mat::rows(&a, 0, 3),
            Mat::rows(&b, 0, 1),
            &mut one_group,
        );
        assert_eq!(one_group[0], 2050.0);
        let mut per_element = [0f32];
        let how = Accumulation {
            half: true,
            micro_group: 1,
        };
        amp_product(
            how,
            (1, 1),
            0..3,
            Mat::rows(&a, 0, 3),
            Mat::rows(&b, 0, 1),
            &mut per_element,
        );
        assert_eq!(per_element[0], 2048.0);
    }
}
