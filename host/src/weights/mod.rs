//! Model weights: loaded from an HF checkpoint directory or generated from a
//! seed, bound by the parameter list the SigLIP builder (`host::model`)
//! declares, and held as f32 on the host.
//!
//! ```no_run
//! use ipuc::weights::{Checkpoint, WeightSpec, random_weights};
//! let specs = vec![WeightSpec::single("vision_model.post_layernorm.weight", vec![1152])];
//! let from_seed = random_weights(0, &specs);
//! let from_disk = Checkpoint::open("ckpt/".as_ref())?.bind(&specs)?;
//! # Ok::<(), ipuc::weights::WeightError>(())
//! ```

mod checkpoint;
mod error;
mod random;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::model::{interpolate_positions, ParameterSpec, PositionResample, SiglipModel, ZeroPad};

pub use checkpoint::{
    checkpoint_config, encoder_layer_index, header_tensor_names, Checkpoint, CONFIG_FILE,
    VISION_PREFIX, WEIGHTS_FILE,
};
pub use error::WeightError;
pub use random::{init_stats, random_tensor, random_weights};

/// A parameter the model needs: its graph name, shape, and the HF
/// checkpoint tensors holding its data (the `vision_model.` prefix is
/// optional everywhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightSpec {
    /// Graph parameter name, e.g. `vision_model.encoder.layers.3.mlp.fc1.weight`.
    pub name: String,
    /// Shape the graph expects, e.g. `[4304, 1152]`.
    pub shape: Vec<usize>,
    /// Checkpoint tensors concatenated along axis 0 to form it: just `name`
    /// normally; q, k, v for a fused QKV projection. Each part has the
    /// spec's shape with axis 0 divided by the part count.
    pub sources: Vec<String>,
    /// A position table stored for another image size: the single source
    /// has `class_rows + from_side²` rows and is resized to `shape`.
    pub resample: Option<PositionResample>,
    /// A tensor stored with fewer rows or columns (an odd patch's `C·p·p`,
    /// an MLP width not a multiple of 4): the single source has the pad's
    /// stored shape and is padded with zeros to `shape`.
    pub pad: Option<ZeroPad>,
}

impl WeightSpec {
    /// A spec stored under its own name.
    pub fn single(name: impl Into<String>, shape: Vec<usize>) -> WeightSpec {
        let name = name.into();
        WeightSpec {
            sources: vec![name.clone()],
            name,
            shape,
            resample: None,
            pad: None,
        }
    }

    /// Shape of each stored source part: the spec's shape with axis 0
    /// split evenly over the parts, or a resampled table's or padded
    /// weight's stored shape; `None` if the parts cannot split it.
    pub fn part_shape(&self) -> Option<Vec<usize>> {
        if let Some(pad) = &self.pad {
            return (self.sources.len() == 1).then(|| pad.stored.clone());
        }
        if let Some(r) = self.resample {
            let rows = r
                .from_side
                .checked_mul(r.from_side)?
                .checked_add(r.class_rows)?;
            let mut shape = self.shape.clone();
            let n = shape.len();
            if n < 2 || shape[..n - 2].iter().any(|&d| d != 1) {
                return None;
            }
            shape[n - 2] = rows;
            return (self.sources.len() == 1).then_some(shape);
        }
        self.split_shape()
    }

    /// The stored data `data` (of [`WeightSpec::part_shape`] parts) as the
    /// parameter: resampled or widened when the spec says so, else
    /// unchanged.
    pub fn convert(&self, data: Vec<f32>) -> Vec<f32> {
        if let Some(pad) = &self.pad {
            return pad.widen(&data, &self.shape);
        }
        match (self.resample, self.shape.last()) {
            (Some(r), Some(&width)) => {
                interpolate_positions(&data, width, r.class_rows, (r.from_side, r.to_side))
            }
            _ => data,
        }
    }

    fn split_shape(&self) -> Option<Vec<usize>> {
        let parts = self.sources.len();
        let mut shape = self.shape.clone();
        let first = shape.first_mut()?;
        if parts == 0 || *first % parts != 0 {
            return None;
        }
        *first /= parts;
        Some(shape)
    }
}

impl From<&ParameterSpec> for WeightSpec {
    fn from(p: &ParameterSpec) -> Self {
        WeightSpec {
            name: p.name.clone(),
            shape: p.shape.clone(),
            sources: p.sources.clone(),
            resample: p.resample,
            pad: p.pad.clone(),
        }
    }
}

/// Where a model's weights come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightSource {
    /// An HF checkpoint directory (`model.safetensors` inside it) or file.
    Checkpoint(PathBuf),
    /// Deterministic random values from this seed.
    Random {
        /// Seed.
        seed: u64,
    },
}

/// Weights for every parameter of `model`, loaded or generated.
pub fn weights_for(model: &SiglipModel, source: &WeightSource) -> Result<Weights, WeightError> {
    let specs: Vec<WeightSpec> = model.parameters.iter().map(WeightSpec::from).collect();
    match source {
        WeightSource::Checkpoint(path) => Checkpoint::open(path)?
            .for_family(model.config.family)
            .bind(&specs),
        WeightSource::Random { seed } => Ok(random_weights(*seed, &specs)),
    }
}

/// Strip the optional `vision_model.` prefix.
pub fn canonical_name(name: &str) -> &str {
    name.strip_prefix(VISION_PREFIX).unwrap_or(name)
}

/// A dense f32 tensor on the host, C order.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Elements.
    pub data: Vec<f32>,
}

/// Bound weights by canonical (prefix-less) HF name.
#[derive(Clone, Debug, Default)]
pub struct Weights {
    tensors: BTreeMap<String, HostTensor>,
}

impl Weights {
    /// Wrap a name → tensor map (names without the `vision_model.` prefix).
    pub fn from_map(tensors: BTreeMap<String, HostTensor>) -> Weights {
        Weights { tensors }
    }

    /// The tensor for an HF name, with or without the prefix.
    pub fn get(&self, name: &str) -> Option<&HostTensor> {
        self.tensors.get(canonical_name(name))
    }

    /// All tensors in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &HostTensor)> {
        self.tensors.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Take the tensor for an HF name (with or without the prefix) out of
    /// the set, freeing its place.
    pub fn remove(&mut self, name: &str) -> Option<HostTensor> {
        self.tensors.remove(canonical_name(name))
    }

    /// Consume into (name, tensor) pairs in name order, without copying.
    pub fn into_tensors(self) -> impl Iterator<Item = (String, HostTensor)> {
        self.tensors.into_iter()
    }

    /// Total parameter count.
    pub fn parameter_count(&self) -> usize {
        self.tensors.values().map(|t| t.data.len()).sum()
    }
}
