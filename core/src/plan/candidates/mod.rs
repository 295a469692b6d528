//! Candidate [`OpPlan`]s for each IR op kind.
//!
//! Generators see each operand's 2-D view and its *current* layout (where
//! the producer put it; `None` for a parameter or input whose storage the
//! consumer chooses). They return several implementations; the beam search
//! picks among them. Views (head split/merge, reshape) reuse the operand's
//! buffer when its current layout allows, data movers (slice, concat,
//! im2col) read operands where they are, compute ops state the layouts they
//! need and leave re-layouts to [`super::relayout`].

mod attention;
mod gemm;
mod local;
mod movement;
mod views;

pub use gemm::k_parts;

use alloc::vec::Vec;

use super::error::{OpRef, PlanError, PlanResult};
use super::layout::{Layout, LayoutError};
use super::opplan::OpPlan;
use crate::ir::{DType, Graph, OpId, OpKind, TensorType};
use ipuc_target::ipu21::topology::LogicalTile;

/// A value seen as the row-major matrix `[rows, cols]` the planner lays out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorView {
    /// Product of all dims but the last (1 for rank ≤ 1).
    pub rows: u32,
    /// Last dim (1 for rank 0).
    pub cols: u32,
    /// Element type.
    pub dtype: DType,
}

impl TensorView {
    /// The 2-D view of `ty`, or `None` if a dimension exceeds `u32`.
    pub fn of(ty: &TensorType) -> Option<Self> {
        let dims = ty.shape.dims();
        let cols = dims.last().copied().unwrap_or(1);
        let rows = dims
            .iter()
            .rev()
            .skip(1)
            .try_fold(1usize, |a, &d| a.checked_mul(d))?;
        Some(TensorView {
            rows: u32::try_from(rows).ok()?,
            cols: u32::try_from(cols).ok()?,
            dtype: ty.dtype,
        })
    }

    /// Bytes per element.
    pub fn elem(&self) -> u32 {
        self.dtype.size_bytes() as u32
    }
}

/// What a generator knows about one operand.
#[derive(Clone, Debug, PartialEq)]
pub struct OperandInfo {
    /// Its type.
    pub ty: TensorType,
    /// Its 2-D view.
    pub view: TensorView,
    /// Where it is now; `None` when the consumer chooses its storage.
    pub current: Option<Layout>,
}

/// Planner-wide settings generators need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Tiles available (logical `0..tiles`).
    pub tiles: u32,
    /// Fewest key/value blocks an attention plan may use (1 allows every
    /// plan; more forces key-split attention, e.g. to test it on small models).
    pub min_key_parts: u32,
    /// Also offer each GEMM grid that uses fewer than `tiles` tiles placed
    /// to end at the last tile. Every other layout starts at tile 0, so the
    /// low tiles carry the code (and staging) of every narrow op while the
    /// top ones hold little beyond balanced weight storage: a GEMM on the
    /// top tiles can fit where one from tile 0 does not (So400m at 27
    /// layers without fused QKV: the head's `kv_proj` on 1,152 tiles).
    pub gemm_far_end: bool,
}

/// Candidate implementations of `op`.
pub fn candidates(
    graph: &Graph,
    op: OpId,
    operands: &[OperandInfo],
    out: &TensorType,
    cfg: &GenConfig,
) -> PlanResult<Vec<OpPlan>> {
    let o = graph
        .op(op)
        .ok_or(PlanError::MalformedGraph { what: "op" })?;
    let op_ref = OpRef::of(graph, op);
    let out_view = TensorView::of(out).ok_or_else(|| PlanError::Unsupported {
        op: op_ref.clone(),
        op_name: o.mnemonic(),
        reason: "dimension exceeds u32",
    })?;
    let cx = GenCx {
        op,
        op_ref: &op_ref,
        op_name: o.mnemonic(),
        operands,
        out: out_view,
        out_ty: out,
        cfg: *cfg,
    };
    let plans = match o.kind() {
        OpKind::MatMul(m) => gemm::plans(&cx, m)?,
        OpKind::Add => local::add(&cx)?,
        OpKind::Mul => local::mul(&cx)?,
        OpKind::Activation { function, .. } => {
            let function = *function;
            local::unary(&cx, move |elements, dtype, out| {
                ipuc_target::kernel::Kernel::Activation {
                    elements,
                    dtype,
                    function,
                    out,
                }
            })?
        }
        OpKind::LayerNorm { eps, .. } => local::layer_norm(&cx, *eps)?,
        OpKind::GeluTanh { .. } => local::unary(&cx, |elements, dtype, out| {
            ipuc_target::kernel::Kernel::Gelu {
                elements,
                dtype,
                out,
            }
        })?,
        OpKind::Cast { to } => {
            let to = *to;
            local::unary(&cx, move |elements, from, _| {
                ipuc_target::kernel::Kernel::Cast { elements, from, to }
            })?
        }
        OpKind::Softmax => local::softmax(&cx)?,
        OpKind::Attention { scale } => attention::plans(&cx, *scale)?,
        OpKind::SplitHeads { heads } => views::split_heads(&cx, *heads)?,
        OpKind::MergeHeads => views::merge_heads(&cx)?,
        OpKind::Reshape { .. } => views::reshape(&cx)?,
        OpKind::Transpose { perm } => views::transpose(&cx, perm)?,
        OpKind::Slice { axis, start, end } => movement::slice(&cx, *axis, *start, *end)?,
        OpKind::Concat { axis } => movement::concat(&cx, *axis)?,
        OpKind::Im2ColPatches { patch } => movement::im2col(&cx, *patch)?,
        OpKind::Input { .. }
        | OpKind::Parameter { .. }
        | OpKind::Constant { .. }
        | OpKind::Repeat(_) => {
            return Err(PlanError::Unsupported {
                op: op_ref.clone(),
                op_name: o.mnemonic(),
                reason: "not a planned operation",
            })
        }
    };
    if plans.is_empty() {
        return Err(PlanError::NoCandidate {
            op: op_ref.clone(),
            op_name: o.mnemonic(),
        });
    }
    for p in &plans {
        p.output.validate().map_err(|error| PlanError::Layout {
            op: op_ref.clone(),
            error,
        })?;
        for operand in &p.operands {
            operand
                .layout
                .validate()
                .map_err(|error| PlanError::Layout {
                    op: op_ref.clone(),
                    error,
                })?;
        }
    }
    Ok(plans)
}

