//! PIL's `Image.resize` on 8-bit RGB images, bit for bit (Pillow 13), for
//! the filters transformers' PIL backend passes it: NEAREST, BILINEAR,
//! BICUBIC (and BOX, HAMMING, LANCZOS, which use the same convolution).
//!
//! The convolving filters reproduce Pillow's `ImagingResample`: a separable
//! convolution (each pass rounded to u8, in Pillow's pass order) whose
//! support widens by the downscale factor (antialiasing), with the kernel
//! weights quantised to 22-bit fixed point. NEAREST is Pillow's affine
//! scaling (`ImagingScaleAffine`): each output pixel takes the input pixel
//! under its centre, the source position accumulated step by step in f64.

use crate::input::preprocess::Rgb8;

/// Pillow's fixed-point precision for 8-bit resampling: 32 bits minus 8 for
/// the pixel and 2 for the sign and headroom of negative lobes.
const PRECISION_BITS: u32 = 32 - 8 - 2;

/// A PIL resampling filter, by its number in `preprocessor_config.json`'s
/// `resample` (PIL's `Image.Resampling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resample {
    /// 0.
    Nearest,
    /// 1.
    Lanczos,
    /// 2.
    Bilinear,
    /// 3.
    Bicubic,
    /// 4.
    Box,
    /// 5.
    Hamming,
}

impl Resample {
    /// The filter PIL numbers `n`.
    pub fn from_pil(n: u64) -> Option<Resample> {
        Some(match n {
            0 => Resample::Nearest,
            1 => Resample::Lanczos,
            2 => Resample::Bilinear,
            3 => Resample::Bicubic,
            4 => Resample::Box,
            5 => Resample::Hamming,
            _ => return None,
        })
    }

    /// PIL's name.
    pub fn name(self) -> &'static str {
        match self {
            Resample::Nearest => "NEAREST",
            Resample::Lanczos => "LANCZOS",
            Resample::Bilinear => "BILINEAR",
            Resample::Bicubic => "BICUBIC",
            Resample::Box => "BOX",
            Resample::Hamming => "HAMMING",
        }
    }

    /// The filter's support (Pillow's `struct filter`), or `None` for
    /// NEAREST, which is not a convolution.
    fn support(self) -> Option<f64> {
        match self {
            Resample::Nearest => None,
            Resample::Box => Some(0.5),
            Resample::Bilinear | Resample::Hamming => Some(1.0),
            Resample::Bicubic => Some(2.0),
            Resample::Lanczos => Some(3.0),
        }
    }

    /// The filter's kernel at `x` (Pillow's `*_filter` functions).
    fn kernel(self, x: f64) -> f64 {
        match self {
            Resample::Nearest => 0.0,
            Resample::Box => {
                if x > -0.5 && x <= 0.5 {
                    1.0
                } else {
                    0.0
                }
            }
            Resample::Bilinear => (1.0 - x.abs()).max(0.0),
            Resample::Hamming => hamming(x),
            Resample::Bicubic => bicubic(x),
            Resample::Lanczos => {
                if (-3.0..3.0).contains(&x) {
                    sinc(x) * sinc(x / 3.0)
                } else {
                    0.0
                }
            }
        }
    }
}

/// Pillow's bicubic kernel (a = −0.5), support 2.
fn bicubic(x: f64) -> f64 {
    const A: f64 = -0.5;
    let x = x.abs();
    if x < 1.0 {
        ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        (((x - 5.0) * x + 8.0) * x - 4.0) * A
    } else {
        0.0
    }
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        return 1.0;
    }
    let x = x * std::f64::consts::PI;
    x.sin() / x
}

fn hamming(x: f64) -> f64 {
    let x = x.abs();
    if x == 0.0 {
        1.0
    } else if x >= 1.0 {
        0.0
    } else {
        let x = x * std::f64::consts::PI;
        x.sin() / x * (0.54 + 0.46 * x.cos())
    }
}

/// One output sample's taps: first input index and fixed-point weights.
struct Taps {
    first: usize,
    weights: Vec<i32>,
}

