//! The exchange fabric: executes one phase's exchange rows bit-exactly with
//! the route timing model (`docs/facts/ipu21-target.md` §2.4–§2.5).
//!
//! Rows are read from the tiles' SRAM at run time (so words patched by the
//! supervisor take effect) and executed by the fabric's own witness
//! ([`super::witness`]): every row is stepped instruction by instruction on
//! its event clock and every receiver event by event against the route
//! model — code independent of the compiler's `exchange::replay`, which the
//! compile-time checker proves rows with, so the two are two witnesses of
//! one timing model. The words are then moved in event order: a word is
//! read from the sender at its send event and written to the receiver at
//! its memory-write event. A receiver that selects a source that drives
//! nothing on its route, is still attached or writing when its row returns,
//! or writes outside SRAM raises a [`WitnessFault`] naming the tile, event
//! and address (a [`FaultKind::ExchangeWitness`](super::FaultKind::ExchangeWitness)
//! fault with the phase).
//!
//! Each row runs with the exchange CSRs its tile holds at the call:
//! `$OUTGOING_BASE` and `$INCOMING_BASE` relocate send addresses and PIC
//! pointers ([`RowBases`], §2.3–§2.4); `$INCOMING_MUX` must be the neutral
//! `0x640` and `$INCOMING_DCOUNT` 1 (what the runtime and the emitted phase
//! sequence set, §2.7) — any other value, like a base the model does not
//! cover, is a [`FaultKind::ExchangeCsr`](super::FaultKind::ExchangeCsr)
//! fault naming the tile, phase, CSR and value.

use ipuc_target::ipu21::exchange_model::RowBases;
use ipuc_target::ipu21::exchange_model::XPIC_NEUTRAL;
use ipuc_target::ipu21::isa::Csr;
use ipuc_target::ipu21::sram::{
    effective_element, is_executable, ELEMENT_SIZE, EXECUTABLE_MEMORY_LIMIT, INTERLEAVED_BASE,
    INTERLEAVED_ELEMENT_SIZE, SUPERVISOR_FETCH_LOOKAHEAD,
};
use ipuc_target::ipu21::topology::PhysicalTile;
use rayon::slice::ParallelSliceMut;

pub use super::phase_memory::{csr_name, PhaseMemory, RowLocation, MAX_ROW_WORDS};
use super::witness::{singles, step_rows, MoveRun, SteppedRow, WitnessFault, WitnessFaultKind};

/// What stopped a phase.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FabricError {
    /// What the fabric's witness found (row words, receive timing, CSRs),
    /// as the tile would raise it.
    #[error("{0}")]
    Witness(WitnessFault),
    /// A sender's source word lies outside its memory.
    #[error("{tile}: send at event {event} reads {address:#x} outside memory")]
    SourceOutsideMemory {
        tile: PhysicalTile,
        event: u32,
        address: u32,
    },
    /// A called row is not all in executable memory (§2.10 rule 1:
    /// instruction fetch only below `0x80000`).
    #[error(
        "{tile}: exchange row {:#x}..{:#x} is not in executable memory (instruction fetch only below {:#x}, facts §2.10 rule 1)",
        row.0,
        row.1,
        EXECUTABLE_MEMORY_LIMIT
    )]
    RowNotExecutable {
        tile: PhysicalTile,
        /// Row start and end (exclusive) byte addresses.
        row: (u32, u32),
    },
    /// A word is read for a send from, or written by a receive to, an
    /// effective element the executing row is fetched from, including the
    /// 64-byte fetch look-ahead (§2.10 rule 2).
    #[error(
        "{tile}: {} {address:#x} at event {event} is in an effective element of the executing row {:#x}..{:#x} (+{SUPERVISOR_FETCH_LOOKAHEAD}-byte fetch look-ahead, facts §2.10 rule 2)",
        if *send { "send source" } else { "receive destination" },
        row.0,
        row.1
    )]
    FetchElement {
        tile: PhysicalTile,
        /// True for a send source, false for a receive destination.
        send: bool,
        event: u32,
        address: u32,
        /// Row start and end (exclusive) byte addresses.
        row: (u32, u32),
    },
    /// On one tile a send's source and a receive's destination share an
    /// effective element while their memory windows overlap (§2.10 rule 5:
    /// send window = its read events, receive window = its write events
    /// plus the 5-event receive horizon).
    #[error(
        "{tile}: send source {:#x} (events {}..={}) and receive destination {:#x} (events {}..={}) share effective element {element} while both are active (facts §2.10 rule 5)",
        send.0, send.1, send.2, receive.0, receive.1, receive.2
    )]
    ElementConflict {
        tile: PhysicalTile,
        element: u32,
        /// Source byte address and read-event window `[first, last]`.
        send: (u32, u32, u32),
        /// Destination byte address and write window `[first, last + 5]`.
        receive: (u32, u32, u32),
    },
}

