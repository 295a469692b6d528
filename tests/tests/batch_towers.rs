//! Batches (issue #41): the compiler plans N images at once — GEMMs,
//! LayerNorm and element-wise ops on N × tokens rows, attention per
//! (image, head) — and each image comes out as it would alone.
//! * a tiny checkpoint of each family at batch 3 with three distinct images
//!   passes against the FP32 reference image by image, and its first image
//!   (the fixture's) stays within the FP16 bound of transformers;
//! * with FP8 × FP8 GEMMs the batch equals the device-numerics reference
//!   bit for bit;
//! * a batch of two identical images gives two identical embeddings.

use std::path::{Path, PathBuf};

use ipuc::compile::{compile, CompileOptions};
use ipuc::device::simulated::{kernel_abi, SimDevice};
use ipuc::device::DeviceOutput;
use ipuc::input::{NpyArray, PixelValues};
use ipuc::model::{build_siglip, ModelOptions, SiglipModel, LAST_HIDDEN_STATE, POOLER_OUTPUT};
use ipuc::reference::{run_siglip, Numerics};
use ipuc::report::run::compare;
use ipuc::weights::{weights_for, WeightSource, Weights};
use ipuc_tests::device_inputs;

/// One tiny checkpoint per family (SigLIP's with its MAP head) and the
/// size its transformers outputs were made at.
const FAMILIES: [(&str, usize); 4] = [
    ("siglip-interp-f32", 24),
    ("clip-vision-f32", 28),
    ("vit-f32", 28),
    ("dinov2-bf16", 28),
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/towers")
        .join(name)
}

/// The fixture's image followed by `more` distinct variants of it
/// (negated, then scaled and shifted), or `more` copies when `same`.
fn batch_pixels(name: &str, size: usize, more: usize, same: bool) -> PixelValues {
    let one =
        PixelValues::from_npy(&fixture(name).join("pixel_values.npy"), Some(1), 3, size).unwrap();
    let mut data = one.data.clone();
    for k in 0..more {
        data.extend(one.data.iter().map(|&v| match (same, k % 2) {
            (true, _) => v,
            (false, 0) => -v,
            (false, _) => 0.5 * v + 0.25 * (k as f32),
        }));
    }
    PixelValues {
        shape: [1 + more, 3, size, size],
        data,
    }
}

fn load(name: &str, size: usize, options: ModelOptions, batch: usize) -> (SiglipModel, Weights) {
    let dir = fixture(name);
    let mut config = ipuc::weights::checkpoint_config(&dir).unwrap();
    if config.image_size != size {
        config.position_image_size = Some(config.image_size);
        config.image_size = size;
    }
    let options = ModelOptions {
        vit_batch: batch,
        ..options
    };
    let model = build_siglip(&config, &options).unwrap();
    let weights = weights_for(&model, &WeightSource::Checkpoint(dir)).unwrap();
    (model, weights)
}

fn run(
    model: &SiglipModel,
    weights: &Weights,
    pixels: &PixelValues,
    opts: &CompileOptions,
) -> (DeviceOutput, ipuc_core::pipeline::Compiled) {
    let compiled = compile(&model.graph, &kernel_abi(), opts).unwrap();
    let out = SimDevice::for_package(&compiled.package)
        .unwrap()
        .run(&compiled.package, &device_inputs(pixels), weights)
        .unwrap();
    (out, compiled)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
}

#[test]
fn each_family_at_batch_3_matches_the_fp32_reference_image_by_image() {
    for (name, size) in FAMILIES {
        let pixels = batch_pixels(name, size, 2, false);
        let (model, weights) = load(name, size, ModelOptions::default(), 3);
        let opts = CompileOptions {
            beam_width: 8,
            tiles: 64,
            name: name.to_string(),
            ..CompileOptions::default()
        };
        let (out, _) = run(&model, &weights, &pixels, &opts);
        let reference = run_siglip(&model, &weights, &pixels, (Numerics::Fp32, &[]), None).unwrap();
        let v = compare(&out, &reference, 0.2, 0.05).unwrap();
        assert_eq!(v.images.len(), 3, "{name}");
        for (k, image) in v.images.iter().enumerate() {
            eprintln!("{name} image {k}: {image:?}");
            assert!(v.image_pass(k), "{name} image {k}: {image:?}");
        }
        // The images really differ, so a mix-up would show.
        let pooled = &out.outputs[POOLER_OUTPUT];
        let d = pooled.shape[1];
        assert!(max_abs_diff(&pooled.data[..d], &pooled.data[d..2 * d]) > 1e-3);
        // Image 0 is the fixture's: transformers' outputs within FP16's bound.
        for output in [LAST_HIDDEN_STATE, POOLER_OUTPUT] {
            let want = NpyArray::read(&fixture(name).join(format!("{output}.npy"))).unwrap();
            let got = &out.outputs[output].data[..want.data.len()];
            let err = max_abs_diff(got, &want.data);
            assert!(
                err <= 0.05,
                "{name} {output} image 0 vs transformers: {err}"
            );
        }
    }
}

#[test]
fn fp8_batches_equal_the_device_numerics_reference_bit_for_bit() {
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    for (name, size) in FAMILIES {
        let pixels = batch_pixels(name, size, 2, false);
        let options = ModelOptions {
            fuse_qkv: true,
            fp8_scale: Some(-4),
            fp8_activation_scale: Some(0),
            ..ModelOptions::default()
        };
        let (model, weights) = load(name, size, options, 3);
        let opts = CompileOptions {
            beam_width: 4,
            tiles: 64,
            name: name.to_string(),
            ..CompileOptions::default()
        };
        let (out, compiled) = run(&model, &weights, &pixels, &opts);
        let splits = &compiled.description.k_splits;
        let device =
            run_siglip(&model, &weights, &pixels, (Numerics::Device, splits), None).unwrap();
        assert_eq!(
            bits(&out.outputs[LAST_HIDDEN_STATE].data),
            bits(&device.last_hidden_state.data),
            "{name}"
        );
        let pooled = device.pooler_output.unwrap();
        assert_eq!(
            bits(&out.outputs[POOLER_OUTPUT].data),
            bits(&pooled.data),
            "{name}"
        );
    }
}

#[test]
fn two_identical_images_give_identical_embeddings() {
    for (name, size) in FAMILIES {
        let pixels = batch_pixels(name, size, 1, true);
        let (model, weights) = load(name, size, ModelOptions::default(), 2);
        let opts = CompileOptions {
            beam_width: 8,
            tiles: 64,
            name: name.to_string(),
            ..CompileOptions::default()
        };
        let (out, _) = run(&model, &weights, &pixels, &opts);
        for output in [LAST_HIDDEN_STATE, POOLER_OUTPUT] {
            let data = &out.outputs[output].data;
            let half = data.len() / 2;
            let (a, b) = data.split_at(half);
            let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{name} {output}: the two images differ");
        }
    }
}
