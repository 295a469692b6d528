//! Package reader on arbitrary bytes: must never panic. The bytes are read
//! as given (the digest almost never matches: rejected first) and sealed with
//! their digest as a package body, so the section checks behind the digest
//! are fuzzed too; any body it accepts must re-encode to exactly the same
//! bytes (one encoding per package). The description section the target
//! carries opaque is then read as the host reads it, and an accepted one
//! at the current version re-encodes to the same body.
#![no_main]

use ipuc_core::description;
use ipuc_target::package;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = package::read(data);
    let sealed = package::seal(data.to_vec());
    if let Ok(p) = package::read(&sealed) {
        let bytes = package::write(&p).expect("an accepted package is valid");
        assert_eq!(bytes, sealed, "accepted package is not canonical");
        if let Ok(d) = description::read(&p) {
            if p.description.version == description::DESCRIPTION_VERSION {
                let again = description::encode(&d).expect("an accepted description encodes");
                assert_eq!(again, p.description, "accepted description is not canonical");
            }
        }
    }
});
