//! Typed errors of the package reader and writer. Every variant says what is
//! wrong and where: the byte offset of the offending record in the package
//! bytes, the field, and the tile when there is one.

use core::fmt;

/// Result alias of the package layer.
pub type Result<T> = core::result::Result<T, PackageError>;

/// Why package bytes (or a package about to be written) are not acceptable.
/// Tiles are raw ids: an error may name an id read from the bytes that is
/// not a tile at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackageError {
    /// The first eight bytes are not [`super::MAGIC`].
    BadMagic { found: [u8; 8] },
    /// The stored SHA-256 digest (the last [`super::DIGEST_BYTES`] bytes)
    /// is not the hash of the bytes before it: the package was corrupted or
    /// modified after it was written.
    DigestMismatch {
        offset: usize,
        stored: [u8; 32],
        computed: [u8; 32],
    },
    /// The format version is not one this reader understands.
    UnsupportedVersion { found: u16, supported: u16 },
    /// The bytes end inside a fixed-size field.
    Truncated {
        offset: usize,
        field: &'static str,
        needed: usize,
        available: usize,
    },
    /// A length or count points past the end of the enclosing data.
    LengthPastEnd {
        offset: usize,
        field: &'static str,
        length: u64,
        available: u64,
    },
    /// A section has the wrong tag for its position.
    UnexpectedSection {
        offset: usize,
        expected: u32,
        found: u32,
    },
    /// A section's declared length differs from the bytes its contents used.
    SectionLength {
        offset: usize,
        section: &'static str,
        declared: u64,
        used: u64,
    },
    /// An enum field holds a value with no meaning.
    UnknownEnum {
        offset: usize,
        field: &'static str,
        value: u32,
    },
    /// A reserved field is not zero.
    NonZeroReserved {
        offset: usize,
        field: &'static str,
        value: u32,
    },
    /// A text field is not UTF-8.
    InvalidUtf8 { offset: usize, field: &'static str },
    /// The package was built for different target facts.
    TargetMismatch {
        offset: usize,
        field: &'static str,
        expected: u64,
        found: u64,
    },
    /// A physical tile id is not below the target's tile count.
    TileOutOfRange {
        offset: usize,
        field: &'static str,
        tile: u32,
        tile_count: u32,
    },
    /// Two tile images (or step tables) for one physical tile.
    DuplicateTile {
        offset: usize,
        field: &'static str,
        tile: u32,
    },
    /// Records that must be strictly ascending are not.
    NotAscending {
        offset: usize,
        field: &'static str,
        tile: Option<u32>,
    },
    /// A segment reserves no memory.
    EmptySegment {
        offset: usize,
        tile: u32,
        address: u32,
    },
    /// A segment reaches outside tile SRAM.
    SegmentOutsideMemory {
        offset: usize,
        tile: u32,
        address: u32,
        end: u64,
        memory_start: u32,
        memory_end: u64,
    },
    /// Two segments of one tile overlap.
    SegmentOverlap {
        offset: usize,
        tile: u32,
        address: u32,
        previous_end: u64,
    },
    /// An executable segment ends above the instruction-fetch limit.
    ExecutableAboveLimit {
        offset: usize,
        tile: u32,
        address: u32,
        end: u64,
        limit: u32,
    },
    /// A segment carries more initial data than memory it reserves.
    DataLongerThanMemory {
        offset: usize,
        tile: u32,
        address: u32,
        data_len: u64,
        memory_size: u32,
    },
    /// Initial data reaches above the loader's reachable limit.
    DataAboveLoaderLimit {
        offset: usize,
        tile: u32,
        address: u32,
        data_end: u64,
        limit: u32,
    },
    /// The entry point is not inside an executable segment of its tile.
    EntryNotExecutable {
        offset: usize,
        tile: u32,
        entry_point: u32,
    },
    /// A code address (kernel symbol, step) is not usable as a call target.
    BadCodeAddress {
        offset: usize,
        field: &'static str,
        tile: Option<u32>,
        address: u32,
    },
    /// Two records share a name that must be unique.
    DuplicateName { offset: usize, field: &'static str },
    /// Two records share a value that must be unique (kernel address, host command).
    DuplicateValue {
        offset: usize,
        field: &'static str,
        value: u64,
    },
    /// A binding's byte size overflows 64 bits.
    ShapeOverflow {
        offset: usize,
        binding_offset: usize,
    },
    /// A binding's shape declares more bytes than every tile's SRAM holds:
    /// no package can store (or host call move) such a tensor.
    BindingLargerThanChip {
        offset: usize,
        tensor_bytes: u64,
        chip_bytes: u64,
    },
    /// Two binding slices share SRAM but hold different tensor bytes (of
    /// the same binding at another offset, or of another input or output
    /// binding): the host would write or read one byte as two values.
    SlicesAlias {
        offset: usize,
        tile: u32,
        tile_address: u32,
        /// Offset of the binding record the other slice belongs to.
        other_binding_offset: usize,
        /// The classes of the two bindings (`input`, `weight`, `output`).
        kind: &'static str,
        other_kind: &'static str,
    },
    /// A binding slice refers to a tile that has no image.
    SliceTileMissing { offset: usize, tile: u32 },
    /// A binding slice is outside the tensor's bytes or its tile's segments.
    SliceOutOfRange {
        offset: usize,
        tile: u32,
        tile_address: u32,
        size: u32,
        file_offset: u64,
        tensor_bytes: u64,
    },
    /// A binding slice is not inside one writable non-executable segment.
    SliceOutsideSegment {
        offset: usize,
        tile: u32,
        tile_address: u32,
        size: u32,
    },
    /// Some bytes of a binding are on no tile.
    BindingNotCovered {
        offset: usize,
        first_missing_byte: u64,
        tensor_bytes: u64,
    },
    /// A host transfer names a binding that does not exist or has the wrong kind.
    UnknownBinding { offset: usize, field: &'static str },
    /// A host transfer range lies outside its binding.
    TransferOutOfRange {
        offset: usize,
        file_offset: u64,
        size: u64,
        tensor_bytes: u64,
    },
    /// A count field that must be positive is zero.
    ZeroCount { offset: usize, field: &'static str },
    /// A step refers to an operation index past the operation table.
    OperationOutOfRange {
        offset: usize,
        tile: u32,
        operation: u32,
        operations: u32,
    },
    /// A step table belongs to a tile that has no image.
    StepTileMissing { offset: usize, tile: u32 },
    /// Bytes remain after the last section.
    TrailingBytes { offset: usize, count: usize },
    /// The package is too large for a 32-bit length field.
    TooLarge { field: &'static str, length: usize },
    /// A count the program determines holds another value (a host call's
    /// phases or invocations, a Repeat's trip count on another step).
    CountMismatch {
        offset: usize,
        field: &'static str,
        value: u64,
        expected: u64,
        why: &'static str,
    },
    /// A count above what any program on the target could need.
    CountTooLarge {
        offset: usize,
        field: &'static str,
        value: u64,
        max: u64,
    },
}

impl fmt::Display for PackageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PackageError::*;
        match self {
            BadMagic { found } => write!(f, "not an ipuc package: bad magic {found:02x?} at byte 0"),
            DigestMismatch { offset, stored, computed } => write!(
                f,
                "package digest mismatch: the SHA-256 stored at byte {offset} is {} but the contents hash to {}; the package is corrupt or was modified after it was written",
                super::hex(stored),
                super::hex(computed)
            ),
            UnsupportedVersion { found, supported } => {
                write!(f, "package format version {found} is not supported (this reader reads version {supported})")
            }
            Truncated { offset, field, needed, available } => write!(
                f,
                "package truncated at byte {offset}: field `{field}` needs {needed} bytes, {available} remain"
            ),
            LengthPastEnd { offset, field, length, available } => write!(
                f,
                "byte {offset}: `{field}` = {length} reaches past the end ({available} bytes available)"
            ),
            UnexpectedSection { offset, expected, found } => {
                write!(f, "byte {offset}: expected section tag {expected:#x}, found {found:#x}")
            }
            SectionLength { offset, section, declared, used } => write!(
                f,
                "byte {offset}: section `{section}` declares {declared} bytes but its contents use {used}"
            ),
            UnknownEnum { offset, field, value } => write!(f, "byte {offset}: unknown value {value} for `{field}`"),
            NonZeroReserved { offset, field, value } => {
                write!(f, "byte {offset}: reserved field `{field}` must be zero, found {value}")
            }
            InvalidUtf8 { offset, field } => write!(f, "byte {offset}: `{field}` is not valid UTF-8"),
            TargetMismatch { offset, field, expected, found } => write!(
                f,
                "byte {offset}: target fact `{field}` is {found:#x}, this reader only accepts the IPU21 value {expected:#x}"
            ),
            TileOutOfRange { offset, field, tile, tile_count } => {
                write!(f, "byte {offset}: `{field}` tile {tile} is not below the tile count {tile_count}")
            }
            DuplicateTile { offset, field, tile } => write!(f, "byte {offset}: tile {tile} appears twice in `{field}`"),
            NotAscending { offset, field, tile } => match tile {
                Some(t) => write!(f, "byte {offset}: tile {t}: `{field}` records are not in strictly ascending order"),
                None => write!(f, "byte {offset}: `{field}` records are not in strictly ascending order"),
            },
            EmptySegment { offset, tile, address } => {
                write!(f, "byte {offset}: tile {tile}: segment at {address:#x} has memory size 0")
            }
            SegmentOutsideMemory { offset, tile, address, end, memory_start, memory_end } => write!(
                f,
                "byte {offset}: tile {tile}: segment {address:#x}..{end:#x} is outside tile memory {memory_start:#x}..{memory_end:#x}"
            ),
            SegmentOverlap { offset, tile, address, previous_end } => write!(
                f,
                "byte {offset}: tile {tile}: segment at {address:#x} overlaps the previous segment ending at {previous_end:#x}"
            ),
            ExecutableAboveLimit { offset, tile, address, end, limit } => write!(
                f,
                "byte {offset}: tile {tile}: executable segment {address:#x}..{end:#x} ends above the fetch limit {limit:#x}"
            ),
            DataLongerThanMemory { offset, tile, address, data_len, memory_size } => write!(
                f,
                "byte {offset}: tile {tile}: segment at {address:#x} has {data_len} data bytes but reserves only {memory_size}"
            ),
            DataAboveLoaderLimit { offset, tile, address, data_end, limit } => write!(
                f,
                "byte {offset}: tile {tile}: segment at {address:#x} initialises bytes up to {data_end:#x}, above the loader limit {limit:#x}"
            ),
            EntryNotExecutable { offset, tile, entry_point } => write!(
                f,
                "byte {offset}: tile {tile}: entry point {entry_point:#x} is not inside an executable segment"
            ),
            BadCodeAddress { offset, field, tile, address } => match tile {
                Some(t) => write!(f, "byte {offset}: tile {t}: `{field}` address {address:#x} is not a valid code address"),
                None => write!(f, "byte {offset}: `{field}` address {address:#x} is not a valid code address"),
            },
            DuplicateName { offset, field } => write!(f, "byte {offset}: duplicate name in `{field}`"),
            DuplicateValue { offset, field, value } => {
                write!(f, "byte {offset}: `{field}` value {value:#x} is used twice")
            }
            ShapeOverflow { offset, binding_offset } => write!(
                f,
                "byte {offset}: the shape of the binding at byte {binding_offset} has more than 2^64 bytes"
            ),
            BindingLargerThanChip { offset, tensor_bytes, chip_bytes } => write!(
                f,
                "byte {offset}: the binding declares {tensor_bytes} bytes, more than the {chip_bytes} bytes of SRAM of every tile together"
            ),
            SlicesAlias { offset, tile, tile_address, other_binding_offset, kind, other_kind } => {
                if offset == other_binding_offset {
                    write!(f, "byte {offset}: tile {tile}: {kind} binding slices share SRAM at {tile_address:#x} but hold different bytes of the tensor")
                } else {
                    write!(f, "byte {offset}: tile {tile}: a slice of this {kind} binding shares SRAM at {tile_address:#x} with the {other_kind} binding at byte {other_binding_offset}")
                }
            }
            SliceTileMissing { offset, tile } => {
                write!(f, "byte {offset}: binding slice on tile {tile}, which has no tile image")
            }
            SliceOutOfRange { offset, tile, tile_address, size, file_offset, tensor_bytes } => write!(
                f,
                "byte {offset}: tile {tile}: binding slice {size} bytes at {tile_address:#x} from tensor byte {file_offset} is outside the tensor ({tensor_bytes} bytes) or tile memory"
            ),
            SliceOutsideSegment { offset, tile, tile_address, size } => write!(
                f,
                "byte {offset}: tile {tile}: binding slice {tile_address:#x}+{size} is not inside one writable tensor or scratch segment"
            ),
            BindingNotCovered { offset, first_missing_byte, tensor_bytes } => write!(
                f,
                "byte {offset}: binding slices leave tensor byte {first_missing_byte} (of {tensor_bytes}) on no tile"
            ),
            UnknownBinding { offset, field } => {
                write!(f, "byte {offset}: `{field}` names no binding of the matching kind")
            }
            TransferOutOfRange { offset, file_offset, size, tensor_bytes } => write!(
                f,
                "byte {offset}: host transfer of {size} bytes from {file_offset} is outside its binding ({tensor_bytes} bytes)"
            ),
            ZeroCount { offset, field } => write!(f, "byte {offset}: `{field}` must be at least 1"),
            OperationOutOfRange { offset, tile, operation, operations } => write!(
                f,
                "byte {offset}: tile {tile}: step operation index {operation} is not below the {operations} operations"
            ),
            StepTileMissing { offset, tile } => {
                write!(f, "byte {offset}: step table for tile {tile}, which has no tile image")
            }
            TrailingBytes { offset, count } => write!(f, "{count} trailing bytes after the package end at byte {offset}"),
            TooLarge { field, length } => write!(f, "`{field}` has {length} entries/bytes, more than fits 32 bits"),
            CountMismatch { offset, field, value, expected, why } => write!(
                f,
                "byte {offset}: `{field}` is {value}, but the program needs {expected}: {why}"
            ),
            CountTooLarge { offset, field, value, max } => write!(
                f,
                "byte {offset}: `{field}` is {value}, more than the {max} any program on the target could need"
            ),
        }
    }
}

impl core::error::Error for PackageError {}
