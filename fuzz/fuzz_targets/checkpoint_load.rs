//! safetensors checkpoint loader on arbitrary bytes: opening (header
//! parsing, truncation diagnosis) and binding to the parameters of a small
//! SigLIP (the `vision-f16` fixture's config) never panic; an accepted
//! binding has exactly the shapes the model asked for.
#![no_main]

use std::path::PathBuf;

use ipuc::model::{build_siglip, ModelOptions, VisionConfig};
use ipuc::weights::{canonical_name, Checkpoint, WeightSpec};
use libfuzzer_sys::fuzz_target;

const CONFIG: &str = r#"{"hidden_size": 32, "image_size": 42, "intermediate_size": 64,
  "num_attention_heads": 2, "num_channels": 3, "num_hidden_layers": 2, "patch_size": 14}"#;

fuzz_target!(|data: &[u8]| {
    let Ok(checkpoint) = Checkpoint::from_bytes(PathBuf::from("fuzz.safetensors"), data.to_vec())
    else {
        return;
    };
    let _ = checkpoint.encoder_layers();
    let config = VisionConfig::from_json(CONFIG).unwrap();
    let model = build_siglip(&config, &ModelOptions::default()).unwrap();
    let specs: Vec<WeightSpec> = model.parameters.iter().map(WeightSpec::from).collect();
    match checkpoint.bind(&specs) {
        Ok(weights) => {
            for spec in &specs {
                let t = weights.get(canonical_name(&spec.name)).expect("every spec bound");
                assert_eq!(t.shape, spec.shape);
                assert_eq!(t.data.len(), spec.shape.iter().product::<usize>());
            }
        }
        Err(e) => {
            assert!(e.to_string().contains("fuzz.safetensors"), "{e}");
        }
    }
});
