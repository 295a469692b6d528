//! Tensor-level implementations of the IR ops on dense row-major f32.
//!
//! Shapes come from the verified graph, so the index arithmetic here trusts
//! them (the interpreter re-checks inputs and weights against the graph
//! before running).

use rayon::prelude::*;

use super::device::{self, Accumulation};
use super::kernels;
use super::products::{self, Mat};
use super::Tensor;
use ipuc_core::ir::DType;

/// Row-major strides of `dims`.
pub fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// Strides of `dims` as seen from the broadcast shape `out` (0 on broadcast
/// or missing leading axes).
fn broadcast_strides(dims: &[usize], out: &[usize]) -> Vec<usize> {
    let own = strides(dims);
    let lead = out.len() - dims.len();
    (0..out.len())
        .map(|i| {
            if i < lead || dims[i - lead] == 1 {
                0
            } else {
                own[i - lead]
            }
        })
        .collect()
}

/// Offset into an operand for flat index `flat` of the broadcast shape.
fn offset_of(mut flat: usize, out: &[usize], bstrides: &[usize]) -> usize {
    let mut off = 0;
    for i in (0..out.len()).rev() {
        let d = out[i].max(1);
        off += (flat % d) * bstrides[i];
        flat /= d;
    }
    off
}

/// Elementwise `a + b` with numpy broadcasting to `out_dims`.
pub fn add(a: &Tensor, b: &Tensor, out_dims: &[usize]) -> Vec<f32> {
    let total: usize = out_dims.iter().product();
    let (x, y) = (&a.data[..], &b.data[..]);
    if a.shape == out_dims && b.shape == out_dims {
        let mut out = vec![0f32; total];
        out.par_iter_mut()
            .zip(x.par_iter().zip(y.par_iter()))
            .for_each(|(o, (p, q))| *o = p + q);
        return out;
    }
    // Common case: one operand equals the output, the other repeats with
    // period `y.len()` (a bias `[D]`, a position table `[T, D]`).
    let suffix_of = |small: &[usize]| -> bool {
        small.len() <= out_dims.len()
            && small
                .iter()
                .zip(&out_dims[out_dims.len() - small.len()..])
                .all(|(s, o)| s == o)
    };
    if a.shape == out_dims && suffix_of(&b.shape) && !y.is_empty() {
        let mut out = x.to_vec();
        out.par_chunks_mut(y.len()).for_each(|c| {
            for (o, q) in c.iter_mut().zip(y) {
                *o += q;
            }
        });
        return out;
    }
    if b.shape == out_dims && suffix_of(&a.shape) && !x.is_empty() {
        let mut out = y.to_vec();
        out.par_chunks_mut(x.len()).for_each(|c| {
            for (o, p) in c.iter_mut().zip(x) {
                *o += p;
            }
        });
        return out;
    }
    let sa = broadcast_strides(&a.shape, out_dims);
    let sb = broadcast_strides(&b.shape, out_dims);
    (0..total)
        .into_par_iter()
        .map(|i| x[offset_of(i, out_dims, &sa)] + y[offset_of(i, out_dims, &sb)])
        .collect()
}

/// Broadcasting elementwise product `a ⊙ b` (LayerScale) with result
/// dims `out_dims`.
pub fn mul(a: &Tensor, b: &Tensor, out_dims: &[usize]) -> Vec<f32> {
    let total: usize = out_dims.iter().product();
    let (x, y) = (&a.data[..], &b.data[..]);
    let sa = broadcast_strides(&a.shape, out_dims);
    let sb = broadcast_strides(&b.shape, out_dims);
    (0..total)
        .into_par_iter()
        .map(|i| x[offset_of(i, out_dims, &sa)] * y[offset_of(i, out_dims, &sb)])
        .collect()
}

/// `acc += other` where `acc` already has the broadcast result shape
/// `out_dims`.
pub fn add_assign(acc: &mut [f32], out_dims: &[usize], other: &Tensor) {
    let y = &other.data[..];
    if y.is_empty() {
        return;
    }
    let is_suffix = other.shape.len() <= out_dims.len()
        && other
            .shape
            .iter()
            .zip(&out_dims[out_dims.len() - other.shape.len()..])
            .all(|(s, o)| s == o);
    if is_suffix {
        // Same shape (period = whole tensor) or a repeating bias/table.
        acc.par_chunks_mut(y.len()).for_each(|c| {
            for (o, q) in c.iter_mut().zip(y) {
                *o += q;
            }
        });
        return;
    }
    let sb = broadcast_strides(&other.shape, out_dims);
    acc.par_iter_mut()
        .enumerate()
        .for_each(|(i, o)| *o += y[offset_of(i, out_dims, &sb)]);
}

/// Batched matmul with numpy-broadcast batch dims. `a` is `[.., M, K]` (or
/// `[.., K, M]` transposed), `b` is `[.., K, N]` (or `[.., N, K]`).
pub fn matmul(
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    out_dims: &[usize],
) -> Vec<f32> {
    matmul_with(a, b, (transpose_a, transpose_b), out_dims, Product::Exact)
}

