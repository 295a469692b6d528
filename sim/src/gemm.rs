//! Matrix products on the `gemm` crate (sarah-quinones): runtime-dispatched
//! AVX2/FMA (and AVX-512 where the crate enables it) micro-kernels with
//! cache-blocked packing and rayon parallelism.
//!
//! Why `gemm` and no pre-packed weights: measured on this 2-core machine
//! (729×1152×1152 and 729×4304×1152, the So400m shapes) it runs at ~95
//! GFLOP/s per core and ~150–190 GFLOP/s on both, the same with the PyTorch
//! `[out, in]` weight read transposed in place as with a row-major copy. It
//! packs B per call, which costs O(K·N) against O(M·K·N) of arithmetic — one
//! part in 729 for the encoder — so packing weights once would save < 0.2 %.

use ipuc_target::ipu21::timing::AmpMode;
use rayon::prelude::*;

/// A strided read-only matrix view: element (r, c) at `offset + r·rs + c·cs`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    /// Backing storage.
    pub data: &'a [f32],
    /// Offset of element (0, 0).
    pub offset: usize,
    /// Row stride in elements.
    pub rs: usize,
    /// Column stride in elements.
    pub cs: usize,
}

impl<'a> MatRef<'a> {
    /// Row-major `rows × cols` starting at `offset`.
    pub fn row_major(data: &'a [f32], offset: usize, cols: usize) -> Self {
        MatRef {
            data,
            offset,
            rs: cols,
            cs: 1,
        }
    }

    /// The transpose of a row-major `rows × cols` matrix at `offset`, i.e. a
    /// `cols × rows` view (a PyTorch `[out, in]` weight read as `[in, out]`).
    pub fn transposed(data: &'a [f32], offset: usize, cols: usize) -> Self {
        MatRef {
            data,
            offset,
            rs: 1,
            cs: cols,
        }
    }

    /// The view from row `rows` on.
    pub fn skip_rows(self, rows: usize) -> Self {
        MatRef {
            offset: self.offset + rows * self.rs,
            ..self
        }
    }

    /// The view from column `cols` on.
    pub fn skip_cols(self, cols: usize) -> Self {
        MatRef {
            offset: self.offset + cols * self.cs,
            ..self
        }
    }

    /// Largest index touched by a `rows × cols` view (None if empty).
    fn last_index(&self, rows: usize, cols: usize) -> Option<usize> {
        if rows == 0 || cols == 0 {
            return None;
        }
        Some(self.offset + (rows - 1) * self.rs + (cols - 1) * self.cs)
    }
}

/// Whether one product should use several threads itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// Run on the calling thread (the caller parallelises over products).
    One,
    /// Split the product over the rayon pool.
    All,
}

