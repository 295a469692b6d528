//! Each checkpoint's own image preprocessing (issue #43 item 2): the
//! checkpoint's `preprocessor_config.json` read as transformers'
//! `AutoImageProcessor` reads it, and applied as transformers' PIL backend
//! applies it (`SiglipImageProcessorPil`, `CLIPImageProcessorPil`,
//! `ViTImageProcessorPil`, `BitImageProcessorPil`):
//!
//! 1. convert to RGB (always: ipuc decodes every image to RGB as
//!    `convert_to_rgb` does, see [`super::preprocess::decode_image`]);
//! 2. resize with PIL's filter ([`resample`]) to `{height, width}`, or so
//!    that the shortest edge is `shortest_edge` (the other edge
//!    `int(shortest_edge · long / short)`);
//! 3. centre crop to `crop_size` (an image smaller than the crop is padded
//!    with zeros, as `center_crop` does);
//! 4. rescale by `rescale_factor` (in f64, then rounded to f32);
//! 5. normalise `(x − mean) / std` in f32, channels first.
//!
//! An option ipuc does not implement is an error naming the key and the
//! file ([`ProcessorError`]), never ignored. Without the file each family
//! has a default ([`ImageProcessor::family_default`]), and each preset its
//! model's published processor ([`ImageProcessor::preset`]).

mod json;
pub mod resample;

use std::path::Path;

use crate::model::Family;

pub use json::{ProcessorError, PREPROCESSOR_FILE};
pub use resample::Resample;

use super::preprocess::Rgb8;

/// transformers' `IMAGENET_STANDARD_MEAN`/`_STD` (SigLIP, ViT).
pub const HALF: [f32; 3] = [0.5; 3];
/// transformers' `OPENAI_CLIP_MEAN`.
pub const CLIP_MEAN: [f32; 3] = [0.481_454_66, 0.457_827_5, 0.408_210_73];
/// transformers' `OPENAI_CLIP_STD`.
pub const CLIP_STD: [f32; 3] = [0.268_629_54, 0.261_302_6, 0.275_777_1];
/// transformers' `IMAGENET_DEFAULT_MEAN` (DINOv2's `BitImageProcessor`).
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
/// transformers' `IMAGENET_DEFAULT_STD`.
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// The transformers image-processor classes ipuc implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessorClass {
    Siglip,
    Clip,
    Vit,
    Bit,
}

impl ProcessorClass {
    /// transformers' class name.
    pub fn name(self) -> &'static str {
        match self {
            ProcessorClass::Siglip => "SiglipImageProcessor",
            ProcessorClass::Clip => "CLIPImageProcessor",
            ProcessorClass::Vit => "ViTImageProcessor",
            ProcessorClass::Bit => "BitImageProcessor",
        }
    }

    /// The class `AutoImageProcessor` picks for a checkpoint of `family`.
    pub fn of_family(family: Family) -> ProcessorClass {
        match family {
            Family::Siglip => ProcessorClass::Siglip,
            Family::Clip => ProcessorClass::Clip,
            Family::Vit => ProcessorClass::Vit,
            Family::Dinov2 => ProcessorClass::Bit,
        }
    }
}

/// How the image is resized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resize {
    /// To exactly `height × width`.
    Exact { height: usize, width: usize },
    /// The shortest edge to this many pixels, keeping the aspect ratio.
    ShortestEdge(usize),
}

/// One image processor's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageProcessor {
    /// The transformers class it follows.
    pub class: ProcessorClass,
    /// `do_resize` → `size`, `resample`.
    pub resize: Option<(Resize, Resample)>,
    /// `do_center_crop` → `crop_size` (height, width).
    pub crop: Option<(usize, usize)>,
    /// `do_rescale` → `rescale_factor`.
    pub rescale: Option<f64>,
    /// `do_normalize` → `image_mean`, `image_std`.
    pub normalize: Option<([f32; 3], [f32; 3])>,
}

