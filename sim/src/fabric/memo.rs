//! The fabric's memory of phases it has executed.
//!
//! What a phase's witness finds after stepping the rows — the word moves,
//! the verdict of the §2.10 rules and whether any word is both read and
//! written — depends on the stepped rows alone ([`SteppedPhase::key`]): the
//! receivers read no memory. A Repeat runs the same rows every iteration
//! (only patched words and moved bases differ), and resident inferences run
//! the whole program again, so most phases recur word for word. The fabric
//! keeps what it found for each key and, when the same stepped rows come
//! back, moves the words without stepping the receivers again: the same
//! moves in the same order, so memory, cycles and faults are those of a
//! fresh witness. Rows are still read and stepped from SRAM every time, so
//! a patched word or a moved base is a different key.
//!
//! A phase is remembered the second time it is seen: the rows that a
//! Repeat patches differ in every iteration and would only fill the memo
//! (measured on So400m, 27 layers: 264 distinct phases of 758, of which
//! about 20 recur).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::{Arc, Mutex};

use super::{CopyRun, MoveRun};
use crate::witness::PhaseKey;

/// Bound on the move runs and copies the memo holds (at most 32 bytes
/// each: 256 MiB), so a program whose phases never recur cannot grow it
/// without limit. Past it, new phases are executed and not remembered.
const MEMO_RUNS: usize = 1 << 23;

/// What the witness found for one stepped phase that passed the rules.
#[derive(Debug)]
pub(super) struct Found {
    /// Every word move, sorted as [`crate::witness::SteppedPhase::receive_runs`]
    /// gives them.
    pub(super) moves: Vec<MoveRun>,
    /// The moves' bulk copies when no word is both read and written
    /// (`store::bulk_copies`; empty otherwise).
    pub(super) copies: Vec<CopyRun>,
    /// Whether some word is both read and written by the phase.
    pub(super) reads_meet_writes: bool,
}

/// Phases seen, by their stepped rows.
#[derive(Debug, Default)]
pub struct PhaseMemo {
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    /// Hashes of the keys seen once.
    once: HashSet<u64>,
    phases: HashMap<PhaseKey, Arc<Found>>,
    /// Move runs held over all phases.
    runs: usize,
    /// Lookups that found a phase, and that did not.
    hits: u64,
    misses: u64,
}

impl PhaseMemo {
    /// What was found for `key`, if it was remembered.
    pub(super) fn get(&self, key: &PhaseKey) -> Option<Arc<Found>> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let found = seen.phases.get(key).cloned();
        match found {
            Some(_) => seen.hits += 1,
            None => seen.misses += 1,
        }
        found
    }

    /// Remembers `found` for `key` if the key was seen before and the
    /// bound allows.
    pub(super) fn insert(&self, key: PhaseKey, found: Arc<Found>) {
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(&key);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.once.insert(hash) {
            return;
        }
        let runs = seen
            .runs
            .saturating_add(found.moves.len())
            .saturating_add(found.copies.len());
        if runs <= MEMO_RUNS {
            seen.runs = runs;
            seen.phases.insert(key, found);
        }
    }

    /// (phases found, phases stepped) since the memo was made.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        (seen.hits, seen.misses)
    }
}
