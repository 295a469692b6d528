//! IPU FP8: F143 (1/4/3, bias 8) and F152 (1/5/2, bias 16), each with a
//! power-of-two tensor scale (siglip-and-fp8.md §3.1–§3.4).
//!
//! Both formats have no infinities, an unsigned zero (0x00) and a single NaN
//! code (0x80); every other code is finite, including the top binade
//! (F143 0x7F = 240, F152 0x7F = 57344). A stored code `c` with scale `s`
//! means `decode(c) · 2^s` (§3.3: Poplar `QuarterMetadata`).

use core::fmt;

/// The single NaN code of both IPU FP8 formats (§3.1: "NaN encodings only 0x80").
pub const FP8_NAN: u8 = 0x80;
/// Smallest metadata scale: the scale is a signed 6-bit field (§3.3).
pub const SCALE_MIN: i8 = -32;
/// Largest metadata scale (§3.3).
pub const SCALE_MAX: i8 = 31;

/// Which of the two IPU FP8 layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum F8Format {
    /// 1 sign, 4 exponent, 3 mantissa bits, bias 8: max 240, min subnormal 2^-10.
    F143,
    /// 1 sign, 5 exponent, 2 mantissa bits, bias 16: max 57344, min subnormal 2^-17.
    F152,
}

impl F8Format {
    /// Mantissa (fraction) bits.
    pub const fn mantissa_bits(self) -> u32 {
        match self {
            F8Format::F143 => 3,
            F8Format::F152 => 2,
        }
    }

    /// Exponent bias (§3.1: value exponent = field − bias).
    pub const fn bias(self) -> i32 {
        match self {
            F8Format::F143 => 8,
            F8Format::F152 => 16,
        }
    }

    /// Largest exponent field value; with no infinities it holds ordinary numbers.
    pub const fn max_exponent_field(self) -> i32 {
        match self {
            F8Format::F143 => 15,
            F8Format::F152 => 31,
        }
    }

    /// Largest finite magnitude at scale 0 (240 or 57344).
    pub fn max_value(self) -> f32 {
        self.unit_table()[0x7F]
    }

    /// The 256-entry decode table at scale 0.
    pub fn unit_table(self) -> &'static [f32; 256] {
        match self {
            F8Format::F143 => &F143_TABLE,
            F8Format::F152 => &F152_TABLE,
        }
    }

    /// Lower-case mnemonic used in IR dumps.
    pub const fn mnemonic(self) -> &'static str {
        match self {
            F8Format::F143 => "f143",
            F8Format::F152 => "f152",
        }
    }
}

/// What encoding does with a finite value whose rounded magnitude exceeds
/// the format's maximum (§3.4: FP_CTL NANOO set → NaN, clear → saturate).
/// NaN and ±Inf inputs encode as NaN in both modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// Clamp to ±max (NANOO clear).
    Saturate,
    /// Produce the NaN code 0x80 (NANOO set; the IPUModel and PopART default).
    Nan,
}

/// A scale outside the 6-bit metadata range [−32, 31].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleOutOfRange {
    /// The rejected scale.
    pub scale: i8,
}

impl fmt::Display for ScaleOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "FP8 scale {} is outside the metadata range [{SCALE_MIN}, {SCALE_MAX}]",
            self.scale
        )
    }
}

impl core::error::Error for ScaleOutOfRange {}

/// An FP8 format together with its tensor scale: the full meaning of a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fp8 {
    format: F8Format,
    scale: i8,
}

impl Fp8 {
    /// A format at metadata scale `scale` (value = decode(code) · 2^scale).
    pub fn new(format: F8Format, scale: i8) -> Result<Self, ScaleOutOfRange> {
        if (SCALE_MIN..=SCALE_MAX).contains(&scale) {
            Ok(Fp8 { format, scale })
        } else {
            Err(ScaleOutOfRange { scale })
        }
    }

    /// The layout.
    pub fn format(self) -> F8Format {
        self.format
    }

    /// The metadata scale.
    pub fn scale(self) -> i8 {
        self.scale
    }

    /// Value of `code`: table lookup times 2^scale. Exact: every table entry
    /// times any scale in range stays a normal `f32`.
    #[inline]
    pub fn decode(self, code: u8) -> f32 {
        self.format.unit_table()[usize::from(code)] * pow2(i32::from(self.scale))
    }

    /// Nearest code to `x` (ties to even), following §3.4: NaN/±Inf → NaN,
    /// values below half the smallest subnormal → +0 (no negative zero),
    /// overflow per `overflow`.
    #[inline]
    pub fn encode(self, x: f32, overflow: Overflow) -> u8 {
        encode_scaled(self.format, i32::from(self.scale), x, overflow)
    }

    /// [`Self::encode`] of every value of `values` into `out` (the shorter
    /// of the two sets the length). Its loop has no data-dependent branch,
    /// so it vectorises where the caller compiles it for vector
    /// instructions (`#[target_feature]`).
    #[inline(always)]
    pub fn encode_slice(self, values: &[f32], out: &mut [u8], overflow: Overflow) {
        let (format, scale) = (self.format, i32::from(self.scale));
        for (o, &x) in out.iter_mut().zip(values) {
            *o = encode_scaled(format, scale, x, overflow);
        }
    }

