//! Element-wise and row-wise ops: one kernel call per output block.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::{row_part_options, GenCx};
use crate::ir::DType;
use crate::plan::error::PlanResult;
use crate::plan::layout::{AxisSplit, Layout};
use crate::plan::opplan::{OpPlan, OperandPlan, PlanFamily, PlannedCall, Slot, SlotRef, Stage};
use ipuc_target::ipu21::sram::MemoryClass;
use ipuc_target::kernel::Kernel;

fn at(slot: Slot) -> SlotRef {
    SlotRef { slot, offset: 0 }
}

/// Candidate output layouts: where the operands already are, plus row splits.
fn layout_options(cx: &GenCx<'_>, whole_rows: bool) -> Vec<Layout> {
    let mut v = Vec::new();
    for o in cx.operands {
        if let Some(l) = o.current {
            if o.view.rows == cx.out.rows
                && o.view.cols == cx.out.cols
                && (!whole_rows || l.cols.part_count() == 1)
            {
                v.push(l);
            }
        }
    }
    for p in row_part_options(cx.out.rows, cx.cfg.tiles) {
        v.push(Layout::row_split(cx.out.rows, cx.out.cols, 0, p));
    }
    if !whole_rows {
        // Blocks as even as 8-byte chunks allow over every tile: a costly
        // element-wise op (GELU) on a GEMM's output inherits the column
        // groups' unevenness (So400m fc1: 269 groups over 180 slices, the
        // largest block 2,944 elements against 2,131 on average); the
        // re-layout into this costs far less than the imbalance.
        v.push(super::default_storage(&cx.out, cx.cfg.tiles));
    }
    v.sort();
    v.dedup();
    v
}

fn operand(layout: Layout) -> OperandPlan {
    OperandPlan {
        layout,
        storage: None,
        class: MemoryClass::Standard,
    }
}

/// A one-row operand broadcast over `l`'s row parts, with its blocks matching
/// `l`'s column blocks. `None` when `l`'s rows are two-level (one replica
/// stride cannot express them) or `l` is itself replicated.
fn broadcast_row(l: &Layout) -> Option<Layout> {
    if l.rows.inner > 1 || l.replicas > 1 {
        return None;
    }
    Some(Layout {
        first_tile: l.first_tile,
        rows: AxisSplit::whole(1),
        cols: l.cols,
        replicas: l.rows.part_count(),
        replica_stride: l.rows.outer_stride,
    })
}

/// Storage choices for a broadcast parameter: resident in `req`, or streamed
/// from compact storage ([`compact_storage`]).
fn param_choices(cx: &GenCx<'_>, i: usize, req: Layout) -> Vec<OperandPlan> {
    let info = &cx.operands[i];
    if info.current.is_some() {
        return vec![operand(req)];
    }
    let compact = compact_storage(cx, &info.view);
    if compact == req {
        return vec![operand(req)];
    }
    vec![
        operand(req),
        OperandPlan {
            storage: Some(compact),
            ..operand(req)
        },
    ]
}

/// Bytes of a broadcast parameter each storage tile holds: receivers take
/// the vector from a few long streams rather than from one sender per
/// 8-byte chunk, each of which costs a source switch on every receiver.
const PARAM_STORAGE_CHUNK_BYTES: u32 = 256;

/// Storage for a broadcast vector parameter: `PARAM_STORAGE_CHUNK_BYTES`
/// per tile, starting at a tile that depends on the op (a prime stride, so
/// consecutive ops start far apart), so the parameters of different ops
/// and their iterated sequences spread over the chip.
fn compact_storage(cx: &GenCx<'_>, view: &super::TensorView) -> Layout {
    let elem = view.elem().max(1);
    let grain = (PARAM_STORAGE_CHUNK_BYTES / elem).max(1);
    let tiles = cx.cfg.tiles.max(1);
    let parts = view.cols.div_ceil(grain).clamp(1, tiles);
    let first = (cx.op.as_u32().wrapping_mul(97)) % (tiles - parts + 1);
    Layout::balanced_linear(1, view.cols, grain, first, parts)
}

fn finish(
    cx: &GenCx<'_>,
    operands: Vec<OperandPlan>,
    output: Layout,
    calls: Vec<PlannedCall>,
    note: &str,
) -> OpPlan {
    let stages = vec![Stage::Compute(calls)];
    let cost = OpPlan::stage_cost(&stages);
    let tiles = output.tile_span();
    OpPlan {
        op: cx.op,
        family: PlanFamily::Local { tiles },
        operands,
        output,
        output_class: MemoryClass::Standard,
        output_is_view: false,
        scratch: Vec::new(),
        stages,
        cost,
        summary: format!("{} {note} on {tiles} tiles", cx.op_name),
    }
}

fn sorted(mut calls: Vec<PlannedCall>) -> Vec<PlannedCall> {
    calls.sort_by_key(|c| c.tile);
    calls
}

/// `Add` with equal shapes, or with one operand a single row broadcast.
pub fn add(cx: &GenCx<'_>) -> PlanResult<Vec<OpPlan>> {
    binary(cx, |rows, cols, broadcast_rows, dtype| Kernel::Add {
        rows,
        cols,
        broadcast_rows,
        dtype,
    })
}

/// `Mul` (LayerScale) with the shapes `Add` takes.
pub fn mul(cx: &GenCx<'_>) -> PlanResult<Vec<OpPlan>> {
    binary(cx, |rows, cols, broadcast_rows, dtype| Kernel::Mul {
        rows,
        cols,
        broadcast_rows,
        dtype,
    })
}

