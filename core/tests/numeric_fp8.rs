//! Exhaustive FP8 tests: all 256 codes of both formats at several scales,
//! rounding checked against a brute-force nearest-value search, and the
//! boundary values named in docs/facts/siglip-and-fp8.md §3.

use ipuc_target::numeric::{f16_bits_to_f32, F8Format, Fp8, Overflow, FP8_NAN};

const FORMATS: [F8Format; 2] = [F8Format::F143, F8Format::F152];
const SCALES: [i8; 7] = [-32, -14, -4, -1, 0, 5, 31];

/// Independent decode straight from the §3.2 formula, in f64.
fn formula(format: F8Format, code: u8) -> f64 {
    let (man, bias) = match format {
        F8Format::F143 => (3, 8),
        F8Format::F152 => (2, 16),
    };
    if code == 0x80 {
        return f64::NAN;
    }
    let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((code & 0x7F) >> man);
    let m = f64::from(code & ((1 << man) - 1));
    let scale = f64::from(1u32 << man);
    let mag = if e == 0 {
        m * 2f64.powi(1 - bias - man)
    } else {
        (1.0 + m / scale) * 2f64.powi(e - bias)
    };
    sign * mag
}

/// Nearest code by scanning all codes; ties to the even code; the overflow
/// threshold is the midpoint between max and the next binade's first value.
fn brute_force(fp8: Fp8, x: f32, overflow: Overflow) -> u8 {
    if !x.is_finite() {
        return FP8_NAN;
    }
    let x = f64::from(x);
    let max = f64::from(fp8.decode(0x7F));
    let next = f64::from(fp8.decode(top_binade(fp8.format()))) * 2.0; // first value of the missing binade
    if x.abs() >= (max + next) / 2.0 {
        return match overflow {
            Overflow::Nan => FP8_NAN,
            Overflow::Saturate if x > 0.0 => 0x7F,
            Overflow::Saturate => 0xFF,
        };
    }
    let mut best = 0u8;
    let mut best_err = f64::INFINITY;
    for code in 0..=255u8 {
        if code == FP8_NAN {
            continue;
        }
        let err = (x - f64::from(fp8.decode(code))).abs();
        if err < best_err || (err == best_err && code & 1 == 0 && best & 1 == 1) {
            best = code;
            best_err = err;
        }
    }
    best
}

#[test]
fn decode_table_matches_formula_for_all_codes_and_scales() {
    for format in FORMATS {
        for scale in SCALES {
            let fp8 = Fp8::new(format, scale).unwrap();
            for code in 0..=255u8 {
                let want = formula(format, code) * 2f64.powi(i32::from(scale));
                let got = fp8.decode(code);
                if code == 0x80 {
                    assert!(got.is_nan(), "{format:?} 0x80 must be NaN");
                } else {
                    assert_eq!(
                        f64::from(got),
                        want,
                        "{format:?} scale {scale} code {code:#04x}"
                    );
                }
            }
        }
    }
}

#[test]
fn constants_of_both_formats() {
    let f143 = Fp8::new(F8Format::F143, 0).unwrap();
    let f152 = Fp8::new(F8Format::F152, 0).unwrap();
    assert_eq!(f143.decode(0x7F), 240.0);
    assert_eq!(f143.decode(0xFF), -240.0);
    assert_eq!(f143.decode(0x01), 2f32.powi(-10));
    assert_eq!(f143.decode(0x08), 2f32.powi(-7)); // min normal
    assert_eq!(f152.decode(0x7F), 57344.0);
    assert_eq!(f152.decode(0x7C), 32768.0);
    assert_eq!(f152.decode(0x01), 2f32.powi(-17));
    assert_eq!(f152.decode(0x04), 2f32.powi(-15));
    assert_eq!(F8Format::F143.max_value(), 240.0);
    assert_eq!(F8Format::F152.max_value(), 57344.0);
    // Only one NaN and only one zero.
    for format in FORMATS {
        let t = format.unit_table();
        assert_eq!(t.iter().filter(|v| v.is_nan()).count(), 1);
        assert_eq!(t.iter().filter(|v| **v == 0.0).count(), 1);
        assert!(t.iter().all(|v| !v.is_infinite()));
    }
    assert!(Fp8::new(F8Format::F143, 32).is_err());
    assert!(Fp8::new(F8Format::F152, -33).is_err());
    assert_eq!(
        Fp8::new(F8Format::F143, 40).unwrap_err().to_string(),
        "FP8 scale 40 is outside the metadata range [-32, 31]"
    );
}

