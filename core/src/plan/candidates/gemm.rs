//! GEMM plans: `out[M,N] = a[M,K] · b[K,N]` over an `rp × cp × kp` tile grid.
//!
//! Tile `(r, c, k)` is `(c·rp + r)·kp + k`, so the `kp` partners reducing one
//! output block are neighbours, and so are the `rp·kp` tiles of one column
//! block. It multiplies row block `r` of `a` (K block `k`, replicated over
//! `c`) by block `(k, c)` of `b` (replicated over `r`). With `kp > 1` each
//! tile keeps a partial in the AMP mode's partials type; a reduce-scatter
//! hands tile `(r, c, k')` the `k'`-th row slice of every partner's partial
//! (one contiguous piece per partner), and a `reduce_add` produces that
//! slice of the output — so the output's rows are split `rp·kp` ways, which
//! nests exactly inside the `rp`-way split, and lie `1` tile apart: a bias
//! row broadcast over them is one replica run per column block.
//!
//! Weights (a parameter `b`) are either *resident* (stored replicated in the
//! layout the kernels read, costing `rp ×` memory, in standard or interleaved
//! memory) or *streamed* (each tile stores `1/rp` of its block; an all-gather
//! before the kernels rebuilds the blocks in interleaved staging).

use alloc::format;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::GenCx;
use crate::ir::{DType, MatMul};
use crate::plan::cost::{gemm_cycles, Cycles};
use crate::plan::error::PlanResult;
use crate::plan::layout::{AxisSplit, Layout};
use crate::plan::opplan::{
    OpPlan, OperandPlan, PlanFamily, PlannedCall, PlannedDestination, PlannedTransfer, ScratchPlan,
    Slot, SlotRef, Stage,
};
use crate::plan::TileBlock;
use ipuc_target::ipu21::sram::MemoryClass;
use ipuc_target::ipu21::timing::AMP_COLUMN_GROUP;
use ipuc_target::kernel::{AmpProduct, Kernel};

/// The grid and its derived layouts.
#[derive(Clone, Copy, Debug)]
struct Grid {
    m: u32,
    k: u32,
    n: u32,
    rp: u32,
    cp: u32,
    kp: u32,
    /// K elements per AMP micro-group of the product's mode: K blocks are
    /// whole micro-groups.
    k_grain: u32,
    /// First tile of the grid (0, or the far end: `tiles − rp·cp·kp`).
    base: u32,
}

