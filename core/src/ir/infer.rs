//! Result-type inference: the one place that states each op's shape and
//! dtype rules. The builder uses it to type new ops; the verifier re-runs it
//! and compares with the stored result types.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use bitvec::vec::BitVec;

use super::error::{IrError, IrResult};
use super::id::{OpId, ValueId};
use super::op::{MatMul, OpKind, Repeat};
use super::types::{DType, Shape, TensorType};

/// An operand as inference sees it.
pub(crate) type Operand<'a> = (ValueId, &'a TensorType);

struct Ctx {
    op: OpId,
    name: &'static str,
}

impl Ctx {
    fn count(&self, operands: &[Operand<'_>], expected: usize) -> IrResult<()> {
        if operands.len() == expected {
            Ok(())
        } else {
            Err(IrError::OperandCount {
                op: self.op,
                op_name: self.name,
                expected,
                found: operands.len(),
            })
        }
    }

    fn arithmetic(&self, (value, ty): Operand<'_>) -> IrResult<()> {
        if ty.dtype.is_arithmetic() {
            Ok(())
        } else {
            Err(IrError::UnsupportedDType {
                op: self.op,
                op_name: self.name,
                value: Some(value),
                dtype: ty.dtype,
                accepts: "f32 or f16",
            })
        }
    }

    fn same_dtype(&self, reference: Operand<'_>, (value, ty): Operand<'_>) -> IrResult<()> {
        if ty.dtype == reference.1.dtype {
            Ok(())
        } else {
            Err(IrError::DTypeMismatch {
                op: self.op,
                op_name: self.name,
                value,
                expected: reference.1.dtype,
                found: ty.dtype,
            })
        }
    }

    fn min_rank(&self, (value, ty): Operand<'_>, min: usize) -> IrResult<()> {
        if ty.shape.rank() >= min {
            Ok(())
        } else {
            Err(IrError::RankTooSmall {
                op: self.op,
                op_name: self.name,
                value,
                min,
                found: ty.shape.rank(),
            })
        }
    }

    fn rank(&self, (value, ty): Operand<'_>, expected: usize) -> IrResult<()> {
        if ty.shape.rank() == expected {
            Ok(())
        } else {
            Err(IrError::Rank {
                op: self.op,
                op_name: self.name,
                value,
                expected,
                found: ty.shape.rank(),
            })
        }
    }

    fn dim(&self, (value, ty): Operand<'_>, axis: usize, expected: usize) -> IrResult<()> {
        let found = ty.shape.dims()[axis];
        if found == expected {
            Ok(())
        } else {
            Err(IrError::Dim {
                op: self.op,
                op_name: self.name,
                value,
                axis,
                expected,
                found,
            })
        }
    }

    /// The result `ty` of an op with an optional FP8 `store` type: stored
    /// as that type when given (it must be FP8 with a valid scale).
    fn stored_as(
        &self,
        mut ty: Vec<TensorType>,
        store: Option<DType>,
    ) -> IrResult<Vec<TensorType>> {
        if let Some(store) = store {
            if !(store.is_fp8() && store.is_valid()) {
                return Err(self.attr(format!(
                    "store must be an FP8 type with a valid scale, found {store:?}"
                )));
            }
            for t in &mut ty {
                t.dtype = store;
            }
        }
        Ok(ty)
    }

    fn attr(&self, reason: alloc::string::String) -> IrError {
        IrError::InvalidAttribute {
            op: self.op,
            op_name: self.name,
            reason,
        }
    }

    fn broadcast(
        &self,
        lhs: Operand<'_>,
        l: &[usize],
        rhs: Operand<'_>,
        r: &[usize],
    ) -> IrResult<Vec<usize>> {
        broadcast_dims(l, r).ok_or_else(|| IrError::NotBroadcastable {
            op: self.op,
            op_name: self.name,
            lhs: lhs.0,
            lhs_shape: lhs.1.shape.clone(),
            rhs: rhs.0,
            rhs_shape: rhs.1.shape.clone(),
        })
    }
}

/// Numpy broadcasting of two dim lists (trailing-aligned; 1 stretches).
pub fn broadcast_dims(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i < a.len() { a[a.len() - 1 - i] } else { 1 };
        let db = if i < b.len() { b[b.len() - 1 - i] } else { 1 };
        out[rank - 1 - i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

/// A single result of type `ty`.
fn one(ty: TensorType) -> IrResult<Vec<TensorType>> {
    Ok(vec![ty])
}

fn checked_count(value: ValueId, shape: &Shape) -> IrResult<usize> {
    shape.element_count().ok_or_else(|| IrError::ShapeOverflow {
        value,
        shape: shape.clone(),
    })
}

/// Result types of `kind` applied to `operands` (ids are for messages).
pub(crate) fn infer(
    op: OpId,
    kind: &OpKind,
    operands: &[Operand<'_>],
) -> IrResult<Vec<TensorType>> {
    let cx = Ctx {
        op,
        name: kind.mnemonic(),
    };
    match kind {
        OpKind::Input { ty, .. } | OpKind::Parameter { ty, .. } => {
            cx.count(operands, 0)?;
            one(ty.clone())
        }
        OpKind::Constant { ty, values } => {
            cx.count(operands, 0)?;
            let expected = ty.shape.element_count().unwrap_or(usize::MAX);
            if values.len() != expected {
                return Err(cx.attr(format!(
                    "constant of type {ty} needs {expected} values, found {}",
                    values.len()
                )));
            }
            one(ty.clone())
        }
        OpKind::MatMul(mm) => infer_matmul(&cx, mm, operands),
        OpKind::Add | OpKind::Mul => {
            cx.count(operands, 2)?;
            let (a, b) = (operands[0], operands[1]);
            cx.arithmetic(a)?;
            cx.same_dtype(a, b)?;
            let dims = cx.broadcast(a, a.1.shape.dims(), b, b.1.shape.dims())?;
            one(TensorType::new(a.1.dtype, dims))
        }
        OpKind::LayerNorm { eps, store } => {
            let ty = infer_layer_norm(&cx, *eps, operands)?;
            cx.stored_as(ty, *store)
        }
        OpKind::GeluTanh { store } => {
            cx.count(operands, 1)?;
            cx.arithmetic(operands[0])?;
            cx.stored_as(vec![operands[0].1.clone()], *store)
        }
        OpKind::Activation { store, .. } => {
            cx.count(operands, 1)?;
            cx.arithmetic(operands[0])?;
            cx.stored_as(vec![operands[0].1.clone()], *store)
        }
        OpKind::Softmax => {
            cx.count(operands, 1)?;
            cx.arithmetic(operands[0])?;
            cx.min_rank(operands[0], 1)?;
            one(operands[0].1.clone())
        }
        OpKind::Attention { scale } => infer_attention(&cx, *scale, operands),
        OpKind::SplitHeads { heads } => infer_split_heads(&cx, *heads, operands),
        OpKind::MergeHeads => infer_merge_heads(&cx, operands),
        OpKind::Reshape { shape } => infer_reshape(&cx, shape, operands),
        OpKind::Transpose { perm } => infer_transpose(&cx, perm, operands),
        OpKind::Slice { axis, start, end } => infer_slice(&cx, *axis, *start, *end, operands),
        OpKind::Concat { axis } => infer_concat(&cx, *axis, operands),
        OpKind::Im2ColPatches { patch } => infer_im2col(&cx, *patch, operands),
        OpKind::Cast { to } => {
            cx.count(operands, 1)?;
            if !to.is_valid() {
                return Err(IrError::UnsupportedDType {
                    op,
                    op_name: cx.name,
                    value: None,
                    dtype: *to,
                    accepts: "FP8 scales in [-32, 31]",
                });
            }
            one(TensorType::new(*to, operands[0].1.shape.clone()))
        }
        OpKind::Repeat(r) => infer_repeat(&cx, r, operands),
    }
}

/// A layer norm over the last axis: `x`, then a scale and a bias as wide as it.
fn infer_layer_norm(cx: &Ctx, eps: f32, operands: &[Operand<'_>]) -> IrResult<Vec<TensorType>> {
    if !(eps.is_finite() && eps > 0.0) {
        return Err(cx.attr(format!("eps must be finite and > 0, found {eps:?}")));
    }
    cx.count(operands, 3)?;
    let x = operands[0];
    cx.arithmetic(x)?;
    cx.min_rank(x, 1)?;
    let width = x.1.shape.dims()[x.1.shape.rank() - 1];
    for &p in &operands[1..] {
        cx.arithmetic(p)?;
        cx.rank(p, 1)?;
        cx.dim(p, 0, width)?;
    }
    one(x.1.clone())
}

/// `[.., s, width]` to `[.., heads, s, width / heads]`.
fn infer_split_heads(
    cx: &Ctx,
    heads: usize,
    operands: &[Operand<'_>],
) -> IrResult<Vec<TensorType>> {
    cx.count(operands, 1)?;
    let x = operands[0];
    cx.min_rank(x, 2)?;
    let d = x.1.shape.dims();
    let (lead, s, width) = (&d[..d.len() - 2], d[d.len() - 2], d[d.len() - 1]);
    if heads == 0 || width % heads != 0 {
        return Err(cx.attr(format!(
            "{heads} heads do not divide the last dim {width} of {}",
            x.0
        )));
    }
    let mut out = lead.to_vec();
    out.extend_from_slice(&[heads, s, width / heads]);
    one(TensorType::new(x.1.dtype, out))
}

/// `[.., heads, s, d]` back to `[.., s, heads * d]`.
fn infer_merge_heads(cx: &Ctx, operands: &[Operand<'_>]) -> IrResult<Vec<TensorType>> {
    cx.count(operands, 1)?;
    let x = operands[0];
    cx.min_rank(x, 3)?;
    let d = x.1.shape.dims();
    let n = d.len();
    let width = d[n - 3]
        .checked_mul(d[n - 1])
        .ok_or_else(|| IrError::ShapeOverflow {
            value: x.0,
            shape: x.1.shape.clone(),
        })?;
    let mut out = d[..n - 3].to_vec();
    out.extend_from_slice(&[d[n - 2], width]);
    one(TensorType::new(x.1.dtype, out))
}

/// The same elements under another shape.
fn infer_reshape(cx: &Ctx, shape: &Shape, operands: &[Operand<'_>]) -> IrResult<Vec<TensorType>> {
    cx.count(operands, 1)?;
    let x = operands[0];
    let have = checked_count(x.0, &x.1.shape)?;
    let want = shape
        .element_count()
        .ok_or_else(|| cx.attr(format!("target shape {shape} overflows")))?;
    if have != want {
        return Err(IrError::ElementCount {
            op: cx.op,
            op_name: cx.name,
            value: x.0,
            expected: want,
            found: have,
        });
    }
    one(TensorType::new(x.1.dtype, shape.clone()))
}

/// Axes reordered by a permutation naming each axis once.
fn infer_transpose(
    cx: &Ctx,
    perm: &[usize],
    operands: &[Operand<'_>],
) -> IrResult<Vec<TensorType>> {
    cx.count(operands, 1)?;
    let x = operands[0];
    let d = x.1.shape.dims();
    // A bit per axis: each may be named once.
    let mut seen = BitVec::<usize>::repeat(false, d.len());
    let valid =
        perm.len() == d.len() && perm.iter().all(|&p| p < d.len() && !seen.replace(p, true));
    if !valid {
        return Err(cx.attr(format!(
            "{perm:?} is not a permutation of the {} axes of {}",
            d.len(),
            x.0
        )));
    }
    one(TensorType::new(
        x.1.dtype,
        perm.iter().map(|&p| d[p]).collect::<Vec<_>>(),
    ))
}

/// A non-empty `start..end` range of one axis.
fn infer_slice(
    cx: &Ctx,
    axis: usize,
    start: usize,
    end: usize,
    operands: &[Operand<'_>],
) -> IrResult<Vec<TensorType>> {
    cx.count(operands, 1)?;
    let x = operands[0];
    let d = x.1.shape.dims();
    let Some(&dim) = d.get(axis) else {
        return Err(cx.attr(format!(
            "axis {axis} out of range for rank {} ({})",
            d.len(),
            x.0
        )));
    };
    if !(start < end && end <= dim) {
        return Err(cx.attr(format!(
            "slice {start}..{end} is empty or exceeds dim {axis} = {dim} of {}",
            x.0
        )));
    }
    let mut out = d.to_vec();
    out[axis] = end - start;
    one(TensorType::new(x.1.dtype, out))
}

/// Operands of one dtype and rank, equal but along `axis`, joined along it.
fn infer_concat(cx: &Ctx, axis: usize, operands: &[Operand<'_>]) -> IrResult<Vec<TensorType>> {
    let Some(&first) = operands.first() else {
        return Err(IrError::OperandCount {
            op: cx.op,
            op_name: cx.name,
            expected: 1,
            found: 0,
        });
    };
    let rank = first.1.shape.rank();
    if axis >= rank {
        return Err(cx.attr(format!(
            "axis {axis} out of range for rank {rank} ({})",
            first.0
        )));
    }
    let mut out = first.1.shape.dims().to_vec();
    for &x in &operands[1..] {
        cx.same_dtype(first, x)?;
        cx.rank(x, rank)?;
        for (i, &want) in first.1.shape.dims().iter().enumerate() {
            if i != axis {
                cx.dim(x, i, want)?;
            }
        }
        out[axis] = out[axis]
            .checked_add(x.1.shape.dims()[axis])
            .ok_or_else(|| cx.attr(format!("concatenated dim {axis} overflows")))?;
    }
    one(TensorType::new(first.1.dtype, out))
}

/// `[b, c, h, w]` images cut into `patch`-square patches: `[b, patches, c * patch^2]`.
fn infer_im2col(cx: &Ctx, patch: usize, operands: &[Operand<'_>]) -> IrResult<Vec<TensorType>> {
    cx.count(operands, 1)?;
    let x = operands[0];
    cx.rank(x, 4)?;
    let d = x.1.shape.dims();
    let (b, c, h, w) = (d[0], d[1], d[2], d[3]);
    let p = patch;
    if p == 0 || h < p || w < p {
        return Err(cx.attr(format!(
            "patch {p} does not fit the {h}x{w} image of {}",
            x.0
        )));
    }
    let features = c
        .checked_mul(p)
        .and_then(|v| v.checked_mul(p))
        .ok_or_else(|| cx.attr(format!("{c} channels x patch {p}^2 overflows")))?;
    one(TensorType::new(
        x.1.dtype,
        vec![b, (h / p) * (w / p), features],
    ))
}

/// Body rules live in the verifier; results mirror the carried inits.
fn infer_repeat(cx: &Ctx, r: &Repeat, operands: &[Operand<'_>]) -> IrResult<Vec<TensorType>> {
    let carried = r.carried as usize;
    let expected = carried
        .saturating_add(r.invariants as usize)
        .saturating_add((r.sequences as usize).saturating_mul(r.trip_count as usize));
    if operands.len() != expected {
        return Err(IrError::RepeatOperandCount {
            op: cx.op,
            expected,
            found: operands.len(),
        });
    }
    Ok(operands[..carried]
        .iter()
        .map(|(_, ty)| (*ty).clone())
        .collect())
}

fn infer_matmul(cx: &Ctx, mm: &MatMul, operands: &[Operand<'_>]) -> IrResult<Vec<TensorType>> {
    cx.count(operands, 2)?;
    if !mm.out.is_arithmetic() {
        return Err(IrError::UnsupportedDType {
            op: cx.op,
            op_name: cx.name,
            value: None,
            dtype: mm.out,
            accepts: "f32 or f16 results",
        });
    }
    let (a, b) = (operands[0], operands[1]);
    cx.min_rank(a, 2)?;
    cx.min_rank(b, 2)?;
    let (ad, bd) = (a.1.shape.dims(), b.1.shape.dims());
    let (ar, br) = (ad.len(), bd.len());
    let (m, k) = if mm.transpose_a {
        (ad[ar - 1], ad[ar - 2])
    } else {
        (ad[ar - 2], ad[ar - 1])
    };
    let (k_axis, n) = if mm.transpose_b {
        (br - 1, bd[br - 2])
    } else {
        (br - 2, bd[br - 1])
    };
    cx.dim(b, k_axis, k)?;
    let mut out = cx.broadcast(a, &ad[..ar - 2], b, &bd[..br - 2])?;
    out.extend_from_slice(&[m, n]);
    Ok(vec![TensorType::new(mm.out, out)])
}

fn infer_attention(cx: &Ctx, scale: f32, operands: &[Operand<'_>]) -> IrResult<Vec<TensorType>> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(cx.attr(format!("scale must be finite and > 0, found {scale:?}")));
    }
    cx.count(operands, 3)?;
    let (q, k, v) = (operands[0], operands[1], operands[2]);
    cx.arithmetic(q)?;
    cx.same_dtype(q, k)?;
    cx.same_dtype(q, v)?;
    for x in [q, k, v] {
        cx.min_rank(x, 2)?;
    }
    let (qd, kd, vd) = (q.1.shape.dims(), k.1.shape.dims(), v.1.shape.dims());
    let (qr, kr, vr) = (qd.len(), kd.len(), vd.len());
    cx.dim(k, kr - 1, qd[qr - 1])?;
    cx.dim(v, vr - 2, kd[kr - 2])?;
    let lead = cx.broadcast(q, &qd[..qr - 2], k, &kd[..kr - 2])?;
    let mut out = cx.broadcast(q, &lead, v, &vd[..vr - 2])?;
    out.extend_from_slice(&[qd[qr - 2], vd[vr - 1]]);
    Ok(vec![TensorType::new(q.1.dtype, out)])
}
