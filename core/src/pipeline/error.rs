//! [`CompileError`]: one error for the whole pipeline. Its `Display` names
//! the stage (and the re-plan attempt), and [`core::error::Error::source`]
//! returns the stage's own typed error (or match the variant), so a cause
//! is printed once: `{err:#}` through `anyhow` reads
//! `planning: per-tile memory exceeded …`, as a context would.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::asm::AsmError;
use crate::emit::EmitError;
use crate::lower::{LowerError, TileSchedule};
use crate::place::{PlaceError, PlacementRequest, TilePlacement};
use crate::plan::PlanError;
use crate::rows::RowsError;
use ipuc_target::ipu21::topology::{LogicalTile, TileOutOfRange};
use ipuc_target::package::PackageError;

use crate::description::DescriptionError;

/// What a host hook may fail with (e.g. writing a developer dump).
pub type HookError = Box<dyn core::error::Error + Send + Sync>;

/// Why [`super::compile`] failed, by stage.
#[derive(Debug)]
pub enum CompileError {
    /// `tiles` outside `1..=1472`.
    Tiles {
        /// The requested tile count.
        tiles: u32,
    },
    /// The runtime and kernel stubs (the fixed part of every image) did not
    /// assemble or link.
    FixedCode(LinkError),
    /// Planning failed; [`PlanError::OutOfMemory`] carries the rejection
    /// report of the best plan that did not fit.
    Plan {
        /// Re-plan attempt (0 = first plan).
        attempt: u32,
        /// Per-tile bytes of the data budget kept for patch data.
        allowance: u64,
        /// The planner's error.
        error: PlanError,
    },
    /// `optimization_steps` failed.
    Optimize(PlanError),
    /// Lowering the plan to a tile schedule failed.
    Lower(LowerError),
    /// SRAM placement refused at least one tile.
    Placement(Box<PlacementFailed>),
    /// Exchange scheduling (rows, Repeat patches, sharing) failed.
    Exchange(RowsError),
    /// A tile's patch data did not fit (after any re-plan allowed).
    PatchData(Box<PatchDataFailed>),
    /// Emitting the tile programs failed.
    Emit(EmitError),
    /// Assembling or linking a tile program failed.
    Link(LinkError),
    /// A linked image does not fit below its tile's lowest region-0 data
    /// or its patch data (`PlaceError::CodeDoesNotFit`).
    Code(Box<CodeDoesNotFit>),
    /// A tile that holds no buffer could not be placed to check its image.
    EmptyTile(PlaceError),
    /// Building the host bindings or the host call failed.
    Bindings(BindingError),
    /// Writing the package failed.
    Package(PackageError),
    /// The description would not read back, or contradicts the program.
    Description(DescriptionError),
    /// A host hook failed.
    Hook(HookError),
    /// The schedule uses no tile at all.
    NoTiles,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Tiles { tiles } => {
                write!(f, "--planning-tiles must be 1..=1472, got {tiles}")
            }
            CompileError::FixedCode(_) => f.write_str("the runtime and kernel stubs"),
            CompileError::Plan { allowance: 0, .. } => f.write_str("planning"),
            CompileError::Plan {
                attempt, allowance, ..
            } => write!(
                f,
                "planning (re-plan {attempt}, {allowance} bytes/tile kept for patch data)"
            ),
            CompileError::Optimize(_) => f.write_str("optimization steps"),
            CompileError::Lower(_) => f.write_str("lowering"),
            CompileError::Placement(_) => f.write_str("SRAM placement"),
            CompileError::Exchange(_) => f.write_str("exchange scheduling"),
            CompileError::PatchData(_) => f.write_str("placing patch data"),
            CompileError::Emit(_) => f.write_str("emission"),
            CompileError::Link(_) | CompileError::Code(_) | CompileError::EmptyTile(_) => {
                f.write_str("linking")
            }
            CompileError::Bindings(_) => f.write_str("host bindings"),
            CompileError::Package(_) => f.write_str("writing the package"),
            CompileError::Description(_) => f.write_str("describing the package"),
            CompileError::Hook(_) => f.write_str("host hook"),
            CompileError::NoTiles => f.write_str("the schedule uses no tiles"),
        }
    }
}

