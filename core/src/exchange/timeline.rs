//! Per-tile event timelines: the outgoing messages a row must send and the
//! receive controls it must apply, derived from scheduled pieces with the
//! route timing model (§2.5). The encoder turns a timeline into words; the
//! decoder turns words back into the same shape.

use alloc::vec::Vec;

use super::error::{ExchangeError, Result};
use super::request::ExchangePhase;
use super::schedule::Piece;
use crate::target::exchange_model::{pic_lag, GUARD_EVENTS, MIN_SENDER_ROW_EVENTS, XPIC_NEUTRAL};
use crate::target::topology::{direction, mux_time, PhysicalTile, TILE_COUNT};

/// One outgoing message: `items` consecutive words from `word_address`
/// starting at event `start`, on the routes in `sctl` (bit 0 = direction 1,
/// bit 1 = direction 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutgoingMessage {
    pub start: u32,
    pub items: u32,
    pub word_address: u32,
    pub sctl: u32,
}

/// Receive controls that take effect at one event (at most one XPIC and one
/// PIC pointer write, §2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlEvent {
    pub event: u32,
    /// New XPIC source (physical tile id or `0x640`).
    pub xpic: Option<u32>,
    /// New PIC pointer (absolute word address; `$INCOMING_BASE` = 0).
    pub pic: Option<u32>,
}

/// Everything one tile's row does in a phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TileTimeline {
    /// Sorted by start, non-overlapping.
    pub messages: Vec<OutgoingMessage>,
    /// Sorted by event, one entry per event.
    pub controls: Vec<ControlEvent>,
    /// Event at which the row returns (0 for an inactive tile).
    pub end: u32,
}

impl TileTimeline {
    /// Does this tile take part in the phase?
    pub fn is_active(&self) -> bool {
        !self.messages.is_empty() || !self.controls.is_empty()
    }
}

struct Incoming {
    x: u64,
    words: u64,
    source: u32,
    dst_word: u32,
}

fn to_event(e: u64) -> Result<u32> {
    u32::try_from(e).map_err(|_| ExchangeError::PhaseTooLong { events: e })
}

/// Builds every tile's timeline (indexed by physical id) from pieces.
pub fn build_timelines(phase: &ExchangePhase, pieces: &[Piece]) -> Result<Vec<TileTimeline>> {
    let n = usize::from(TILE_COUNT);
    let mut timelines: Vec<TileTimeline> = (0..n).map(|_| TileTimeline::default()).collect();
    let mut incoming: Vec<Vec<Incoming>> = (0..n).map(|_| Vec::new()).collect();
    let mut ends = alloc::vec![0u64; n];
    for p in pieces {
        let t = phase
            .transfers
            .get(p.transfer)
            .ok_or(ExchangeError::Internal("piece names a missing transfer"))?;
        let mut sctl = 0u32;
        for &k in &p.destinations {
            let d = t
                .destinations
                .get(usize::from(k))
                .ok_or(ExchangeError::Internal("piece names a missing destination"))?;
            sctl |= u32::from(direction(t.source, d.tile).sctl_bit());
            let x = p.start as i64 + i64::from(mux_time(t.source, d.tile)) + 1;
            if x < 1 {
                return Err(ExchangeError::Internal("XPIC select before event 1"));
            }
            incoming[d.tile.index()].push(Incoming {
                x: x as u64,
                words: u64::from(p.words),
                source: u32::from(t.source.get()),
                dst_word: d.address / 4 + p.offset,
            });
        }
        let sender = &mut timelines[t.source.index()];
        sender.messages.push(OutgoingMessage {
            start: to_event(p.start)?,
            items: p.words,
            word_address: t.source_address / 4 + p.offset,
            sctl,
        });
        let end = p.start + u64::from(p.words) + u64::from(GUARD_EVENTS);
        let e = &mut ends[t.source.index()];
        *e = (*e).max(end).max(u64::from(MIN_SENDER_ROW_EVENTS));
    }
    for (tile, list) in incoming.iter_mut().enumerate() {
        if list.is_empty() {
            continue;
        }
        list.sort_by_key(|i| i.x);
        let phys = PhysicalTile::new(tile as u32)
            .map_err(|_| ExchangeError::Internal("tile index out of range"))?;
        let lag = u64::from(pic_lag(phys));
        // (event, is_pic, value)
        let mut raw: Vec<(u64, bool, u32)> = Vec::with_capacity(list.len() * 3);
        let mut pointer: Option<u32> = None;
        for (i, inc) in list.iter().enumerate() {
            raw.push((inc.x, false, inc.source));
            let stop = inc.x + inc.words;
            if list.get(i + 1).map(|n| n.x) != Some(stop) {
                raw.push((stop, false, XPIC_NEUTRAL));
            }
            if pointer != Some(inc.dst_word) {
                raw.push((inc.x + lag, true, inc.dst_word));
            }
            pointer = Some(inc.dst_word + inc.words as u32);
            let e = &mut ends[tile];
            *e = (*e).max(inc.x + lag + inc.words + u64::from(GUARD_EVENTS));
        }
        raw.sort_unstable();
        let controls = &mut timelines[tile].controls;
        for (event, is_pic, value) in raw {
            let event = to_event(event)?;
            if controls.last().map(|c| c.event) != Some(event) {
                controls.push(ControlEvent {
                    event,
                    xpic: None,
                    pic: None,
                });
            }
            let slot = controls
                .last_mut()
                .ok_or(ExchangeError::Internal("control list empty after push"))?;
            let field = if is_pic {
                &mut slot.pic
            } else {
                &mut slot.xpic
            };
            if field.replace(value).is_some() {
                return Err(ExchangeError::Internal(
                    "two controls of one kind at one event",
                ));
            }
        }
    }
    for (tl, end) in timelines.iter_mut().zip(ends) {
        tl.messages.sort_by_key(|m| m.start);
        tl.end = to_event(end)?;
    }
    Ok(timelines)
}
