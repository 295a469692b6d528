//! Attention plans: `G` head groups (batch × heads) × `R` query blocks.
//! Tile `g·R + r` computes query block `r` of group `g`; it needs the whole
//! `k` and `v` of its group, so those are replicated over the `R` tiles of
//! the group (an all-gather when they arrive split).

use alloc::format;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::GenCx;
use crate::ir::DType;
use crate::lower::schedule::{Kernel, MemoryClass, TileBlock};
use crate::plan::error::PlanResult;
use crate::plan::layout::{AxisSplit, Layout};
use crate::plan::opplan::{
    OpPlan, OperandPlan, PlanFamily, PlannedCall, ScratchPlan, Slot, SlotRef, Stage,
};

/// Candidate attention plans.
pub fn plans(cx: &GenCx<'_>, scale: f32) -> PlanResult<Vec<OpPlan>> {
    let (q, k, v) = (cx.operand(0)?, cx.operand(1)?, cx.operand(2)?);
    let qd = q.ty.shape.dims();
    let kd = k.ty.shape.dims();
    if qd.len() < 2 || kd.len() < 2 {
        return Err(cx.unsupported("attention operands need rank ≥ 2"));
    }
    let sq = qd[qd.len() - 2] as u32;
    let sk = kd[kd.len() - 2] as u32;
    let dh = q.view.cols;
    if k.view.cols != dh
        || v.view.cols != dh
        || q.view.dtype != k.view.dtype
        || q.view.dtype != v.view.dtype
    {
        return Err(cx.unsupported("attention with differing head widths or dtypes"));
    }
    let groups = q.view.rows / sq.max(1);
    if k.view.rows != groups * sk || v.view.rows != groups * sk {
        return Err(cx.unsupported("attention with broadcast key/value groups"));
    }
    let t = cx.cfg.tiles;
    let max_r = (t / groups.max(1)).min(sq).max(1);
    let mut rs: Vec<u32> = [1u32, 2, 4, 8, 16, 32, 64]
        .iter()
        .copied()
        .filter(|&r| r <= max_r)
        .chain([max_r])
        .collect();
    rs.sort_unstable();
    rs.dedup();
    let mut plans = Vec::new();
    for r in rs {
        let q_layout = Layout::row_split(groups * sq, dh, 0, groups * r);
        if q_layout.rows.part_count() != groups * r {
            continue;
        }
        let kv_layout = Layout {
            first_tile: 0,
            rows: AxisSplit::parts(groups * sk, 1, groups, r),
            cols: AxisSplit::whole(dh),
            replicas: r,
            replica_stride: 1,
        };
        let mut calls = Vec::new();
        let mut scores = Vec::new();
        for (tile, blk) in q_layout.placements() {
            let q_rows = blk.rows.len() as u32;
            scores.push(TileBlock {
                tile,
                rows: 0..q_rows,
                cols: 0..sk,
                bytes: q_rows * sk * 4,
            });
            calls.push(PlannedCall {
                tile,
                kernel: Kernel::Attention {
                    q_rows,
                    kv_rows: sk,
                    head_dim: dh,
                    scale,
                    dtype: q.view.dtype,
                },
                operands: [
                    Slot::Output,
                    Slot::Operand(0),
                    Slot::Operand(1),
                    Slot::Operand(2),
                    Slot::Scratch(0),
                ]
                .into_iter()
                .map(|slot| SlotRef { slot, offset: 0 })
                .collect(),
            });
        }
        let stages = vec![Stage::Compute(calls)];
        let cost = OpPlan::stage_cost(&stages);
        let operand = |layout| OperandPlan {
            layout,
            storage: None,
            class: MemoryClass::Standard,
        };
        plans.push(OpPlan {
            op: cx.op,
            family: PlanFamily::Attention { q_parts: r },
            operands: vec![operand(q_layout), operand(kv_layout), operand(kv_layout)],
            output: q_layout,
            output_class: MemoryClass::Standard,
            output_is_view: false,
            scratch: vec![ScratchPlan {
                name: "scores",
                dtype: DType::F32,
                blocks: Arc::new(scores),
                class: MemoryClass::Standard,
                align: crate::lower::schedule::BASE_BUFFER_ALIGN,
            }],
            stages,
            cost,
            summary: format!("attention {groups} groups x {r} query blocks"),
        });
    }
    Ok(plans)
}