/// Summary of one executed phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseRun {
    /// Words written on receivers.
    pub words_moved: u64,
    /// Events until the longest row returned.
    pub events: u32,
}

/// Steps each tile's row from memory with the witness and executes the
/// phase: §2.10 rule 1 on every row, the receivers, rules 2 and 5 on the
/// traffic, then the words moved in event order.
pub fn execute_phase(
    calls: &[RowLocation],
    memory: &mut (impl PhaseMemory + Sync),
) -> Result<PhaseRun, FabricError> {
    Ok(execute_phase_rows(calls, memory)?.0)
}

/// [`execute_phase`], also returning every stepped row (in call order).
pub fn execute_phase_rows(
    calls: &[RowLocation],
    memory: &mut (impl PhaseMemory + Sync),
) -> Result<(PhaseRun, Vec<SteppedRow>), FabricError> {
    let stepped = step_rows(calls, memory).map_err(FabricError::Witness)?;
    let rows: Vec<SteppedRow> = stepped.rows().collect();
    for r in &rows {
        let (start, end) = row_span(r);
        if !is_executable(start) || end > EXECUTABLE_MEMORY_LIMIT {
            return Err(FabricError::RowNotExecutable {
                tile: r.location.tile,
                row: (start, end),
            });
        }
    }
    let moves = stepped.receive_runs(true).map_err(FabricError::Witness)?;
    check_element_rules(&rows, &moves)?;
    apply_moves(&moves, memory)?;
    let run = PhaseRun {
        words_moved: moves.iter().map(|r| u64::from(r.words)).sum(),
        events: rows.iter().map(|r| r.events).max().unwrap_or(0),
    };
    Ok((run, rows))
}

/// A stepped row's byte span `[start, end)`.
fn row_span(r: &SteppedRow) -> (u32, u32) {
    let start = r.location.address;
    (start, start.saturating_add(4 * r.words))
}

/// One contiguous piece of a phase's traffic inside one effective element
/// on each side: a run of moves with consecutive source and destination
/// words whose events advance by at most one per word.
#[derive(Clone, Copy, Debug)]
struct Piece {
    src_tile: PhysicalTile,
    dst_tile: PhysicalTile,
    src_element: u32,
    dst_element: u32,
    /// First source / destination byte address.
    src_address: u32,
    dst_address: u32,
    read: (u32, u32),
    write: (u32, u32),
    last_src: u32,
    last_dst: u32,
}

/// Receive horizon after a transfer's last write (§2.10 rule 5, "≈ last
/// write + 5").
const RECEIVE_HORIZON_EVENTS: u32 = 5;

/// Words from byte `addr` on (a multiple of 4) that share its effective
/// element, counting no further than the 32-bit wrap (at least 1).
fn words_in_element(addr: u32) -> u64 {
    let a = u64::from(addr);
    let end = if addr < INTERLEAVED_BASE {
        (a / u64::from(ELEMENT_SIZE) + 1) * u64::from(ELEMENT_SIZE)
    } else {
        let base = u64::from(INTERLEAVED_BASE);
        let size = u64::from(INTERLEAVED_ELEMENT_SIZE);
        base + ((a - base) / size + 1) * size
    };
    (end.min(1 << 32) - a).div_ceil(4).max(1)
}

