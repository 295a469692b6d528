//! [`super::amp_product`]'s own kernel: register-blocked AVX2/FMA, the
//! partials kept in f64 between micro-groups and rounded in vector lanes,
//! no allocation per call. It runs only where it gives the bits the
//! `gemm`-crate path gives ([`route`]), which is one of two cases.
//!
//! *The sums are exact* ([`Span`]): a product of two f32 values is exact in
//! f64 (24 + 24 < 53 significant bits), and when the operands' values span
//! few enough bits every partial sum of any subset of a micro-group's
//! products is an f64 value too, so each addition is exact and the sum does
//! not depend on the order, the blocking or fused multiply-adds. F143 ×
//! F143 is always such a case.
//!
//! *The crate sums each output in K order with FMA* ([`Order`]): its
//! packed micro-kernel, `gevv` (K ≤ 2) and column-major `gemv` all
//! accumulate one output as `s = fma(a_p, b_p, s)` for p in order, which is
//! what this kernel does, so even rounding sums agree. (Its horizontal
//! kernels and row-major `gemv` split K over vector lanes: only exact sums
//! may take those routes here.)
//!
//! In both cases one thing the order can still decide is the sign of a
//! zero sum: the crate's kernels that start from a zeroed accumulator give
//! +0, the ones that start from the first product (`gevv`, column-major
//! `gemv`) give −0 when every product is −0; the kernel starts from +0 and
//! [`negative_zero_sums`] reproduces the other case. The partial is then
//! added and rounded with the same f64 operations as before.

use std::cell::RefCell;

use rayon::prelude::*;

use super::{MatRef, Partials, Threads};

/// Output columns per register block (two 4-lane f64 vectors).
const NR: usize = 8;
/// Output rows per register block.
const MR: usize = 4;
/// Output rows per cache band ([`avx2::run`]): a multiple of [`MR`].
const BAND: usize = 16;
/// K per chunk of a row band ([`avx2::run`]), rounded down to whole
/// micro-groups: a band's A panels (BAND·K_CHUNK f64s) and one strip
/// (K_CHUNK·NR) take 24 KiB, inside L1.
const K_CHUNK: usize = 128;
/// Bytes of `packed.b` a column band may take ([`avx2::run`]): well
/// inside a core's L2, beside the band's A panels.
const B_BAND_BYTES: usize = 512 * 1024;

/// Whether this kernel may run here: it needs AVX2 and FMA, and the order
/// it mirrors is that of the `gemm` crate's FMA kernels, which the crate
/// selects exactly when FMA is present (its scalar kernels use no FMA and
/// have no horizontal path). Elsewhere the crate path runs.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Bounds on a view's finite nonzero values: each is a multiple of `2^lo`
/// and below `2^hi` in magnitude.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    hi: i32,
    lo: i32,
}

/// The values' span, from the contiguous storage the view reads (elements
/// between its first and last index that it skips only widen the bounds,
/// which keeps every use sound): `Err(())` if a value is ±∞ or NaN,
/// `Ok(None)` if every value is ±0.
///
/// The bounds are computed loosely so the scan is three vector min/max/or
/// per element: every nonzero |x| = sig · 2^(e − 150) with `e` ≥ the
/// smallest nonzero magnitude's exponent field and sig a multiple of
/// 2^tz(OR of all fractions | 2^23).
fn span(v: &MatRef<'_>, rows: usize, cols: usize) -> Result<Option<Span>, ()> {
    let Some(last) = v.last_index(rows, cols) else {
        return Ok(None);
    };
    let (max, min, or) = magnitude_bounds(&v.data[v.offset..=last]);
    if max >= 0x7F80_0000 {
        return Err(());
    }
    if max == 0 {
        return Ok(None);
    }
    let exponent = |mag: u32| (mag >> 23).max(1) as i32;
    Ok(Some(Span {
        // |x| < 2^(e − 126) for exponent field e (subnormals: e = 1).
        hi: exponent(max) - 126,
        lo: exponent(min) - 150 + (or | 0x0080_0000).trailing_zeros() as i32,
    }))
}

/// (largest magnitude bits, smallest nonzero magnitude bits, OR of the
/// fraction fields) over `xs`.
fn magnitude_bounds(xs: &[f32]) -> (u32, u32, u32) {
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { magnitude_bounds_avx2(xs) };
    }
    magnitude_bounds_generic(xs)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn magnitude_bounds_avx2(xs: &[f32]) -> (u32, u32, u32) {
    magnitude_bounds_generic(xs)
}