impl ImageProcessor {
    /// The defaults of `class` (the class attributes of transformers'
    /// `*ImageProcessorPil`), with its output at `size` pixels square.
    pub fn class_default(class: ProcessorClass, size: usize) -> ImageProcessor {
        let (resize, crop, norm) = match class {
            ProcessorClass::Siglip => (exact(size, Resample::Bicubic), None, (HALF, HALF)),
            ProcessorClass::Vit => (exact(size, Resample::Bilinear), None, (HALF, HALF)),
            // BitImageProcessor's class defaults are CLIP's.
            ProcessorClass::Clip | ProcessorClass::Bit => (
                (Resize::ShortestEdge(size), Resample::Bicubic),
                Some((size, size)),
                (CLIP_MEAN, CLIP_STD),
            ),
        };
        ImageProcessor {
            class,
            resize: Some(resize),
            crop,
            rescale: Some(1.0 / 255.0),
            normalize: Some(norm),
        }
    }

    /// The processor for a `family` checkpoint at `size` pixels without a
    /// `preprocessor_config.json`: the family's class with its defaults,
    /// sized to the model; for DINOv2 its published settings (ImageNet
    /// mean and std, shortest edge `⌈size · 8/7⌉` — 256 for 224 — then a
    /// `size` crop).
    pub fn family_default(family: Family, size: usize) -> ImageProcessor {
        let mut p = Self::class_default(ProcessorClass::of_family(family), size);
        if family == Family::Dinov2 {
            p.resize = Some((
                Resize::ShortestEdge((size * 8).div_ceil(7)),
                Resample::Bicubic,
            ));
            p.normalize = Some((IMAGENET_MEAN, IMAGENET_STD));
        }
        p
    }

    /// A preset's published processor (`preprocessor_config.json` of the
    /// checkpoint the preset reproduces), or `None` for a preset without
    /// one (`siglip-small`).
    pub fn preset(name: &str) -> Option<ImageProcessor> {
        let (source, text) = match name {
            "siglip-so400m" | "siglip-vit-benchmark" => json::SO400M,
            "clip-vit-l14-336" => json::CLIP_L14_336,
            "vit-b16-224" => json::VIT_B16_224,
            "dinov2-l14-224" => json::DINOV2_LARGE,
            _ => return None,
        };
        let parsed = json::parse(text, Path::new(source));
        Some(parsed.expect("the built-in preset processors parse"))
    }

    /// Read `preprocessor_config.json` at `path`.
    pub fn from_file(path: &Path) -> Result<ImageProcessor, ProcessorError> {
        let text = crate::fsio::read_string_bounded(path, crate::fsio::Limit::CONFIG)
            .map_err(|e| ProcessorError::io(path, e))?;
        json::parse(&text, path)
    }

    /// The size `(height, width)` of every image this processor makes: the
    /// crop, else an exact resize; `None` when it follows the image.
    pub fn nominal_size(&self) -> Option<(usize, usize)> {
        match (self.crop, self.resize) {
            (Some(crop), _) => Some(crop),
            (None, Some((Resize::Exact { height, width }, _))) => Some((height, width)),
            _ => None,
        }
    }

    /// The processor with its output set to `size` square: the resize
    /// (and for a shortest-edge resize, its ratio to the crop kept) and the
    /// crop.
    pub fn resized_to(&self, size: usize) -> ImageProcessor {
        let mut p = self.clone();
        let crop_side = self.crop.map(|(h, w)| h.min(w));
        if let Some((r, filter)) = &mut p.resize {
            *r = match (*r, crop_side) {
                (Resize::ShortestEdge(e), Some(c)) if c > 0 => {
                    Resize::ShortestEdge((e * size).div_ceil(c).max(size))
                }
                (Resize::ShortestEdge(_), _) => Resize::ShortestEdge(size),
                (Resize::Exact { .. }, _) => exact(size, *filter).0,
            };
        }
        if p.crop.is_some() {
            p.crop = Some((size, size));
        }
        p
    }

    /// Preprocess a decoded RGB image: `(height, width, CHW f32 data)`.
    pub fn apply(&self, img: &Rgb8) -> (usize, usize, Vec<f32>) {
        let resized;
        let mut img = img;
        if let Some((r, filter)) = self.resize {
            let (h, w) = resized_size(r, img.width, img.height);
            resized = resample::resize(img, w, h, filter);
            img = &resized;
        }
        let cropped;
        if let Some((h, w)) = self.crop {
            cropped = center_crop(img, h, w);
            img = &cropped;
        }
        (img.height, img.width, self.normalize_chw(img))
    }

