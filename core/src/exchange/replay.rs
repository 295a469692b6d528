//! Replays decoded rows of one phase with the route timing model: which word
//! of which sender each receiver stores where, and when. Shared by the
//! checker and the simulator's fabric, so both see the same semantics.
//!
//! 32-bit model (§2.4, §2.5): a receiver whose XPIC selects sender `s` from
//! event `X` takes, at each mux event `e`, the item `s` put on the fabric at
//! event `e − T(s,d) − 1` on a route that includes `d`'s direction; that word
//! is written at event `e + 52 + 2·row(d)` to the PIC pointer in force at
//! that event, which then increments. PIC writes at event `p` apply to the
//! write at `p`. The receiver must be torn down (`0x640`) and its last write
//! done `GUARD_EVENTS` before its row returns.
//!
//! Paired (64-bit) model (§2.6): the pair member that owns the stream
//! selects `sender ^ (owner & 2)` with the paired XPIC selector; both
//! members of the pair `{d, d^2}` then take, at each mux event `e`, the
//! 64-bit item the sender put on the fabric (with `sctl` bit 2) at event
//! `e − max(T(s,d), T(s,d^2)) − 1`. The item is written as two words at
//! `e + 53 + 2·row(d)` (the pointer written at `F + 2`, `F = source event +
//! 51 + 2·row(d)`), and the PIC format in force two events earlier (`F + k`
//! for item `k`) must equal the route direction; 32-bit words need the
//! format off. The sender's partner neither sends nor receives while a
//! 64-bit message streams (partner busy). The exact sender-to-select offset
//! and write event of paired items are not stated in §2.6: we keep the
//! 32-bit relation (`+1` after the later member's `T`) and the pointer
//! event as the first write — the encoder follows the same rules.
//!
//! Base registers (§2.3, §2.4): each tile's row runs with the `$OUTGOING_BASE`
//! and `$INCOMING_BASE` it holds ([`RowBases`], byte addresses). Items of a
//! stream started by `send` are read from `$OUTGOING_BASE + 4·address`
//! (32-bit); a transmitting `sendpicp` address is absolute, and so is the
//! stream it restarts. PIC pointers store at `$INCOMING_BASE + 4·value`.
//! Values the facts do not establish are [`ReceiveError::UncoveredCsr`]: a
//! base that is not word aligned or not below 2^20 (IPU21 addresses are 20
//! bits; the CSR field widths are [U], §1.6), and a non-zero
//! `$OUTGOING_BASE` under 64-bit (8-byte unit) sends.

use alloc::vec::Vec;

use super::decode::{ControlKind, DecodedRow, SendRun};
use super::error::ReceiveError;
use ipuc_target::ipu21::exchange_model::{
    pic_lag, GUARD_EVENTS, PAIRED_ROW_TAIL_EVENTS, SCTL_PAIRED, XPIC_NEUTRAL,
};
use ipuc_target::ipu21::isa::Csr;
use ipuc_target::ipu21::sram::{effective_element, TILE_MEMORY_BASE, TILE_MEMORY_END};
use ipuc_target::ipu21::topology::{direction, mux_time, PhysicalTile, TILE_COUNT};

pub use ipuc_target::ipu21::exchange_model::{RowBases, WordMove, BASE_LIMIT};

/// Are the base values `bases` covered by the model for `row` on `tile`?
/// (A function, not a method: `RowBases` is a target fact in `ipuc-target`.)
pub fn validate_bases(
    bases: RowBases,
    tile: PhysicalTile,
    row: &DecodedRow,
) -> Result<(), ReceiveError> {
    let out = u16::from(Csr::OUTGOING_BASE.0);
    let inc = u16::from(Csr::INCOMING_BASE.0);
    for (csr, value) in [(out, bases.outgoing), (inc, bases.incoming)] {
        if value % 4 != 0 || value >= BASE_LIMIT {
            return Err(ReceiveError::UncoveredCsr { tile, csr, value });
        }
    }
    if bases.outgoing != 0
        && row
            .sends
            .iter()
            .any(|r| !r.absolute && r.sctl & SCTL_PAIRED != 0)
    {
        return Err(ReceiveError::UncoveredCsr {
            tile,
            csr: out,
            value: bases.outgoing,
        });
    }
    Ok(())
}

