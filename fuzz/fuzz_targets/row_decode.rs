//! The exchange row decoder on arbitrary words: it must return a timeline or
//! a typed error, never panic; a decoded row must survive shape
//! normalisation, address-field listing and a single-tile replay.
#![no_main]

use ipuc_core::exchange::{decode_row, replay, RowBases, TileRowView};
use ipuc_core::patch::{address_fields, row_shape};
use ipuc_target::ipu21::topology::PhysicalTile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let words: Vec<u32> = data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if let Ok(row) = decode_row(&words) {
        assert!(row.words <= words.len());
        let shape = row_shape(&words).expect("a decodable row has a shape");
        assert_eq!(shape.len(), row.words);
        let fields = address_fields(&words).expect("a decodable row lists its fields");
        assert!(fields.iter().all(|f| f.word_index < row.words));
        // Bound the replay's work: it walks every selected event.
        if row.events < 1 << 16 {
            let tile = PhysicalTile::new(u32::from(data.first().copied().unwrap_or(0)) * 5).unwrap();
            let _ = replay(&[TileRowView {
                tile,
                row: &row,
                bases: RowBases::ZERO,
                fetch_span: Some((0x5_0000, 0x5_0000 + 4 * row.words as u32)),
            }]);
        }
    }
});
