//! Data movers: slice, concat and im2col read their operands where they are
//! and move the needed rectangles (or patch rows) into the result's layout.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::{row_part_options, GenCx};
use crate::plan::error::{PlanError, PlanResult};
use crate::plan::layout::Layout;
use crate::plan::opplan::{
    OpPlan, OperandPlan, PlanFamily, PlannedCall, PlannedDestination, PlannedTransfer, Slot,
    SlotRef,
};
use crate::plan::relayout::{relayout, Relayout, Window};
use ipuc_target::ipu21::sram::MemoryClass;
use ipuc_target::kernel::Kernel;

fn move_plan(
    cx: &GenCx<'_>,
    operands: Vec<Layout>,
    output: Layout,
    moves: Relayout,
    note: &str,
) -> OpPlan {
    let cost = moves.cost();
    OpPlan {
        op: cx.op,
        family: PlanFamily::Move,
        operands: operands
            .into_iter()
            .map(|layout| OperandPlan {
                layout,
                storage: None,
                class: MemoryClass::Standard,
            })
            .collect(),
        output,
        output_class: MemoryClass::Standard,
        output_is_view: false,
        scratch: Vec::new(),
        stages: moves.into_stages(),
        cost,
        summary: format!(
            "{} {note} into {} row blocks",
            cx.op_name,
            output.rows.part_count()
        ),
    }
}

fn output_options(cx: &GenCx<'_>) -> Vec<Layout> {
    row_part_options(cx.out.rows, cx.cfg.tiles)
        .into_iter()
        .map(|p| Layout::row_split(cx.out.rows, cx.out.cols, 0, p))
        .collect()
}

/// Maps an axis of a tensor onto its 2-D view: `Some(true)` = the column
/// axis, `Some(false)` = a row axis with nothing but size-1 dims before it
/// (so the axis range is a row range scaled by `inner`).
fn axis_in_view(dims: &[usize], axis: usize) -> Option<(bool, u32)> {
    if axis + 1 == dims.len() {
        return Some((true, 1));
    }
    if dims.iter().take(axis).any(|&d| d != 1) {
        return None;
    }
    Some((false, rows_inner(dims, axis)?))
}

/// View rows per unit of row axis `axis` (the dims between it and the
/// columns).
fn rows_inner(dims: &[usize], axis: usize) -> Option<u32> {
    let inner: usize = dims
        .iter()
        .take(dims.len().saturating_sub(1))
        .skip(axis + 1)
        .product();
    u32::try_from(inner).ok()
}

/// A row axis behind batch dims (`[B, .., X, .., C]` along `X`): the
/// batches `B·..` before it, each a run of `dims[axis]·inner` view rows.
/// `None` for the column axis or when nothing but size-1 dims lead.
fn batched_row_axis(dims: &[usize], axis: usize) -> Option<(u32, u32)> {
    if axis + 1 >= dims.len() {
        return None;
    }
    let lead: usize = dims.iter().take(axis).product();
    if lead <= 1 {
        return None;
    }
    Some((u32::try_from(lead).ok()?, rows_inner(dims, axis)?))
}

fn unaligned(cx: &GenCx<'_>, e: crate::plan::relayout::Unaligned) -> PlanError {
    PlanError::UnalignedTransfer {
        op: cx.op_ref.clone(),
        row_bytes: e.row_bytes,
    }
}

/// Elements `start..end` along `axis`.
pub fn slice(cx: &GenCx<'_>, axis: usize, start: usize, end: usize) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?;
    if let Some((lead, inner)) = batched_row_axis(x.ty.shape.dims(), axis) {
        return batched_slice(cx, (lead, inner), axis, start..end);
    }
    let (is_col, inner) = axis_in_view(x.ty.shape.dims(), axis)
        .ok_or(cx.unsupported("slice of an axis behind a batch dim"))?;
    let src = cx.current_or_default(0)?;
    let origin = if is_col {
        [0, start as u32]
    } else {
        [start as u32 * inner, 0]
    };
    let mut plans = Vec::new();
    // Whole column parts of where the operand is: the slice is those
    // blocks, in place (a fused QKV's q, k and v cost no copy).
    if let (true, Some(cur), Ok(s), Ok(e)) =
        (is_col, x.current, u32::try_from(start), u32::try_from(end))
    {
        if let Some(window) = cur.column_window(s..e) {
            plans.push(super::views::view_plan(cx, cur, window, "column window"));
        }
    }
    for out in output_options(cx) {
        let window = Window {
            dst_origin: [0, 0],
            src_origin: origin,
            extent: [cx.out.rows, cx.out.cols],
        };
        let moves = relayout(
            &src,
            Slot::Operand(0),
            &out,
            Slot::Output,
            x.view.elem(),
            window,
        )
        .map_err(|e| unaligned(cx, e))?;
        plans.push(move_plan(cx, vec![src], out, moves, "copy"));
    }
    Ok(plans)
}

