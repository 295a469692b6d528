//! [`Piece`]: one scheduled message of a phase — what the scheduler
//! produces and the timeline, encoder and replay read.

use alloc::vec::Vec;

/// One scheduled message: consecutive words of one transfer, sent once and
/// received by the listed destinations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Index of the transfer in the request.
    pub transfer: usize,
    /// First word of the transfer this piece carries.
    pub offset: u32,
    /// Words carried.
    pub words: u32,
    /// Sender's first event `S`.
    pub start: u64,
    /// Indices into the transfer's destinations; for a paired piece, the
    /// receiving pairs as consecutive (early, late) members.
    pub destinations: Vec<u16>,
    /// Sent as 64-bit items (§2.6): `words / 2` events.
    pub paired: bool,
}

impl Piece {
    /// Events the sender streams this piece for.
    pub fn events(&self) -> u32 {
        if self.paired {
            self.words / 2
        } else {
            self.words
        }
    }
}
