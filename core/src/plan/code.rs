//! The planner's per-tile estimate of a tile's linked image: runtime and
//! kernel stubs (a known size, [`super::PlanConfig::fixed_code_bytes`]), the
//! generated supervisor program, kernel argument blocks and exchange rows,
//! estimated per op stage and per exchange phase from the stages lowering
//! emits verbatim ([`super::opplan::Stage`], [`super::relayout`]).
//!
//! The image is charged in every moment's per-tile usage as the whole
//! elements it blocks ([`ipuc_target::ipu21::sram::code_charge_bytes`]), and
//! placement keeps exactly those elements free for code, so a plan the
//! planner accepts fits placement's budget; when no plan fits that way the
//! planner tries once more charging only the bytes the image spans
//! ([`CodeCharge`]), and placement is the exact check. After linking the
//! actual image is checked against the room placement left
//! ([`crate::place::TilePlacement::check_code`]); the program part is an
//! upper bound, the rows part a model (the scheduler may cut runs into
//! more pieces), so an image past its room is refitted by the pipeline
//! (patch block to the data region, or the tile placed again with its
//! image's room), bounded and named in a note.
//!
//! The figures follow the sequences `emit` writes (`emit::program`: 4-byte
//! instructions, 8-byte aligned areas) and the row encoder
//! (`exchange::encode`, `exchange::timeline`), rounded up: every operand is assumed loaded
//! through a Repeat frame (3 instructions), every argument block stored
//! (no sharing), every transfer run split into pieces of
//! [`PIECE_WORDS`] words and every piece given a delay, a send with its
//! continuations and, on each receiver, a two-word `sendpicp` with a
//! realignment split. Row sharing and argument-block sharing only make the
//! real image smaller.

use alloc::vec::Vec;

use super::opplan::{PlannedCall, PlannedTransfer, Stage};
use ipuc_target::ipu21::exchange_model::{SENDOFF_MAX_ITEMS, SEND_MAX_ITEMS, WORD_BYTES};
use ipuc_target::ipu21::sram::{code_charge_bytes, code_span_bytes, TILE_MEMORY_BUDGET};
use ipuc_target::ipu21::tile_set::TileSet;
use ipuc_target::ipu21::topology::{LogicalTile, TILE_COUNT};
use ipuc_target::kernel::{encode as encode_args, KernelArgs};
use ipuc_target::lookup::LookupMap;

/// Bytes of one supervisor instruction (`docs/facts/ipu21-target.md` §3).
const INSTRUCTION_BYTES: u64 = 4;

/// Program prologue and epilogue on every tile: the entry alignment, the
/// completion call (2 instructions), the idle row (1 word, 8-byte aligned)
/// and the alignment of the three areas (`emit::program`): 32 bytes at
/// most.
pub const PROGRAM_FIXED_BYTES: u64 = 32;

/// Largest kernel argument block (2 header + 8 GEMM body words) with its
/// 8-byte alignment pad (`kernel::args`).
pub const ARG_BLOCK_BYTES: u64 = 48;

/// The per-phase sequence every program tile runs (`emit::program`:
/// incoming base (2), outgoing base (1), worker barrier, receive count
/// (2), sync, row call): 8 instructions; a relocated sender reads its
/// outgoing base from the Repeat frame, one instruction more
/// ([`RELOCATED_BASE_BYTES`], charged to senders).
pub const PHASE_SEQUENCE_BYTES: u64 = 8 * INSTRUCTION_BYTES;

/// The extra instruction of a relocated sender's outgoing-base set-up.
pub const RELOCATED_BASE_BYTES: u64 = INSTRUCTION_BYTES;

/// A patch call's net code on a tile taking part in a phase. A sharing
/// patch call is 5 instructions (20 bytes), but a use with a list stores
/// no row of its own: it saves at least the `br` and the differing word
/// the list rewrites (8 bytes) of the row the estimate counts for it, so
/// it adds at most 12 bytes (a Repeat patch table's call, 20 bytes, is
/// rare after outgoing-base relocation).
pub const PATCH_CALL_BYTES: u64 = 3 * INSTRUCTION_BYTES;

/// A row's fixed words on a tile taking part in a phase: the 8-byte
/// alignment pad, the trailing delay and `br $m10`.
pub const ROW_FIXED_BYTES: u64 = 3 * WORD;

/// Patch data allowed per tile taking part in a phase, beyond the slack
/// of the last element charged for the image (where `host::compile` puts
/// the block when it fits; else it is charged as data): none. So400m,
/// 1 layer: 11,017 lists of 10.9 words on average over 51,292 row uses,
/// at most 2,896 bytes on a tile.
pub const PATCH_DATA_BYTES: u64 = 0;