/// Calls `f` with each piece of `moves` (sorted by destination) in order,
/// in one pass: the pieces their word moves make, taken one element-bounded
/// stretch of a run at a time (inside one, every word continues the piece
/// of the word before). Streamed rather than collected: a phase can have
/// millions of pieces, and a vector of them (grown, then dropped every
/// superstep) cost more page faults and copies than the check itself.
fn for_each_piece(
    moves: &[MoveRun],
    mut f: impl FnMut(&Piece) -> Result<(), FabricError>,
) -> Result<(), FabricError> {
    let mut current: Option<Piece> = None;
    for r in moves {
        let mut i = 0u32;
        while i < r.words {
            let m = r.single(i);
            let (src, dst) = (m.src_word.wrapping_mul(4), m.dst_word.wrapping_mul(4));
            let stretch = words_in_element(src)
                .min(words_in_element(dst))
                .min(u64::from(r.words - i)) as u32;
            let last = r.single(i + stretch - 1);
            i += stretch;
            let (se, de) = (effective_element(src), effective_element(dst));
            if let Some(p) = current.as_mut() {
                let continues = p.src_tile == m.src_tile
                    && p.dst_tile == m.dst_tile
                    && p.src_element == se
                    && p.dst_element == de
                    && m.src_word == p.last_src.wrapping_add(1)
                    && m.dst_word == p.last_dst.wrapping_add(1)
                    && m.read_event.wrapping_sub(p.read.1) <= 1
                    && m.write_event.wrapping_sub(p.write.1) <= 1;
                if continues {
                    p.read.1 = last.read_event;
                    p.write.1 = last.write_event;
                    p.last_src = last.src_word;
                    p.last_dst = last.dst_word;
                    continue;
                }
                f(p)?;
            }
            current = Some(Piece {
                src_tile: m.src_tile,
                dst_tile: m.dst_tile,
                src_element: se,
                dst_element: de,
                src_address: src,
                dst_address: dst,
                read: (m.read_event, last.read_event),
                write: (m.write_event, last.write_event),
                last_src: last.src_word,
                last_dst: last.dst_word,
            });
        }
    }
    match current {
        Some(p) => f(&p),
        None => Ok(()),
    }
}

/// A piece's two memory windows: `(tile, element, first event, last event,
/// address, is_write)` for its send side, then its receive side (whose
/// window extends by the receive horizon).
type Window = (PhysicalTile, u32, u32, u32, u32, bool);

/// The send and receive windows of piece `p`.
fn piece_windows(p: &Piece) -> [Window; 2] {
    [
        (
            p.src_tile,
            p.src_element,
            p.read.0,
            p.read.1,
            p.src_address,
            false,
        ),
        (
            p.dst_tile,
            p.dst_element,
            p.write.0,
            p.write.1.saturating_add(RECEIVE_HORIZON_EVENTS),
            p.dst_address,
            true,
        ),
    ]
}

/// Bit of effective element `element` in a per-tile element mask, `None`
/// past element 63 (such windows are never filtered out).
fn element_bit(element: u32) -> Option<u64> {
    1u64.checked_shl(element)
}

