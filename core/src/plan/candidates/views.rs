//! Views: ops whose result is the operand's buffer seen with another shape.
//! A view is free when the operand's current layout maps block-for-block
//! onto a layout of the result; otherwise the plan asks for a layout that
//! does (and the search prices the re-layout).

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::{row_part_options, GenCx};
use crate::plan::cost::Cycles;
use crate::plan::error::PlanResult;
use crate::plan::layout::{AxisSplit, Layout};
use crate::plan::opplan::{OpPlan, OperandPlan, PlanFamily};
use ipuc_target::ipu21::sram::MemoryClass;

pub(super) fn view_plan(cx: &GenCx<'_>, input: Layout, output: Layout, note: &str) -> OpPlan {
    OpPlan {
        op: cx.op,
        family: PlanFamily::View,
        operands: vec![OperandPlan {
            layout: input,
            storage: None,
            class: MemoryClass::Standard,
        }],
        output,
        output_class: MemoryClass::Standard,
        output_is_view: true,
        scratch: Vec::new(),
        stages: Vec::new(),
        cost: Cycles::default(),
        summary: format!("{} view ({note})", cx.op_name),
    }
}

fn leading_product(dims: &[usize], keep: usize) -> usize {
    dims.iter().take(dims.len().saturating_sub(keep)).product()
}

/// `[S, H·Dh]` → `[H, S, Dh]`: column block `h` of row block `r` is row block
/// `(h, r)` of the result, byte for byte. With a batch (`[N, S, H·Dh]` →
/// `[N, H, S, Dh]`) the row blocks must not straddle images and image `n`'s
/// blocks must sit `H` head strides after image `n - 1`'s, so that block
/// `(n, h, r)` of the result is group `n·H + h` of one uniform group stride:
/// attention then runs per (image, head).
pub fn split_heads(cx: &GenCx<'_>, heads: usize) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?;
    let dims = x.ty.shape.dims();
    let n = u32::try_from(leading_product(dims, 2))
        .map_err(|_| cx.unsupported("split_heads with a batch past u32"))?;
    if n == 0 {
        return Err(cx.unsupported("split_heads of an empty batch"));
    }
    let h = heads as u32;
    let (rows, width) = (x.view.rows, x.view.cols);
    let s = rows / n;
    let dh = width / h.max(1);
    let heads_split = |stride: u32| AxisSplit::parts(width, dh, h, stride);
    // Replicas carry over: every copy of a head-aligned block is a copy of
    // the result's block.
    let to_output = |l: &Layout| -> Option<Layout> {
        let aligned =
            l.cols.part_count() == h && (0..h).all(|q| l.cols.range(q) == (q * dh..(q + 1) * dh));
        if !aligned || l.cols.inner > 1 || (l.rows.grain > 1 && !s.is_multiple_of(l.rows.grain)) {
            return None;
        }
        let head_stride = l.cols.outer_stride;
        // Row blocks per image and their stride.
        let (per, row_stride) = if n == 1 {
            if l.rows.inner > 1 {
                return None;
            }
            (l.rows.outer, l.rows.outer_stride)
        } else {
            let (per, row_stride, image_stride) = if l.rows.inner == 1 {
                if !l.rows.outer.is_multiple_of(n) {
                    return None;
                }
                let per = l.rows.outer / n;
                (
                    per,
                    l.rows.outer_stride,
                    per.checked_mul(l.rows.outer_stride)?,
                )
            } else if l.rows.outer == n {
                (l.rows.inner, l.rows.inner_stride, l.rows.outer_stride)
            } else {
                return None;
            };
            if Some(image_stride) != h.checked_mul(head_stride) {
                return None;
            }
            (per, row_stride)
        };
        Some(Layout {
            first_tile: l.first_tile,
            rows: canonical(AxisSplit {
                len: n.checked_mul(h)?.checked_mul(s)?,
                grain: l.rows.grain,
                outer: n.checked_mul(h)?,
                outer_stride: head_stride,
                inner: per,
                inner_stride: row_stride,
            }),
            cols: AxisSplit::whole(dh),
            replicas: l.replicas,
            replica_stride: l.replica_stride,
        })
    };
    // `n` images of `r` row blocks each, heads `r` tiles apart, images
    // `H·r` apart: block `(n, h, r)` on tile `(n·H + h)·r + r`.
    let batch_rows = |r: u32| -> AxisSplit {
        if n == 1 {
            AxisSplit::parts(s, 1, r, 1)
        } else {
            canonical(AxisSplit {
                len: rows,
                grain: 1,
                outer: n,
                outer_stride: h * r,
                inner: r,
                inner_stride: 1,
            })
        }
    };
    let mut plans = Vec::new();
    if let Some(cur) = x.current {
        if let Some(out) = to_output(&cur) {
            plans.push(view_plan(cx, cur, out, "in place"));
        }
    }
    let groups = n.saturating_mul(h);
    if n > 1 && groups > cx.cfg.tiles {
        return Err(cx.unsupported("split_heads with more (image, head) pairs than tiles"));
    }
    for r in row_part_options(s, cx.cfg.tiles / groups.max(1)) {
        let input = Layout {
            first_tile: 0,
            rows: batch_rows(r),
            cols: heads_split(r),
            replicas: 1,
            replica_stride: 0,
        };
        if Some(input) == x.current {
            continue;
        }
        if let Some(out) = to_output(&input) {
            plans.push(view_plan(cx, input, out, "head-aligned"));
        }
    }
    // The layouts self-attention reads its operands in (at its largest
    // query-block count for each key split): split straight into one of
    // them, and the one exchange into the split is the attention's too.
    let tiles = cx.cfg.tiles;
    for parts in core::iter::once(1).chain(super::attention::KEY_PARTS) {
        let Some(&r) = super::attention::query_block_options(tiles, groups, parts, s).last() else {
            continue;
        };
        let Some((q, kv)) = super::attention::operand_layouts((groups, s, s, dh), r, parts) else {
            continue;
        };
        for out in [q, kv] {
            let Some(input) = head_aligned_source(&out, s, width, (n, h)) else {
                continue;
            };
            if Some(input) != x.current && to_output(&input) == Some(out) {
                plans.push(view_plan(cx, input, out, "attention's layout"));
            }
        }
    }
    Ok(plans)
}

