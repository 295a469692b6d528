//! SigLIP image preprocessing, bit-compatible with HF's PIL image processor
//! (`SiglipImageProcessorPil`, the classic `SiglipImageProcessor`):
//! convert to RGB, resize to the model's square size with PIL's BICUBIC filter
//! on the 8-bit image, rescale by 1/255 (in f64, then rounded to f32, as
//! `transformers.image_transforms.rescale` does), normalise with mean = std =
//! 0.5, and lay out channels first (docs/facts/siglip-and-fp8.md §1.6).
//!
//! The resize reproduces Pillow's `ImagingResample` for 8-bit images exactly:
//! a separable convolution (each pass rounded to u8, in Pillow's pass order)
//! whose support widens by the downscale factor (antialiasing), with the
//! kernel weights quantised to 22-bit fixed point.

use std::path::Path;

/// Pillow's fixed-point precision for 8-bit resampling: 32 bits minus 8 for
/// the pixel and 2 for the sign and headroom of negative lobes.
const PRECISION_BITS: u32 = 32 - 8 - 2;

/// SigLIP's normalisation: mean = std = 0.5 on every channel.
const NORM_MEAN: f32 = 0.5;
const NORM_STD: f32 = 0.5;

/// An 8-bit RGB image, row-major, 3 bytes per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rgb8 {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `height × width × 3` bytes.
    pub pixels: Vec<u8>,
}

/// Decode a PNG or JPEG file into RGB as transformers' `convert_to_rgb` does
/// it with PIL: JPEG with libjpeg-turbo's decoder ([`super::jpeg`]; a
/// truncated file is an error); PNG with grey replicated, 16-bit RGB(A) and
/// grey+alpha reduced to their high byte, 16-bit grey clipped to 0..=255
/// (PIL's `I;16` → `RGB` conversion clips, it does not scale), and any
/// transparency (an alpha channel, or a `tRNS` chunk, which the decoder
/// expands into one) composited onto white, as [`over_white`] says.
pub fn decode_image(path: &Path) -> anyhow::Result<Rgb8> {
    use anyhow::Context;
    let bytes = crate::fsio::read_bounded(path, crate::fsio::Limit::IMAGE)
        .with_context(|| format!("reading image {}", path.display()))?;
    let format = image::guess_format(&bytes).map_err(|_| {
        anyhow::anyhow!(
            "{}: not a PNG or JPEG image (unrecognised file signature)",
            path.display()
        )
    })?;
    if !matches!(format, image::ImageFormat::Png | image::ImageFormat::Jpeg) {
        anyhow::bail!(
            "{}: image format {format:?} is not supported; use PNG or JPEG",
            path.display()
        );
    }
    let (width, height, pixels) = if format == image::ImageFormat::Jpeg {
        super::jpeg::decode(&bytes)
            .map_err(|e| anyhow::anyhow!("decoding JPEG image {}: {e}", path.display()))?
    } else {
        let img = image::load_from_memory_with_format(&bytes, format)
            .with_context(|| format!("decoding {format:?} image {}", path.display()))?;
        let (w, h) = (img.width() as usize, img.height() as usize);
        (w, h, png_rgb_as_pil(img))
    };
    if width == 0 || height == 0 {
        anyhow::bail!("{}: image has no pixels ({width}×{height})", path.display());
    }
    Ok(Rgb8 {
        width,
        height,
        pixels,
    })
}

/// A decoded PNG as transformers' `convert_to_rgb` gives it with PIL (see
/// [`decode_image`]).
fn png_rgb_as_pil(img: image::DynamicImage) -> Vec<u8> {
    use image::DynamicImage as D;
    let high = |v: u16| (v >> 8) as u8;
    match img {
        D::ImageRgb16(i) => i.into_raw().into_iter().map(high).collect(),
        D::ImageRgba8(i) => i
            .into_raw()
            .chunks_exact(4)
            .flat_map(|p| over_white([p[0], p[1], p[2]], p[3]))
            .collect(),
        D::ImageRgba16(i) => i
            .into_raw()
            .chunks_exact(4)
            .flat_map(|p| over_white([high(p[0]), high(p[1]), high(p[2])], high(p[3])))
            .collect(),
        D::ImageLumaA8(i) => i
            .into_raw()
            .chunks_exact(2)
            .flat_map(|p| over_white([p[0]; 3], p[1]))
            .collect(),
        D::ImageLumaA16(i) => i
            .into_raw()
            .chunks_exact(2)
            .flat_map(|p| over_white([high(p[0]); 3], high(p[1])))
            .collect(),
        D::ImageLuma16(i) => i
            .into_raw()
            .into_iter()
            .flat_map(|v| [v.min(255) as u8; 3])
            .collect(),
        other => other.to_rgb8().into_raw(),
    }
}

