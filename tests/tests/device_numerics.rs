//! Two implementations of `docs/facts/device-numerics.md` side by side: the
//! simulator's codelet arithmetic and the host reference's own
//! (`ipuc::reference::device`, which names neither the simulator nor the
//! planner). Each part of the contract is compared on random operands, bit
//! for bit, so a disagreement names the part (the end-to-end runs compare
//! only whole models).

use ipuc::reference::device::{self, Accumulation};
use ipuc::reference::products::Mat;
use ipuc_core::ir::DType;
use ipuc_sim::codelets::math as sim_math;
use ipuc_sim::gemm::{amp_product, MatRef, Threads};
use ipuc_target::ipu21::timing::AmpMode;
use ipuc_target::numeric::{round_to_f16, F8Format, Fp8, Overflow};
use proptest::prelude::*;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Deterministic values in about ±`range`, already of `dtype`.
fn values(n: usize, seed: u64, range: f32, dtype: DType) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * range
        })
        .collect();
    device::round_in_place(dtype, &mut out);
    out
}

#[test]
fn fp16_and_fp8_rounding_agree_on_every_code_and_between_them() {
    // Every FP16 value and the midpoints around it.
    for h in 0u16..=u16::MAX {
        let x = half::f16::from_bits(h).to_f32();
        for y in [x, f32::from_bits(x.to_bits().wrapping_add(1)), x * 1.000_3] {
            if y.is_nan() {
                continue;
            }
            assert_eq!(
                device::round_f16(y).to_bits(),
                round_to_f16(y).to_bits(),
                "{y:e}"
            );
        }
    }
    for format in [F8Format::F143, F8Format::F152] {
        for scale in [-8i8, -4, 0, 3] {
            let fp8 = Fp8::new(format, scale).unwrap();
            for i in 0..200_000u32 {
                let x = f32::from_bits(i.wrapping_mul(2_654_435_761));
                if x.is_nan() {
                    continue;
                }
                let ours = device::round_fp8(format, scale, x);
                let theirs = fp8.quantize(x, Overflow::Saturate);
                assert!(
                    ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()),
                    "{format:?} scale {scale}: {x:e} → {ours:e} vs {theirs:e}"
                );
            }
        }
    }
}

