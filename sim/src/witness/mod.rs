//! The exchange witness: the fabric's own execution of one phase's rows,
//! written independently of the compiler's `exchange::{decode_row, replay}`
//! (which the compile-time checker uses), so a route-timing mistake in
//! either shows up as a disagreement instead of being invisible to both.
//!
//! What it shares with the compiler is only the ISA instruction decoder
//! (`ipu21::isa::decode`, one word → one instruction) and the facts
//! (`ipu21::topology::{mux_time, direction}`, `ipu21::exchange_model`): the
//! event clock of every instruction, when its receive controls take effect,
//! which sender item a receiver's mux takes at which event and when and
//! where that item is written are derived here, from
//! `docs/facts/ipu21-target.md` §2.2–§2.6:
//!
//! 1. **Row stepping** (§2.2, §2.3): each tile's row is read word by word
//!    from its SRAM at the called address and stepped instruction by
//!    instruction on the tile's event clock (`delay n` n+1 events;
//!    `delaypic`/`delayxpic` n+1, control at the end; `send`/`sendoff`/
//!    `sendpic`/`sendpicp` one item per event, `sendpic(p)` controls at the
//!    first event; `br $m10` returns). The result is the tile's *wire* (the
//!    item it drives on the fabric at each event, with its SRAM byte address
//!    resolved through `$OUTGOING_BASE`) and its control events.
//! 2. **Receiver stepping** (§2.4–§2.6): each receiver is stepped event by
//!    event (idle stretches skipped): at event `e` it applies the controls of
//!    `e`, its mux takes from the selected source `s` whatever `s` drove at
//!    `e − T(s,d) − 1` on `d`'s route, and items taken `lag = 52 + 2·row(d)`
//!    events earlier (one more for 64-bit items) are written through the PIC
//!    pointer in force, which then advances.
//!
//! Every fault is a [`WitnessFault`] naming the tile, the event and, where
//! there is one, the SRAM address (the word being fetched, or where the
//! receive would have written).

use std::collections::VecDeque;

use rayon::prelude::*;

use ipuc_target::ipu21::exchange_model::{
    pic_lag, GUARD_EVENTS, PAIRED_ROW_TAIL_EVENTS, SCTL_PAIRED, XPIC_NEUTRAL,
};
use ipuc_target::ipu21::exchange_model::{RowBases, WordMove};
use ipuc_target::ipu21::isa::{decode, m, Csr, Instruction, PicField, PicTarget};
use ipuc_target::ipu21::sram::{TILE_MEMORY_BASE, TILE_MEMORY_END};
use ipuc_target::ipu21::topology::{direction, mux_time, PhysicalTile, TILE_COUNT};

use super::phase_memory::{csr_name, PhaseMemory, RowLocation, MAX_ROW_WORDS};

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

/// One tile's executed row: where it was fetched from and how long it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SteppedRow {
    pub location: RowLocation,
    /// Words up to and including `br $m10`.
    pub words: u32,
    /// Event at which `br $m10` returned.
    pub events: u32,
}

/// What the witness saw: every tile's row and every word moved, sorted by
/// (destination tile, destination word).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WitnessRun {
    pub rows: Vec<SteppedRow>,
    pub moves: Vec<WordMove>,
}

/// A run of items one instruction drives: events `start..start+items`,
/// the first item's SRAM byte address, the `sctl` route/width bits.
#[derive(Clone, Copy, Debug)]
struct Burst {
    start: u32,
    items: u32,
    first_byte: u32,
    sctl: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    Xpic(u32),
    XpicPaired(u32),
    /// Resolved byte address (`$INCOMING_BASE + 4·value`).
    Pointer(u64),
    Format(u32),
}

/// A tile's row after stepping.
struct Tile {
    row: SteppedRow,
    wire: Vec<Burst>,
    controls: Vec<(u32, Control)>,
}

/// Where the current outgoing stream continues.
#[derive(Clone, Copy)]
struct Stream {
    /// Next item's byte address.
    next_byte: u32,
    sctl: u32,
}

fn item_bytes(sctl: u32) -> u32 {
    if sctl & SCTL_PAIRED != 0 {
        8
    } else {
        4
    }
}

