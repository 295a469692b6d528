//! [`ModelSpec`]: the model a command builds, said once. Which config (a
//! preset or a checkpoint's), how it is built (layers, batch, fused QKV,
//! FP8 scales, image size) and the seed of random weights and synthetic
//! inputs. It is made either from the model flags (`cli::workload`) or
//! from a package's description ([`ModelSpec::from_description`]), and the
//! graph, the weights, the package's description and the run summary's
//! model fields are all read from it.

use std::path::PathBuf;

use ipuc_core::description::{ModelDescription, WeightOrigin};
use ipuc_target::package::DType;

use super::ModelOptions;

/// Where the model's config (and, for a checkpoint, its weights) come from.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelSource {
    /// A preset, by the name given (an alias stays itself in reports; a
    /// package records the canonical name, [`canonical_preset`]).
    Preset(String),
    /// An HF checkpoint directory.
    Checkpoint {
        dir: PathBuf,
        /// What a package recorded of it: its `model.safetensors` must
        /// still have this digest.
        recorded: Option<RecordedCheckpoint>,
    },
}

/// A checkpoint as a package records it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCheckpoint {
    /// SHA-256 of its `model.safetensors`.
    pub sha256: [u8; 32],
    /// The directory as given at compile time.
    pub path: String,
}

/// The resolved model description.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// `None`: no model named (building it is [`super::ModelError::ModelChoice`]).
    pub source: Option<ModelSource>,
    /// Encoder layers (1..=config layers); `None`: all.
    pub layers: Option<usize>,
    /// Images per inference; `None`: the batch of the inputs given (or
    /// the largest that fits, for `--vit-batch max`), else 1.
    pub batch: Option<usize>,
    /// One fused QKV projection per layer.
    pub fuse_qkv: bool,
    /// GEMM weights stored as F143 at this scale; `None`: FP16.
    pub fp8_scale: Option<i8>,
    /// With `fp8_scale`: the F143 scale GEMM activations are cast at
    /// (FP8 × FP8 GEMMs); `None`: FP16 activations (the FP8 weights are
    /// widened, `--fp8-weights-only`).
    pub fp8_activation_scale: Option<i8>,
    /// The config's image size overridden (the position table
    /// interpolated); `None`: the config's.
    pub image_size: Option<usize>,
    /// Seed of random weights and of synthetic inputs.
    pub seed: u64,
}

/// Why a package's model cannot be rebuilt as it was compiled.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// A flag given disagrees with the package (a usage error).
    #[error("{flag} {given} contradicts the package, which was compiled with {recorded}")]
    Contradiction {
        flag: &'static str,
        given: String,
        recorded: String,
    },
    /// The package records neither a preset with random weights nor a
    /// checkpoint without one.
    #[error("the package's description records {what}, which no build makes: a preset has random weights and a checkpoint's config no preset")]
    Source { what: String },
    /// Activation or attention numerics the CLI does not build.
    #[error("the package computes activations in {activations} and attention in {attention}; `ipuc exec` rebuilds only the CLI's numerics (f16 and f16)")]
    Numerics {
        activations: &'static str,
        attention: &'static str,
    },
    /// The recorded checkpoint directory is gone and none was given.
    #[error("the package was compiled from checkpoint {path} (model.safetensors SHA-256 {}), which is not there now: give its new place with --checkpoint DIR", hex::encode(.sha256))]
    CheckpointMissing { path: String, sha256: [u8; 32] },
    /// The config rebuilt now is not the one compiled.
    #[error("{source_text}: the model config has {name} = {now} but the package was compiled with {name} = {then}")]
    ConfigChanged {
        source_text: String,
        name: &'static str,
        now: String,
        then: String,
    },
    /// The checkpoint's weights are not the ones compiled.
    #[error("checkpoint {path}: model.safetensors has SHA-256 {} but the package was compiled from SHA-256 {} ({})", hex::encode(.now), hex::encode(.recorded.sha256), .recorded.path)]
    WeightsChanged {
        path: String,
        now: [u8; 32],
        recorded: RecordedCheckpoint,
    },
}

impl SpecError {
    /// Whether the error is the user's flags' (exit status 2) rather than
    /// the package's or the files' (4).
    pub fn is_usage(&self) -> bool {
        matches!(self, SpecError::Contradiction { .. })
    }
}