fn mode_of(how: Accumulation) -> AmpMode {
    match (how.half, how.micro_group) {
        (true, 32) => AmpMode::F8F16Partials,
        (true, _) => AmpMode::F16F16Partials,
        (false, _) => AmpMode::F16F32Partials,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// One product, any shape, FP8 × FP8 (FP16 partials, 32 K) or FP16
    /// operands (F32 or FP16 partials, 16 K), `b` transposed or not.
    #[test]
    fn amp_products_agree(m in 1usize..9, n in 1usize..9, k in 1usize..100, seed in any::<u64>(), kind in 0u8..3, transposed in any::<bool>()) {
        let (how, dtype) = match kind {
            0 => (Accumulation::of_matmul(DType::f143(-4), DType::f143(-4)), DType::f143(-4)),
            1 => (Accumulation::of_matmul(DType::F16, DType::F16), DType::F16),
            _ => (Accumulation::of_attention(DType::F16), DType::F16),
        };
        let a = values(m * k, seed, 8.0, dtype);
        let b = values(k * n, seed ^ 1, 8.0, dtype);
        let (ours_b, sim_b) = if transposed {
            (Mat::transposed(&b, 0, k), MatRef::transposed(&b, 0, k))
        } else {
            (Mat::rows(&b, 0, n), MatRef::row_major(&b, 0, n))
        };
        let ours = device::split_product(how, (m, n, k), 1, Mat::rows(&a, 0, k), ours_b);
        let mut sim = vec![0f32; m * n];
        amp_product(mode_of(how), (m, n, k), MatRef::row_major(&a, 0, k), sim_b, &mut sim, Threads::One);
        prop_assert_eq!(bits(&ours), bits(&sim));
    }

    /// Whole-key and key-split attention of one head against the codelets'
    /// arithmetic (split: the blocks' partials merged by the device's
    /// combine kernel).
    #[test]
    fn attention_agrees(sq in 1usize..6, sk in 1usize..20, d in 1usize..20, parts in 1usize..4, seed in any::<u64>()) {
        let dtype = DType::F16;
        let q = values(sq * d, seed, 3.0, dtype);
        let k = values(sk * d, seed ^ 2, 3.0, dtype);
        let v = values(sk * d, seed ^ 3, 3.0, dtype);
        let scale = 1.0 / (d as f32).sqrt();
        let ours = device::attention_head(dtype, parts, (&q, &k, &v), (sq, sk, d), scale);
        let mode = AmpMode::F16F16Partials;
        let sim = if parts == 1 {
            let s = sim_math::attention_scores(mode, (sq, sk, d), &q, &k, scale);
            sim_math::attention_output(mode, dtype, (sq, sk, d), s, &v)
        } else {
            let mut partials = Vec::new();
            for p in 0..parts {
                let keys = device::k_part(sk, 1, parts, p);
                let (kb, vb) = (&k[keys.start * d..keys.end * d], &v[keys.start * d..keys.end * d]);
                let s = sim_math::attention_scores(mode, (sq, keys.len(), d), &q, kb, scale);
                partials.extend(sim_math::attention_partial(mode, dtype, (sq, keys.len(), d), s, vb));
            }
            ipuc_target::kernel::combine_attention_partials(&partials, sq, d, parts)
        };
        prop_assert_eq!(bits(&ours), bits(&sim));
    }

    /// LayerNorm rows and the tanh GELU.
    #[test]
    fn row_and_element_kernels_agree(rows in 1usize..5, cols in 1usize..70, seed in any::<u64>()) {
        let x = values(rows * cols, seed, 4.0, DType::F16);
        let g = values(cols, seed ^ 4, 2.0, DType::F16);
        let b = values(cols, seed ^ 5, 1.0, DType::F16);
        let (mut ours, mut sim) = (vec![0f32; x.len()], vec![0f32; x.len()]);
        device::layer_norm(&x, &g, &b, 1e-6, &mut ours);
        sim_math::layer_norm(&x, &g, &b, 1e-6, &mut sim);
        prop_assert_eq!(bits(&ours), bits(&sim));
        let ours: Vec<f32> = x.iter().map(|&v| device::gelu_tanh(v)).collect();
        let sim: Vec<f32> = x.iter().map(|&v| sim_math::gelu_tanh(v)).collect();
        prop_assert_eq!(bits(&ours), bits(&sim));
    }
}

/// Every finite FP16 value.
fn finite_f16() -> impl Iterator<Item = f32> {
    (0..=u16::MAX)
        .map(|bits| half::f16::from_bits(bits).to_f32())
        .filter(|x| x.is_finite())
}

/// `gelu_pytorch_tanh` in f64.
fn gelu_tanh_f64(x: f64) -> f64 {
    let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044_715 * x * x * x);
    0.5 * x * (1.0 + u.tanh())
}

#[test]
fn the_fp16_tanh_gelu_is_the_same_in_the_simulator_and_the_reference() {
    for x in finite_f16() {
        let (sim, reference) = (sim_math::gelu_tanh_f16(x), device::gelu_tanh_f16(x));
        assert_eq!(sim.to_bits(), reference.to_bits(), "gelu({x})");
        assert_eq!(
            f32::from(half::f16::from_f32(sim)),
            sim,
            "gelu({x}) is FP16"
        );
    }
}

#[test]
fn the_fp16_tanh_gelu_stays_near_the_exact_one() {
    // The half loop's steps each round to FP16 (11 bits) and its α, αβ
    // are the half constants 0x3A6C, 0x28A6 (poplibs tuned them for the
    // gradient): a few FP16 ulps of the result plus a small absolute error
    // where the tanh saturates; beyond ±6 it is x or 0.
    let mut worst = (0.0f64, 0.0f32);
    for x in finite_f16() {
        let got = f64::from(device::gelu_tanh_f16(x));
        let want = gelu_tanh_f64(f64::from(x));
        let err = (got - want).abs();
        if x.abs() <= 6.0 {
            let bound = 4e-3 * want.abs().max(1.0);
            assert!(err <= bound, "gelu({x}) = {got}, exact {want}");
            if err > worst.0 {
                worst = (err, x);
            }
        } else if x > 6.0 {
            assert_eq!(got, f64::from(x), "gelu({x})");
        } else {
            assert!(got == 0.0, "gelu({x}) = {got}");
        }
    }
    eprintln!("largest error within ±6: {} at x = {}", worst.0, worst.1);
}
