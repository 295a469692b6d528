//! The tile cycle model.
//!
//! # Model
//!
//! A tile is a **six-slot barrel**: the hardware services its threads
//! round-robin and most instructions take one cycle (Graphcore, *IPU
//! Programmer's Guide*, "About the IPU",
//! <https://docs.graphcore.ai/projects/ipu-programmers-guide/en/latest/about_ipu.html>,
//! cited in `docs/facts/ipu21-target.md §6`). The simplest model consistent
//! with that text, and the one issue #2 prescribes, is:
//!
//! * the tile issues **at most one instruction per cycle** (one barrel slot);
//! * every context — the supervisor and each of the six workers — issues
//!   **at most one instruction every [`ISSUE_INTERVAL`] = 6 cycles**, so one
//!   thread alone runs at 1/6 of the tile clock and six busy workers fill
//!   the barrel;
//! * when more contexts are ready than slots are free (supervisor and six
//!   workers all busy), the context that has been ready longest issues first
//!   (ties: lowest context number);
//! * a memory access costs nothing beyond its issue slot: the six-cycle issue
//!   interval covers load-to-use latency, and ld32/st32 move 4 bytes, below
//!   the 8 B/cycle planning bandwidth of standard memory
//!   (`docs/facts/ipu21-target.md §6`);
//! * `delay n` holds its context for n + 1 cycles (§6) or the issue interval,
//!   whichever is longer;
//! * `runall`: workers become ready the cycle after it issues; `sync 2`
//!   (LOCAL) releases the supervisor the cycle after the last worker's
//!   `exitz` — both latencies are not stated in the sources (§6 [U]) and are
//!   modelled as zero extra cycles;
//! * internal/external syncs are resolved by the device (see
//!   [`super::bsp`]): all participants are released together at the
//!   latest arrival plus the sync latency ([`INTERNAL_SYNC_CYCLES`] by
//!   default, `--sync-cycles`) — **modelled**, not simulated;
//! * native codelets charge the cycles their cost model returns.
//!
//! # Check against measurement (not fitted)
//!
//! The scalar row patcher's loop is five instructions per word (two indexed
//! `ld32`, an indexed `st32`, `add`, `brnzdec`), so the model predicts
//! 5 × 6 = 30 cycles per word. The seed's hardware measurements
//! (`docs/facts/seed-vit-repeat-evaluation.txt`, "Worker bulk patching")
//! give (31848 − 2520) / (1024 − 78) = 31.0 cycles per word for the scalar
//! loop. `ipuc hw-check` prints the full comparison.

/// Cycles between two issues of the same context (six-slot barrel) —
/// Graphcore IPU Programmer's Guide (round-robin thread servicing), issue #2.
pub const ISSUE_INTERVAL: u64 = 6;

/// Default cycles a global (internal/external) sync adds after the last tile
/// arrives: the same figure the planner uses,
/// [`ipuc_target::ipu21::timing::INTERNAL_SYNC_CYCLES`] (126, Poplar's
/// `getMaxIPUSyncDelay` bound; no public measurement exists —
/// `docs/facts/ipu21-target.md` §6). The exchange fabric charges exchange
/// time itself.
pub const INTERNAL_SYNC_CYCLES: u64 = ipuc_target::ipu21::timing::INTERNAL_SYNC_CYCLES as u64;
