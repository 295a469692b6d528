//! Tensor elements in SRAM bytes ↔ `f32` working values, per element type.
//!
//! Decoding is exact (FP16 and scaled FP8 values are all representable in
//! F32); encoding rounds to nearest-even, and FP8 saturates on overflow like
//! the device with NANOO clear (`docs/facts/siglip-and-fp8.md` §3.4, the same
//! choice as the reference's device numerics).

use ipuc_target::numeric::DType;
use ipuc_target::numeric::{f16_bits_to_f32, f32_to_f16_bits, Fp8, Overflow};

/// FP8 overflow behaviour of device casts (NANOO clear: saturate).
pub const DEVICE_FP8_OVERFLOW: Overflow = Overflow::Saturate;

/// The FP8 format of a dtype; `None` for F16/F32. Scales were validated by
/// the argument-block decoder, so an out-of-range scale is clamped rather
/// than trusted.
fn fp8(d: DType) -> Option<Fp8> {
    match d {
        DType::F8 { format, scale } => Fp8::new(
            format,
            scale.clamp(
                ipuc_target::numeric::SCALE_MIN,
                ipuc_target::numeric::SCALE_MAX,
            ),
        )
        .ok(),
        _ => None,
    }
}

/// Appends the values of `bytes` (elements of `d`) to `out`.
pub fn decode_into(bytes: &[u8], d: DType, out: &mut Vec<f32>) {
    match d {
        DType::F32 => out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        ),
        DType::F16 => {
            // Whole slices through `half`'s converter (F16C vectors where
            // the CPU has them, the same conversion `f16_bits_to_f32` makes
            // one value at a time; exact either way), staged through a
            // stack buffer rather than a heap copy of the input.
            use half::slice::HalfFloatSliceExt;
            const CHUNK: usize = 256;
            let start = out.len();
            out.resize(start + bytes.len() / 2, 0.0);
            let mut halves = [half::f16::ZERO; CHUNK];
            for (src, dst) in bytes.chunks(2 * CHUNK).zip(out[start..].chunks_mut(CHUNK)) {
                let h = &mut halves[..dst.len()];
                for (h, c) in h.iter_mut().zip(src.chunks_exact(2)) {
                    *h = half::f16::from_bits(u16::from_le_bytes([c[0], c[1]]));
                }
                h.convert_to_f32_slice(dst);
            }
        }
        DType::F8 { .. } => {
            let Some(f) = fp8(d) else { return };
            // A fixed-size table indexed by a byte: no bounds checks, so
            // the gather loop unrolls (it was one value per iteration).
            let mut table = [0f32; 256];
            for (c, t) in table.iter_mut().enumerate() {
                *t = f.decode(c as u8);
            }
            // Extended from the gather itself: a zero fill first was a
            // fifth of this loop's time.
            out.extend(bytes.iter().map(|&c| table[usize::from(c)]));
        }
    }
}

/// The values of `bytes` as `f32`.
pub fn decode(bytes: &[u8], d: DType) -> Vec<f32> {
    let mut v = Vec::with_capacity(bytes.len() / d.size_bytes());
    decode_into(bytes, d, &mut v);
    v
}

/// Writes `values` into `bytes` as elements of `d` (rounding to nearest-even).
pub fn encode(values: &[f32], d: DType, bytes: &mut [u8]) {
    match d {
        DType::F32 => {
            for (c, v) in bytes.chunks_exact_mut(4).zip(values) {
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        DType::F16 => {
            for (c, v) in bytes.chunks_exact_mut(2).zip(values) {
                c.copy_from_slice(&f32_to_f16_bits(*v).to_le_bytes());
            }
        }
        DType::F8 { .. } => {
            let Some(f) = fp8(d) else { return };
            for (c, v) in bytes.iter_mut().zip(values) {
                *c = f.encode(*v, DEVICE_FP8_OVERFLOW);
            }
        }
    }
}

/// Rounds every value to what `d` can hold (the effect of storing then loading).
pub fn round_in_place(values: &mut [f32], d: DType) {
    match d {
        DType::F32 => {}
        DType::F16 => {
            for v in values {
                *v = f16_bits_to_f32(f32_to_f16_bits(*v));
            }
        }
        DType::F8 { .. } => {
            if let Some(f) = fp8(d) {
                for v in values {
                    *v = f.quantize(*v, DEVICE_FP8_OVERFLOW);
                }
            }
        }
    }
}
