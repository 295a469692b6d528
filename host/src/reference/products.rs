//! Matrix products for the reference, on the `gemm` crate directly (not
//! the simulator's kernels: the reference shares no arithmetic with the
//! device it checks). F32 for the FP32 reference; the device-numerics
//! reference's AMP products have their own fused kernel (`amp.rs`).

use rayon::prelude::*;

/// A strided read-only matrix: element (r, c) at `offset + r·rs + c·cs`.
#[derive(Clone, Copy, Debug)]
pub struct Mat<'a> {
    pub data: &'a [f32],
    pub offset: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a> Mat<'a> {
    /// Row-major with `cols` columns, from `offset`.
    pub fn rows(data: &'a [f32], offset: usize, cols: usize) -> Self {
        Mat {
            data,
            offset,
            rs: cols,
            cs: 1,
        }
    }

    /// The transpose of a row-major matrix with `cols` columns at `offset`.
    pub fn transposed(data: &'a [f32], offset: usize, cols: usize) -> Self {
        Mat {
            data,
            offset,
            rs: 1,
            cs: cols,
        }
    }

    /// Element (r, c).
    pub fn at(&self, r: usize, c: usize) -> f32 {
        self.data[self.offset + r * self.rs + c * self.cs]
    }

    /// Whether a `rows × cols` view stays inside `data`.
    fn fits(&self, rows: usize, cols: usize) -> bool {
        rows == 0
            || cols == 0
            || self.offset + (rows - 1) * self.rs + (cols - 1) * self.cs < self.data.len()
    }
}

/// Products below this many multiply-adds run one per thread when batched.
const SMALL_MACS: usize = 1 << 22;

/// `c[m×n] (dense row-major) = scale · a[m×k] · b[k×n]`, over rayon when
/// `parallel`. Panics on a view outside its slice: shapes come from the
/// verified graph, so that is an interpreter bug, not bad input.
pub fn product(
    (m, n, k): (usize, usize, usize),
    a: Mat<'_>,
    b: Mat<'_>,
    c: &mut [f32],
    scale: f32,
    parallel: bool,
) {
    assert!(
        c.len() >= m * n && a.fits(m, k) && b.fits(k, n),
        "product views out of bounds"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c[..m * n].fill(0.0);
        return;
    }
    // SAFETY: the assert bounds every element each view addresses, and `c`
    // is exclusively borrowed, dense row-major.
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
            parallelism(parallel),
        );
    }
}

/// `batch` products `c_i = a_i · b_i` back to back in `c`.
pub fn batched<'a>(
    batch: usize,
    (m, n, k): (usize, usize, usize),
    a: impl Fn(usize) -> Mat<'a> + Sync,
    b: impl Fn(usize) -> Mat<'a> + Sync,
    c: &mut [f32],
) {
    let size = m * n;
    if size == 0 {
        return;
    }
    if batch > 1 && size * k < SMALL_MACS {
        c.par_chunks_mut(size)
            .take(batch)
            .enumerate()
            .for_each(|(i, out)| product((m, n, k), a(i), b(i), out, 1.0, false));
    } else {
        for (i, out) in c.chunks_mut(size).take(batch).enumerate() {
            product((m, n, k), a(i), b(i), out, 1.0, true);
        }
    }
}

fn parallelism(parallel: bool) -> gemm::Parallelism {
    if parallel {
        gemm::Parallelism::Rayon(rayon::current_num_threads())
    } else {
        gemm::Parallelism::None
    }
}