    /// Encode an FP16 value (widened exactly first, so one rounding only).
    pub fn encode_f16_bits(self, bits: u16, overflow: Overflow) -> u8 {
        self.encode(super::f16_bits_to_f32(bits), overflow)
    }

    /// Decode to the nearest FP16 value. Exact while decode(c)·2^scale fits
    /// FP16 (§3.4: F143 scale ∈ [−14, 8], F152 scale ∈ [−7, 0]).
    pub fn decode_to_f16_bits(self, code: u8) -> u16 {
        super::f32_to_f16_bits(self.decode(code))
    }

    /// Round `x` to the nearest value this format represents.
    #[inline]
    pub fn quantize(self, x: f32, overflow: Overflow) -> f32 {
        self.decode(self.encode(x, overflow))
    }
}

/// 2^e as an `f32` for |e| ≤ 126 (scales are within [−32, 31]).
fn pow2(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// Core of `Fp8::encode`: value = sig · 2^exp2 decomposed from the `f32`,
/// the scale folded into the exponent (dividing by 2^scale is exact), then
/// rounded once to the format's quantum.
///
/// Written without data-dependent branches: NaN, zero and overflow are
/// selected at the end, and floor(log2) comes from an exact int → f32
/// conversion, so a loop over a slice vectorises ([`Fp8::encode_slice`];
/// #42: the simulator encodes every FP8 activation and the host every FP8
/// weight, and the branches mispredicted on real data). The branchy
/// original is kept in `tests` as the oracle it is proved equal to.
#[inline(always)]
fn encode_scaled(format: F8Format, scale: i32, x: f32, overflow: Overflow) -> u8 {
    let bits = x.to_bits();
    let magnitude = bits & 0x7FFF_FFFF;
    let biased = (magnitude >> 23) as i32;
    let fraction = magnitude & 0x007F_FFFF;
    let sig = fraction | (u32::from(biased != 0) << 23);
    let exp2 = biased.max(1) - 150 - scale;
    let man = format.mantissa_bits() as i32;
    // floor(log2(value)) (for sig = 0 any value: q below is 0); `sig | 1`
    // < 2^24 converts exactly, so its f32 exponent field is floor(log2) + 127.
    let log2 = (((sig | 1) as f32).to_bits() >> 23) as i32 - 127;
    let exponent = log2 + exp2;
    let quantum_exp = exponent.max(1 - format.bias()) - man;
    // Dropped bits: ≥ 20 for every f32 and scale in range (a 24-bit sig
    // keeps ≤ man + 1 bits); from 25 on the result is 0, so clamp there.
    let r = ((quantum_exp - exp2) as u32).min(25);
    let kept = sig >> r;
    let rest = sig & ((1u32 << r) - 1);
    let half = 1u32 << (r - 1);
    let q = kept + u32::from((rest > half) | ((rest == half) & (kept & 1 == 1)));
    // Rounding may carry into the next binade (q = 2^(man+1)).
    let carry = q >> (man + 1);
    let (q, quantum_exp) = (q >> carry, quantum_exp + carry as i32);
    // A subnormal has quantum_exp = 1 − bias − man, so field 1 and
    // (1 << man) + q − (1 << man) = q: the formula covers both.
    let field = quantum_exp + man + format.bias();
    let sign = ((bits >> 31) << 7) as u8;
    // < 0x80 when field ≤ max field (q − 2^man < 2^man); masked otherwise,
    // where the overflow code is selected instead.
    let code = ((((field as u32) << man)
        .wrapping_add(q)
        .wrapping_sub(1u32 << man))
        & 0x7F) as u8;
    let overflowed = match overflow {
        Overflow::Nan => FP8_NAN,
        Overflow::Saturate => 0x7F | sign,
    };
    let code = if field > format.max_exponent_field() {
        overflowed
    } else {
        code | sign
    };
    // No negative zero; ±∞ and NaN → NaN.
    let code = if q == 0 { 0x00 } else { code };
    if magnitude >= 0x7F80_0000 {
        FP8_NAN
    } else {
        code
    }
}

/// Decode one code at scale 0 by building the `f32` bits directly (§3.2).
const fn decode_unit(man: u32, bias: i32, code: u8) -> f32 {
    if code == FP8_NAN {
        return f32::NAN;
    }
    let sign = ((code >> 7) as u32) << 31;
    let field = ((code & 0x7F) >> man) as i32;
    let m = (code as u32) & ((1 << man) - 1);
    let magnitude = if field == 0 {
        if m == 0 {
            0
        } else {
            // m · 2^(1 − bias − man): normalise m's leading bit into the implicit one.
            let top = 31 - m.leading_zeros(); // 0..man-1
            let exponent = top as i32 + 1 - bias - man as i32;
            let frac = (m - (1 << top)) << (23 - top);
            (((exponent + 127) as u32) << 23) | frac
        }
    } else {
        (((field - bias + 127) as u32) << 23) | (m << (23 - man))
    };
    f32::from_bits(sign | magnitude)
}

const fn build_table(man: u32, bias: i32) -> [f32; 256] {
    let mut table = [0.0f32; 256];
    let mut code = 0usize;
    while code < 256 {
        table[code] = decode_unit(man, bias, code as u8);
        code += 1;
    }
    table
}

static F143_TABLE: [f32; 256] = build_table(3, 8);
static F152_TABLE: [f32; 256] = build_table(2, 16);

#[cfg(test)]
mod encode_tests {
    use super::*;

    /// The pre-#42 `encode_scaled`, verbatim: the oracle.
    fn encode_scaled_before_42(format: F8Format, scale: i32, x: f32, overflow: Overflow) -> u8 {
        if !x.is_finite() {
            return FP8_NAN;
        }
        let bits = x.to_bits();
        let negative = bits >> 31 == 1;
        let magnitude = bits & 0x7FFF_FFFF;
        if magnitude == 0 {
            return 0x00;
        }
        let biased = (magnitude >> 23) as i32;
        let fraction = magnitude & 0x007F_FFFF;
        let (sig, exp2) = if biased == 0 {
            (fraction, -149)
        } else {
            (fraction | 0x0080_0000, biased - 150)
        };
        let exp2 = exp2 - scale;
        let man = format.mantissa_bits() as i32;
        // floor(log2(value)); sig != 0 here because magnitude != 0.
        let exponent = (31 - sig.leading_zeros() as i32) + exp2;
        let min_normal_exponent = 1 - format.bias();
        let mut quantum_exp = exponent.max(min_normal_exponent) - man;
        let shift = exp2 - quantum_exp;
        let mut q: u32 = if shift >= 0 {
            // shift ≤ man − (bit length − 1) ≤ 3: no overflow of u32.
            sig << shift
        } else {
            let r = (-shift) as u32;
            if r >= 32 {
                0 // sig < 2^24 < half of one quantum
            } else {
                let kept = sig >> r;
                let rest = sig & ((1u32 << r) - 1);
                let half = 1u32 << (r - 1);
                if rest > half || (rest == half && kept & 1 == 1) {
                    kept + 1
                } else {
                    kept
                }
            }
        };
        if q == 0 {
            return 0x00;
        }
        let implicit = 1u32 << man;
        if q >= implicit << 1 {
            // Rounding carried into the next binade: q is exactly 2^(man+1).
            q >>= 1;
            quantum_exp += 1;
        }
        let code = if q < implicit {
            q // subnormal: exponent field 0
        } else {
            let field = quantum_exp + man + format.bias();
            if field > format.max_exponent_field() {
                return match overflow {
                    Overflow::Nan => FP8_NAN,
                    Overflow::Saturate => {
                        if negative {
                            0xFF
                        } else {
                            0x7F
                        }
                    }
                };
            }
            ((field as u32) << man) | (q - implicit)
        };
        // `code` < 0x80 here: field ≤ max field and q − implicit < implicit.
        let code = code as u8;
        if negative {
            code | 0x80
        } else {
            code
        }
    }

    fn check(format: F8Format, scale: i8, bits: impl Iterator<Item = u32>) {
        for b in bits {
            let x = f32::from_bits(b);
            for overflow in [Overflow::Saturate, Overflow::Nan] {
                let got = encode_scaled(format, i32::from(scale), x, overflow);
                let want = encode_scaled_before_42(format, i32::from(scale), x, overflow);
                assert_eq!(
                    got, want,
                    "{format:?} scale {scale} {x:e} ({b:#x}) {overflow:?}"
                );
            }
        }
    }

    /// Every scale and both formats over a strided sweep of all f32
    /// patterns (the stride is odd, so every low-bit pattern is visited),
    /// plus every pattern in the FP8 formats' reach at scale −4 and 0.
    #[test]
    fn branch_free_encode_equals_the_original() {
        for format in [F8Format::F143, F8Format::F152] {
            for scale in SCALE_MIN..=SCALE_MAX {
                check(format, scale, (0..=u32::MAX).step_by(40_009));
            }
            for scale in [-4, 0] {
                // |x| from 2^-40 to 2^24, both signs, every pattern.
                let lo = 0x2B80_0000u32; // 2^-40
                let hi = 0x4B80_0000u32; // 2^24
                check(
                    format,
                    scale,
                    (lo..hi).step_by(61).flat_map(|b| [b, b | 0x8000_0000]),
                );
            }
        }
    }

    #[test]
    #[ignore = "exhaustive over 2^32 patterns × 2 formats × 3 scales: minutes"]
    fn branch_free_encode_equals_the_original_everywhere() {
        for format in [F8Format::F143, F8Format::F152] {
            for scale in [SCALE_MIN, -4, SCALE_MAX] {
                check(format, scale, 0..=u32::MAX);
            }
        }
    }
}
