//! The SigLIP vision tower as an `ipuc_core::ir::Graph`.
//!
//! Built from any HF `SiglipVisionConfig` ([`VisionConfig`]) and the
//! compile options ([`ModelOptions`]). The graph follows HF
//! `SiglipVisionModel.forward` (docs/facts/siglip-and-fp8.md §1.2):
//! patch embedding as im2col + matmul + bias, position add, the encoder as
//! **one Repeat** over layers (residual stream carried, every per-layer
//! tensor an iterated sequence), `post_layernorm`, and the MAP head.
//! Parameters carry HF checkpoint names ([`ParameterSpec`]).
//!
//! ```
//! use ipuc::model::{build_siglip, ModelOptions, VisionConfig};
//! let model = build_siglip(&VisionConfig::siglip_small(), &ModelOptions::default())?;
//! let graph = &model.graph;
//! assert_eq!(graph.ty(model.last_hidden_state).unwrap().shape.dims(), &[1, 4, 144]);
//! let encoder = graph.repeat(model.encoder).unwrap();
//! assert_eq!(encoder.trip_count(), 27);
//! assert_eq!(encoder.sequence_count(), 16); // 16 tensors per layer
//! let fc1 = model.parameters.iter().find(|p| p.name == "vision_model.encoder.layers.3.mlp.fc1.weight").unwrap();
//! assert_eq!(fc1.shape, vec![288, 144]);
//! assert_eq!(fc1.pattern.as_deref(), Some("vision_model.encoder.layers.{i}.mlp.fc1.weight"));
//! # Ok::<(), ipuc::model::ModelError>(())
//! ```

mod build;
mod config;
mod family;
mod params;
mod positions;
mod spec;

use ipuc_core::ir::{DType, Graph, IrError, OpId, ValueId};

pub use build::{build_siglip, LAYER};
pub use config::{Footprint, VisionConfig, DEVICE_SRAM_BYTES, SUPPORTED_ACTIVATIONS};
pub use family::{Family, SUPPORTED_MODEL_TYPES};
pub use params::{
    layer_name, layer_pattern, tower_name, ParameterRole, ParameterSpec, PositionResample, ZeroPad,
    VISION_PREFIX,
};
pub use positions::interpolate_positions;
pub use spec::{
    canonical_preset, origin_text, package_dtype, ModelSource, ModelSpec, RecordedCheckpoint,
    SpecError,
};

/// Name of the graph input: `[batch, channels, image, image]` F32 NCHW.
pub const PIXEL_VALUES: &str = "pixel_values";
/// Output: the last hidden state, F32 `[B, tokens, D]` (SigLIP: after
/// `post_layernorm`; CLIP: the encoder output; ViT/DINOv2: after `layernorm`).
pub const LAST_HIDDEN_STATE: &str = "last_hidden_state";
/// Output: the family's pooled embedding, F32 `[B, D]` (see [`Family`]).
pub const POOLER_OUTPUT: &str = "pooler_output";

/// Build options (the seeds' `--vit-layers`, `--vit-batch`, `--fuse-qkv`,
/// `--fp8-scale` flags, plus the activation and attention precisions).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelOptions {
    /// Encoder layers to build (1..=config layers); `None` = all.
    pub vit_layers: Option<usize>,
    /// Images per run.
    pub vit_batch: usize,
    /// One `[3D, D]` QKV projection per layer instead of three.
    pub fuse_qkv: bool,
    /// Store GEMM weights as F143 at this scale; `None` keeps them in the
    /// activation dtype.
    pub fp8_scale: Option<i8>,
    /// With `fp8_scale`: cast the activations that feed the projections and
    /// MLPs to F143 at this scale, so those GEMMs run FP8 × FP8 into FP16
    /// partials (`None`: they stay FP16 and the FP8 weights are widened).
    pub fp8_activation_scale: Option<i8>,
    /// Activation (and non-GEMM parameter) dtype: F16 (default) or F32.
    pub activations: DType,
    /// Dtype attention runs in: F16 (default, "FP16 attention") or F32.
    pub attention: DType,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            vit_layers: None,
            vit_batch: 1,
            fuse_qkv: false,
            fp8_scale: None,
            fp8_activation_scale: None,
            activations: DType::F16,
            attention: DType::F16,
        }
    }
}