impl core::error::Error for CompileError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            CompileError::Tiles { .. } | CompileError::NoTiles => None,
            CompileError::FixedCode(e) | CompileError::Link(e) => Some(e),
            CompileError::Plan { error, .. } => Some(error),
            CompileError::Optimize(e) => Some(e),
            CompileError::Lower(e) => Some(e),
            CompileError::Placement(e) => Some(e.as_ref()),
            CompileError::Exchange(e) => Some(e),
            CompileError::Emit(e) => Some(e),
            CompileError::PatchData(e) => Some(e.as_ref()),
            CompileError::Code(e) => Some(e.as_ref()),
            CompileError::EmptyTile(e) => Some(e),
            CompileError::Bindings(e) => Some(e),
            CompileError::Package(e) => Some(e),
            CompileError::Description(e) => Some(e),
            CompileError::Hook(e) => Some(e.as_ref()),
        }
    }
}

/// Placement refused at least one tile. Carries what a host needs to turn
/// a memory rejection into a report (the schedule and every tile's
/// request: every schedule step a moment, as placement charges it).
#[derive(Debug)]
pub struct PlacementFailed {
    /// Every tile placement refused, in tile order (at least one).
    pub errors: Vec<PlaceError>,
    /// The schedule that was being placed.
    pub schedule: TileSchedule,
    /// Every tile's placement request, in tile order.
    pub requests: Vec<PlacementRequest>,
}

impl fmt::Display for PlacementFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} tile(s) refused", self.errors.len())?;
        if let Some(first) = self.errors.first() {
            write!(f, "; the first: {first}")?;
        }
        Ok(())
    }
}

impl core::error::Error for PlacementFailed {}

/// A tile's patch data (Repeat tables, sharing lists) did not fit (budget
/// or room).
#[derive(Debug)]
pub struct PatchDataDoesNotFit {
    /// Logical tile.
    pub tile: LogicalTile,
    /// Bytes of Repeat patch tables.
    pub repeat_bytes: u32,
    /// Bytes of sharing patch lists.
    pub sharing_bytes: u32,
    /// Largest patch data of any tile of this plan.
    pub largest: u32,
    /// Placement's error.
    pub error: PlaceError,
}

impl fmt::Display for PatchDataDoesNotFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "logical tile {}: {} bytes of patch data ({} of Repeat tables, {} of sharing lists; largest on any tile {}) do not fit: {}",
            self.tile.get(),
            u64::from(self.repeat_bytes) + u64::from(self.sharing_bytes),
            self.repeat_bytes,
            self.sharing_bytes,
            self.largest,
            self.error
        )
    }
}

impl core::error::Error for PatchDataDoesNotFit {}

/// A tile's patch data did not fit, with what a host needs to turn it into
/// a memory report (as for [`PlacementFailed`]).
#[derive(Debug)]
pub struct PatchDataFailed {
    /// Which tile, what did not fit and why.
    pub error: PatchDataDoesNotFit,
    /// The schedule that was placed.
    pub schedule: TileSchedule,
    /// Every tile's placement, in tile order.
    pub placements: Vec<TilePlacement>,
}

/// The report parts ride along; the message and the cause are the tile's.
impl fmt::Display for PatchDataFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl core::error::Error for PatchDataFailed {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        self.error.source()
    }
}

/// Bytes of a linked image's parts, in load order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageParts {
    /// Static runtime and kernel stubs.
    pub runtime: u32,
    /// Supervisor program and kernel argument blocks.
    pub program: u32,
    /// Exchange rows.
    pub rows: u32,
    /// Patch data placed at the top of the elements charged for the image
    /// (0 when it is in the data region or there is none).
    pub patch_data: u32,
}

