//! A full-width So400m-shaped model on the simulator: width 1152, MLP 4304,
//! 16 heads (head_dim 72), fused QKV, FP8 F143 GEMM weights at scale −4,
//! FP16 attention, the encoder as a Repeat over 2 layers — with a 56×56
//! image (16 tokens instead of 729) on 256 tiles so it fits CI time. Every
//! GEMM, attention and LayerNorm runs at the real widths; only the token
//! count and the tile count are small.

use ipuc::compile::{compile, CompileOptions};
use ipuc::device::simulated::{kernel_abi, SimDevice};
use ipuc::input::PixelValues;
use ipuc::model::{build_siglip, ModelOptions, VisionConfig};
use ipuc::reference::{run_siglip, Numerics};
use ipuc::report::run::compare;
use ipuc::weights::{weights_for, WeightSource};
use ipuc_tests::device_inputs;

#[test]
fn full_width_so400m_two_layers_fp8_x_fp8_fused_qkv_passes() {
    let mut config = VisionConfig::siglip_so400m();
    config.image_size = 56;
    config.validate().unwrap();
    assert_eq!(config.num_tokens(), 16);
    let model = build_siglip(
        &config,
        &ModelOptions {
            vit_layers: Some(2),
            fuse_qkv: true,
            fp8_scale: Some(-4),
            fp8_activation_scale: Some(0),
            ..ModelOptions::default()
        },
    )
    .unwrap();
    let weights = weights_for(&model, &WeightSource::Random { seed: 11 }).unwrap();
    let compiled = compile(
        &model.graph,
        &kernel_abi(),
        &CompileOptions {
            beam_width: 8,
            tiles: 256,
            name: "siglip-so400m@56 x2".into(),
            ..CompileOptions::default()
        },
    )
    .unwrap();
    assert!(compiled.report.placed_peak_bytes <= 557_612);
    let pixels = PixelValues {
        shape: [1, 3, 56, 56],
        data: (0..3 * 56 * 56)
            .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
            .collect(),
    };
    let out = SimDevice::for_package(&compiled.package)
        .unwrap()
        .run(&compiled.package, &device_inputs(&pixels), &weights)
        .unwrap();
    let device = run_siglip(
        &model,
        &weights,
        &pixels,
        (Numerics::Device, &compiled.description.k_splits),
        None,
    )
    .unwrap();
    let fp32 = run_siglip(&model, &weights, &pixels, (Numerics::Fp32, &[]), None).unwrap();
    let v = compare(&out, &device, 0.2, 0.05).unwrap();
    assert!(v.pass, "vs device numerics: {:?}", v.outputs);
    // FP8 × FP8 GEMMs: a K-split product rounds its FP16 partials per
    // part, the reference in one sequence, so the two differ by FP16
    // roundings of the partials (one part per tile is bit for bit:
    // `fp8_gemm_bits.rs`).
    for (name, max_abs, cosine, _) in &v.outputs {
        assert!(*max_abs < 0.2, "{name}: max abs error {max_abs}");
        assert!(*cosine > 0.999, "{name}: cosine {cosine}");
    }
    let q = compare(&out, &fp32, 0.2, 0.05).unwrap();
    for (name, _, cosine, _) in &q.outputs {
        assert!(*cosine > 0.99, "{name}: FP32 cosine {cosine}");
    }
    assert!(out.profile.cycles > 0);
}