/// §2.10 rules 2 and 5 on the phase's actual traffic: no send source or
/// receive destination in an element of the executing row (with its fetch
/// look-ahead), and no send and receive sharing an element on one tile
/// while both are active.
pub fn check_element_rules(rows: &[SteppedRow], moves: &[MoveRun]) -> Result<(), FabricError> {
    if moves.is_empty() {
        return Ok(());
    }
    let mut fetch: Vec<Option<(u32, u32, u32, u32)>> =
        vec![None; usize::from(ipuc_target::ipu21::topology::TILE_COUNT)];
    for r in rows {
        let (start, end) = row_span(r);
        let guard = end + SUPERVISOR_FETCH_LOOKAHEAD;
        fetch[r.location.tile.index()] = Some((
            effective_element(start),
            effective_element(guard - 1),
            start,
            end,
        ));
    }
    // Pass 1, in piece order: rule 2 on every window (the first offending
    // one faults, as before), and the elements each tile sends from and
    // receives into.
    let tiles = usize::from(ipuc_target::ipu21::topology::TILE_COUNT);
    let (mut sends, mut receives) = (vec![0u64; tiles], vec![0u64; tiles]);
    for_each_piece(moves, |p| {
        for w in piece_windows(p) {
            let (tile, element, first, _, address, is_write) = w;
            if let Some((lo, hi, start, end)) = fetch.get(tile.index()).copied().flatten() {
                if (lo..=hi).contains(&element) {
                    return Err(FabricError::FetchElement {
                        tile,
                        send: !is_write,
                        event: first,
                        address,
                        row: (start, end),
                    });
                }
            }
            let masks = if is_write { &mut receives } else { &mut sends };
            if let (Some(bit), Some(m)) = (element_bit(element), masks.get_mut(tile.index())) {
                *m |= bit;
            }
        }
        Ok(())
    })?;
    // Pass 2: only (tile, element) groups with both a send and a receive
    // window can conflict, so only their windows are kept for sorting
    // (elements past 63 are kept, unfiltered).
    let kept = |w: &Window| {
        let t = w.0.index();
        match element_bit(w.1) {
            Some(bit) => {
                sends.get(t).is_none_or(|m| m & bit != 0)
                    && receives.get(t).is_none_or(|m| m & bit != 0)
            }
            None => true,
        }
    };
    let mut windows: Vec<Window> = Vec::new();
    for_each_piece(moves, |p| {
        windows.extend(piece_windows(p).into_iter().filter(|w| kept(w)));
        Ok(())
    })?;
    // Whole-tuple keys: the parallel sort's order is the serial one's.
    windows.par_sort_unstable();
    // Per (tile, element): any send window overlapping any receive window.
    let mut i = 0;
    while i < windows.len() {
        let key = (windows[i].0, windows[i].1);
        let mut j = i;
        while j < windows.len() && (windows[j].0, windows[j].1) == key {
            j += 1;
        }
        let group = &windows[i..j];
        if group.iter().any(|w| w.5) && group.iter().any(|w| !w.5) {
            // Sorted by first event: sweep, remembering the latest-ending
            // window of each kind seen so far.
            let mut open: [Option<(u32, u32, u32)>; 2] = [None, None];
            for w in group {
                let other = open[usize::from(!w.5)];
                if let Some((a, b, address)) = other.filter(|o| o.1 >= w.2) {
                    let this = (w.4, w.2, w.3);
                    let that = (address, a, b);
                    let (send, receive) = if w.5 { (that, this) } else { (this, that) };
                    return Err(FabricError::ElementConflict {
                        tile: key.0,
                        element: key.1,
                        send,
                        receive,
                    });
                }
                let slot = &mut open[usize::from(w.5)];
                if slot.is_none_or(|o| w.3 > o.1) {
                    *slot = Some((w.2, w.3, w.4));
                }
            }
        }
        i = j;
    }
    Ok(())
}

/// Moves words in event order. When no word is both read and written in the
/// phase (the usual case) order cannot matter and all reads happen first.
pub fn apply_moves(moves: &[MoveRun], memory: &mut impl PhaseMemory) -> Result<(), FabricError> {
    if reads_meet_writes(moves) {
        return apply_moves_in_event_order(&singles(moves), memory);
    }
    // In bulk: each run of moves with consecutive source and destination
    // words between one pair of tiles is one slice read and one slice
    // write. A run that leaves memory is redone word by word, so the fault
    // (and the words stored before it) are those of the per-word order:
    // every read first, then every write, in move order.
    // Word moves of `moves` covering bulk run `b`, for the per-word redo.
    let words_of = |first: usize, n: u32| {
        singles(moves)
            .into_iter()
            .skip(first)
            .take(n as usize)
            .collect::<Vec<MoveRun>>()
    };
    let readable =
        bulk_runs(moves).all(|b| memory.readable(b.src_tile, b.src_word.wrapping_mul(4), b.words));
    if readable {
        // Every source can be read, and no word is both read and written:
        // copying run by run stores what reading everything first would
        // (and a destination outside memory faults after the same stores).
        let mut first = 0usize;
        for b in bulk_runs(moves) {
            let src = (b.src_tile, b.src_word.wrapping_mul(4));
            let dst = (b.dst_tile, b.dst_word.wrapping_mul(4));
            if !memory.copy_words(src, dst, b.words) {
                for m in words_of(first, b.words) {
                    let v = read_word(memory, &m)?;
                    write_word(memory, &m, v)?;
                }
            }
            first += b.words as usize;
        }
        return Ok(());
    }
    let total: usize = moves.iter().map(|r| r.words as usize).sum();
    let mut values = Vec::with_capacity(total);
    let mut first = 0usize;
    for b in bulk_runs(moves) {
        let (tile, addr) = (b.src_tile, b.src_word.wrapping_mul(4));
        if !memory.read_words(tile, addr, b.words, &mut values) {
            for m in words_of(first, b.words) {
                values.push(read_word(memory, &m)?);
            }
        }
        first += b.words as usize;
    }
    let mut first = 0usize;
    for b in bulk_runs(moves) {
        let (tile, addr) = (b.dst_tile, b.dst_word.wrapping_mul(4));
        let vals = &values[first..first + b.words as usize];
        if !memory.write_words(tile, addr, vals) {
            for (m, &v) in words_of(first, b.words).iter().zip(vals) {
                write_word(memory, m, v)?;
            }
        }
        first += b.words as usize;
    }
    Ok(())
}