/// Word address of the first item of `run` on a tile holding `bases`
/// (32-bit units; for 64-bit runs the base is 0, checked by
/// [`validate_bases`]).
fn run_word(bases: RowBases, run: &SendRun) -> u32 {
    if run.absolute || run.sctl & SCTL_PAIRED != 0 {
        run.word_address
    } else {
        (bases.outgoing / 4).wrapping_add(run.word_address)
    }
}

/// The send run of `row` covering event `read_event`, by index into
/// `row.sends`.
pub fn run_index_at(row: &DecodedRow, read_event: u32) -> Option<usize> {
    run_index(&row.sends, read_event)
}

/// Source word of `run`'s first item as the replay reads it on a tile
/// holding `bases`: through `$OUTGOING_BASE` for a `send` stream of 32-bit
/// items, the absolute address otherwise, in 32-bit words (a 64-bit item's
/// 8-byte unit is two words).
pub fn run_source_word(bases: RowBases, run: &SendRun) -> u32 {
    if run.sctl & SCTL_PAIRED != 0 {
        run.word_address.wrapping_mul(2)
    } else {
        run_word(bases, run)
    }
}

/// One tile's part in a phase: its decoded row, the base CSRs it holds, and
/// optionally the byte span the row is fetched from (writes into its
/// elements are fetch clashes).
#[derive(Clone, Debug)]
pub struct TileRowView<'a> {
    pub tile: PhysicalTile,
    pub row: &'a DecodedRow,
    pub bases: RowBases,
    pub fetch_span: Option<(u32, u32)>,
}

