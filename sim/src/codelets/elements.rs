//! Tensor elements in SRAM bytes ↔ `f32` working values, per element type.
//!
//! Decoding is exact (FP16 and scaled FP8 values are all representable in
//! F32); encoding rounds to nearest-even, and FP8 saturates on overflow like
//! the device with NANOO clear (`docs/facts/siglip-and-fp8.md` §3.4, the same
//! choice as the reference's device numerics).

use ipuc_target::numeric::DType;
use ipuc_target::numeric::{Fp8, Overflow};

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
            let start = out.len();
            out.resize(start + bytes.len(), 0.0);
            decode_fp8(f, bytes, &mut out[start..]);
        }
    }
}

/// FP8 codes to their values, `Fp8::decode` of each (tested for every
/// code at every scale), computed from the code's fields rather than
/// looked up: the arithmetic runs in vector lanes where a table gather
/// ran one element at a time (#42: the simulator decodes every FP8
/// operand a GEMM receives, ~10^10 codes per So400m inference).
fn decode_fp8(f: Fp8, bytes: &[u8], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was detected.
        return unsafe { decode_fp8_avx2(f, bytes, out) };
    }
    decode_fp8_fields(f, bytes, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn decode_fp8_avx2(f: Fp8, bytes: &[u8], out: &mut [f32]) {
    decode_fp8_fields(f, bytes, out);
}

/// The body of [`decode_fp8`]: no data-dependent branch, so it vectorises.
/// A normal code is `(1 + m/2^man) · 2^(e − bias + scale)`, so its f32
/// bits are the fields moved into place; a subnormal one is
/// `m · 2^(1 − bias − man + scale)`, an exact product; 0x80 is NaN.
/// Every exponent stays in f32's normal range for scales in
/// [SCALE_MIN, SCALE_MAX] (at worst 2^-50), so no step rounds.
#[inline(always)]
fn decode_fp8_fields(f: Fp8, bytes: &[u8], out: &mut [f32]) {
    let man = f.format().mantissa_bits();
    let (bias, scale) = (f.format().bias(), i32::from(f.scale()));
    let exponent_mask = (1u32 << (7 - man)) - 1;
    let fraction_mask = (1u32 << man) - 1;
    let normal_bias = (127 - bias + scale) as u32;
    let subnormal_unit = f32::from_bits(((1 - bias - man as i32 + scale + 127) as u32) << 23);
    let nan = f.decode(ipuc_target::numeric::FP8_NAN).to_bits();
    for (o, &c) in out.iter_mut().zip(bytes) {
        let c = u32::from(c);
        let (e, m, sign) = (
            (c >> man) & exponent_mask,
            c & fraction_mask,
            (c & 0x80) << 24,
        );
        let normal = sign | ((e + normal_bias) << 23) | (m << (23 - man));
        let subnormal = sign | (m as f32 * subnormal_unit).to_bits();
        let bits = if e == 0 { subnormal } else { normal };
        *o = f32::from_bits(if c == 0x80 { nan } else { bits });
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
            // Whole slices through `half`'s converter, staged in a stack
            // buffer: the F16C instruction `f32_to_f16_bits` issues one
            // value at a time (behind a feature check per call), four or
            // eight at a time — the same rounding, bit for bit (tested).
            use half::slice::HalfFloatSliceExt;
            const CHUNK: usize = 256;
            let mut halves = [half::f16::ZERO; CHUNK];
            for (dst, src) in bytes.chunks_mut(2 * CHUNK).zip(values.chunks(CHUNK)) {
                let n = src.len().min(dst.len() / 2);
                let h = &mut halves[..n];
                h.convert_from_f32_slice(&src[..n]);
                for (c, v) in dst.chunks_exact_mut(2).zip(h.iter()) {
                    c.copy_from_slice(&v.to_bits().to_le_bytes());
                }
            }
        }
        DType::F8 { .. } => {
            let Some(f) = fp8(d) else { return };
            encode_fp8(f, values, bytes, DEVICE_FP8_OVERFLOW);
        }
    }
}

