//! Emission errors: what could not be emitted, for which tile and step.

use core::fmt;

use crate::place::Unplaced;
use ipuc_target::ipu21::topology::{LogicalTile, TileOutOfRange};

/// Why a schedule could not be turned into tile programs.
#[derive(Clone, Debug, PartialEq)]
pub enum EmitError {
    /// Placement gave no address for a buffer a tile uses.
    Unplaced(Unplaced),
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
    /// A Repeat nested in a Repeat (the frame holds one counter).
    NestedRepeat {
        /// Step index of the inner Repeat.
        step: u32,
    },
    /// A relocated sender row (its `$OUTGOING_BASE` comes from a Repeat
    /// frame slot) in a phase outside any Repeat (a bug).
    RelocatedOutsideRepeat {
        /// Step index of the phase.
        step: u32,
    },
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::Unplaced(e) => write!(f, "{e}"),
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
            EmitError::NestedRepeat { step } => {
                write!(f, "step {step}: nested Repeat is not supported (one counter frame)")
            }
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

impl From<Unplaced> for EmitError {
    fn from(e: Unplaced) -> Self {
        EmitError::Unplaced(e)
    }
}