#[inline(always)]
fn magnitude_bounds_generic(xs: &[f32]) -> (u32, u32, u32) {
    let (mut max, mut min, mut or) = (0u32, u32::MAX, 0u32);
    for &x in xs {
        let mag = x.to_bits() & 0x7FFF_FFFF;
        max = max.max(mag);
        min = min.min(if mag == 0 { u32::MAX } else { mag });
        or |= mag & 0x007F_FFFF;
    }
    (max, min, or)
}

/// How the `gemm` crate (FMA kernels) sums one output of a `kg`-deep
/// micro-group: the dispatch of `gemm_common::gemm::gemm_basic_generic`
/// 0.18, as `super::amp_product_gemm_crate` calls it (dst column stride 1,
/// row stride n; lhs strides (a.cs, a.rs), rhs (b.cs, b.rs)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// `s = fma(a_p, b_p, s)` in K order from s = +0 (the packed
    /// micro-kernel).
    FromZero,
    /// The same from s = the first product (`gevv`, column-major `gemv`).
    FromProduct,
    /// K split over vector lanes (horizontal kernels, row-major `gemv`).
    Lanes,
}

fn order((m, n, kg): (usize, usize, usize), a: &MatRef<'_>, b: &MatRef<'_>) -> Order {
    let (dst_cs, dst_rs) = (1, n);
    if m * n <= 16 * 16 && a.cs == 1 && b.rs == 1 {
        return Order::Lanes; // horizontal kernels
    }
    if kg <= 2 {
        return Order::FromProduct; // gevv: `lhs * rhs` (+ one FMA)
    }
    if n <= 1 && a.rs == 1 && dst_rs == 1 {
        return Order::FromProduct; // mixed_gemv_colmajor: dst = lhs·rhs at depth 0
    }
    if n <= 1 && a.cs == 1 && b.rs == 1 {
        return Order::Lanes; // mixed_gemv_rowmajor
    }
    if m <= 1 && b.cs == 1 && dst_cs == 1 {
        return Order::FromProduct; // mixed_gemv_colmajor, operands swapped
    }
    if m <= 1 && b.rs == 1 && a.cs == 1 {
        return Order::Lanes; // mixed_gemv_rowmajor, operands swapped
    }
    Order::FromZero // the packed micro-kernel
}

/// Whether the kernel gives the crate path's bits for this product, and
/// then which micro-groups start from their first product: `Some` when
/// every operand is finite and either the sums are exact or the crate sums
/// every micro-group in K order.
pub fn route(
    micro_group: usize,
    (m, n, k): (usize, usize, usize),
    a: &MatRef<'_>,
    b: &MatRef<'_>,
) -> Option<FirstProduct> {
    let full = order((m, n, micro_group.min(k)), a, b);
    let tail = if k.is_multiple_of(micro_group) {
        full
    } else {
        order((m, n, k % micro_group), a, b)
    };
    let (sa, sb) = (span(a, m, k).ok()?, span(b, k, n).ok()?);
    let exact = match (sa, sb) {
        // An all-zero operand: every product is ±0, every sum exact.
        (None, _) | (_, None) => true,
        // A sum of ≤ 2^c products, each a multiple of 2^(la+lb) below
        // 2^(ha+hb), and each partial sum, is a multiple of 2^(la+lb)
        // below 2^(ha+hb+c): an f64 value when that spans ≤ 53 bits.
        (Some(sa), Some(sb)) => {
            let c = micro_group.next_power_of_two().trailing_zeros() as i32;
            (sa.hi + sb.hi + c) - (sa.lo + sb.lo) <= 53
        }
    };
    let in_order = full != Order::Lanes && tail != Order::Lanes;
    (exact || in_order).then_some(FirstProduct {
        full: full == Order::FromProduct,
        tail: tail == Order::FromProduct,
    })
}

/// Whether the micro-group sums of `a·b` are exact (for tests: which
/// route a case exercised).
#[cfg(test)]
pub(super) fn sums_are_exact(
    micro_group: usize,
    (m, n, k): (usize, usize, usize),
    a: &MatRef<'_>,
    b: &MatRef<'_>,
) -> bool {
    match (span(a, m, k), span(b, k, n)) {
        (Ok(Some(sa)), Ok(Some(sb))) => {
            let c = micro_group.next_power_of_two().trailing_zeros() as i32;
            (sa.hi + sb.hi + c) - (sa.lo + sb.lo) <= 53
        }
        (Ok(_), Ok(_)) => true,
        _ => false,
    }
}

