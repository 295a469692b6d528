//! Image decoding as transformers' PIL backend sees images: PNG or JPEG
//! decoded and converted to 8-bit RGB as `convert_to_rgb` does with PIL.
//! The processors that resize, crop and normalise the result are in
//! [`super::processor`].

use std::path::Path;

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
