//! Tile SRAM with a per-word decode cache for the executable region.
//!
//! SRAM is kept as little-endian bytes so codelets can view tensors directly.
//! Instruction words below the executable limit are decoded once and cached;
//! every write path (interpreter stores, codelets, exchange, loading)
//! invalidates the cached words it touches, so patched rows and self-modifying
//! runtime code are always re-decoded.

use ipuc_target::ipu21::sram::{
    EXECUTABLE_MEMORY_LIMIT as EXECUTABLE_LIMIT, TILE_MEMORY_BASE as SRAM_BASE,
    TILE_MEMORY_SIZE as SRAM_SIZE,
};

use super::op::Op;

/// Number of instruction words in the executable region.
const CODE_WORDS: usize = ((EXECUTABLE_LIMIT - SRAM_BASE) / 4) as usize;
/// Decode-cache chunk (words). Chunks are allocated on first fetch, so a
/// tile only pays for the code it runs (a full cache would be ~1 MiB per
/// tile, 1.5 GiB for a C600).
const CHUNK_WORDS: usize = 256;
const CHUNKS: usize = CODE_WORDS.div_ceil(CHUNK_WORDS);

type Chunk = Box<[CachedOp; CHUNK_WORDS]>;

/// A decode-cache slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CachedOp {
    /// Not decoded since the last write to this word.
    Stale,
    /// Decoded instruction.
    Op(Op),
}

/// Why an SRAM access was refused (converted into a fault by the caller,
/// which knows the tile, context and PC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// `addr` is not a multiple of the access width.
    Misaligned { addr: u32, width: u32 },
    /// `[addr, addr + width)` is not inside SRAM.
    OutOfRange { addr: u32, width: u32 },
}

impl std::fmt::Display for AccessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            AccessError::Misaligned { addr, width } => {
                write!(f, "{width}-byte access at {addr:#x} is misaligned")
            }
            AccessError::OutOfRange { addr, width } => {
                write!(f, "{width}-byte access at {addr:#x} is outside SRAM")
            }
        }
    }
}

impl std::error::Error for AccessError {}

/// One tile's 624 KiB of SRAM (`docs/facts/ipu21-target.md §1.2`).
#[derive(Clone)]
pub struct TileMemory {
    bytes: Vec<u8>,
    code: Vec<Option<Chunk>>,
    /// Stores and mutable views handed out so far: the progress watch
    /// (`watch.rs`) compares it instead of the bytes.
    writes: u64,
}

impl Default for TileMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for TileMemory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TileMemory")
            .field("base", &format_args!("{SRAM_BASE:#x}"))
            .field("size", &self.bytes.len())
            .finish()
    }
}

impl TileMemory {
    /// Zero-filled SRAM.
    pub fn new() -> Self {
        Self {
            bytes: vec![0; SRAM_SIZE as usize],
            code: (0..CHUNKS).map(|_| None).collect(),
            writes: 0,
        }
    }

