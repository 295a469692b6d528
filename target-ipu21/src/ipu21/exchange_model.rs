//! Exchange timing constants and instruction field limits used by the phase
//! scheduler, the row decoder and the simulator fabric
//! (`docs/facts/ipu21-target.md` §2.2–§2.5, §3.4).

use super::topology::PhysicalTile;

/// Receiver memory-write lag: PIC is written at `X + 52 + 2·row(d)` (§2.5).
pub const PIC_LAG_BASE: u32 = 52;
/// Extra memory-write lag per physical row of the receiver (§2.5).
pub const PIC_LAG_PER_ROW: u32 = 2;
/// Guard events a row keeps after its last memory write or send (§2.5, ~5).
pub const GUARD_EVENTS: u32 = 5;
/// A row that sends lasts at least this many events (§2.5).
pub const MIN_SENDER_ROW_EVENTS: u32 = 6;
/// Neutral XPIC value: tear-down / not receiving (§2.4, `TILE_MUX_EXCHANGE`).
pub const XPIC_NEUTRAL: u32 = 0x640;
/// Largest item count of a first `send` (§2.2, §2.3).
pub const SEND_MAX_ITEMS: u32 = 64;
/// Largest item count of `sendoff` (§2.2).
pub const SENDOFF_MAX_ITEMS: u32 = 4096;
/// Largest item count of `sendpic` / `sendpicp` (§2.2).
pub const SENDPIC_MAX_ITEMS: u32 = 64;
/// Largest advance of `delaypic` (§2.2).
pub const DELAYPIC_MAX_EVENTS: u32 = 128;
/// Largest advance of `delayxpic` (§2.2).
pub const DELAYXPIC_MAX_EVENTS: u32 = 4096;
/// Largest advance of `delay` (§2.2).
pub const DELAY_MAX_EVENTS: u32 = 0x8_0000;
/// `sendpicp` must start on this byte boundary within the row (§2.3).
pub const SENDPICP_ALIGN_BYTES: u32 = 8;
/// Bytes of one exchange instruction word (§0).
pub const WORD_BYTES: u32 = 4;

/// Events from the receiver's XPIC select to its first memory write:
/// `52 + 2·row(d)` (§2.5).
pub fn pic_lag(receiver: PhysicalTile) -> u32 {
    PIC_LAG_BASE + PIC_LAG_PER_ROW * u32::from(receiver.row())
}

/// `sctl` bit selecting 64-bit (paired) items (§2.3).
pub const SCTL_PAIRED: u32 = 4;
/// A paired transfer moves at least this many 64-bit items (§2.6).
pub const PAIRED_MIN_ITEMS: u32 = 64;
/// Paired receive: PIC format is set at `source_event + 51 + 2·row(d)` (§2.6, §6).
pub const PAIRED_FORMAT_LAG_BASE: u32 = 51;
/// Paired receive: the PIC pointer is written this many events after the format (§2.6).
pub const PAIRED_POINTER_AFTER_FORMAT: u32 = 2;
/// A paired receiver's row ends this many events after its last control (§2.6).
pub const PAIRED_ROW_TAIL_EVENTS: u32 = 7;
/// `$INCOMING_FORMAT` of the pair member that owns the paired XPIC stream (§2.6).
pub const INCOMING_FORMAT_EARLY: u32 = 1;
/// `$INCOMING_FORMAT` of the other pair member (§2.6).
pub const INCOMING_FORMAT_LATE: u32 = 2;

/// Events from a paired stream's source select to the PIC format write:
/// `51 + 2·row(d)` (§2.6).
pub fn paired_format_lag(receiver: PhysicalTile) -> u32 {
    PAIRED_FORMAT_LAG_BASE + PIC_LAG_PER_ROW * u32::from(receiver.row())
}

/// One word moved by the fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WordMove {
    pub dst_tile: u16,
    /// Destination word address (byte address / 4).
    pub dst_word: u32,
    pub src_tile: u16,
    /// Source word address.
    pub src_word: u32,
    /// Sender event the word was read at.
    pub read_event: u32,
    /// Receiver event the word is written at.
    pub write_event: u32,
}

/// The exchange base CSRs a tile holds while its row runs, as byte
/// addresses (what `put $OUTGOING_BASE` / `put $INCOMING_BASE` wrote).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowBases {
    /// `$OUTGOING_BASE`: `send` item addresses are relative to it (§2.3).
    pub outgoing: u32,
    /// `$INCOMING_BASE`: PIC pointer values are relative to it (§2.4).
    pub incoming: u32,
}

/// Exclusive bound on the base values the model covers (20-bit addresses).
pub const BASE_LIMIT: u32 = 1 << 20;

impl RowBases {
    /// Both bases 0: row addresses are absolute (the contract of
    /// `schedule_phase`'s rows).
    pub const ZERO: RowBases = RowBases {
        outgoing: 0,
        incoming: 0,
    };
}
