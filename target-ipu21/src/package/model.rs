//! The in-memory package: what the emitter fills in and the reader returns.
//!
//! Every collection is stored in the order the encoder writes it; the writer
//! sorts (tiles by physical id, segments by address, names alphabetically), so
//! insertion order never changes the bytes.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::ipu21::{sram, topology};

/// A complete, loadable application for one IPU21.
#[derive(Clone, Debug, PartialEq)]
pub struct Package {
    pub target: TargetFacts,
    /// Name and version of the compiler that built the package (free text).
    pub producer: String,
    pub tiles: Vec<TileImage>,
    /// Native kernels the supervisor code calls; the simulator registers a
    /// codelet at each address.
    pub kernels: Vec<KernelSymbol>,
    pub bindings: Vec<Binding>,
    pub host_calls: Vec<HostCall>,
    /// Optional per-tile step tables for the profile (empty = none).
    pub steps: StepTables,
    /// Plan summary shown by `ipuc inspect` and the run report.
    pub plan_summary: BTreeMap<String, SummaryValue>,
    /// What the package was compiled from (model, weights, compile
    /// flags), opaque here.
    pub description: DescriptionSection,
}

impl Package {
    /// An empty package for the IPU21.
    pub fn new(producer: impl Into<String>) -> Self {
        Package {
            target: TargetFacts::IPU21,
            producer: producer.into(),
            tiles: Vec::new(),
            kernels: Vec::new(),
            bindings: Vec::new(),
            host_calls: Vec::new(),
            steps: StepTables::default(),
            plan_summary: BTreeMap::new(),
            description: DescriptionSection::default(),
        }
    }

    /// The image of `physical_tile`, if the package has one.
    pub fn tile(&self, physical_tile: u32) -> Option<&TileImage> {
        self.tiles.iter().find(|t| t.physical_tile == physical_tile)
    }

    /// All bindings of one kind, in stored order.
    pub fn bindings_of(&self, kind: BindingKind) -> impl Iterator<Item = &Binding> {
        self.bindings.iter().filter(move |b| b.kind == kind)
    }
}

/// Section 8, what the package was compiled from: opaque to the target,
/// which frames it and nothing more. Its layout and meaning (the model,
/// where its weights come from, the compile flags, the K splits) belong to
/// the compiler and the host, `ipuc_core::description`, which reads and
/// writes `body` under `version` and checks it against the program.
/// The one convention the target fixes: version 0 with no body (the
/// default) records nothing, as a package built without a compiler does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescriptionSection {
    /// The body's layout version (its owner's to interpret; 0: none).
    pub version: u16,
    pub body: Vec<u8>,
}

/// Target facts the package was built for. The reader only accepts the
/// IPU21 values ([`TargetFacts::IPU21`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TargetFacts {
    pub tile_count: u32,
    pub tile_memory_base: u32,
    pub tile_memory_size: u32,
    pub executable_limit: u32,
    pub loader_limit: u32,
    pub clock_hz: u64,
}

impl TargetFacts {
    pub const IPU21: TargetFacts = TargetFacts {
        tile_count: topology::TILE_COUNT as u32,
        tile_memory_base: sram::TILE_MEMORY_BASE,
        tile_memory_size: sram::TILE_MEMORY_SIZE,
        executable_limit: sram::EXECUTABLE_MEMORY_LIMIT,
        loader_limit: sram::LOADER_REACHABLE_LIMIT,
        clock_hz: sram::CLOCK_HZ,
    };

    /// One past the last SRAM byte.
    pub fn tile_memory_end(&self) -> u64 {
        u64::from(self.tile_memory_base) + u64::from(self.tile_memory_size)
    }
}

/// The SRAM image of one physical tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileImage {
    /// Raw physical id: the package's wire field (the reader checks it).
    pub physical_tile: u32,
    /// Supervisor entry address; must lie in an executable segment.
    pub entry_point: u32,
    pub segments: Vec<Segment>,
}