/// Concatenation along `axis`.
pub fn concat(cx: &GenCx<'_>, axis: usize) -> PlanResult<Vec<OpPlan>> {
    let dims = cx.out_ty.shape.dims();
    if let Some((lead, inner)) = batched_row_axis(dims, axis) {
        return batched_concat(cx, (lead, inner), axis);
    }
    let (is_col, inner) =
        axis_in_view(dims, axis).ok_or(cx.unsupported("concat of an axis behind a batch dim"))?;
    let srcs: Vec<Layout> = (0..cx.operands.len())
        .map(|i| cx.current_or_default(i))
        .collect::<PlanResult<_>>()?;
    let mut plans = Vec::new();
    for out in output_options(cx) {
        let mut all = Relayout::default();
        let mut offset = 0u32;
        for (i, (src, info)) in srcs.iter().zip(cx.operands).enumerate() {
            let ext = [info.view.rows, info.view.cols];
            let dst_origin = if is_col { [0, offset] } else { [offset, 0] };
            let window = Window {
                dst_origin,
                src_origin: [0, 0],
                extent: ext,
            };
            let m = relayout(
                src,
                Slot::Operand(i as u8),
                &out,
                Slot::Output,
                info.view.elem(),
                window,
            )
            .map_err(|e| unaligned(cx, e))?;
            all.transfers.extend(m.transfers);
            all.copies.extend(m.copies);
            offset += if is_col {
                info.view.cols
            } else {
                info.view.rows
            };
        }
        let _ = inner;
        all.transfers.sort_by_key(|t| t.source_tile);
        all.copies.sort_by_key(|c| c.tile);
        plans.push(move_plan(cx, srcs.clone(), out, all, "gather"));
    }
    Ok(plans)
}

/// Slice along a row axis behind `lead` batches: one window per batch.
fn batched_slice(
    cx: &GenCx<'_>,
    (lead, inner): (u32, u32),
    axis: usize,
    span: core::ops::Range<usize>,
) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?;
    let dims = x.ty.shape.dims();
    let too_big = || cx.unsupported("slice with a batch past u32 rows");
    let axis_len = u32::try_from(dims[axis]).map_err(|_| too_big())?;
    let (start, end) = (
        u32::try_from(span.start).map_err(|_| too_big())?,
        u32::try_from(span.end).map_err(|_| too_big())?,
    );
    let src_run = axis_len.checked_mul(inner).ok_or_else(too_big)?;
    let dst_run = (end - start).checked_mul(inner).ok_or_else(too_big)?;
    let src = cx.current_or_default(0)?;
    let mut plans = Vec::new();
    for out in output_options(cx) {
        let mut all = Relayout::default();
        for b in 0..lead {
            let window = Window {
                dst_origin: [b * dst_run, 0],
                src_origin: [b * src_run + start * inner, 0],
                extent: [dst_run, cx.out.cols],
            };
            let m = relayout(
                &src,
                Slot::Operand(0),
                &out,
                Slot::Output,
                x.view.elem(),
                window,
            )
            .map_err(|e| unaligned(cx, e))?;
            all.transfers.extend(m.transfers);
            all.copies.extend(m.copies);
        }
        all.transfers.sort_by_key(|t| t.source_tile);
        all.copies.sort_by_key(|c| c.tile);
        plans.push(move_plan(cx, vec![src], out, all, "per-batch copy"));
    }
    Ok(plans)
}

/// Concatenation along a row axis behind `lead` batches: every operand's
/// run of each batch into that batch's run of the result.
fn batched_concat(
    cx: &GenCx<'_>,
    (lead, inner): (u32, u32),
    axis: usize,
) -> PlanResult<Vec<OpPlan>> {
    let too_big = || cx.unsupported("concat with a batch past u32 rows");
    let out_len = u32::try_from(cx.out_ty.shape.dims()[axis]).map_err(|_| too_big())?;
    let out_run = out_len.checked_mul(inner).ok_or_else(too_big)?;
    let srcs: Vec<Layout> = (0..cx.operands.len())
        .map(|i| cx.current_or_default(i))
        .collect::<PlanResult<_>>()?;
    let mut runs = Vec::with_capacity(cx.operands.len());
    for info in cx.operands {
        let dims = info.ty.shape.dims();
        if dims.iter().take(axis).product::<usize>() != lead as usize {
            return Err(cx.unsupported("concat of operands with different batches"));
        }
        let len = u32::try_from(dims[axis]).map_err(|_| too_big())?;
        runs.push(len.checked_mul(inner).ok_or_else(too_big)?);
    }
    let mut plans = Vec::new();
    for out in output_options(cx) {
        let mut all = Relayout::default();
        let mut offset = 0u32;
        for (i, ((src, info), &run)) in srcs.iter().zip(cx.operands).zip(&runs).enumerate() {
            for b in 0..lead {
                let window = Window {
                    dst_origin: [b * out_run + offset, 0],
                    src_origin: [b * run, 0],
                    extent: [run, info.view.cols],
                };
                let m = relayout(
                    src,
                    Slot::Operand(i as u8),
                    &out,
                    Slot::Output,
                    info.view.elem(),
                    window,
                )
                .map_err(|e| unaligned(cx, e))?;
                all.transfers.extend(m.transfers);
                all.copies.extend(m.copies);
            }
            offset += run;
        }
        all.transfers.sort_by_key(|t| t.source_tile);
        all.copies.sort_by_key(|c| c.tile);
        plans.push(move_plan(cx, srcs.clone(), out, all, "per-batch gather"));
    }
    Ok(plans)
}