/// Pillow's `precompute_coeffs` + `normalize_coeffs_8bpc` for resizing
/// `in_size` samples to `out_size` over the whole input.
fn taps(filter: Resample, support: f64, in_size: usize, out_size: usize) -> Vec<Taps> {
    let scale = in_size as f64 / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = support * filterscale;
    let ss = 1.0 / filterscale;
    (0..out_size)
        .map(|xx| {
            let center = (xx as f64 + 0.5) * scale;
            // C `(int)` truncates toward zero; negatives clamp to 0 anyway.
            let xmin = ((center - support + 0.5) as i64).max(0) as usize;
            let xmax = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
            let count = xmax.saturating_sub(xmin);
            let raw: Vec<f64> = (0..count)
                .map(|x| filter.kernel(((x + xmin) as f64 - center + 0.5) * ss))
                .collect();
            let total: f64 = raw.iter().sum();
            let one = f64::from(1u32 << PRECISION_BITS);
            let weights = raw
                .iter()
                .map(|&w| {
                    let w = if total != 0.0 { w / total } else { w };
                    if w < 0.0 {
                        (-0.5 + w * one) as i32
                    } else {
                        (0.5 + w * one) as i32
                    }
                })
                .collect();
            Taps {
                first: xmin,
                weights,
            }
        })
        .collect()
}

/// Round a fixed-point accumulator to u8 like Pillow's `clip8`.
fn clip8(acc: i64) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, 255) as u8
}

/// Convolve `len` samples `stride` bytes apart from `base` with `t`.
fn convolve(pixels: &[u8], base: usize, stride: usize, t: &Taps) -> u8 {
    let mut acc: i64 = 1 << (PRECISION_BITS - 1);
    for (i, &w) in t.weights.iter().enumerate() {
        acc += i64::from(pixels[base + (t.first + i) * stride]) * i64::from(w);
    }
    clip8(acc)
}

/// Pillow's horizontal pass (all rows; Pillow skips rows the vertical pass
/// will not read, which changes nothing).
fn horizontal(src: &Rgb8, out_w: usize, filter: Resample, support: f64) -> Rgb8 {
    if out_w == src.width {
        return src.clone();
    }
    let taps = taps(filter, support, src.width, out_w);
    let mut pixels = vec![0u8; src.height * out_w * 3];
    for y in 0..src.height {
        for (xx, t) in taps.iter().enumerate() {
            for c in 0..3 {
                let row = y * src.width * 3 + c;
                pixels[(y * out_w + xx) * 3 + c] = convolve(&src.pixels, row, 3, t);
            }
        }
    }
    Rgb8 {
        width: out_w,
        height: src.height,
        pixels,
    }
}

/// Pillow's vertical pass.
fn vertical(src: &Rgb8, out_h: usize, filter: Resample, support: f64) -> Rgb8 {
    if out_h == src.height {
        return src.clone();
    }
    let taps = taps(filter, support, src.height, out_h);
    let w3 = src.width * 3;
    let mut pixels = vec![0u8; out_h * w3];
    for (yy, t) in taps.iter().enumerate() {
        for x in 0..w3 {
            pixels[yy * w3 + x] = convolve(&src.pixels, x, w3, t);
        }
    }
    Rgb8 {
        width: src.width,
        height: out_h,
        pixels,
    }
}

/// Whether Pillow runs the vertical pass first: Pillow 13's
/// `ImagingResampleInner` does when the height shrinks by more than twice
/// as many pixels as the width does (a width that grows counts negative),
/// to make the horizontal pass cheaper. Each pass rounds to u8, so the
/// order shows in the result.
fn vertical_first(src: &Rgb8, out_w: usize, out_h: usize) -> bool {
    // Image sides are far below 2^62, so the widened differences are exact.
    let height_drop = src.height as i128 - out_h as i128;
    let width_drop = src.width as i128 - out_w as i128;
    height_drop > 0 && height_drop > 2 * width_drop
}