/// `c[m×n] (row-major, dense) = scale · a[m×k] · b[k×n]`, with `(m, n, k)`
/// given as `mnk`.
///
/// Panics if a view would read outside its slice or `c` is too short: the
/// callers derive every view from verified graph shapes, so that is a bug in
/// the interpreter, not bad input.
pub fn gemm(
    (m, n, k): (usize, usize, usize),
    a: MatRef<'_>,
    b: MatRef<'_>,
    c: &mut [f32],
    scale: f32,
    threads: Threads,
) {
    assert!(c.len() >= m * n, "gemm output {} < {m}×{n}", c.len());
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c[..m * n].fill(0.0);
        return;
    }
    // Soundness of the raw-pointer call below: every index stays in bounds.
    assert!(
        a.last_index(m, k).is_some_and(|i| i < a.data.len()),
        "gemm lhs view out of bounds"
    );
    assert!(
        b.last_index(k, n).is_some_and(|i| i < b.data.len()),
        "gemm rhs view out of bounds"
    );
    let parallelism = match threads {
        Threads::One => gemm::Parallelism::None,
        Threads::All => gemm::Parallelism::Rayon(rayon::current_num_threads()),
    };
    // SAFETY: the asserts above bound every element the views address; `c`
    // is exclusively borrowed and dense row-major (rs = n, cs = 1); the
    // strides fit isize because the slices they index exist.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.data.as_ptr().add(a.offset),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr().add(b.offset),
            b.cs as isize,
            b.rs as isize,
            0.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Products below this many multiply-adds run one per thread (batched over
/// rayon) instead of splitting each over the pool.
pub const SMALL_GEMM_MACS: usize = 1 << 22;

/// `batch` independent products `c_i = a_i · b_i`, with `a_i`, `b_i` views
/// produced per index; `c` holds the results back to back (`m·n` each).
pub fn batched<'a, FA, FB>(batch: usize, m: usize, n: usize, k: usize, a: FA, b: FB, c: &mut [f32])
where
    FA: Fn(usize) -> MatRef<'a> + Sync,
    FB: Fn(usize) -> MatRef<'a> + Sync,
{
    let size = m * n;
    if size == 0 {
        return;
    }
    if batch > 1 && m * n * k < SMALL_GEMM_MACS {
        c.par_chunks_mut(size)
            .take(batch)
            .enumerate()
            .for_each(|(i, out)| gemm((m, n, k), a(i), b(i), out, 1.0, Threads::One));
    } else {
        for (i, out) in c.chunks_mut(size).take(batch).enumerate() {
            gemm((m, n, k), a(i), b(i), out, 1.0, Threads::All);
        }
    }
}

/// `acc[m×n] = round_p(… round_p(acc + a·b over micro-group 0) …)`: a
/// product accumulated as ipuc models the AMP in `mode`
/// (`docs/facts/siglip-and-fp8.md` §4; the adder tree's internal precision
/// is undocumented there): K is walked in the mode's micro-groups (32 K for
/// FP8 × FP8, 16 otherwise), a micro-group's products are summed in f64
/// and added to the partial with one rounding to the mode's partials type
/// (`round_p`: FP16 or F32, to nearest even).
///
/// The device's kernels all call it, so they agree bit for bit whatever
/// their blocking over M and N: an element depends only on its row, its
/// column and the K sequence (the host's device-numerics reference
/// implements the same contract, `docs/facts/device-numerics.md`, on its
/// own). Over K it is associative at micro-group
/// boundaries — a product continued from stored partials equals one long
/// product — which is why K splits (each part from zero, parts summed
/// after) are the only K structure the reference must be told about.
/// The f64 micro-group sum is exact for FP8 × FP8 (a product has ≤ 8
/// significant bits, 32 of them span far less than 53) and for FP16
/// operands whose products' exponents span < 2^27; beyond that it is the
/// `gemm` crate's order over one micro-group, the same in both callers.
/// Where it gives the same bits (exact sums, or the crate's in-order
/// routes; see [`amp_kernel`]) a kernel of ipuc's own runs instead of the
/// crate (#42: the FP16 rounding and the per-micro-group crate calls were
/// two thirds of a run). `a` and `b` hold the operands' decoded values;
/// `acc` holds partials-type values on entry and on exit.
pub fn amp_product(
    mode: AmpMode,
    (m, n, k): (usize, usize, usize),
    a: MatRef<'_>,
    b: MatRef<'_>,
    acc: &mut [f32],
    threads: Threads,
) {
    assert!(acc.len() >= m * n, "gemm output {} < {m}×{n}", acc.len());
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // Soundness of both kernels' reads: every index stays in bounds.
    assert!(
        a.last_index(m, k).is_some_and(|i| i < a.data.len()),
        "amp lhs view out of bounds"
    );
    assert!(
        b.last_index(k, n).is_some_and(|i| i < b.data.len()),
        "amp rhs view out of bounds"
    );
    let partials = Partials::of(mode);
    let micro_group = mode.k_micro_group() as usize;
    let route = amp_kernel::available()
        .then(|| amp_kernel::route(micro_group, (m, n, k), &a, &b))
        .flatten();
    if let Some(first) = route {
        amp_kernel::amp_product(
            partials,
            micro_group,
            first,
            (m, n, k),
            &a,
            &b,
            acc,
            threads,
        );
    } else {
        amp_product_gemm_crate(partials, micro_group, (m, n, k), a, b, acc, threads);
    }
}

/// The partials type of an AMP mode: what every micro-group's sum is
/// rounded to when added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Partials {
    F16,
    F32,
}

impl Partials {
    fn of(mode: AmpMode) -> Self {
        if mode.partials_bytes() == 2 {
            Partials::F16
        } else {
            Partials::F32
        }
    }
}