    /// Rescale and normalise, channels first.
    fn normalize_chw(&self, img: &Rgb8) -> Vec<f32> {
        let (w, h) = (img.width, img.height);
        let mut out = vec![0f32; 3 * h * w];
        for (i, px) in img.pixels.chunks_exact(3).enumerate() {
            for (c, &u) in px.iter().enumerate() {
                // HF: image.astype(float64) * factor → float32, then
                // (x - mean) / std in float32.
                let mut v = match self.rescale {
                    Some(factor) => (f64::from(u) * factor) as f32,
                    None => f32::from(u),
                };
                if let Some((mean, std)) = &self.normalize {
                    v = (v - mean[c]) / std[c];
                }
                out[c * h * w + i] = v;
            }
        }
        out
    }

    /// One line for messages: class, resize, crop, normalisation.
    pub fn describe(&self) -> String {
        let resize = match self.resize {
            Some((Resize::Exact { height, width }, f)) => {
                format!("resize to {width}×{height} {}", f.name())
            }
            Some((Resize::ShortestEdge(e), f)) => {
                format!("resize shortest edge to {e} {}", f.name())
            }
            None => "no resize".into(),
        };
        let crop = self
            .crop
            .map(|(h, w)| format!(", centre crop {w}×{h}"))
            .unwrap_or_default();
        let norm = match &self.normalize {
            Some((m, s)) => format!(", mean {m:?} std {s:?}"),
            None => ", not normalised".into(),
        };
        format!("{}: {resize}{crop}{norm}", self.class.name())
    }
}

fn exact(size: usize, filter: Resample) -> (Resize, Resample) {
    (
        Resize::Exact {
            height: size,
            width: size,
        },
        filter,
    )
}

/// `(height, width)` after resize `r` of a `width × height` image
/// (transformers' `get_resize_output_image_size` with
/// `default_to_square=False`: the long edge is `int(edge · long / short)`).
fn resized_size(r: Resize, width: usize, height: usize) -> (usize, usize) {
    match r {
        Resize::Exact { height, width } => (height, width),
        Resize::ShortestEdge(edge) => {
            let (short, long) = (width.min(height), width.max(height));
            let new_long = (edge as f64 * long as f64 / short as f64) as usize;
            if width <= height {
                (new_long, edge)
            } else {
                (edge, new_long)
            }
        }
    }
}

/// transformers' `center_crop`: the centred `height × width` window
/// (offsets `(size − crop) // 2`); an image smaller than the crop is first
/// padded with zeros to at least the crop, placed at `⌈(new − old)/2⌉`.
fn center_crop(img: &Rgb8, height: usize, width: usize) -> Rgb8 {
    let (new_h, new_w) = (img.height.max(height), img.width.max(width));
    let (pad_top, pad_left) = (
        (new_h - img.height).div_ceil(2),
        (new_w - img.width).div_ceil(2),
    );
    // The window in padded coordinates (offsets from the original image's
    // floor-halved margins, moved by the padding).
    let top = (img.height as i64 - height as i64).div_euclid(2) + pad_top as i64;
    let left = (img.width as i64 - width as i64).div_euclid(2) + pad_left as i64;
    let mut pixels = vec![0u8; height * width * 3];
    for y in 0..height {
        for x in 0..width {
            let (py, px) = (top + y as i64, left + x as i64);
            let (sy, sx) = (py - pad_top as i64, px - pad_left as i64);
            if (0..img.height as i64).contains(&sy) && (0..img.width as i64).contains(&sx) {
                let from = (sy as usize * img.width + sx as usize) * 3;
                let to = (y * width + x) * 3;
                pixels[to..to + 3].copy_from_slice(&img.pixels[from..from + 3]);
            }
        }
    }
    Rgb8 {
        width,
        height,
        pixels,
    }
}

#[cfg(test)]
mod tests;
