//! Progress watch: a tile that can no longer make progress is stopped with
//! a typed fault within milliseconds instead of spinning to its cycle
//! budget.
//!
//! Between two global syncs a tile is a closed, deterministic machine: no
//! other tile and no host touches it, and its timing is the same whatever
//! cycle it starts at. So if its whole state — every context's registers,
//! PC, state and readiness relative to the tile clock, the supervisor CSRs,
//! and SRAM — is the same at two moments, it will repeat what it did in
//! between forever and never reach a sync or halt. SRAM is not compared: a
//! counter of writes is ([`super::memory::TileMemory::writes`]), so two
//! states count as equal only if nothing was stored in between. Reading the
//! cycle counter (`$COUNT_L`/`$COUNT_U`) breaks the time invariance, so a
//! read is counted too. Both make the check conservative: a loop that
//! stores or reads the clock is left to the cycle budget; an equal state is
//! proof of an endless loop.
//!
//! The state is sampled every [`CHECK_INTERVAL`] issued instructions and
//! compared with a saved sample (Brent's cycle detection: the saved sample
//! moves to the current one at checkpoints 1, 2, 4, 8, …), so a loop of
//! any period is found after a number of checkpoints proportional to its
//! period plus the steps before it, and the hot loop pays one decrement and
//! one branch per instruction.

use super::context::{Context, ContextId, ContextState, CONTEXTS};

/// Instructions issued between two samples of a tile's state. A sample
/// costs about as much as a few hundred instructions, so this keeps the
/// watch below 1% of simulation time; a branch to itself is found after
/// two intervals.
pub const CHECK_INTERVAL: u32 = 1 << 16;

/// One context's part of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ContextSample {
    m: [u32; 16],
    a: [u32; 16],
    pc: u32,
    state: ContextState,
    /// `ready_at − tile clock`, clamped where the exact value cannot change
    /// what happens next (see [`ready_offset`]).
    ready: i64,
    exit_status: u32,
    sync_context: u32,
}

/// Everything that decides what a tile does next between syncs, except
/// SRAM (represented by its write count) and the absolute clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    contexts: [ContextSample; CONTEXTS],
    sup_csr: [u32; 256],
    memory_writes: u64,
    clock_reads: u64,
}

/// How far ahead of the tile clock a context may issue, as far as the
/// future can tell. An idle context's readiness is reset when it starts; a
/// supervisor waiting for its workers or at a sync is released at
/// `max(ready_at, now)`, so any past value means "now".
fn ready_offset(c: &Context, clock: u64) -> i64 {
    let offset = (i128::from(c.ready_at) - i128::from(clock))
        .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    match c.state {
        ContextState::Idle => 0,
        ContextState::Running => offset,
        ContextState::WaitingForWorkers | ContextState::AtSync { .. } => offset.max(0),
    }
}

impl Sample {
    pub(crate) fn of(
        contexts: &[Context; CONTEXTS],
        sup_csr: &[u32; 256],
        clock: u64,
        memory_writes: u64,
        clock_reads: u64,
    ) -> Sample {
        Sample {
            contexts: core::array::from_fn(|i| {
                let c = &contexts[i];
                ContextSample {
                    m: c.m,
                    a: c.a,
                    pc: c.pc,
                    state: c.state,
                    ready: ready_offset(c, clock),
                    exit_status: c.exit_status,
                    sync_context: c.sync_context,
                }
            }),
            sup_csr: *sup_csr,
            memory_writes,
            clock_reads,
        }
    }

    /// The contexts still issuing and their PCs (what a stuck tile is
    /// doing), supervisor first.
    pub(crate) fn running(&self) -> Vec<(ContextId, u32)> {
        self.contexts
            .iter()
            .enumerate()
            .filter(|(_, c)| c.state == ContextState::Running)
            .map(|(i, c)| (ContextId(i as u8), c.pc))
            .collect()
    }
}

/// The watch's state on one tile.
#[derive(Clone, Debug)]
pub(crate) struct Watch {
    /// Instructions to issue before the next sample.
    pub(crate) countdown: u32,
    /// Samples taken since the last reset.
    samples: u64,
    /// The sample index at which the saved sample moves next (a power of 2).
    next_save: u64,
    /// The saved sample and its index.
    saved: Option<(u64, Box<Sample>)>,
}

impl Default for Watch {
    fn default() -> Self {
        Watch {
            countdown: CHECK_INTERVAL,
            samples: 0,
            next_save: 1,
            saved: None,
        }
    }
}

/// A tile whose state repeated: it loops forever.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Repeat {
    /// Instructions issued between the two equal samples (a multiple of
    /// the loop's length).
    pub(crate) instructions: u64,
    /// The contexts issuing, with their PCs.
    pub(crate) running: Vec<(ContextId, u32)>,
}

impl Watch {
    /// Forget every sample: something outside the tile changed it (a sync
    /// release, the exchange, the host starting a run).
    pub(crate) fn reset(&mut self) {
        *self = Watch::default();
    }

    /// Takes a sample (called when `countdown` reaches 0); `Err` if it
    /// equals the saved one.
    pub(crate) fn check(&mut self, sample: Sample) -> Result<(), Repeat> {
        self.countdown = CHECK_INTERVAL;
        self.samples += 1;
        if let Some((at, saved)) = &mut self.saved {
            if **saved == sample {
                return Err(Repeat {
                    instructions: (self.samples - *at) * u64::from(CHECK_INTERVAL),
                    running: sample.running(),
                });
            }
            if self.samples == self.next_save {
                **saved = sample;
                *at = self.samples;
                self.next_save *= 2;
            }
        } else if self.samples == self.next_save {
            self.saved = Some((self.samples, Box::new(sample)));
            self.next_save *= 2;
        }
        Ok(())
    }
}