/// Steps one tile's row from SRAM (step 1 of the module doc).
fn step_row(call: RowLocation, memory: &impl PhaseMemory) -> Result<Tile, WitnessFault> {
    let tile = call.tile;
    for (csr, value) in [
        (Csr::OUTGOING_BASE, call.bases.outgoing),
        (Csr::INCOMING_BASE, call.bases.incoming),
    ] {
        if !value.is_multiple_of(4) || value >= 1 << 20 {
            return Err(WitnessFault {
                tile,
                event: 0,
                address: None,
                kind: WitnessFaultKind::UncoveredCsr {
                    csr: u16::from(csr.0),
                    value,
                },
            });
        }
    }
    let mut wire = Vec::new();
    let mut controls = Vec::new();
    let mut stream: Option<Stream> = None;
    let mut pc = call.address;
    let mut t: u32 = 0;
    let mut words = 0u32;
    loop {
        let fault = |kind: RowFault, event| WitnessFault {
            tile,
            event,
            address: Some(pc),
            kind: WitnessFaultKind::Row(kind),
        };
        if words as usize >= MAX_ROW_WORDS {
            return Err(fault(RowFault::NoReturn, t));
        }
        let w0 = memory
            .read_u32(tile, pc)
            .ok_or(fault(RowFault::Undecodable, t))?;
        // Two-word instructions (`sendpicp`) read their inline word too.
        let (pair, avail) = match memory.read_u32(tile, pc.wrapping_add(4)) {
            Some(w1) => ([w0, w1], 2),
            None => ([w0, 0], 1),
        };
        let (instr, len) = decode(&pair[..avail]).map_err(|_| fault(RowFault::Undecodable, t))?;
        let advance = |n: u32| {
            t.checked_add(n + 1)
                .ok_or(fault(RowFault::EventOverflow, t))
        };
        let outgoing = call.bases.outgoing;
        let next_t = match instr {
            Instruction::Br { r } if r == m::M10 => {
                return Ok(Tile {
                    row: SteppedRow {
                        location: call,
                        words: words + 1,
                        events: t,
                    },
                    wire,
                    controls,
                })
            }
            Instruction::Delay { n } => advance(n)?,
            Instruction::DelayPic { n, sel, value } => {
                let end = advance(n)?;
                controls.push((end, pic(call.bases, sel, value)));
                end
            }
            Instruction::DelayXPic { n, paired, value } => {
                let end = advance(n)?;
                controls.push((end, xpic(paired, value)));
                end
            }
            Instruction::Send { n, addr, sctl } => {
                // §2.3: relative to $OUTGOING_BASE (32-bit words), or
                // 8-byte units for 64-bit items, whose base must be 0.
                let first_byte = if sctl & SCTL_PAIRED != 0 {
                    if outgoing != 0 {
                        return Err(WitnessFault {
                            tile,
                            event: t,
                            address: Some(pc),
                            kind: WitnessFaultKind::UncoveredCsr {
                                csr: u16::from(Csr::OUTGOING_BASE.0),
                                value: outgoing,
                            },
                        });
                    }
                    addr.wrapping_mul(8)
                } else {
                    outgoing.wrapping_add(addr.wrapping_mul(4))
                };
                drive(&mut wire, &mut stream, t, n + 1, first_byte, sctl);
                advance(n)?
            }
            Instruction::SendOff { n, delta, sctl } => {
                if delta != 0 {
                    return Err(fault(RowFault::NonZeroDelta { delta }, t));
                }
                let s = stream.ok_or(fault(RowFault::NoStream, t))?;
                drive(&mut wire, &mut stream, t, n + 1, s.next_byte, sctl);
                advance(n)?
            }
            Instruction::SendPic { n, sel, value } => {
                let s = stream.ok_or(fault(RowFault::NoStream, t))?;
                drive(&mut wire, &mut stream, t, n + 1, s.next_byte, s.sctl);
                let c = match sel {
                    PicTarget::Xpic => Control::Xpic(value),
                    PicTarget::XpicPaired => Control::XpicPaired(value),
                    PicTarget::PicPointer => pic(call.bases, PicField::Pointer, value),
                    PicTarget::PicFormat => Control::Format(value),
                };
                controls.push((t + 1, c));
                advance(n)?
            }
            Instruction::SendPicP {
                n,
                addr,
                sctl,
                psel,
                xpic: x,
                pic: p,
            } => {
                if !pc.is_multiple_of(8) {
                    return Err(fault(RowFault::MisalignedSendpicp, t));
                }
                if sctl != 0 {
                    // §2.3: a transmitting sendpicp restarts the stream at an
                    // absolute address.
                    let first_byte = addr.wrapping_mul(item_bytes(sctl));
                    drive(&mut wire, &mut stream, t, n + 1, first_byte, sctl);
                }
                controls.push((t + 1, xpic(x & (1 << 13) != 0, x & 0x1FFF)));
                controls.push((t + 1, pic(call.bases, psel, p)));
                advance(n)?
            }
            _ => return Err(fault(RowFault::NotExchange { word: w0 }, t)),
        };
        t = next_t;
        pc = pc.wrapping_add(4 * len as u32);
        words += len as u32;
    }
}

/// Drives `items` items from `first_byte` (a burst on the wire when the
/// route bits say so) and moves the stream on.
fn drive(
    wire: &mut Vec<Burst>,
    stream: &mut Option<Stream>,
    start: u32,
    items: u32,
    first_byte: u32,
    sctl: u32,
) {
    if sctl & 3 != 0 {
        wire.push(Burst {
            start,
            items,
            first_byte,
            sctl,
        });
    }
    *stream = Some(Stream {
        next_byte: first_byte.wrapping_add(items.wrapping_mul(item_bytes(sctl))),
        sctl,
    });
}

