//! Model weights: loaded from an HF checkpoint directory or generated from a
//! seed, bound by the parameter list the SigLIP builder (`host::model`)
//! declares, and held as f32 on the host.
//!
//! ```no_run
//! use ipuc::weights::{Checkpoint, WeightSpec, random_weights};
//! let specs = vec![WeightSpec { name: "post_layernorm.weight".into(), shape: vec![1152] }];
//! let from_seed = random_weights(0, &specs);
//! let from_disk = Checkpoint::open("ckpt/".as_ref())?.bind(&specs)?;
//! # Ok::<(), ipuc::weights::WeightError>(())
//! ```

mod checkpoint;
mod error;
mod random;

use std::collections::BTreeMap;

pub use checkpoint::{
    encoder_layer_index, read_vision_config, Checkpoint, CONFIG_FILE, VISION_PREFIX, WEIGHTS_FILE,
};
pub use error::WeightError;
pub use random::{init_stats, random_tensor, random_weights};

/// A parameter the model needs: HF checkpoint name (the `vision_model.`
/// prefix is optional) and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightSpec {
    /// HF name, e.g. `encoder.layers.3.mlp.fc1.weight`.
    pub name: String,
    /// PyTorch shape, e.g. `[4304, 1152]`.
    pub shape: Vec<usize>,
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
        self.tensors.get(name.strip_prefix(VISION_PREFIX).unwrap_or(name))
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

    /// Total parameter count.
    pub fn parameter_count(&self) -> usize {
        self.tensors.values().map(|t| t.data.len()).sum()
    }
}
