//! What the exchange fabric and its witness share: word access to the tiles
//! of a phase ([`PhaseMemory`]) and where each tile's row is
//! ([`RowLocation`]). Its own module so the witness (which steps rows) and
//! the fabric (which executes them) do not import each other.

use ipuc_target::ipu21::exchange_model::RowBases;
use ipuc_target::ipu21::isa::Csr;
use ipuc_target::ipu21::topology::PhysicalTile;

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
    /// Appends the `n` words from byte `addr` of `tile` to `out`, all or
    /// none: `false` (and nothing appended) when any is outside memory.
    fn read_words(&self, tile: PhysicalTile, addr: u32, n: u32, out: &mut Vec<u32>) -> bool {
        let start = out.len();
        for k in 0..n {
            match self.read_u32(tile, addr.wrapping_add(4 * k)) {
                Some(w) => out.push(w),
                None => {
                    out.truncate(start);
                    return false;
                }
            }
        }
        true
    }
    /// Whether the words from byte `addr` of `tile` on are `words`
    /// (`false` when any is outside memory).
    fn holds_words(&self, tile: PhysicalTile, addr: u32, words: &[u32]) -> bool {
        (0..words.len() as u32)
            .zip(words)
            .all(|(k, &w)| self.read_u32(tile, addr.wrapping_add(4 * k)) == Some(w))
    }
    /// Stores `values` from byte `addr` of `tile` on, all or none: `false`
    /// (and nothing stored) when any word is outside memory.
    fn write_words(&mut self, tile: PhysicalTile, addr: u32, values: &[u32]) -> bool {
        let n = values.len() as u32;
        if (0..n).any(|k| self.read_u32(tile, addr.wrapping_add(4 * k)).is_none()) {
            return false;
        }
        for (k, &v) in values.iter().enumerate() {
            self.write_u32(tile, addr.wrapping_add(4 * k as u32), v);
        }
        true
    }
    /// Whether the `n` words from byte `addr` of `tile` can all be read.
    fn readable(&self, tile: PhysicalTile, addr: u32, n: u32) -> bool {
        (0..n).all(|k| self.read_u32(tile, addr.wrapping_add(4 * k)).is_some())
    }
    /// Copies `n` words from byte `src_addr` of `src` to byte `dst_addr` of
    /// `dst` (spans that do not overlap), all or none: `false` (and nothing
    /// stored) when any word of either span is outside memory.
    fn copy_words(
        &mut self,
        (src, src_addr): (PhysicalTile, u32),
        (dst, dst_addr): (PhysicalTile, u32),
        n: u32,
    ) -> bool {
        let mut values = Vec::with_capacity(n as usize);
        self.read_words(src, src_addr, n, &mut values) && self.write_words(dst, dst_addr, &values)
    }
    /// Copies every run `(src, dst, words)` of `runs` as [`Self::copy_words`]
    /// would one after another, when no word is both read and written by
    /// them and every span is inside memory; `false` (and nothing stored)
    /// when the memory cannot do that at once (the caller then copies run
    /// by run). A memory may copy the runs in any order that keeps the
    /// order of the runs writing one tile: no run reads what another
    /// writes.
    fn copy_disjoint_runs(&mut self, runs: &[CopyRun]) -> bool {
        let _ = runs;
        false
    }
}

/// One run of words to copy: source (tile, byte address), destination
/// (tile, byte address), words.
pub type CopyRun = ((PhysicalTile, u32), (PhysicalTile, u32), u32);

/// Upper bound on the words read when decoding a row from SRAM.
pub const MAX_ROW_WORDS: usize = 1 << 16;

/// A tile taking part in a phase, where its row is and the base CSRs it
/// runs with (the fabric's own view; [`super::row_call::RowCall`] is the
/// supervisor's pending call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RowLocation {
    pub tile: PhysicalTile,
    /// Byte address of the row's first word.
    pub address: u32,
    /// `$OUTGOING_BASE` / `$INCOMING_BASE` when the row is called.
    pub bases: RowBases,
}

/// A CSR's name, or its number.
pub fn csr_name(csr: u16) -> String {
    match u8::try_from(csr).ok().and_then(|c| Csr(c).name()) {
        Some(name) => name.to_string(),
        None => format!("CSR {csr:#x}"),
    }
}
