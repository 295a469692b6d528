//! The FP32 reference against HF transformers on the committed fixtures
//! (tests/fixtures/README.md): both outputs within 1e-4 for every
//! checkpoint layout and dtype; device numerics differ but stay close.

use std::path::{Path, PathBuf};

use ipuc::cli::workload::{InputArgs, WorkloadArgs};
use ipuc::input::{NpyArray, PixelValues};
use ipuc::model::{build_siglip, ModelOptions, SiglipModel, VisionConfig};
use ipuc::reference::{run_siglip, Numerics};
use ipuc::weights::{weights_for, WeightSource, Weights};

const FIXTURES: [&str; 4] = [
    "full-f32",
    "vision-noprefix-f32",
    "vision-bf16",
    "vision-f16",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/siglip")
        .join(name)
}

fn load(name: &str, options: ModelOptions) -> (SiglipModel, Weights, PixelValues) {
    let dir = fixture(name);
    let config =
        VisionConfig::from_json(&std::fs::read_to_string(dir.join("config.json")).unwrap())
            .unwrap();
    let pixels = PixelValues::from_npy(
        &dir.join("pixel_values.npy"),
        None,
        config.num_channels,
        config.image_size,
    )
    .unwrap();
    let options = ModelOptions {
        vit_batch: pixels.batch(),
        ..options
    };
    let model = build_siglip(&config, &options).unwrap();
    let weights = weights_for(&model, &WeightSource::Checkpoint(dir)).unwrap();
    (model, weights, pixels)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn fp32_reference_matches_transformers() {
    for name in FIXTURES {
        let (model, weights, pixels) = load(name, ModelOptions::default());
        let out = run_siglip(&model, &weights, &pixels, (Numerics::Fp32, &[]), None).unwrap();
        let dir = fixture(name);
        let hidden = NpyArray::read(&dir.join("last_hidden_state.npy")).unwrap();
        let pooled = NpyArray::read(&dir.join("pooler_output.npy")).unwrap();
        assert_eq!(out.last_hidden_state.shape, hidden.shape, "{name}");
        let pooler = out.pooler_output.as_ref().unwrap();
        assert_eq!(pooler.shape, pooled.shape, "{name}");
        let eh = max_abs_diff(&out.last_hidden_state.data, &hidden.data);
        let ep = max_abs_diff(&pooler.data, &pooled.data);
        eprintln!("{name}: max |Δ| hidden {eh:.2e}, pooled {ep:.2e}");
        assert!(eh <= 1e-4, "{name}: last_hidden_state max abs error {eh}");
        assert!(ep <= 1e-4, "{name}: pooler_output max abs error {ep}");
    }
}

#[test]
fn fused_qkv_and_fewer_layers_still_bind() {
    // Fused QKV concatenates q/k/v from the checkpoint: same numbers.
    let (model, weights, pixels) = load("vision-noprefix-f32", ModelOptions::default());
    let plain = run_siglip(&model, &weights, &pixels, (Numerics::Fp32, &[]), None).unwrap();
    let fused_opts = ModelOptions {
        fuse_qkv: true,
        ..ModelOptions::default()
    };
    let (fmodel, fweights, _) = load("vision-noprefix-f32", fused_opts);
    let fused = run_siglip(&fmodel, &fweights, &pixels, (Numerics::Fp32, &[]), None).unwrap();
    assert!(max_abs_diff(&plain.last_hidden_state.data, &fused.last_hidden_state.data) < 1e-5);
    // A 3-layer checkpoint bound to a 1-layer model: deeper layers ignored.
    let one = ModelOptions {
        vit_layers: Some(1),
        ..ModelOptions::default()
    };
    let (m1, w1, _) = load("vision-noprefix-f32", one);
    assert_eq!(m1.layers, 1);
    let out = run_siglip(&m1, &w1, &pixels, (Numerics::Fp32, &[]), None).unwrap();
    assert!(max_abs_diff(&out.last_hidden_state.data, &plain.last_hidden_state.data) > 1e-3);
}

#[test]
fn device_numerics_differ_but_stay_close() {
    for (name, fp8) in [("full-f32", Some(-4)), ("vision-f16", None)] {
        let options = ModelOptions {
            fp8_scale: fp8,
            ..ModelOptions::default()
        };
        let (model, weights, pixels) = load(name, options);
        let exact = run_siglip(&model, &weights, &pixels, (Numerics::Fp32, &[]), None).unwrap();
        let device = run_siglip(&model, &weights, &pixels, (Numerics::Device, &[]), None).unwrap();
        let d = max_abs_diff(
            &exact.last_hidden_state.data,
            &device.last_hidden_state.data,
        );
        let p = max_abs_diff(
            &exact.pooler_output.as_ref().unwrap().data,
            &device.pooler_output.as_ref().unwrap().data,
        );
        eprintln!("{name} fp8 {fp8:?}: device vs fp32 max |Δ| hidden {d:.3e}, pooled {p:.3e}");
        assert!(
            d > 1e-5 && p > 1e-5,
            "{name}: device numerics changed nothing ({d}, {p})"
        );
        // FP16 activations: ~1e-3 relative; FP8 weights (3 mantissa bits): a few percent.
        let bound = if fp8.is_some() { 0.5 } else { 0.05 };
        assert!(
            d < bound && p < bound,
            "{name}: device numerics too far ({d}, {p})"
        );
    }
}

#[test]
fn cli_writes_outputs_that_match_transformers() {
    let dir = fixture("vision-bf16");
    let tmp = std::env::temp_dir().join(format!("ipuc-ref-cli-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let (emb, hid) = (tmp.join("emb.npy"), tmp.join("hid.npy"));
    let args = ipuc::cli::reference::Args {
        model: WorkloadArgs {
            checkpoint: Some(dir.clone()),
            ..WorkloadArgs::default()
        },
        input: InputArgs {
            image: Vec::new(),
            images: None,
            input: Some(dir.join("pixel_values.npy")),
        },
        output_embedding: emb.clone(),
        output_hidden: Some(hid.clone()),
        numerics: Numerics::Fp32,
    };
    ipuc::cli::reference::run(args).unwrap();
    for (ours, theirs) in [(emb, "pooler_output.npy"), (hid, "last_hidden_state.npy")] {
        let a = NpyArray::read(&ours).unwrap();
        let b = NpyArray::read(&dir.join(theirs)).unwrap();
        assert_eq!(a.shape, b.shape);
        assert!(max_abs_diff(&a.data, &b.data) <= 1e-4, "{theirs}");
    }
}