fn pic(bases: RowBases, sel: PicField, value: u32) -> Control {
    match sel {
        PicField::Pointer => Control::Pointer(u64::from(bases.incoming) + 4 * u64::from(value)),
        PicField::Format => Control::Format(value),
    }
}

fn xpic(paired: bool, value: u32) -> Control {
    if paired {
        Control::XpicPaired(value)
    } else {
        Control::Xpic(value)
    }
}

/// The burst of `wire` driving event `x`.
fn on_wire(wire: &[Burst], x: i64) -> Option<(Burst, u32)> {
    let x = u32::try_from(x).ok()?;
    let i = wire.partition_point(|b| b.start <= x).checked_sub(1)?;
    let b = wire[i];
    (x - b.start < b.items).then_some((b, x - b.start))
}

/// [`on_wire`], searching from burst `*near` on (where the last search of
/// this receiver ended: its events only grow, so the burst is usually that
/// one or the next) and leaving `*near` at the burst found.
fn on_wire_near(wire: &[Burst], x: i64, near: &mut usize) -> Option<(Burst, u32)> {
    let x = u32::try_from(x).ok()?;
    let mut i = *near;
    if wire.get(i).is_none_or(|b| b.start > x) {
        i = wire.partition_point(|b| b.start <= x).checked_sub(1)?;
    } else {
        // wire[i] starts at or before x: the last such burst is ahead.
        let mut steps = 0;
        while wire.get(i + 1).is_some_and(|b| b.start <= x) {
            i += 1;
            steps += 1;
            if steps == 8 {
                i = wire.partition_point(|b| b.start <= x) - 1;
                break;
            }
        }
    }
    *near = i;
    let b = wire[i];
    (x - b.start < b.items).then_some((b, x - b.start))
}

/// Selection intervals `[from, to)` with their source, for the ordinary
/// or the paired XPIC stream of `controls`.
fn selections(controls: &[(u32, Control)], paired: bool) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    let mut current: Option<(u32, u32)> = None;
    for &(e, c) in controls {
        let v = match (c, paired) {
            (Control::Xpic(v), false) | (Control::XpicPaired(v), true) => v,
            _ => continue,
        };
        if let Some((since, s)) = current.take() {
            if since < e {
                out.push((since, e, s));
            }
        }
        if v != XPIC_NEUTRAL {
            current = Some((e, v));
        }
    }
    if let Some((since, s)) = current {
        out.push((since, u32::MAX, s));
    }
    out
}

/// Items taken by a receiver's mux at consecutive events, waiting for their
/// memory writes: item `i` was taken at `mux + i`, is written at
/// `write + i` and came from `item`'s address + `i` items, read at its
/// read event + `i`.
#[derive(Clone, Copy)]
struct InFlight {
    write: u32,
    mux: u32,
    source: PhysicalTile,
    /// (source byte address, read event) of the first item, or `None`:
    /// nothing was on the route.
    item: Option<(u32, u32)>,
    /// 64-bit items: route direction the PIC format must show; 0 for 32-bit.
    format: u32,
    /// Items (at least 1).
    count: u32,
}

impl InFlight {
    fn item_bytes(&self) -> u32 {
        if self.format == 0 {
            4
        } else {
            8
        }
    }

    /// Drops the first `n` (< `count`) items.
    fn skip(&mut self, n: u32) {
        let bytes = self.item_bytes();
        self.count -= n;
        self.write += n;
        self.mux += n;
        self.item = self
            .item
            .map(|(b, r)| (b.wrapping_add(n.wrapping_mul(bytes)), r + n));
    }
}

/// Queues `next` behind `pending`, extending the last entry when `next`
/// continues it item for item (same source and width, next events, next
/// source address and read event, or nothing on the route for both).
fn push_in_flight(pending: &mut VecDeque<InFlight>, next: InFlight) {
    if let Some(last) = pending.back_mut() {
        let n = last.count;
        let continues = last.source == next.source
            && last.format == next.format
            && last.mux.checked_add(n) == Some(next.mux)
            && last.write.checked_add(n) == Some(next.write)
            && match (last.item, next.item) {
                (None, None) => true,
                (Some((b, r)), Some((nb, nr))) => {
                    u64::from(b) + u64::from(n) * u64::from(last.item_bytes()) == u64::from(nb)
                        && r.checked_add(n) == Some(nr)
                }
                _ => false,
            };
        if continues {
            last.count += next.count;
            return;
        }
    }
    pending.push_back(next);
}

/// Takes the first item of the queue's first entry.
fn pop_item(pending: &mut VecDeque<InFlight>) -> Option<InFlight> {
    let first = pending.front_mut()?;
    let one = InFlight { count: 1, ..*first };
    if first.count == 1 {
        pending.pop_front();
    } else {
        first.skip(1);
    }
    Some(one)
}

