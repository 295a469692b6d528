//! What the witness reports: a [`WitnessFault`] names the tile, the event and,
//! where there is one, the SRAM address.

use super::*;

/// What the witness found wrong, on `tile` at `event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WitnessFault {
    pub tile: PhysicalTile,
    /// Event on the tile's row clock (for row faults, the instruction's start).
    pub event: u32,
    /// The SRAM byte address concerned: the row word for row faults, the
    /// destination of the receive otherwise (`None` where there is none,
    /// e.g. a word selected before any PIC pointer was set).
    pub address: Option<u32>,
    pub kind: WitnessFaultKind,
}

/// The kinds of [`WitnessFault`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WitnessFaultKind {
    /// The row word at `address` is not an exchange-row instruction the
    /// facts cover (undecodable, not an exchange instruction, a `sendoff`
    /// with no stream or a non-zero delta, a `sendpicp` off an 8-byte
    /// boundary, no `br $m10` within [`MAX_ROW_WORDS`], event overflow).
    Row(RowFault),
    /// The receiver's mux selected `source`, which drives no item of the
    /// expected width on this receiver's route at `event − T − 1`.
    NothingOnRoute { source: PhysicalTile, paired: bool },
    /// An XPIC value that is neither a tile nor the neutral `0x640`.
    BadSource { source: u32 },
    /// The row returned with a source still selected.
    StillAttached { source: u32 },
    /// A write at `event` is not `GUARD_EVENTS` before the row returns.
    WriteAfterReturn,
    /// A word arrives before any PIC pointer was written.
    NoPointer,
    /// The PIC pointer lies outside tile SRAM.
    OutsideMemory,
    /// Two items are written at one event.
    TwoWritesOneEvent,
    /// The PIC format in force does not match the item (§2.6).
    FormatMismatch { expected: u32, shown: u32 },
    /// The paired format is still on, or its tail is cut, at the row's end.
    FormatLeftOn,
    /// A 64-bit item written to an address not 8-byte aligned.
    PairedMisaligned,
    /// Ordinary and paired streams (or both pair members' paired streams)
    /// selected at once.
    PairedStreams,
    /// The partner of a tile streaming 64-bit items sends or receives.
    PartnerBusy { sender: PhysicalTile },
    /// An exchange CSR value the facts do not cover.
    UncoveredCsr { csr: u16, value: u32 },
}

/// Why a row word cannot be stepped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFault {
    Undecodable,
    NotExchange { word: u32 },
    NoStream,
    NonZeroDelta { delta: u32 },
    MisalignedSendpicp,
    NoReturn,
    EventOverflow,
}

impl std::fmt::Display for WitnessFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = match self.address {
            Some(a) => format!("{a:#x}"),
            None => "no address".into(),
        };
        let (tile, event) = (self.tile, self.event);
        match self.kind {
            WitnessFaultKind::Row(r) => {
                write!(f, "{tile}: exchange row word at {at} (event {event}): {r:?}")
            }
            WitnessFaultKind::NothingOnRoute { source, paired } => write!(
                f,
                "{tile}: receive error at event {event}: selected source {} drives no {} item on this route (write address {at})",
                source.get(),
                if paired { "64-bit" } else { "32-bit" }
            ),
            WitnessFaultKind::BadSource { source } => write!(
                f,
                "{tile}: XPIC source {source:#x} at event {event} is not a tile"
            ),
            WitnessFaultKind::StillAttached { source } => write!(
                f,
                "{tile}: receive overrun: row returned at event {event} with source {source:#x} still selected"
            ),
            WitnessFaultKind::WriteAfterReturn => write!(
                f,
                "{tile}: receive overrun at event {event} (address {at}): row returned before the receive finished"
            ),
            WitnessFaultKind::NoPointer => write!(
                f,
                "{tile}: receive error at event {event}: a word arrives before any PIC pointer"
            ),
            WitnessFaultKind::OutsideMemory => write!(
                f,
                "{tile}: receive error at event {event}: write to {at} outside memory"
            ),
            WitnessFaultKind::TwoWritesOneEvent => write!(
                f,
                "{tile}: receive error at event {event}: two writes at one event ({at})"
            ),
            WitnessFaultKind::FormatMismatch { expected, shown } => write!(
                f,
                "{tile}: receive error at event {event} ({at}): PIC format {shown} where the item needs {expected}"
            ),
            WitnessFaultKind::FormatLeftOn => write!(
                f,
                "{tile}: paired PIC format left on or its tail cut at event {event}"
            ),
            WitnessFaultKind::PairedMisaligned => write!(
                f,
                "{tile}: 64-bit item at event {event} written to {at}, not 8-byte aligned"
            ),
            WitnessFaultKind::PairedStreams => write!(
                f,
                "{tile}: two receive streams selected at event {event}"
            ),
            WitnessFaultKind::PartnerBusy { sender } => write!(
                f,
                "{tile}: busy at event {event} while its partner {} streams 64-bit items",
                sender.get()
            ),
            WitnessFaultKind::UncoveredCsr { csr, value } => write!(
                f,
                "{tile}: row runs with {} = {value:#x}, a value the exchange model does not cover",
                csr_name(csr)
            ),
        }
    }
}

impl std::error::Error for WitnessFault {}
