//! The IR text parser on arbitrary text (seeded with the filetests): it
//! returns a verified graph or a located error, never panics, and a graph
//! it accepts prints a dump that reads back to the same dump.
#![no_main]

use ipuc_core::ir::Graph;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Graph::parse(text) {
        Ok(graph) => {
            let dump = graph.dump();
            let again = Graph::parse(&dump).expect("a dump reads back");
            assert_eq!(again.dump(), dump);
        }
        Err(e) => assert!(e.line >= 1 && e.column >= 1),
    }
});
