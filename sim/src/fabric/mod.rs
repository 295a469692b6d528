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
use rayon::prelude::*;
use std::sync::Arc;

pub use super::phase_memory::{csr_name, CopyRun, PhaseMemory, RowLocation, MAX_ROW_WORDS};
use super::witness::{singles, step_rows, MoveRun, SteppedRow, WitnessFault, WitnessFaultKind};

mod rules;
pub use rules::check_element_rules;
use rules::*;
mod memo;
use memo::Found;
pub use memo::PhaseMemo;
mod store;
pub use store::apply_moves;
use store::{apply_moves_knowing, bulk_copies, reads_meet_writes};

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
    execute_phase_remembering(calls, memory, None)
}

/// [`execute_phase`] with a memo: a phase whose stepped rows `memo` holds
/// moves the words found then ([`memo`]: the same moves, faults and
/// cycles as a fresh witness).
pub fn execute_phase_with(
    calls: &[RowLocation],
    memory: &mut (impl PhaseMemory + Sync),
    memo: &PhaseMemo,
) -> Result<PhaseRun, FabricError> {
    Ok(execute_phase_remembering(calls, memory, Some(memo))?.0)
}

/// [`execute_phase_rows`], with the memo when there is one: a phase it
/// holds (the same calls finding the same rows' words in SRAM) moves the
/// words found then, and a phase stepped here is offered to it.
fn execute_phase_remembering(
    calls: &[RowLocation],
    memory: &mut (impl PhaseMemory + Sync),
    memo: Option<&PhaseMemo>,
) -> Result<(PhaseRun, Vec<SteppedRow>), FabricError> {
    let remembered = memo.and_then(|m| m.get(calls, memory));
    let found = match remembered {
        Some(found) => found,
        None => {
            let found = Arc::new(witness_found(calls, memory)?);
            if let Some(m) = memo {
                m.insert(calls, found.clone());
            }
            found
        }
    };
    apply_moves_knowing(&found.moves, &found.copies, found.reads_meet_writes, memory)?;
    let run = PhaseRun {
        words_moved: found.moves.iter().map(|r| u64::from(r.words)).sum(),
        events: found.rows.iter().map(|r| r.events).max().unwrap_or(0),
    };
    Ok((run, found.rows.clone()))
}

/// What the witness finds for `calls`: the rows stepped from SRAM (and
/// their words, read before any moves), checked executable, the receivers
/// stepped and the §2.10 rules checked.
fn witness_found(
    calls: &[RowLocation],
    memory: &(impl PhaseMemory + Sync),
) -> Result<Found, FabricError> {
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
    // The rules' check and the overlap test of the stores read the moves
    // alone: the second core takes one (both were serial time).
    let (checked, meet) = rayon::join(
        || check_element_rules(&rows, &moves),
        || reads_meet_writes(&moves),
    );
    checked?;
    let copies = if meet {
        Vec::new()
    } else {
        bulk_copies(&moves)
    };
    // Every stepped row was read from memory, so its words can be read
    // again (if not, the memo does not keep the phase).
    let code = Found::code_of(&rows, memory).unwrap_or_default();
    Ok(Found {
        code,
        rows,
        moves,
        copies,
        reads_meet_writes: meet,
    })
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
#[derive(Debug, Default)]
pub struct RouteFabric {
    /// Phases already executed ([`memo`]).
    memo: PhaseMemo,
    /// The list [`DeviceMemory::copy_disjoint_runs`] fills, kept between
    /// phases so its pages are not faulted in again each time.
    copies: std::sync::Mutex<Vec<TileCopy>>,
}

/// One run of [`DeviceMemory::copy_disjoint_runs`]: device indices and
/// byte offsets into SRAM.
#[derive(Clone, Copy, Debug)]
struct TileCopy {
    dst: usize,
    dst_offset: usize,
    src: usize,
    src_offset: usize,
    bytes: usize,
}

/// Every tile's SRAM, shared by the copy tasks of
/// [`DeviceMemory::copy_disjoint_runs`].
struct SramBases(Vec<*mut u8>);

// SAFETY: the tasks sharing it write disjoint tiles and read only bytes
// no task writes (see `copy_disjoint_runs`).
unsafe impl Sync for SramBases {}

impl SramBases {
    /// Tile `i`'s SRAM (a method, so closures capture the `Sync` whole).
    fn at(&self, i: usize) -> *mut u8 {
        self.0[i]
    }
}

/// Physical tile id → device index, over all tiles of a superstep.
struct DeviceMemory<'a> {
    tiles: &'a mut [super::Tile],
    index: Vec<Option<usize>>,
    /// [`Self::copy_disjoint_runs`]'s list (the fabric's, lent).
    copies: Vec<TileCopy>,
}