/// [`amp_product`] with each micro-group summed by the `gemm` crate: the
/// definition of the order when sums may round. Bounds were checked.
fn amp_product_gemm_crate(
    partials: Partials,
    micro_group: usize,
    (m, n, k): (usize, usize, usize),
    a: MatRef<'_>,
    b: MatRef<'_>,
    acc: &mut [f32],
    threads: Threads,
) {
    // The views' elements as f64, keeping their strides (a transposed
    // weight is read in place, as `gemm` does).
    let widen = |v: &MatRef<'_>, rows: usize, cols: usize| -> Vec<f64> {
        let end = v.last_index(rows, cols).map_or(v.offset, |i| i + 1);
        v.data[v.offset..end]
            .iter()
            .map(|&x| f64::from(x))
            .collect()
    };
    let (aw, bw) = (widen(&a, m, k), widen(&b, k, n));
    let parallelism = match threads {
        Threads::One => gemm::Parallelism::None,
        Threads::All => gemm::Parallelism::Rayon(rayon::current_num_threads()),
    };
    let mut group = vec![0f64; m * n];
    for k0 in (0..k).step_by(micro_group) {
        let kg = micro_group.min(k - k0);
        // SAFETY: `aw` holds every element of the m×k view `a` (relative
        // to its offset) and `bw` every element of the k×n view `b`, so
        // columns k0..k0+kg of `a` and rows k0..k0+kg of `b` are in
        // bounds; `group` is dense m×n and exclusively borrowed.
        unsafe {
            gemm::gemm(
                m,
                n,
                kg,
                group.as_mut_ptr(),
                1,
                n as isize,
                false,
                aw.as_ptr().add(k0 * a.cs),
                a.cs as isize,
                a.rs as isize,
                bw.as_ptr().add(k0 * b.rs),
                b.cs as isize,
                b.rs as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                parallelism,
            );
        }
        // A plain loop over a `match`ed mode (not a function pointer per
        // element) lets the rounding vectorise.
        let add = |o: &mut [f32], g: &[f64]| match partials {
            Partials::F16 => o.iter_mut().zip(g).for_each(|(o, g)| {
                *o = round_f64_to_f16_lane(f64::from(*o) + g) as f32;
            }),
            Partials::F32 => o.iter_mut().zip(g).for_each(|(o, g)| {
                *o = (f64::from(*o) + g) as f32;
            }),
        };
        match threads {
            Threads::One => add(&mut acc[..m * n], &group),
            Threads::All => acc[..m * n]
                .par_chunks_mut(4096)
                .zip(group.par_chunks(4096))
                .for_each(|(o, g)| add(o, g)),
        }
    }
}

