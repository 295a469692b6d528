//! IEEE binary16 conversions (siglip-and-fp8.md §4): the `half` crate
//! rounds to nearest-even, overflows to ±Inf and keeps subnormals, which is
//! the IPU's FP16 with denormals.

use half::f16;

/// Round an `f32` to the nearest FP16 value (ties to even) and widen it back.
pub fn round_to_f16(x: f32) -> f32 {
    f16::from_f32(x).to_f32()
}

/// FP16 bit pattern of the nearest FP16 value to `x`.
pub fn f32_to_f16_bits(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

/// Exact widening of an FP16 bit pattern.
pub fn f16_bits_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}
