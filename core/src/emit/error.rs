//! Emission errors: what could not be emitted, for which tile and step.

use alloc::string::String;
use core::fmt;

use crate::exchange::ExchangeError;
use crate::ipu21::topology::{LogicalTile, TileOutOfRange};
use crate::lower::BufferId;
use crate::patch::PatchError;

/// Why a schedule could not be turned into tile programs.
#[derive(Clone, Debug, PartialEq)]
pub enum EmitError {
    /// Placement gave no address for a buffer a tile uses.
    Unplaced {
        /// The buffer.
        buffer: BufferId,
        /// Its name.
        name: String,
        /// The tile.
        tile: LogicalTile,
    },
    /// A logical tile id outside the C600.
    Tile(TileOutOfRange),
    /// A tile has patch data (Repeat tables, sharing lists) but no placed
    /// block for it.
    UnplacedPatchData {
        /// The tile.
        tile: LogicalTile,
        /// Bytes of its patch data.
        bytes: u32,
    },
    /// A kernel has no entry in the kernel table.
    UnknownKernel {
        /// Kernel family name.
        kernel: &'static str,
    },
    /// More operands than the kernel register ABI has registers.
    TooManyOperands {
        /// Kernel family name.
        kernel: &'static str,
        /// Operands given.
        operands: usize,
        /// Registers available.
        limit: usize,
    },
    /// A transfer run is not a whole number of 32-bit words.
    UnalignedTransfer {
        /// Step index of the phase.
        step: u32,
        /// Bytes per run.
        row_bytes: u32,
    },
    /// A Repeat nested in a Repeat (the frame holds one counter).
    NestedRepeat {
        /// Step index of the inner Repeat.
        step: u32,
    },
    /// The exchange scheduler rejected a phase.
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
    /// A relocated sender row (its `$OUTGOING_BASE` comes from a Repeat
    /// frame slot) in a phase outside any Repeat (a bug).
    RelocatedOutsideRepeat {
        /// Step index of the phase.
        step: u32,
    },
    /// Repeat patch tables or row sharing failed.
    Patch {
        /// Step index of the phase (`u32::MAX` for cross-phase sharing).
        step: u32,
        /// Why.
        error: PatchError,
    },
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::Unplaced { buffer, name, tile } => write!(
                f,
                "buffer {} `{name}` has no SRAM address on logical tile {}",
                buffer.0,
                tile.get()
            ),
            EmitError::Tile(e) => write!(f, "{e}"),
            EmitError::UnplacedPatchData { tile, bytes } => write!(
                f,
                "logical tile {}: {bytes} bytes of patch data (Repeat tables, sharing lists) have no placed block",
                tile.get()
            ),
            EmitError::UnknownKernel { kernel } => {
                write!(f, "kernel `{kernel}` has no entry in the kernel table")
            }
            EmitError::TooManyOperands {
                kernel,
                operands,
                limit,
            } => write!(
                f,
                "kernel `{kernel}` takes {operands} operands but the register ABI passes at most {limit}"
            ),
            EmitError::UnalignedTransfer { step, row_bytes } => write!(
                f,
                "exchange step {step}: a run of {row_bytes} bytes is not a whole number of 32-bit words"
            ),
            EmitError::NestedRepeat { step } => {
                write!(f, "step {step}: nested Repeat is not supported (one counter frame)")
            }
            EmitError::Exchange { step, error } => {
                write!(f, "exchange step {step}: {error}")
            }
            EmitError::Patch { step, error } => write!(f, "patching for step {step}: {error}"),
            EmitError::PhaseCount { jobs, scheduled } => write!(
                f,
                "{scheduled} scheduled exchange phases for {jobs} exchange jobs (expected one each)"
            ),
            EmitError::RelocatedOutsideRepeat { step } => write!(
                f,
                "exchange step {step}: a relocated sender row outside a Repeat has no frame slot for its base"
            ),
        }
    }
}

impl core::error::Error for EmitError {}

impl From<TileOutOfRange> for EmitError {
    fn from(e: TileOutOfRange) -> Self {
        EmitError::Tile(e)
    }
}