/// The bulk runs of `moves`: each run of moves with consecutive source and
/// destination words between one pair of tiles, merged into one. Events do
/// not matter here, only the words' order does (`per_event` of a merged run
/// is never read). Streamed, not collected: [`apply_moves`] walks them up to
/// three times, and regenerating them is cheaper than a vector of millions
/// of runs allocated (and page-faulted in) every superstep.
fn bulk_runs(moves: &[MoveRun]) -> impl Iterator<Item = MoveRun> + '_ {
    let mut rest = moves.iter().peekable();
    std::iter::from_fn(move || {
        let mut b = *rest.next()?;
        while let Some(r) = rest.next_if(|r| {
            b.src_tile == r.src_tile
                && b.dst_tile == r.dst_tile
                && b.src_word.checked_add(b.words) == Some(r.src_word)
                && b.dst_word.checked_add(b.words) == Some(r.dst_word)
        }) {
            b.words += r.words;
        }
        Some(b)
    })
}

/// The word the one-word run `m` reads.
fn read_word(memory: &impl PhaseMemory, m: &MoveRun) -> Result<u32, FabricError> {
    memory
        .read_u32(m.src_tile, m.src_word.wrapping_mul(4))
        .ok_or(FabricError::SourceOutsideMemory {
            tile: m.src_tile,
            event: m.read_event,
            address: m.src_word.wrapping_mul(4),
        })
}

/// Stores the word of the one-word run `m`.
fn write_word(memory: &mut impl PhaseMemory, m: &MoveRun, v: u32) -> Result<(), FabricError> {
    if memory.write_u32(m.dst_tile, m.dst_word.wrapping_mul(4), v) {
        Ok(())
    } else {
        Err(FabricError::Witness(WitnessFault {
            tile: m.dst_tile,
            event: m.write_event,
            address: Some(m.dst_word.wrapping_mul(4)),
            kind: WitnessFaultKind::OutsideMemory,
        }))
    }
}

/// Every read and write of `moves` (one-word runs) in exact order: (event,
/// reads before writes at one event, index).
fn apply_moves_in_event_order(
    moves: &[MoveRun],
    memory: &mut impl PhaseMemory,
) -> Result<(), FabricError> {
    let mut order: Vec<(u32, bool, usize)> = Vec::with_capacity(2 * moves.len());
    for (i, m) in moves.iter().enumerate() {
        order.push((m.read_event, false, i));
        order.push((m.write_event, true, i));
    }
    order.sort_unstable();
    let mut values = vec![0u32; moves.len()];
    for (_, is_write, i) in order {
        let m = &moves[i];
        if is_write {
            write_word(memory, m, values[i])?;
        } else {
            values[i] = read_word(memory, m)?;
        }
    }
    Ok(())
}

/// Word runs `(tile, first word, end word)` of `words` (runs of words in
/// order), merged and sorted.
fn runs(
    mut words: impl Iterator<Item = (PhysicalTile, u32, u32)>,
) -> Vec<(PhysicalTile, u32, u32)> {
    // At most one run per item: reserving that up front spares the
    // doubling copies of a vector that can hold millions of runs.
    let mut out: Vec<(PhysicalTile, u32, u32)> = Vec::with_capacity(words.size_hint().0);
    if let Some((t, w, n)) = words.next() {
        let mut cur = (t, w, w + n);
        for (t, w, n) in words {
            if t == cur.0 && w == cur.2 {
                cur.2 += n;
            } else {
                out.push(cur);
                cur = (t, w, w + n);
            }
        }
        out.push(cur);
    }
    // Whole-tuple keys: the parallel sort's order is the serial one's (and
    // a phase's millions of runs are worth the second core).
    out.par_sort_unstable();
    out
}