/// `Fp8::encode_slice` in vector lanes where the CPU has AVX2 (the same
/// function of each value either way); the host's weight encode uses it
/// too.
pub fn encode_fp8(f: Fp8, values: &[f32], bytes: &mut [u8], overflow: Overflow) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was detected.
        return unsafe { encode_fp8_avx2(f, values, bytes, overflow) };
    }
    f.encode_slice(values, bytes, overflow);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn encode_fp8_avx2(f: Fp8, values: &[f32], bytes: &mut [u8], overflow: Overflow) {
    f.encode_slice(values, bytes, overflow);
}

/// Rounds every value to what `d` can hold (the effect of storing then loading).
pub fn round_in_place(values: &mut [f32], d: DType) {
    match d {
        DType::F32 => {}
        DType::F16 => {
            // As in `encode`: `half`'s slice converters, both ways.
            use half::slice::HalfFloatSliceExt;
            const CHUNK: usize = 256;
            let mut halves = [half::f16::ZERO; CHUNK];
            for chunk in values.chunks_mut(CHUNK) {
                let h = &mut halves[..chunk.len()];
                h.convert_from_f32_slice(chunk);
                h.convert_to_f32_slice(chunk);
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

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_target::numeric::{f16_bits_to_f32, f32_to_f16_bits};

    /// F32 patterns from a strided sweep of all 2^32 (`step` apart, so
    /// every exponent, ties, subnormals, ±∞ and NaN payloads), plus the
    /// edges of FP16's range.
    fn patterns(step: usize) -> Vec<f32> {
        let edges = [
            65_504.0f32,
            65_519.99,
            65_520.0,
            -65_520.0,
            6.103_515_6e-5,
            5.960_464_5e-8,
            2.980_232_2e-8,
            2.980_232_3e-8,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001),
            f32::from_bits(0xFFC0_1234),
            0.0,
            -0.0,
        ];
        (0..=u32::MAX)
            .step_by(step)
            .map(f32::from_bits)
            .chain(edges)
            .collect()
    }

    /// The slice conversions of `encode` and `round_in_place` against the
    /// one-value functions they replaced, bit for bit (NaNs included), over
    /// lengths that leave partial chunks.
    #[test]
    fn f16_slices_equal_the_one_value_conversions() {
        let values = patterns(4099);
        for len in [values.len(), 1, 7, 255, 256, 257, 1000] {
            let v = &values[..len];
            let mut bytes = vec![0u8; 2 * len];
            encode(v, DType::F16, &mut bytes);
            let mut rounded = v.to_vec();
            round_in_place(&mut rounded, DType::F16);
            for (i, &x) in v.iter().enumerate() {
                let want = f32_to_f16_bits(x);
                let got = u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]);
                assert_eq!(got, want, "{x:e} ({:#x})", x.to_bits());
                let want = f16_bits_to_f32(want).to_bits();
                assert_eq!(rounded[i].to_bits(), want, "{x:e} ({:#x})", x.to_bits());
            }
        }
    }

    /// The arithmetic FP8 decode against `Fp8::decode` (the format's
    /// table): every code, both formats, every scale, bit for bit, through
    /// `decode_into` (appending after existing values) and the lane-free
    /// body alike.
    #[test]
    fn fp8_decode_equals_the_table_for_every_code_and_scale() {
        use ipuc_target::numeric::{F8Format, SCALE_MAX, SCALE_MIN};
        let codes: Vec<u8> = (0..=255).collect();
        for format in [F8Format::F143, F8Format::F152] {
            for scale in SCALE_MIN..=SCALE_MAX {
                let f = Fp8::new(format, scale).unwrap();
                let mut out = vec![1.5f32];
                decode_into(&codes, DType::F8 { format, scale }, &mut out);
                let mut fields = vec![0f32; 256];
                decode_fp8_fields(f, &codes, &mut fields);
                assert_eq!(out[0], 1.5);
                for (c, (&got, &lanes)) in out[1..].iter().zip(&fields).enumerate() {
                    let want = f.decode(c as u8).to_bits();
                    assert_eq!(
                        got.to_bits(),
                        want,
                        "{format:?} scale {scale} code {c:#04x}"
                    );
                    assert_eq!(
                        lanes.to_bits(),
                        want,
                        "{format:?} scale {scale} code {c:#04x}"
                    );
                }
            }
        }
    }
}
