//! The planner's per-tile estimate of a tile's linked image: runtime and
//! kernel stubs (a known size, [`super::PlanConfig::fixed_code_bytes`]), the
//! generated supervisor program, kernel argument blocks and exchange rows,
//! estimated per op stage and per exchange phase from the stages lowering
//! emits verbatim ([`super::opplan::Stage`], [`super::relayout`]).
//!
//! The image is charged as the whole elements it blocks
//! ([`crate::ipu21::sram::code_charge_bytes`]) in every moment's per-tile
//! usage, and placement keeps exactly those elements free for code, so a
//! plan the planner accepts fits placement's budget; after linking the
//! actual image is checked against the room placement left
//! ([`crate::place::TilePlacement::check_code`]).
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
use crate::ipu21::exchange_model::{SENDOFF_MAX_ITEMS, SEND_MAX_ITEMS, WORD_BYTES};
use crate::ipu21::sram::{code_charge_bytes, TILE_MEMORY_BUDGET};

/// Bytes of one supervisor instruction (`docs/facts/ipu21-target.md` §3).
const INSTRUCTION_BYTES: u64 = 4;

/// Program prologue and epilogue on every tile: the entry alignment, the
/// completion call, the idle row and the alignment of the three areas.
pub const PROGRAM_FIXED_BYTES: u64 = 64;

/// Largest kernel argument block (2 header + 8 GEMM body words) with its
/// 8-byte alignment pad (`kernel::args`).
pub const ARG_BLOCK_BYTES: u64 = 48;

/// The per-phase sequence every program tile runs (`emit::program`:
/// incoming/outgoing base, worker barrier, receive count, sync, row call),
/// plus a sharing-patch call.
pub const PHASE_SEQUENCE_BYTES: u64 = 15 * INSTRUCTION_BYTES;

/// A Repeat patch call (5 instructions), allowed once per sent transfer.
pub const PATCH_CALL_BYTES: u64 = 5 * INSTRUCTION_BYTES;

/// A row's fixed words on a tile taking part in a phase: alignment pad,
/// leading and trailing delays, `br $m10`.
pub const ROW_FIXED_BYTES: u64 = 16;

/// Piece length assumed when counting a run's pieces (the scheduler splits
/// a transfer into pieces of at least 32 words to fill gaps).
pub const PIECE_WORDS: u64 = 256;

/// Sender words per piece: a delay before it and a `send` (≤ 64 items;
/// longer pieces add `sendoff` continuations, counted apart), doubled for
/// multicasts sent again to smaller receiver groups
/// (`exchange::schedule`'s sender budget lets a sender's load grow 80 %).
const SEND_PIECE_BYTES: u64 = 2 * 2 * INSTRUCTION_BYTES;

/// Receiver words per piece: up to three control events (XPIC select, XPIC
/// neutral, PIC pointer; `exchange::timeline`), one of them a two-word
/// `sendpicp`, and a delay.
const RECEIVE_PIECE_BYTES: u64 = 5 * INSTRUCTION_BYTES;

/// Words of each later piece of a run, on its sender and each receiver: a
/// delay and a `send` (sender) or an XPIC select (receiver).
const CONTINUED_PIECE_BYTES: u64 = 2 * INSTRUCTION_BYTES;