/// One pixel of alpha `alpha` composited onto opaque white, as transformers'
/// `convert_to_rgb` does it for any image with transparency (PIL's
/// `alpha_composite` over a white RGBA background, then `convert("RGB")`).
/// Pillow's integer arithmetic (`ImagingAlphaComposite`): with an opaque
/// destination its weights are `alpha·128` and `(255 − alpha)·128` (7
/// fractional bits), and the division by 255 is `((x >> 8) + x) >> 8` after
/// adding a half; alpha 0 gives the background itself.
fn over_white(rgb: [u8; 3], alpha: u8) -> [u8; 3] {
    if alpha == 0 {
        return [255; 3];
    }
    const FRACTION_BITS: u32 = 7;
    let (a, white) = (u32::from(alpha), 255u32);
    let source = a << FRACTION_BITS;
    let background = (255 - a) << FRACTION_BITS;
    rgb.map(|c| {
        let x = u32::from(c) * source + white * background + (0x80 << FRACTION_BITS);
        ((((x >> 8) + x) >> 8) >> FRACTION_BITS) as u8
    })
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

/// One output sample's taps: first input index and fixed-point weights.
struct Taps {
    first: usize,
    weights: Vec<i32>,
}

/// Pillow's `precompute_coeffs` + `normalize_coeffs_8bpc` for resizing
/// `in_size` samples to `out_size` over the whole input.
fn taps(in_size: usize, out_size: usize) -> Vec<Taps> {
    let scale = in_size as f64 / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = 2.0 * filterscale;
    (0..out_size)
        .map(|xx| {
            let center = (xx as f64 + 0.5) * scale;
            // C `(int)` truncates toward zero; negatives clamp to 0 anyway.
            let xmin = ((center - support + 0.5) as i64).max(0) as usize;
            let xmax = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
            let count = xmax.saturating_sub(xmin);
            let raw: Vec<f64> = (0..count)
                .map(|x| bicubic((x as f64 + xmin as f64 - center + 0.5) / filterscale))
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

/// Pillow's horizontal pass (all rows; Pillow skips rows the vertical pass
/// will not read, which changes nothing).
fn resize_horizontal(src: &Rgb8, out_w: usize) -> Rgb8 {
    if out_w == src.width {
        return src.clone();
    }
    let taps = taps(src.width, out_w);
    let mut pixels = vec![0u8; src.height * out_w * 3];
    for y in 0..src.height {
        let row = &src.pixels[y * src.width * 3..(y + 1) * src.width * 3];
        for (xx, t) in taps.iter().enumerate() {
            for c in 0..3 {
                let mut acc: i64 = 1 << (PRECISION_BITS - 1);
                for (i, &w) in t.weights.iter().enumerate() {
                    acc += i64::from(row[(t.first + i) * 3 + c]) * i64::from(w);
                }
                pixels[(y * out_w + xx) * 3 + c] = clip8(acc);
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
fn resize_vertical(src: &Rgb8, out_h: usize) -> Rgb8 {
    if out_h == src.height {
        return src.clone();
    }
    let taps = taps(src.height, out_h);
    let w3 = src.width * 3;
    let mut pixels = vec![0u8; out_h * w3];
    for (yy, t) in taps.iter().enumerate() {
        for x in 0..w3 {
            let mut acc: i64 = 1 << (PRECISION_BITS - 1);
            for (i, &w) in t.weights.iter().enumerate() {
                acc += i64::from(src.pixels[(t.first + i) * w3 + x]) * i64::from(w);
            }
            pixels[yy * w3 + x] = clip8(acc);
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

/// PIL `Image.resize((width, height), BICUBIC)` on an RGB image.
pub fn resize_bicubic(src: &Rgb8, out_w: usize, out_h: usize) -> Rgb8 {
    if vertical_first(src, out_w, out_h) {
        resize_horizontal(&resize_vertical(src, out_h), out_w)
    } else {
        resize_vertical(&resize_horizontal(src, out_w), out_h)
    }
}

/// Rescale, normalise and transpose to `[1, 3, H, W]` float32.
pub fn normalize_chw(img: &Rgb8) -> Vec<f32> {
    let (w, h) = (img.width, img.height);
    let mut out = vec![0f32; 3 * h * w];
    for y in 0..h {
        for x in 0..w {
            for c in 0..3 {
                let u = img.pixels[(y * w + x) * 3 + c];
                // HF: image.astype(float64) * (1/255) → float32, then (x - mean) / std in float32.
                let rescaled = (f64::from(u) * (1.0 / 255.0)) as f32;
                out[(c * h + y) * w + x] = (rescaled - NORM_MEAN) / NORM_STD;
            }
        }
    }
    out
}

/// The whole SigLIP preprocessing of an image file to `[1, 3, size, size]`.
pub fn preprocess_image(path: &Path, size: usize) -> anyhow::Result<Vec<f32>> {
    let img = decode_image(path)?;
    Ok(normalize_chw(&resize_bicubic(&img, size, size)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_weights_sum_to_one_in_fixed_point() {
        for (i, o) in [(53, 42), (37, 42), (130, 42), (384, 378), (10, 10)] {
            for t in taps(i, o) {
                let s: i64 = t.weights.iter().map(|&w| i64::from(w)).sum();
                assert!(
                    (s - (1 << PRECISION_BITS)).abs() <= t.weights.len() as i64,
                    "{i}->{o}: {s}"
                );
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
        let r = resize_bicubic(&img, 4, 13);
        assert!(r.pixels.iter().all(|&p| p == 77));
        let v = normalize_chw(&r);
        assert_eq!(v.len(), 3 * 4 * 13);
        let expect = ((77.0f64 / 255.0) as f32 - 0.5) / 0.5;
        assert!(v.iter().all(|&x| x == expect));
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
