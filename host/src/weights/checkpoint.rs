//! HF checkpoint directories: `config.json` + `model.safetensors`.
//!
//! Tensor names may carry the `vision_model.` prefix (a full `SiglipModel` or
//! `CLIPModel`, a transformers-4 `SiglipVisionModel`) or not (a bare vision
//! transformer, ViT, DINOv2);
//! text-tower tensors (`text_model.*`, `logit_scale`, `logit_bias`) are
//! ignored. F32, F16 and BF16 are accepted and widened to f32 exactly.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use safetensors::{Dtype, SafeTensorError, SafeTensors};

use super::{canonical_name, HostTensor, WeightError, WeightSpec, Weights};

/// Prefix of vision-tower tensors in full SigLIP checkpoints.
pub const VISION_PREFIX: &str = "vision_model.";

/// Tensors no vision-tower forward reads, never bound, never an error:
/// buffers some exporters persist, DINOv2's and ViT's masked-image-modelling
/// `mask_token`, a full CLIP model's projections (see
/// `Family::unused_tensors`).
const IGNORED_BUFFERS: &[&str] = &[
    "embeddings.position_ids",
    "embeddings.mask_token",
    "visual_projection.weight",
    "text_projection.weight",
];

/// The config file name inside a checkpoint directory.
pub const CONFIG_FILE: &str = "config.json";
/// The weights file name inside a checkpoint directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";

/// Where a canonical (prefix-less) parameter lives in the file.
#[derive(Clone, Debug)]
struct StoredTensor {
    stored_name: String,
}

/// An opened `model.safetensors`: the raw bytes (validated header) and the
/// vision tensors by canonical name.
pub struct Checkpoint {
    file: PathBuf,
    bytes: Vec<u8>,
    vision: BTreeMap<String, StoredTensor>,
}

fn dtype_name(d: Dtype) -> String {
    format!("{d:?}")
}

/// Find the first tensor (by data offset) that lies beyond the bytes present,
/// for a readable "truncated" error. Returns `None` if the header itself is
/// unreadable.
fn diagnose_truncation(bytes: &[u8]) -> Option<(String, usize, usize)> {
    let n = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
    let header = bytes.get(8..8usize.checked_add(n)?)?;
    first_beyond(header, bytes.len() - 8 - n)
}

/// The first tensor (by end offset) of a header's JSON whose data ends past
/// `available` bytes: (name, end, available).
fn first_beyond(header: &[u8], available: usize) -> Option<(String, usize, usize)> {
    let json: serde_json::Value = serde_json::from_str(std::str::from_utf8(header).ok()?).ok()?;
    let mut spans: Vec<(usize, String)> = json
        .as_object()?
        .iter()
        .filter(|(k, _)| k.as_str() != "__metadata__")
        .filter_map(|(k, v)| {
            let end = v.get("data_offsets")?.get(1)?.as_u64()? as usize;
            Some((end, k.clone()))
        })
        .collect();
    spans.sort();
    spans
        .into_iter()
        .find(|(end, _)| *end > available)
        .map(|(end, name)| (name, end, available))
}

