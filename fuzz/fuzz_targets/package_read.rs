//! Package reader on arbitrary bytes: must never panic, and any package it
//! accepts must re-encode to exactly the same bytes (one encoding per package).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(package) = ipuc_core::package::read(data) {
        let bytes = ipuc_core::package::write(&package).expect("an accepted package is valid");
        assert_eq!(bytes, data, "accepted package is not canonical");
    }
});