/// A run of word moves into one receiver: word `i` goes from `src_word + i`
/// to `dst_word + i`, read at `read_event + i / per_event` and written at
/// `write_event + i / per_event` (`per_event` 1 for 32-bit items, 2 for
/// 64-bit items). [`MoveRun::moves`] lists its [`WordMove`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MoveRun {
    pub dst_tile: PhysicalTile,
    pub dst_word: u32,
    pub src_tile: PhysicalTile,
    pub src_word: u32,
    pub read_event: u32,
    pub write_event: u32,
    /// Words (at least 1).
    pub words: u32,
    /// Words per event: 1 or 2.
    pub per_event: u32,
}

impl MoveRun {
    /// Word `i` (< `words`) of the run.
    pub fn word(&self, i: u32) -> WordMove {
        WordMove {
            dst_tile: self.dst_tile.get(),
            dst_word: self.dst_word + i,
            src_tile: self.src_tile.get(),
            src_word: self.src_word + i,
            read_event: self.read_event + i / self.per_event,
            write_event: self.write_event + i / self.per_event,
        }
    }

    /// Word `i` (< `words`) of the run as a one-word run.
    pub fn single(&self, i: u32) -> MoveRun {
        MoveRun {
            dst_word: self.dst_word + i,
            src_word: self.src_word + i,
            read_event: self.read_event + i / self.per_event,
            write_event: self.write_event + i / self.per_event,
            words: 1,
            per_event: 1,
            ..*self
        }
    }

    /// The run's word moves, in order.
    pub fn moves(&self) -> impl Iterator<Item = WordMove> + '_ {
        (0..self.words).map(|i| self.word(i))
    }

    /// The run's last word move.
    pub fn last(&self) -> WordMove {
        self.word(self.words - 1)
    }
}

/// Every word move of `runs`, in order.
pub fn expand(runs: &[MoveRun]) -> Vec<WordMove> {
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.words as usize).sum());
    for r in runs {
        out.extend(r.moves());
    }
    out
}

/// Every word of `runs` as a one-word run, in order (what [`expand`] lists,
/// with typed tiles).
pub fn singles(runs: &[MoveRun]) -> Vec<MoveRun> {
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.words as usize).sum());
    for r in runs {
        out.extend((0..r.words).map(|i| r.single(i)));
    }
    out
}

/// Appends `next` to `runs`, extending the last run when `next` continues it
/// word for word (same tiles and width, next words, next events).
fn push_run(runs: &mut Vec<MoveRun>, next: MoveRun) {
    if let Some(last) = runs.last_mut() {
        let n = last.words;
        let continues = last.dst_tile == next.dst_tile
            && last.src_tile == next.src_tile
            && last.per_event == next.per_event
            && n.is_multiple_of(last.per_event)
            && last.dst_word.checked_add(n) == Some(next.dst_word)
            && last.src_word.checked_add(n) == Some(next.src_word)
            && last.read_event.checked_add(n / last.per_event) == Some(next.read_event)
            && last.write_event.checked_add(n / last.per_event) == Some(next.write_event);
        if continues {
            last.words += next.words;
            return;
        }
    }
    runs.push(next);
}

/// Sorts one receiver's runs into the order of their word moves sorted
/// (by destination word, then source, then events). Runs whose destination
/// words are disjoint keep their words together; otherwise every word is
/// sorted on its own and the runs rebuilt.
fn sort_runs(runs: &mut Vec<MoveRun>) {
    runs.sort_unstable();
    let disjoint = runs.windows(2).all(|w| {
        w[0].dst_tile < w[1].dst_tile
            || u64::from(w[0].dst_word) + u64::from(w[0].words) <= u64::from(w[1].dst_word)
    });
    if disjoint {
        return;
    }
    // One-word runs sort as their word moves do: the fields in the same
    // order, then `words` and `per_event`, both 1.
    let mut words = singles(runs);
    words.sort_unstable();
    runs.clear();
    for m in words {
        push_run(runs, m);
    }
}

/// A phase whose rows have been stepped from SRAM (step 1), ready to
/// receive (step 2).
pub struct SteppedPhase {
    tiles: Vec<Tile>,
    at: Vec<Option<usize>>,
}

/// Step 1: reads and steps every called row from SRAM.
/// Rows are independent: each is stepped on its own, in parallel, and the
/// first fault in call order is the one a serial pass finds.
pub fn step_rows(
    calls: &[RowLocation],
    memory: &(impl PhaseMemory + Sync),
) -> Result<SteppedPhase, WitnessFault> {
    let stepped: Vec<Result<Tile, WitnessFault>> = calls
        .par_iter()
        .map(|&call| {
            let mut t = step_row(call, memory)?;
            t.controls.sort_by_key(|c| c.0);
            Ok(t)
        })
        .collect();
    let mut tiles: Vec<Tile> = Vec::with_capacity(calls.len());
    let mut at: Vec<Option<usize>> = vec![None; usize::from(TILE_COUNT)];
    for (call, t) in calls.iter().zip(stepped) {
        at[call.tile.index()] = Some(tiles.len());
        tiles.push(t?);
    }
    Ok(SteppedPhase { tiles, at })
}

