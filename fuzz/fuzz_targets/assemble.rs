//! Assembler + linker on arbitrary UTF-8: never panics; errors format.
#![no_main]

use ipuc_core::asm::assemble_and_link;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        match assemble_and_link("fuzz.S", src, 0x4C010) {
            Ok(image) => {
                let _ = image.to_le_bytes();
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
});