    /// How many times SRAM was written (stores, codelet outputs, exchange,
    /// loading) since the tile was made; grows with every write.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// The whole SRAM, byte `i` at address `SRAM_BASE + i`.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn check(addr: u32, width: u32) -> Result<usize, AccessError> {
        if !addr.is_multiple_of(width) {
            return Err(AccessError::Misaligned { addr, width });
        }
        Self::range(addr, width)
    }

    fn range(addr: u32, len: u32) -> Result<usize, AccessError> {
        if ipuc_target::ipu21::sram::in_sram(addr, len) {
            Ok((addr - SRAM_BASE) as usize)
        } else {
            Err(AccessError::OutOfRange { addr, width: len })
        }
    }

    /// Aligned 32-bit load.
    #[inline]
    pub fn read_u32(&self, addr: u32) -> Result<u32, AccessError> {
        let i = Self::check(addr, 4)?;
        let mut w = [0u8; 4];
        w.copy_from_slice(&self.bytes[i..i + 4]);
        Ok(u32::from_le_bytes(w))
    }

    /// Aligned 32-bit store.
    #[inline]
    pub fn write_u32(&mut self, addr: u32, value: u32) -> Result<(), AccessError> {
        let i = Self::check(addr, 4)?;
        self.writes += 1;
        self.bytes[i..i + 4].copy_from_slice(&value.to_le_bytes());
        if addr < EXECUTABLE_LIMIT {
            let w = i / 4;
            if let Some(chunk) = &mut self.code[w / CHUNK_WORDS] {
                chunk[w % CHUNK_WORDS] = CachedOp::Stale;
            }
        }
        Ok(())
    }

    /// Read-only view of `[addr, addr + len)`.
    pub fn slice(&self, addr: u32, len: u32) -> Result<&[u8], AccessError> {
        let i = Self::range(addr, len)?;
        Ok(&self.bytes[i..i + len as usize])
    }

    /// Mutable view of `[addr, addr + len)`; invalidates decoded words in it.
    pub fn slice_mut(&mut self, addr: u32, len: u32) -> Result<&mut [u8], AccessError> {
        let i = Self::range(addr, len)?;
        self.writes += 1;
        self.invalidate(i, len as usize);
        Ok(&mut self.bytes[i..i + len as usize])
    }

    /// Accounts for writes to `spans` (byte offset into SRAM, length)
    /// made through [`Self::bytes_ptr`], as [`Self::slice_mut`] of each
    /// would: one write each, the decoded words they cover dropped.
    pub(crate) fn account_writes(&mut self, spans: impl Iterator<Item = (usize, usize)>) {
        for (offset, len) in spans {
            self.writes += 1;
            self.invalidate(offset, len);
        }
    }

    /// The first byte of SRAM, for copies between tiles in parallel
    /// ([`crate::fabric`]); the caller keeps every access inside SRAM and
    /// accounts for its writes with [`Self::account_writes`] first.
    pub(crate) fn bytes_ptr(&mut self) -> *mut u8 {
        self.bytes.as_mut_ptr()
    }

    /// Copy `data` into SRAM at `addr`.
    pub fn load(&mut self, addr: u32, data: &[u8]) -> Result<(), AccessError> {
        let len = u32::try_from(data.len()).map_err(|_| AccessError::OutOfRange {
            addr,
            width: u32::MAX,
        })?;
        self.slice_mut(addr, len)?.copy_from_slice(data);
        Ok(())
    }

    fn invalidate(&mut self, offset: usize, len: usize) {
        let code_bytes = CODE_WORDS * 4;
        if offset >= code_bytes || len == 0 {
            return;
        }
        let first = offset / 4;
        let last = ((offset + len).min(code_bytes)).div_ceil(4);
        for w in first..last {
            if let Some(chunk) = &mut self.code[w / CHUNK_WORDS] {
                chunk[w % CHUNK_WORDS] = CachedOp::Stale;
            }
        }
    }

    /// Decode-cache slot of an executable word (caller checked `addr`).
    #[inline]
    pub(crate) fn cached(&self, addr: u32) -> CachedOp {
        let w = ((addr - SRAM_BASE) / 4) as usize;
        match &self.code[w / CHUNK_WORDS] {
            Some(chunk) => chunk[w % CHUNK_WORDS],
            None => CachedOp::Stale,
        }
    }

    #[inline]
    pub(crate) fn set_cached(&mut self, addr: u32, op: Op) {
        let w = ((addr - SRAM_BASE) / 4) as usize;
        let chunk = self.code[w / CHUNK_WORDS]
            .get_or_insert_with(|| Box::new([CachedOp::Stale; CHUNK_WORDS]));
        chunk[w % CHUNK_WORDS] = CachedOp::Op(op);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_stores_are_little_endian_and_checked() {
        let mut m = TileMemory::new();
        m.write_u32(0x4C010, 0x1122_3344).unwrap();
        assert_eq!(m.slice(0x4C010, 4).unwrap(), &[0x44, 0x33, 0x22, 0x11]);
        assert_eq!(m.read_u32(0x4C010), Ok(0x1122_3344));
        assert_eq!(
            m.read_u32(0x4C012),
            Err(AccessError::Misaligned {
                addr: 0x4C012,
                width: 4
            })
        );
        assert_eq!(
            m.write_u32(0xE8000, 1),
            Err(AccessError::OutOfRange {
                addr: 0xE8000,
                width: 4
            })
        );
        assert!(m.read_u32(0x4BFFC).is_err());
        assert!(m.read_u32(0xE7FFC).is_ok());
    }

    #[test]
    fn writes_invalidate_decoded_words() {
        let mut m = TileMemory::new();
        m.set_cached(0x4C010, Op::Nop);
        m.set_cached(0x4C014, Op::Nop);
        m.write_u32(0x4C010, 0).unwrap();
        assert_eq!(m.cached(0x4C010), CachedOp::Stale);
        assert_eq!(m.cached(0x4C014), CachedOp::Op(Op::Nop));
        m.slice_mut(0x4C013, 2).unwrap()[0] = 1;
        assert_eq!(m.cached(0x4C014), CachedOp::Stale);
    }
}