/// Shared context of one generator call.
pub(crate) struct GenCx<'a> {
    pub op: OpId,
    /// The op with its model name, for errors.
    pub op_ref: &'a OpRef,
    pub op_name: &'static str,
    pub operands: &'a [OperandInfo],
    pub out: TensorView,
    pub out_ty: &'a TensorType,
    pub cfg: GenConfig,
}

impl GenCx<'_> {
    /// A block's tile from layout arithmetic, checked into the planner's
    /// index (a tile past the machine is a layout error of this op).
    pub fn tile(&self, tile: u32) -> PlanResult<LogicalTile> {
        LogicalTile::new(tile).map_err(|_| PlanError::Layout {
            op: self.op_ref.clone(),
            error: LayoutError::TileOutOfRange { max_tile: tile },
        })
    }

    pub fn unsupported(&self, reason: &'static str) -> PlanError {
        PlanError::Unsupported {
            op: self.op_ref.clone(),
            op_name: self.op_name,
            reason,
        }
    }

    pub fn operand(&self, i: usize) -> PlanResult<&OperandInfo> {
        self.operands
            .get(i)
            .ok_or(PlanError::MalformedGraph { what: "operand" })
    }

    /// The operand's current layout, or the default storage the planner
    /// gives values nobody has placed yet.
    pub fn current_or_default(&self, i: usize) -> PlanResult<Layout> {
        let o = self.operand(i)?;
        Ok(o.current
            .unwrap_or_else(|| default_storage(&o.view, self.cfg.tiles)))
    }
}

/// Row-split part counts worth trying for `rows` rows on `tiles` tiles.
pub(crate) fn row_part_options(rows: u32, tiles: u32) -> Vec<u32> {
    let max = rows.min(tiles).max(1);
    let mut v: Vec<u32> = [1u32, 2, 4, 8]
        .iter()
        .map(|&per| rows.div_ceil(per).clamp(1, max))
        .chain([max, (max / 2).max(1)])
        .collect();
    v.sort_unstable();
    v.dedup();
    v.retain(|&p| p * 16 >= max || p == max);
    v
}

/// Where a value nobody has placed yet is kept: balanced over all tiles (a
/// one-row tensor in 8-byte chunks, a matrix as the 2-D block grid with the
/// smallest largest block), so pending parameters never pile up on a few tiles.
pub fn default_storage(view: &TensorView, tiles: u32) -> Layout {
    let elem = view.elem().max(1);
    // Chunks of 8 bytes (two words) so vectors spread instead of piling up.
    let grain = (8 / elem).max(1);
    if view.rows <= 1 {
        return Layout::balanced_linear(1, view.cols, grain, 0, tiles);
    }
    let col_units = view.cols.div_ceil(grain).max(1);
    // Smallest largest block; among equals, more tiles used.
    let mut best = (u64::MAX, 0u64, 1u32, 1u32);
    for rp in 1..=view.rows.min(tiles).max(1) {
        let cp = (tiles / rp).min(col_units).max(1);
        let block =
            view.rows.div_ceil(rp) as u64 * (col_units.div_ceil(cp) * grain).min(view.cols) as u64;
        let used = rp as u64 * cp as u64;
        if block < best.0 || (block == best.0 && used > best.1) {
            best = (block, used, rp, cp);
        }
    }
    let (_, _, rp, cp) = best;
    Layout {
        first_tile: 0,
        rows: super::layout::AxisSplit::parts(view.rows, 1, rp, cp),
        cols: super::layout::AxisSplit::parts(view.cols, grain, cp, 1),
        replicas: 1,
        replica_stride: 0,
    }
}
