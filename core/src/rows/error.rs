//! Exchange-planning errors: which phase, and why.

use core::fmt;

use crate::exchange::ExchangeError;
use crate::patch::PatchError;
use crate::place::Unplaced;

/// Why a placed schedule's exchange phases could not be planned.
#[derive(Clone, Debug, PartialEq)]
pub enum RowsError {
    /// Placement gave no address for a buffer a transfer reads or writes.
    Unplaced(Unplaced),
    /// A transfer run is not a whole number of 32-bit words.
    UnalignedTransfer {
        /// Step index of the phase.
        step: u32,
        /// Bytes per run.
        row_bytes: u32,
    },
    /// The exchange scheduler, or the compile-time check of its rows,
    /// rejected a phase.
    Exchange {
        /// Step index of the phase.
        step: u32,
        /// Why.
        error: ExchangeError,
    },
    /// Scheduled phases handed to `assemble_exchange` do not match its jobs
    /// one to one (a host scheduling hook dropped or added phases).
    PhaseCount {
        /// Exchange jobs of the program.
        jobs: usize,
        /// Scheduled phases given (or row-sharing results produced).
        scheduled: usize,
    },
    /// Repeat patch tables, relocation or row sharing failed.
    Patch {
        /// Step index of the phase (`u32::MAX` for cross-phase sharing).
        step: u32,
        /// Why.
        error: PatchError,
    },
}

impl fmt::Display for RowsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowsError::Unplaced(e) => write!(f, "{e}"),
            RowsError::UnalignedTransfer { step, row_bytes } => write!(
                f,
                "exchange step {step}: a run of {row_bytes} bytes is not a whole number of 32-bit words"
            ),
            RowsError::Exchange { step, error } => {
                write!(f, "exchange step {step}: {error}")
            }
            RowsError::Patch { step, error } => write!(f, "patching for step {step}: {error}"),
            RowsError::PhaseCount { jobs, scheduled } => write!(
                f,
                "{scheduled} scheduled exchange phases for {jobs} exchange jobs (expected one each)"
            ),
        }
    }
}

impl core::error::Error for RowsError {}

impl From<Unplaced> for RowsError {
    fn from(e: Unplaced) -> Self {
        RowsError::Unplaced(e)
    }
}
