//! Errors of the exchange layer: bad requests, rows that cannot be encoded,
//! rows that cannot be decoded, and replay/check failures.

use core::fmt;

use ipuc_target::ipu21::isa::IsaError;
use ipuc_target::ipu21::topology::PhysicalTile;

/// Result alias of the exchange layer.
pub type Result<T> = core::result::Result<T, ExchangeError>;

/// Everything that can go wrong between a phase request and checked rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExchangeError {
    /// A transfer of zero words.
    EmptyTransfer { transfer: usize },
    /// A transfer without receivers.
    NoDestinations { transfer: usize },
    /// A paired (64-bit) transfer must move whole 64-bit items.
    OddPairedWords { transfer: usize, words: u32 },
    /// An address not aligned to the transfer's item width.
    Misaligned {
        transfer: usize,
        tile: PhysicalTile,
        address: u32,
        align: u32,
    },
    /// A span leaving tile SRAM.
    OutsideMemory {
        transfer: usize,
        tile: PhysicalTile,
        address: u32,
        bytes: u64,
    },
    /// A tile sending to itself (use a local copy instead).
    SelfTransfer { transfer: usize, tile: PhysicalTile },
    /// The same tile listed twice as a receiver of one transfer.
    DuplicateDestination { transfer: usize, tile: PhysicalTile },
    /// A destination span overlapping another destination or a source span on
    /// the same tile.
    OverlappingSpans {
        tile: PhysicalTile,
        first: usize,
        second: usize,
        address: u32,
    },
    /// The phase would last longer than the event counter can express.
    PhaseTooLong { events: u64 },
    /// A row cannot be expressed with the exchange instruction forms.
    Unencodable {
        tile: PhysicalTile,
        event: u32,
        reason: &'static str,
    },
    /// A `sendpicp` (an XPIC and a PIC control at one event) would start on
    /// an odd word of the row and no instruction since the previous
    /// `sendpicp` can be split to realign it (§2.3). The scheduler reacts by
    /// rescheduling with single controls on this tile.
    SendpicpAlignment { tile: PhysicalTile, event: u32 },
    /// The ISA layer rejected an operand.
    Isa { tile: PhysicalTile, error: IsaError },
    /// A row word that is not an exchange row instruction, or a malformed row.
    Decode(RowDecodeError),
    /// Replaying the rows failed (what a receiving tile would raise).
    Receive(ReceiveError),
    /// The rows replay cleanly but do not deliver what the request promised.
    Check(CheckError),
    /// A row placed where it conflicts with the phase's data (§2.10).
    RowPlacement {
        tile: PhysicalTile,
        row_address: u32,
        reason: &'static str,
    },
    /// A broken internal invariant (a bug, reported instead of panicking).
    Internal(&'static str),
}

/// Why a row's words cannot be decoded into an event timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowDecodeError {
    /// The ISA decoder rejected the word at `index`.
    Isa { index: usize, error: IsaError },
    /// A valid instruction that has no place in an exchange row.
    NotExchange { index: usize, word: u32 },
    /// `sendoff`/`sendpic` with no outgoing stream to continue.
    NoStream { index: usize },
    /// `sendoff` with a non-zero delta (semantics unconfirmed, §2.3).
    NonZeroDelta { index: usize, delta: u32 },
    /// `sendpicp` not at an 8-byte boundary of the row.
    MisalignedSendpicp { index: usize },
    /// The row ended without `br $m10`.
    MissingReturn { words: usize },
    /// Too many events for the 32-bit event counter.
    EventOverflow { index: usize },
}