/// A row split whose two levels place parts exactly as one level would
/// (`outer_stride = inner·inner_stride`, or one inner part), written as
/// that one level: layouts are compared field by field, so one placement
/// must have one form.
fn canonical(a: AxisSplit) -> AxisSplit {
    if a.inner == 1 {
        return AxisSplit {
            inner_stride: 0,
            ..a
        };
    }
    match (
        a.inner.checked_mul(a.inner_stride),
        a.outer.checked_mul(a.inner),
    ) {
        (Some(stride), Some(parts)) if stride == a.outer_stride => {
            AxisSplit::parts(a.len, a.grain, parts, a.inner_stride)
        }
        _ => a,
    }
}

/// The `[S, H·Dh]` layout whose head split is `out` (a `[H·S, Dh]`
/// layout): heads outer with their stride, rows inner — the inverse of
/// `split_heads`'s mapping, when `out` has that form. With `n` images
/// (`[N·S, H·Dh]` from `[N·H·S, Dh]`) the groups are (image, head) pairs
/// and images lie `H` head strides apart.
fn head_aligned_source(out: &Layout, s: u32, width: u32, (n, h): (u32, u32)) -> Option<Layout> {
    let r = out.rows;
    let groups = n.checked_mul(h)?;
    let (per_head, row_stride, head_stride) = if r.inner == 1 {
        // One level: `G·R` parts, `R` per group.
        if !r.outer.is_multiple_of(groups) {
            return None;
        }
        let per = r.outer / groups;
        (per, r.outer_stride, r.outer_stride.checked_mul(per)?)
    } else if r.outer == groups {
        (r.inner, r.inner_stride, r.outer_stride)
    } else {
        return None;
    };
    if out.cols.part_count() != 1 {
        return None;
    }
    let rows = if n == 1 {
        AxisSplit::parts(s, r.grain, per_head, row_stride)
    } else {
        canonical(AxisSplit {
            len: n.checked_mul(s)?,
            grain: r.grain,
            outer: n,
            outer_stride: head_stride.checked_mul(h)?,
            inner: per_head,
            inner_stride: row_stride,
        })
    };
    Some(Layout {
        first_tile: out.first_tile,
        rows,
        cols: AxisSplit::parts(width, width / h.max(1), h, head_stride),
        replicas: out.replicas,
        replica_stride: out.replica_stride,
    })
}