/// Replays all rows of a phase; returns every word move sorted by
/// (destination tile, destination word).
pub fn replay(rows: &[TileRowView<'_>]) -> Result<Vec<WordMove>, ReceiveError> {
    let mut moves = Vec::new();
    replay_each(rows, |m| moves.extend_from_slice(m))?;
    Ok(moves)
}

/// [`replay`] one receiver at a time: `each` is called with every
/// receiver's moves sorted by destination word, receivers in tile order (the
/// concatenation is exactly [`replay`]'s list), so a caller that compares as
/// it goes never holds the whole phase's moves. The first replay error is
/// returned after the receivers before it have been passed to `each`.
pub fn replay_each(
    rows: &[TileRowView<'_>],
    mut each: impl FnMut(&[WordMove]),
) -> Result<(), ReceiveError> {
    let mut senders: Vec<Option<Sender<'_>>> = alloc::vec![None; usize::from(TILE_COUNT)];
    let mut by_tile: Vec<Option<&DecodedRow>> = alloc::vec![None; usize::from(TILE_COUNT)];
    for r in rows {
        validate_bases(r.bases, r.tile, r.row)?;
        senders[r.tile.index()] = Some(Sender {
            runs: &r.row.sends,
            bases: r.bases,
        });
        by_tile[r.tile.index()] = Some(r.row);
    }
    check_partner_busy(rows, &by_tile)?;
    // Receivers in tile order, each tile's moves sorted: the whole list is
    // then sorted by (destination tile, destination word) without a global sort.
    let mut order: Vec<&TileRowView<'_>> = rows.iter().collect();
    order.sort_by_key(|r| r.tile);
    let mut moves = Vec::new();
    for r in order {
        moves.clear();
        replay_receiver(r, &senders, &by_tile, &mut moves)?;
        // A receiver's moves are ascending runs (one per pointer run): the
        // stable sort merges runs (the order is total, so any sort gives
        // this result).
        moves.sort();
        each(&moves);
    }
    Ok(())
}

/// Consecutive words one receiver stores from one send run: word `k` lands
/// at `dst_word + k` from `src_word + k` of `src_tile`, its item read at
/// `read_event + k / item_words` and written at `write_event + k /
/// item_words`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveRun {
    pub dst_word: u32,
    pub words: u32,
    pub src_tile: u16,
    pub src_word: u32,
    pub read_event: u32,
    pub write_event: u32,
    /// 1 for 32-bit items, 2 for 64-bit ones.
    pub item_words: u32,
}

impl MoveRun {
    /// Word `k`'s move.
    pub fn word(&self, dst_tile: u16, k: u32) -> WordMove {
        WordMove {
            dst_tile,
            dst_word: self.dst_word + k,
            src_tile: self.src_tile,
            src_word: self.src_word + k,
            read_event: self.read_event + k / self.item_words,
            write_event: self.write_event + k / self.item_words,
        }
    }
}

/// [`replay_each`] in runs of words instead of word by word, for a caller
/// that only needs to know that the replay succeeds: `each` is called with
/// every receiver's runs sorted by destination word and not overlapping,
/// receivers in tile order, and returns whether to go on.
///
/// `Some(())` says the replay succeeds with exactly the moves the runs
/// list (word for word, in the same order) and every `each` returned
/// `true`. `None` says that `each` stopped it or that the replay fails or
/// may fail — an error, a word written twice, a fetch span (never checked
/// here), a write event or address at the end of its range — and the
/// caller then runs [`replay_each`] for the exact error. Time grows with
/// the runs, not the words.
pub fn replay_runs(
    rows: &[TileRowView<'_>],
    mut each: impl FnMut(PhysicalTile, &[MoveRun]) -> bool,
) -> Option<()> {
    if rows.iter().any(|r| r.fetch_span.is_some()) {
        return None;
    }
    let mut senders: Vec<Option<Sender<'_>>> = alloc::vec![None; usize::from(TILE_COUNT)];
    let mut by_tile: Vec<Option<&DecodedRow>> = alloc::vec![None; usize::from(TILE_COUNT)];
    for r in rows {
        validate_bases(r.bases, r.tile, r.row).ok()?;
        senders[r.tile.index()] = Some(Sender {
            runs: &r.row.sends,
            bases: r.bases,
        });
        by_tile[r.tile.index()] = Some(r.row);
    }
    check_partner_busy(rows, &by_tile).ok()?;
    let mut order: Vec<&TileRowView<'_>> = rows.iter().collect();
    order.sort_by_key(|r| r.tile);
    let mut moves = Vec::new();
    for r in order {
        let mut runs = receiver_runs(r, &senders, &by_tile).ok()?;
        write_runs(r, &mut runs, &mut moves)?;
        if !each(r.tile, &moves) {
            return None;
        }
    }
    Some(())
}

/// A sending tile's runs and the bases they are read with.
#[derive(Clone, Copy)]
struct Sender<'a> {
    runs: &'a [SendRun],
    bases: RowBases,
}

/// A source selected on one XPIC stream over `[from, to)`.
#[derive(Clone, Copy, Debug)]
struct Selection {
    from: u32,
    to: u32,
    source: u32,
}

/// The non-neutral selections of a row's ordinary (`paired = false`) or
/// paired XPIC stream, and the value still selected when the row ends.
fn selections(row: &DecodedRow, paired: bool) -> (Vec<Selection>, u32) {
    let mut out = Vec::new();
    let mut current = XPIC_NEUTRAL;
    let mut since = 0u32;
    for c in &row.controls {
        let v = match (c.kind, paired) {
            (ControlKind::Xpic(v), false) | (ControlKind::XpicPaired(v), true) => v,
            _ => continue,
        };
        if current != XPIC_NEUTRAL && since < c.event {
            out.push(Selection {
                from: since,
                to: c.event,
                source: current,
            });
        }
        current = v;
        since = c.event;
    }
    (out, current)
}

/// §2.6 partner busy: while a tile streams 64-bit items, its partner
/// (`p ^ 2`) neither sends nor has a source selected.
fn check_partner_busy(
    rows: &[TileRowView<'_>],
    by_tile: &[Option<&DecodedRow>],
) -> Result<(), ReceiveError> {
    for r in rows {
        let partner = r.tile.pair_partner();
        let Some(prow) = by_tile[partner.index()] else {
            continue;
        };
        for run in r.row.sends.iter().filter(|s| s.sctl & SCTL_PAIRED != 0) {
            let (a, b) = (run.start, run.start + run.items);
            if let Some(o) = prow
                .sends
                .iter()
                .find(|o| o.start < b && a < o.start + o.items)
            {
                return Err(ReceiveError::PartnerBusy {
                    tile: partner,
                    event: o.start.max(a),
                });
            }
            for paired in [false, true] {
                if let Some(sel) = selections(prow, paired)
                    .0
                    .iter()
                    .find(|s| s.from < b && a < s.to)
                {
                    return Err(ReceiveError::PartnerBusy {
                        tile: partner,
                        event: sel.from.max(a),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Index of the run of `runs` (sorted by start) covering event `e`.
fn run_index(runs: &[SendRun], e: u32) -> Option<usize> {
    let i = runs.partition_point(|r| r.start <= e).checked_sub(1)?;
    (e < runs[i].start + runs[i].items).then_some(i)
}

/// One received item before its memory write.
#[derive(Clone, Copy)]
struct Item {
    /// Memory-write event.
    write: u32,
    src_tile: u16,
    /// Source word address of the item's first word.
    src_word: u32,
    read_event: u32,
    /// 64-bit item: route direction the format must show; 0 for 32-bit.
    format: u32,
}

fn replay_receiver(
    view: &TileRowView<'_>,
    senders: &[Option<Sender<'_>>],
    by_tile: &[Option<&DecodedRow>],
    moves: &mut Vec<WordMove>,
) -> Result<(), ReceiveError> {
    let runs = receiver_runs(view, senders, by_tile)?;
    let lag = pic_lag(view.tile);
    let mut items: Vec<Item> = Vec::with_capacity(runs.iter().map(|r| r.items as usize).sum());
    for r in &runs {
        items.extend((0..r.items).map(|k| r.item(k, lag)));
    }
    items.sort_unstable_by_key(|i| i.write);
    write_items(view, &items, moves)
}

/// The items tile `d` receives, in runs: its 32-bit stream's, then its
/// paired stream's.
fn receiver_runs(
    view: &TileRowView<'_>,
    senders: &[Option<Sender<'_>>],
    by_tile: &[Option<&DecodedRow>],
) -> Result<Vec<ItemRun>, ReceiveError> {
    let d = view.tile;
    let row = view.row;
    let end = row.events;
    // 32-bit stream.
    let (ordinary, last) = selections(row, false);
    if last != XPIC_NEUTRAL {
        return Err(ReceiveError::Overrun {
            tile: d,
            event: end,
            address: 0,
        });
    }
    let mut runs = ordinary_runs(d, senders, &ordinary)?;
    paired_runs(view, senders, by_tile, &ordinary, &mut runs)?;
    Ok(runs)
}

/// Consecutive items one send run puts on the wire for consecutive mux
/// events of one selection: item `k` is selected at `event + k`, read at
/// `read_event + k` from source unit `unit + k` (a word, or for a 64-bit
/// item an 8-byte unit, whose first word is `2·(unit + k)`).
#[derive(Clone, Copy)]
struct ItemRun {
    event: u32,
    items: u32,
    src_tile: u16,
    unit: u32,
    read_event: u32,
    /// 64-bit items: the route direction the format must show; 0 for
    /// 32-bit.
    format: u32,
    /// Index of the send run (into the source row's `sends`).
    send_run: usize,
}

impl ItemRun {
    /// Item `k` (of a receiver with PIC lag `lag`).
    fn item(&self, k: u32, lag: u32) -> Item {
        let e = self.event + k;
        if self.format == 0 {
            Item {
                write: e.saturating_add(lag),
                src_tile: self.src_tile,
                src_word: self.unit + k,
                read_event: self.read_event + k,
                format: 0,
            }
        } else {
            Item {
                write: e.saturating_add(lag + 1),
                src_tile: self.src_tile,
                src_word: (self.unit + k).wrapping_mul(2),
                read_event: self.read_event + k,
                format: self.format,
            }
        }
    }

    /// Words per item.
    fn item_words(&self) -> u32 {
        if self.format == 0 {
            1
        } else {
            2
        }
    }
}

/// The tile a selection names as its source, checked.
fn source_tile(d: PhysicalTile, event: u32, source: u32) -> Result<PhysicalTile, ReceiveError> {
    PhysicalTile::new(source).map_err(|_| ReceiveError::BadSource {
        tile: d,
        event,
        source,
    })
}

/// The items tile `d` receives on its 32-bit stream: each selected event
/// matched with the send run that put a word on the wire for it.
fn ordinary_runs(
    d: PhysicalTile,
    senders: &[Option<Sender<'_>>],
    ordinary: &[Selection],
) -> Result<Vec<ItemRun>, ReceiveError> {
    let mut runs: Vec<ItemRun> = Vec::new();
    for sel in ordinary {
        let s = source_tile(d, sel.from, sel.source)?;
        let sender = senders[s.index()];
        let sends = sender.map_or(&[][..], |x| x.runs);
        let out = sender.map_or(RowBases::ZERO, |x| x.bases);
        let offset = i64::from(mux_time(s, d)) + 1;
        let bit = u32::from(direction(s, d).sctl_bit());
        let mut e = sel.from;
        while e < sel.to {
            let se = i64::from(e) - offset;
            let hit = u32::try_from(se)
                .ok()
                .and_then(|se| run_index(sends, se).map(|i| (se, i)))
                .filter(|&(_, i)| sends[i].sctl & bit != 0 && sends[i].sctl & SCTL_PAIRED == 0);
            let Some((se, i)) = hit else {
                return Err(ReceiveError::NoSender {
                    tile: d,
                    event: e,
                    source: sel.source,
                });
            };
            let r = &sends[i];
            // The rest of this send run covers consecutive events.
            let n = (sel.to - e).min(r.start + r.items - se);
            runs.push(ItemRun {
                event: e,
                items: n,
                src_tile: s.get(),
                unit: run_word(out, r).wrapping_add(se - r.start),
                read_event: se,
                format: 0,
                send_run: i,
            });
            e += n;
        }
    }
    Ok(runs)
}

/// The 64-bit items of the paired stream, selected by tile `d` or by its
/// partner (never both, and never while `d`'s 32-bit stream is selected),
/// appended to `runs` (consecutive events from one send run in one run).
fn paired_runs(
    view: &TileRowView<'_>,
    senders: &[Option<Sender<'_>>],
    by_tile: &[Option<&DecodedRow>],
    ordinary: &[Selection],
    runs: &mut Vec<ItemRun>,
) -> Result<(), ReceiveError> {
    let d = view.tile;
    let row = view.row;
    let end = row.events;
    let (own, own_last) = selections(row, true);
    let partner = d.pair_partner();
    let (theirs, _) =
        by_tile[partner.index()].map_or((Vec::new(), XPIC_NEUTRAL), |r| selections(r, true));
    if own_last != XPIC_NEUTRAL {
        return Err(ReceiveError::Overrun {
            tile: d,
            event: end,
            address: 0,
        });
    }
    let (paired, owner) = match (own.first(), theirs.first()) {
        (Some(a), Some(_)) => {
            return Err(ReceiveError::PairedStreams {
                tile: d,
                event: a.from,
            })
        }
        (Some(_), None) => (own, d),
        (None, Some(_)) => (theirs, partner),
        (None, None) => (Vec::new(), d),
    };
    for sel in &paired {
        if let Some(o) = ordinary.iter().find(|o| o.from < sel.to && sel.from < o.to) {
            return Err(ReceiveError::PairedStreams {
                tile: d,
                event: o.from.max(sel.from),
            });
        }
        let s = source_tile(d, sel.from, sel.source ^ u32::from(owner.get() & 2))?;
        let sends = senders[s.index()].map_or(&[][..], |x| x.runs);
        let t = mux_time(s, d).max(mux_time(s, partner));
        let offset = i64::from(t) + 1;
        let bit = u32::from(direction(s, d).sctl_bit());
        for e in sel.from..sel.to {
            let se = i64::from(e) - offset;
            let hit = u32::try_from(se)
                .ok()
                .and_then(|se| run_index(sends, se).map(|i| (se, i)))
                .filter(|&(_, i)| sends[i].sctl & bit != 0 && sends[i].sctl & SCTL_PAIRED != 0);
            let Some((se, i)) = hit else {
                return Err(ReceiveError::NoSender {
                    tile: d,
                    event: e,
                    source: sel.source,
                });
            };
            let r = &sends[i];
            let unit = r.word_address + (se - r.start);
            // The item after the last one of the same run extends that run.
            if let Some(last) = runs.last_mut().filter(|l| {
                l.format != 0
                    && l.send_run == i
                    && l.src_tile == s.get()
                    && l.event + l.items == e
                    && l.read_event + l.items == se
            }) {
                last.items += 1;
                continue;
            }
            runs.push(ItemRun {
                event: e,
                items: 1,
                src_tile: s.get(),
                unit,
                read_event: se,
                format: bit,
                send_run: i,
            });
        }
    }
    Ok(())
}

/// PIC pointer updates and format changes, in a receive row's control order.
struct PicControls {
    /// `(event, word address)`, the incoming base applied.
    pointers: Vec<(u32, u32)>,
    /// `(event, format)`.
    formats: Vec<(u32, u32)>,
}

/// The row's [`PicControls`]; its last format change must return to 32-bit
/// items with the paired tail inside the row.
fn pic_controls(view: &TileRowView<'_>) -> Result<PicControls, ReceiveError> {
    let row = view.row;
    let incoming_words = view.bases.incoming / 4;
    let mut pics: Vec<(u32, u32)> = Vec::new();
    let mut formats: Vec<(u32, u32)> = Vec::new();
    for c in &row.controls {
        match c.kind {
            ControlKind::PicPointer(p) => pics.push((c.event, incoming_words.wrapping_add(p))),
            ControlKind::PicFormat(f) => formats.push((c.event, f)),
            ControlKind::Xpic(_) | ControlKind::XpicPaired(_) => {}
        }
    }
    if let Some(&(event, f)) = formats.last() {
        let tail = event.saturating_add(PAIRED_ROW_TAIL_EVENTS);
        if f != 0 || tail > row.events {
            return Err(ReceiveError::Overrun {
                tile: view.tile,
                event: tail.min(row.events),
                address: 0,
            });
        }
    }
    Ok(PicControls {
        pointers: pics,
        formats,
    })
}

/// The rules one item's write at `address` keeps once it is inside tile
/// memory: one write per event, the format it needs shown at the right
/// event (`shown`), 8-byte alignment for 64-bit items, and the guard
/// before the row's `end`.
fn check_write(
    d: PhysicalTile,
    end: u32,
    it: &Item,
    address: u32,
    previous_write: Option<u32>,
    shown: u32,
) -> Result<(), ReceiveError> {
    let w = it.write;
    if previous_write == Some(w) {
        return Err(ReceiveError::WriteClash {
            tile: d,
            event: w,
            address,
        });
    }
    if shown != it.format {
        return Err(ReceiveError::FormatMismatch {
            tile: d,
            event: w,
            address,
        });
    }
    if it.format != 0 && !address.is_multiple_of(8) {
        return Err(ReceiveError::PairedMisaligned {
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
    Ok(())
}

/// Writes the received items (in write order) where the row's PIC pointer
/// points at each one's write event, checking every rule of the receive
/// side: memory bounds, one write per event, the format each item needs,
/// 64-bit alignment, the guard before the row's end and the fetch span.
fn write_items(
    view: &TileRowView<'_>,
    items: &[Item],
    moves: &mut Vec<WordMove>,
) -> Result<(), ReceiveError> {
    let d = view.tile;
    let row = view.row;
    let end = row.events;
    let PicControls {
        pointers: pics,
        formats,
    } = pic_controls(view)?;
    let format_at = |q: u32| {
        let idx = formats.partition_point(|f| f.0 <= q);
        idx.checked_sub(1).map_or(0, |i| formats[i].1)
    };
    // Writes: merge with PIC pointer updates in event order.
    let mut pointer: Option<u32> = None;
    let mut pi = 0;
    let fetch_mask = view.fetch_span.map(|(a, b)| {
        let (lo, hi) = (effective_element(a), effective_element(b.max(a + 1) - 1));
        (lo, hi)
    });
    let mut previous_write: Option<u32> = None;
    moves.reserve(items.len());
    for it in items {
        let w = it.write;
        while pi < pics.len() && pics[pi].0 <= w {
            pointer = Some(pics[pi].1);
            pi += 1;
        }
        let address = pointer.map_or(0, |p| p.wrapping_mul(4));
        let words = if it.format == 0 { 1 } else { 2 };
        let fits = address
            .checked_add(4 * words)
            .is_some_and(|e| e <= TILE_MEMORY_END);
        if pointer.is_none() || address < TILE_MEMORY_BASE || !fits {
            return Err(ReceiveError::OutsideMemory {
                tile: d,
                event: w,
                address,
            });
        }
        let shown = if it.format == 0 {
            format_at(w)
        } else {
            format_at(w.saturating_sub(2))
        };
        check_write(d, end, it, address, previous_write, shown)?;
        previous_write = Some(w);
        for k in 0..words {
            let a = address + 4 * k;
            if let Some((lo, hi)) = fetch_mask {
                let el = effective_element(a);
                if (lo..=hi).contains(&el) {
                    return Err(ReceiveError::FetchClash {
                        tile: d,
                        event: w,
                        address: a,
                    });
                }
            }
            moves.push(WordMove {
                dst_tile: d.get(),
                dst_word: a / 4,
                src_tile: it.src_tile,
                src_word: it.src_word + k,
                read_event: it.read_event,
                write_event: w,
            });
        }
        pointer = pointer.map(|p| p + words);
    }
    Ok(())
}

/// [`write_items`] over item runs: `moves` becomes the receiver's moves in
/// runs sorted by destination word, when every item is written without an
/// error, no two items share a write event and no word is written twice;
/// `None` otherwise (or when an event or address is at the end of its
/// range, left to the word-by-word replay).
fn write_runs(
    view: &TileRowView<'_>,
    runs: &mut [ItemRun],
    moves: &mut Vec<MoveRun>,
) -> Option<()> {
    let end = view.row.events;
    let lag = pic_lag(view.tile);
    let PicControls {
        pointers: pics,
        formats,
    } = pic_controls(view).ok()?;
    // `format_at` is a step function only over formats in event order.
    if !formats.is_sorted_by_key(|f| f.0) {
        return None;
    }
    let format_at = |q: u32| {
        let idx = formats.partition_point(|f| f.0 <= q);
        (
            idx.checked_sub(1).map_or(0, |i| formats[i].1),
            formats.get(idx).map(|f| f.0),
        )
    };
    // Write events of a run: `first + k` (no saturation: the guard below
    // needs `first + items - 1 + GUARD_EVENTS < end` anyway).
    let first_write = |r: &ItemRun| {
        let lag = if r.format == 0 { lag } else { lag + 1 };
        r.event.checked_add(lag)
    };
    for r in runs.iter() {
        let w = u64::from(first_write(r)?);
        let last_unit = u64::from(r.unit) + u64::from(r.items);
        if w + u64::from(r.items) + u64::from(GUARD_EVENTS) > u64::from(end)
            || last_unit > u64::from(u32::MAX) / u64::from(r.item_words())
        {
            return None;
        }
    }
    runs.sort_unstable_by_key(|r| r.event + if r.format == 0 { lag } else { lag + 1 });
    moves.clear();
    let mut pointer: Option<u32> = None;
    let mut pi = 0;
    let mut next_free = 0u32;
    for r in runs.iter() {
        let first = first_write(r)?;
        // Two items with one write event: a clash.
        if first < next_free {
            return None;
        }
        next_free = first + r.items;
        let words = r.item_words();
        let mut k = 0u32;
        while k < r.items {
            let w = first + k;
            while pi < pics.len() && pics[pi].0 <= w {
                pointer = Some(pics[pi].1);
                pi += 1;
            }
            let p = pointer?;
            // Items up to the next pointer update or format change.
            let mut n = r.items - k;
            if let Some(&(event, _)) = pics.get(pi) {
                n = n.min(event - w);
            }
            let q = if r.format == 0 {
                w
            } else {
                w.saturating_sub(2)
            };
            let (shown, next_change) = format_at(q);
            if shown != r.format {
                return None;
            }
            if let Some(f) = next_change {
                let at = if r.format == 0 { f } else { f.checked_add(2)? };
                n = n.min(at - w);
            }
            let address = u64::from(p) * 4;
            let last = address + 4 * u64::from(n) * u64::from(words);
            if address < u64::from(TILE_MEMORY_BASE)
                || last > u64::from(TILE_MEMORY_END)
                || (r.format != 0 && address % 8 != 0)
            {
                return None;
            }
            let unit = r.unit + k;
            moves.push(MoveRun {
                dst_word: p,
                words: n * words,
                src_tile: r.src_tile,
                src_word: if r.format == 0 { unit } else { unit * 2 },
                read_event: r.read_event + k,
                write_event: w,
                item_words: words,
            });
            pointer = Some(p + n * words);
            k += n;
        }
    }
    moves.sort_unstable_by_key(|m| m.dst_word);
    moves
        .windows(2)
        .all(|m| u64::from(m[0].dst_word) + u64::from(m[0].words) <= u64::from(m[1].dst_word))
        .then_some(())
}