impl DeviceMemory<'_> {
    /// The bytes of the `n` words from word address `addr` of `tile`, when
    /// the tile takes part and all of them are inside its SRAM.
    fn word_bytes(&self, tile: PhysicalTile, addr: u32, n: u32) -> Option<&[u8]> {
        let i = self.index.get(tile.index()).copied().flatten()?;
        let len = n.checked_mul(4)?;
        if !addr.is_multiple_of(4) {
            return None;
        }
        self.tiles[i].memory().slice(addr, len).ok()
    }
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
        let Some(bytes) = self.word_bytes(tile, addr, n) else {
            return false;
        };
        out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        true
    }
    fn holds_words(&self, tile: PhysicalTile, addr: u32, words: &[u32]) -> bool {
        u32::try_from(words.len())
            .ok()
            .and_then(|n| self.word_bytes(tile, addr, n))
            .is_some_and(|bytes| {
                bytes
                    .chunks_exact(4)
                    .zip(words)
                    .all(|(c, &w)| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) == w)
            })
    }
    fn readable(&self, tile: PhysicalTile, addr: u32, n: u32) -> bool {
        self.word_bytes(tile, addr, n).is_some()
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
    /// Every run's spans checked, each write accounted for on its tile in
    /// run order (as [`Self::copy_words`] does), then the copies made in
    /// parallel, one task per destination tile: a phase moves gigabytes
    /// over a run, and this was the largest part of the superstep's
    /// serial time.
    fn copy_disjoint_runs(&mut self, runs: &[CopyRun]) -> bool {
        // The fabric's reused list (dropped with its capacity on the rare
        // refusal below, where the caller copies run by run).
        let mut copies = std::mem::take(&mut self.copies);
        let this = &*self;
        let inside = |(t, addr): (PhysicalTile, u32), n: u32| this.readable(t, addr, n);
        let tile = |t: PhysicalTile| this.index.get(t.index()).copied().flatten();
        // Checked and listed in parallel (a phase copies ~10^5 runs:
        // checking them one by one into a fresh list was most of a
        // remembered phase's serial time).
        if !runs
            .par_iter()
            .all(|&(src, dst, n)| inside(src, n) && inside(dst, n))
        {
            return false;
        }
        // Every span is inside a tile of the superstep (checked above).
        let at = |(t, addr): (PhysicalTile, u32)| {
            let i = tile(t).unwrap_or_default();
            (
                i,
                (addr - ipuc_target::ipu21::sram::TILE_MEMORY_BASE) as usize,
            )
        };
        runs.par_iter()
            .map(|&(src, dst, n)| {
                let ((src, src_offset), (dst, dst_offset)) = (at(src), at(dst));
                TileCopy {
                    dst,
                    dst_offset,
                    src,
                    src_offset,
                    bytes: 4 * n as usize,
                }
            })
            .collect_into_vec(&mut copies);
        // Runs of one destination keep their order (a stable sort), which
        // they already have when each destination's runs are together, as
        // a phase's sorted moves give them.
        let mut seen = vec![false; self.tiles.len()];
        let together = copies
            .chunk_by(|a, b| a.dst == b.dst)
            .all(|g| !std::mem::replace(&mut seen[g[0].dst], true));
        if !together {
            copies.sort_by_key(|c| c.dst);
        }
        let groups: Vec<&[TileCopy]> = copies.chunk_by(|a, b| a.dst == b.dst).collect();
        // Each write counted and the decoded instruction words it covers
        // dropped, as a copy run by run would.
        for g in &groups {
            self.tiles[g[0].dst]
                .memory_mut()
                .account_writes(g.iter().map(|c| (c.dst_offset, c.bytes)));
        }
        let bases = SramBases(
            self.tiles
                .iter_mut()
                .map(|t| t.memory_mut().bytes_ptr())
                .collect(),
        );
        groups.into_par_iter().for_each(|group| {
            for c in group {
                // SAFETY: both spans were checked inside their tiles' SRAM;
                // only this task writes tile `c.dst`; the caller guarantees
                // that no run reads a word any run writes, so no byte read
                // here is written concurrently; no reference to any tile's
                // SRAM lives while the tasks run (`self` is borrowed
                // mutably for the whole call).
                unsafe {
                    std::ptr::copy(
                        bases.at(c.src).add(c.src_offset),
                        bases.at(c.dst).add(c.dst_offset),
                        c.bytes,
                    );
                }
            }
        });
        self.copies = copies;
        true
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

/// A fabric error of exchange phase `phase` as the simulator's fault, at
/// the PC of the failing tile's row call (`pcs`): an uncovered CSR and a
/// witness fault keep their own kinds.
fn phase_fault(e: FabricError, phase: u64, pcs: &[(PhysicalTile, u32)]) -> super::SimFault {
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
        let fault = |e: FabricError| phase_fault(e, phase, &pcs);
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
            copies: std::mem::take(&mut *self.copies.lock().unwrap_or_else(|e| e.into_inner())),
        };
        let executed = execute_phase_remembering(&locations, &mut memory, Some(&self.memo));
        *self.copies.lock().unwrap_or_else(|e| e.into_inner()) = memory.copies;
        let (moved, rows) = executed.map_err(fault)?;
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