#[test]
fn every_code_round_trips_at_every_scale() {
    for format in FORMATS {
        for scale in SCALES {
            let fp8 = Fp8::new(format, scale).unwrap();
            for code in 0..=255u8 {
                for mode in [Overflow::Saturate, Overflow::Nan] {
                    assert_eq!(
                        fp8.encode(fp8.decode(code), mode),
                        code,
                        "{format:?} {scale} {code:#04x}"
                    );
                }
            }
        }
    }
}

#[test]
fn poplibs_rounding_spot_checks() {
    // §3.2: values checked against the poplibs comment table (F143, scale 0).
    let f = Fp8::new(F8Format::F143, 0).unwrap();
    for (x, code) in [
        (7.0, 0x56),
        (7.5, 0x57),
        (8.0, 0x58),
        (9.0, 0x59),
        (7.25, 0x56),
        (7.75, 0x58),
        (8.5, 0x58),
        (9.5, 0x5A),
    ] {
        assert_eq!(f.encode(x, Overflow::Nan), code, "{x}");
    }
}

/// Midpoints between neighbours (ties), and one f32 ulp either side.
#[test]
fn ties_and_neighbours_match_brute_force() {
    for format in FORMATS {
        for scale in SCALES {
            let fp8 = Fp8::new(format, scale).unwrap();
            let mut values: Vec<f32> = (0..=0x7Fu8).map(|c| fp8.decode(c)).collect();
            values.push(fp8.decode(top_binade(format)) * 2.0);
            for w in values.windows(2) {
                let mid = (w[0] + w[1]) / 2.0; // exact: few significant bits
                for x in [mid, next_down(mid), next_up(mid), w[0], w[1]] {
                    for s in [x, -x] {
                        for mode in [Overflow::Saturate, Overflow::Nan] {
                            assert_eq!(
                                fp8.encode(s, mode),
                                brute_force(fp8, s, mode),
                                "{format:?} scale {scale} x {s:e} {mode:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// A dense logarithmic sweep (both signs, across the whole range and beyond).
#[test]
fn log_sweep_matches_brute_force() {
    for format in FORMATS {
        for scale in [-4i8, 0, 7] {
            let fp8 = Fp8::new(format, scale).unwrap();
            let lo = fp8.decode(0x01).log2() - 3.0;
            let hi = fp8.decode(0x7F).log2() + 3.0;
            let steps = 20_000;
            for i in 0..=steps {
                let x = (lo + (hi - lo) * i as f32 / steps as f32).exp2();
                for s in [x, -x] {
                    assert_eq!(
                        fp8.encode(s, Overflow::Saturate),
                        brute_force(fp8, s, Overflow::Saturate),
                        "{s:e}"
                    );
                    assert_eq!(
                        fp8.encode(s, Overflow::Nan),
                        brute_force(fp8, s, Overflow::Nan),
                        "{s:e}"
                    );
                }
            }
        }
    }
}

#[test]
fn boundaries_f143() {
    let f = Fp8::new(F8Format::F143, 0).unwrap();
    let sub = 2f32.powi(-10);
    assert_eq!(f.encode(sub, Overflow::Nan), 0x01);
    assert_eq!(
        f.encode(sub / 2.0, Overflow::Nan),
        0x00,
        "tie with zero goes to even 0x00"
    );
    assert_eq!(f.encode(next_up(sub / 2.0), Overflow::Nan), 0x01);
    assert_eq!(
        f.encode(-sub / 2.0, Overflow::Nan),
        0x00,
        "no negative zero"
    );
    assert_eq!(
        f.encode(1.5 * sub, Overflow::Nan),
        0x02,
        "tie 1.5 ulp → even 2"
    );
    assert_eq!(f.encode(-0.0, Overflow::Nan), 0x00);
    assert_eq!(
        f.encode(f32::from_bits(1), Overflow::Nan),
        0x00,
        "f32 subnormal"
    );
    assert_eq!(f.encode(240.0, Overflow::Nan), 0x7F);
    assert_eq!(f.encode(next_down(248.0), Overflow::Nan), 0x7F);
    assert_eq!(
        f.encode(248.0, Overflow::Nan),
        FP8_NAN,
        "248 ties to 256: overflow"
    );
    assert_eq!(f.encode(248.0, Overflow::Saturate), 0x7F);
    assert_eq!(f.encode(-248.0, Overflow::Saturate), 0xFF);
    assert_eq!(f.encode(-1e30, Overflow::Nan), FP8_NAN);
    assert_eq!(f.encode(f32::MAX, Overflow::Saturate), 0x7F);
    for mode in [Overflow::Saturate, Overflow::Nan] {
        assert_eq!(f.encode(f32::INFINITY, mode), FP8_NAN, "Inf → NaN");
        assert_eq!(f.encode(f32::NEG_INFINITY, mode), FP8_NAN);
        assert_eq!(f.encode(f32::NAN, mode), FP8_NAN);
    }
    // Scale −4 shifts the whole range down by 2^4.
    let s = Fp8::new(F8Format::F143, -4).unwrap();
    assert_eq!(s.decode(0x7F), 15.0);
    assert_eq!(s.encode(15.0, Overflow::Nan), 0x7F);
    assert_eq!(s.encode(15.5, Overflow::Nan), FP8_NAN);
    assert_eq!(s.encode(15.5, Overflow::Saturate), 0x7F);
    assert_eq!(s.encode(2f32.powi(-14), Overflow::Nan), 0x01);
    assert_eq!(s.quantize(0.3, Overflow::Nan), 0.3125);
}

#[test]
fn boundaries_f152() {
    let f = Fp8::new(F8Format::F152, 0).unwrap();
    let sub = 2f32.powi(-17);
    assert_eq!(f.encode(sub, Overflow::Nan), 0x01);
    assert_eq!(f.encode(sub / 2.0, Overflow::Nan), 0x00);
    assert_eq!(f.encode(next_up(sub / 2.0), Overflow::Nan), 0x01);
    assert_eq!(f.encode(57344.0, Overflow::Nan), 0x7F);
    assert_eq!(f.encode(next_down(61440.0), Overflow::Nan), 0x7F);
    assert_eq!(f.encode(61440.0, Overflow::Nan), FP8_NAN);
    assert_eq!(f.encode(61440.0, Overflow::Saturate), 0x7F);
    assert_eq!(f.encode(-61440.0, Overflow::Saturate), 0xFF);
    assert_eq!(f.encode(f32::INFINITY, Overflow::Saturate), FP8_NAN);
    assert_eq!(f.encode(-3.0, Overflow::Nan), 0xC6); // −1.5·2^1: field 17, mantissa 2
    let s = Fp8::new(F8Format::F152, 3).unwrap();
    assert_eq!(s.decode(0x7F), 57344.0 * 8.0);
}

#[test]
fn f16_paths_are_exact_in_the_documented_scale_ranges() {
    // §3.4: FP8→FP16 is exact for F143 scale ∈ [−14, 8], F152 scale ∈ [−7, 0].
    for (format, scales) in [(F8Format::F143, -14i8..=8), (F8Format::F152, -7i8..=0)] {
        for scale in scales {
            let fp8 = Fp8::new(format, scale).unwrap();
            for code in (0..=255u8).filter(|&c| c != FP8_NAN) {
                let h = f16_bits_to_f32(fp8.decode_to_f16_bits(code));
                assert_eq!(h, fp8.decode(code), "{format:?} {scale} {code:#04x}");
            }
        }
    }
    // Encoding from FP16 equals encoding the exact widened value, for all
    // 65536 half patterns, against the brute-force search.
    for format in FORMATS {
        let fp8 = Fp8::new(format, 0).unwrap();
        for bits in 0..=u16::MAX {
            let x = f16_bits_to_f32(bits);
            assert_eq!(
                fp8.encode_f16_bits(bits, Overflow::Saturate),
                brute_force(fp8, x, Overflow::Saturate),
                "{format:?} half {bits:#06x}"
            );
        }
    }
}

#[test]
fn f16_rounding_is_nearest_even() {
    use ipuc_target::numeric::{f32_to_f16_bits, round_to_f16};
    assert_eq!(round_to_f16(1.0 + 2f32.powi(-11)), 1.0); // tie → even
    assert_eq!(
        round_to_f16(1.0 + 3.0 * 2f32.powi(-11)),
        1.0 + 2f32.powi(-9)
    );
    assert_eq!(round_to_f16(65504.0), 65504.0);
    assert!(round_to_f16(65520.0).is_infinite());
    assert_eq!(round_to_f16(2f32.powi(-24)), 2f32.powi(-24));
    assert_eq!(f32_to_f16_bits(-2.0), 0xC000);
}

/// First code of the top binade (F143 0x78 = 128, F152 0x7C = 32768).
fn top_binade(format: F8Format) -> u8 {
    match format {
        F8Format::F143 => 0x78,
        F8Format::F152 => 0x7C,
    }
}

fn next_up(x: f32) -> f32 {
    if x >= 0.0 {
        f32::from_bits(x.to_bits() + 1)
    } else {
        f32::from_bits(x.to_bits() - 1)
    }
}

fn next_down(x: f32) -> f32 {
    -next_up(-x)
}
