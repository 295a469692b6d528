//! IEEE binary16 conversions (siglip-and-fp8.md §4): the `half` crate
//! rounds to nearest-even, overflows to ±Inf and keeps subnormals, which is
//! the IPU's FP16 with denormals.

use alloc::vec::Vec;

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

/// A function of FP16 values as the table of its results on all 65,536 of
/// them (f32 bits, so each result is the function's own): for costly steps
/// (the C library's `tanhf`, `expf`) whose input is an FP16 value.
#[derive(Clone, Debug)]
pub struct F16Table(Vec<u32>);

impl F16Table {
    /// `f` on every FP16 value.
    pub fn of(f: impl Fn(f32) -> f32) -> Self {
        F16Table(
            (0..=u16::MAX)
                .map(|b| f(f16_bits_to_f32(b)).to_bits())
                .collect(),
        )
    }

    /// The function of `x` when `x` is an FP16 value (bit for bit), else
    /// `None`: compute it where it stands.
    pub fn get(&self, x: f32) -> Option<f32> {
        let h = f16::from_f32(x);
        (h.to_f32().to_bits() == x.to_bits())
            .then(|| f32::from_bits(self.0[usize::from(h.to_bits())]))
    }
}
