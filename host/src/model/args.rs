//! The model-selection flags shared by `ipuc reference`, `compile` and
//! `run` (the seeds' `--vit-layers`, `--vit-batch`, `--fuse-qkv`,
//! `--fp8-scale`). Flatten into a subcommand with `#[command(flatten)]`.

use std::path::PathBuf;

use ipuc_core::ir::DType;

use super::{build_siglip, ModelError, ModelOptions, SiglipModel, VisionConfig};

/// Activation / attention precision on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// IEEE half.
    F16,
    /// IEEE single.
    F32,
}

impl From<Precision> for DType {
    fn from(p: Precision) -> Self {
        match p {
            Precision::F16 => DType::F16,
            Precision::F32 => DType::F32,
        }
    }
}

/// Which model to build and how.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct ModelArgs {
    /// Built-in configuration: siglip-so400m or siglip-small.
    #[arg(long, conflicts_with = "checkpoint")]
    pub workload: Option<String>,
    /// HF checkpoint directory; its config.json gives the model shape.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Encoder layers to build (1..=config layers; default all).
    #[arg(long)]
    pub vit_layers: Option<usize>,
    /// Images per run.
    #[arg(long, default_value_t = 1)]
    pub vit_batch: usize,
    /// One fused QKV projection per layer.
    #[arg(long)]
    pub fuse_qkv: bool,
    /// Store GEMM weights as F143 at this power-of-two scale (e.g. -4).
    #[arg(long, allow_hyphen_values = true)]
    pub fp8_scale: Option<i8>,
    /// Activation precision.
    #[arg(long, value_enum, default_value = "f16")]
    pub activations: Precision,
    /// Attention precision.
    #[arg(long, value_enum, default_value = "f16")]
    pub attention: Precision,
}

impl ModelArgs {
    /// The config from `--workload` or `--checkpoint DIR/config.json`.
    pub fn config(&self) -> Result<VisionConfig, ModelError> {
        match (&self.workload, &self.checkpoint) {
            (Some(name), None) => VisionConfig::preset(name),
            (None, Some(dir)) => VisionConfig::from_checkpoint_dir(dir),
            _ => Err(ModelError::ModelChoice),
        }
    }

    /// The build options.
    pub fn options(&self) -> ModelOptions {
        ModelOptions {
            vit_layers: self.vit_layers,
            vit_batch: self.vit_batch,
            fuse_qkv: self.fuse_qkv,
            fp8_scale: self.fp8_scale,
            activations: self.activations.into(),
            attention: self.attention.into(),
        }
    }

    /// Build the model these flags describe.
    pub fn build(&self) -> Result<SiglipModel, ModelError> {
        build_siglip(&self.config()?, &self.options())
    }
}