impl TileImage {
    pub fn new(physical_tile: u32, entry_point: u32) -> Self {
        TileImage {
            physical_tile,
            entry_point,
            segments: Vec::new(),
        }
    }

    /// Total bytes of memory the segments reserve.
    pub fn memory_bytes(&self) -> u64 {
        self.segments.iter().map(|s| u64::from(s.memory_size)).sum()
    }

    /// Bytes reserved by segments with the given role.
    pub fn role_bytes(&self, role: SegmentRole) -> u64 {
        self.segments
            .iter()
            .filter(|s| s.role == role)
            .map(|s| u64::from(s.memory_size))
            .sum()
    }
}

/// A contiguous SRAM range. `data` may be shorter than `memory_size`; the
/// rest is zero when loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub address: u32,
    pub memory_size: u32,
    pub flags: SegmentFlags,
    pub role: SegmentRole,
    pub data: Vec<u8>,
}

impl Segment {
    /// Executable, readable code initialised with `words` (little-endian).
    pub fn code(address: u32, role: SegmentRole, words: &[u32]) -> Self {
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        Segment {
            address,
            memory_size: data.len() as u32,
            flags: SegmentFlags::READ.union(SegmentFlags::EXECUTE),
            role,
            data,
        }
    }

    /// Read/write memory of `memory_size` bytes starting with `data`.
    pub fn data(address: u32, memory_size: u32, role: SegmentRole, data: Vec<u8>) -> Self {
        Segment {
            address,
            memory_size,
            flags: SegmentFlags::READ.union(SegmentFlags::WRITE),
            role,
            data,
        }
    }

    /// One past the last byte (u64 so no sum overflows).
    pub fn end(&self) -> u64 {
        u64::from(self.address) + u64::from(self.memory_size)
    }
}

/// Segment access flags: R = 1, W = 2, X = 4 (`docs/facts/ipu21-target.md` §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegmentFlags(u8);

impl SegmentFlags {
    pub const READ: SegmentFlags = SegmentFlags(1);
    pub const WRITE: SegmentFlags = SegmentFlags(2);
    pub const EXECUTE: SegmentFlags = SegmentFlags(4);
    const ALL: u8 = 7;

    /// Flags from raw bits; `None` when an unknown bit is set.
    pub const fn from_bits(bits: u8) -> Option<SegmentFlags> {
        if bits & !Self::ALL == 0 {
            Some(SegmentFlags(bits))
        } else {
            None
        }
    }
    pub const fn bits(self) -> u8 {
        self.0
    }
    pub const fn union(self, other: SegmentFlags) -> SegmentFlags {
        SegmentFlags(self.0 | other.0)
    }
    pub const fn contains(self, other: SegmentFlags) -> bool {
        self.0 & other.0 == other.0
    }
    pub const fn is_executable(self) -> bool {
        self.contains(Self::EXECUTE)
    }
}

/// What a segment holds. Tags let `ipuc inspect` and the report count
/// exchange-table and host-descriptor bytes per tile without decoding code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SegmentRole {
    /// Entry stub and static runtime.
    Runtime,
    /// Generated supervisor program.
    SupervisorCode,
    /// Exchange rows (instruction words called by the supervisor).
    ExchangeRows,
    /// Per-iteration replacement words for rows inside a Repeat.
    RepeatPatchTable,
    /// Offsets/values patched into rows shared across phases.
    SharingPatchList,
    /// Host exchange descriptors and staging.
    HostDescriptors,
    /// Completion word, profile cycle samples, worker stacks.
    State,
    /// Weights, inputs and outputs (targets of bindings).
    Tensor,
    /// Activations and scratch.
    Scratch,
}

impl SegmentRole {
    pub const ALL: [SegmentRole; 9] = [
        SegmentRole::Runtime,
        SegmentRole::SupervisorCode,
        SegmentRole::ExchangeRows,
        SegmentRole::RepeatPatchTable,
        SegmentRole::SharingPatchList,
        SegmentRole::HostDescriptors,
        SegmentRole::State,
        SegmentRole::Tensor,
        SegmentRole::Scratch,
    ];