impl Grid {
    fn tiles(&self) -> u32 {
        self.rp * self.cp * self.kp
    }
    fn m_split(&self) -> AxisSplit {
        AxisSplit::parts(self.m, 1, self.rp, self.kp)
    }
    fn k_split(&self) -> AxisSplit {
        k_parts(self.k, self.k_grain, self.kp)
    }
    fn n_split(&self) -> AxisSplit {
        AxisSplit::parts(self.n, AMP_COLUMN_GROUP, self.cp, self.rp * self.kp)
    }
    /// Output rows of the reduce-scatter (`rp·kp` parts, stride 1): part
    /// `r·kp + k` lies inside row block `r` (the parts' bounds are
    /// `⌊q·m / (rp·kp)⌋`, so every `kp`-th one is a bound of the `rp`-way
    /// split).
    fn m_fine(&self) -> AxisSplit {
        AxisSplit::parts(self.m, 1, self.rp * self.kp, 1)
    }
    fn a_layout(&self) -> Layout {
        Layout {
            first_tile: self.base,
            rows: self.m_split(),
            cols: self.k_split(),
            replicas: self.cp,
            replica_stride: self.rp * self.kp,
        }
    }
    /// `b` as stored: `[K, N]`, or `[N, K]` when transposed.
    fn b_layout(&self, transposed: bool) -> Layout {
        let (rows, cols) = if transposed {
            (self.n_split(), self.k_split())
        } else {
            (self.k_split(), self.n_split())
        };
        Layout {
            first_tile: self.base,
            rows,
            cols,
            replicas: self.rp,
            replica_stride: self.kp,
        }
    }
    /// Streamed storage: each replica of a block keeps one row slice of it,
    /// cut at single rows (at the column-group grain a 48-row block split
    /// 8 ways leaves 5 replicas empty and 3 holding a third each).
    fn b_storage(&self, transposed: bool) -> Layout {
        let req = self.b_layout(transposed);
        Layout {
            rows: AxisSplit {
                grain: 1,
                inner: self.rp,
                inner_stride: self.kp,
                ..req.rows
            },
            replicas: 1,
            replica_stride: 0,
            ..req
        }
    }
    fn out_layout(&self) -> Layout {
        if self.kp == 1 {
            Layout {
                first_tile: self.base,
                rows: self.m_split(),
                cols: self.n_split(),
                replicas: 1,
                replica_stride: 0,
            }
        } else {
            Layout {
                first_tile: self.base,
                rows: self.m_fine(),
                cols: self.n_split(),
                replicas: 1,
                replica_stride: 0,
            }
        }
    }
    fn tile(&self, r: u32, c: u32, k: u32) -> u32 {
        self.base + (c * self.rp + r) * self.kp + k
    }
    /// Slowest tile's kernel cycles (the largest blocks) — for pre-screening.
    fn screen_cycles(&self, types: (DType, DType, DType)) -> u64 {
        let m = self.m_split().max_extent();
        let k = self.k_split().max_extent();
        let n = self.n_split().max_extent();
        let mut c = gemm_cycles(m, k, n, types, true);
        if self.kp > 1 {
            // Reduce-scatter words and the reduction, roughly.
            let slice_bytes =
                self.m_fine().max_extent() as u64 * n as u64 * types.2.size_bytes() as u64;
            let others = self.kp as u64 - 1;
            c += 600 + slice_bytes / 4 * others + slice_bytes * others;
        }
        c
    }
    /// Largest per-tile bytes the grid itself needs (operand blocks + output).
    fn screen_bytes(&self, ea: u64, eb: u64, eo: u64, ep: u64) -> u64 {
        let m = self.m_split().max_extent() as u64;
        let k = self.k_split().max_extent() as u64;
        let n = self.n_split().max_extent() as u64;
        let partial = if self.kp > 1 { m * n * ep * 2 } else { 0 };
        m * k * ea + k * n * eb + m * n * eo + partial
    }
}