/// `x` rounded to the nearest FP16 value, ties to even (±∞ from 65520 on),
/// in one rounding, returned as the f64 holding it (NaN for NaN).
///
/// `half::f16::from_f64` goes through f32 first, a double rounding
/// (65519.999 becomes ∞), and runs a per-value software path while the FP8
/// products round ~10⁸ partials per So400m layer. This version has no
/// branches — both candidate roundings are computed and one is selected —
/// so a loop over partials vectorises. It is the pre-#42 scalar function
/// (kept in `tests` as `round_f64_to_f16_scalar`) with its `if`s turned
/// into selects, proved equal to it there.
#[inline(always)]
pub(crate) fn round_f64_to_f16_lane(x: f64) -> f64 {
    const MIN_NORMAL: f64 = 6.103_515_625e-5; // 2^-14
    const SUBNORMAL_STEP: f64 = 16_777_216.0; // 2^24
                                              // Subnormals are multiples of 2^-24.
    let subnormal = (x * SUBNORMAL_STEP).round_ties_even() / SUBNORMAL_STEP;
    // Normals: keep 10 of f64's 52 fraction bits, rounding the 42 dropped
    // bits to nearest, ties to even (a carry moves into the exponent).
    let bits = x.to_bits();
    let dropped = 42;
    let half = (1u64 << (dropped - 1)) - 1 + ((bits >> dropped) & 1);
    let normal = f64::from_bits(bits.wrapping_add(half) & !((1u64 << dropped) - 1));
    let r = if x.abs() < MIN_NORMAL {
        subnormal
    } else {
        normal
    };
    let r = if r.abs() > 65_504.0 {
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

mod amp_kernel;

#[cfg(test)]
mod tests {
    use super::*;

    /// The pre-#42 rounding, verbatim: the oracle the branch-free
    /// [`round_f64_to_f16_lane`] must equal bit for bit.
    fn round_f64_to_f16_scalar(x: f64) -> f32 {
        const MIN_NORMAL: f64 = 6.103_515_625e-5; // 2^-14
        const SUBNORMAL_STEP: f64 = 16_777_216.0; // 2^24
        if x.is_nan() {
            return f32::NAN;
        }
        let r = if x.abs() < MIN_NORMAL {
            (x * SUBNORMAL_STEP).round_ties_even() / SUBNORMAL_STEP
        } else {
            let bits = x.to_bits();
            let dropped = 42;
            let half = (1u64 << (dropped - 1)) - 1 + ((bits >> dropped) & 1);
            f64::from_bits((bits + half) & !((1u64 << dropped) - 1))
        };
        if r.abs() > 65_504.0 {
            f32::INFINITY.copysign(x as f32)
        } else {
            r as f32
        }
    }

    /// The pre-#42 `amp_product`, verbatim but for its name and the
    /// rounding oracle: every micro-group summed by the `gemm` crate.
    fn amp_product_before_42(
        mode: AmpMode,
        (m, n, k): (usize, usize, usize),
        a: MatRef<'_>,
        b: MatRef<'_>,
        acc: &mut [f32],
        threads: Threads,
    ) {
        assert!(acc.len() >= m * n, "gemm output {} < {m}×{n}", acc.len());
        if m == 0 || n == 0 || k == 0 {
            return;
        }
        let micro_group = mode.k_micro_group() as usize;
        let round: fn(f64) -> f32 = if mode.partials_bytes() == 2 {
            round_f64_to_f16_scalar
        } else {
            |x| x as f32
        };
        let widen = |v: &MatRef<'_>, rows: usize, cols: usize| -> Vec<f64> {
            let end = v.last_index(rows, cols).map_or(v.offset, |i| i + 1);
            v.data[v.offset..end]
                .iter()
                .map(|&x| f64::from(x))
                .collect()
        };
        let (aw, bw) = (widen(&a, m, k), widen(&b, k, n));
        let parallelism = match threads {
            Threads::One => gemm::Parallelism::None,
            Threads::All => gemm::Parallelism::Rayon(rayon::current_num_threads()),
        };
        let mut group = vec![0f64; m * n];
        for k0 in (0..k).step_by(micro_group) {
            let kg = micro_group.min(k - k0);
            // SAFETY: as in the original: the widened views cover every
            // element read.
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    kg,
                    group.as_mut_ptr(),
                    1,
                    n as isize,
                    false,
                    aw.as_ptr().add(k0 * a.cs),
                    a.cs as isize,
                    a.rs as isize,
                    bw.as_ptr().add(k0 * b.rs),
                    b.cs as isize,
                    b.rs as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    parallelism,
                );
            }
            let add = |(o, g): (&mut f32, &f64)| *o = round(f64::from(*o) + g);
            match threads {
                Threads::One => acc[..m * n].iter_mut().zip(&group).for_each(add),
                Threads::All => acc[..m * n]
                    .par_iter_mut()
                    .zip(group.par_iter())
                    .for_each(add),
            }
        }
    }

    /// xorshift64: seeded, reproducible test data.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn same_f32(x: f32, y: f32) -> bool {
        x.to_bits() == y.to_bits()
    }

    /// Inputs where the rounding can go wrong: every FP16 value, the
    /// midpoints between neighbours (ties) and one f64 ulp either side,
    /// over both signs, plus the subnormal/normal and overflow edges.
    fn rounding_edge_inputs() -> Vec<f64> {
        let mut xs = Vec::new();
        for bits in 0..0x7C00u16 {
            let v = half::f16::from_bits(bits).to_f64();
            let next = half::f16::from_bits(bits + 1).to_f64();
            let mid = if bits + 1 == 0x7C00 {
                65_520.0
            } else {
                (v + next) / 2.0
            };
            for x in [v, mid, mid.next_down(), mid.next_up(), v.next_up()] {
                xs.push(x);
                xs.push(-x);
            }
        }
        xs.extend([
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7FF0_0000_0000_0001),
            f64::from_bits(0xFFFF_FFFF_FFFF_FFFF),
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            1e300,
            -1e300,
        ]);
        xs
    }

    #[test]
    fn lane_rounding_equals_the_scalar_rounding_on_every_edge() {
        for x in rounding_edge_inputs() {
            let (got, want) = (round_f64_to_f16_lane(x) as f32, round_f64_to_f16_scalar(x));
            assert!(
                same_f32(got, want),
                "{x:e} ({:#x}): {got:e} vs {want:e}",
                x.to_bits()
            );
        }
    }

    /// The exact kernel's four- and eight-lane roundings against the
    /// scalar oracle (each where the CPU has it).
    fn check_vector_rounding(mut xs: Vec<f64>) {
        xs.resize(xs.len().next_multiple_of(8), 0.0);
        for lanes in [
            amp_kernel::round_f16_lanes,
            amp_kernel::round_f16_wide_lanes,
        ] {
            let mut got = xs.clone();
            if !lanes(&mut got) {
                continue; // not on this CPU: that block never runs here
            }
            for (x, g) in xs.iter().zip(&got) {
                let (g, want) = (*g as f32, round_f64_to_f16_scalar(*x));
                assert!(
                    same_f32(g, want),
                    "{x:e} ({:#x}): {g:e} vs {want:e}",
                    x.to_bits()
                );
            }
        }
    }

    #[test]
    fn vector_rounding_equals_the_scalar_rounding() {
        check_vector_rounding(rounding_edge_inputs());
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        check_vector_rounding(
            (0..2_000_000u64)
                .map(|i| {
                    let bits = rng.next();
                    if i % 2 == 0 {
                        f64::from_bits(bits)
                    } else {
                        let exp = 1023 - 40 + (bits >> 52) % 64;
                        f64::from_bits((bits & (1 << 63)) | (exp << 52) | (bits & ((1 << 52) - 1)))
                    }
                })
                .collect(),
        );
        check_vector_rounding(
            (0..=u32::MAX)
                .step_by(509)
                .map(|b| f64::from(f32::from_bits(b)))
                .collect(),
        );
    }

    #[test]
    fn lane_rounding_equals_the_scalar_rounding_on_random_bits() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for i in 0..4_000_000u64 {
            let bits = rng.next();
            // Half fully random bit patterns, half in the exponent range
            // partial sums live in (2^-40 .. 2^24), both signs.
            let x = if i % 2 == 0 {
                f64::from_bits(bits)
            } else {
                let exp = 1023 - 40 + (bits >> 52) % 64;
                f64::from_bits((bits & (1 << 63)) | (exp << 52) | (bits & ((1 << 52) - 1)))
            };
            let (got, want) = (round_f64_to_f16_lane(x) as f32, round_f64_to_f16_scalar(x));
            assert!(
                same_f32(got, want),
                "{x:e} ({bits:#x}): {got:e} vs {want:e}"
            );
        }
    }

    /// Every f32 value (as the f64 it widens to) in a strided sweep of all
    /// 2^32 patterns; `--ignored` runs all of them.
    fn lane_rounding_over_f32(step: usize) {
        for bits in (0..=u32::MAX).step_by(step) {
            let x = f64::from(f32::from_bits(bits));
            let (got, want) = (round_f64_to_f16_lane(x) as f32, round_f64_to_f16_scalar(x));
            assert!(
                same_f32(got, want),
                "{x:e} ({bits:#x}): {got:e} vs {want:e}"
            );
        }
    }

    #[test]
    fn lane_rounding_equals_the_scalar_rounding_over_f32_sweep() {
        lane_rounding_over_f32(251);
    }

    #[test]
    #[ignore = "exhaustive over 2^32 f32 patterns: ~a minute"]
    fn lane_rounding_equals_the_scalar_rounding_over_every_f32() {
        lane_rounding_over_f32(1);
    }

    /// Operand values of one kind, with signed zeros mixed in.
    #[derive(Clone, Copy, Debug)]
    enum Values {
        /// Scaled F143 FP8 (always exact sums).
        F143(i8),
        /// Scaled F152 FP8 (exact or not, depending on the data).
        F152(i8),
        /// FP16 in a narrow range (exact sums).
        F16Narrow,
        /// FP16 over the whole range with subnormals (sums round; the
        /// crate path).
        F16Wide,
        /// Mostly ±0, a few ±1: zero sums of every sign.
        Zeros,
    }

    fn value(rng: &mut Rng, kind: Values) -> f32 {
        use ipuc_target::numeric::{F8Format, Fp8};
        let r = rng.next();
        if r.is_multiple_of(11) {
            return if r & 0x100 == 0 { 0.0 } else { -0.0 };
        }
        match kind {
            Values::F143(s) => Fp8::new(F8Format::F143, s)
                .unwrap()
                .decode((r >> 8) as u8 & 0x7F | ((r >> 20) as u8 & 0x80)),
            Values::F152(s) => {
                let c = (r >> 8) as u8;
                let c = if c == 0x80 { 0 } else { c };
                Fp8::new(F8Format::F152, s).unwrap().decode(c)
            }
            Values::F16Narrow => {
                let v = ((r >> 8) % 4096) as f32 / 256.0 - 8.0;
                half::f16::from_f32(v).to_f32()
            }
            Values::F16Wide => {
                let bits = ((r >> 8) as u16) & 0x7BFF | ((r >> 40) as u16 & 0x8000);
                half::f16::from_bits(bits).to_f32()
            }
            Values::Zeros => match r % 5 {
                0 => 1.0,
                1 => -1.0,
                2 => -0.0,
                _ => 0.0,
            },
        }
    }

    /// The new `amp_product` against the pre-#42 one on seeded random
    /// shapes (the crate's dispatch edges: M or N of 1, M·N around 256,
    /// K ≤ 2 and K mod the micro-group in {1, 2}), layouts, modes,
    /// thread settings, operand kinds and starting partials.
    #[test]
    fn amp_product_equals_the_pre_42_product() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let dims = [
            1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 40, 65, 91, 130,
        ];
        let ks = [
            1usize, 2, 3, 16, 17, 18, 31, 32, 33, 34, 63, 64, 65, 66, 97, 130,
        ];
        let kinds = [
            Values::F143(-4),
            Values::F143(0),
            Values::F143(7),
            Values::F152(-4),
            Values::F152(0),
            Values::F16Narrow,
            Values::F16Wide,
            Values::Zeros,
        ];
        let (mut exact, mut in_order, mut crate_only) = (0, 0, 0);
        for case in 0..2500 {
            let (m, n, k) = (
                dims[rng.below(dims.len())],
                dims[rng.below(dims.len())],
                ks[rng.below(ks.len())],
            );
            let kind = kinds[rng.below(kinds.len())];
            let mode = match kind {
                Values::F143(_) | Values::F152(_) => AmpMode::F8F16Partials,
                _ => [
                    AmpMode::F16F32Partials,
                    AmpMode::F32,
                    AmpMode::F16F16Partials,
                ][rng.below(3)],
            };
            let pad = rng.below(3);
            let a: Vec<f32> = (0..m * k + pad).map(|_| value(&mut rng, kind)).collect();
            let b: Vec<f32> = (0..k * n + pad).map(|_| value(&mut rng, kind)).collect();
            let av = if rng.below(4) == 0 {
                MatRef::transposed(&a, pad, m)
            } else {
                MatRef::row_major(&a, pad, k)
            };
            let bv = if rng.below(2) == 0 {
                MatRef::transposed(&b, pad, k)
            } else {
                MatRef::row_major(&b, pad, n)
            };
            let start: Vec<f32> = (0..m * n)
                .map(|_| match rng.below(4) {
                    0 => 0.0,
                    1 => -0.0,
                    _ => half::f16::from_f32(value(&mut rng, Values::F16Narrow)).to_f32(),
                })
                .collect();
            let threads = if rng.below(3) == 0 {
                Threads::All
            } else {
                Threads::One
            };
            let mut want = start.clone();
            amp_product_before_42(mode, (m, n, k), av, bv, &mut want, threads);
            let mut got = start.clone();
            amp_product(mode, (m, n, k), av, bv, &mut got, threads);
            let group = mode.k_micro_group() as usize;
            if amp_kernel::sums_are_exact(group, (m, n, k), &av, &bv) {
                exact += 1;
            } else if amp_kernel::route(group, (m, n, k), &av, &bv).is_some() {
                in_order += 1;
            } else {
                crate_only += 1;
            }
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    same_f32(*g, *w),
                    "case {case} {kind:?} {mode:?} {m}×{n}×{k} ({av:?}, {bv:?}) element {i}: {g:e} vs {w:e}"
                );
            }
        }
        // Every route was exercised: exact sums, rounding sums the crate
        // adds in K order, and rounding sums it splits over lanes.
        assert!(
            exact > 500 && in_order > 300 && crate_only > 100,
            "{exact} exact, {in_order} in order, {crate_only} crate only"
        );
    }

    /// Products deep enough that the kernel splits `b` into several column
    /// bands and the parallel path into several multi-band row tasks
    /// (`amp_kernel`'s cache blocking) against the pre-#42 product.
    #[test]
    fn banded_products_equal_the_pre_42_product() {
        let mut rng = Rng(0x5851_F42D_4C95_7F2D);
        for (case, (m, n, k, kind, mode)) in [
            (71, 100, 2100, Values::F143(-4), AmpMode::F8F16Partials),
            (130, 41, 4500, Values::F143(0), AmpMode::F8F16Partials),
            (37, 72, 2050, Values::F16Narrow, AmpMode::F16F16Partials),
            (66, 90, 3001, Values::F16Narrow, AmpMode::F16F32Partials),
        ]
        .into_iter()
        .enumerate()
        {
            let a: Vec<f32> = (0..m * k).map(|_| value(&mut rng, kind)).collect();
            let b: Vec<f32> = (0..k * n).map(|_| value(&mut rng, kind)).collect();
            let (av, bv) = (MatRef::row_major(&a, 0, k), MatRef::transposed(&b, 0, k));
            // On one thread also with the AVX2 blocks where the CPU has
            // AVX-512 (the flag is the calling thread's).
            for (threads, narrow) in [
                (Threads::One, false),
                (Threads::One, true),
                (Threads::All, false),
            ] {
                let mut want = vec![0f32; m * n];
                amp_product_before_42(mode, (m, n, k), av, bv, &mut want, threads);
                let mut got = vec![0f32; m * n];
                let mut product = || amp_product(mode, (m, n, k), av, bv, &mut got, threads);
                if narrow {
                    amp_kernel::with_narrow_blocks(product);
                } else {
                    product();
                }
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        same_f32(*g, *w),
                        "case {case} {threads:?} element {i}: {g:e} vs {w:e}"
                    );
                }
            }
        }
    }

    /// Throughput of the So400m tile product (91×48×576, F143 × F143,
    /// transposed weights) on one thread: `--ignored --nocapture`.
    #[test]
    #[ignore = "timing, not a check"]
    fn amp_product_throughput() {
        let mut rng = Rng(7);
        let (m, n, k) = (91, 48, 576);
        // Finite values only (code 0x80 is NaN, which takes the crate path).
        let mut finite = || loop {
            let v = value(&mut rng, Values::F143(-4));
            if !v.is_nan() {
                break v;
            }
        };
        let a: Vec<f32> = (0..m * k).map(|_| finite()).collect();
        let b: Vec<f32> = (0..k * n).map(|_| finite()).collect();
        let mut acc = vec![0f32; m * n];
        let calls = 4000;
        let before = std::env::var_os("AMP_BENCH_BEFORE_42").is_some();
        let mut run = || {
            let start = std::time::Instant::now();
            for _ in 0..calls {
                let f = if before {
                    amp_product_before_42
                } else {
                    amp_product
                };
                f(
                    AmpMode::F8F16Partials,
                    (m, n, k),
                    MatRef::row_major(&a, 0, k),
                    MatRef::transposed(&b, 0, k),
                    &mut acc,
                    Threads::One,
                );
            }
            start.elapsed().as_secs_f64()
        };
        // `AMP_BENCH_NARROW`: the AVX2 blocks even where AVX-512 is.
        let secs = if std::env::var_os("AMP_BENCH_NARROW").is_some() {
            amp_kernel::with_narrow_blocks(run)
        } else {
            run()
        };
        let macs = (calls * m * n * k) as f64;
        println!(
            "{:.2} GMAC/s ({:.1} µs per call)",
            macs / secs / 1e9,
            secs / calls as f64 * 1e6
        );
    }

    fn naive(m: usize, n: usize, k: usize, a: &MatRef<'_>, b: &MatRef<'_>) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f64;
                for p in 0..k {
                    s += f64::from(a.data[a.offset + i * a.rs + p * a.cs])
                        * f64::from(b.data[b.offset + p * b.rs + j * b.cs]);
                }
                c[i * n + j] = s as f32;
            }
        }
        c
    }

    #[test]
    fn matches_naive_for_all_layouts() {
        let (m, n, k) = (37, 29, 53);
        let a: Vec<f32> = (0..m * k + 3)
            .map(|i| ((i * 7919) % 97) as f32 / 97.0 - 0.5)
            .collect();
        let b: Vec<f32> = (0..k * n + 5)
            .map(|i| ((i * 104_729) % 89) as f32 / 89.0 - 0.5)
            .collect();
        for (av, bv) in [
            (MatRef::row_major(&a, 3, k), MatRef::row_major(&b, 5, n)),
            (MatRef::transposed(&a, 0, m), MatRef::transposed(&b, 2, k)),
        ] {
            for threads in [Threads::One, Threads::All] {
                let mut c = vec![0f32; m * n];
                gemm((m, n, k), av, bv, &mut c, 1.0, threads);
                let want = naive(m, n, k, &av, &bv);
                let err = c
                    .iter()
                    .zip(&want)
                    .map(|(x, y)| (x - y).abs())
                    .fold(0.0, f32::max);
                assert!(err < 1e-5, "{err}");
            }
        }
    }

    /// The micro-group rule, written out element by element.
    fn naive_fp16_partials(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut acc = half::f16::ZERO;
                for k0 in (0..k).step_by(32) {
                    let mut s = 0f64;
                    for p in k0..(k0 + 32).min(k) {
                        s += f64::from(a[i * k + p]) * f64::from(b[p * n + j]);
                    }
                    acc = half::f16::from_f64(acc.to_f64() + s);
                }
                c[i * n + j] = acc.to_f32();
            }
        }
        c
    }

    #[test]
    fn fp8_products_round_to_fp16_after_every_micro_group() {
        use ipuc_target::numeric::{F8Format, Fp8, Overflow};
        let fp8 = Fp8::new(F8Format::F143, -4).unwrap();
        let (m, n, k) = (7, 19, 101);
        let q = |i: usize, p: usize| {
            fp8.quantize(((i * p) % 61) as f32 / 4.0 - 7.0, Overflow::Saturate)
        };
        let a: Vec<f32> = (0..m * k).map(|i| q(i, 7919)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| q(i, 104_729)).collect();
        let want = naive_fp16_partials(m, n, k, &a, &b);
        for threads in [Threads::One, Threads::All] {
            let mut c = vec![0f32; m * n];
            amp_product(
                AmpMode::F8F16Partials,
                (m, n, k),
                MatRef::row_major(&a, 0, k),
                MatRef::row_major(&b, 0, n),
                &mut c,
                threads,
            );
            assert_eq!(c, want);
        }
        // FP16 rounding happened: an exact f64 product differs somewhere.
        let exact = naive(
            m,
            n,
            k,
            &MatRef::row_major(&a, 0, k),
            &MatRef::row_major(&b, 0, n),
        );
        assert_ne!(exact, want);
    }

    /// The FP16 value nearest `x` (ties to an even mantissa), searched
    /// among `half`'s guess and its neighbours with exact f64 distances.
    fn nearest_f16(x: f64) -> f32 {
        use half::f16;
        let guess = f16::from_f64(x);
        if guess.is_infinite() && x.abs() >= 65_520.0 {
            return guess.to_f32();
        }
        let b = guess.to_bits();
        let mut best = guess;
        for c in [b.wrapping_sub(1), b, b.wrapping_add(1)].map(f16::from_bits) {
            if !c.is_finite() {
                continue;
            }
            let (dc, db) = ((c.to_f64() - x).abs(), (best.to_f64() - x).abs());
            if !best.is_finite() || dc < db || (dc == db && c.to_bits() & 1 == 0) {
                best = c;
            }
        }
        best.to_f32()
    }

    #[test]
    fn lane_fp16_rounding_is_exact() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let specials = [
            0.0,
            -0.0,
            65_504.0,
            65_519.999,
            65_520.0,
            -65_520.0,
            1e-9,
            2.98e-8,
            2.9802322387695312e-8,
            6.1e-5,
            6.103_515_625e-5,
            1.0 + 1.0 / 2048.0,
            1.0 + 3.0 / 2048.0,
            1e300,
            -1e-300,
        ];
        for x in specials.into_iter().chain((0..200_000).map(|_| {
            // Random bits in the interesting exponent range, both signs.
            let bits = next();
            let exp = 1023 - 30 + (bits >> 52) % 50;
            f64::from_bits((bits & (1 << 63)) | (exp << 52) | (bits & ((1 << 52) - 1)))
        })) {
            let want = nearest_f16(x);
            let got = round_f64_to_f16_lane(x) as f32;
            assert!(
                got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0),
                "{x:e}: {got:e} vs {want:e}"
            );
        }
    }
}