/// How a matmul accumulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Product {
    /// In F32 (the FP32 reference).
    Exact,
    /// As the device's AMP accumulates ([`device::split_product`]: partials
    /// rounded after every K micro-group), in `k_parts` sequences over K,
    /// each from zero, summed in F32 in part order — as a K-split plan
    /// computes it.
    Device { how: Accumulation, k_parts: u32 },
}

/// [`matmul`] accumulating as `product` says.
pub fn matmul_with(
    a: &Tensor,
    b: &Tensor,
    (transpose_a, transpose_b): (bool, bool),
    out_dims: &[usize],
    product: Product,
) -> Vec<f32> {
    let (ar, br, or) = (a.shape.len(), b.shape.len(), out_dims.len());
    let (m, n) = (out_dims[or - 2], out_dims[or - 1]);
    let k = if transpose_a {
        a.shape[ar - 2]
    } else {
        a.shape[ar - 1]
    };
    let lead = &out_dims[..or - 2];
    let batch: usize = lead.iter().product();
    let a_lead = &a.shape[..ar - 2];
    let b_lead = &b.shape[..br - 2];
    let b_batch: usize = b_lead.iter().product();
    let a_mat = m * k;
    let b_mat = k * n;
    let a_view = |off: usize| {
        if transpose_a {
            Mat::transposed(&a.data, off, m)
        } else {
            Mat::rows(&a.data, off, k)
        }
    };
    let b_view = |off: usize| {
        if transpose_b {
            Mat::transposed(&b.data, off, k)
        } else {
            Mat::rows(&b.data, off, n)
        }
    };
    let mut out = vec![0f32; batch * m * n];
    // One shared weight and a dense, untransposed batch of rows: fold the
    // batch into M and run a single large product.
    let a_full = a_lead.len() == lead.len() && a_lead == lead;
    let sa = broadcast_strides(a_lead, lead);
    let sb = broadcast_strides(b_lead, lead);
    if let Product::Device { how, k_parts } = product {
        // An element depends only on its row, column and K sequence, so
        // folding or blocking cannot change a bit; one product per batch
        // index keeps this simple.
        for (i, c) in out.chunks_mut(m * n).enumerate() {
            c.copy_from_slice(&device::split_product(
                how,
                (m, n, k),
                k_parts as usize,
                a_view(offset_of(i, lead, &sa) * a_mat),
                b_view(offset_of(i, lead, &sb) * b_mat),
            ));
        }
        return out;
    }
    if b_batch == 1 && !transpose_a && a_full {
        products::product((batch * m, n, k), a_view(0), b_view(0), &mut out, 1.0, true);
        return out;
    }
    products::batched(
        batch,
        (m, n, k),
        |i| a_view(offset_of(i, lead, &sa) * a_mat),
        |i| b_view(offset_of(i, lead, &sb) * b_mat),
        &mut out,
    );
    out
}

/// Attention as the device computes it: operands in `dtype`, its key axis
/// split into `key_parts` blocks ([`device::attention_head`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceAttention {
    pub dtype: DType,
    pub key_parts: u32,
}

/// Non-causal scaled dot-product attention per leading index:
/// `softmax(q·kᵀ·scale)·v`, leading dims broadcast to `out_dims`. In F32
/// with this module's kernels, or with `device`, through the device's
/// attention arithmetic ([`device::attention_head`]): a query row's result
/// depends only on its keys and their split, so the query blocking the
/// plan chose does not matter.
pub fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f32,
    out_dims: &[usize],
    device: Option<DeviceAttention>,
) -> Vec<f32> {
    let (qr, kr, vr, or) = (q.shape.len(), k.shape.len(), v.shape.len(), out_dims.len());
    let (sq, dk) = (q.shape[qr - 2], q.shape[qr - 1]);
    let sk = k.shape[kr - 2];
    let dv = v.shape[vr - 1];
    let lead = &out_dims[..or - 2];
    let batch: usize = lead.iter().product();
    let sqs = broadcast_strides(&q.shape[..qr - 2], lead);
    let sks = broadcast_strides(&k.shape[..kr - 2], lead);
    let svs = broadcast_strides(&v.shape[..vr - 2], lead);
    let mut out = vec![0f32; batch * sq * dv];
    if sq * dv == 0 {
        return out;
    }
    let one_head = |i: usize, o: &mut [f32], parallel: bool| {
        let qo = offset_of(i, lead, &sqs) * sq * dk;
        let ko = offset_of(i, lead, &sks) * sk * dk;
        let vo = offset_of(i, lead, &svs) * sk * dv;
        let head = (
            &q.data[qo..qo + sq * dk],
            &k.data[ko..ko + sk * dk],
            &v.data[vo..vo + sk * dv],
        );
        if let Some(d) = device {
            o.copy_from_slice(&device::attention_head(
                d.dtype,
                d.key_parts as usize,
                head,
                (sq, sk, dk),
                scale,
            ));
            return;
        }
        let mut scores = vec![0f32; sq * sk];
        products::product(
            (sq, sk, dk),
            Mat::rows(head.0, 0, dk),
            Mat::transposed(head.1, 0, dk),
            &mut scores,
            scale,
            parallel,
        );
        for row in scores.chunks_mut(sk) {
            kernels::softmax_row(row);
        }
        products::product(
            (sq, dv, sk),
            Mat::rows(&scores, 0, sk),
            Mat::rows(head.2, 0, dv),
            o,
            1.0,
            parallel,
        );
    };
    if batch > 1 {
        out.par_chunks_mut(sq * dv)
            .enumerate()
            .for_each(|(i, o)| one_head(i, o, false));
    } else {
        one_head(0, &mut out, true);
    }
    out
}

