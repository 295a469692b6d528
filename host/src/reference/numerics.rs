//! Device rounding: what a value of a given IR dtype can hold.

use ipuc_core::ir::DType;
use ipuc_core::numeric::{round_to_f16, F8Format, Fp8, Overflow};
use rayon::prelude::*;

/// FP8 overflow behaviour assumed for the device (facts §3.4: NANOO clear
/// saturates). Weights at a sensible scale never reach it.
pub const DEVICE_FP8_OVERFLOW: Overflow = Overflow::Saturate;

const CHUNK: usize = 1 << 15;

/// Round every element to the nearest value of `dtype` (F32: unchanged).
pub fn round_to_dtype(dtype: DType, data: &mut [f32]) {
    match dtype {
        DType::F32 => {}
        DType::F16 => data.par_chunks_mut(CHUNK).for_each(|c| {
            for v in c {
                *v = round_to_f16(*v);
            }
        }),
        DType::F8 { format, scale } => {
            let fp8 = Fp8::new(format, scale).unwrap_or_else(|_| {
                // The verifier rejects out-of-range scales; clamp like DType::quantize.
                let clamped =
                    scale.clamp(ipuc_core::numeric::SCALE_MIN, ipuc_core::numeric::SCALE_MAX);
                Fp8::new(format, clamped).unwrap_or_else(|_| unreachable_fp8(format))
            });
            data.par_chunks_mut(CHUNK).for_each(|c| {
                for v in c {
                    *v = fp8.quantize(*v, DEVICE_FP8_OVERFLOW);
                }
            });
        }
    }
}

/// Scale 0 is always in range.
fn unreachable_fp8(format: F8Format) -> Fp8 {
    match Fp8::new(format, 0) {
        Ok(f) => f,
        Err(_) => unreachable!("scale 0 is inside the FP8 metadata range"),
    }
}