/// Is any word both read and written by the phase?
fn reads_meet_writes(moves: &[MoveRun]) -> bool {
    let reads = runs(moves.iter().map(|m| (m.src_tile, m.src_word, m.words)));
    let writes = runs(moves.iter().map(|m| (m.dst_tile, m.dst_word, m.words)));
    // Sweep both sorted run lists; runs within one list may overlap each other.
    let (mut i, mut j) = (0, 0);
    while i < reads.len() && j < writes.len() {
        let (r, w) = (reads[i], writes[j]);
        if (r.0, r.1) < (w.0, w.1) {
            if r.0 == w.0 && r.2 > w.1 {
                return true;
            }
            i += 1;
        } else {
            if r.0 == w.0 && w.2 > r.1 {
                return true;
            }
            j += 1;
        }
    }
    false
}

/// Sparse per-tile memory images: only the byte ranges a caller maps exist.
/// Used by benchmarks and tests that need 1472 tiles without 1472 × 624 KiB.
#[derive(Clone, Debug, Default)]
pub struct SparseTileMemory {
    /// Per tile: sorted, disjoint (start address, bytes).
    regions: std::collections::BTreeMap<PhysicalTile, Vec<(u32, Vec<u8>)>>,
}

impl SparseTileMemory {
    /// Maps `[addr, addr + data.len())` on `tile` with initial contents;
    /// `false` (and nothing mapped) if it overlaps an existing region.
    pub fn map(&mut self, tile: PhysicalTile, addr: u32, data: Vec<u8>) -> bool {
        let list = self.regions.entry(tile).or_default();
        let end = u64::from(addr) + data.len() as u64;
        if list
            .iter()
            .any(|(a, d)| u64::from(*a) < end && u64::from(addr) < u64::from(*a) + d.len() as u64)
        {
            return false;
        }
        list.push((addr, data));
        list.sort_by_key(|r| r.0);
        true
    }
    /// The mapped region containing `[addr, addr+len)`, as a slice.
    pub fn slice(&self, tile: PhysicalTile, addr: u32, len: u32) -> Option<&[u8]> {
        let list = self.regions.get(&tile)?;
        let idx = list.partition_point(|r| r.0 <= addr).checked_sub(1)?;
        let (start, data) = &list[idx];
        let off = (addr - start) as usize;
        data.get(off..off + len as usize)
    }
    fn slice_mut(&mut self, tile: PhysicalTile, addr: u32, len: u32) -> Option<&mut [u8]> {
        let list = self.regions.get_mut(&tile)?;
        let idx = list.partition_point(|r| r.0 <= addr).checked_sub(1)?;
        let (start, data) = &mut list[idx];
        let off = (addr - *start) as usize;
        data.get_mut(off..off + len as usize)
    }
    /// All mapped regions of all tiles.
    pub fn regions(&self) -> impl Iterator<Item = (PhysicalTile, u32, &[u8])> {
        self.regions
            .iter()
            .flat_map(|(t, l)| l.iter().map(move |(a, d)| (*t, *a, d.as_slice())))
    }
}

