//! The fabric's memory of phases it has executed.
//!
//! What a phase's witness finds — the stepped rows, the word moves, the
//! verdict of the §2.10 rules and whether any word is both read and
//! written — depends on the called rows alone: where each tile's row is,
//! the bases it runs with and its words up to the return. Stepping a row
//! reads nothing but those words (the word after a one-word instruction is
//! fetched and never decoded), and the receivers read no memory. A Repeat
//! runs the same rows every iteration (only patched words and moved bases
//! differ), and resident inferences run the whole program again, so most
//! phases recur word for word. The fabric keeps what it found for each
//! phase and, when the same calls find the same words in SRAM again, moves
//! the words found then without stepping the rows or the receivers: the
//! same moves in the same order, so memory, cycles and faults are those of
//! a fresh witness. The rows are compared with SRAM every time, so a
//! patched word or a moved base is a different phase.
//!
//! A phase is remembered the second time it is seen: the rows that a
//! Repeat patches differ in every iteration and would only fill the memo
//! (measured on So400m, 27 layers: 264 distinct phases of 758, of which
//! about 20 recur).

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use foldhash::fast::FixedState;
use rayon::prelude::*;

use super::{CopyRun, MoveRun, PhaseMemory, RowLocation, SteppedRow};

/// Bound on the move runs, copies and row words the memo holds (at most
/// 32 bytes each: 256 MiB), so a program whose phases never recur cannot
/// grow it without limit. Past it, new phases are executed and not
/// remembered.
const MEMO_RUNS: usize = 1 << 23;

/// Bound on the phases remembered for one set of calls (the same rows at
/// the same places with the same bases, their words differing).
const PHASES_PER_CALLS: usize = 16;

/// What the witness found for one phase that passed the rules, with the
/// rows' words it stepped.
#[derive(Debug)]
pub(super) struct Found {
    /// Every called row's words as they stood in SRAM, in call order.
    pub(super) code: Vec<u32>,
    /// The stepped rows, in call order (`words` of each is its share of
    /// `code`).
    pub(super) rows: Vec<SteppedRow>,
    /// Every word move, sorted as [`crate::witness::SteppedPhase::receive_runs`]
    /// gives them.
    pub(super) moves: Vec<MoveRun>,
    /// The moves' bulk copies when no word is both read and written
    /// (`store::bulk_copies`; empty otherwise).
    pub(super) copies: Vec<CopyRun>,
    /// Whether some word is both read and written by the phase.
    pub(super) reads_meet_writes: bool,
}

impl Found {
    /// The called rows' words in `memory`, in call order (`None` if a
    /// row's words cannot be read).
    pub(super) fn code_of(rows: &[SteppedRow], memory: &impl PhaseMemory) -> Option<Vec<u32>> {
        let mut code = Vec::with_capacity(rows.iter().map(|r| r.words as usize).sum());
        for r in rows {
            let l = r.location;
            if !memory.read_words(l.tile, l.address, r.words, &mut code) {
                return None;
            }
        }
        Some(code)
    }

    /// Whether `memory` holds this phase's rows, word for word, where it
    /// called them; the rows are compared in parallel.
    fn still_in(&self, memory: &(impl PhaseMemory + Sync)) -> bool {
        let mut starts = Vec::with_capacity(self.rows.len());
        let mut at = 0usize;
        for r in &self.rows {
            starts.push(at);
            at += r.words as usize;
        }
        self.rows.par_iter().zip(starts).all(|(r, start)| {
            let l = r.location;
            self.code
                .get(start..start + r.words as usize)
                .is_some_and(|words| memory.holds_words(l.tile, l.address, words))
        })
    }

    /// The memo's charge for holding this phase.
    fn runs(&self) -> usize {
        self.moves
            .len()
            .saturating_add(self.copies.len())
            .saturating_add(self.code.len() / 8)
    }
}

/// Phases seen, by their calls and rows.
#[derive(Debug, Default)]
pub struct PhaseMemo {
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    /// Hashes of the phases (calls and rows' words) seen once.
    once: HashSet<u64, FixedState>,
    /// Remembered phases by their calls.
    phases: HashMap<Vec<RowLocation>, Vec<Arc<Found>>, FixedState>,
    /// Move runs (and row words) held over all phases.
    runs: usize,
    /// Lookups that found a phase, and that did not.
    hits: u64,
    misses: u64,
}

impl PhaseMemo {
    /// What was found for `calls` when `memory` holds the same rows' words
    /// as when it was remembered.
    pub(super) fn get(
        &self,
        calls: &[RowLocation],
        memory: &(impl PhaseMemory + Sync),
    ) -> Option<Arc<Found>> {
        let candidates = {
            let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.phases.get(calls).cloned().unwrap_or_default()
        };
        let found = candidates.into_iter().find(|f| f.still_in(memory));
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        match found {
            Some(_) => seen.hits += 1,
            None => seen.misses += 1,
        }
        found
    }

    /// Remembers `found` for `calls` if the same phase was seen before and
    /// the bound allows (and its rows' words were all read).
    pub(super) fn insert(&self, calls: &[RowLocation], found: Arc<Found>) {
        let words: usize = found.rows.iter().map(|r| r.words as usize).sum();
        if found.code.len() != words {
            return;
        }
        let hash = FixedState::with_seed(0).hash_one((calls, &found.code));
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.once.insert(hash) {
            return;
        }
        let runs = seen.runs.saturating_add(found.runs());
        let held = seen.phases.get(calls).map_or(0, Vec::len);
        if runs <= MEMO_RUNS && held < PHASES_PER_CALLS {
            seen.runs = runs;
            seen.phases.entry(calls.to_vec()).or_default().push(found);
        }
    }

    /// (phases found, phases stepped) since the memo was made.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        (seen.hits, seen.misses)
    }
}
