//! Little-endian primitives with explicit lengths. The reader tracks its
//! byte offset so every error can say where it happened, and checks every
//! length against the bytes that remain *before* allocating.

use alloc::string::String;
use alloc::vec::Vec;

use super::error::{PackageError, Result};

/// Appends little-endian fields to a byte vector.
#[derive(Default)]
pub struct ByteWriter {
    bytes: Vec<u8>,
}

impl ByteWriter {
    pub fn new() -> Self {
        ByteWriter { bytes: Vec::new() }
    }
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
    pub fn u8(&mut self, v: u8) {
        self.bytes.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub fn raw(&mut self, v: &[u8]) {
        self.bytes.extend_from_slice(v);
    }
    /// A count or length as u32; larger values are an error, not a wrap.
    pub fn len32(&mut self, field: &'static str, length: usize) -> Result<()> {
        let v = u32::try_from(length).map_err(|_| PackageError::TooLarge { field, length })?;
        self.u32(v);
        Ok(())
    }
    /// u32 byte length followed by the bytes.
    pub fn blob(&mut self, field: &'static str, v: &[u8]) -> Result<()> {
        self.len32(field, v.len())?;
        self.raw(v);
        Ok(())
    }
    pub fn string(&mut self, field: &'static str, v: &str) -> Result<()> {
        self.blob(field, v.as_bytes())
    }
    /// Overwrites a u64 written earlier at `at` (section lengths).
    pub fn patch_u64(&mut self, at: usize, v: u64) {
        self.bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// Reads little-endian fields from a byte slice, remembering the offset.
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Reads never go past this offset (the end of the current section).
    limit: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        ByteReader {
            bytes,
            pos: 0,
            limit: bytes.len(),
        }
    }

    pub fn offset(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.limit - self.pos
    }

    /// Restricts reads to the next `length` bytes; returns the previous
    /// limit for [`ByteReader::pop_limit`].
    pub fn push_limit(&mut self, field: &'static str, length: u64) -> Result<usize> {
        let available = self.remaining() as u64;
        if length > available {
            return Err(PackageError::LengthPastEnd {
                offset: self.pos,
                field,
                length,
                available,
            });
        }
        let previous = self.limit;
        // length <= remaining, so this fits usize.
        self.limit = self.pos + length as usize;
        Ok(previous)
    }

    pub fn pop_limit(&mut self, previous: usize) {
        self.limit = previous;
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(PackageError::Truncated {
                offset: self.pos,
                field,
                needed: n,
                available: self.remaining(),
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(field, N)?);
        Ok(out)
    }

    pub fn u8(&mut self, field: &'static str) -> Result<u8> {
        Ok(self.take(field, 1)?[0])
    }
    pub fn u16(&mut self, field: &'static str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    pub fn u32(&mut self, field: &'static str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }
    pub fn u64(&mut self, field: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }
    pub fn fixed<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N]> {
        self.array(field)
    }

    /// A u32 element count whose elements take at least `min_element_bytes`
    /// each; rejects counts that could not fit in the remaining bytes, so a
    /// hostile count never causes a huge allocation.
    pub fn count(&mut self, field: &'static str, min_element_bytes: usize) -> Result<usize> {
        let offset = self.pos;
        let n = self.u32(field)?;
        let needed = u64::from(n) * min_element_bytes as u64;
        let available = self.remaining() as u64;
        if needed > available {
            return Err(PackageError::LengthPastEnd {
                offset,
                field,
                length: u64::from(n),
                available,
            });
        }
        Ok(n as usize)
    }

    /// u32 length followed by that many bytes.
    pub fn blob(&mut self, field: &'static str) -> Result<&'a [u8]> {
        let offset = self.pos;
        let n = self.u32(field)?;
        if n as usize > self.remaining() {
            return Err(PackageError::LengthPastEnd {
                offset,
                field,
                length: u64::from(n),
                available: self.remaining() as u64,
            });
        }
        self.take(field, n as usize)
    }

    pub fn string(&mut self, field: &'static str) -> Result<String> {
        let offset = self.pos;
        let raw = self.blob(field)?;
        core::str::from_utf8(raw)
            .map(String::from)
            .map_err(|_| PackageError::InvalidUtf8 { offset, field })
    }

    /// Every byte left before the limit (an opaque section's body).
    pub fn take_rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.pos..self.limit];
        self.pos = self.limit;
        rest
    }

    /// A reserved field that must read as zero.
    pub fn reserved_u16(&mut self, field: &'static str) -> Result<()> {
        let offset = self.pos;
        let v = self.u16(field)?;
        if v != 0 {
            return Err(PackageError::NonZeroReserved {
                offset,
                field,
                value: u32::from(v),
            });
        }
        Ok(())
    }
}