/// Piece length assumed when counting a run's pieces (the scheduler splits
/// a transfer into pieces of at least 32 words only to fill gaps; So400m
/// and siglip-small rows are mostly one piece per run).
pub const PIECE_WORDS: u64 = 256;

/// Bytes of one row word.
const WORD: u64 = 4;

/// Sender words per piece: a delay before it and a `send` (≤ 64 items;
/// longer pieces add `sendoff` continuations, counted apart).
const SEND_PIECE_BYTES: u64 = 2 * WORD;

/// Sender bytes per run for pieces the scheduler splits off: it may
/// shorten a piece by up to three words to move a receiver's tear-down
/// off a blocked event, leaving a short piece of its own (siglip-small:
/// some 2-word runs sent as 1 + 1, a `send` and a delay more). Not
/// charged: the split pieces' cost is inside the slack of the receive
/// words and of the program bound (measured per tile, image ≤ estimate on
/// most tiles of siglip-small and So400m). It is not a bound: siglip-small
/// at 2 layers on 12 tiles, tile 11, sends 148 and 314 pieces for 132 and
/// 264 runs in its two attention phases (image 13,168 bytes, estimate
/// 12,466); So400m FP16 fused at 12 layers ends 1,826 bytes past the
/// estimate on tile 662, FP16 unfused at 11 layers up to 5,754 on tile
/// 989. A tile past its estimate is refitted after linking (its patch
/// block moved to the data region, or the tile placed again with room for
/// its image: `pipeline::back::link`), never silently.
const SPLIT_SEND_BYTES: u64 = 0;

/// Receiver bytes per piece: its XPIC select, its PIC pointer and the
/// XPIC tear-down (`exchange::timeline`) are one word each (`delayxpic`,
/// `delaypic`, `sendpic`) at most, but a pointer that continues the last
/// piece's or a piece that starts as the last one stops needs neither of
/// the last two: 2.5 words (So400m, 1 layer: 2.12 words per received run
/// at the median tile, 2.82 at the most; siglip-small 2.45 and 3.08, its
/// 2-word runs split most often; siglip-small 2 layers on 12 tiles, tile
/// 11's larger attention phase: 2.76 words per received piece, 100 of its
/// 304 pointers two-word `sendpicp`s).
const RECEIVE_PIECE_BYTES: u64 = 10;

/// The sender budget the compile schedules with (`exchange::
/// ScheduleOptions::sender_budget_percent`, set from this constant by the
/// host's compile driver): a multicast is sent to up to `budget / load`
/// receiver groups, each a message of its own on the sender.
pub const SENDER_BUDGET_PERCENT: u64 = 0;

/// Code bytes an op adds: `all` on every tile, `tiles` on single tiles
/// (unsorted, a tile may repeat).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeUse {
    /// Bytes added to every tile (per-phase sequences, Repeat frames).
    pub all: u64,
    /// `(tile, bytes)` added to one tile.
    pub tiles: Vec<(u32, u64)>,
}

impl CodeUse {
    /// Adds the code of one stage (`piece_words` as for [`CodeUse::add_phase`]).
    pub fn add_stage(&mut self, stage: &Stage, piece_words: u64) {
        match stage {
            Stage::Compute(calls) => self.add_calls(calls),
            Stage::Exchange(transfers) => self.add_phase(transfers, piece_words),
        }
    }

    /// Adds kernel calls (one step): each call's operand loads and call,
    /// and one argument block per distinct block on a tile (emission
    /// shares blocks by contents).
    pub fn add_calls(&mut self, calls: &[PlannedCall]) {
        // The (tile, block) pairs seen so far: a lookup per call, not a walk
        // over every earlier call's block (a re-layout copies on every tile).
        let mut blocks: LookupMap<(u32, Vec<u32>), ()> = LookupMap::default();
        for c in calls {
            let words = encode_args(&KernelArgs::new(c.kernel.clone()));
            let b = (words.len() as u64 * WORD).next_multiple_of(8);
            let block = match blocks.insert((c.tile, words), ()) {
                Some(()) => 0,
                None => b,
            };
            let loads: u64 = c
                .operands
                .iter()
                .map(|o| operand_load_instructions(o.offset))
                .sum();
            self.tiles
                .push((c.tile, (loads + 2) * INSTRUCTION_BYTES + block));
        }
    }

