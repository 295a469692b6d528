//! Decoder + disassembler on arbitrary words: never panics, and whatever
//! decodes re-encodes to exactly the same words.
#![no_main]

use ipuc_target::ipu21::isa::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut i = 0;
    while i < words.len() {
        match decode(&words[i..]) {
            Ok((instr, used)) => {
                let text = instr.to_string();
                assert!(!text.is_empty());
                let enc = encode(&instr).expect("a decoded instruction encodes");
                assert_eq!(enc.words(), &words[i..i + used], "{text}");
                i += used;
            }
            Err(e) => {
                let _ = e.to_string();
                i += 1;
            }
        }
    }
});
