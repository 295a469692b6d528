//! One tile: SRAM, the supervisor and six worker contexts, supervisor CSRs,
//! and the barrel scheduler that interleaves them (see [`super::cycle`]).

use std::sync::Arc;

use ipuc_target::ipu21::sram::is_executable;
use ipuc_target::ipu21::topology::PhysicalTile;

use super::codelet::CodeletTable;
use super::context::{Context, ContextId, ContextState, CONTEXTS};
use super::cycle::ISSUE_INTERVAL;
use super::fault::{FaultKind, SimFault};
use super::memory::{AccessError, CachedOp, TileMemory};
use super::op::Op;
use super::profile::{CycleSample, SampleKind};
use super::watch::{Sample, Watch};

/// Why [`Tile::run`] returned without a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The supervisor branched to address 0 and no worker is running.
    Halted,
    /// The supervisor reached a tile-external `sync zone` (any zone but
    /// LOCAL) and no worker is running; the device releases it.
    Sync { zone: u8 },
    /// [`Tile::run_until`] reached its pause cycle: nothing is wrong, the
    /// caller runs the tile again when it has looked up (progress).
    Paused,
}

/// A simulated IPU21 tile.
#[derive(Clone)]
pub struct Tile {
    pub(crate) id: PhysicalTile,
    pub(crate) memory: TileMemory,
    pub(crate) contexts: [Context; CONTEXTS],
    /// Supervisor CSR file (lower space); which indices are modelled is
    /// decided in `csr.rs`.
    pub(crate) sup_csr: [u32; 256],
    pub(crate) codelets: Arc<CodeletTable>,
    /// First cycle at which the barrel has a free issue slot.
    pub(crate) next_free: u64,
    pub(crate) samples: Vec<CycleSample>,
    /// Sorted supervisor addresses whose every issue is recorded in `marks`
    /// (the package's profile step table: where each step's code starts).
    markers: Arc<Vec<u32>>,
    /// `(address, issue cycle)` of every marker reached, in order.
    marks: Vec<(u32, u64)>,
    /// Start of the current compute span.
    step_start: u64,
    /// Global syncs this tile has passed.
    superstep: u64,
    /// Cycle at which the supervisor arrived at the pending global sync.
    sync_arrival: u64,
    /// Finds a tile that loops without progress (`watch.rs`).
    pub(crate) watch: Watch,
    /// `$COUNT_L`/`$COUNT_U` reads: the watch treats them like stores.
    pub(crate) clock_reads: u64,
}

impl core::fmt::Debug for Tile {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tile")
            .field("id", &self.id)
            .field("cycle", &self.next_free)
            .field("supervisor_pc", &format_args!("{:#x}", self.contexts[0].pc))
            .field("supervisor_state", &self.contexts[0].state)
            .finish()
    }
}

impl Tile {
    /// A tile with physical id `id` (`$TILE_ID`), zeroed SRAM, all contexts
    /// idle and no codelets.
    pub fn new(id: PhysicalTile) -> Self {
        Self {
            id,
            memory: TileMemory::new(),
            contexts: Default::default(),
            sup_csr: [0; 256],
            codelets: Arc::new(CodeletTable::new()),
            next_free: 0,
            samples: Vec::new(),
            markers: Arc::new(Vec::new()),
            marks: Vec::new(),
            step_start: 0,
            superstep: 0,
            sync_arrival: 0,
            watch: Watch::default(),
            clock_reads: 0,
        }
    }

    /// Physical tile id.
    pub fn id(&self) -> PhysicalTile {
        self.id
    }

    pub fn memory(&self) -> &TileMemory {
        &self.memory
    }

    pub fn memory_mut(&mut self) -> &mut TileMemory {
        &mut self.memory
    }

    /// Use `table` for supervisor calls to codelet entries.
    pub fn set_codelets(&mut self, table: Arc<CodeletTable>) {
        self.codelets = table;
    }

    /// Copy a segment into SRAM.
    pub fn load(&mut self, addr: u32, data: &[u8]) -> Result<(), AccessError> {
        self.memory.load(addr, data)
    }

    /// Point the supervisor at `entry` and make it runnable at the current cycle.
    pub fn start_supervisor(&mut self, entry: u32) {
        let now = self.next_free;
        let s = &mut self.contexts[0];
        s.pc = entry;
        s.state = ContextState::Running;
        s.ready_at = s.ready_at.max(now);
        self.step_start = now;
        self.watch.reset();
    }

    /// Start a new program run on a halted tile whose SRAM stays as it is
    /// (a resident package: the host re-enters it for the next inference).
    /// The tile's clock, samples, markers and superstep count start again
    /// from zero so each run's trace stands alone; registers and CSRs keep
    /// their values, as on hardware (the start-up code sets what it needs).
    /// Returns `false` (and changes nothing) if the tile is still running.
    pub fn restart(&mut self, entry: u32) -> bool {
        if !self.is_halted() {
            return false;
        }
        self.next_free = 0;
        for c in &mut self.contexts {
            c.ready_at = 0;
        }
        self.samples.clear();
        self.marks.clear();
        self.step_start = 0;
        self.superstep = 0;
        self.sync_arrival = 0;
        self.start_supervisor(entry);
        true
    }