    /// Adds one exchange phase: the sequence on every tile, the rows of
    /// every sender and receiver, each run counted as pieces of
    /// `piece_words` words ([`piece_words`]) and each multicast as the
    /// receiver groups the scheduler's sender budget allows.
    pub fn add_phase(&mut self, transfers: &[PlannedTransfer], piece_words: u64) {
        let piece_words = piece_words.max(1);
        if transfers.is_empty() {
            return;
        }
        self.all += PHASE_SEQUENCE_BYTES;
        let first = self.tiles.len();
        // Stream loads per tile, as the scheduler computes them: every
        // run's words on its sender and on each receiver. Without a sender
        // budget every multicast is one message whatever the loads, so they
        // are not worked out.
        let mut merged: Vec<(u32, u64, u64)> = Vec::new(); // (tile, out, in)
        if SENDER_BUDGET_PERCENT != 0 {
            for t in transfers {
                let (runs, run_bytes) = runs(t);
                let words = runs * u64::from(run_bytes / WORD_BYTES);
                merged.push((t.source_tile, words, 0));
                merged.extend(t.destinations.iter().map(|d| (d.tile, 0, words)));
            }
            merged.sort_unstable_by_key(|l| l.0);
            merged.dedup_by(|next, m| {
                let same = next.0 == m.0;
                if same {
                    m.1 += next.1;
                    m.2 += next.2;
                }
                same
            });
        }
        let lower_bound = merged.iter().map(|m| m.1.max(m.2)).max().unwrap_or(0);
        let budget = lower_bound * SENDER_BUDGET_PERCENT / 100;
        let out_load = |tile: u32| {
            merged
                .binary_search_by_key(&tile, |m| m.0)
                .map_or(0, |i| merged[i].1)
        };
        for t in transfers {
            let (runs, run_bytes) = runs(t);
            let words = u64::from(run_bytes / WORD_BYTES);
            let pieces = words.div_ceil(piece_words).max(1);
            let continuations = words
                .saturating_sub(u64::from(SEND_MAX_ITEMS))
                .div_ceil(u64::from(SENDOFF_MAX_ITEMS));
            let groups =
                multicast_groups(t.destinations.len() as u64, budget, out_load(t.source_tile));
            self.tiles.push((
                t.source_tile,
                groups
                    * runs
                    * (pieces * SEND_PIECE_BYTES + SPLIT_SEND_BYTES + continuations * WORD),
            ));
            for d in &t.destinations {
                self.tiles
                    .push((d.tile, runs * pieces * RECEIVE_PIECE_BYTES));
            }
        }
        // A sender may be relocated (its outgoing base from the frame).
        let senders = tile_set(transfers.iter().map(|t| t.source_tile));
        // Each tile taking part gets one row's fixed words and may run a
        // patch call (a sharing list or a Repeat table) before its row.
        let part = tile_set(self.tiles[first..].iter().map(|&(t, _)| t));
        self.tiles.extend(part.iter().map(|t| {
            (
                u32::from(t.get()),
                ROW_FIXED_BYTES + PATCH_CALL_BYTES + PATCH_DATA_BYTES,
            )
        }));
        self.tiles.extend(
            senders
                .iter()
                .map(|t| (u32::from(t.get()), RELOCATED_BASE_BYTES)),
        );
    }

    /// Sums the entries of each tile into one, sorted by tile (a cached
    /// use is added to many states).
    pub fn compact(mut self) -> Self {
        // Tiles of the machine are summed in a dense array (a use has many
        // entries per tile: every transfer's sender and receivers); any
        // others, sorted.
        let tiles = usize::from(TILE_COUNT);
        let mut sums: Vec<Option<u64>> = alloc::vec![None; tiles];
        let mut others: Vec<(u32, u64)> = Vec::new();
        for &(t, b) in &self.tiles {
            match sums.get_mut(t as usize) {
                Some(s) => *s = Some(s.unwrap_or(0) + b),
                None => others.push((t, b)),
            }
        }
        others.sort_unstable_by_key(|&(t, _)| t);
        let mut out: Vec<(u32, u64)> = sums
            .iter()
            .enumerate()
            .filter_map(|(t, s)| s.map(|b| (t as u32, b)))
            .collect();
        for (t, b) in others {
            match out.last_mut() {
                Some(last) if last.0 == t => last.1 += b,
                _ => out.push((t, b)),
            }
        }
        self.tiles = out;
        self
    }

    /// Adds another use.
    pub fn add(&mut self, other: &CodeUse) {
        self.all += other.all;
        self.tiles.extend_from_slice(&other.tiles);
    }

