//! Model inputs and outputs on disk: `--image FILE` (PNG/JPEG, preprocessed
//! by the checkpoint's own image processor, [`processor`]) or `--input
//! pixel_values.npy` (float32 NCHW), and `.npy` output files.

mod jpeg;
pub mod npy;
pub mod preprocess;
pub mod processor;

use std::path::Path;

pub use npy::{NpyArray, NpyError, NpyErrorKind};

/// Pixel values for the vision tower: `[batch, channels, size, size]` float32.
#[derive(Clone, Debug, PartialEq)]
pub struct PixelValues {
    /// `[B, C, H, W]`.
    pub shape: [usize; 4],
    /// C-order data.
    pub data: Vec<f32>,
}

impl PixelValues {
    /// Load and preprocess an image for a model with `image_size` square
    /// inputs and 3 channels (batch 1) with SigLIP's default processor.
    pub fn from_image(path: &Path, image_size: usize) -> anyhow::Result<PixelValues> {
        let img = preprocess::decode_image(path)?;
        let siglip =
            processor::ImageProcessor::class_default(processor::ProcessorClass::Siglip, image_size);
        let (_, _, data) = siglip.apply(&img);
        Ok(PixelValues {
            shape: [1, 3, image_size, image_size],
            data,
        })
    }

    /// Load an image and preprocess it with `processor` for a model with
    /// `image_size` square inputs and patches of `patch` pixels (batch 1).
    /// An output larger than the model's input whose patch grid is the
    /// same (SigLIP So400m's processor makes 384 px for a 378 px model) is
    /// cut to its top-left `image_size` pixels: exactly what the patch
    /// convolution reads of it in transformers.
    pub fn from_image_with(
        path: &Path,
        processor: &processor::ImageProcessor,
        image_size: usize,
        patch: usize,
    ) -> anyhow::Result<PixelValues> {
        let img = preprocess::decode_image(path)?;
        Self::from_rgb_with(
            &img,
            processor,
            image_size,
            patch,
            &format!("--image {}", path.display()),
        )
    }

    /// [`PixelValues::from_image_with`] for an image already decoded
    /// (`source` names it in errors).
    pub fn from_rgb_with(
        img: &preprocess::Rgb8,
        processor: &processor::ImageProcessor,
        image_size: usize,
        patch: usize,
        source: &str,
    ) -> anyhow::Result<PixelValues> {
        let (h, w, data) = processor.apply(img);
        let side = |n: usize| n >= image_size && n / patch.max(1) == image_size / patch.max(1);
        if !(side(h) && side(w)) {
            anyhow::bail!(
                "{source}: the image processor ({}) makes a {w}×{h} image of it; the model takes {image_size}×{image_size}",
                processor.describe()
            );
        }
        let mut cut = Vec::with_capacity(3 * image_size * image_size);
        for c in 0..3 {
            for y in 0..image_size {
                let row = (c * h + y) * w;
                cut.extend_from_slice(&data[row..row + image_size]);
            }
        }
        Ok(PixelValues {
            shape: [1, 3, image_size, image_size],
            data: cut,
        })
    }

    /// Read `pixel_values.npy`, requiring `[B, channels, image_size,
    /// image_size]` (any B ≥ 1; `batch` pins it when given).
    pub fn from_npy(
        path: &Path,
        batch: Option<usize>,
        channels: usize,
        image_size: usize,
    ) -> Result<PixelValues, NpyError> {
        let a = NpyArray::read(path)?;
        a.expect_shape(
            path,
            &[batch, Some(channels), Some(image_size), Some(image_size)],
        )?;
        if a.shape[0] == 0 {
            return Err(NpyError::new(
                path,
                NpyErrorKind::ShapeMismatch {
                    expected: vec![
                        batch.or(Some(1)),
                        Some(channels),
                        Some(image_size),
                        Some(image_size),
                    ],
                    found: a.shape,
                },
            ));
        }
        if let Some((index, &value)) = a.data.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(NpyError::new(
                path,
                NpyErrorKind::NonFinite { index, value },
            ));
        }
        Ok(PixelValues {
            shape: [a.shape[0], a.shape[1], a.shape[2], a.shape[3]],
            data: a.data,
        })
    }

    /// Batch size.
    pub fn batch(&self) -> usize {
        self.shape[0]
    }
}

/// Write a float32 array as `.npy`.
pub fn write_npy(path: &Path, shape: &[usize], data: &[f32]) -> Result<(), NpyError> {
    NpyArray {
        shape: shape.to_vec(),
        data: data.to_vec(),
    }
    .write(path)
}
