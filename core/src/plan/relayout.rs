//! Re-layout: the block moves that turn a tensor held in one [`Layout`] into
//! another (or copy a window of it: slices, concatenation). The planner costs
//! exactly the transfers and local copies this module returns, and lowering
//! emits exactly them, so the decision is made once.
//!
//! For every destination block, the source parts it overlaps are found by
//! arithmetic ([`AxisSplit::parts_touching`]); each overlap becomes one
//! transfer multicast to every replica of the destination block that does not
//! already hold the source data, plus a local copy on replicas that do.

use alloc::vec::Vec;

use super::cost::Cycles;
use super::layout::{Block, Layout};
use super::opplan::{PlannedCall, PlannedDestination, PlannedTransfer, Slot, SlotRef, Stage};
use ipuc_target::kernel::Kernel;

/// Which rectangle of the source lands where in the destination: destination
/// rows/cols `[dst_origin, dst_origin + extent)` receive source
/// `[src_origin, src_origin + extent)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Window {
    /// Top-left corner in the destination tensor.
    pub dst_origin: [u32; 2],
    /// Top-left corner in the source tensor.
    pub src_origin: [u32; 2],
    /// Rows and columns moved.
    pub extent: [u32; 2],
}

impl Window {
    /// The whole tensor onto itself.
    pub fn whole(layout: &Layout) -> Self {
        Window {
            dst_origin: [0, 0],
            src_origin: [0, 0],
            extent: [layout.tensor_rows(), layout.tensor_cols()],
        }
    }
}

/// A run that is not a whole number of exchange words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unaligned {
    /// Bytes per run.
    pub row_bytes: u32,
}

/// The moves of one re-layout: one exchange phase, then local copies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Relayout {
    /// Remote moves (sorted by source tile).
    pub transfers: Vec<PlannedTransfer>,
    /// Local copies (sorted by tile).
    pub copies: Vec<PlannedCall>,
}

impl Relayout {
    /// The stages in execution order (empty ones omitted).
    pub fn into_stages(self) -> Vec<Stage> {
        let mut stages = Vec::new();
        if !self.transfers.is_empty() {
            stages.push(Stage::Exchange(self.transfers));
        }
        if !self.copies.is_empty() {
            stages.push(Stage::Compute(self.copies));
        }
        stages
    }

    /// Cycles: the exchange phase plus the slowest tile's copies.
    pub fn cost(&self) -> Cycles {
        let exchange = if self.transfers.is_empty() {
            0
        } else {
            super::cost::exchange_phase_cycles(super::opplan::max_endpoint_words(&self.transfers))
        };
        Cycles {
            compute: super::opplan::max_tile_cycles(&self.copies),
            exchange,
        }
    }
}

fn offset_in(block: &Block, row: u32, col: u32, elem: u32) -> u32 {
    ((row - block.rows.start) * block.cols.len() as u32 + (col - block.cols.start)) * elem
}