/// Per-Repeat frame set-up on every tile (stack adjust, trip count, loop
/// counter, branch) and per iterated slot (store, load/advance/store).
pub const REPEAT_FIXED_BYTES: u64 = 12 * INSTRUCTION_BYTES;
/// Per iterated argument slot of a Repeat frame.
pub const REPEAT_SLOT_BYTES: u64 = 6 * INSTRUCTION_BYTES;

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

    /// Adds kernel calls (one step).
    pub fn add_calls(&mut self, calls: &[PlannedCall]) {
        for c in calls {
            self.tiles.push((c.tile, call_bytes(c.operands.len())));
        }
    }

    /// Adds one exchange phase: the sequence on every tile, the rows of
    /// every sender and receiver, each run counted as pieces of
    /// `piece_words` words ([`piece_words`]).
    pub fn add_phase(&mut self, transfers: &[PlannedTransfer], piece_words: u64) {
        let piece_words = piece_words.max(1);
        if transfers.is_empty() {
            return;
        }
        self.all += PHASE_SEQUENCE_BYTES;
        let first = self.tiles.len();
        for t in transfers {
            let (runs, run_bytes) = runs(t);
            let words = u64::from(run_bytes / WORD_BYTES);
            // A run's later pieces continue its pointer (no new PIC) and
            // its source: a delay and a send or a control each side.
            let more = runs * (words.div_ceil(piece_words).max(1) - 1);
            let continuations = runs * words.saturating_sub(u64::from(SEND_MAX_ITEMS))
                / u64::from(SENDOFF_MAX_ITEMS);
            self.tiles.push((
                t.source_tile,
                runs * SEND_PIECE_BYTES
                    + more * CONTINUED_PIECE_BYTES
                    + continuations * INSTRUCTION_BYTES
                    + PATCH_CALL_BYTES,
            ));
            for d in &t.destinations {
                self.tiles.push((
                    d.tile,
                    runs * RECEIVE_PIECE_BYTES + more * CONTINUED_PIECE_BYTES,
                ));
            }
        }
        // Each tile taking part gets one row's fixed words.
        let mut part: Vec<u32> = self.tiles[first..].iter().map(|&(t, _)| t).collect();
        part.sort_unstable();
        part.dedup();
        self.tiles
            .extend(part.into_iter().map(|t| (t, ROW_FIXED_BYTES)));
    }

    /// Sums the entries of each tile into one, sorted by tile (a cached
    /// use is added to many states).
    pub fn compact(mut self) -> Self {
        self.tiles.sort_unstable_by_key(|&(t, _)| t);
        let mut out: Vec<(u32, u64)> = Vec::with_capacity(self.tiles.len());
        for (t, b) in self.tiles {
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

/// Piece length the estimate assumes: [`PIECE_WORDS`], or the exchange
/// stream cap when it is shorter (`--exchange-stream-words`: the scheduler
/// starts a new piece, with its own send and receive controls, past it).
pub fn piece_words(max_stream_words: Option<u32>) -> u64 {
    max_stream_words.map_or(PIECE_WORDS, |w| u64::from(w.max(1)).min(PIECE_WORDS))
}

/// Runs a transfer is moved as: one contiguous run when both sides are
/// packed, else one per row (as `emit::exchange` wires it).
fn runs(t: &PlannedTransfer) -> (u64, u32) {
    let packed =
        t.source_pitch == t.row_bytes && t.destinations.iter().all(|d| d.pitch == t.row_bytes);
    if packed {
        (1, t.rows.saturating_mul(t.row_bytes))
    } else {
        (u64::from(t.rows), t.row_bytes)
    }
}

/// A kernel call with `operands` operands: each loaded through the Repeat
/// frame plus an offset (3 instructions), the argument-block address and
/// the call, and its argument block.
pub const fn call_bytes(operands: usize) -> u64 {
    (3 * operands as u64 + 2) * INSTRUCTION_BYTES + ARG_BLOCK_BYTES
}

/// Bytes a Repeat adds to every tile for its frame, with `slots` iterated
/// arguments.
pub const fn repeat_frame_bytes(slots: usize) -> u64 {
    REPEAT_FIXED_BYTES + REPEAT_SLOT_BYTES * slots as u64
}

/// Per-tile charge of an image estimate of `image_bytes`: the whole
/// elements it blocks ([`code_charge_bytes`]); an image that cannot fit in
/// region 0 is charged the whole budget plus its bytes, so no plan with it
/// is accepted (the report names the estimated image).
pub fn charge(image_bytes: u64) -> u64 {
    match u32::try_from(image_bytes).ok().and_then(code_charge_bytes) {
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
        let mut c = CodeUse::default();
        c.add_phase(core::slice::from_ref(&t), PIECE_WORDS);
        let mut all = 0;
        let mut usage = alloc::vec![0u64; 8];
        c.accumulate(&mut all, &mut usage);
        assert_eq!(all, PHASE_SEQUENCE_BYTES);
        assert_eq!(
            usage[3],
            SEND_PIECE_BYTES + PATCH_CALL_BYTES + ROW_FIXED_BYTES
        );
        assert_eq!(usage[5], RECEIVE_PIECE_BYTES + ROW_FIXED_BYTES);
        assert_eq!(usage[4], 0);
        // Strided rows are moved run by run.
        let strided = PlannedTransfer {
            rows: 4,
            source_pitch: 128,
            ..t
        };
        let mut c = CodeUse::default();
        c.add_phase(core::slice::from_ref(&strided), PIECE_WORDS);
        let mut usage = alloc::vec![0u64; 8];
        c.accumulate(&mut all, &mut usage);
        assert_eq!(usage[5], 4 * RECEIVE_PIECE_BYTES + ROW_FIXED_BYTES);
        // A stream cap of 4 words cuts each 16-word run into 4 pieces.
        let mut c = CodeUse::default();
        c.add_phase(core::slice::from_ref(&strided), piece_words(Some(4)));
        let mut usage = alloc::vec![0u64; 8];
        c.accumulate(&mut all, &mut usage);
        assert_eq!(
            usage[5],
            4 * RECEIVE_PIECE_BYTES + 12 * CONTINUED_PIECE_BYTES + ROW_FIXED_BYTES
        );
        assert_eq!(piece_words(None), PIECE_WORDS);
        assert_eq!(piece_words(Some(100_000)), PIECE_WORDS);
    }

    #[test]
    fn charge_is_whole_elements_and_huge_past_region_0() {
        assert_eq!(charge(100), 0x4000);
        assert!(charge(300_000) > u64::from(TILE_MEMORY_BUDGET));
    }
}