/// Grains per part an axis may be cut into: up to 64 column groups (1024
/// columns) per tile.
const PER_PART: [u32; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
/// Rows per block: also 96–384. The AMP feeds a weight set per column
/// group and micro-group whatever the rows, so short blocks pay the feed
/// as often as the passes (at 61 FP8 rows: 244 pass cycles against 235 of
/// feed, `cost::gemm_cycles`); the planner weighs that against the larger
/// operand blocks.
const ROWS_PER_BLOCK: [u32; 17] = [
    1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
];

/// Part counts for an axis of `len` elements in `grain`s: one per
/// grains-per-part figure of `per_part`, at most `limit` parts.
fn options(len: u32, grain: u32, limit: u32, per_part: &[u32]) -> Vec<u32> {
    let units = len.div_ceil(grain).max(1);
    let mut v: Vec<u32> = per_part
        .iter()
        .map(|&per| units.div_ceil(per))
        .filter(|&p| p >= 1 && p <= limit)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// How a GEMM splits K into `parts` runs of whole `grain`s (the product
/// mode's micro-group), as `docs/facts/device-numerics.md` §4 defines it
/// for the products a package records as split
/// ([`crate::description::KSplit`]); the host's reference implements that rule
/// on its own.
pub const fn k_parts(k: u32, grain: u32, parts: u32) -> AxisSplit {
    AxisSplit::parts(k, grain, parts, 1)
}

/// Keeps the Pareto set over (cycles, bytes), then the cheapest first.
fn pareto(mut grids: Vec<(u64, u64, Grid)>, keep: usize) -> Vec<Grid> {
    grids.sort_by_key(|g| (g.0, g.1));
    let mut best_bytes = u64::MAX;
    let mut out = Vec::new();
    for (_, bytes, g) in grids {
        if bytes < best_bytes {
            best_bytes = bytes;
            out.push(g);
        }
    }
    // Spread picks over the frontier: always the fastest and the smallest.
    if out.len() > keep {
        let last = out.len() - 1;
        out = (0..keep)
            .map(|i| out[i * last / (keep - 1).max(1)])
            .collect();
    }
    out
}

/// What a grid's kernels write: the output type, or with a K split the
/// partials in the AMP mode's own partials type (the reduction converts).
fn partials(g: &Grid, product: AmpProduct, cx: &GenCx<'_>) -> DType {
    if g.kp > 1 {
        product.partials()
    } else {
        cx.out.dtype
    }
}

/// K splits a grid may use: beyond powers of two they let a grid fill the
/// chip (So400m fc2 in FP16: 12×24×5 = 1440 tiles instead of 12×12×8 =
/// 1152). An FP8 × FP8 product split over K rounds each part's FP16
/// partials apart, so it differs from the device-numerics reference's one
/// sequence by those roundings (whole-K blocks agree bit for bit); without
/// splits the 46-row fc2 operand blocks (198 KB) no longer place.
const K_SPLITS: [u32; 10] = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16];

/// Candidate GEMM plans.
pub fn plans(cx: &GenCx<'_>, mm: &MatMul) -> PlanResult<Vec<OpPlan>> {
    if mm.transpose_a {
        return Err(cx.unsupported("matmul with transposed a"));
    }
    let (a, b) = (cx.operand(0)?, cx.operand(1)?);
    let b_dims = b.ty.shape.dims();
    if b_dims
        .iter()
        .take(b_dims.len().saturating_sub(2))
        .any(|&d| d != 1)
    {
        return Err(cx.unsupported("matmul with a batched b"));
    }
    let (m, k) = (a.view.rows, a.view.cols);
    let n = cx.out.cols;
    let (ea, eb, eo) = (
        a.view.elem() as u64,
        b.view.elem() as u64,
        cx.out.elem() as u64,
    );
    let t = cx.cfg.tiles;
    let product = AmpProduct::of(a.view.dtype, b.view.dtype, cx.out.dtype);
    let k_grain = product.mode.k_micro_group();
    let mut grids = Vec::new();
    for cp in options(n, AMP_COLUMN_GROUP, t, &PER_PART) {
        for kp in K_SPLITS {
            // The listed row-block sizes, and the row-block count that
            // fills the chip for this column and K split: with the list
            // alone, ViT-B/16 at batch 16 (3,152 rows) ran fc1 on 25 × 48
            // = 1,200 tiles where 30 × 48 = 1,440 fit.
            let fill = (t / (cp * kp)).min(m);
            let mut rps = options(m, 1, t / (cp * kp), &ROWS_PER_BLOCK);
            if fill >= 1 {
                rps.push(fill);
            }
            rps.sort_unstable();
            rps.dedup();
            for rp in rps {
                let g = Grid {
                    m,
                    k,
                    n,
                    rp,
                    cp,
                    kp,
                    k_grain,
                    base: 0,
                };
                let partial = partials(&g, product, cx);
                if g.tiles() > t || kp > k.div_ceil(k_grain) {
                    continue;
                }
                // Use at least a quarter of what the shape can use.
                let usable = (m as u64 * n.div_ceil(AMP_COLUMN_GROUP) as u64).min(t as u64);
                if (g.tiles() as u64) * 4 < usable {
                    continue;
                }
                grids.push((
                    g.screen_cycles((a.view.dtype, b.view.dtype, partial)),
                    g.screen_bytes(ea, eb, eo, partial.size_bytes() as u64),
                    g,
                ));
            }
        }
    }
    let weights_pending = b.current.is_none();
    let mut out = Vec::new();
    let mut placed = Vec::new();
    for g in pareto(grids, 6) {
        placed.push(g);
        // The same grid ending at the last tile (see `GenConfig::gemm_far_end`).
        if cx.cfg.gemm_far_end && g.tiles() < t {
            placed.push(Grid {
                base: t - g.tiles(),
                ..g
            });
        }
    }
    for g in placed {
        if weights_pending {
            out.push(build(
                cx,
                mm,
                g,
                WeightMode::Resident { interleaved: false },
            )?);
            out.push(build(
                cx,
                mm,
                g,
                WeightMode::Resident { interleaved: true },
            )?);
            // With row replicas the weights stream from block storage (each
            // replica keeps a row slice of its block: one contiguous piece
            // per partner). Offered beside the balanced storage as well,
            // the beam keeps the balanced choice on its local cost and
            // loses globally: So400m 27L estimates 11.87 M against 11.02 M.
            if g.rp > 1 {
                out.push(build(cx, mm, g, WeightMode::Streamed)?);
            } else {
                out.push(build(cx, mm, g, WeightMode::StreamedBalanced)?);
            }
        } else {
            out.push(build(cx, mm, g, WeightMode::Computed)?);
        }
    }
    Ok(out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WeightMode {
    Resident {
        interleaved: bool,
    },
    Streamed,
    /// Streamed from storage balanced over every tile (the default storage).
    StreamedBalanced,
    /// `b` is an activation: re-laid out like any operand.
    Computed,
}

fn build(cx: &GenCx<'_>, mm: &MatMul, g: Grid, mode: WeightMode) -> PlanResult<OpPlan> {
    let (a, b) = (&cx.operands[0], &cx.operands[1]);
    let b_interleaved = !matches!(mode, WeightMode::Resident { interleaved: false });
    let b_req = g.b_layout(mm.transpose_b);
    let b_plan = OperandPlan {
        layout: b_req,
        storage: match mode {
            WeightMode::Streamed => Some(g.b_storage(mm.transpose_b)),
            WeightMode::StreamedBalanced => Some(super::default_storage(&b.view, cx.cfg.tiles)),
            _ => None,
        },
        class: if b_interleaved {
            MemoryClass::Interleaved
        } else {
            MemoryClass::Standard
        },
    };
    let a_plan = OperandPlan {
        layout: g.a_layout(),
        storage: None,
        class: MemoryClass::Standard,
    };
    let product = AmpProduct::of(a.view.dtype, b.view.dtype, cx.out.dtype);
    let partial_dtype = partials(&g, product, cx);
    let (m_s, k_s, n_s) = (g.m_split(), g.k_split(), g.n_split());
    let mut calls = Vec::new();
    for r in 0..g.rp {
        for c in 0..g.cp {
            for kk in 0..g.kp {
                let (mr, kr, nr) = (m_s.range(r), k_s.range(kk), n_s.range(c));
                if mr.is_empty() || kr.is_empty() || nr.is_empty() {
                    continue;
                }
                let out_slot = if g.kp > 1 {
                    Slot::Scratch(0)
                } else {
                    Slot::Output
                };
                calls.push(PlannedCall {
                    tile: g.tile(r, c, kk),
                    kernel: Kernel::Gemm {
                        m: mr.len() as u32,
                        k: kr.len() as u32,
                        n: nr.len() as u32,
                        a: a.view.dtype,
                        b: b.view.dtype,
                        out: partial_dtype,
                        b_transposed: mm.transpose_b,
                        b_interleaved,
                    },
                    operands: vec![
                        SlotRef {
                            slot: out_slot,
                            offset: 0,
                        },
                        SlotRef {
                            slot: Slot::Operand(0),
                            offset: 0,
                        },
                        SlotRef {
                            slot: Slot::Operand(1),
                            offset: 0,
                        },
                    ],
                });
            }
        }
    }
    calls.sort_by_key(|c| c.tile);
    let mut stages = vec![Stage::Compute(calls)];
    let mut scratch = Vec::new();
    if g.kp > 1 {
        let (partials, received, exchange, reduce) =
            reduce_scatter(cx, &g, partial_dtype, cx.out.dtype)?;
        scratch.push(ScratchPlan {
            name: "partials",
            dtype: partial_dtype,
            blocks: Arc::new(partials),
            class: MemoryClass::Interleaved,
            align: ipuc_target::ipu21::sram::AMP_BUFFER_ALIGN,
        });
        scratch.push(ScratchPlan {
            name: "received partials",
            dtype: partial_dtype,
            blocks: Arc::new(received),
            class: MemoryClass::Standard,
            align: ipuc_target::ipu21::sram::BASE_BUFFER_ALIGN,
        });
        stages.push(Stage::Exchange(exchange));
        stages.push(Stage::Compute(reduce));
    }
    let cost: Cycles = OpPlan::stage_cost(&stages);
    let streamed = matches!(mode, WeightMode::Streamed | WeightMode::StreamedBalanced);
    Ok(OpPlan {
        op: cx.op,
        family: PlanFamily::Gemm {
            rows: g.rp,
            cols: g.cp,
            k: g.kp,
            streamed,
            interleaved: b_interleaved,
        },
        operands: vec![a_plan, b_plan],
        output: g.out_layout(),
        output_class: if g.kp > 1 {
            MemoryClass::Standard
        } else {
            MemoryClass::Interleaved
        },
        output_is_view: false,
        scratch,
        stages,
        cost,
        summary: format!(
            "gemm {}x{}x{} grid {}x{}x{}{} weights {}",
            g.m,
            g.k,
            g.n,
            g.rp,
            g.cp,
            g.kp,
            if g.base > 0 {
                format!(" from tile {}", g.base)
            } else {
                alloc::string::String::new()
            },
            match mode {
                WeightMode::Resident { interleaved: true } => "resident interleaved",
                WeightMode::Resident { interleaved: false } => "resident standard",
                WeightMode::Streamed => "streamed",
                WeightMode::StreamedBalanced => "streamed from balanced storage",
                WeightMode::Computed => "computed",
            }
        ),
    })
}

/// What a K-split grid adds: partial blocks, receive buffers, the
/// exchange and the reduction calls.
type ReduceScatter = (
    Vec<TileBlock>,
    Vec<TileBlock>,
    Vec<PlannedTransfer>,
    Vec<PlannedCall>,
);

/// Partial blocks, receive buffers, the exchange and the reduction calls.
///
/// Two parts of the output's type are summed by an `add` that reads the
/// own part in place: the parts' F32 sum rounded once, as a reduce gives
/// it (`docs/facts/device-numerics.md` §4), at the binary-op rate instead
/// of the strided reduce's per-output overhead, and without copying the
/// own part beside the received one.
fn reduce_scatter(
    cx: &GenCx<'_>,
    g: &Grid,
    partial: DType,
    out: DType,
) -> PlanResult<ReduceScatter> {
    let elem = partial.size_bytes() as u32;
    let pair = g.kp == 2 && partial == out;
    let (m_s, n_s, fine) = (g.m_split(), g.n_split(), g.m_fine());
    let mut partials = Vec::new();
    let mut received = Vec::new();
    let mut transfers = Vec::new();
    let mut calls = Vec::new();
    for c in 0..g.cp {
        let nc = n_s.range(c);
        let pitch = nc.len() as u32 * elem;
        for r in 0..g.rp {
            let mr = m_s.range(r);
            for kk in 0..g.kp {
                let tile = g.tile(r, c, kk);
                let block_tile = cx.tile(tile)?;
                if !mr.is_empty() && pitch > 0 {
                    partials.push(TileBlock {
                        tile: block_tile,
                        rows: mr.clone(),
                        cols: nc.clone(),
                        bytes: mr.len() as u32 * pitch,
                    });
                }
                // This tile reduces output row slice `kk` of block `r`: in
                // every partner's partial, `slice` rows from the same offset.
                let slice = fine.range(r * g.kp + kk);
                let part_bytes = slice.len() as u32 * pitch;
                if part_bytes == 0 {
                    continue;
                }
                // The slice in this tile's own partial, sent from there.
                let from = SlotRef {
                    slot: Slot::Scratch(0),
                    offset: (slice.start - mr.start) * pitch,
                };
                // Where part `src_k` of the slice is read: the own one in
                // place when the sum is a pair, else gathered beside the
                // received ones (the reduce reads its parts back to back).
                let received_parts = if pair { 1 } else { g.kp };
                let part = |src_k: u32| -> SlotRef {
                    if pair && src_k == kk {
                        from
                    } else {
                        SlotRef {
                            slot: Slot::Scratch(1),
                            offset: if pair { 0 } else { src_k * part_bytes },
                        }
                    }
                };
                received.push(TileBlock {
                    tile: block_tile,
                    rows: slice.clone(),
                    cols: 0..nc.len() as u32 * received_parts,
                    bytes: part_bytes * received_parts,
                });
                for src_k in 0..g.kp {
                    if src_k != kk {
                        transfers.push(PlannedTransfer {
                            source_tile: g.tile(r, c, src_k),
                            source: from,
                            source_pitch: part_bytes,
                            rows: 1,
                            row_bytes: part_bytes,
                            destinations: vec![PlannedDestination {
                                tile,
                                at: part(src_k),
                                pitch: part_bytes,
                            }],
                        });
                    } else if !pair {
                        calls.push(PlannedCall {
                            tile,
                            kernel: Kernel::Copy {
                                rows: 1,
                                row_bytes: part_bytes,
                                src_pitch: part_bytes,
                                dst_pitch: part_bytes,
                            },
                            operands: vec![part(src_k), from],
                        });
                    }
                }
                let output = SlotRef {
                    slot: Slot::Output,
                    offset: 0,
                };
                calls.push(if pair {
                    PlannedCall {
                        tile,
                        kernel: Kernel::Add {
                            rows: slice.len() as u32,
                            cols: nc.len() as u32,
                            broadcast_rows: false,
                            dtype: out,
                        },
                        operands: vec![output, part(0), part(1)],
                    }
                } else {
                    PlannedCall {
                        tile,
                        kernel: Kernel::ReduceAdd {
                            elements: slice.len() as u32 * nc.len() as u32,
                            parts: g.kp,
                            input: partial,
                            out,
                        },
                        operands: vec![output, part(0)],
                    }
                });
            }
        }
    }
    transfers.sort_by_key(|t| t.source_tile);
    calls.sort_by_key(|c| c.tile);
    Ok((partials, received, transfers, calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(m: u32, rp: u32, kp: u32) -> Grid {
        Grid {
            m,
            k: 4304,
            n: 1152,
            rp,
            cp: 24,
            kp,
            k_grain: 32,
            base: 0,
        }
    }

    /// Every reduce-scatter slice lies inside its partners' row block, so
    /// each partner sends it as one contiguous run of whole rows.
    #[test]
    fn reduce_scatter_slices_nest_in_the_row_blocks() {
        for (m, rp, kp) in [
            (729, 8, 5),
            (729, 12, 3),
            (729, 6, 3),
            (16, 3, 4),
            (5, 4, 3),
        ] {
            let g = grid(m, rp, kp);
            let (coarse, fine) = (g.m_split(), g.m_fine());
            for r in 0..rp {
                let block = coarse.range(r);
                let slices: Vec<_> = (0..kp).map(|k| fine.range(r * kp + k)).collect();
                assert_eq!(slices.first().unwrap().start, block.start, "{m} {rp}x{kp}");
                assert_eq!(slices.last().unwrap().end, block.end, "{m} {rp}x{kp}");
                assert!(slices.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
    }

    /// The grid's tiles, its output and a bias row broadcast over the
    /// output are each one-to-one.
    #[test]
    fn grid_tiles_are_distinct_and_the_output_takes_a_broadcast_row() {
        let g = grid(729, 8, 5);
        let mut tiles: Vec<u32> = (0..g.rp)
            .flat_map(|r| (0..g.cp).flat_map(move |c| (0..g.kp).map(move |k| g.tile(r, c, k))))
            .collect();
        tiles.sort_unstable();
        tiles.dedup();
        assert_eq!(tiles.len() as u32, g.tiles());
        let out = g.out_layout();
        out.validate().unwrap();
        assert_eq!(
            out.rows.inner, 1,
            "one-level rows: a bias row broadcasts over them"
        );
        for r in 0..g.rp {
            for c in 0..g.cp {
                for k in 0..g.kp {
                    let q = r * g.kp + k;
                    let tile = out.first_tile + out.rows.tile_offset(q) + out.cols.tile_offset(c);
                    assert_eq!(tile, g.tile(r, c, k));
                }
            }
        }
    }
}