/// Operands widened to f64 and packed: `a` in row panels (see [`pack`]), `b`
/// row-major `k × np` with the columns padded with zeros to a multiple of
/// [`NR`].
#[derive(Default)]
struct Packed {
    a: Vec<f64>,
    b: Vec<f64>,
    np: usize,
}

/// Per-thread buffers reused across calls: a tile's product is small, and
/// fresh buffers each call cost page faults (measured: the kernel's page
/// clearing was ~10 % of a run).
#[derive(Default)]
struct Scratch {
    packed: Packed,
    work: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

fn pack((m, n, k): (usize, usize, usize), a: &MatRef<'_>, b: &MatRef<'_>, packed: &mut Packed) {
    let np = n.next_multiple_of(NR);
    packed.np = np;
    // `a` in row panels: MR rows at a time (then single rows), each panel
    // K-major — the panel of rows i0.. at i0·k, element (r, p) at p·R + r —
    // so the kernel broadcasts a panel's R values from one pointer.
    let aw = &mut packed.a;
    // Every element is written below: the buffer is resized, not cleared
    // (zeroing it was a tenth of the packing's time).
    aw.resize(m * k, 0.0);
    let mut i0 = 0;
    while i0 < m {
        // The last rows (fewer than MR) make one narrower panel.
        let rows = MR.min(m - i0);
        let panel = &mut aw[i0 * k..(i0 + rows) * k];
        if rows == MR && a.cs == 1 {
            // Four contiguous rows into the K-major panel: a transpose.
            widen_transpose4(a.data, a.offset + i0 * a.rs, a.rs, k, panel, MR);
            i0 += rows;
            continue;
        }
        // Written in order (the reads walk `rows` streams of `a`).
        for (p, dst) in panel.chunks_exact_mut(rows).enumerate() {
            let base = a.offset + i0 * a.rs + p * a.cs;
            for (r, d) in dst.iter_mut().enumerate() {
                *d = f64::from(a.data[base + r * a.rs]);
            }
        }
        i0 += rows;
    }
    let bw = &mut packed.b;
    // Columns n.. are the zero padding; the others are all written below.
    bw.resize(k * np, 0.0);
    if np > n {
        for row in bw.chunks_exact_mut(np) {
            row[n..].fill(0.0);
        }
    }
    if b.cs == 1 {
        for (p, dst) in bw.chunks_exact_mut(np).enumerate() {
            let row = b.offset + p * b.rs;
            for (d, &x) in dst[..n].iter_mut().zip(&b.data[row..row + n]) {
                *d = f64::from(x);
            }
        }
    } else {
        // Transposed weights: each stored row is one output column, so
        // four of them at a time are a transpose into four `bw` columns.
        let quads = n / 4 * 4;
        for j in (0..quads).step_by(4) {
            widen_transpose4(b.data, b.offset + j * b.cs, b.cs, k, &mut bw[j..], np);
        }
        for j in quads..n {
            let col = b.offset + j * b.cs;
            for p in 0..k {
                bw[p * np + j] = f64::from(b.data[col + p * b.rs]);
            }
        }
    }
}

/// `dst[p·dst_stride + r] = src[base + r·stride + p]` widened to f64, for
/// the four source rows r < 4 and p < `len`: four contiguous runs of `src`
/// transposed into the packed layouts (exact: every f32 is an f64). The
/// scalar loop it replaces was most of the packing's time (strided
/// single-element stores).
fn widen_transpose4(
    src: &[f32],
    base: usize,
    stride: usize,
    len: usize,
    dst: &mut [f64],
    dst_stride: usize,
) {
    if len == 0 {
        return;
    }
    assert!(base + 3 * stride + len <= src.len() && (len - 1) * dst_stride + 4 <= dst.len());
    let quads = len / 4 * 4;
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the kernel (and so this packing) runs only where
        // `available()` detected AVX2 and FMA; the bounds were asserted.
        unsafe { avx2::widen_transpose4(src, base, stride, quads, dst, dst_stride) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let quads = 0;
    for p in quads..len {
        for r in 0..4 {
            dst[p * dst_stride + r] = f64::from(src[base + r * stride + p]);
        }
    }
}

/// The product on the kernel; `route` said it may run (`first`), the
/// views were bounds-checked, `acc` is `m × n` dense.
#[allow(clippy::too_many_arguments)] // the product's full description
pub fn amp_product(
    partials: Partials,
    micro_group: usize,
    first: FirstProduct,
    (m, n, k): (usize, usize, usize),
    a: &MatRef<'_>,
    b: &MatRef<'_>,
    acc: &mut [f32],
    threads: Threads,
) {
    let mut body = |scratch: &mut Scratch| {
        let Scratch { packed, work } = scratch;
        pack((m, n, k), a, b, packed);
        let np = packed.np;
        // Every element is written here (the padding columns with zeros),
        // so the buffer is resized, not cleared.
        work.resize(m * np, 0.0);
        for (w, o) in work.chunks_exact_mut(np).zip(acc.chunks_exact(n)) {
            for (w, &o) in w.iter_mut().zip(o) {
                *w = f64::from(o);
            }
            w[n..].fill(0.0);
        }
        let shape = Shape {
            k,
            np,
            micro_group,
            partials,
            first,
        };
        // A few tasks per thread, each whole bands of rows, so a task
        // reuses every column band of `packed.b` over many rows
        // ([`avx2::run`]) instead of streaming all of it per 16 rows.
        let tasks = rayon::current_num_threads().max(1) * 4;
        let rows_per_task = m.div_ceil(tasks).next_multiple_of(BAND).max(BAND);
        match threads {
            Threads::One => run(&shape, packed, 0, work),
            Threads::All => work
                .par_chunks_mut(rows_per_task * np)
                .enumerate()
                .for_each(|(t, w)| run(&shape, packed, t * rows_per_task, w)),
        }
        for (o, w) in acc.chunks_exact_mut(n).zip(work.chunks_exact(np)) {
            for (o, &w) in o.iter_mut().zip(w) {
                // Exact: `w` is a partials-type value (or ±∞, or the NaN
                // the crate path would store).
                *o = w as f32;
            }
        }
    };
    // The buffers are taken out of the thread's slot for the call and put
    // back after it: a thread waiting in the parallel loop may run another
    // product (rayon steals work), which then finds the slot empty (and
    // allocates its own) rather than borrowed. Reusing them spares the
    // kernel zeroing fresh pages for every large product.
    let mut scratch = SCRATCH.with_borrow_mut(std::mem::take);
    body(&mut scratch);
    SCRATCH.with_borrow_mut(|slot| *slot = scratch);
}

/// Which micro-groups the crate sums from their first product ([`Order`]):
/// the full-length ones, and a shorter last one.
#[derive(Clone, Copy, Debug)]
pub struct FirstProduct {
    full: bool,
    tail: bool,
}

#[derive(Clone, Copy)]
struct Shape {
    k: usize,
    np: usize,
    micro_group: usize,
    partials: Partials,
    first: FirstProduct,
}

/// Rows `row0..` of the partials `work` (whole rows of `np`).
fn run(shape: &Shape, packed: &Packed, row0: usize, work: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `available()` (checked by `super::amp_product` before
        // calling in) detected AVX2 and FMA.
        unsafe { avx2::run(shape, packed, row0, work) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // Unreachable: `available()` is false off x86-64.
        let _ = (shape, packed, row0, work);
        unreachable!("the exact AMP kernel needs x86-64 AVX2 and FMA")
    }
}

/// Which micro-group the crate starts from a product, by its depth.
fn from_product(shape: &Shape, kg: usize) -> bool {
    if kg == shape.micro_group {
        shape.first.full
    } else {
        shape.first.tail
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The kernel in AVX2 + FMA intrinsics: LLVM keeps neither the
    //! accumulator arrays nor the rounding's selects in vector registers
    //! on its own (measured: scalar FMAs and spills).

    use std::arch::x86_64::*;

    use super::{
        from_product, negative_zero_sums, Packed, Shape, BAND, B_BAND_BYTES, K_CHUNK, MR, NR,
    };
    use crate::gemm::Partials;

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn run(shape: &Shape, packed: &Packed, row0: usize, work: &mut [f64]) {
        let np = shape.np;
        let rows = work.len() / np;
        // Column bands of `packed.b` that stay in L2 while every row of
        // this task passes over them, and inside each, bands of BAND rows:
        // each NR-column strip (K·NR f64s) is read once per row band while
        // it is still in L1, instead of once per MR rows. Each output
        // block is computed alone over all of K, so the order of blocks
        // changes no bits.
        //
        // Inside a row band, K is walked in chunks of whole micro-groups
        // ([`K_CHUNK`]): a band's A panels and a strip over one chunk stay
        // in L1 (over all of K they did not: 576-deep strips are 36 KiB).
        // Each output still takes its micro-groups in K order, its partial
        // kept in `work` between them as before, so no bit changes.
        let wide = super::avx512::available();
        let strips = (B_BAND_BYTES / (shape.k.max(1) * NR * 8)).max(1);
        let chunk = (K_CHUNK / shape.micro_group).max(1) * shape.micro_group;
        for jb in (0..np).step_by(strips * NR) {
            let jend = (jb + strips * NR).min(np);
            let mut r = 0;
            while r + MR <= rows {
                let band = (rows - r).min(BAND) / MR * MR;
                for kc in (0..shape.k).step_by(chunk) {
                    let ks = (kc, (kc + chunk).min(shape.k));
                    for j0 in (jb..jend).step_by(NR) {
                        if wide {
                            let w = &mut work[r * np..];
                            // SAFETY: `wide` is set only where the CPU
                            // has AVX-512F (`super::avx512::available`).
                            unsafe {
                                super::avx512::band(shape, packed, (row0 + r, band), j0, ks, w)
                            };
                            continue;
                        }
                        for rb in (r..r + band).step_by(MR) {
                            let w = &mut work[rb * np..];
                            block::<MR>(shape, packed, row0 + rb, j0, ks, w);
                        }
                    }
                }
                r += band;
            }
            // The last 1..MR rows of the product (tasks start at multiples
            // of BAND), one narrower panel: one block over them keeps 2·R
            // independent sums in flight where a block per row had two
            // (latency-bound, ~3x slower per row).
            if r < rows {
                let w = &mut work[r * np..];
                let ks = (0, shape.k);
                for j0 in (jb..jend).step_by(NR) {
                    match rows - r {
                        1 => block::<1>(shape, packed, row0 + r, j0, ks, w),
                        2 => block::<2>(shape, packed, row0 + r, j0, ks, w),
                        _ => block::<3>(shape, packed, row0 + r, j0, ks, w),
                    }
                }
            }
        }
    }

    /// [`super::widen_transpose4`] over `p < quads` (a multiple of 4),
    /// four by four: four rows of four f32s, transposed in 128-bit lanes
    /// and widened.
    ///
    /// # Safety
    /// AVX2 present; `base + 3·stride + quads ≤ src.len()` and
    /// `(quads − 1)·dst_stride + 4 ≤ dst.len()` when `quads > 0`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn widen_transpose4(
        src: &[f32],
        base: usize,
        stride: usize,
        quads: usize,
        dst: &mut [f64],
        dst_stride: usize,
    ) {
        let (s, d) = (src.as_ptr().add(base), dst.as_mut_ptr());
        for p in (0..quads).step_by(4) {
            let r0 = _mm_loadu_ps(s.add(p));
            let r1 = _mm_loadu_ps(s.add(stride + p));
            let r2 = _mm_loadu_ps(s.add(2 * stride + p));
            let r3 = _mm_loadu_ps(s.add(3 * stride + p));
            let (t0, t1) = (_mm_unpacklo_ps(r0, r1), _mm_unpacklo_ps(r2, r3));
            let (t2, t3) = (_mm_unpackhi_ps(r0, r1), _mm_unpackhi_ps(r2, r3));
            let columns = [
                _mm_movelh_ps(t0, t1),
                _mm_movehl_ps(t1, t0),
                _mm_movelh_ps(t2, t3),
                _mm_movehl_ps(t3, t2),
            ];
            for (c, &v) in columns.iter().enumerate() {
                _mm256_storeu_pd(d.add((p + c) * dst_stride), _mm256_cvtps_pd(v));
            }
        }
    }

    /// `R × NR` outputs at packed row `i0`, column `j0`, over the
    /// micro-groups starting in `kb..kend` (`kb` a micro-group boundary);
    /// `work` starts at row `i0`'s partials.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn block<const R: usize>(
        shape: &Shape,
        packed: &Packed,
        i0: usize,
        j0: usize,
        (kb, kend): (usize, usize),
        work: &mut [f64],
    ) {
        let (k, np) = (shape.k, shape.np);
        // This block's panel: element (r, p) at p·R + r.
        let a = &packed.a[i0 * k..(i0 + R) * k];
        assert!(j0 + NR <= np && packed.b.len() >= k * np && work.len() >= (R - 1) * np + j0 + NR);
        let (ap, bp) = (a.as_ptr(), packed.b.as_ptr());
        let mut k0 = kb;
        while k0 < kend {
            let kg = shape.micro_group.min(k - k0);
            let mut s = [[_mm256_setzero_pd(); 2]; R];
            for p in k0..k0 + kg {
                // SAFETY: p < k, r < R and j0 + NR ≤ np, so every read is
                // inside the panel (R·k long) or `packed.b` (≥ k·np,
                // asserted above).
                unsafe {
                    let row = bp.add(p * np + j0);
                    let (b0, b1) = (_mm256_loadu_pd(row), _mm256_loadu_pd(row.add(4)));
                    for (r, s) in s.iter_mut().enumerate() {
                        let x = _mm256_broadcast_sd(&*ap.add(p * R + r));
                        // Exact or in the crate's order: see the module note.
                        s[0] = _mm256_fmadd_pd(x, b0, s[0]);
                        s[1] = _mm256_fmadd_pd(x, b1, s[1]);
                    }
                }
            }
            if from_product(shape, kg) {
                let mut lanes = [[0f64; NR]; R];
                for (l, s) in lanes.iter_mut().zip(&s) {
                    // SAFETY: `l` holds NR = 8 f64s.
                    unsafe {
                        _mm256_storeu_pd(l.as_mut_ptr(), s[0]);
                        _mm256_storeu_pd(l.as_mut_ptr().add(4), s[1]);
                    }
                }
                negative_zero_sums(&mut lanes, a, &packed.b, np, (k0, kg), j0);
                for (l, s) in lanes.iter().zip(s.iter_mut()) {
                    // SAFETY: as above.
                    unsafe {
                        s[0] = _mm256_loadu_pd(l.as_ptr());
                        s[1] = _mm256_loadu_pd(l.as_ptr().add(4));
                    }
                }
            }
            for (r, s) in s.iter().enumerate() {
                for (h, &s) in s.iter().enumerate() {
                    // SAFETY: r < R and j0 + 4h + 4 ≤ j0 + NR: inside
                    // `work` (asserted above).
                    unsafe {
                        let w = work.as_mut_ptr().add(r * np + j0 + 4 * h);
                        let sum = _mm256_add_pd(_mm256_loadu_pd(w), s);
                        _mm256_storeu_pd(w, round(shape.partials, sum));
                    }
                }
            }
            k0 += kg;
        }
    }

    /// [`Partials::round`] on four lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn round(partials: Partials, x: __m256d) -> __m256d {
        match partials {
            Partials::F16 => round_f16(x),
            Partials::F32 => _mm256_cvtps_pd(_mm256_cvtpd_ps(x)),
        }
    }

    /// [`crate::gemm::round_f64_to_f16_lane`] on four lanes, the same
    /// operations (dividing by 2^24 is multiplying by 2^-24 exactly: the
    /// dividend is an integer or ±∞/NaN).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn round_f16(x: __m256d) -> __m256d {
        let sign = _mm256_set1_pd(-0.0);
        let abs = _mm256_andnot_pd(sign, x);
        let subnormal = _mm256_mul_pd(
            _mm256_round_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_pd(
                x,
                _mm256_set1_pd(16_777_216.0),
            )),
            _mm256_set1_pd(1.0 / 16_777_216.0),
        );
        let bits = _mm256_castpd_si256(x);
        let half = _mm256_add_epi64(
            _mm256_set1_epi64x((1 << 41) - 1),
            _mm256_and_si256(_mm256_srli_epi64::<42>(bits), _mm256_set1_epi64x(1)),
        );
        let normal = _mm256_castsi256_pd(_mm256_andnot_si256(
            _mm256_set1_epi64x((1 << 42) - 1),
            _mm256_add_epi64(bits, half),
        ));
        let tiny = _mm256_cmp_pd::<_CMP_LT_OQ>(abs, _mm256_set1_pd(6.103_515_625e-5));
        let r = _mm256_blendv_pd(normal, subnormal, tiny);
        let big = _mm256_cmp_pd::<_CMP_GT_OQ>(_mm256_andnot_pd(sign, r), _mm256_set1_pd(65_504.0));
        let inf = _mm256_or_pd(_mm256_and_pd(x, sign), _mm256_set1_pd(f64::INFINITY));
        let r = _mm256_blendv_pd(r, inf, big);
        let nan = _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x);
        _mm256_blendv_pd(r, _mm256_set1_pd(f64::NAN), nan)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! The register block on AVX-512: a band's rows (up to [`BAND`], whole
    //! [`MR`]-row panels) against one [`NR`]-column strip, one 8-lane
    //! vector per row, so a 16-row band keeps 16 independent sums in
    //! flight (the AVX2 block keeps 8, as many as the FMA latency needs
    //! with no slack) and each multiply-add takes its broadcast lhs value
    //! from memory. The same products, added in the same K order per
    //! output, rounded with the same IEEE operations lane for lane
    //! ([`round_f16`] is `avx2::round_f16` on eight lanes), so the bits do
    //! not depend on which block ran.

    use std::arch::x86_64::*;

    use super::{from_product, negative_zero_sums, Packed, Shape, BAND, MR, NR};
    use crate::gemm::Partials;

    #[cfg(test)]
    thread_local! {
        /// Tests set this to run the AVX2 blocks on a CPU with AVX-512.
        pub(super) static NARROW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Whether the wide blocks may run: the CPU has AVX-512F.
    pub(super) fn available() -> bool {
        #[cfg(test)]
        if NARROW.get() {
            return false;
        }
        std::arch::is_x86_feature_detected!("avx512f")
    }

    /// The `band` rows at packed row `i0` (a multiple of [`MR`], at most
    /// [`BAND`]) against the strip at column `j0`, over the micro-groups
    /// starting in `ks`; `work` starts at row `i0`'s partials.
    ///
    /// # Safety
    /// AVX-512F present.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn band(
        shape: &Shape,
        packed: &Packed,
        (i0, band): (usize, usize),
        j0: usize,
        ks: (usize, usize),
        work: &mut [f64],
    ) {
        const { assert!(BAND == 4 * MR && NR == 8) };
        match band / MR {
            4 => block::<4>(shape, packed, i0, j0, ks, work),
            3 => block::<3>(shape, packed, i0, j0, ks, work),
            2 => block::<2>(shape, packed, i0, j0, ks, work),
            _ => block::<1>(shape, packed, i0, j0, ks, work),
        }
    }

    /// `P` panels (`P · MR` rows) × [`NR`] outputs: `avx2::block` with one
    /// vector per row.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn block<const P: usize>(
        shape: &Shape,
        packed: &Packed,
        i0: usize,
        j0: usize,
        (kb, kend): (usize, usize),
        work: &mut [f64],
    ) {
        let (k, np) = (shape.k, shape.np);
        // Panel q of the block (rows i0 + q·MR ..) at q·MR·k: element
        // (r, p) at p·MR + r.
        let a = &packed.a[i0 * k..(i0 + P * MR) * k];
        assert!(
            j0 + NR <= np && packed.b.len() >= k * np && work.len() >= (P * MR - 1) * np + j0 + NR
        );
        let (ap, bp) = (a.as_ptr(), packed.b.as_ptr());
        let mut k0 = kb;
        while k0 < kend {
            let kg = shape.micro_group.min(k - k0);
            let mut s = [[_mm512_setzero_pd(); MR]; P];
            for p in k0..k0 + kg {
                // SAFETY: p < k, q < P, r < MR and j0 + NR ≤ np: every
                // read is inside the block's panels (P·MR·k long) or
                // `packed.b` (≥ k·np, asserted above).
                unsafe {
                    let b = _mm512_loadu_pd(bp.add(p * np + j0));
                    for (q, s) in s.iter_mut().enumerate() {
                        let column = ap.add(q * MR * k + p * MR);
                        for (r, s) in s.iter_mut().enumerate() {
                            // Exact or in the crate's order: see the
                            // module note of `amp_kernel`.
                            *s = _mm512_fmadd_pd(_mm512_set1_pd(*column.add(r)), b, *s);
                        }
                    }
                }
            }
            if from_product(shape, kg) {
                for (q, s) in s.iter_mut().enumerate() {
                    let mut lanes = [[0f64; NR]; MR];
                    for (l, s) in lanes.iter_mut().zip(s.iter()) {
                        // SAFETY: `l` holds NR = 8 f64s.
                        unsafe { _mm512_storeu_pd(l.as_mut_ptr(), *s) };
                    }
                    let panel = &a[q * MR * k..(q + 1) * MR * k];
                    negative_zero_sums(&mut lanes, panel, &packed.b, np, (k0, kg), j0);
                    for (l, s) in lanes.iter().zip(s.iter_mut()) {
                        // SAFETY: as above.
                        *s = unsafe { _mm512_loadu_pd(l.as_ptr()) };
                    }
                }
            }
            for (q, s) in s.iter().enumerate() {
                for (r, &s) in s.iter().enumerate() {
                    // SAFETY: q·MR + r < P·MR and j0 + NR ≤ np: inside
                    // `work` (asserted above).
                    unsafe {
                        let w = work.as_mut_ptr().add((q * MR + r) * np + j0);
                        let sum = _mm512_add_pd(_mm512_loadu_pd(w), s);
                        _mm512_storeu_pd(w, round(shape.partials, sum));
                    }
                }
            }
            k0 += kg;
        }
    }

    /// [`Partials::round`] on eight lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn round(partials: Partials, x: __m512d) -> __m512d {
        match partials {
            Partials::F16 => round_f16(x),
            Partials::F32 => _mm512_cvtps_pd(_mm512_cvtpd_ps(x)),
        }
    }

    /// `avx2::round_f16` on eight lanes: the same operations, its blends
    /// as mask blends.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn round_f16(x: __m512d) -> __m512d {
        let sign = _mm512_set1_epi64(i64::MIN);
        let bits = _mm512_castpd_si512(x);
        let abs = |v: __m512i| _mm512_castsi512_pd(_mm512_andnot_si512(sign, v));
        let subnormal = _mm512_mul_pd(
            _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
                _mm512_mul_pd(x, _mm512_set1_pd(16_777_216.0)),
            ),
            _mm512_set1_pd(1.0 / 16_777_216.0),
        );
        let half = _mm512_add_epi64(
            _mm512_set1_epi64((1 << 41) - 1),
            _mm512_and_si512(_mm512_srli_epi64::<42>(bits), _mm512_set1_epi64(1)),
        );
        let normal = _mm512_castsi512_pd(_mm512_andnot_si512(
            _mm512_set1_epi64((1 << 42) - 1),
            _mm512_add_epi64(bits, half),
        ));
        let tiny = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(abs(bits), _mm512_set1_pd(6.103_515_625e-5));
        let r = _mm512_mask_blend_pd(tiny, normal, subnormal);
        let big =
            _mm512_cmp_pd_mask::<_CMP_GT_OQ>(abs(_mm512_castpd_si512(r)), _mm512_set1_pd(65_504.0));
        let inf = _mm512_castsi512_pd(_mm512_or_si512(
            _mm512_and_si512(bits, sign),
            _mm512_castpd_si512(_mm512_set1_pd(f64::INFINITY)),
        ));
        let r = _mm512_mask_blend_pd(big, r, inf);
        let nan = _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x);
        _mm512_mask_blend_pd(nan, r, _mm512_set1_pd(f64::NAN))
    }
}