/// What a receiving tile would raise while a phase runs (§1.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiveError {
    /// The receiver selected `source` at `event`, but `source` puts no word on
    /// the receiver's route at the matching send event.
    NoSender {
        tile: PhysicalTile,
        event: u32,
        source: u32,
    },
    /// A word would be written at `event` after the row returned, or the
    /// receiver is still attached to a source when its row ends.
    Overrun {
        tile: PhysicalTile,
        event: u32,
        address: u32,
    },
    /// A word would be written outside tile SRAM (or with no pointer set).
    OutsideMemory {
        tile: PhysicalTile,
        event: u32,
        address: u32,
    },
    /// XPIC names a value that is neither a tile nor the neutral mux.
    BadSource {
        tile: PhysicalTile,
        event: u32,
        source: u32,
    },
    /// Both members of a pair select the paired stream, or a tile follows a
    /// paired stream while its own XPIC selects a 32-bit source (§2.6).
    PairedStreams { tile: PhysicalTile, event: u32 },
    /// A word arrives while the PIC format does not match its width: a
    /// 32-bit word in 64-bit mode, or a 64-bit item with the format off or
    /// not equal to its route direction (§2.4, §2.6).
    FormatMismatch {
        tile: PhysicalTile,
        event: u32,
        address: u32,
    },
    /// A 64-bit item written to an address that is not 8-byte aligned.
    PairedMisaligned {
        tile: PhysicalTile,
        event: u32,
        address: u32,
    },
    /// Two incoming writes on one tile at the same event.
    WriteClash {
        tile: PhysicalTile,
        event: u32,
        address: u32,
    },
    /// A tile sends or receives while its pair partner streams 64-bit items
    /// ("partner busy", §2.6).
    PartnerBusy { tile: PhysicalTile, event: u32 },
    /// A receive write into the element the executing row is fetched from
    /// (§2.10, `CLASH_IFETCH`).
    FetchClash {
        tile: PhysicalTile,
        event: u32,
        address: u32,
    },
    /// The tile runs its row with an exchange CSR value the model does not
    /// cover (e.g. a base register that is not word aligned, §1.6, §2.3).
    UncoveredCsr {
        tile: PhysicalTile,
        csr: u16,
        value: u32,
    },
}

/// Replayed rows that do not match the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// A promised word was never written.
    Missing {
        tile: PhysicalTile,
        address: u32,
        transfer: usize,
    },
    /// A word was written where no transfer promised one.
    Unexpected { tile: PhysicalTile, address: u32 },
    /// The right address received the wrong source word.
    WrongSource {
        tile: PhysicalTile,
        address: u32,
        expected_tile: u16,
        expected_address: u32,
        got_tile: u16,
        got_address: u32,
    },
    /// An address written twice.
    WrittenTwice { tile: PhysicalTile, address: u32 },
    /// A row is longer than the schedule claims.
    LengthMismatch {
        tile: PhysicalTile,
        scheduled: u32,
        decoded: u32,
    },
}

impl From<RowDecodeError> for ExchangeError {
    fn from(e: RowDecodeError) -> Self {
        ExchangeError::Decode(e)
    }
}
impl From<ReceiveError> for ExchangeError {
    fn from(e: ReceiveError) -> Self {
        ExchangeError::Receive(e)
    }
}
impl From<CheckError> for ExchangeError {
    fn from(e: CheckError) -> Self {
        ExchangeError::Check(e)
    }
}

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ExchangeError as E;
        match self {
            E::EmptyTransfer { transfer } => write!(f, "transfer {transfer} moves no words"),
            E::NoDestinations { transfer } => write!(f, "transfer {transfer} has no destinations"),
            E::OddPairedWords { transfer, words } => write!(
                f,
                "paired transfer {transfer} moves {words} words, not whole 64-bit items"
            ),
            E::Misaligned {
                transfer,
                tile,
                address,
                align,
            } => write!(
                f,
                "transfer {transfer}: address {address:#x} on {tile} is not {align}-byte aligned"
            ),
            E::OutsideMemory {
                transfer,
                tile,
                address,
                bytes,
            } => write!(
                f,
                "transfer {transfer}: {bytes} bytes at {address:#x} on {tile} leave SRAM"
            ),
            E::SelfTransfer { transfer, tile } => {
                write!(f, "transfer {transfer}: {tile} sends to itself")
            }
            E::DuplicateDestination { transfer, tile } => {
                write!(f, "transfer {transfer}: {tile} is a destination twice")
            }
            E::OverlappingSpans {
                tile,
                first,
                second,
                address,
            } => write!(
                f,
                "{tile}: transfers {first} and {second} overlap at {address:#x} and one of them writes"
            ),
            E::PhaseTooLong { events } => write!(f, "phase would last {events} events"),
            E::Unencodable {
                tile,
                event,
                reason,
            } => write!(f, "{tile}, event {event}: cannot encode row: {reason}"),
            E::SendpicpAlignment { tile, event } => write!(
                f,
                "{tile}, event {event}: cannot 8-byte align the sendpicp (no multi-event instruction since the previous one)"
            ),
            E::Isa { tile, error } => write!(f, "{tile}: {error}"),
            E::Decode(e) => write!(f, "cannot decode an exchange row: {e}"),
            E::Receive(e) => write!(f, "replaying the rows faults on a receiving tile: {e}"),
            E::Check(e) => write!(f, "the rows do not deliver what the phase requests: {e}"),
            E::RowPlacement {
                tile,
                row_address,
                reason,
            } => write!(f, "{tile}: row at {row_address:#x}: {reason}"),
            E::Internal(what) => write!(f, "internal exchange invariant broken: {what}"),
        }
    }
}