    /// A context's registers and state.
    pub fn context(&self, id: ContextId) -> &Context {
        &self.contexts[usize::from(id.0)]
    }

    pub fn supervisor(&self) -> &Context {
        &self.contexts[0]
    }

    /// Mutable supervisor state, for exchange fabrics that run a called row
    /// and move the supervisor past it.
    pub fn supervisor_mut(&mut self) -> &mut Context {
        self.watch.reset();
        &mut self.contexts[0]
    }

    /// Supervisor CSR `index` as last written (or computed, for read-only ones
    /// such as `$TILE_ID`, see `csr.rs`).
    pub fn supervisor_csr(&self, index: u8) -> u32 {
        self.sup_csr[usize::from(index)]
    }

    /// Set a supervisor CSR directly (test set-up, exchange fabrics).
    pub fn set_supervisor_csr(&mut self, index: u8, value: u32) {
        self.watch.reset();
        self.sup_csr[usize::from(index)] = value;
    }

    /// Current tile cycle: the first cycle with a free issue slot.
    pub fn cycle(&self) -> u64 {
        self.next_free
    }

    /// Cycle samples recorded so far.
    /// Record the issue cycle of the supervisor instruction at each of
    /// `addresses` (sorted) every time it runs: profile step boundaries.
    pub fn set_markers(&mut self, addresses: Arc<Vec<u32>>) {
        self.markers = addresses;
    }

    /// `(address, cycle)` of every marker the supervisor issued, in order.
    pub fn marks(&self) -> &[(u32, u64)] {
        &self.marks
    }

    pub fn samples(&self) -> &[CycleSample] {
        &self.samples
    }

    /// Record a sample (exchange fabrics record their own spans).
    pub fn push_sample(&mut self, sample: CycleSample) {
        self.samples.push(sample);
    }

    /// Delay the supervisor's next issue by `cycles` (an exchange fabric
    /// charging work it did on the supervisor's behalf; see also
    /// [`Tile::finish_row_call`]).
    pub fn charge_supervisor(&mut self, cycles: u64) {
        self.watch.reset();
        let s = &mut self.contexts[0];
        s.ready_at = s.ready_at.max(self.next_free) + cycles;
    }

    /// Global syncs passed.
    pub fn superstep(&self) -> u64 {
        self.superstep
    }

    /// Supervisor halted and no worker running.
    pub fn is_halted(&self) -> bool {
        self.contexts.iter().all(|c| c.state == ContextState::Idle)
    }

    /// Is the supervisor parked at a global sync (and nothing else running)?
    pub fn pending_sync(&self) -> Option<u8> {
        match self.contexts[0].state {
            ContextState::AtSync { zone } if !self.workers_running() => Some(zone),
            _ => None,
        }
    }

    /// Cycle at which the supervisor reached the pending global sync.
    pub fn sync_arrival(&self) -> u64 {
        self.sync_arrival
    }

    /// Release the supervisor from a global sync at `cycle` (device use).
    pub fn release_sync(&mut self, cycle: u64) {
        let zone = match self.contexts[0].state {
            ContextState::AtSync { zone } => zone,
            _ => return,
        };
        self.samples.push(CycleSample {
            kind: SampleKind::SyncWait {
                superstep: self.superstep,
                zone,
            },
            start: self.sync_arrival,
            end: cycle.max(self.sync_arrival),
        });
        self.superstep += 1;
        let s = &mut self.contexts[0];
        s.state = ContextState::Running;
        s.ready_at = s.ready_at.max(cycle);
        self.next_free = self.next_free.max(cycle);
        self.step_start = cycle.max(self.sync_arrival);
        // The release cycle and the exchange that follows come from outside.
        self.watch.reset();
    }

    pub(crate) fn workers_running(&self) -> bool {
        self.contexts[1..]
            .iter()
            .any(|c| c.state != ContextState::Idle)
    }

    pub(crate) fn fault(&self, c: usize, kind: FaultKind) -> SimFault {
        SimFault {
            tile: self.id,
            context: ContextId(c as u8),
            pc: self.contexts[c].pc,
            kind,
        }
    }

    /// Run until the supervisor halts or reaches a global sync with no worker
    /// running, or until a fault. `cycle_limit` is absolute: issuing at or
    /// after it is a [`FaultKind::CycleLimit`] fault (runaway code). A tile
    /// whose state repeats (an endless loop that stores nothing, see
    /// `watch.rs`) is a [`FaultKind::NoProgress`] fault.
    pub fn run(&mut self, cycle_limit: u64) -> Result<StopReason, SimFault> {
        self.run_until(cycle_limit, u64::MAX)
    }

