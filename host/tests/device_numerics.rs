//! The device numerics' FP16 kernels as the simulator's codelets and the
//! independent device-numerics reference each implement them
//! (`docs/facts/device-numerics.md`): bit for bit the same, and close to
//! the mathematics they approximate.

use ipuc::reference::device;
use ipuc_sim::codelets::math;

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
        let (sim, reference) = (math::gelu_tanh_f16(x), device::gelu_tanh_f16(x));
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
