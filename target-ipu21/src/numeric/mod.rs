//! IPU number formats: the two FP8 formats with a power-of-two scale
//! (F143, F152) and IEEE half conversions.
//!
//! Facts: `docs/facts/siglip-and-fp8.md` §3 (FP8 layouts, scale, rounding,
//! overflow) and §4 (FP16). Decoding goes through one 256-entry table per
//! format; encoding is round-to-nearest-even done in exact integer
//! arithmetic, so there is no double rounding.
//!
//! ```
//! use ipuc_target::numeric::{F8Format, Fp8, Overflow};
//! // Scale −4: a stored code c means decode(c) · 2^−4.
//! let fmt = Fp8::new(F8Format::F143, -4).unwrap();
//! let code = fmt.encode(0.4375, Overflow::Saturate);
//! assert_eq!(fmt.decode(code), 0.4375);
//! // 15 is the largest magnitude at this scale (240 · 2^−4).
//! assert_eq!(fmt.decode(fmt.encode(1.0e6, Overflow::Saturate)), 15.0);
//! assert!(fmt.decode(fmt.encode(1.0e6, Overflow::Nan)).is_nan());
//! ```

mod activation;
mod dtype;
mod f16;
mod fp8;

pub use activation::Activation;
pub use dtype::DType;

pub use f16::{f16_bits_to_f32, f32_to_f16_bits, round_to_f16, F16Table};
pub use fp8::{F8Format, Fp8, Overflow, ScaleOutOfRange, FP8_NAN, SCALE_MAX, SCALE_MIN};
