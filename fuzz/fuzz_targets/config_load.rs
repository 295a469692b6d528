//! HF `config.json` loader on arbitrary text: parsing, validation and the
//! device limits never panic, and a config they accept builds a graph (one
//! or two layers, a small batch) or fails with a typed error — quickly,
//! since the limits bound every size before anything is allocated.
#![no_main]

use ipuc::model::{build_siglip, ModelOptions, VisionConfig, DEVICE_SRAM_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = VisionConfig::from_json(text) else {
        return;
    };
    // Accepted configs fit the device at one layer and one image.
    let fp = config.footprint(1, 1, 1, 2);
    for bytes in [fp.weights, fp.pixels, fp.activation] {
        assert!(bytes.is_some_and(|b| b <= DEVICE_SRAM_BYTES), "{config:?}");
    }
    // Keep each execution small: at most two layers, batch 1 or 2.
    let batch = 1 + data.len() % 2;
    let layers = config.num_hidden_layers.min(2);
    if config.num_tokens() > 4096 || config.hidden_size > 4096 {
        return;
    }
    let options = ModelOptions {
        vit_layers: Some(layers),
        vit_batch: batch,
        ..ModelOptions::default()
    };
    if let Ok(model) = build_siglip(&config, &options) {
        model.graph.verify().expect("a built model verifies");
        assert_eq!(model.layers, layers);
    }
});
