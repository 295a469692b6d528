//! What a phase must achieve: transfers of words from one tile's SRAM to one
//! or more tiles' SRAM, validated before scheduling.

use alloc::vec::Vec;

use super::error::ExchangeError;
use ipuc_target::ipu21::sram::{effective_element, TILE_MEMORY_BASE, TILE_MEMORY_END};
use ipuc_target::ipu21::topology::PhysicalTile;

/// Item width a transfer asks for.
///
/// `Paired64` requests a 64-bit paired transfer (§2.6). Receivers that meet
/// the §2.6 rules (complete physical pairs, ≥ 64 items, one paired sender per
/// receiver pair per phase, no coincident paired controls) get 64-bit items;
/// the others get 32-bit items — the fallback ipu-stack also uses — so the
/// bytes delivered are the same either way. See `exchange::plan_pairing` and
/// `ScheduledPhase::pairing` for what happened to each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// One 32-bit word per event.
    Word32,
    /// 64-bit items (8-byte aligned addresses, even word count).
    Paired64,
}

/// One receiver of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Destination {
    /// Receiving tile.
    pub tile: PhysicalTile,
    /// Byte address of the first word on the receiver.
    pub address: u32,
}

/// `words` 32-bit words from `source_address` on `source` to every destination.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Transfer {
    /// Sending tile.
    pub source: PhysicalTile,
    /// Byte address of the first word on the sender.
    pub source_address: u32,
    /// Number of 32-bit words (≥ 1).
    pub words: u32,
    /// Receivers (≥ 1, distinct tiles, none equal to the source).
    pub destinations: Vec<Destination>,
    /// Requested item width.
    pub width: Width,
}

/// The transfers of one exchange phase.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExchangePhase {
    /// All transfers; their order is their identity in errors and checks.
    pub transfers: Vec<Transfer>,
}

/// Bytes per 32-bit word.
const WORD: u32 = 4;

/// Bit mask of the effective SRAM elements (§1.2, §2.10) a byte span touches.
pub fn element_mask(address: u32, bytes: u32) -> u64 {
    if bytes == 0 {
        return 0;
    }
    let first = effective_element(address);
    let last = effective_element(address + bytes - 1);
    let mut mask = 0u64;
    for e in first..=last {
        // Effective elements are < 64 (standard ≤ 31, interleaved 32..=44).
        mask |= 1u64 << (e & 63);
    }
    mask
}

impl Transfer {
    /// Bytes moved to each destination.
    pub fn bytes(&self) -> u32 {
        self.words * WORD
    }
}

impl ExchangePhase {
    /// Checks every rule a request must satisfy before it can be scheduled.
    pub fn validate(&self) -> Result<(), ExchangeError> {
        // (tile, start, end, transfer, is_write) spans for overlap checks.
        let mut spans: Vec<(u16, u32, u32, usize, bool)> = Vec::new();
        let mut seen = alloc::vec![0usize; usize::from(ipuc_target::ipu21::topology::TILE_COUNT)];
        for (index, t) in self.transfers.iter().enumerate() {
            if t.words == 0 {
                return Err(ExchangeError::EmptyTransfer { transfer: index });
            }
            if t.destinations.is_empty() {
                return Err(ExchangeError::NoDestinations { transfer: index });
            }
            let align = match t.width {
                Width::Word32 => WORD,
                Width::Paired64 => 2 * WORD,
            };
            if t.width == Width::Paired64 && t.words % 2 != 0 {
                return Err(ExchangeError::OddPairedWords {
                    transfer: index,
                    words: t.words,
                });
            }
            let bytes = u64::from(t.words) * u64::from(WORD);
            check_span(index, t.source, t.source_address, bytes, align)?;
            spans.push((
                t.source.get(),
                t.source_address,
                t.source_address + bytes as u32,
                index,
                false,
            ));
            for d in &t.destinations {
                if d.tile == t.source {
                    return Err(ExchangeError::SelfTransfer {
                        transfer: index,
                        tile: d.tile,
                    });
                }
                // `seen[tile]` holds the last transfer (+1) that named the tile.
                let mark = &mut seen[d.tile.index()];
                if *mark == index + 1 {
                    return Err(ExchangeError::DuplicateDestination {
                        transfer: index,
                        tile: d.tile,
                    });
                }
                *mark = index + 1;
                check_span(index, d.tile, d.address, bytes, align)?;
                spans.push((
                    d.tile.get(),
                    d.address,
                    d.address + bytes as u32,
                    index,
                    true,
                ));
            }
        }
        // Writes may not overlap other writes or any read on the same tile: the
        // result would depend on timing rather than on the request.
        spans.sort_unstable_by_key(|s| (s.0, s.1, s.2, s.3, s.4));
        for (i, a) in spans.iter().enumerate() {
            for b in spans[i + 1..].iter() {
                if b.0 != a.0 || b.1 >= a.2 {
                    break;
                }
                if a.4 || b.4 {
                    let tile = PhysicalTile::new(u32::from(a.0))
                        .map_err(|_| ExchangeError::Internal("span tile out of range"))?;
                    return Err(ExchangeError::OverlappingSpans {
                        tile,
                        first: a.3,
                        second: b.3,
                        address: b.1,
                    });
                }
            }
        }
        Ok(())
    }

    /// Words each physical tile sends (as a sender, once per multicast) and
    /// receives, indexed by physical id.
    pub fn loads(&self) -> (Vec<u64>, Vec<u64>) {
        let n = usize::from(ipuc_target::ipu21::topology::TILE_COUNT);
        let (mut out, mut inc) = (alloc::vec![0u64; n], alloc::vec![0u64; n]);
        for t in &self.transfers {
            out[t.source.index()] += u64::from(t.words);
            for d in &t.destinations {
                inc[d.tile.index()] += u64::from(t.words);
            }
        }
        (out, inc)
    }

    /// The largest number of words any one tile must send or receive: no
    /// schedule can be shorter (one outgoing and one incoming stream per tile).
    pub fn lower_bound(&self) -> u64 {
        let (out, inc) = self.loads();
        out.iter().chain(inc.iter()).copied().max().unwrap_or(0)
    }

    /// Total words written on receivers.
    pub fn words_delivered(&self) -> u64 {
        self.transfers
            .iter()
            .map(|t| u64::from(t.words) * t.destinations.len() as u64)
            .sum()
    }
}

fn check_span(
    transfer: usize,
    tile: PhysicalTile,
    address: u32,
    bytes: u64,
    align: u32,
) -> Result<(), ExchangeError> {
    if !address.is_multiple_of(align) {
        return Err(ExchangeError::Misaligned {
            transfer,
            tile,
            address,
            align,
        });
    }
    let end = u64::from(address) + bytes;
    if address < TILE_MEMORY_BASE || end > u64::from(TILE_MEMORY_END) {
        return Err(ExchangeError::OutsideMemory {
            transfer,
            tile,
            address,
            bytes,
        });
    }
    Ok(())
}