    /// Adds this use to a per-tile array (and `all` to `*all`).
    pub fn accumulate(&self, all: &mut u64, usage: &mut [u64]) {
        *all += self.all;
        for &(t, b) in &self.tiles {
            if let Some(u) = usage.get_mut(t as usize) {
                *u += b;
            }
        }
    }
}

/// The tiles among `ids`, each once and in ascending id, with no heap list.
/// An id past the machine has no bit, as it has no entry in the per-tile
/// arrays [`CodeUse::accumulate`] adds to.
fn tile_set(ids: impl Iterator<Item = u32>) -> TileSet<LogicalTile> {
    ids.filter_map(|t| LogicalTile::new(t).ok()).collect()
}

/// Messages a multicast to `destinations` receivers costs its sender: the
/// receiver groups `exchange::schedule`'s sender budget splits it into
/// (`budget / load` groups of equal size, at least one, at most one per
/// receiver).
fn multicast_groups(destinations: u64, budget: u64, load: u64) -> u64 {
    if destinations == 0 {
        return 1;
    }
    let groups = (budget / load.max(1)).clamp(1, destinations);
    let per = destinations.div_ceil(groups);
    destinations.div_ceil(per)
}

/// Instructions loading one operand address: a `setzi` (absolute), or a
/// Repeat-frame load, plus `setzi` + `add` when the operand starts inside
/// its buffer.
const fn operand_load_instructions(offset: u32) -> u64 {
    if offset == 0 {
        1
    } else {
        3
    }
}

/// Piece length the estimate assumes: [`PIECE_WORDS`], or the exchange
/// stream cap when it is shorter (`--exchange-stream-words`: the scheduler
/// starts a new piece, with its own send and receive controls, past it).
pub fn piece_words(max_stream_words: Option<u32>) -> u64 {
    max_stream_words.map_or(PIECE_WORDS, |w| u64::from(w.max(1)).min(PIECE_WORDS))
}

/// Runs a transfer is moved as: one contiguous run when both sides are
/// packed, else one per row (as `rows` wires it).
fn runs(t: &PlannedTransfer) -> (u64, u32) {
    let packed =
        t.source_pitch == t.row_bytes && t.destinations.iter().all(|d| d.pitch == t.row_bytes);
    if packed {
        (1, t.rows.saturating_mul(t.row_bytes))
    } else {
        (u64::from(t.rows), t.row_bytes)
    }
}

/// Per-Repeat frame set-up on every tile: stack adjust, trip count (2),
/// the loop's count-down (5) and the stack restore.
pub const REPEAT_FIXED_BYTES: u64 = 9 * INSTRUCTION_BYTES;
/// Per iterated slot of a Repeat frame: its set-up (2) and advance (4).
pub const REPEAT_SLOT_BYTES: u64 = 6 * INSTRUCTION_BYTES;

/// A kernel call with `operands` operands at non-zero offsets, with the
/// largest argument block (no sharing).
pub const fn call_bytes(operands: usize) -> u64 {
    (3 * operands as u64 + 2) * INSTRUCTION_BYTES + ARG_BLOCK_BYTES
}

/// Bytes a Repeat adds to every tile for its frame, with `slots` iterated
/// arguments.
pub const fn repeat_frame_bytes(slots: usize) -> u64 {
    REPEAT_FIXED_BYTES + REPEAT_SLOT_BYTES * slots as u64
}

/// How the planner charges a tile's estimated image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CodeCharge {
    /// The whole elements it blocks, as placement reserves them
    /// ([`code_charge_bytes`]): a plan the planner accepts fits placement.
    #[default]
    WholeElements,
    /// The bytes it spans from the start of SRAM to the end of its fetch
    /// look-ahead guard ([`code_span_bytes`]), up to one element less per
    /// tile than placement reserves; placement is then the exact check (a
    /// plan it cannot place fails with a placement-stage rejection naming
    /// the tile, the bytes needed and the bytes free). The estimate is an
    /// upper bound with slack (image/estimate 0.86 at the median tile of
    /// So400m at 27 layers) and the planner's data bound is conservative
    /// too (moments, not placed blocks): with whole elements So400m at 27
    /// layers is rejected at 590,816 of 586,960 bytes on one tile, with the
    /// span it plans and places at a 554,736-byte peak.
    Span,
}