    /// [`Tile::run`], but return [`StopReason::Paused`] instead of issuing at
    /// or after cycle `pause_at` (absolute) — after at least one issue, so
    /// every call makes progress — so a device can report progress during a
    /// long superstep; running again continues exactly where it paused.
    pub fn run_until(&mut self, cycle_limit: u64, pause_at: u64) -> Result<StopReason, SimFault> {
        // One comparison in the loop serves both bounds. The first
        // instruction ignores the pause, so every call moves on even when
        // the next issue is a whole slice away (after a long `delay` or a
        // codelet's charge).
        let mut stop = cycle_limit;
        loop {
            // Pick the context that has been ready longest (ties: lowest id).
            let mut best = usize::MAX;
            let mut best_ready = u64::MAX;
            for (i, c) in self.contexts.iter().enumerate() {
                if c.state == ContextState::Running && c.ready_at < best_ready {
                    best = i;
                    best_ready = c.ready_at;
                }
            }
            if best == usize::MAX {
                return Ok(self.stop_reason());
            }
            let t = best_ready.max(self.next_free);
            if t >= stop {
                if t >= cycle_limit {
                    return Err(self.fault(best, FaultKind::CycleLimit { limit: cycle_limit }));
                }
                return Ok(StopReason::Paused);
            }
            let pc = self.contexts[best].pc;
            if best == 0 && pc == 0 {
                // Branching to address 0 halts the supervisor
                // (docs/facts/ipu21-target.md §1.3); it takes no slot.
                self.contexts[0].state = ContextState::Idle;
                self.samples.push(CycleSample {
                    kind: SampleKind::Compute {
                        superstep: self.superstep,
                    },
                    start: self.step_start,
                    end: self.next_free.max(self.step_start),
                });
                continue;
            }
            let op = self.fetch(best, pc)?;
            if best == 0 && self.markers.binary_search(&pc).is_ok() {
                self.marks.push((pc, t));
            }
            self.next_free = t + 1;
            let ctx = &mut self.contexts[best];
            ctx.issued += 1;
            ctx.ready_at = t + ISSUE_INTERVAL;
            self.execute(best, op, t).map_err(|k| self.fault(best, k))?;
            stop = cycle_limit.min(pause_at);
            self.watch.countdown -= 1;
            if self.watch.countdown == 0 {
                self.check_progress()?;
            }
        }
    }

    /// Samples the tile's state for the progress watch; a repeat is a
    /// [`FaultKind::NoProgress`] fault at the first running context.
    #[cold]
    #[inline(never)]
    fn check_progress(&mut self) -> Result<(), SimFault> {
        let sample = Sample::of(
            &self.contexts,
            &self.sup_csr,
            self.next_free,
            self.memory.writes(),
            self.clock_reads,
        );
        self.watch.check(sample).map_err(|repeat| {
            let (context, pc) = repeat
                .running
                .first()
                .copied()
                .unwrap_or((ContextId::SUPERVISOR, self.contexts[0].pc));
            SimFault {
                tile: self.id,
                context,
                pc,
                kind: FaultKind::NoProgress {
                    instructions: repeat.instructions,
                    running: repeat.running,
                },
            }
        })
    }

    fn stop_reason(&mut self) -> StopReason {
        match self.contexts[0].state {
            ContextState::AtSync { zone } => StopReason::Sync { zone },
            // No worker is running, so a supervisor in `sync 2` would have
            // been released at the last worker exit; only Idle remains.
            _ => StopReason::Halted,
        }
    }

    /// Decoded instruction at `pc` for context `c` (cached per word).
    #[inline]
    fn fetch(&mut self, c: usize, pc: u32) -> Result<Op, SimFault> {
        if !is_executable(pc) {
            return Err(self.fault(c, FaultKind::FetchOutsideExecutable { addr: pc }));
        }
        if let CachedOp::Op(op) = self.memory.cached(pc) {
            return Ok(op);
        }
        let w0 = self
            .memory
            .read_u32(pc)
            .map_err(|_| self.fault(c, FaultKind::FetchOutsideExecutable { addr: pc }))?;
        // A two-word sendpicp needs its payload; past the end of SRAM the
        // decoder reports the missing payload itself.
        let words: [u32; 2] = [w0, self.memory.read_u32(pc + 4).unwrap_or(0)];
        let n = if self.memory.read_u32(pc + 4).is_ok() {
            2
        } else {
            1
        };
        let op = Op::decode(&words[..n])
            .map_err(|_| self.fault(c, FaultKind::Undecodable { word: w0 }))?;
        self.memory.set_cached(pc, op);
        Ok(op)
    }

    pub(crate) fn record_compute_end(&mut self, end: u64) {
        self.samples.push(CycleSample {
            kind: SampleKind::Compute {
                superstep: self.superstep,
            },
            start: self.step_start,
            end: end.max(self.step_start),
        });
        self.sync_arrival = end;
    }
}