/// The built model: graph, parameter specs and the ids other stages need.
#[derive(Clone, Debug)]
pub struct SiglipModel {
    /// The config it was built from.
    pub config: VisionConfig,
    /// The options it was built with.
    pub options: ModelOptions,
    /// Encoder layers actually built (the Repeat trip count).
    pub layers: usize,
    /// The verified graph.
    pub graph: Graph,
    /// One spec per graph parameter, in graph order.
    pub parameters: Vec<ParameterSpec>,
    /// The `pixel_values` input.
    pub pixel_values: ValueId,
    /// The encoder Repeat op.
    pub encoder: OpId,
    /// `last_hidden_state` output value (F32).
    pub last_hidden_state: ValueId,
    /// `pooler_output` output value (F32), absent without a pooler.
    pub pooled: Option<ValueId>,
}

impl SiglipModel {
    /// Spec of the parameter called `name`.
    pub fn parameter(&self, name: &str) -> Option<&ParameterSpec> {
        self.parameters.iter().find(|p| p.name == name)
    }

    /// Total parameter bytes in the graph's storage dtypes.
    pub fn parameter_bytes(&self) -> usize {
        self.parameters
            .iter()
            .map(|p| p.element_count() * p.dtype.size_bytes())
            .sum()
    }
}

/// Why a model could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// `config.json` is not valid JSON or has wrongly typed fields
    /// (`file` is the file path, or `config.json` for text).
    #[error("{file}: {message}")]
    ConfigJson { file: String, message: String },
    /// Fields that do not fit together.
    #[error("invalid vision config: {reason}")]
    InvalidConfig { reason: String },
    /// A `model_type` or architecture that is not a supported tower.
    #[error("{what} is not supported (supported model types: {supported})")]
    UnsupportedArchitecture { what: String, supported: String },
    /// A family option the builder does not implement.
    #[error("{family}: {what} is not supported")]
    UnsupportedOption { family: &'static str, what: String },
    /// A preset name that does not exist.
    #[error(
        "unknown workload \"{name}\" ({}known: {})",
        .suggestion.map(|s| format!("did you mean \"{s}\"? ")).unwrap_or_default(),
        VisionConfig::PRESETS.join(", ")
    )]
    UnknownPreset {
        name: String,
        /// The closest preset name, if one is close.
        suggestion: Option<&'static str>,
    },
    /// `vit_layers` outside 1..=config layers.
    #[error(
        "--vit-layers {requested} is outside 1..={available} (the config has {available} layers)"
    )]
    LayerCount { requested: usize, available: usize },
    /// `vit_batch` of zero.
    #[error("--vit-batch must be at least 1")]
    BatchSize,
    /// An FP8 scale outside [−32, 31].
    #[error("--fp8-scale {scale} is outside the FP8 metadata range [-32, 31]")]
    Fp8Scale { scale: i8 },
    /// An activation/attention dtype other than F32/F16.
    #[error("{what} dtype {dtype} is not supported (use f32 or f16)")]
    Precision { what: &'static str, dtype: DType },
    /// `config.json` could not be read.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// Neither or both of `--workload` and `--checkpoint`.
    #[error("give exactly one of --workload NAME (or --vit-small) or --checkpoint DIR")]
    ModelChoice,
    /// More attention (image, head) pairs than tiles: attention gives each
    /// pair at least one tile of its own.
    #[error(
        "a batch of {batch} images × {heads} heads is {pairs} attention (image, head) pairs, more than the {tiles} tiles planned (each pair needs a tile): at most {largest} images"
    )]
    AttentionPairs {
        batch: usize,
        heads: usize,
        pairs: u64,
        tiles: u32,
        /// The largest batch with a tile per pair.
        largest: u32,
    },
    /// The model cannot fit the device: `what` needs `bytes` (`None`: more
    /// than 2^64) of the C600's [`DEVICE_SRAM_BYTES`].
    #[error(
        "the model's {what} would need {} bytes, more than the {} bytes of SRAM on all 1472 tiles ({config})",
        .bytes.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string()),
        DEVICE_SRAM_BYTES
    )]
    TooLarge {
        what: &'static str,
        bytes: Option<u64>,
        config: String,
    },
    /// `config.json` parsed but was rejected (`error`) by validation.
    #[error("{path}: {error}")]
    ConfigFile {
        path: String,
        error: Box<ModelError>,
    },
    /// The IR rejected the graph (a bug in the builder).
    #[error("internal error building the SigLIP graph: {0}")]
    Ir(IrError),
}

impl From<IrError> for ModelError {
    fn from(e: IrError) -> Self {
        ModelError::Ir(e)
    }
}