impl SteppedPhase {
    /// Every stepped row, in call order.
    pub fn rows(&self) -> impl Iterator<Item = SteppedRow> + '_ {
        self.tiles.iter().map(|t| t.row)
    }

    /// Step 2: steps every receiver; the words moved, sorted by
    /// (destination tile, destination word).
    pub fn receive(&self) -> Result<Vec<WordMove>, WitnessFault> {
        Ok(expand(&self.receive_runs(true)?))
    }

    /// [`SteppedPhase::receive`] as runs of moves: the same words in the
    /// same order. With `batch`, steady stretches of a receiver are stepped
    /// in bulk (same result, same faults); without, every event on its own.
    pub fn receive_runs(&self, batch: bool) -> Result<Vec<MoveRun>, WitnessFault> {
        let (tiles, at) = (&self.tiles, &self.at);
        let paired_sel: Vec<Vec<(u32, u32, u32)>> = tiles
            .iter()
            .map(|t| selections(&t.controls, true))
            .collect();
        partner_busy(tiles, at, &paired_sel)?;
        // Receivers are independent: each is stepped (and its moves sorted)
        // on its own, in parallel. Every move of receiver `d` has
        // `dst_tile == d` (the first sort key), so concatenating the
        // receivers' sorted moves in tile order is the whole phase sorted,
        // and the first fault in call order is the one a serial pass finds.
        let per_receiver: Vec<Result<Vec<MoveRun>, WitnessFault>> = tiles
            .par_iter()
            .enumerate()
            .map(|(i, t)| {
                let partner = t.row.location.tile.pair_partner();
                let theirs: &[(u32, u32, u32)] =
                    at[partner.index()].map_or(&[], |j| &paired_sel[j]);
                let mut moves = Vec::new();
                receive(t, &paired_sel[i], theirs, tiles, at, batch, &mut moves)?;
                sort_runs(&mut moves);
                Ok(moves)
            })
            .collect();
        let mut by_tile: Vec<(PhysicalTile, Vec<MoveRun>)> = Vec::with_capacity(tiles.len());
        for (t, r) in tiles.iter().zip(per_receiver) {
            by_tile.push((t.row.location.tile, r?));
        }
        by_tile.sort_unstable_by_key(|b| b.0);
        let mut moves = Vec::with_capacity(by_tile.iter().map(|b| b.1.len()).sum());
        for (_, m) in by_tile {
            for r in m {
                push_run(&mut moves, r);
            }
        }
        Ok(moves)
    }
}

/// Both steps: every row stepped from SRAM and every receiver stepped.
pub fn witness_phase(
    calls: &[RowLocation],
    memory: &(impl PhaseMemory + Sync),
) -> Result<WitnessRun, WitnessFault> {
    let stepped = step_rows(calls, memory)?;
    let moves = stepped.receive()?;
    Ok(WitnessRun {
        rows: stepped.rows().collect(),
        moves,
    })
}

/// §2.6 partner busy: while a tile drives 64-bit items its partner neither
/// drives anything nor has a source selected.
fn partner_busy(
    tiles: &[Tile],
    at: &[Option<usize>],
    paired_sel: &[Vec<(u32, u32, u32)>],
) -> Result<(), WitnessFault> {
    for t in tiles {
        let me = t.row.location.tile;
        let Some(j) = at[me.pair_partner().index()] else {
            continue;
        };
        let p = &tiles[j];
        let ordinary = selections(&p.controls, false);
        for b in t.wire.iter().filter(|b| b.sctl & SCTL_PAIRED != 0) {
            let (a, z) = (b.start, b.start + b.items);
            let busy = p
                .wire
                .iter()
                .map(|o| (o.start, o.start + o.items))
                .chain(ordinary.iter().map(|s| (s.0, s.1)))
                .chain(paired_sel[j].iter().map(|s| (s.0, s.1)))
                .filter(|&(from, to)| from < z && a < to)
                .map(|(from, _)| from.max(a))
                .min();
            if let Some(event) = busy {
                return Err(WitnessFault {
                    tile: p.row.location.tile,
                    event,
                    address: None,
                    kind: WitnessFaultKind::PartnerBusy { sender: me },
                });
            }
        }
    }
    Ok(())
}

/// A receiver between two events, as the steady-stream fast path of
/// [`receive`] sees it: everything up to and including event `e` is done.
struct Steady {
    e: u32,
    /// The row's return event.
    end: u32,
    lag: u32,
    /// The ordinary stream's source (`XPIC_NEUTRAL`: none) and its route
    /// facts (source value, tile, `T(s,d)`, route bit).
    xpic: u32,
    route: Option<(u32, PhysicalTile, i32, u32)>,
    /// Where the last wire search ended.
    near: usize,
    pointer: Option<u64>,
    /// First control event after `e`, first paired selection start after `e`.
    next_control: Option<u32>,
    next_paired: Option<u32>,
    /// The PIC format in force.
    format_shown: u32,
}

