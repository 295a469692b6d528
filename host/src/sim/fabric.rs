//! The exchange fabric: executes one phase's exchange rows bit-exactly with
//! the route timing model (`docs/facts/ipu21-target.md` §2.4–§2.5).
//!
//! Rows are decoded from the tiles' SRAM at run time (so words patched by the
//! supervisor take effect), replayed with `ipuc_core::exchange::replay` — the
//! same semantics the compiler's checker proves rows against — and the words
//! are moved in event order: a word is read from the sender at its send event
//! and written to the receiver at its memory-write event. A receiver that
//! selects a source that is not sending, is still attached or writing when
//! its row returns, or writes outside SRAM raises a [`FabricError`] naming the
//! tile, event and address.

use ipuc_core::exchange::{
    decode_row, replay, DecodedRow, ReceiveError, RowDecodeError, TileRowView, WordMove,
};
use ipuc_core::target::topology::PhysicalTile;

/// Word access to the memories of all tiles taking part in a phase.
pub trait PhaseMemory {
    /// The word at byte `addr` of `tile`, or `None` outside its memory.
    fn read_u32(&self, tile: PhysicalTile, addr: u32) -> Option<u32>;
    /// Stores a word; `false` outside memory.
    fn write_u32(&mut self, tile: PhysicalTile, addr: u32, value: u32) -> bool;
    /// Row words starting at byte `addr` of `tile` (up to `max_words`).
    fn row_words(&self, tile: PhysicalTile, addr: u32, max_words: usize) -> Vec<u32> {
        let mut words = Vec::new();
        for k in 0..max_words as u32 {
            match self.read_u32(tile, addr + 4 * k) {
                Some(w) => words.push(w),
                None => break,
            }
        }
        words
    }
}

/// What stopped a phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FabricError {
    /// A tile's row is not a decodable exchange row.
    Row {
        tile: PhysicalTile,
        address: u32,
        error: RowDecodeError,
    },
    /// A receive error, as the receiving tile would raise it.
    Receive(ReceiveError),
    /// A sender's source word lies outside its memory.
    SourceOutsideMemory {
        tile: PhysicalTile,
        event: u32,
        address: u32,
    },
}

impl std::fmt::Display for FabricError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FabricError::Row {
                tile,
                address,
                error,
            } => write!(f, "{tile}: exchange row at {address:#x}: {error:?}"),
            FabricError::Receive(e) => match *e {
                ReceiveError::NoSender {
                    tile,
                    event,
                    source,
                } => write!(
                    f,
                    "{tile}: receive error at event {event}: selected source {source} is not sending on this route"
                ),
                ReceiveError::Overrun {
                    tile,
                    event,
                    address,
                } => write!(
                    f,
                    "{tile}: receive overrun at event {event} (address {address:#x}): row returned before the receive finished"
                ),
                ReceiveError::OutsideMemory {
                    tile,
                    event,
                    address,
                } => write!(
                    f,
                    "{tile}: receive error at event {event}: write to {address:#x} outside memory"
                ),
                other => write!(f, "receive error: {other:?}"),
            },
            FabricError::SourceOutsideMemory {
                tile,
                event,
                address,
            } => write!(
                f,
                "{tile}: send at event {event} reads {address:#x} outside memory"
            ),
        }
    }
}

impl std::error::Error for FabricError {}

/// Summary of one executed phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseRun {
    /// Words written on receivers.
    pub words_moved: u64,
    /// Events until the longest row returned.
    pub events: u32,
}

/// Upper bound on the words read when decoding a row from SRAM.
pub const MAX_ROW_WORDS: usize = 1 << 16;

/// A tile taking part in a phase and where its row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowCall {
    pub tile: PhysicalTile,
    /// Byte address of the row's first word.
    pub address: u32,
}

/// Decodes each tile's row from memory and executes the phase.
pub fn execute_phase(
    calls: &[RowCall],
    memory: &mut impl PhaseMemory,
) -> Result<PhaseRun, FabricError> {
    let mut decoded: Vec<(RowCall, DecodedRow)> = Vec::with_capacity(calls.len());
    for &call in calls {
        let words = memory.row_words(call.tile, call.address, MAX_ROW_WORDS);
        let row = decode_row(&words).map_err(|error| FabricError::Row {
            tile: call.tile,
            address: call.address,
            error,
        })?;
        decoded.push((call, row));
    }
    execute_decoded(&decoded, memory)
}