/// Pillow's `ImagingScaleAffine` source indices for NEAREST: the position
/// starts at half a step and is accumulated in f64 (not multiplied).
fn nearest_indices(in_size: usize, out_size: usize) -> Vec<usize> {
    let step = in_size as f64 / out_size as f64;
    let mut pos = step * 0.5;
    (0..out_size)
        .map(|_| {
            let i = (pos as usize).min(in_size - 1);
            pos += step;
            i
        })
        .collect()
}

fn nearest(src: &Rgb8, out_w: usize, out_h: usize) -> Rgb8 {
    let xs = nearest_indices(src.width, out_w);
    let ys = nearest_indices(src.height, out_h);
    let mut pixels = Vec::with_capacity(out_w * out_h * 3);
    for &y in &ys {
        for &x in &xs {
            let at = (y * src.width + x) * 3;
            pixels.extend_from_slice(&src.pixels[at..at + 3]);
        }
    }
    Rgb8 {
        width: out_w,
        height: out_h,
        pixels,
    }
}

/// PIL `Image.resize((out_w, out_h), filter)` on an RGB image (an image
/// already of that size is returned unchanged, as PIL copies it).
pub fn resize(src: &Rgb8, out_w: usize, out_h: usize, filter: Resample) -> Rgb8 {
    if (out_w, out_h) == (src.width, src.height) {
        return src.clone();
    }
    let Some(support) = filter.support() else {
        return nearest(src, out_w, out_h);
    };
    if vertical_first(src, out_w, out_h) {
        horizontal(
            &vertical(src, out_h, filter, support),
            out_w,
            filter,
            support,
        )
    } else {
        vertical(
            &horizontal(src, out_w, filter, support),
            out_h,
            filter,
            support,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_weights_sum_to_one_in_fixed_point() {
        for filter in [Resample::Bicubic, Resample::Bilinear, Resample::Lanczos] {
            let support = filter.support().unwrap();
            for (i, o) in [(53, 42), (37, 42), (130, 42), (384, 378), (10, 10)] {
                for t in taps(filter, support, i, o) {
                    let s: i64 = t.weights.iter().map(|&w| i64::from(w)).sum();
                    assert!(
                        (s - (1 << PRECISION_BITS)).abs() <= t.weights.len() as i64,
                        "{filter:?} {i}->{o}: {s}"
                    );
                }
            }
        }
    }

    #[test]
    fn constant_image_stays_constant() {
        let img = Rgb8 {
            width: 9,
            height: 5,
            pixels: vec![77; 9 * 5 * 3],
        };
        for filter in [Resample::Bicubic, Resample::Bilinear, Resample::Nearest] {
            let r = resize(&img, 4, 13, filter);
            assert_eq!((r.width, r.height), (4, 13));
            assert!(r.pixels.iter().all(|&p| p == 77), "{filter:?}");
        }
    }

    #[test]
    fn nearest_takes_the_pixel_under_each_centre() {
        // 5 → 2: centres at 1.25 and 3.75; 2 → 5: 0.2, 0.6, 1.0, 1.4, 1.8.
        assert_eq!(nearest_indices(5, 2), [1, 3]);
        assert_eq!(nearest_indices(2, 5), [0, 0, 1, 1, 1]);
    }

    #[test]
    fn pass_order_follows_pillow() {
        let img = |width, height| Rgb8 {
            width,
            height,
            pixels: Vec::new(),
        };
        // Height drop 176 > 2 × width drop 76: vertical first.
        assert!(vertical_first(&img(300, 400), 224, 224));
        // 78 is not above 2 × 48, nor 96 above 2 × 48: horizontal first.
        assert!(!vertical_first(&img(90, 120), 42, 42));
        assert!(!vertical_first(&img(90, 138), 42, 42));
        assert!(vertical_first(&img(90, 139), 42, 42));
        // A growing width counts negative; a growing height never goes first.
        assert!(vertical_first(&img(30, 70), 42, 42));
        assert!(!vertical_first(&img(30, 30), 42, 42));
    }
}