/// What the events `e + 1 ..= e + events` of a [`Steady`] receiver do.
#[derive(Clone, Copy)]
struct SteadyRun {
    events: u32,
    /// The mux takes one 32-bit item at every event: (first source byte
    /// address, its read event, source tile).
    takes: Option<(u32, u32, PhysicalTile)>,
    /// The first pending entry writes one item at every event.
    writes: bool,
}

/// The events after `s.e` that can be taken in one step, if at least one:
/// no control takes effect and no paired stream starts; either the
/// ordinary stream takes an item at every event, all from one burst its
/// source drives on this route and all before the row returns, or nothing
/// is selected; and the writes due are either none or one at every event,
/// from the first pending entry, of 32-bit items that were on the route,
/// with the PIC format off, the PIC pointer inside memory and
/// `GUARD_EVENTS` before the return. Stepping such events one by one does
/// exactly the same (and nothing at events with no write and no selection),
/// so they are taken in bulk; any other event goes the event-by-event way,
/// which raises every fault.
fn steady_events(
    s: &mut Steady,
    pending: &VecDeque<InFlight>,
    tiles: &[Tile],
    at: &[Option<usize>],
) -> Option<SteadyRun> {
    let e = s.e;
    let after = |limit: u32| limit.checked_sub(e)?.checked_sub(1);
    let mut k = after(s.end)?;
    if let Some(c) = s.next_control {
        k = k.min(after(c)?);
    }
    if let Some(p) = s.next_paired {
        k = k.min(after(p)?);
    }
    let words_below_wrap =
        |byte: u32| u32::try_from(((1u64 << 32) - u64::from(byte)) / 4).unwrap_or(u32::MAX);
    let mut takes = None;
    if s.xpic != XPIC_NEUTRAL {
        let (_, source, tm, bit) = s.route.filter(|r| r.0 == s.xpic)?;
        // Items taken in the run are written at least `lag` events later,
        // after it.
        k = k.min(s.lag);
        let x = i64::from(e) - i64::from(tm);
        let wire = at[source.index()].map_or(&[][..], |j| tiles[j].wire.as_slice());
        let (b, off) = on_wire_near(wire, x, &mut s.near)?;
        if b.sctl & bit == 0 || b.sctl & SCTL_PAIRED != 0 {
            return None;
        }
        let first = b.first_byte.wrapping_add(4 * off);
        k = k.min(b.items - off).min(words_below_wrap(first));
        takes = Some((first, x as u32, source));
    }
    let mut writes = false;
    match pending.front() {
        Some(f) if f.write == e + 1 => {
            let (src, _) = f.item?;
            if f.format != 0 || s.format_shown != 0 {
                return None;
            }
            k = k.min(f.count).min(words_below_wrap(src));
            if let Some(n) = pending.get(1) {
                k = k.min(after(n.write)?);
            }
            k = k.min(after(s.end.checked_sub(GUARD_EVENTS)?)?);
            let a = s.pointer?;
            if a < u64::from(TILE_MEMORY_BASE) {
                return None;
            }
            let room = u64::from(TILE_MEMORY_END).checked_sub(a)? / 4;
            k = k.min(u32::try_from(room).unwrap_or(u32::MAX));
            writes = true;
        }
        Some(f) if f.write > e + 1 && takes.is_some() => k = k.min(f.write - e - 1),
        None if takes.is_some() => {}
        _ => return None,
    }
    (k > 0).then_some(SteadyRun {
        events: k,
        takes,
        writes,
    })
}

/// Takes the events of `run` (from [`steady_events`]) in one step.
fn take_steady(
    s: &mut Steady,
    run: SteadyRun,
    d: PhysicalTile,
    pending: &mut VecDeque<InFlight>,
    moves: &mut Vec<MoveRun>,
) {
    let (e, k) = (s.e, run.events);
    if run.writes {
        if let (Some(f), Some(a)) = (pending.front_mut(), s.pointer) {
            if let Some((src, read)) = f.item {
                push_run(
                    moves,
                    MoveRun {
                        dst_tile: d,
                        dst_word: (a / 4) as u32,
                        src_tile: f.source,
                        src_word: src / 4,
                        read_event: read,
                        write_event: e + 1,
                        words: k,
                        per_event: 1,
                    },
                );
                s.pointer = Some(a + 4 * u64::from(k));
            }
            if f.count == k {
                pending.pop_front();
            } else {
                f.skip(k);
            }
        }
    }
    if let Some((first, read, source)) = run.takes {
        push_in_flight(
            pending,
            InFlight {
                write: e + 1 + s.lag,
                mux: e + 1,
                source,
                item: Some((first, read)),
                format: 0,
                count: k,
            },
        );
    }
    s.e = e + k;
}

