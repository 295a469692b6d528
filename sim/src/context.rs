//! Execution contexts: the supervisor (context 0) and six workers (1..=6) —
//! `docs/facts/ipu21-target.md §1.3`.

use core::fmt;

/// Worker and total contexts per tile, stated once in core —
/// `docs/facts/ipu21-target.md §1.3`.
pub use ipuc_target::ipu21::contexts::{CONTEXTS, WORKERS};
/// `$m15` always reads as zero (`$mzero`) — `docs/facts/ipu21-target.md §1.5`.
pub const MZERO: u8 = 15;
/// Worker start: `$m12` holds the context's `$WORKERk_BASE` — our reading of
/// `docs/facts/ipu21-target.md §1.5` (worker code uses `$m12` as its base).
pub const WORKER_BASE_REG: u8 = 12;
/// Worker start: `$m13` (`$mvertex_base`) holds the `runall` vertex base. The
/// facts leave the number open (§1.5); 13 follows Graphcore's published
/// register aliases and is a simulator convention our runtime relies on.
pub const VERTEX_BASE_REG: u8 = 13;

/// Context index: 0 = supervisor, 1..=6 = worker 0..=5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContextId(pub u8);

impl ContextId {
    pub const SUPERVISOR: ContextId = ContextId(0);

    /// Context of worker `k` (0..6).
    pub fn worker(k: usize) -> ContextId {
        debug_assert!(k < WORKERS);
        ContextId(k as u8 + 1)
    }

    pub fn is_supervisor(self) -> bool {
        self.0 == 0
    }

    /// Worker index 0..=5, `None` for the supervisor.
    pub fn worker_index(self) -> Option<usize> {
        (self.0 > 0).then(|| usize::from(self.0) - 1)
    }
}

impl fmt::Display for ContextId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.worker_index() {
            None => write!(f, "supervisor"),
            Some(k) => write!(f, "worker {k}"),
        }
    }
}

/// Why a context is not issuing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextState {
    /// Worker not started / exited; supervisor halted (branched to address 0).
    Idle,
    /// Issuing instructions.
    Running,
    /// Supervisor waiting in `sync 2` for its workers.
    WaitingForWorkers,
    /// Supervisor stopped at a tile-external sync; the device releases it.
    AtSync { zone: u8 },
}

/// Registers and state of one context.
#[derive(Clone, Debug)]
pub struct Context {
    /// MRF `$m0..$m15`; index 15 is kept at zero.
    pub m: [u32; 16],
    /// ARF `$a0..$a15`.
    pub a: [u32; 16],
    pub pc: u32,
    pub state: ContextState,
    /// Earliest cycle at which this context may issue its next instruction.
    pub ready_at: u64,
    /// Last worker exit status (`exitz`: 1 when the register was zero).
    pub exit_status: u32,
    /// Worker CSR 0x07 (ipu-stack's "worker sync context"; meaning open,
    /// `docs/facts/ipu21-target.md §1.6`), stored so code can write it.
    pub sync_context: u32,
    /// Instructions issued by this context.
    pub issued: u64,
}

impl Default for Context {
    fn default() -> Self {
        Self {
            m: [0; 16],
            a: [0; 16],
            pc: 0,
            state: ContextState::Idle,
            ready_at: 0,
            exit_status: 0,
            sync_context: 0,
            issued: 0,
        }
    }
}

impl Context {
    /// Read `$mN` (`$m15` is zero).
    #[inline]
    pub fn reg(&self, r: u8) -> u32 {
        self.m[usize::from(r & 15)]
    }

    /// `$base + $index + offset` (wrapping, as the address adder does):
    /// the effective address of a load or store.
    #[inline]
    pub fn address(&self, base: u8, index: u8, offset: u32) -> u32 {
        self.reg(base)
            .wrapping_add(self.reg(index))
            .wrapping_add(offset)
    }

    /// Write `$mN`; writes to `$m15` are discarded.
    #[inline]
    pub fn set_reg(&mut self, r: u8, value: u32) {
        if r != MZERO {
            self.m[usize::from(r & 15)] = value;
        }
    }
}