/// A commutative element-wise binary op: `kernel(rows, cols, broadcast_rows,
/// dtype)` per output block.
fn binary(
    cx: &GenCx<'_>,
    kernel: impl Fn(u32, u32, bool, DType) -> Kernel,
) -> PlanResult<Vec<OpPlan>> {
    let (a, b) = (cx.operand(0)?.view, cx.operand(1)?.view);
    // Which operand (if any) is the broadcast row.
    let bcast = if a.rows == b.rows && a.cols == b.cols {
        None
    } else if b.rows == 1 && b.cols == cx.out.cols && a.rows == cx.out.rows {
        Some(1usize)
    } else if a.rows == 1 && a.cols == cx.out.cols && b.rows == cx.out.rows {
        Some(0usize)
    } else {
        return Err(cx.unsupported("broadcast other than a single row"));
    };
    let dtype = cx.out.dtype;
    let mut plans = Vec::new();
    for l in layout_options(cx, false) {
        let calls = |l: &Layout| {
            sorted(
                l.placements()
                    .map(|(tile, blk)| {
                        let full = if bcast == Some(0) { 1 } else { 0 };
                        PlannedCall {
                            tile,
                            kernel: kernel(
                                blk.rows.len() as u32,
                                blk.cols.len() as u32,
                                bcast.is_some(),
                                dtype,
                            ),
                            // The kernel takes the full operand first, the broadcast row second.
                            operands: vec![
                                at(Slot::Output),
                                at(Slot::Operand(full)),
                                at(Slot::Operand(1 - full)),
                            ],
                        }
                    })
                    .collect(),
            )
        };
        match bcast {
            None => plans.push(finish(
                cx,
                vec![operand(l), operand(l)],
                l,
                calls(&l),
                "element-wise",
            )),
            Some(i) => {
                let Some(req) = broadcast_row(&l) else {
                    continue;
                };
                for choice in param_choices(cx, i, req) {
                    let mut ops = vec![operand(l), operand(l)];
                    ops[i] = choice;
                    let note = if choice.storage.is_some() {
                        "bias streamed"
                    } else {
                        "bias resident"
                    };
                    plans.push(finish(cx, ops, l, calls(&l), note));
                }
            }
        }
    }
    Ok(plans)
}

/// LayerNorm on whole rows; gamma/beta broadcast to every row block.
pub fn layer_norm(cx: &GenCx<'_>, eps: f32) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?.view;
    let param = cx.operand(1)?.view.dtype;
    if cx.operand(1)?.view.rows != 1 || cx.operand(2)?.view.rows != 1 {
        return Err(cx.unsupported("layer_norm gamma/beta must be vectors"));
    }
    let mut plans = Vec::new();
    for l in layout_options(cx, true) {
        let Some(req) = broadcast_row(&l) else {
            continue;
        };
        let calls = sorted(
            l.placements()
                .map(|(tile, blk)| PlannedCall {
                    tile,
                    kernel: Kernel::LayerNorm {
                        rows: blk.rows.len() as u32,
                        cols: x.cols,
                        eps,
                        dtype: x.dtype,
                        param,
                        out: cx.out.dtype,
                    },
                    operands: vec![
                        at(Slot::Output),
                        at(Slot::Operand(0)),
                        at(Slot::Operand(1)),
                        at(Slot::Operand(2)),
                    ],
                })
                .collect(),
        );
        // Gamma and beta make the same storage choice (both tiny vectors).
        let gammas = param_choices(cx, 1, req);
        let betas = param_choices(cx, 2, req);
        for i in 0..gammas.len().max(betas.len()) {
            let g = &gammas[i.min(gammas.len() - 1)];
            let b = &betas[i.min(betas.len() - 1)];
            let note = if g.storage.is_some() {
                "params streamed"
            } else {
                "params resident"
            };
            plans.push(finish(cx, vec![operand(l), *g, *b], l, calls.clone(), note));
        }
    }
    Ok(plans)
}

/// Row-wise softmax on whole rows.
pub fn softmax(cx: &GenCx<'_>) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?.view;
    Ok(layout_options(cx, true)
        .into_iter()
        .map(|l| {
            let calls = sorted(
                l.placements()
                    .map(|(tile, blk)| PlannedCall {
                        tile,
                        kernel: Kernel::Softmax {
                            rows: blk.rows.len() as u32,
                            cols: x.cols,
                            dtype: x.dtype,
                        },
                        operands: vec![at(Slot::Output), at(Slot::Operand(0))],
                    })
                    .collect(),
            );
            finish(cx, vec![operand(l)], l, calls, "row-wise")
        })
        .collect())
}

/// Element-wise unary op (GELU, cast): `kernel(elements, input dtype, output dtype)`.
pub fn unary(
    cx: &GenCx<'_>,
    kernel: impl Fn(u32, DType, DType) -> Kernel,
) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?.view;
    let out = cx.out.dtype;
    Ok(layout_options(cx, false)
        .into_iter()
        .map(|l| {
            let calls = sorted(
                l.placements()
                    .map(|(tile, blk)| PlannedCall {
                        tile,
                        kernel: kernel(blk.elements() as u32, x.dtype, out),
                        operands: vec![at(Slot::Output), at(Slot::Operand(0))],
                    })
                    .collect(),
            );
            finish(cx, vec![operand(l)], l, calls, "element-wise")
        })
        .collect())
}
