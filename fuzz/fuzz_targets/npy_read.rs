//! `.npy` reader on arbitrary bytes, through its public path-based entry
//! (`NpyArray::read`, what `--input` uses): never panics; an accepted array
//! has as many elements as its shape says.
#![no_main]

use ipuc::input::NpyArray;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("ipuc-fuzz-npy-{}.npy", std::process::id()));
    std::fs::write(&path, data).expect("scratch file");
    match NpyArray::read(&path) {
        Ok(a) => {
            let n = a.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
            assert_eq!(n, Some(a.data.len()), "{:?}", a.shape);
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