/// `[H, S, Dh]` → `[S, H·Dh]`: the inverse of [`split_heads`]; with a
/// batch `[N, H, S, Dh]` → `[N, S, H·Dh]`, groups (image, head).
pub fn merge_heads(cx: &GenCx<'_>) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?;
    let dims = x.ty.shape.dims();
    if dims.len() < 3 {
        return Err(cx.unsupported("merge_heads of rank < 3"));
    }
    let n = u32::try_from(leading_product(dims, 3))
        .map_err(|_| cx.unsupported("merge_heads with a batch past u32"))?;
    let h = dims[dims.len() - 3] as u32;
    let s = dims[dims.len() - 2] as u32;
    let groups = n.saturating_mul(h);
    if n == 0 {
        return Err(cx.unsupported("merge_heads of an empty batch"));
    }
    let dh = x.view.cols;
    let to_output = |l: &Layout| -> Option<Layout> {
        if l.cols.part_count() != 1
            || l.replicas > 1
            || (l.rows.grain > 1 && !s.is_multiple_of(l.rows.grain))
        {
            return None;
        }
        // Rows as (group, part-within-group): two-level with `outer == G`,
        // or a one-level split into `G·r` parts.
        let (r, head_stride, row_stride) = if l.rows.inner > 1 && l.rows.outer == groups {
            (l.rows.inner, l.rows.outer_stride, l.rows.inner_stride)
        } else if l.rows.inner == 1 && l.rows.outer.is_multiple_of(groups) {
            let r = l.rows.outer / groups;
            (r, r.checked_mul(l.rows.outer_stride)?, l.rows.outer_stride)
        } else {
            return None;
        };
        let rows = if n == 1 {
            AxisSplit::parts(s, l.rows.grain, r, row_stride)
        } else {
            canonical(AxisSplit {
                len: n.checked_mul(s)?,
                grain: l.rows.grain,
                outer: n,
                outer_stride: head_stride.checked_mul(h)?,
                inner: r,
                inner_stride: row_stride,
            })
        };
        Some(Layout {
            first_tile: l.first_tile,
            rows,
            cols: AxisSplit::parts(h * dh, dh, h, head_stride),
            replicas: 1,
            replica_stride: 0,
        })
    };
    let mut plans = Vec::new();
    if let Some(cur) = x.current {
        if let Some(out) = to_output(&cur) {
            plans.push(view_plan(cx, cur, out, "in place"));
        }
    }
    for r in row_part_options(s, cx.cfg.tiles / groups.max(1)) {
        let input = Layout::row_split(groups * s, dh, 0, groups * r);
        if input.rows.outer != groups * r || Some(input) == x.current {
            continue;
        }
        if let Some(out) = to_output(&input) {
            plans.push(view_plan(cx, input, out, "head-aligned"));
        }
    }
    Ok(plans)
}

/// Reshape: free when the 2-D view is unchanged, or when whole rows map to
/// whole rows (row splits with a compatible grain).
pub fn reshape(cx: &GenCx<'_>) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?;
    let (c_in, c_out) = (x.view.cols as u64, cx.out.cols as u64);
    let to_output = |l: &Layout| -> Option<Layout> {
        if x.view.cols == cx.out.cols {
            return Some(*l);
        }
        let g = l.rows.grain.max(1) as u64;
        if l.cols.part_count() != 1
            || l.replicas > 1
            || !(g * c_in).is_multiple_of(c_out)
            || !(x.view.rows as u64 * c_in).is_multiple_of(c_out)
        {
            return None;
        }
        Some(Layout {
            rows: AxisSplit {
                len: cx.out.rows,
                grain: (g * c_in / c_out) as u32,
                ..l.rows
            },
            cols: AxisSplit::whole(cx.out.cols),
            ..*l
        })
    };
    let mut plans = Vec::new();
    if let Some(cur) = x.current {
        if let Some(out) = to_output(&cur) {
            plans.push(view_plan(cx, cur, out, "in place"));
        }
    }
    if plans.is_empty() {
        // Rows in units that are whole rows of both views.
        let g = (c_out / gcd(c_in, c_out)) as u32;
        for p in row_part_options(x.view.rows.div_ceil(g), cx.cfg.tiles) {
            let input = Layout {
                rows: AxisSplit::parts(x.view.rows, g, p, 1),
                ..Layout::single(x.view.rows, x.view.cols, 0)
            };
            if let Some(out) = to_output(&input) {
                plans.push(view_plan(cx, input, out, "row-aligned"));
            }
        }
    }
    if plans.is_empty() {
        return Err(cx.unsupported("reshape that does not keep whole rows"));
    }
    Ok(plans)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}

/// Transpose: only permutations that leave the row-major element order
/// unchanged (moving size-1 dims) are supported; they are views.
pub fn transpose(cx: &GenCx<'_>, perm: &[usize]) -> PlanResult<Vec<OpPlan>> {
    let x = cx.operand(0)?;
    let dims = x.ty.shape.dims();
    let order_kept = {
        let moved: Vec<usize> = perm
            .iter()
            .copied()
            .filter(|&p| dims.get(p).copied().unwrap_or(1) != 1)
            .collect();
        moved.windows(2).all(|w| w[0] < w[1])
    };
    if !order_kept || x.view.cols != cx.out.cols {
        return Err(cx.unsupported("transpose that moves data"));
    }
    let input = cx.current_or_default(0)?;
    Ok(vec![view_plan(cx, input, input, "order kept")])
}
