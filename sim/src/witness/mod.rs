//! The exchange witness: the fabric's own execution of one phase's rows,
//! written independently of the compiler's `exchange::{decode_row, replay}`
//! (which the compile-time checker uses), so a route-timing mistake in
//! either shows up as a disagreement instead of being invisible to both.
//!
//! What it shares with the compiler is only the ISA instruction decoder
//! (`ipu21::isa::decode`, one word → one instruction) and the facts
//! (`ipu21::topology::{mux_time, direction}`, `ipu21::exchange_model`): the
//! event clock of every instruction, when its receive controls take effect,
//! which sender item a receiver's mux takes at which event and when and
//! where that item is written are derived here, from
//! `docs/facts/ipu21-target.md` §2.2–§2.6:
//!
//! 1. **Row stepping** (§2.2, §2.3): each tile's row is read word by word
//!    from its SRAM at the called address and stepped instruction by
//!    instruction on the tile's event clock (`delay n` n+1 events;
//!    `delaypic`/`delayxpic` n+1, control at the end; `send`/`sendoff`/
//!    `sendpic`/`sendpicp` one item per event, `sendpic(p)` controls at the
//!    first event; `br $m10` returns). The result is the tile's *wire* (the
//!    item it drives on the fabric at each event, with its SRAM byte address
//!    resolved through `$OUTGOING_BASE`) and its control events.
//! 2. **Receiver stepping** (§2.4–§2.6): each receiver is stepped event by
//!    event (idle stretches skipped): at event `e` it applies the controls of
//!    `e`, its mux takes from the selected source `s` whatever `s` drove at
//!    `e − T(s,d) − 1` on `d`'s route, and items taken `lag = 52 + 2·row(d)`
//!    events earlier (one more for 64-bit items) are written through the PIC
//!    pointer in force, which then advances.
//!
//! Every fault is a [`WitnessFault`] naming the tile, the event and, where
//! there is one, the SRAM address (the word being fetched, or where the
//! receive would have written).

use std::collections::VecDeque;

use rayon::prelude::*;

use ipuc_target::ipu21::exchange_model::{
    pic_lag, GUARD_EVENTS, PAIRED_ROW_TAIL_EVENTS, SCTL_PAIRED, XPIC_NEUTRAL,
};
use ipuc_target::ipu21::exchange_model::{RowBases, WordMove};
use ipuc_target::ipu21::isa::{decode, m, Csr, Instruction, PicField, PicTarget};
use ipuc_target::ipu21::sram::{TILE_MEMORY_BASE, TILE_MEMORY_END};
use ipuc_target::ipu21::topology::{direction, mux_time, PhysicalTile, TILE_COUNT};

use super::phase_memory::{csr_name, PhaseMemory, RowLocation, MAX_ROW_WORDS};

mod fault;
pub use fault::{RowFault, WitnessFault, WitnessFaultKind};
mod rows;
use rows::*;
mod receive;
use receive::*;
mod steady;
use steady::*;

/// One tile's executed row: where it was fetched from and how long it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SteppedRow {
    pub location: RowLocation,
    /// Words up to and including `br $m10`.
    pub words: u32,
    /// Event at which `br $m10` returned.
    pub events: u32,
}

/// What the witness saw: every tile's row and every word moved, sorted by
/// (destination tile, destination word).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WitnessRun {
    pub rows: Vec<SteppedRow>,
    pub moves: Vec<WordMove>,
}

/// A run of word moves into one receiver: word `i` goes from `src_word + i`
/// to `dst_word + i`, read at `read_event + i / per_event` and written at
/// `write_event + i / per_event` (`per_event` 1 for 32-bit items, 2 for
/// 64-bit items). [`MoveRun::moves`] lists its [`WordMove`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MoveRun {
    pub dst_tile: PhysicalTile,
    pub dst_word: u32,
    pub src_tile: PhysicalTile,
    pub src_word: u32,
    pub read_event: u32,
    pub write_event: u32,
    /// Words (at least 1).
    pub words: u32,
    /// Words per event: 1 or 2.
    pub per_event: u32,
}

impl MoveRun {
    /// Word `i` (< `words`) of the run.
    pub fn word(&self, i: u32) -> WordMove {
        WordMove {
            dst_tile: self.dst_tile.get(),
            dst_word: self.dst_word + i,
            src_tile: self.src_tile.get(),
            src_word: self.src_word + i,
            read_event: self.read_event + i / self.per_event,
            write_event: self.write_event + i / self.per_event,
        }
    }

    /// Word `i` (< `words`) of the run as a one-word run.
    pub fn single(&self, i: u32) -> MoveRun {
        MoveRun {
            dst_word: self.dst_word + i,
            src_word: self.src_word + i,
            read_event: self.read_event + i / self.per_event,
            write_event: self.write_event + i / self.per_event,
            words: 1,
            per_event: 1,
            ..*self
        }
    }

    /// The run's word moves, in order.
    pub fn moves(&self) -> impl Iterator<Item = WordMove> + '_ {
        (0..self.words).map(|i| self.word(i))
    }

    /// The run's last word move.
    pub fn last(&self) -> WordMove {
        self.word(self.words - 1)
    }
}

/// Every word move of `runs`, in order.
pub fn expand(runs: &[MoveRun]) -> Vec<WordMove> {
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.words as usize).sum());
    for r in runs {
        out.extend(r.moves());
    }
    out
}

/// Every word of `runs` as a one-word run, in order (what [`expand`] lists,
/// with typed tiles).
pub fn singles(runs: &[MoveRun]) -> Vec<MoveRun> {
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.words as usize).sum());
    for r in runs {
        out.extend((0..r.words).map(|i| r.single(i)));
    }
    out
}