/// im2col of `[1, C, H, W]` into `[1, T, C·p·p]`: for each channel `c`,
/// patch row `ty` and kernel row `ky`, image row `c·H + ty·p + ky` holds the
/// `p`-pixel runs of all `W/p` tokens of that patch row back to back, and
/// each run lands at column `c·p·p + ky·p` of its token's row.
pub fn im2col(cx: &GenCx<'_>, p: usize) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?;
    let dims = x.ty.shape.dims();
    if dims.len() != 4 {
        return Err(cx.unsupported("im2col needs [B, C, H, W]"));
    }
    let (b, c, h, w, p) = (
        dims[0] as u32,
        dims[1] as u32,
        dims[2] as u32,
        dims[3] as u32,
        p as u32,
    );
    let (hp, wp) = (h / p.max(1), w / p.max(1));
    let elem = x.view.elem();
    let run = p * elem;
    if run % 4 != 0 {
        return Err(PlanError::UnalignedTransfer {
            op: cx.op_ref.clone(),
            row_bytes: run,
        });
    }
    // The image is read by whole rows.
    let src = match x.current {
        Some(l) if l.cols.part_count() == 1 && l.replicas == 1 => l,
        _ => Layout::row_split(b * c * h, w, 0, (b * c * h).min(cx.cfg.tiles)),
    };
    // Image `img` holds source rows `img·c·h ..` and tokens `img·hp·wp ..`.
    let out_cols = c * p * p;
    let mut plans = Vec::new();
    for out in output_options(cx) {
        let mut moves = Relayout::default();
        for (img, ch) in (0..b).flat_map(|img| (0..c).map(move |ch| (img, ch))) {
            for ty in 0..hp {
                for ky in 0..p {
                    let row = (img * c + ch) * h + ty * p + ky;
                    let sq = src.rows.part_of(row);
                    let sblock = src.block(sq, 0);
                    let s_tile = src.tile_of(sq, 0, 0);
                    let first = img * hp * wp + ty * wp;
                    let tokens = first..first + wp;
                    for dq in out.rows.parts_touching(tokens.clone()) {
                        let dblock = out.block(dq, 0);
                        let t0 = tokens.start.max(dblock.rows.start);
                        let t1 = tokens.end.min(dblock.rows.end);
                        if t0 >= t1 {
                            continue;
                        }
                        let tx0 = t0 - tokens.start;
                        let src_off = ((row - sblock.rows.start) * w + tx0 * p) * elem;
                        let dst_off =
                            ((t0 - dblock.rows.start) * out_cols + ch * p * p + ky * p) * elem;
                        for rep in 0..out.replicas {
                            let d_tile = out.tile_of(dq, 0, rep);
                            let src_ref = SlotRef {
                                slot: Slot::Operand(0),
                                offset: src_off,
                            };
                            let dst_ref = SlotRef {
                                slot: Slot::Output,
                                offset: dst_off,
                            };
                            if d_tile == s_tile {
                                moves.copies.push(PlannedCall {
                                    tile: d_tile,
                                    kernel: Kernel::Copy {
                                        rows: t1 - t0,
                                        row_bytes: run,
                                        src_pitch: run,
                                        dst_pitch: out_cols * elem,
                                    },
                                    operands: vec![dst_ref, src_ref],
                                });
                            } else {
                                moves.transfers.push(PlannedTransfer {
                                    source_tile: s_tile,
                                    source: src_ref,
                                    source_pitch: run,
                                    rows: t1 - t0,
                                    row_bytes: run,
                                    destinations: vec![PlannedDestination {
                                        tile: d_tile,
                                        at: dst_ref,
                                        pitch: out_cols * elem,
                                    }],
                                });
                            }
                        }
                    }
                }
            }
        }
        moves.transfers.sort_by_key(|t| t.source_tile);
        moves.copies.sort_by_key(|c| c.tile);
        plans.push(move_plan(cx, vec![src], out, moves, "patch gather"));
    }
    Ok(plans)
}