    pub const fn code(self) -> u8 {
        match self {
            SegmentRole::Runtime => 0,
            SegmentRole::SupervisorCode => 1,
            SegmentRole::ExchangeRows => 2,
            SegmentRole::RepeatPatchTable => 3,
            SegmentRole::SharingPatchList => 4,
            SegmentRole::HostDescriptors => 5,
            SegmentRole::State => 6,
            SegmentRole::Tensor => 7,
            SegmentRole::Scratch => 8,
        }
    }

    pub fn from_code(code: u8) -> Option<SegmentRole> {
        Self::ALL.get(usize::from(code)).copied()
    }

    pub const fn name(self) -> &'static str {
        match self {
            SegmentRole::Runtime => "runtime",
            SegmentRole::SupervisorCode => "supervisor-code",
            SegmentRole::ExchangeRows => "exchange-rows",
            SegmentRole::RepeatPatchTable => "repeat-patch-table",
            SegmentRole::SharingPatchList => "sharing-patch-list",
            SegmentRole::HostDescriptors => "host-descriptors",
            SegmentRole::State => "state",
            SegmentRole::Tensor => "tensor",
            SegmentRole::Scratch => "scratch",
        }
    }

    /// Exchange-table bytes in the sense of the run report: rows plus the
    /// patch data that rewrites them.
    pub const fn is_exchange_table(self) -> bool {
        matches!(
            self,
            SegmentRole::ExchangeRows
                | SegmentRole::RepeatPatchTable
                | SegmentRole::SharingPatchList
        )
    }
}

/// A native kernel entry: supervisor code `call`s `address`, the simulator
/// runs the codelet registered under `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct KernelSymbol {
    pub name: String,
    pub address: u32,
}

/// Whether a binding is loaded before the run, read after it, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BindingKind {
    Input,
    Output,
    Weight,
}

impl BindingKind {
    pub const ALL: [BindingKind; 3] =
        [BindingKind::Input, BindingKind::Output, BindingKind::Weight];
    pub const fn code(self) -> u8 {
        match self {
            BindingKind::Input => 0,
            BindingKind::Output => 1,
            BindingKind::Weight => 2,
        }
    }
    pub fn from_code(code: u8) -> Option<BindingKind> {
        Self::ALL.get(usize::from(code)).copied()
    }
    pub const fn name(self) -> &'static str {
        match self {
            BindingKind::Input => "input",
            BindingKind::Output => "output",
            BindingKind::Weight => "weight",
        }
    }
}

/// Element type of a bound tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DType {
    F32,
    F16,
    /// FP8 with 4 exponent and 3 mantissa bits.
    F8E4M3,
    /// FP8 with 5 exponent and 2 mantissa bits.
    F8E5M2,
    I32,
    U32,
    I8,
    U8,
}

/// A dtype by its name (`f16`, …).
#[cfg(feature = "serde")]
impl serde::Serialize for DType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl DType {
    pub const ALL: [DType; 8] = [
        DType::F32,
        DType::F16,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::I32,
        DType::U32,
        DType::I8,
        DType::U8,
    ];
    pub const fn code(self) -> u8 {
        match self {
            DType::F32 => 0,
            DType::F16 => 1,
            DType::F8E4M3 => 2,
            DType::F8E5M2 => 3,
            DType::I32 => 4,
            DType::U32 => 5,
            DType::I8 => 6,
            DType::U8 => 7,
        }
    }
    pub fn from_code(code: u8) -> Option<DType> {
        Self::ALL.get(usize::from(code)).copied()
    }
    pub const fn size_bytes(self) -> u64 {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 => 2,
            DType::F8E4M3 | DType::F8E5M2 | DType::I8 | DType::U8 => 1,
        }
    }
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I8 => "i8",
            DType::U8 => "u8",
        }
    }
}