/// A linked image does not fit below its tile's limit: a late failure (the
/// planner's estimate accepted the plan), with what a host needs to show
/// the image against the tile's data.
#[derive(Debug)]
pub struct CodeDoesNotFit {
    /// Placement's `CodeDoesNotFit` (tile, bytes needed, bytes free).
    pub error: PlaceError,
    /// The tile's placement (for a tile holding no buffer, the empty
    /// placement made to check it).
    pub placement: TilePlacement,
    /// What the image is made of.
    pub parts: ImageParts,
    /// The schedule that was placed.
    pub schedule: TileSchedule,
    /// Every tile's placement, in tile order.
    pub placements: Vec<TilePlacement>,
}

/// As for [`PatchDataFailed`]: placement's error says what and where.
impl fmt::Display for CodeDoesNotFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl core::error::Error for CodeDoesNotFit {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        self.error.source()
    }
}

/// Assembling, linking or reading back a tile image failed.
#[derive(Debug)]
pub enum LinkError {
    /// The kernel stub table did not assemble.
    Stubs(AsmError),
    /// The empty program measuring the fixed code did not assemble or link.
    FixedCode(AsmError),
    /// A tile program did not assemble.
    Assemble {
        /// Logical tile.
        tile: LogicalTile,
        /// The assembler's error (`file:line:col`).
        error: AsmError,
    },
    /// A tile program did not link with the runtime.
    Link {
        /// Logical tile.
        tile: LogicalTile,
        /// The linker's error.
        error: AsmError,
    },
    /// A linked image lacks a label emission or the runtime defines.
    MissingSymbol {
        /// Logical tile.
        tile: LogicalTile,
        /// The symbol.
        symbol: String,
    },
    /// A kernel's stub is at different addresses on different tiles.
    KernelAddressDiffers {
        /// Kernel family.
        kernel: &'static str,
    },
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::Stubs(e) => write!(f, "assembling the kernel stub table: {e}"),
            // `CompileError::FixedCode` says "the runtime and kernel stubs"
            // already; the error's `file:line` says which source.
            LinkError::FixedCode(e) => write!(f, "{e}"),
            LinkError::Assemble { tile, error } => {
                write!(
                    f,
                    "assembling the program of logical tile {}: {error}",
                    tile.get()
                )
            }
            LinkError::Link { tile, error } => {
                write!(f, "linking logical tile {}: {error}", tile.get())
            }
            LinkError::MissingSymbol { tile, symbol } => {
                write!(
                    f,
                    "logical tile {}: the linked image lacks `{symbol}`",
                    tile.get()
                )
            }
            LinkError::KernelAddressDiffers { kernel } => {
                write!(
                    f,
                    "kernel `{kernel}` is at different addresses on different tiles"
                )
            }
        }
    }
}

impl core::error::Error for LinkError {}

/// A host binding could not be described.
#[derive(Debug)]
pub enum BindingError {
    /// A block names a tile outside the C600.
    Tile(TileOutOfRange),
    /// A host-visible buffer has no address on a tile holding it.
    Unplaced {
        /// Binding name.
        binding: String,
        /// Buffer name.
        buffer: String,
        /// Logical tile.
        tile: LogicalTile,
    },
    /// A constant op reached compilation unfolded.
    Constant {
        /// Buffer name.
        buffer: String,
        /// The constant op's index.
        op: u32,
    },
    /// A schedule output names a buffer that does not exist.
    MissingOutputBuffer {
        /// Output name.
        output: String,
    },
    /// A binding's byte size overflows.
    SizeOverflow {
        /// Binding name.
        binding: String,
    },
}

impl fmt::Display for BindingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindingError::Tile(e) => write!(f, "{e}"),
            BindingError::Unplaced {
                binding,
                buffer,
                tile,
            } => write!(
                f,
                "binding `{binding}`: buffer `{buffer}` is not placed on tile {}",
                tile.get()
            ),
            BindingError::Constant { buffer, op } => write!(
                f,
                "buffer `{buffer}` holds constant op {op}: constants must be folded into parameters before compilation"
            ),
            BindingError::MissingOutputBuffer { output } => {
                write!(f, "output `{output}` names a missing buffer")
            }
            BindingError::SizeOverflow { binding } => {
                write!(f, "binding `{binding}` size overflows")
            }
        }
    }
}

impl core::error::Error for BindingError {}
