//! The byte reader the structured fuzz targets draw their cases from: each
//! read takes the next input bytes (little-endian), and an exhausted input
//! reads as zeros, so every input decodes to some case. Targets add their
//! own readers (`impl Bytes<'_>`) on top of these.
#![allow(dead_code)] // each target uses some of the widths

pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
}