/// Appends `next` to `runs`, extending the last run when `next` continues it
/// word for word (same tiles and width, next words, next events).
fn push_run(runs: &mut Vec<MoveRun>, next: MoveRun) {
    if let Some(last) = runs.last_mut() {
        let n = last.words;
        let continues = last.dst_tile == next.dst_tile
            && last.src_tile == next.src_tile
            && last.per_event == next.per_event
            && n.is_multiple_of(last.per_event)
            && last.dst_word.checked_add(n) == Some(next.dst_word)
            && last.src_word.checked_add(n) == Some(next.src_word)
            && last.read_event.checked_add(n / last.per_event) == Some(next.read_event)
            && last.write_event.checked_add(n / last.per_event) == Some(next.write_event);
        if continues {
            last.words += next.words;
            return;
        }
    }
    runs.push(next);
}

/// Sorts one receiver's runs into the order of their word moves sorted
/// (by destination word, then source, then events). Runs whose destination
/// words are disjoint keep their words together; otherwise every word is
/// sorted on its own and the runs rebuilt.
fn sort_runs(runs: &mut Vec<MoveRun>) {
    runs.sort_unstable();
    let disjoint = runs.windows(2).all(|w| {
        w[0].dst_tile < w[1].dst_tile
            || u64::from(w[0].dst_word) + u64::from(w[0].words) <= u64::from(w[1].dst_word)
    });
    if disjoint {
        return;
    }
    // One-word runs sort as their word moves do: the fields in the same
    // order, then `words` and `per_event`, both 1.
    let mut words = singles(runs);
    words.sort_unstable();
    runs.clear();
    for m in words {
        push_run(runs, m);
    }
}

/// A phase whose rows have been stepped from SRAM (step 1), ready to
/// receive (step 2).
pub struct SteppedPhase {
    tiles: Vec<Tile>,
    at: Vec<Option<usize>>,
}

/// Step 1: reads and steps every called row from SRAM.
/// Rows are independent: each is stepped on its own, in parallel, and the
/// first fault in call order is the one a serial pass finds.
pub fn step_rows(
    calls: &[RowLocation],
    memory: &(impl PhaseMemory + Sync),
) -> Result<SteppedPhase, WitnessFault> {
    let stepped: Vec<Result<Tile, WitnessFault>> = calls
        .par_iter()
        .map(|&call| {
            let mut t = step_row(call, memory)?;
            t.controls.sort_by_key(|c| c.0);
            Ok(t)
        })
        .collect();
    let mut tiles: Vec<Tile> = Vec::with_capacity(calls.len());
    let mut at: Vec<Option<usize>> = vec![None; usize::from(TILE_COUNT)];
    for (call, t) in calls.iter().zip(stepped) {
        at[call.tile.index()] = Some(tiles.len());
        tiles.push(t?);
    }
    Ok(SteppedPhase { tiles, at })
}

impl SteppedPhase {
    /// Every stepped row, in call order.
    pub fn rows(&self) -> impl Iterator<Item = SteppedRow> + '_ {
        self.tiles.iter().map(|t| t.row)
    }

    /// Step 2: steps every receiver; the words moved, sorted by
    /// (destination tile, destination word).
    pub fn receive(&self) -> Result<Vec<WordMove>, WitnessFault> {
        Ok(expand(&self.receive_runs(true)?))
    }

    /// [`SteppedPhase::receive`] as runs of moves: the same words in the
    /// same order. With `batch`, steady stretches of a receiver are stepped
    /// in bulk (same result, same faults); without, every event on its own.
    pub fn receive_runs(&self, batch: bool) -> Result<Vec<MoveRun>, WitnessFault> {
        let (tiles, at) = (&self.tiles, &self.at);
        let paired_sel: Vec<Vec<(u32, u32, u32)>> = tiles
            .par_iter()
            .map(|t| selections(&t.controls, true))
            .collect();
        partner_busy(tiles, at, &paired_sel)?;
        // Receivers are independent: each is stepped (and its moves sorted)
        // on its own, in parallel. Every move of receiver `d` has
        // `dst_tile == d` (the first sort key), so concatenating the
        // receivers' sorted moves in tile order is the whole phase sorted,
        // and the first fault in call order is the one a serial pass finds.
        let per_receiver: Vec<Result<Vec<MoveRun>, WitnessFault>> = tiles
            .par_iter()
            .enumerate()
            .map(|(i, t)| {
                let partner = t.row.location.tile.pair_partner();
                let theirs: &[(u32, u32, u32)] =
                    at[partner.index()].map_or(&[], |j| &paired_sel[j]);
                let mut moves = Vec::new();
                receive(t, &paired_sel[i], theirs, tiles, at, batch, &mut moves)?;
                sort_runs(&mut moves);
                Ok(moves)
            })
            .collect();
        let mut by_tile: Vec<(PhysicalTile, Vec<MoveRun>)> = Vec::with_capacity(tiles.len());
        for (t, r) in tiles.iter().zip(per_receiver) {
            by_tile.push((t.row.location.tile, r?));
        }
        by_tile.sort_unstable_by_key(|b| b.0);
        let mut moves = Vec::with_capacity(by_tile.iter().map(|b| b.1.len()).sum());
        for (_, m) in by_tile {
            for r in m {
                push_run(&mut moves, r);
            }
        }
        Ok(moves)
    }
}

/// Both steps: every row stepped from SRAM and every receiver stepped.
pub fn witness_phase(
    calls: &[RowLocation],
    memory: &(impl PhaseMemory + Sync),
) -> Result<WitnessRun, WitnessFault> {
    let stepped = step_rows(calls, memory)?;
    let moves = stepped.receive()?;
    Ok(WitnessRun {
        rows: stepped.rows().collect(),
        moves,
    })
}