impl PhaseMemory for SparseTileMemory {
    fn read_u32(&self, tile: PhysicalTile, addr: u32) -> Option<u32> {
        let b = self.slice(tile, addr, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn write_u32(&mut self, tile: PhysicalTile, addr: u32, value: u32) -> bool {
        match self.slice_mut(tile, addr, 4) {
            Some(b) => {
                b.copy_from_slice(&value.to_le_bytes());
                true
            }
            None => false,
        }
    }
}

/// The simulator's exchange fabric: after each global sync, every tile whose
/// supervisor's next instruction is `call $mL, row` has its row decoded from
/// its SRAM and executed with the route model; each call is then retired,
/// charging the row's events as supervisor cycles.
#[derive(Clone, Copy, Debug, Default)]
pub struct RouteFabric;

/// Physical tile id → device index, over all tiles of a superstep.
struct DeviceMemory<'a> {
    tiles: &'a mut [super::Tile],
    index: Vec<Option<usize>>,
}

impl PhaseMemory for DeviceMemory<'_> {
    fn read_u32(&self, tile: PhysicalTile, addr: u32) -> Option<u32> {
        let i = (*self.index.get(tile.index())?)?;
        self.tiles[i].memory().read_u32(addr).ok()
    }
    fn write_u32(&mut self, tile: PhysicalTile, addr: u32, value: u32) -> bool {
        match self.index.get(tile.index()).copied().flatten() {
            Some(i) => self.tiles[i].memory_mut().write_u32(addr, value).is_ok(),
            None => false,
        }
    }
    fn read_words(&self, tile: PhysicalTile, addr: u32, n: u32, out: &mut Vec<u32>) -> bool {
        let Some(i) = self.index.get(tile.index()).copied().flatten() else {
            return false;
        };
        let Some(len) = n.checked_mul(4) else {
            return false;
        };
        match self.tiles[i].memory().slice(addr, len) {
            Ok(bytes) if addr.is_multiple_of(4) => {
                out.extend(
                    bytes
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
                true
            }
            _ => false,
        }
    }
    fn readable(&self, tile: PhysicalTile, addr: u32, n: u32) -> bool {
        let Some(i) = self.index.get(tile.index()).copied().flatten() else {
            return false;
        };
        let Some(len) = n.checked_mul(4) else {
            return false;
        };
        addr.is_multiple_of(4) && self.tiles[i].memory().slice(addr, len).is_ok()
    }
    fn copy_words(
        &mut self,
        (src, src_addr): (PhysicalTile, u32),
        (dst, dst_addr): (PhysicalTile, u32),
        n: u32,
    ) -> bool {
        let tile = |t: PhysicalTile| self.index.get(t.index()).copied().flatten();
        let (Some(i), Some(j)) = (tile(src), tile(dst)) else {
            return false;
        };
        let Some(len) = n.checked_mul(4) else {
            return false;
        };
        if !src_addr.is_multiple_of(4) || !dst_addr.is_multiple_of(4) {
            return false;
        }
        if i == j {
            let t = self.tiles[i].memory_mut();
            let Ok(from) = t.slice(src_addr, len).map(<[u8]>::to_vec) else {
                return false;
            };
            return match t.slice_mut(dst_addr, len) {
                Ok(to) => {
                    to.copy_from_slice(&from);
                    true
                }
                Err(_) => false,
            };
        }
        let (from, to) = if i < j {
            let (low, high) = self.tiles.split_at_mut(j);
            (&low[i], &mut high[0])
        } else {
            let (low, high) = self.tiles.split_at_mut(i);
            (&high[0], &mut low[j])
        };
        match (
            from.memory().slice(src_addr, len),
            to.memory_mut().slice_mut(dst_addr, len),
        ) {
            (Ok(from), Ok(to)) => {
                to.copy_from_slice(from);
                true
            }
            _ => false,
        }
    }
    fn write_words(&mut self, tile: PhysicalTile, addr: u32, values: &[u32]) -> bool {
        let Some(i) = self.index.get(tile.index()).copied().flatten() else {
            return false;
        };
        let Some(len) = u32::try_from(values.len())
            .ok()
            .and_then(|n| n.checked_mul(4))
        else {
            return false;
        };
        if !addr.is_multiple_of(4) {
            return false;
        }
        match self.tiles[i].memory_mut().slice_mut(addr, len) {
            Ok(bytes) => {
                for (c, v) in bytes.chunks_exact_mut(4).zip(values) {
                    c.copy_from_slice(&v.to_le_bytes());
                }
                true
            }
            Err(_) => false,
        }
    }
}

impl FabricError {
    /// The tile that raises this error.
    pub fn tile(&self) -> PhysicalTile {
        match *self {
            FabricError::SourceOutsideMemory { tile, .. }
            | FabricError::RowNotExecutable { tile, .. }
            | FabricError::FetchElement { tile, .. }
            | FabricError::ElementConflict { tile, .. } => tile,
            FabricError::Witness(w) => w.tile,
        }
    }