/// A logical tensor mapped onto SRAM ranges. `file_offset` counts bytes in
/// the tensor's row-major host representation; slices may repeat a range on
/// several tiles (replication) and together cover every byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub name: String,
    pub kind: BindingKind,
    pub dtype: DType,
    /// Power-of-two scale of FP8 data (value = decoded code · 2^scale); 0 otherwise.
    pub scale: i8,
    pub shape: Vec<u64>,
    pub slices: Vec<BindingSlice>,
}

impl Binding {
    /// Bytes of the whole tensor; `None` on overflow.
    pub fn byte_size(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(self.dtype.size_bytes(), |acc, &d| acc.checked_mul(d))
    }
}

/// One SRAM range holding `size` bytes of a binding starting at `file_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BindingSlice {
    pub file_offset: u64,
    /// Raw physical id: the package's wire field (the reader checks it).
    pub tile: u32,
    pub tile_address: u32,
    pub size: u32,
}

/// A host call: the host sends `inputs` and receives `outputs` (ranges of
/// bindings) over `phases` host rendezvous. ipuc's `inference` call has two:
/// inputs are written into tile SRAM before the program starts and outputs
/// read after every tile halts — a direct copy by the host/loader, with no
/// device-side host exchange (docs/reports/architecture-notes-2026-12-03.md, "Host I/O").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCall {
    pub name: String,
    /// Command word the host writes to start the call; unique per package.
    pub command: u32,
    pub phases: u32,
    pub invocations: u32,
    pub inputs: Vec<HostTransfer>,
    pub outputs: Vec<HostTransfer>,
}

/// A byte range of a named binding moved by a host call.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostTransfer {
    pub binding: String,
    pub file_offset: u64,
    pub size: u64,
}

impl HostTransfer {
    /// The tensor bytes it moves (the reader checked it lies in the binding).
    pub fn range(&self) -> core::ops::Range<u64> {
        self.file_offset..self.file_offset.saturating_add(self.size)
    }
}

/// Profile metadata: what each step of each tile's program is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepTables {
    /// Operation names; steps refer to them by index.
    pub operations: Vec<String>,
    pub tiles: Vec<TileStepTable>,
}

impl StepTables {
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty() && self.tiles.is_empty()
    }
}

/// The steps of one tile's program in program order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileStepTable {
    /// Raw physical id: the package's wire field (the reader checks it).
    pub physical_tile: u32,
    pub steps: Vec<StepInfo>,
}

/// One step of a tile program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepInfo {
    /// Strictly increasing within a tile.
    pub step: u32,
    pub kind: StepKind,
    /// Index into [`StepTables::operations`].
    pub operation: u32,
    /// Supervisor address where the step's code starts (executable segment).
    pub code_address: u32,
    /// Set when the step sits in a Repeat body.
    pub repeat: Option<RepeatScope>,
}

/// The Repeat a step belongs to; the iteration is only known at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepeatScope {
    pub repeat: u32,
    pub trip_count: u32,
}

/// What a step spends its cycles on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
pub enum StepKind {
    Compute,
    Exchange,
    Sync,
    Patch,
}

impl StepKind {
    pub const ALL: [StepKind; 4] = [
        StepKind::Compute,
        StepKind::Exchange,
        StepKind::Sync,
        StepKind::Patch,
    ];
    pub const fn code(self) -> u8 {
        match self {
            StepKind::Compute => 0,
            StepKind::Exchange => 1,
            StepKind::Sync => 2,
            StepKind::Patch => 3,
        }
    }
    pub fn from_code(code: u8) -> Option<StepKind> {
        Self::ALL.get(usize::from(code)).copied()
    }
    pub const fn name(self) -> &'static str {
        match self {
            StepKind::Compute => "compute",
            StepKind::Exchange => "exchange",
            StepKind::Sync => "sync",
            StepKind::Patch => "patch",
        }
    }
}

/// A plan summary value.
#[derive(Clone, Debug, PartialEq)]
pub enum SummaryValue {
    Text(String),
    Integer(i64),
    Real(f64),
}