/// Where the crate would start from the first product, a zero sum is −0
/// exactly when every product is −0 (RNE: x + y is −0 only for −0 + −0);
/// the kernel above, from +0, made them +0. `a` is the block's panel.
#[cold]
fn negative_zero_sums<const R: usize>(
    s: &mut [[f64; NR]; R],
    a: &[f64],
    b: &[f64],
    np: usize,
    (k0, kg): (usize, usize),
    j0: usize,
) {
    for (r, s) in s.iter_mut().enumerate() {
        for (c, s) in s.iter_mut().enumerate() {
            if *s == 0.0 {
                let all_negative_zero = (k0..k0 + kg).all(|p| {
                    let product = a[p * R + r] * b[p * np + j0 + c];
                    product.to_bits() == (-0f64).to_bits()
                });
                if all_negative_zero {
                    *s = -0.0;
                }
            }
        }
    }
}

/// The four-lane FP16 rounding over `xs` in place (a multiple of 4
/// long), for tests comparing it with the scalar one; `false` if the CPU
/// lacks AVX2 + FMA.
#[cfg(test)]
pub(super) fn round_f16_lanes(xs: &mut [f64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() {
        use std::arch::x86_64::{_mm256_loadu_pd, _mm256_storeu_pd};
        for c in xs.chunks_exact_mut(4) {
            // SAFETY: AVX2 + FMA detected; `c` holds four f64s.
            unsafe {
                let v = _mm256_loadu_pd(c.as_ptr());
                _mm256_storeu_pd(c.as_mut_ptr(), avx2::round_f16(v));
            }
        }
        return true;
    }
    let _ = xs;
    false
}

/// [`round_f16_lanes`] on the eight-lane rounding of the AVX-512 blocks;
/// `false` if the CPU lacks AVX-512F.
#[cfg(test)]
pub(super) fn round_f16_wide_lanes(xs: &mut [f64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        use std::arch::x86_64::{_mm512_loadu_pd, _mm512_storeu_pd};
        for c in xs.chunks_exact_mut(8) {
            // SAFETY: AVX-512F detected; `c` holds eight f64s.
            unsafe {
                let v = _mm512_loadu_pd(c.as_ptr());
                _mm512_storeu_pd(c.as_mut_ptr(), avx512::round_f16(v));
            }
        }
        return true;
    }
    let _ = xs;
    false
}

/// `f` with the AVX2 blocks on this thread even where the CPU has
/// AVX-512 (products on one thread run on the calling thread).
#[cfg(test)]
pub(super) fn with_narrow_blocks<T>(f: impl FnOnce() -> T) -> T {
    #[cfg(target_arch = "x86_64")]
    {
        avx512::NARROW.set(true);
        let out = f();
        avx512::NARROW.set(false);
        out
    }
    #[cfg(not(target_arch = "x86_64"))]
    f()
}
