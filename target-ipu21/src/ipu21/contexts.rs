//! Execution contexts of one tile: the supervisor (context 0) and the six
//! workers (contexts 1..=6) — `docs/facts/ipu21-target.md` §1.3 ("Contexts
//! per tile: 7: context 0 = supervisor, contexts 1..6 = six workers", after
//! ipu-stack's `WORKER_CONTEXTS = 6` and IPU1's `CTXT_WORKERS=6`,
//! `CTXT_TOTAL=7`).
//!
//! This is the one place the count is stated: the simulator's context set,
//! the kernel timing model's per-worker split, the worker areas in
//! [`super::sram::layout`] and the six-worker patcher all use it.

/// Worker contexts per tile (§1.3).
pub const WORKERS: usize = 6;

/// All contexts per tile: the supervisor plus [`WORKERS`] (§1.3).
pub const CONTEXTS: usize = WORKERS + 1;

/// [`WORKERS`] as a `u32`, for address arithmetic (worker areas).
pub const WORKERS_U32: u32 = WORKERS as u32;

/// [`WORKERS`] as a `u64`, for cycle arithmetic (per-worker splits).
pub const WORKERS_U64: u64 = WORKERS as u64;
