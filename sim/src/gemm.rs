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

#[cfg(test)]
mod tests {
    use super::*;

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
}
