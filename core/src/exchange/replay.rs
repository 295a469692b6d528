//! Replays decoded rows of one phase with the route timing model: which word
//! of which sender each receiver stores where, and when. Shared by the
//! checker and the simulator's fabric, so both see the same semantics.
//!
//! Model (§2.4, §2.5): a receiver whose XPIC selects sender `s` from event
//! `X` takes, at each mux event `e`, the item `s` put on the fabric at event
//! `e − T(s,d) − 1` on a route that includes `d`'s direction; that word is
//! written at event `e + 52 + 2·row(d)` to the PIC pointer in force at that
//! event, which then increments. PIC writes at event `p` apply to the write at
//! `p`. The receiver must be torn down (`0x640`) and its last write done
//! `GUARD_EVENTS` before its row returns.

use alloc::vec::Vec;

use super::decode::{ControlKind, DecodedRow, SendRun};
use super::error::ReceiveError;
use crate::target::exchange_model::{pic_lag, GUARD_EVENTS, XPIC_NEUTRAL};
use crate::target::sram::{effective_element, TILE_MEMORY_BASE, TILE_MEMORY_END};
use crate::target::topology::{direction, mux_time, PhysicalTile, TILE_COUNT};

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

/// One tile's part in a phase: its decoded row, and optionally the byte span
/// the row is fetched from (writes into its elements are fetch clashes).
#[derive(Clone, Debug)]
pub struct TileRowView<'a> {
    pub tile: PhysicalTile,
    pub row: &'a DecodedRow,
    pub fetch_span: Option<(u32, u32)>,
}

/// Replays all rows of a phase; returns every word move sorted by
/// (destination tile, destination word).
pub fn replay(rows: &[TileRowView<'_>]) -> Result<Vec<WordMove>, ReceiveError> {
    let mut senders: Vec<Option<&[SendRun]>> = alloc::vec![None; usize::from(TILE_COUNT)];
    for r in rows {
        senders[r.tile.index()] = Some(&r.row.sends);
    }
    // Receivers in tile order, each tile's moves sorted: the whole list is
    // then sorted by (destination tile, destination word) without a global sort.
    let mut order: Vec<&TileRowView<'_>> = rows.iter().collect();
    order.sort_by_key(|r| r.tile);
    let mut moves = Vec::new();
    for r in order {
        let first = moves.len();
        replay_receiver(r, &senders, &mut moves)?;
        moves[first..].sort_unstable();
    }
    Ok(moves)
}

/// The run of `runs` (sorted by start) containing event `e`.
fn run_at(runs: &[SendRun], e: u32) -> Option<&SendRun> {
    let idx = runs.partition_point(|r| r.start <= e);
    let r = runs.get(idx.checked_sub(1)?)?;
    (e < r.start + r.items).then_some(r)
}

fn replay_receiver(
    view: &TileRowView<'_>,
    senders: &[Option<&[SendRun]>],
    moves: &mut Vec<WordMove>,
) -> Result<(), ReceiveError> {
    let d = view.tile;
    let row = view.row;
    let lag = pic_lag(d);
    let end = row.events;
    // Received items in mux-event order: (mux event, src tile, src word, read event).
    let mut items: Vec<(u32, u16, u32, u32)> = Vec::new();
    let mut pics: Vec<(u32, u32)> = Vec::new();
    let mut current = XPIC_NEUTRAL;
    let mut since = 0u32;
    let close = |source: u32, from: u32, to: u32, items: &mut Vec<(u32, u16, u32, u32)>| {
        if source == XPIC_NEUTRAL || from >= to {
            return Ok(());
        }
        let s = PhysicalTile::new(source).map_err(|_| ReceiveError::BadSource {
            tile: d,
            event: from,
            source,
        })?;
        let runs = senders[s.index()].unwrap_or(&[]);
        let offset = i64::from(mux_time(s, d)) + 1;
        let bit = u32::from(direction(s, d).sctl_bit());
        let mut e = from;
        while e < to {
            let se = i64::from(e) - offset;
            let hit = u32::try_from(se)
                .ok()
                .and_then(|se| run_at(runs, se).map(|r| (se, r)))
                .filter(|(_, r)| r.sctl & bit != 0 && r.sctl & 4 == 0);
            let Some((se, r)) = hit else {
                return Err(ReceiveError::NoSender {
                    tile: d,
                    event: e,
                    source,
                });
            };
            // The rest of this send run covers consecutive events.
            let n = (to - e).min(r.start + r.items - se);
            let first = r.word_address + (se - r.start);
            for k in 0..n {
                items.push((e + k, s.get(), first + k, se + k));
            }
            e += n;
        }
        Ok(())
    };
    for c in &row.controls {
        match c.kind {
            ControlKind::Xpic(v) => {
                close(current, since, c.event, &mut items)?;
                current = v;
                since = c.event;
            }
            ControlKind::PicPointer(p) => pics.push((c.event, p)),
            ControlKind::XpicPaired(_) | ControlKind::PicFormat(_) => {
                return Err(ReceiveError::PairedUnsupported {
                    tile: d,
                    event: c.event,
                })
            }
        }
    }
    if current != XPIC_NEUTRAL {
        return Err(ReceiveError::Overrun {
            tile: d,
            event: end,
            address: 0,
        });
    }
    // Writes: merge with PIC pointer updates in event order.
    let mut pointer: Option<u32> = None;
    let mut pi = 0;
    let fetch_mask = view.fetch_span.map(|(a, b)| {
        let (lo, hi) = (effective_element(a), effective_element(b.max(a + 1) - 1));
        (lo, hi)
    });
    for &(e, src_tile, src_word, read_event) in &items {
        let w = e + lag;
        while pi < pics.len() && pics[pi].0 <= w {
            pointer = Some(pics[pi].1);
            pi += 1;
        }
        let address = pointer.map_or(0, |p| p.wrapping_mul(4));
        if pointer.is_none() || !(TILE_MEMORY_BASE..TILE_MEMORY_END).contains(&address) {
            return Err(ReceiveError::OutsideMemory {
                tile: d,
                event: w,
                address,
            });
        }
        if u64::from(w) + u64::from(GUARD_EVENTS) >= u64::from(end) {
            return Err(ReceiveError::Overrun {
                tile: d,
                event: w,
                address,
            });
        }
        if let Some((lo, hi)) = fetch_mask {
            let el = effective_element(address);
            if (lo..=hi).contains(&el) {
                return Err(ReceiveError::FetchClash {
                    tile: d,
                    event: w,
                    address,
                });
            }
        }
        moves.push(WordMove {
            dst_tile: d.get(),
            dst_word: address / 4,
            src_tile,
            src_word,
            read_event,
            write_event: w,
        });
        pointer = pointer.map(|p| p + 1);
    }
    Ok(())
}
