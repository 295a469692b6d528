//! Per-tile event timelines: the outgoing messages a row must send and the
//! receive controls it must apply, derived from scheduled pieces with the
//! route timing model (§2.5). The encoder turns a timeline into words; the
//! decoder turns words back into the same shape.

use alloc::vec::Vec;

use super::error::{ExchangeError, Result};
use super::piece::Piece;
use super::request::ExchangePhase;
use ipuc_target::ipu21::exchange_model::{
    paired_format_lag, pic_lag, GUARD_EVENTS, MIN_SENDER_ROW_EVENTS, PAIRED_POINTER_AFTER_FORMAT,
    PAIRED_ROW_TAIL_EVENTS, SCTL_PAIRED, XPIC_NEUTRAL,
};
use ipuc_target::ipu21::topology::{direction, mux_time, PhysicalTile, TILE_COUNT};

/// Event at which the early member of a receiving pair selects a paired
/// stream whose sender starts at `start` (§2.6): `max(T(s,d), T(s,d^2))`
/// after the sender's start, plus one event as on the 32-bit path (§2.5).
/// §2.6 gives `source_event` relative to a shift but does not state the
/// sender's start on the same clock; we keep the 32-bit relation `X = S + T + 1`
/// with the later member's `T` (an assumption; the replay uses the same rule).
pub fn paired_source_event(start: u64, sender: PhysicalTile, member: PhysicalTile) -> i64 {
    let t = mux_time(sender, member).max(mux_time(sender, member.pair_partner()));
    start as i64 + i64::from(t) + 1
}

/// One outgoing message: `items` consecutive items from `word_address`
/// starting at event `start`, on the routes in `sctl` (bit 0 = direction 1,
/// bit 1 = direction 2, bit 2 = 64-bit items; then `word_address` counts
/// 8-byte units, §2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutgoingMessage {
    pub start: u32,
    pub items: u32,
    pub word_address: u32,
    pub sctl: u32,
}

/// Receive controls that take effect at one event (at most one XPIC and one
/// PIC write, §2.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControlEvent {
    pub event: u32,
    /// New XPIC source (physical tile id or `0x640`).
    pub xpic: Option<u32>,
    /// New PIC value: a pointer (absolute word address; `$INCOMING_BASE` = 0)
    /// or, with `pic_format`, the 64-bit receive format.
    pub pic: Option<u32>,
    /// `xpic` selects the paired (64-bit) stream (§2.4 selector 1).
    pub xpic_paired: bool,
    /// `pic` is the PIC format (§2.4 selector 1), not the pointer.
    pub pic_format: bool,
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
    /// A paired stream: `x` is the source event, `words` counts 64-bit
    /// items; `Some(true)` on the member that owns the paired XPIC.
    paired: Option<bool>,
    /// PIC format of a paired receive: the route direction (§2.6).
    format: u32,
}