/// Reads a `.safetensors` file after checking, from its header alone, that
/// its size is the one the header declares: a regular file (never a FIFO or
/// device), a header of at most [`Limit::SAFETENSORS_HEADER`], and data
/// ending exactly where the last tensor does — so a file whose length
/// contradicts its header is refused before its data is read.
///
/// [`Limit::SAFETENSORS_HEADER`]: crate::fsio::Limit::SAFETENSORS_HEADER
fn read_checked(file: &Path) -> Result<Vec<u8>, WeightError> {
    use std::io::{Read, Seek};
    let io = |source| WeightError::Io {
        file: file.to_path_buf(),
        source,
    };
    let corrupt = |why: String| WeightError::Corrupt {
        file: file.to_path_buf(),
        why,
    };
    let (mut f, size) = crate::fsio::open_regular(file).map_err(io)?;
    let mut n = [0u8; 8];
    if size < 8 {
        return Err(corrupt(format!(
            "{size} bytes: too short for a safetensors header length"
        )));
    }
    f.read_exact(&mut n).map_err(io)?;
    let n = u64::from_le_bytes(n);
    let limit = crate::fsio::Limit::SAFETENSORS_HEADER;
    if n > limit.bytes || n > size - 8 {
        return Err(corrupt(format!(
            "header length {n} bytes, but the file has {size} bytes and a header may have at most {}",
            limit.bytes
        )));
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).map_err(io)?;
    let available = size - 8 - n;
    let json: serde_json::Value = serde_json::from_slice(&header)
        .map_err(|e| corrupt(format!("header is not valid JSON: {e}")))?;
    let declared = json
        .as_object()
        .ok_or_else(|| corrupt("header is not a JSON object".into()))?
        .iter()
        .filter(|(k, _)| k.as_str() != "__metadata__")
        .filter_map(|(_, v)| v.get("data_offsets")?.get(1)?.as_u64())
        .max()
        .unwrap_or(0);
    if declared > available {
        return Err(
            match first_beyond(&header, usize::try_from(available).unwrap_or(usize::MAX)) {
                Some((tensor, needed, available)) => WeightError::Truncated {
                    file: file.to_path_buf(),
                    tensor,
                    needed,
                    available,
                },
                None => corrupt("data section length does not match the header".into()),
            },
        );
    }
    if declared < available {
        return Err(corrupt(format!(
            "{} bytes after the last tensor's data (the header's data ends at {declared}, the file holds {available})",
            available - declared
        )));
    }
    f.rewind().map_err(io)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    f.take(size.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 != size {
        return Err(io(crate::fsio::FsError::Changed {
            path: file.to_path_buf(),
            expected: size,
        }
        .into()));
    }
    Ok(bytes)
}

impl Checkpoint {
    /// Open `dir/model.safetensors` (or a `.safetensors` file path directly).
    pub fn open(path: &Path) -> Result<Checkpoint, WeightError> {
        let file = if path.is_dir() {
            path.join(WEIGHTS_FILE)
        } else {
            path.to_path_buf()
        };
        let bytes = read_checked(&file)?;
        Self::from_bytes(file, bytes)
    }

    /// A checkpoint from the bytes of a `.safetensors` file (`file` names it
    /// in errors): the header is parsed and validated, tensors are read by
    /// [`Checkpoint::bind`].
    pub fn from_bytes(file: PathBuf, bytes: Vec<u8>) -> Result<Checkpoint, WeightError> {
        let names: Vec<String> = match SafeTensors::deserialize(&bytes) {
            Ok(st) => st.names().into_iter().map(str::to_string).collect(),
            Err(SafeTensorError::MetadataIncompleteBuffer) => {
                return Err(match diagnose_truncation(&bytes) {
                    Some((tensor, needed, available)) => WeightError::Truncated {
                        file,
                        tensor,
                        needed,
                        available,
                    },
                    None => WeightError::Corrupt {
                        file,
                        why: "data section length does not match the header".into(),
                    },
                })
            }
            Err(e) => {
                return Err(WeightError::Corrupt {
                    file,
                    why: format!("{e}"),
                })
            }
        };
        let mut vision = BTreeMap::new();
        for stored in names {
            if stored.starts_with("text_model.")
                || stored == "logit_scale"
                || stored == "logit_bias"
            {
                continue;
            }
            let canonical = stored
                .strip_prefix(VISION_PREFIX)
                .unwrap_or(&stored)
                .to_string();
            if IGNORED_BUFFERS.contains(&canonical.as_str()) {
                continue;
            }
            if vision
                .insert(
                    canonical.clone(),
                    StoredTensor {
                        stored_name: stored,
                    },
                )
                .is_some()
            {
                return Err(WeightError::Duplicate {
                    file,
                    tensor: canonical,
                });
            }
        }
        Ok(Checkpoint {
            file,
            bytes,
            vision,
        })
    }

    /// Encoder layers stored: one more than the deepest
    /// `encoder.layers.{i}` tensor (0 without any).
    pub fn encoder_layers(&self) -> usize {
        self.vision
            .keys()
            .filter_map(|n| encoder_layer_index(n))
            .max()
            .map_or(0, |deepest| deepest.saturating_add(1))
    }

    /// SHA-256 of the whole `.safetensors` file: the identity a package
    /// records for the checkpoint it was compiled from.
    pub fn sha256(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        Sha256::digest(&self.bytes).into()
    }

    /// The weights file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Canonical names of the vision tensors present.
    pub fn vision_tensor_names(&self) -> impl Iterator<Item = &str> {
        self.vision.keys().map(String::as_str)
    }

    /// Bind every parameter in `specs` to checkpoint tensors (concatenating
    /// multi-part sources along axis 0), checking shapes and converting to
    /// f32.
    ///
    /// Vision tensors no spec asks for are an error, except encoder layers
    /// beyond the deepest one requested (`--vit-layers N` on a deeper
    /// checkpoint).
    pub fn bind(&self, specs: &[WeightSpec]) -> Result<Weights, WeightError> {
        // Deserialising again only re-parses the header; `open` validated it.
        let st = SafeTensors::deserialize(&self.bytes).map_err(|e| WeightError::Corrupt {
            file: self.file.clone(),
            why: format!("{e}"),
        })?;
        let wanted: BTreeSet<&str> = specs
            .iter()
            .flat_map(|s| s.sources.iter().map(|n| canonical_name(n)))
            .collect();
        let deepest_layer = wanted.iter().filter_map(|n| encoder_layer_index(n)).max();
        for name in self.vision.keys() {
            if wanted.contains(name.as_str()) {
                continue;
            }
            let beyond_depth = match (encoder_layer_index(name), deepest_layer) {
                (Some(i), Some(d)) => i > d,
                _ => false,
            };
            if !beyond_depth {
                return Err(WeightError::Unexpected {
                    file: self.file.clone(),
                    tensor: self.vision[name].stored_name.clone(),
                    config: "config",
                });
            }
        }
        // Every source's presence, shape and dtype from the header first, in
        // spec order: a config that disagrees with the checkpoint is an error
        // naming the tensor before anything is allocated, and the error
        // reported never depends on thread timing.
        let mut part_shapes = Vec::with_capacity(specs.len());
        for spec in specs {
            let part_shape = spec.part_shape().ok_or_else(|| WeightError::Shape {
                file: self.file.clone(),
                tensor: spec.name.clone(),
                expected: spec.shape.clone(),
                found: Vec::new(),
            })?;
            for source in &spec.sources {
                self.view(&st, canonical_name(source), &part_shape)?;
            }
            part_shapes.push(part_shape);
        }
        // The shapes match stored tensors, so these sizes are bounded by the
        // file. Results keep spec order; the first error in that order wins.
        let bound: Vec<Result<(String, HostTensor), WeightError>> = specs
            .par_iter()
            .zip(part_shapes.par_iter())
            .map(|(spec, part_shape)| {
                let mut data = Vec::with_capacity(spec.shape.iter().product());
                for source in &spec.sources {
                    data.extend(self.read_tensor(&st, canonical_name(source), part_shape)?);
                }
                Ok((
                    canonical_name(&spec.name).to_string(),
                    HostTensor {
                        shape: spec.shape.clone(),
                        data: spec.convert(data),
                    },
                ))
            })
            .collect();
        let bound: Result<Vec<_>, WeightError> = bound.into_iter().collect();
        Ok(Weights::from_map(bound?.into_iter().collect()))
    }

    /// One stored tensor's view, its shape and dtype checked (header only).
    fn view<'s>(
        &self,
        st: &'s SafeTensors<'_>,
        canonical: &str,
        shape: &[usize],
    ) -> Result<safetensors::tensor::TensorView<'s>, WeightError> {
        let stored = self
            .vision
            .get(canonical)
            .ok_or_else(|| WeightError::Missing {
                file: self.file.clone(),
                tensor: canonical.to_string(),
                expected: shape.to_vec(),
            })?;
        let view = st
            .tensor(&stored.stored_name)
            .map_err(|e| WeightError::Corrupt {
                file: self.file.clone(),
                why: format!("tensor `{}`: {e}", stored.stored_name),
            })?;
        if view.shape() != shape {
            return Err(WeightError::Shape {
                file: self.file.clone(),
                tensor: stored.stored_name.clone(),
                expected: shape.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        if !matches!(view.dtype(), Dtype::F32 | Dtype::F16 | Dtype::BF16) {
            return Err(WeightError::Dtype {
                file: self.file.clone(),
                tensor: stored.stored_name.clone(),
                dtype: dtype_name(view.dtype()),
            });
        }
        Ok(view)
    }

    /// One stored tensor, shape-checked, widened to f32, finite.
    fn read_tensor(
        &self,
        st: &SafeTensors<'_>,
        canonical: &str,
        shape: &[usize],
    ) -> Result<Vec<f32>, WeightError> {
        let view = self.view(st, canonical, shape)?;
        let stored = &self.vision[canonical];
        let data = widen(view.dtype(), view.data()).ok_or_else(|| WeightError::Dtype {
            file: self.file.clone(),
            tensor: stored.stored_name.clone(),
            dtype: dtype_name(view.dtype()),
        })?;
        if let Some(index) = data.iter().position(|v| !v.is_finite()) {
            return Err(WeightError::NonFinite {
                file: self.file.clone(),
                tensor: stored.stored_name.clone(),
                index,
            });
        }
        Ok(data)
    }
}

/// The tensor names in a `.safetensors` file's header, reading only the
/// header (at most 100 MB, the format's limit); `None` when the file cannot
/// be read or the header is not valid (opening it for binding reports why).
pub fn header_tensor_names(file: &Path) -> Option<Vec<String>> {
    use std::io::Read;
    const MAX_HEADER: u64 = 100_000_000;
    let mut f = std::fs::File::open(file).ok()?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len).ok()?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER {
        return None;
    }
    let mut header = Vec::new();
    f.take(n).read_to_end(&mut header).ok()?;
    let json: serde_json::Value = serde_json::from_slice(&header).ok()?;
    Some(
        json.as_object()?
            .keys()
            .filter(|k| k.as_str() != "__metadata__")
            .cloned()
            .collect(),
    )
}

/// `encoder.layers.{i}.…` (ViT/DINOv2: `encoder.layer.{i}.…`) → `i`.
pub fn encoder_layer_index(canonical: &str) -> Option<usize> {
    let rest = canonical
        .strip_prefix("encoder.layers.")
        .or_else(|| canonical.strip_prefix("encoder.layer."))?;
    rest.split('.').next()?.parse().ok()
}

/// Widen little-endian F32/F16/BF16 bytes to f32 (exact for all three).
fn widen(dtype: Dtype, bytes: &[u8]) -> Option<Vec<f32>> {
    const CHUNK: usize = 1 << 16;
    let width = match dtype {
        Dtype::F32 => 4,
        Dtype::F16 | Dtype::BF16 => 2,
        _ => return None,
    };
    let mut out = vec![0f32; bytes.len() / width];
    out.par_chunks_mut(CHUNK)
        .zip(bytes.par_chunks(CHUNK * width))
        .for_each(|(dst, src)| {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(width)) {
                *d = match dtype {
                    Dtype::F32 => f32::from_le_bytes([s[0], s[1], s[2], s[3]]),
                    Dtype::F16 => half::f16::from_bits(u16::from_le_bytes([s[0], s[1]])).to_f32(),
                    // BF16 is the top half of an f32.
                    _ => f32::from_bits(u32::from(u16::from_le_bytes([s[0], s[1]])) << 16),
                };
            }
        });
    Some(out)
}

/// `dir/config.json` as [`VisionConfig::from_checkpoint_dir`] reads it, with
/// what only the weights say: a ViTModel saved with
/// `add_pooling_layer=False` has no pooler, and its config does not say so.
pub fn checkpoint_config(
    dir: &Path,
) -> Result<crate::model::VisionConfig, crate::model::ModelError> {
    let mut config = crate::model::VisionConfig::from_checkpoint_dir(dir)?;
    if config.family == crate::model::Family::Vit {
        if let Some(names) = header_tensor_names(&dir.join(super::WEIGHTS_FILE)) {
            config.vision_use_head = names
                .iter()
                .any(|n| super::canonical_name(n) == "pooler.dense.weight");
        }
    }
    Ok(config)
}