/// The seeds' alias `siglip-vit-benchmark` is recorded as `siglip-so400m`.
pub fn canonical_preset(name: &str) -> &str {
    match name {
        "siglip-vit-benchmark" => "siglip-so400m",
        other => other,
    }
}

/// Where a package's weights came from, as messages name it.
pub fn origin_text(origin: &WeightOrigin) -> String {
    match origin {
        WeightOrigin::Random { seed } => format!("random weights from seed {seed}"),
        WeightOrigin::Checkpoint { path, .. } => format!("checkpoint {path}"),
    }
}

impl ModelSpec {
    /// The model a package's description records: its preset with random
    /// weights from the recorded seed, or its checkpoint (at the recorded
    /// path, its digest to be checked); its layers, batch and numerics.
    /// The image size is the recorded one ([`ModelSpec::image_size`] is
    /// `Some` even when it is the config's own).
    pub fn from_description(d: &ModelDescription) -> Result<ModelSpec, SpecError> {
        let (source, seed) = match (&d.weights, d.preset.as_str()) {
            (WeightOrigin::Random { seed }, preset) if !preset.is_empty() => {
                (ModelSource::Preset(preset.to_string()), *seed)
            }
            (WeightOrigin::Checkpoint { sha256, path }, "") => (
                ModelSource::Checkpoint {
                    dir: PathBuf::from(path),
                    recorded: Some(RecordedCheckpoint {
                        sha256: *sha256,
                        path: path.clone(),
                    }),
                },
                0,
            ),
            (origin, preset) => {
                let preset = if preset.is_empty() {
                    "no preset".to_string()
                } else {
                    format!("preset {preset}")
                };
                return Err(SpecError::Source {
                    what: format!("{preset} with {}", origin_text(origin)),
                });
            }
        };
        let defaults = ModelOptions::default();
        let n = &d.numerics;
        if Some(n.activations) != package_dtype(defaults.activations)
            || Some(n.attention) != package_dtype(defaults.attention)
        {
            return Err(SpecError::Numerics {
                activations: n.activations.name(),
                attention: n.attention.name(),
            });
        }
        Ok(ModelSpec {
            source: Some(source),
            layers: Some(d.layers as usize),
            batch: Some(d.batch as usize),
            fuse_qkv: n.fuse_qkv,
            fp8_scale: n.fp8_scale,
            fp8_activation_scale: n.fp8_scale.and(n.fp8_activation_scale),
            image_size: Some(d.config.image_size as usize),
            seed,
        })
    }

    /// The preset named, by the name given.
    pub fn preset(&self) -> Option<&str> {
        match &self.source {
            Some(ModelSource::Preset(name)) => Some(name),
            _ => None,
        }
    }

    /// The checkpoint directory named.
    pub fn checkpoint(&self) -> Option<&std::path::Path> {
        match &self.source {
            Some(ModelSource::Checkpoint { dir, .. }) => Some(dir),
            _ => None,
        }
    }

    /// The workload's name for reports: the preset or checkpoint directory,
    /// `@size` with an image size given.
    pub fn name(&self) -> String {
        let name = match &self.source {
            Some(ModelSource::Preset(p)) => p.clone(),
            Some(ModelSource::Checkpoint { dir, .. }) => dir.display().to_string(),
            None => "model".into(),
        };
        match self.image_size {
            Some(size) => format!("{name}@{size}"),
            None => name,
        }
    }

    /// FP8 weights widened to FP16 in the GEMMs (no activation cast).
    pub fn fp8_weights_only(&self) -> bool {
        self.fp8_scale.is_some() && self.fp8_activation_scale.is_none()
    }

    /// The build options for `batch` images.
    pub fn options(&self, batch: usize) -> ModelOptions {
        ModelOptions {
            vit_layers: self.layers,
            vit_batch: batch,
            fuse_qkv: self.fuse_qkv,
            fp8_scale: self.fp8_scale,
            fp8_activation_scale: self.fp8_scale.and(self.fp8_activation_scale),
            ..ModelOptions::default()
        }
    }
}

/// A build dtype as a package records it (`None`: not recordable).
pub fn package_dtype(d: ipuc_core::ir::DType) -> Option<DType> {
    match d {
        ipuc_core::ir::DType::F16 => Some(DType::F16),
        ipuc_core::ir::DType::F32 => Some(DType::F32),
        _ => None,
    }
}