/// A control before grouping by event.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Raw {
    Xpic(u32),
    XpicPaired(u32),
    Pic(u32),
    PicFormat(u32),
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
        let dest = |k: u16| {
            t.destinations
                .get(usize::from(k))
                .ok_or(ExchangeError::Internal("piece names a missing destination"))
        };
        let mut sctl = 0u32;
        // Events the sender streams: one per word, or per 64-bit item.
        let items = if p.paired { p.words / 2 } else { p.words };
        if p.paired {
            // §2.6: both members of each pair get the stream; the early one
            // selects it at `S + max(T(s,d), T(s,d^2)) + 1` (see `paired_source_event`).
            for pair in p.destinations.chunks(2) {
                let [early, late] = pair else {
                    return Err(ExchangeError::Internal("paired piece with an odd receiver"));
                };
                let (e, l) = (dest(*early)?, dest(*late)?);
                sctl |= u32::from(direction(t.source, e.tile).sctl_bit())
                    | u32::from(direction(t.source, l.tile).sctl_bit());
                let x = paired_source_event(p.start, t.source, e.tile);
                if x < 1 {
                    return Err(ExchangeError::Internal("paired select before event 1"));
                }
                for (d, owns) in [(e, true), (l, false)] {
                    incoming[d.tile.index()].push(Incoming {
                        x: x as u64,
                        words: u64::from(items),
                        source: u32::from(t.source.get() ^ (e.tile.get() & 2)),
                        dst_word: d.address / 4 + p.offset,
                        paired: Some(owns),
                        format: u32::from(direction(t.source, d.tile).sctl_bit()),
                    });
                }
            }
            sctl |= SCTL_PAIRED;
        } else {
            for &k in &p.destinations {
                let d = dest(k)?;
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
                    paired: None,
                    format: 0,
                });
            }
        }
        let sender = &mut timelines[t.source.index()];
        let first_word = t.source_address / 4 + p.offset;
        sender.messages.push(OutgoingMessage {
            start: to_event(p.start)?,
            items,
            word_address: if p.paired { first_word / 2 } else { first_word },
            sctl,
        });
        let end = p.start + u64::from(items) + u64::from(GUARD_EVENTS);
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
        let mut raw: Vec<(u64, Raw)> = Vec::with_capacity(list.len() * 3);
        let mut pointer: Option<u32> = None;
        // The 32-bit source still selected, and the event its piece ends.
        let mut selected: Option<(u64, u32)> = None;
        for (i, inc) in list.iter().enumerate() {
            let e = &mut ends[tile];
            if let Some(owns) = inc.paired {
                // §2.6: format = route direction at F, pointer at F + 2,
                // format 0 at F + items; the owner selects and tears down
                // the paired stream; the row ends 7 events after the last control.
                let f = inc.x + u64::from(paired_format_lag(phys));
                if owns {
                    raw.push((inc.x, Raw::XpicPaired(inc.source)));
                    raw.push((inc.x + inc.words, Raw::XpicPaired(XPIC_NEUTRAL)));
                }
                raw.push((f, Raw::PicFormat(inc.format)));
                raw.push((
                    f + u64::from(PAIRED_POINTER_AFTER_FORMAT),
                    Raw::Pic(inc.dst_word),
                ));
                raw.push((f + inc.words, Raw::PicFormat(0)));
                *e = (*e).max(f + inc.words + u64::from(PAIRED_ROW_TAIL_EVENTS));
                // 32-bit pointer continuation never spans a paired receive.
                pointer = None;
                selected = None;
                continue;
            }
            // A piece from the source still selected, starting as the last
            // one ends, needs no new select: the stream simply goes on
            // (only the pointer may move, §2.4).
            if selected != Some((inc.x, inc.source)) {
                raw.push((inc.x, Raw::Xpic(inc.source)));
            }
            let stop = inc.x + inc.words;
            selected = Some((stop, inc.source));
            let next = list.get(i + 1);
            if next.map(|n| (n.x, n.paired.is_none())) != Some((stop, true)) {
                raw.push((stop, Raw::Xpic(XPIC_NEUTRAL)));
            }
            if pointer != Some(inc.dst_word) {
                raw.push((inc.x + lag, Raw::Pic(inc.dst_word)));
            }
            pointer = Some(inc.dst_word + inc.words as u32);
            *e = (*e).max(inc.x + lag + inc.words + u64::from(GUARD_EVENTS));
        }
        raw.sort_unstable();
        let controls = &mut timelines[tile].controls;
        for (event, r) in raw {
            let event = to_event(event)?;
            if controls.last().map(|c| c.event) != Some(event) {
                controls.push(ControlEvent {
                    event,
                    ..ControlEvent::default()
                });
            }
            let slot = controls
                .last_mut()
                .ok_or(ExchangeError::Internal("control list empty after push"))?;
            let (field, value) = match r {
                Raw::Xpic(v) => (&mut slot.xpic, v),
                Raw::XpicPaired(v) => {
                    slot.xpic_paired = true;
                    (&mut slot.xpic, v)
                }
                Raw::Pic(v) => (&mut slot.pic, v),
                Raw::PicFormat(v) => {
                    slot.pic_format = true;
                    (&mut slot.pic, v)
                }
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