/// `[.., S, H·Dh]` → `[.., H, S, Dh]`.
pub fn split_heads(x: &Tensor, heads: usize) -> Vec<f32> {
    let r = x.shape.len();
    let (s, w) = (x.shape[r - 2], x.shape[r - 1]);
    let lead: usize = x.shape[..r - 2].iter().product();
    move_heads(&x.data, lead, (heads, s, w / heads, w), true)
}

/// `[.., H, S, Dh]` → `[.., S, H·Dh]`.
pub fn merge_heads(x: &Tensor) -> Vec<f32> {
    let r = x.shape.len();
    let (heads, s, dh) = (x.shape[r - 3], x.shape[r - 2], x.shape[r - 1]);
    let lead: usize = x.shape[..r - 3].iter().product();
    move_heads(&x.data, lead, (heads, s, dh, heads * dh), false)
}

/// For each of `lead` blocks of `s · w` values, moves every head's
/// `dh`-wide rows between the token-major `[S, W]` (rows `w` apart) and the
/// head-major `[H, S, Dh]` layout (`to_heads`: token-major in, head-major
/// out).
fn move_heads(
    data: &[f32],
    lead: usize,
    (heads, s, dh, w): (usize, usize, usize, usize),
    to_heads: bool,
) -> Vec<f32> {
    let mut out = vec![0f32; data.len()];
    out.par_chunks_mut(s * w)
        .enumerate()
        .take(lead)
        .for_each(|(l, o)| {
            let src = &data[l * s * w..(l + 1) * s * w];
            for h in 0..heads {
                for t in 0..s {
                    let token_major = t * w + h * dh;
                    let head_major = (h * s + t) * dh;
                    let (from, to) = if to_heads {
                        (token_major, head_major)
                    } else {
                        (head_major, token_major)
                    };
                    o[to..to + dh].copy_from_slice(&src[from..from + dh]);
                }
            }
        });
    out
}

/// General axis permutation.
pub fn transpose(x: &Tensor, perm: &[usize]) -> Vec<f32> {
    let in_strides = strides(&x.shape);
    let out_dims: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    let src_strides: Vec<usize> = perm.iter().map(|&p| in_strides[p]).collect();
    let total = x.data.len();
    (0..total)
        .into_par_iter()
        .map(|i| x.data[offset_of(i, &out_dims, &src_strides)])
        .collect()
}

/// Elements `start..end` of `axis`.
pub fn slice(x: &Tensor, axis: usize, start: usize, end: usize) -> Vec<f32> {
    let outer: usize = x.shape[..axis].iter().product();
    let inner: usize = x.shape[axis + 1..].iter().product();
    let dim = x.shape[axis];
    let mut out = Vec::with_capacity(outer * (end - start) * inner);
    for o in 0..outer {
        let base = o * dim * inner;
        out.extend_from_slice(&x.data[base + start * inner..base + end * inner]);
    }
    out
}

/// Concatenation along `axis`.
pub fn concat(xs: &[&Tensor], axis: usize) -> Vec<f32> {
    let first = xs[0];
    let outer: usize = first.shape[..axis].iter().product();
    let inner: usize = first.shape[axis + 1..].iter().product();
    let mut out = Vec::with_capacity(xs.iter().map(|t| t.data.len()).sum());
    for o in 0..outer {
        for t in xs {
            let run = t.shape[axis] * inner;
            out.extend_from_slice(&t.data[o * run..(o + 1) * run]);
        }
    }
    out
}

/// im2col of a `p`×`p` stride-`p` valid convolution: `[B, C, H, W]` →
/// `[B, (H/p)·(W/p), C·p·p]`, features in (channel, ky, kx) order.
pub fn im2col(x: &Tensor, p: usize) -> Vec<f32> {
    let (b, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let (ph, pw) = (h / p, w / p);
    let feat = c * p * p;
    let mut out = vec![0f32; b * ph * pw * feat];
    out.par_chunks_mut(feat).enumerate().for_each(|(tok, o)| {
        let (bi, t) = (tok / (ph * pw), tok % (ph * pw));
        let (py, px) = (t / pw, t % pw);
        for ch in 0..c {
            for ky in 0..p {
                let src = ((bi * c + ch) * h + py * p + ky) * w + px * p;
                let dst = (ch * p + ky) * p;
                o[dst..dst + p].copy_from_slice(&x.data[src..src + p]);
            }
        }
    });
    out
}