/// Executes already-decoded rows (each with the address it is fetched from).
pub fn execute_decoded(
    rows: &[(RowCall, DecodedRow)],
    memory: &mut impl PhaseMemory,
) -> Result<PhaseRun, FabricError> {
    let views: Vec<TileRowView<'_>> = rows
        .iter()
        .map(|(call, row)| TileRowView {
            tile: call.tile,
            row,
            fetch_span: Some((call.address, call.address + 4 * row.words as u32)),
        })
        .collect();
    let moves = replay(&views).map_err(FabricError::Receive)?;
    apply_moves(&moves, memory)?;
    Ok(PhaseRun {
        words_moved: moves.len() as u64,
        events: rows.iter().map(|(_, r)| r.events).max().unwrap_or(0),
    })
}

fn tile_of(id: u16) -> PhysicalTile {
    // Move tile ids come from validated PhysicalTile values.
    PhysicalTile::new(u32::from(id)).expect("replay produced a valid tile id")
}

/// Moves words in event order. When no word is both read and written in the
/// phase (the usual case) order cannot matter and all reads happen first.
fn apply_moves(moves: &[WordMove], memory: &mut impl PhaseMemory) -> Result<(), FabricError> {
    let mut reads: Vec<(u16, u32)> = moves.iter().map(|m| (m.src_tile, m.src_word)).collect();
    reads.sort_unstable();
    reads.dedup();
    // `moves` is sorted by destination.
    let overlap = {
        let (mut i, mut j, mut hit) = (0, 0, false);
        while i < reads.len() && j < moves.len() {
            let w = (moves[j].dst_tile, moves[j].dst_word);
            match reads[i].cmp(&w) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    hit = true;
                    break;
                }
            }
        }
        hit
    };
    let read = |memory: &dyn Fn(PhysicalTile, u32) -> Option<u32>, m: &WordMove| {
        memory(tile_of(m.src_tile), m.src_word.wrapping_mul(4)).ok_or(
            FabricError::SourceOutsideMemory {
                tile: tile_of(m.src_tile),
                event: m.read_event,
                address: m.src_word.wrapping_mul(4),
            },
        )
    };
    let write = |memory: &mut dyn FnMut(PhysicalTile, u32, u32) -> bool, m: &WordMove, v: u32| {
        if memory(tile_of(m.dst_tile), m.dst_word.wrapping_mul(4), v) {
            Ok(())
        } else {
            Err(FabricError::Receive(ReceiveError::OutsideMemory {
                tile: tile_of(m.dst_tile),
                event: m.write_event,
                address: m.dst_word.wrapping_mul(4),
            }))
        }
    };
    if !overlap {
        let mut values = Vec::with_capacity(moves.len());
        for m in moves {
            values.push(read(&|t, a| memory.read_u32(t, a), m)?);
        }
        for (m, v) in moves.iter().zip(values) {
            write(&mut |t, a, v| memory.write_u32(t, a, v), m, v)?;
        }
        return Ok(());
    }
    // Exact order: (event, reads before writes at one event, index).
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
            write(&mut |t, a, v| memory.write_u32(t, a, v), m, values[i])?;
        } else {
            values[i] = read(&|t, a| memory.read_u32(t, a), m)?;
        }
    }
    Ok(())
}

/// Sparse per-tile memory images: only the byte ranges a caller maps exist.
/// Used by benchmarks and tests that need 1472 tiles without 1472 × 624 KiB.
#[derive(Clone, Debug, Default)]
pub struct SparseTileMemory {
    /// Per tile: sorted, disjoint (start address, bytes).
    regions: std::collections::BTreeMap<u16, Vec<(u32, Vec<u8>)>>,
}

impl SparseTileMemory {
    /// Maps `[addr, addr + data.len())` on `tile` with initial contents.
    pub fn map(&mut self, tile: PhysicalTile, addr: u32, data: Vec<u8>) {
        let list = self.regions.entry(tile.get()).or_default();
        list.push((addr, data));
        list.sort_by_key(|r| r.0);
    }
    /// The mapped region containing `[addr, addr+len)`, as a slice.
    pub fn slice(&self, tile: PhysicalTile, addr: u32, len: u32) -> Option<&[u8]> {
        let list = self.regions.get(&tile.get())?;
        let idx = list.partition_point(|r| r.0 <= addr).checked_sub(1)?;
        let (start, data) = &list[idx];
        let off = (addr - start) as usize;
        data.get(off..off + len as usize)
    }
    fn slice_mut(&mut self, tile: PhysicalTile, addr: u32, len: u32) -> Option<&mut [u8]> {
        let list = self.regions.get_mut(&tile.get())?;
        let idx = list.partition_point(|r| r.0 <= addr).checked_sub(1)?;
        let (start, data) = &mut list[idx];
        let off = (addr - *start) as usize;
        data.get_mut(off..off + len as usize)
    }
    /// All mapped regions of all tiles.
    pub fn regions(&self) -> impl Iterator<Item = (u16, u32, &[u8])> {
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