// Display includes every nested error's text, so no `source()` (an error
// reports its cause one way, never twice).
impl core::error::Error for ExchangeError {}

impl fmt::Display for RowDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use RowDecodeError as E;
        match self {
            E::Isa { index, error } => write!(f, "row word {index}: {error}"),
            E::NotExchange { index, word } => write!(
                f,
                "row word {index} ({word:#010x}) is not an exchange row instruction"
            ),
            E::NoStream { index } => write!(
                f,
                "row word {index}: sendoff/sendpic with no outgoing stream to continue"
            ),
            E::NonZeroDelta { index, delta } => write!(
                f,
                "row word {index}: sendoff with delta {delta} (only 0 is established, §2.3)"
            ),
            E::MisalignedSendpicp { index } => {
                write!(
                    f,
                    "row word {index}: sendpicp not at an 8-byte boundary of the row"
                )
            }
            E::MissingReturn { words } => {
                write!(f, "the row's {words} words end without `br $m10`")
            }
            E::EventOverflow { index } => {
                write!(
                    f,
                    "row word {index}: more events than the 32-bit counter holds"
                )
            }
        }
    }
}

impl core::error::Error for RowDecodeError {}

impl fmt::Display for ReceiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ReceiveError as E;
        match self {
            E::NoSender {
                tile,
                event,
                source,
            } => write!(
                f,
                "{tile}, event {event}: selects source {source}, which sends nothing on this route then"
            ),
            E::Overrun {
                tile,
                event,
                address,
            } => write!(
                f,
                "{tile}, event {event}: a word for {address:#x} arrives after the row returned"
            ),
            E::OutsideMemory {
                tile,
                event,
                address,
            } => write!(
                f,
                "{tile}, event {event}: a word would be written outside SRAM at {address:#x}"
            ),
            E::BadSource {
                tile,
                event,
                source,
            } => write!(
                f,
                "{tile}, event {event}: XPIC selects {source}, neither a tile nor the neutral mux"
            ),
            E::PairedStreams { tile, event } => write!(
                f,
                "{tile}, event {event}: paired streams selected inconsistently (§2.6)"
            ),
            E::FormatMismatch {
                tile,
                event,
                address,
            } => write!(
                f,
                "{tile}, event {event}: a word for {address:#x} arrives while the PIC format does not match its width"
            ),
            E::PairedMisaligned {
                tile,
                event,
                address,
            } => write!(
                f,
                "{tile}, event {event}: a 64-bit item written to {address:#x}, not 8-byte aligned"
            ),
            E::WriteClash {
                tile,
                event,
                address,
            } => write!(
                f,
                "{tile}, event {event}: two incoming writes at once (one at {address:#x})"
            ),
            E::PartnerBusy { tile, event } => write!(
                f,
                "{tile}, event {event}: sends or receives while its pair partner streams 64-bit items"
            ),
            E::FetchClash {
                tile,
                event,
                address,
            } => write!(
                f,
                "{tile}, event {event}: a receive writes {address:#x} in the element the row is fetched from"
            ),
            E::UncoveredCsr { tile, csr, value } => write!(
                f,
                "{tile}: runs its row with exchange CSR {csr:#x} = {value:#x}, which the model does not cover"
            ),
        }
    }
}

impl core::error::Error for ReceiveError {}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CheckError as E;
        match self {
            E::Missing {
                tile,
                address,
                transfer,
            } => write!(
                f,
                "{tile}: the word transfer {transfer} promises at {address:#x} is never written"
            ),
            E::Unexpected { tile, address } => write!(
                f,
                "{tile}: a word is written at {address:#x} where no transfer promised one"
            ),
            E::WrongSource {
                tile,
                address,
                expected_tile,
                expected_address,
                got_tile,
                got_address,
            } => write!(
                f,
                "{tile}: {address:#x} receives tile {got_tile}'s {got_address:#x}, expected tile {expected_tile}'s {expected_address:#x}"
            ),
            E::WrittenTwice { tile, address } => write!(f, "{tile}: {address:#x} is written twice"),
            E::LengthMismatch {
                tile,
                scheduled,
                decoded,
            } => write!(
                f,
                "{tile}: the row decodes to {decoded} events but the schedule claims {scheduled}"
            ),
        }
    }
}

impl core::error::Error for CheckError {}