/// Per-tile charge of an image estimate of `image_bytes` (see
/// [`CodeCharge`]); an image that cannot fit in region 0 is charged the
/// whole budget plus its bytes, so no plan with it is accepted (the report
/// names the estimated image).
#[inline]
pub fn charge(image_bytes: u64, how: CodeCharge) -> u64 {
    let bytes = u32::try_from(image_bytes).ok().and_then(|b| match how {
        CodeCharge::WholeElements => code_charge_bytes(b),
        CodeCharge::Span => code_span_bytes(b),
    });
    match bytes {
        Some(c) => u64::from(c),
        None => u64::from(TILE_MEMORY_BUDGET).saturating_add(image_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::opplan::{PlannedDestination, Slot, SlotRef};

    fn at() -> SlotRef {
        SlotRef {
            slot: Slot::Output,
            offset: 0,
        }
    }

    #[test]
    fn a_phase_charges_its_senders_receivers_and_every_tile() {
        let t = PlannedTransfer {
            source_tile: 3,
            source: at(),
            source_pitch: 64,
            rows: 1,
            row_bytes: 64,
            destinations: alloc::vec![PlannedDestination {
                tile: 5,
                at: at(),
                pitch: 64,
            }],
        };
        let part = ROW_FIXED_BYTES + PATCH_CALL_BYTES + PATCH_DATA_BYTES;
        let mut c = CodeUse::default();
        c.add_phase(core::slice::from_ref(&t), PIECE_WORDS);
        let mut all = 0;
        let mut usage = alloc::vec![0u64; 8];
        c.accumulate(&mut all, &mut usage);
        assert_eq!(all, PHASE_SEQUENCE_BYTES);
        assert_eq!(
            usage[3],
            SEND_PIECE_BYTES + SPLIT_SEND_BYTES + part + RELOCATED_BASE_BYTES
        );
        assert_eq!(usage[5], RECEIVE_PIECE_BYTES + part);
        assert_eq!(usage[4], 0);
        // Strided rows are moved run by run.
        let strided = PlannedTransfer {
            rows: 4,
            source_pitch: 128,
            ..t.clone()
        };
        let mut c = CodeUse::default();
        c.add_phase(core::slice::from_ref(&strided), PIECE_WORDS);
        let mut usage = alloc::vec![0u64; 8];
        c.accumulate(&mut all, &mut usage);
        assert_eq!(usage[5], 4 * RECEIVE_PIECE_BYTES + part);
        // A stream cap of 4 words cuts each 16-word run into 4 pieces.
        let mut c = CodeUse::default();
        c.add_phase(core::slice::from_ref(&strided), piece_words(Some(4)));
        let mut usage = alloc::vec![0u64; 8];
        c.accumulate(&mut all, &mut usage);
        assert_eq!(usage[5], 16 * RECEIVE_PIECE_BYTES + part);
        assert_eq!(piece_words(None), PIECE_WORDS);
        assert_eq!(piece_words(Some(100_000)), PIECE_WORDS);
        // A light sender of a multicast in a heavy phase sends it to
        // several receiver groups, one message each.
        let multicast = PlannedTransfer {
            destinations: (10..14)
                .map(|tile| PlannedDestination {
                    tile,
                    at: at(),
                    pitch: 64,
                })
                .collect(),
            ..t.clone()
        };
        let heavy = PlannedTransfer {
            source_tile: 1,
            rows: 1,
            row_bytes: 64 * 16,
            source_pitch: 64 * 16,
            destinations: alloc::vec![PlannedDestination {
                tile: 2,
                at: at(),
                pitch: 64 * 16,
            }],
            ..t
        };
        let mut c = CodeUse::default();
        c.add_phase(&[multicast, heavy], PIECE_WORDS);
        let mut usage = alloc::vec![0u64; 16];
        c.accumulate(&mut all, &mut usage);
        // With budget 0.8 × 256 words over a load of 16: 12 groups, one per
        // receiver; without a budget, one message.
        let groups = multicast_groups(4, 256 * SENDER_BUDGET_PERCENT / 100, 16);
        assert_eq!(
            usage[3],
            groups * (SEND_PIECE_BYTES + SPLIT_SEND_BYTES) + part + RELOCATED_BASE_BYTES
        );
        assert_eq!(multicast_groups(4, 204, 16), 4);
        assert_eq!(multicast_groups(5, 40, 16), 2);
        assert_eq!(multicast_groups(5, 0, 16), 1);
    }

    #[test]
    fn charge_is_whole_elements_or_the_span_and_huge_past_region_0() {
        assert_eq!(charge(100, CodeCharge::WholeElements), 0x4000);
        // 16 bytes below the load base, the image, the 64-byte look-ahead.
        assert_eq!(charge(100, CodeCharge::Span), 16 + 100 + 64);
        for how in [CodeCharge::WholeElements, CodeCharge::Span] {
            assert!(charge(300_000, how) > u64::from(TILE_MEMORY_BUDGET));
        }
    }
}