    /// The hardware receive-error class this corresponds to (§1.8).
    pub fn class(&self) -> super::ExchangeError {
        match self {
            FabricError::Witness(WitnessFault {
                kind: WitnessFaultKind::OutsideMemory | WitnessFaultKind::NoPointer,
                ..
            }) => super::ExchangeError::Addr,
            FabricError::FetchElement { .. } | FabricError::RowNotExecutable { .. } => {
                super::ExchangeError::ClashIfetch
            }
            FabricError::ElementConflict { .. } => super::ExchangeError::ClashInstr,
            _ => super::ExchangeError::Other,
        }
    }
}

impl super::ExchangeFabric for RouteFabric {
    fn superstep(&self, step: &mut super::Superstep<'_>) -> Result<(), super::SimFault> {
        let mut pending = Vec::new();
        for (i, (t, zone)) in step.tiles.iter().zip(step.zones).enumerate() {
            if zone.is_none() {
                continue;
            }
            if let Some(call) = t.pending_row_call()? {
                pending.push((i, call));
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        let mut index = vec![None; usize::from(ipuc_target::ipu21::topology::TILE_COUNT)];
        for (i, t) in step.tiles.iter().enumerate() {
            if let Some(slot) = index.get_mut(t.id().index()) {
                *slot = Some(i);
            }
        }
        let pcs: Vec<(PhysicalTile, u32)> = pending
            .iter()
            .map(|&(i, c)| (step.tiles[i].id(), c.pc))
            .collect();
        let phase = step.index;
        let fault = |e: FabricError| {
            let tile = e.tile();
            let pc = pcs.iter().find(|p| p.0 == tile).map_or(0, |p| p.1);
            let kind = match e {
                FabricError::Witness(WitnessFault {
                    kind: WitnessFaultKind::UncoveredCsr { csr, value },
                    ..
                }) => super::FaultKind::ExchangeCsr { phase, csr, value },
                FabricError::Witness(fault) => super::FaultKind::ExchangeWitness {
                    phase,
                    error: e.class(),
                    fault,
                },
                _ => super::FaultKind::Exchange {
                    error: e.class(),
                    detail: format!("exchange phase {phase}: {e}"),
                },
            };
            super::SimFault {
                tile,
                context: super::ContextId::SUPERVISOR,
                pc,
                kind,
            }
        };
        let mut locations = Vec::with_capacity(pending.len());
        for &(i, call) in &pending {
            let tile = step.tiles[i].id();
            let t = &step.tiles[i];
            let csr = |c: Csr| t.supervisor_csr(c.0);
            for (c, covered) in [(Csr::INCOMING_MUX, XPIC_NEUTRAL), (Csr::INCOMING_DCOUNT, 1)] {
                let value = csr(c);
                if value != covered {
                    return Err(fault(FabricError::Witness(WitnessFault {
                        tile,
                        event: 0,
                        address: None,
                        kind: WitnessFaultKind::UncoveredCsr {
                            csr: u16::from(c.0),
                            value,
                        },
                    })));
                }
            }
            locations.push(RowLocation {
                tile,
                address: call.row,
                bases: RowBases {
                    outgoing: csr(Csr::OUTGOING_BASE),
                    incoming: csr(Csr::INCOMING_BASE),
                },
            });
        }
        let mut memory = DeviceMemory {
            tiles: step.tiles,
            index,
        };
        let (moved, rows) = execute_phase_rows(&locations, &mut memory).map_err(fault)?;
        step.words_moved += moved.words_moved;
        let label: std::sync::Arc<str> = std::sync::Arc::from(format!("exchange {}", step.index));
        for ((i, call), row) in pending.into_iter().zip(&rows) {
            step.tiles[i].finish_row_call(call, u64::from(row.events), label.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_target::ipu21::topology::LogicalTile;

    fn phys(l: u32) -> PhysicalTile {
        LogicalTile::new(l).unwrap().physical()
    }

    #[test]
    fn read_write_overlap_is_detected() {
        let mv = |src_tile, src_word, dst_tile, dst_word| MoveRun {
            dst_tile: phys(dst_tile),
            dst_word,
            src_tile: phys(src_tile),
            src_word,
            read_event: 0,
            write_event: 1,
            words: 1,
            per_event: 1,
        };
        let disjoint = [mv(0, 100, 1, 100), mv(0, 101, 1, 101), mv(1, 50, 0, 200)];
        assert!(!reads_meet_writes(&disjoint));
        let forwarding = [mv(0, 100, 1, 100), mv(0, 101, 1, 101), mv(1, 101, 2, 7)];
        assert!(reads_meet_writes(&forwarding));
    }
}