/// Moves that fill `dst` (slot `dst_slot`) from `src` (slot `src_slot`) over
/// `window`, for elements of `elem` bytes.
pub fn relayout(
    src: &Layout,
    src_slot: Slot,
    dst: &Layout,
    dst_slot: Slot,
    elem: u32,
    window: Window,
) -> Result<Relayout, Unaligned> {
    let mut out = Relayout::default();
    let [wr, wc] = window.extent;
    let dst_win = Block {
        rows: window.dst_origin[0]..window.dst_origin[0] + wr,
        cols: window.dst_origin[1]..window.dst_origin[1] + wc,
    };
    let shift_r = window.src_origin[0] as i64 - window.dst_origin[0] as i64;
    let shift_c = window.src_origin[1] as i64 - window.dst_origin[1] as i64;
    let drp = dst.rows.part_count();
    let dcp = dst.cols.part_count();
    let mut dst_tiles = Vec::new();
    for rq in 0..drp {
        for cq in 0..dcp {
            let dblock = dst.block(rq, cq);
            let want = dblock.intersect(&dst_win);
            if want.is_empty() {
                continue;
            }
            let s_rows =
                (want.rows.start as i64 + shift_r) as u32..(want.rows.end as i64 + shift_r) as u32;
            let s_cols =
                (want.cols.start as i64 + shift_c) as u32..(want.cols.end as i64 + shift_c) as u32;
            let s_want = Block {
                rows: s_rows.clone(),
                cols: s_cols.clone(),
            };
            dst_tiles.clear();
            dst_tiles.extend((0..dst.replicas).map(|rep| dst.tile_of(rq, cq, rep)));
            for sr in src.rows.parts_touching(s_rows.clone()) {
                for sc in src.cols.parts_touching(s_cols.clone()) {
                    let sblock = src.block(sr, sc);
                    let piece = sblock.intersect(&s_want);
                    if piece.is_empty() {
                        continue;
                    }
                    let rows = piece.rows.len() as u32;
                    let row_bytes = piece.cols.len() as u32 * elem;
                    let d_row0 = (piece.rows.start as i64 - shift_r) as u32;
                    let d_col0 = (piece.cols.start as i64 - shift_c) as u32;
                    let src_pitch = sblock.cols.len() as u32 * elem;
                    let dst_pitch = dblock.cols.len() as u32 * elem;
                    let src_off = offset_in(&sblock, piece.rows.start, piece.cols.start, elem);
                    let dst_off = offset_in(&dblock, d_row0, d_col0, elem);
                    // Contiguous in both blocks: one run.
                    let contiguous = row_bytes == src_pitch && row_bytes == dst_pitch;
                    let (runs, run_bytes) = if contiguous {
                        (1, rows * row_bytes)
                    } else {
                        (rows, row_bytes)
                    };
                    let src_tiles = (0..src.replicas).map(|k| src.tile_of(sr, sc, k));
                    let mut remote = Vec::new();
                    for &d in &dst_tiles {
                        if src_tiles.clone().any(|s| s == d) {
                            out.copies.push(PlannedCall {
                                tile: d,
                                kernel: Kernel::Copy {
                                    rows: runs,
                                    row_bytes: run_bytes,
                                    src_pitch,
                                    dst_pitch,
                                },
                                operands: alloc::vec![
                                    SlotRef {
                                        slot: dst_slot,
                                        offset: dst_off
                                    },
                                    SlotRef {
                                        slot: src_slot,
                                        offset: src_off
                                    },
                                ],
                            });
                        } else {
                            remote.push(PlannedDestination {
                                tile: d,
                                at: SlotRef {
                                    slot: dst_slot,
                                    offset: dst_off,
                                },
                                pitch: dst_pitch,
                            });
                        }
                    }
                    if remote.is_empty() {
                        continue;
                    }
                    if run_bytes % 4 != 0 {
                        return Err(Unaligned {
                            row_bytes: run_bytes,
                        });
                    }
                    // Spread sending over source replicas.
                    let k = (rq * dcp + cq) % src.replicas.max(1);
                    remote.sort_by_key(|d| d.tile);
                    out.transfers.push(PlannedTransfer {
                        source_tile: src.tile_of(sr, sc, k),
                        source: SlotRef {
                            slot: src_slot,
                            offset: src_off,
                        },
                        source_pitch: src_pitch,
                        rows: runs,
                        row_bytes: run_bytes,
                        destinations: remote,
                    });
                }
            }
        }
    }
    out.transfers.sort_by_key(|t| t.source_tile);
    out.copies.sort_by_key(|c| c.tile);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::layout::AxisSplit;

    /// Simulates the moves on byte arrays and checks every destination block
    /// receives exactly the source elements.
    fn check(src: &Layout, dst: &Layout, elem: u32) {
        let r = relayout(
            src,
            Slot::Operand(0),
            dst,
            Slot::Output,
            elem,
            Window::whole(dst),
        )
        .unwrap();
        let cols = src.tensor_cols();
        let value = |row: u32, col: u32| row * cols + col;
        use alloc::collections::BTreeMap;
        // tile -> (block, contents)
        let mut src_mem: BTreeMap<u32, (Block, Vec<u32>)> = BTreeMap::new();
        for (t, b) in src.placements() {
            let v = b
                .rows
                .clone()
                .flat_map(|r| b.cols.clone().map(move |c| value(r, c)))
                .collect();
            src_mem.insert(t, (b, v));
        }
        let mut dst_mem: BTreeMap<u32, (Block, Vec<u32>)> = BTreeMap::new();
        for (t, b) in dst.placements() {
            let n = b.elements() as usize;
            dst_mem.insert(t, (b, alloc::vec![u32::MAX; n]));
        }
        let mut copy = |from: u32,
                        off: u32,
                        pitch: u32,
                        to: u32,
                        doff: u32,
                        dpitch: u32,
                        rows: u32,
                        bytes: u32| {
            for i in 0..rows {
                for j in 0..bytes / elem {
                    let s = src_mem[&from].1[((off + i * pitch) / elem + j) as usize];
                    dst_mem.get_mut(&to).unwrap().1[((doff + i * dpitch) / elem + j) as usize] = s;
                }
            }
        };
        for t in &r.transfers {
            for d in &t.destinations {
                copy(
                    t.source_tile,
                    t.source.offset,
                    t.source_pitch,
                    d.tile,
                    d.at.offset,
                    d.pitch,
                    t.rows,
                    t.row_bytes,
                );
            }
        }
        for c in &r.copies {
            if let Kernel::Copy {
                rows,
                row_bytes,
                src_pitch,
                dst_pitch,
            } = c.kernel
            {
                copy(
                    c.tile,
                    c.operands[1].offset,
                    src_pitch,
                    c.tile,
                    c.operands[0].offset,
                    dst_pitch,
                    rows,
                    row_bytes,
                );
            }
        }
        for (_, (b, v)) in dst_mem {
            let want: Vec<u32> = b
                .rows
                .clone()
                .flat_map(|r| b.cols.clone().map(move |c| value(r, c)))
                .collect();
            assert_eq!(v, want);
        }
    }

    #[test]
    fn row_to_column_and_replicated_relayouts_deliver_every_element() {
        let rows = Layout::row_split(37, 24, 0, 5);
        let cols = Layout {
            cols: AxisSplit::parts(24, 2, 3, 1),
            rows: AxisSplit::whole(37),
            first_tile: 2,
            replicas: 1,
            replica_stride: 0,
        };
        check(&rows, &cols, 2);
        check(&cols, &rows, 2);
        let repl = Layout {
            replicas: 4,
            replica_stride: 3,
            ..cols
        };
        check(&rows, &repl, 2);
        check(&repl, &rows, 2);
        // Identity: no transfers, only... nothing (same tiles, same blocks -> local copies).
        let r = relayout(
            &rows,
            Slot::Operand(0),
            &rows,
            Slot::Output,
            2,
            Window::whole(&rows),
        )
        .unwrap();
        assert!(r.transfers.is_empty());
        assert_eq!(r.copies.len(), 5);
    }

    #[test]
    fn multicast_sends_each_word_once() {
        let src = Layout::row_split(8, 8, 0, 8);
        let dst = Layout {
            replicas: 8,
            replica_stride: 1,
            ..Layout::single(8, 8, 0)
        };
        let r = relayout(
            &src,
            Slot::Operand(0),
            &dst,
            Slot::Output,
            4,
            Window::whole(&dst),
        )
        .unwrap();
        assert_eq!(r.transfers.len(), 8);
        assert!(r.transfers.iter().all(|t| t.destinations.len() == 7));
        // Each tile sends 8 words and receives 56, in 7 contiguous pieces.
        let piece = u64::from(crate::plan::charges::EXCHANGE_PIECE_EVENTS);
        assert_eq!(
            super::super::opplan::max_endpoint_words(&r.transfers),
            56 + 7 * piece
        );
    }

    #[test]
    fn odd_runs_are_rejected() {
        let src = Layout::row_split(4, 3, 0, 4);
        let dst = Layout::row_split(4, 3, 4, 2);
        assert_eq!(
            relayout(
                &src,
                Slot::Operand(0),
                &dst,
                Slot::Output,
                2,
                Window::whole(&dst)
            ),
            Err(Unaligned { row_bytes: 6 })
        );
    }
}