/// Steps one receiver event by event (step 2 of the module doc); with
/// `batch`, stretches of steady events in bulk ([`steady_events`]), with
/// the same result.
fn receive(
    t: &Tile,
    own_paired: &[(u32, u32, u32)],
    partner_paired: &[(u32, u32, u32)],
    tiles: &[Tile],
    at: &[Option<usize>],
    batch: bool,
    moves: &mut Vec<MoveRun>,
) -> Result<(), WitnessFault> {
    let d = t.row.location.tile;
    let partner = d.pair_partner();
    let end = t.row.events;
    let lag = pic_lag(d);
    let fault = |event: u32, address: Option<u32>, kind| WitnessFault {
        tile: d,
        event,
        address,
        kind,
    };
    let source_tile = |e: u32, v: u32| {
        PhysicalTile::new(v).map_err(|_| fault(e, None, WitnessFaultKind::BadSource { source: v }))
    };
    let wire_of = |s: PhysicalTile| at[s.index()].map_or(&[][..], |j| tiles[j].wire.as_slice());
    let mut xpic = XPIC_NEUTRAL;
    let mut pointer: Option<u64> = None;
    let mut formats: Vec<(u32, u32)> = Vec::new();
    let mut pending: VecDeque<InFlight> = VecDeque::new();
    let mut ci = 0usize;
    let (mut own_i, mut their_i) = (0usize, 0usize);
    let mut route: Option<(u32, PhysicalTile, i32, u32)> = None;
    // Where the last wire search ended (see `on_wire_near`).
    let mut near = 0usize;
    let mut e = 0u32;
    loop {
        // Controls taking effect at e.
        while let Some(&(ce, c)) = t.controls.get(ci) {
            if ce != e {
                break;
            }
            match c {
                Control::Xpic(v) => xpic = v,
                Control::XpicPaired(_) => {} // tracked as `own_paired` intervals
                Control::Pointer(p) => pointer = Some(p),
                Control::Format(f) => formats.push((e, f)),
            }
            ci += 1;
        }
        while own_paired.get(own_i).is_some_and(|s| s.1 <= e) {
            own_i += 1;
        }
        while partner_paired.get(their_i).is_some_and(|s| s.1 <= e) {
            their_i += 1;
        }
        let own = own_paired.get(own_i).filter(|s| s.0 <= e);
        let theirs = partner_paired.get(their_i).filter(|s| s.0 <= e);
        // The mux at e (the row's own events only).
        if e < end {
            let streams = usize::from(xpic != XPIC_NEUTRAL)
                + usize::from(own.is_some())
                + usize::from(theirs.is_some());
            if streams > 1 {
                return Err(fault(e, None, WitnessFaultKind::PairedStreams));
            }
            if xpic != XPIC_NEUTRAL {
                // The route facts of the selected source, computed once per
                // selection rather than once per event.
                let (s, tm, bit) = match route {
                    Some(r) if r.0 == xpic => (r.1, r.2, r.3),
                    _ => {
                        let s = source_tile(e, xpic)?;
                        let r = (
                            xpic,
                            s,
                            mux_time(s, d),
                            u32::from(direction(s, d).sctl_bit()),
                        );
                        route = Some(r);
                        (s, r.2, r.3)
                    }
                };
                let x = i64::from(e) - i64::from(tm) - 1;
                let item = on_wire_near(wire_of(s), x, &mut near)
                    .filter(|(b, _)| b.sctl & bit != 0 && b.sctl & SCTL_PAIRED == 0)
                    .map(|(b, k)| (b.first_byte.wrapping_add(4 * k), x as u32));
                push_in_flight(
                    &mut pending,
                    InFlight {
                        write: e.saturating_add(lag),
                        mux: e,
                        source: s,
                        item,
                        format: 0,
                        count: 1,
                    },
                );
            } else if let Some(&(_, _, v)) = own.or(theirs) {
                let owner = if own.is_some() { d } else { partner };
                let s = source_tile(e, v ^ u32::from(owner.get() & 2))?;
                let tm = mux_time(s, d).max(mux_time(s, partner));
                let x = i64::from(e) - i64::from(tm) - 1;
                let bit = u32::from(direction(s, d).sctl_bit());
                let item = on_wire(wire_of(s), x)
                    .filter(|(b, _)| b.sctl & bit != 0 && b.sctl & SCTL_PAIRED != 0)
                    .map(|(b, k)| (b.first_byte.wrapping_add(8 * k), x as u32));
                push_in_flight(
                    &mut pending,
                    InFlight {
                        write: e.saturating_add(lag + 1),
                        mux: e,
                        source: s,
                        item,
                        format: bit,
                        count: 1,
                    },
                );
            }
        }
        // Memory writes at e.
        let mut wrote_at_e = false;
        while pending.front().is_some_and(|p| p.write == e) {
            let Some(p) = pop_item(&mut pending) else {
                break;
            };
            let address = pointer.and_then(|a| u32::try_from(a).ok());
            let Some((src_byte, read_event)) = p.item else {
                return Err(WitnessFault {
                    tile: d,
                    event: p.mux,
                    address,
                    kind: WitnessFaultKind::NothingOnRoute {
                        source: p.source,
                        paired: p.format != 0,
                    },
                });
            };
            let words: u32 = if p.format == 0 { 1 } else { 2 };
            let Some(a) = pointer else {
                return Err(fault(e, None, WitnessFaultKind::NoPointer));
            };
            if a < u64::from(TILE_MEMORY_BASE)
                || a + 4 * u64::from(words) > u64::from(TILE_MEMORY_END)
            {
                return Err(fault(e, address, WitnessFaultKind::OutsideMemory));
            }
            let a = a as u32;
            if wrote_at_e {
                return Err(fault(e, Some(a), WitnessFaultKind::TwoWritesOneEvent));
            }
            wrote_at_e = true;
            // 32-bit words need the format off at the write; a 64-bit item
            // needs the route direction two events before it (§2.6).
            let probe = if p.format == 0 {
                e
            } else {
                e.saturating_sub(2)
            };
            let shown = formats
                .iter()
                .rev()
                .find(|f| f.0 <= probe)
                .map_or(0, |f| f.1);
            if shown != p.format {
                return Err(fault(
                    e,
                    Some(a),
                    WitnessFaultKind::FormatMismatch {
                        expected: p.format,
                        shown,
                    },
                ));
            }
            if p.format != 0 && !a.is_multiple_of(8) {
                return Err(fault(e, Some(a), WitnessFaultKind::PairedMisaligned));
            }
            if u64::from(e) + u64::from(GUARD_EVENTS) >= u64::from(end) {
                return Err(fault(e, Some(a), WitnessFaultKind::WriteAfterReturn));
            }
            push_run(
                moves,
                MoveRun {
                    dst_tile: d,
                    dst_word: a / 4,
                    src_tile: p.source,
                    src_word: src_byte / 4,
                    read_event,
                    write_event: e,
                    words,
                    per_event: words,
                },
            );
            pointer = Some(u64::from(a) + 4 * u64::from(words));
        }
        if batch && own.is_none() && theirs.is_none() {
            // The events after e at which nothing but one steady stream
            // happens, in bulk (see `steady_events`): exactly what stepping
            // them one by one would do, many at a time.
            let mut state = Steady {
                e,
                end,
                lag,
                xpic,
                route,
                near,
                pointer,
                next_control: t.controls.get(ci).map(|c| c.0),
                next_paired: [own_paired.get(own_i), partner_paired.get(their_i)]
                    .into_iter()
                    .flatten()
                    .map(|s| s.0)
                    .min(),
                format_shown: formats.last().map_or(0, |f| f.1),
            };
            while let Some(run) = steady_events(&mut state, &pending, tiles, at) {
                take_steady(&mut state, run, d, &mut pending, moves);
            }
            e = state.e;
            pointer = state.pointer;
            near = state.near;
        }
        // The next event anything happens at.
        let selected = xpic != XPIC_NEUTRAL || own.is_some() || theirs.is_some();
        let mut next = if selected && e < end { e + 1 } else { u32::MAX };
        if let Some(&(ce, _)) = t.controls.get(ci) {
            next = next.min(ce);
        }
        if let Some(p) = pending.front() {
            next = next.min(p.write);
        }
        for s in [own_paired.get(own_i), partner_paired.get(their_i)]
            .into_iter()
            .flatten()
        {
            if s.0 > e {
                next = next.min(s.0);
            }
        }
        if e < end {
            next = next.min(end);
        }
        if next == u32::MAX || next <= e {
            break;
        }
        e = next;
        if e > end && t.controls.get(ci).is_none_or(|c| c.0 > end) {
            // Past the return: only in-flight items are left, each an overrun.
            break;
        }
    }
    // At the return: nothing may be in flight or attached.
    if let Some(p) = pending.iter().find(|p| p.item.is_none()) {
        return Err(WitnessFault {
            tile: d,
            event: p.mux,
            address: pointer.and_then(|a| u32::try_from(a).ok()),
            kind: WitnessFaultKind::NothingOnRoute {
                source: p.source,
                paired: p.format != 0,
            },
        });
    }
    if let Some(p) = pending.front() {
        return Err(fault(
            p.write,
            pointer.and_then(|a| u32::try_from(a).ok()),
            WitnessFaultKind::WriteAfterReturn,
        ));
    }
    if xpic != XPIC_NEUTRAL {
        return Err(fault(
            end,
            None,
            WitnessFaultKind::StillAttached { source: xpic },
        ));
    }
    if let Some(s) = own_paired.last().filter(|s| s.1 == u32::MAX) {
        return Err(fault(
            end,
            None,
            WitnessFaultKind::StillAttached { source: s.2 },
        ));
    }
    // The partner's paired stream feeds this tile too: it must be over
    // before this tile's row returns.
    if let Some(s) = partner_paired.iter().find(|s| s.1 > end) {
        return Err(fault(
            end,
            None,
            WitnessFaultKind::StillAttached { source: s.2 },
        ));
    }
    if let Some(&(event, f)) = formats.last() {
        if f != 0 || event.saturating_add(PAIRED_ROW_TAIL_EVENTS) > end {
            return Err(fault(event, None, WitnessFaultKind::FormatLeftOn));
        }
    }
    Ok(())
}
