//! What the planner charges for work that is not a kernel body: exchange
//! phases and pieces, and the Repeat/sharing patch calls. Planner-only
//! figures, so they live with the planner; the simulator runs the real
//! instructions instead (the sync latency, which both use, stays a target
//! fact: [`ipuc_target::ipu21::timing::INTERNAL_SYNC_CYCLES`]).

use ipuc_target::ipu21::timing::INTERNAL_SYNC_CYCLES;

/// Route/start latency of an exchange phase's transfers: the planning bound
/// of `docs/facts/ipu21-target.md` §6 (126 cycles, Poplar
/// `getMaxIPUSyncDelay` as ipu-stack's `exchange_transfer_cycles`).
pub const EXCHANGE_ROUTE_START_CYCLES: u32 = 126;
/// Fixed cost of one exchange phase in the planner: the internal sync plus
/// the route/start latency (`docs/facts/ipu21-target.md` §6; replaces the
/// earlier 600-cycle Poplar `getGlobalSyncCycles`, a multi-IPU figure).
pub const EXCHANGE_PHASE_CYCLES: u32 = INTERNAL_SYNC_CYCLES + EXCHANGE_ROUTE_START_CYCLES;
/// Planner charge per exchange piece (one row of a strided transfer, or
/// one contiguous transfer) at each endpoint, in events: an *estimate*
/// fitted to ipuc's own exchange scheduler, whose So400m phases run
/// about 10–25 events per piece above the busiest endpoint's words
/// (`ipuc exchange schedule-dump`; ipu-stack charges ~160 per fragment,
/// `docs/facts/ipu21-target.md` §6, for a scheduler that packs less).
pub const EXCHANGE_PIECE_EVENTS: u32 = 8;
/// Patch one word with the supervisor loop, below the bulk threshold
/// (`docs/facts/seed-vit-repeat-evaluation.txt`: 846 cycles for 24 words ≈ 35/word incl. wrapper).
pub const PATCH_SCALAR_CYCLES_PER_WORD: u32 = 30;
/// Fixed overhead of one supervisor patch call (fits 846 − 24·30 = 126, seed report above).
pub const PATCH_SCALAR_CALL_CYCLES: u32 = 126;
/// Bulk patcher cycles per word ×100 (seed report: 450/936/9468 cycles at 24/78/1024 words ⇒ ≈ 9.0/word).
pub const PATCH_BULK_CYCLES_PER_WORD_X100: u32 = 900;
/// Bulk patcher fixed overhead (seed report: 9468 − 1024·9.0 ≈ 252; 936 − 78·9 = 234; 450 − 216 = 234).
pub const PATCH_BULK_CALL_CYCLES: u32 = 240;
