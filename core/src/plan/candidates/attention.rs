//! Attention plans: `G` head groups (batch × heads) × `R` query blocks.
//! Tile `g·R + r` computes query block `r` of group `g`; it needs the whole
//! `k` and `v` of its group, so those are replicated over the `R` tiles of
//! the group (an all-gather when they arrive split).
//!
//! Key-split plans (`S` > 1 key blocks) cut that K/V residency by `S`: tile
//! `s·G·R + g·R + r` holds query block `(g, r)` (queries replicated `S`
//! times) and key/value block `s` of group `g` (replicated over the `R`
//! query tiles) and computes an unnormalised partial (`attention_partial`:
//! `p·v`, row max, row sum). The `S` tiles of a query block then each
//! combine one `S`-th of its rows (`attention_combine`), receiving that
//! piece of the others' partials.

use alloc::format;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::GenCx;
use crate::ir::DType;
use crate::plan::error::PlanResult;
use crate::plan::layout::{AxisSplit, Layout};
use crate::plan::opplan::{
    OpPlan, OperandPlan, PlanFamily, PlannedCall, PlannedDestination, PlannedTransfer, ScratchPlan,
    Slot, SlotRef, Stage,
};
use crate::plan::TileBlock;
use ipuc_target::ipu21::sram::MemoryClass;
use ipuc_target::kernel::{Kernel, PartialRecord};

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
    let mut plans = Vec::new();
    for r in query_block_options(t, groups, 1, sq) {
        let Some((q_layout, kv_layout)) = operand_layouts((groups, sq, sk, dh), r, 1) else {
            continue;
        };
        let mut calls = Vec::new();
        let mut scores = Vec::new();
        for (tile, blk) in q_layout.placements() {
            let q_rows = blk.rows.len() as u32;
            scores.push(TileBlock {
                tile: cx.tile(tile)?,
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
        if cx.cfg.min_key_parts > 1 {
            continue;
        }
        plans.push(OpPlan {
            op: cx.op,
            family: PlanFamily::Attention {
                q_parts: r,
                key_parts: 1,
            },
            operands: vec![operand(q_layout), operand(kv_layout), operand(kv_layout)],
            output: q_layout,
            // The AMP writes interleaved memory (facts §2.10 rule 6).
            output_class: MemoryClass::Interleaved,
            output_is_view: false,
            scratch: vec![ScratchPlan {
                name: "scores",
                dtype: DType::F32,
                blocks: Arc::new(scores),
                class: MemoryClass::Standard,
                align: ipuc_target::ipu21::sram::BASE_BUFFER_ALIGN,
            }],
            stages,
            cost,
            summary: format!("attention {groups} groups x {r} query blocks"),
        });
    }
    for parts in KEY_PARTS {
        if parts < cx.cfg.min_key_parts {
            continue;
        }
        for r in query_block_options(t, groups, parts, sq) {
            if let Some(p) = key_split(cx, scale, (groups, sq, sk, dh), r, parts) {
                plans.push(p);
            }
        }
    }
    Ok(plans)
}

/// Key-block counts key-split attention tries: 2–4 for short sequences
/// and many groups; 9–12 nearly fill the machine with 16 or 32 groups
/// (So400m at batch 1: 9 query blocks × 10 key blocks on 1,440 tiles; at
/// batch 2: 5 × 9 on 1,440). Every count up to 23 was measured on So400m
/// (27 layers, batch 1): the rest found nothing better than 0.1 % per
/// image and doubled the planning time.
pub(super) const KEY_PARTS: [u32; 7] = [2, 3, 4, 9, 10, 11, 12];

/// Query-block counts `R` tried for `groups` head groups of `sq` queries
/// split over `parts` key blocks on `tiles` tiles (none when one block
/// per group and key part does not fit).
pub(super) fn query_block_options(tiles: u32, groups: u32, parts: u32, sq: u32) -> Vec<u32> {
    let max_r = (tiles / (groups.max(1) * parts.max(1))).min(sq);
    if max_r == 0 {
        return Vec::new();
    }
    let mut rs: Vec<u32> = [1u32, 2, 4, 8, 16, 32, 64]
        .iter()
        .copied()
        .filter(|&r| r <= max_r)
        .chain([max_r])
        .collect();
    rs.sort_unstable();
    rs.dedup();
    rs
}

/// Where attention with `R = r` query blocks and `parts` key blocks reads
/// its operands, as `(q, k and v)` layouts of the `[groups·sq, dh]` and
/// `[groups·sk, dh]` tensors. Query block `(g, r)` sits on tile
/// `s·G·R + g·R + r` for every key block `s` (one copy without a key
/// split); key/value block `(g, s)` on the same tiles for every query
/// block `r`. `None` when a split would leave a part empty or run off the
/// machine.
pub(super) fn operand_layouts(
    (groups, sq, sk, dh): (u32, u32, u32, u32),
    r: u32,
    parts: u32,
) -> Option<(Layout, Layout)> {
    // More key blocks than keys would leave a key block empty.
    if parts > sk {
        return None;
    }
    let gr = groups * r;
    let out = Layout::row_split(groups * sq, dh, 0, gr);
    if out.rows.part_count() != gr {
        return None;
    }
    let q = Layout {
        replicas: parts,
        replica_stride: if parts > 1 { gr } else { 0 },
        ..out
    };
    let kv = Layout {
        first_tile: 0,
        rows: AxisSplit {
            len: groups * sk,
            grain: 1,
            outer: groups,
            outer_stride: r,
            inner: parts,
            inner_stride: if parts > 1 { gr } else { 0 },
        },
        cols: AxisSplit::whole(dh),
        replicas: r,
        replica_stride: 1,
    };
    if q.validate().is_err() || kv.validate().is_err() {
        return None;
    }
    Some((q, kv))
}

/// Where the values of key-split attention arrive when the `r` tiles of a
/// key block transpose them together: key block `(g, s)` as for
/// [`operand_layouts`], its columns split into `r` pieces of whole 32-bit
/// words (so each transposed piece, `piece × kv_rows` elements, also
/// starts and ends on a word), piece `j` on query block `j`'s tile.
/// `None` when there are more tiles than word columns to share.
fn transposed_value_layout(kv: Layout, dh: u32, r: u32, element_bytes: u32) -> Option<Layout> {
    let grain = (4 / element_bytes.max(1)).max(1);
    if r < 2 || !dh.is_multiple_of(grain) || dh / grain < r {
        return None;
    }
    let v = Layout {
        cols: AxisSplit::parts(dh, grain, r, kv.replica_stride),
        replicas: 1,
        replica_stride: 0,
        ..kv
    };
    v.validate().ok().map(|()| v)
}

/// A key block's values transposed once: each tile's transpose call, the
/// gather of its piece to the key block's other tiles, and its whole
/// `[dh, kv]` block of transposed values (scratch 2).
struct ValueTransposition {
    calls: Vec<PlannedCall>,
    gathers: Vec<PlannedTransfer>,
    blocks: Vec<TileBlock>,
}

/// [`ValueTransposition`] of the values laid out as `v` (from
/// [`transposed_value_layout`]), `r` query tiles per key block, `gr` per
/// key part. Transposed, piece `cols` of a key block is rows `cols` of its
/// `[dh, kv]` block, so it lands at the same offset on every tile.
fn transpose_once(
    cx: &GenCx<'_>,
    v: &Layout,
    (gr, r, dh): (u32, u32, u32),
    dtype: DType,
) -> Option<ValueTransposition> {
    let element_bytes = dtype.size_bytes() as u32;
    let at = |slot, offset| SlotRef { slot, offset };
    let mut t = ValueTransposition {
        calls: Vec::new(),
        gathers: Vec::new(),
        blocks: Vec::new(),
    };
    for (tile, blk) in v.placements() {
        let kv_rows = blk.rows.len() as u32;
        let piece = blk.cols.len() as u32;
        let offset = blk.cols.start * kv_rows * element_bytes;
        let bytes = piece * kv_rows * element_bytes;
        t.blocks.push(TileBlock {
            tile: cx.tile(tile).ok()?,
            rows: 0..dh,
            cols: 0..kv_rows,
            bytes: dh * kv_rows * element_bytes,
        });
        t.calls.push(PlannedCall {
            tile,
            kernel: Kernel::Transpose {
                rows: kv_rows,
                cols: piece,
                src_pitch: piece,
                dtype,
            },
            operands: vec![at(Slot::Scratch(2), offset), at(Slot::Operand(2), 0)],
        });
        // The key block's tiles are `r` consecutive ones; this piece's
        // place among them is its query block.
        let first = tile - (tile % gr) % r;
        t.gathers.push(PlannedTransfer {
            source_tile: tile,
            source: at(Slot::Scratch(2), offset),
            source_pitch: bytes,
            rows: 1,
            row_bytes: bytes,
            destinations: (first..first + r)
                .filter(|&to| to != tile)
                .map(|to| PlannedDestination {
                    tile: to,
                    at: at(Slot::Scratch(2), offset),
                    pitch: bytes,
                })
                .collect(),
        });
    }
    t.calls.sort_by_key(|c| c.tile);
    t.blocks.sort_by_key(|b| b.tile);
    Some(t)
}

/// Key-split attention: `groups × r` query blocks × `parts` key blocks.
///
/// Where [`transposed_value_layout`] can share a key block's values out,
/// the `r` tiles sharing it each receive one column piece, write it
/// transposed and gather the others' pieces: the value block is
/// transposed once, a `1/r` share per tile, instead of whole on each of
/// its `r` tiles inside the attention kernel. That variant replaces the
/// other rather than joining it: it holds about the same bytes per tile
/// (the whole transposed block, a `1/r` piece of the values) and costs
/// less whenever the block is larger than a few hundred elements (a
/// sixth of the transposition's cycles in gathered bytes, plus a call
/// and a sync), and offering both crowds the beam: So400m at batch 2
/// (27 layers, memory tight) came out at 9.59 M simulated cycles per
/// image with both, 9.18 M with this one alone.
///
/// The combine is spread over the first `c = min(parts, rows per query
/// block)` tiles of a query block: piece `s` of its rows (the nested
/// balanced split, so the output is one two-level row layout) is combined
/// on the tile of key block `s`, which receives that piece of the other
/// partials. With `c = parts` each tile receives `(parts − 1)/parts` of
/// one partial, where one combining tile would receive `parts − 1` whole
/// ones, and combines `1/parts` of the rows. The pieces arrive where the
/// scores were; a combining tile copies its own piece beside them, so the
/// combine reads the `parts` pieces in key-block order, the order one tile
/// would combine them in (same numerics).
fn key_split(
    cx: &GenCx<'_>,
    scale: f32,
    (groups, sq, sk, dh): (u32, u32, u32, u32),
    r: u32,
    parts: u32,
) -> Option<OpPlan> {
    let dtype = cx.operand(0).ok()?.view.dtype;
    let gr = groups * r;
    let (q_layout, kv_layout) = operand_layouts((groups, sq, sk, dh), r, parts)?;
    let transposed = transposed_value_layout(kv_layout, dh, r, dtype.size_bytes() as u32);
    let transpose_values = transposed.is_some();
    let v_layout = transposed.unwrap_or(kv_layout);
    // Every piece holds a row: a block has at least ⌊rows / gr⌋ of them.
    let combiners = parts.min((groups * sq) / gr);
    if combiners == 0 {
        return None;
    }
    let out_layout = Layout {
        first_tile: 0,
        rows: AxisSplit {
            len: groups * sq,
            grain: 1,
            outer: gr,
            outer_stride: 1,
            inner: combiners,
            inner_stride: if combiners > 1 { gr } else { 0 },
        },
        cols: AxisSplit::whole(dh),
        replicas: 1,
        replica_stride: 0,
    };
    if out_layout.validate().is_err() {
        return None;
    }
    let record = PartialRecord::of(dh, dtype);
    let row_bytes = record.row_bytes();
    let mut partial_calls = Vec::new();
    let mut combine_calls = Vec::new();
    let mut scores = Vec::new();
    let mut partials = Vec::new();
    let mut transfers = Vec::new();
    let at = |slot, offset| SlotRef { slot, offset };
    let transposition = match transposed {
        Some(v) => Some(transpose_once(cx, &v, (gr, r, dh), dtype)?),
        None => None,
    };
    for (tile, blk) in q_layout.placements() {
        let (s, qpart) = (tile / gr, tile % gr);
        let g = qpart / r;
        let q_rows = blk.rows.len() as u32;
        let kv_rows = kv_layout.rows.range(g * parts + s).len() as u32;
        // Piece `i` of this query block: its first row within the block and its rows.
        let piece = |i: u32| {
            let rows = out_layout.rows.range(qpart * combiners + i);
            (rows.start - blk.rows.start, rows.len() as u32)
        };
        let own_bytes = q_rows * row_bytes;
        let combines = s < combiners;
        let (own_start, own_rows) = if combines { piece(s) } else { (0, 0) };
        let piece_bytes = own_rows * row_bytes;
        let block_tile = cx.tile(tile).ok()?;
        // The scores are dead once the partial is computed: the `parts`
        // pieces this tile combines arrive in their place, so a tile holds
        // no more than it did with one combining tile per query block.
        scores.push(TileBlock {
            tile: block_tile,
            rows: 0..q_rows,
            cols: 0..kv_rows,
            bytes: (q_rows * kv_rows * 4).max(parts * piece_bytes),
        });
        partials.push(TileBlock {
            tile: block_tile,
            rows: 0..q_rows,
            cols: 0..record.len,
            bytes: own_bytes,
        });
        partial_calls.push(PlannedCall {
            tile,
            kernel: Kernel::AttentionPartial {
                q_rows,
                kv_rows,
                head_dim: dh,
                scale,
                dtype,
                values_transposed: transpose_values,
            },
            operands: vec![
                at(Slot::Scratch(1), 0),
                at(Slot::Operand(0), 0),
                at(Slot::Operand(1), 0),
                if transpose_values {
                    at(Slot::Scratch(2), 0)
                } else {
                    at(Slot::Operand(2), 0)
                },
                at(Slot::Scratch(0), 0),
            ],
        });
        for to in (0..combiners).filter(|&to| to != s) {
            let (start, rows) = piece(to);
            let bytes = rows * row_bytes;
            transfers.push(PlannedTransfer {
                source_tile: tile,
                source: at(Slot::Scratch(1), start * row_bytes),
                source_pitch: bytes,
                rows: 1,
                row_bytes: bytes,
                destinations: vec![PlannedDestination {
                    tile: to * gr + qpart,
                    at: at(Slot::Scratch(0), s * bytes),
                    pitch: bytes,
                }],
            });
        }
        if !combines {
            continue;
        }
        partial_calls.push(PlannedCall {
            tile,
            kernel: Kernel::Copy {
                rows: 1,
                row_bytes: piece_bytes,
                src_pitch: piece_bytes,
                dst_pitch: piece_bytes,
            },
            operands: vec![
                at(Slot::Scratch(0), s * piece_bytes),
                at(Slot::Scratch(1), own_start * row_bytes),
            ],
        });
        combine_calls.push(PlannedCall {
            tile,
            kernel: Kernel::AttentionCombine {
                q_rows: own_rows,
                head_dim: dh,
                parts,
                dtype,
            },
            operands: vec![at(Slot::Output, 0), at(Slot::Scratch(0), 0)],
        });
    }
    // Stable: each tile's copy stays after its partial.
    partial_calls.sort_by_key(|c| c.tile);
    combine_calls.sort_by_key(|c| c.tile);
    scores.sort_by_key(|b| b.tile);
    partials.sort_by_key(|b| b.tile);
    let mut stages = Vec::new();
    let mut values = None;
    if let Some(t) = transposition {
        stages.push(Stage::Compute(t.calls));
        stages.push(Stage::Exchange(t.gathers));
        values = Some(t.blocks);
    }
    stages.extend([
        Stage::Compute(partial_calls),
        Stage::Exchange(transfers),
        Stage::Compute(combine_calls),
    ]);
    let cost = OpPlan::stage_cost(&stages);
    let operand = |layout| OperandPlan {
        layout,
        storage: None,
        class: MemoryClass::Standard,
    };
    let scratch = |name, dtype, blocks, class| ScratchPlan {
        name,
        dtype,
        blocks: Arc::new(blocks),
        class,
        align: ipuc_target::ipu21::sram::BASE_BUFFER_ALIGN,
    };
    let mut scratch_plans = vec![
        // Typed as the partial records that land in it after the scores
        // are dead (its bytes hold `q_rows × kv_rows` F32 scores too).
        scratch("scores", record.element, scores, MemoryClass::Standard),
        // The partials are the AMP's output: interleaved (facts §2.10 rule 6).
        scratch(
            "partials",
            record.element,
            partials,
            MemoryClass::Interleaved,
        ),
    ];
    if let Some(values) = values {
        scratch_plans.push(scratch("values_t", dtype, values, MemoryClass::Standard));
    }
    Some(OpPlan {
        op: cx.op,
        family: PlanFamily::Attention {
            q_parts: r,
            key_parts: parts,
        },
        operands: vec![operand(q_layout), operand(kv_layout), operand(v_layout)],
        output: out_layout,
        output_class: MemoryClass::Standard,
        output_is_view: false,
        scratch: scratch_plans,
        stages,
        cost,
        summary: format!(
            "attention {groups} groups x {r} query blocks x {parts} key blocks{}",
            if transpose_values {
                ", values transposed once"
            } else {
                ""
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposed_values_are_cut_in_whole_words_one_piece_per_query_block() {
        // So400m at batch 1: 16 heads, 9 query blocks, 10 key blocks.
        let (_, kv) = operand_layouts((16, 729, 729, 72), 9, 10).unwrap();
        let v = transposed_value_layout(kv, 72, 9, 2).unwrap();
        let pieces: Vec<_> = (0..9).map(|j| v.cols.range(j)).collect();
        assert!(pieces.iter().all(|p| p.len() == 8 && p.start % 2 == 0));
        // Piece j of key block (g, s) sits on query block j's tile of it.
        let kv_tiles: Vec<u32> = kv.placements().map(|(t, _)| t).collect();
        let mut v_tiles: Vec<u32> = v.placements().map(|(t, _)| t).collect();
        v_tiles.sort_unstable();
        let mut want = kv_tiles.clone();
        want.sort_unstable();
        assert_eq!(v_tiles, want);
        // One query block, an odd FP16 head width, or more tiles than
        // word columns: nothing to share.
        assert_eq!(transposed_value_layout(kv, 72, 1, 2), None);
        assert_eq!(transposed_value_layout(kv, 71, 9, 2), None);
        assert_eq!(transposed_value_layout(kv, 16, 9, 2), None);
    }
}
