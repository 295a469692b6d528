//! `SiglipVisionConfig` from HF `config.json` (a vision config or a full
//! `SiglipConfig` with `vision_config`), plus the two workload presets.
//!
//! Defaults for absent fields are the HF class defaults
//! (`configuration_siglip.py`, docs/facts/siglip-and-fp8.md §1.1).

use ipuc_target::ipu21::sram::TILE_MEMORY_SIZE;
use ipuc_target::ipu21::topology::TILE_COUNT;
use serde::Deserialize;

use super::family::{Family, SUPPORTED_MODEL_TYPES};
use super::ModelError;

/// The most a model may need on the device: every tile's SRAM (1472 tiles ×
/// 624 KiB = 940,572,672 bytes). Configs, batches and images whose weights,
/// input or largest activation alone exceed it are rejected before anything
/// is allocated.
pub const DEVICE_SRAM_BYTES: u64 = TILE_COUNT as u64 * TILE_MEMORY_SIZE as u64;

/// Lower bounds on what a built model needs on the device, in bytes (`None`
/// = more than 2^64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// The GEMM weights (patch embedding, Q/K/V/O and MLP of every built
    /// layer) and the position table, in their storage dtype.
    pub weights: Option<u64>,
    /// `pixel_values`, F32.
    pub pixels: Option<u64>,
    /// The widest activation (`batch × tokens × max(D, F)`).
    pub activation: Option<u64>,
}

/// The MLP activations (HF `ACT2FN` names) the builder implements: the tanh
/// GELU (`gelu_pytorch_tanh`, torch GELU approximate="tanh", and `gelu_new`,
/// the same formula written out), the exact erf GELU (`gelu`) and CLIP's
/// `quick_gelu`.
pub const SUPPORTED_ACTIVATIONS: [&str; 4] =
    ["gelu_pytorch_tanh", "gelu_new", "gelu", "quick_gelu"];

/// The vision tower's shape and numerics.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct VisionConfig {
    /// Width D.
    #[serde(default = "defaults::hidden_size")]
    pub hidden_size: usize,
    /// MLP width F.
    #[serde(default = "defaults::intermediate_size")]
    pub intermediate_size: usize,
    /// Encoder layers.
    #[serde(default = "defaults::num_hidden_layers")]
    pub num_hidden_layers: usize,
    /// Attention heads H (divides D).
    #[serde(default = "defaults::num_attention_heads")]
    pub num_attention_heads: usize,
    /// Input channels.
    #[serde(default = "defaults::num_channels")]
    pub num_channels: usize,
    /// Input height and width.
    #[serde(default = "defaults::image_size")]
    pub image_size: usize,
    /// Patch size and stride.
    #[serde(default = "defaults::patch_size")]
    pub patch_size: usize,
    /// Activation name (must be a tanh GELU).
    #[serde(default = "defaults::hidden_act")]
    pub hidden_act: String,
    /// LayerNorm epsilon (all LayerNorms).
    #[serde(default = "defaults::layer_norm_eps")]
    pub layer_norm_eps: f64,
    /// Pooler present: SigLIP's MAP head (HF builds it when the attribute
    /// is absent), ViT's dense + tanh pooler (absent from checkpoints saved
    /// with `add_pooling_layer=False`). CLIP and DINOv2 always pool (no
    /// parameters of their own beyond CLIP's `post_layernorm`).
    #[serde(default = "defaults::vision_use_head")]
    pub vision_use_head: bool,
    /// Which tower (from `model_type`; SigLIP when absent).
    #[serde(skip)]
    pub family: Family,
    /// The image size the stored position table was trained for, when it
    /// differs from `image_size` (`--image-size`; DINOv2's presets): the
    /// table is then interpolated bicubically, as transformers does with
    /// `interpolate_pos_encoding=True` (DINOv2 on every forward).
    #[serde(skip)]
    pub position_image_size: Option<usize>,
}

/// `config.json` fields of the CLIP, ViT and DINOv2 configs (absent =
/// the family's HF default, see [`VisionConfig::from_tower_json`]).
#[derive(Deserialize)]
struct TowerFields {
    hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    mlp_ratio: Option<f64>,
    num_hidden_layers: Option<usize>,
    num_attention_heads: Option<usize>,
    num_channels: Option<usize>,
    image_size: Option<usize>,
    patch_size: Option<usize>,
    hidden_act: Option<String>,
    layer_norm_eps: Option<f64>,
    qkv_bias: Option<bool>,
    pooler_act: Option<String>,
    pooler_output_size: Option<usize>,
    use_swiglu_ffn: Option<bool>,
}

mod defaults {
    pub fn hidden_size() -> usize {
        768
    }
    pub fn intermediate_size() -> usize {
        3072
    }
    pub fn num_hidden_layers() -> usize {
        12
    }
    pub fn num_attention_heads() -> usize {
        12
    }
    pub fn num_channels() -> usize {
        3
    }
    pub fn image_size() -> usize {
        224
    }
    pub fn patch_size() -> usize {
        16
    }
    pub fn hidden_act() -> String {
        "gelu_pytorch_tanh".into()
    }
    pub fn layer_norm_eps() -> f64 {
        1e-6
    }
    pub fn vision_use_head() -> bool {
        true
    }
}

impl VisionConfig {
    /// SigLIP So400m/14 at 378×378 (facts §1.1: 729 tokens, 1152/4304, 16
    /// heads, 27 layers, eps 1e-6, MAP head). 378 = 27·14, the size the 384
    /// checkpoint effectively sees (§1.0).
    pub fn siglip_so400m() -> Self {
        VisionConfig {
            hidden_size: 1152,
            intermediate_size: 4304,
            num_hidden_layers: 27,
            num_attention_heads: 16,
            num_channels: 3,
            image_size: 378,
            patch_size: 14,
            hidden_act: defaults::hidden_act(),
            layer_norm_eps: 1e-6,
            vision_use_head: true,
            family: Family::Siglip,
            position_image_size: None,
        }
    }

    /// The seeds' small control (seed-vit-repeat-evaluation.txt: 28×28
    /// image, width 144, hidden 288, two heads, 27 layers); patch 14 gives 4
    /// tokens, head_dim 72 as in So400m.
    pub fn siglip_small() -> Self {
        VisionConfig {
            hidden_size: 144,
            intermediate_size: 288,
            num_hidden_layers: 27,
            num_attention_heads: 2,
            num_channels: 3,
            image_size: 28,
            patch_size: 14,
            hidden_act: defaults::hidden_act(),
            layer_norm_eps: 1e-6,
            vision_use_head: true,
            family: Family::Siglip,
            position_image_size: None,
        }
    }

    /// OpenAI CLIP ViT-L/14 at 336×336 (`openai/clip-vit-large-patch14-336`:
    /// 24 layers, 1024/4096, 16 heads, 577 tokens, quick_gelu, eps 1e-5).
    pub fn clip_vit_l14_336() -> Self {
        VisionConfig {
            hidden_size: 1024,
            intermediate_size: 4096,
            num_hidden_layers: 24,
            num_attention_heads: 16,
            num_channels: 3,
            image_size: 336,
            patch_size: 14,
            hidden_act: "quick_gelu".into(),
            layer_norm_eps: 1e-5,
            vision_use_head: true,
            family: Family::Clip,
            position_image_size: None,
        }
    }

    /// Google ViT-B/16 at 224×224 (`google/vit-base-patch16-224-in21k`: 12
    /// layers, 768/3072, 12 heads, 197 tokens, erf GELU, eps 1e-12, tanh
    /// pooler).
    pub fn vit_b16_224() -> Self {
        VisionConfig {
            hidden_size: 768,
            intermediate_size: 3072,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            num_channels: 3,
            image_size: 224,
            patch_size: 16,
            hidden_act: "gelu".into(),
            layer_norm_eps: 1e-12,
            vision_use_head: true,
            family: Family::Vit,
            position_image_size: None,
        }
    }

    /// Meta DINOv2 ViT-L/14 (`facebook/dinov2-large`: 24 layers, 1024/4096,
    /// 16 heads, erf GELU, eps 1e-6, LayerScale) run at 224×224 (257
    /// tokens); its position table is for 518×518 (37² + 1 rows) and is
    /// interpolated as HF does.
    pub fn dinov2_l14_224() -> Self {
        VisionConfig {
            hidden_size: 1024,
            intermediate_size: 4096,
            num_hidden_layers: 24,
            num_attention_heads: 16,
            num_channels: 3,
            image_size: 224,
            patch_size: 14,
            hidden_act: "gelu".into(),
            layer_norm_eps: 1e-6,
            vision_use_head: true,
            family: Family::Dinov2,
            position_image_size: Some(518),
        }
    }

    /// Names accepted by [`VisionConfig::preset`].
    pub const PRESETS: [&'static str; 6] = [
        "siglip-so400m",
        "siglip-small",
        "siglip-vit-benchmark",
        "clip-vit-l14-336",
        "vit-b16-224",
        "dinov2-l14-224",
    ];

    /// The preset a mistyped `name` most likely meant: one it begins
    /// (`vit-b16`), else the closest by edit distance within a quarter of
    /// the name's length (`siglip-smal`), not just any name of the family
    /// (`siglip-huge` suggests nothing).
    fn closest_preset(name: &str) -> Option<&'static str> {
        let lower = name.to_ascii_lowercase();
        if lower.len() >= 3 {
            if let Some(&p) = Self::PRESETS.iter().find(|p| p.starts_with(&lower)) {
                return Some(p);
            }
        }
        Self::PRESETS
            .iter()
            .map(|&p| (strsim::normalized_damerau_levenshtein(&lower, p), p))
            .filter(|&(score, _)| score >= 0.75)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p)
    }

    /// A named preset.
    pub fn preset(name: &str) -> Result<Self, ModelError> {
        match name {
            // The seeds' benchmark name for the same model.
            "siglip-so400m" | "siglip-vit-benchmark" => Ok(Self::siglip_so400m()),
            "siglip-small" => Ok(Self::siglip_small()),
            "clip-vit-l14-336" => Ok(Self::clip_vit_l14_336()),
            "vit-b16-224" => Ok(Self::vit_b16_224()),
            "dinov2-l14-224" => Ok(Self::dinov2_l14_224()),
            _ => Err(ModelError::UnknownPreset {
                name: name.into(),
                suggestion: Self::closest_preset(name),
            }),
        }
    }

    /// The family `config.json` describes: its top-level `model_type`, else
    /// its first `architectures` entry, else SigLIP (the configs ipuc always
    /// took). A `model_type` or architecture of another model is an error
    /// naming it.
    fn family_of(value: &serde_json::Value) -> Result<Family, ModelError> {
        if let Some(model_type) = value.get("model_type").and_then(|v| v.as_str()) {
            return Family::from_model_type(model_type).ok_or_else(|| {
                ModelError::UnsupportedArchitecture {
                    what: format!("model_type \"{model_type}\""),
                    supported: SUPPORTED_MODEL_TYPES.join(", "),
                }
            });
        }
        let architecture = value
            .get("architectures")
            .and_then(|a| a.as_array())
            .and_then(|a| a.first())
            .and_then(|a| a.as_str());
        match architecture {
            None => Ok(Family::Siglip),
            Some(name) => {
                Family::from_architecture(name).ok_or_else(|| ModelError::UnsupportedArchitecture {
                    what: format!("architecture \"{name}\""),
                    supported: SUPPORTED_MODEL_TYPES.join(", "),
                })
            }
        }
    }

    /// A CLIP, ViT or DINOv2 vision config, absent fields taking that
    /// family's HF defaults (`configuration_clip.py`, `configuration_vit.py`,
    /// `configuration_dinov2.py`); options the builder does not implement
    /// are errors naming them.
    fn from_tower_json(family: Family, value: serde_json::Value) -> Result<Self, ModelError> {
        let f: TowerFields = serde_json::from_value(value).map_err(|e| ModelError::ConfigJson {
            file: "config.json".into(),
            message: e.to_string(),
        })?;
        let unsupported = |what: String| ModelError::UnsupportedOption {
            family: family.display_name(),
            what,
        };
        // (hidden, intermediate, layers, heads, image, patch, act, eps)
        let (d, layers, heads, image, patch, act, eps) = match family {
            Family::Clip => (768, 12, 12, 224, 32, "quick_gelu", 1e-5),
            Family::Vit => (768, 12, 12, 224, 16, "gelu", 1e-12),
            Family::Dinov2 | Family::Siglip => (768, 12, 12, 224, 14, "gelu", 1e-6),
        };
        let hidden_size = f.hidden_size.unwrap_or(d);
        if f.qkv_bias == Some(false) {
            return Err(unsupported(
                "qkv_bias: false (Q/K/V projections without bias)".into(),
            ));
        }
        if family == Family::Dinov2 && f.use_swiglu_ffn == Some(true) {
            return Err(unsupported(
                "the SwiGLU MLP (use_swiglu_ffn: true, as in dinov2-giant)".into(),
            ));
        }
        if family == Family::Vit {
            if let Some(act) = f.pooler_act.as_deref().filter(|a| *a != "tanh") {
                return Err(unsupported(format!(
                    "pooler_act \"{act}\" (the pooler is built with tanh)"
                )));
            }
            if let Some(size) = f.pooler_output_size.filter(|&s| s != hidden_size) {
                return Err(unsupported(format!(
                    "pooler_output_size {size} different from hidden_size {hidden_size}"
                )));
            }
        }
        let intermediate_size = match (family, f.intermediate_size, f.mlp_ratio) {
            // HF: int(hidden_size * mlp_ratio); the config has no intermediate_size.
            (Family::Dinov2, _, ratio) => {
                let ratio = ratio.unwrap_or(4.0);
                let width = hidden_size as f64 * ratio;
                if !(1.0..1e12).contains(&width) {
                    return Err(ModelError::InvalidConfig {
                        reason: format!("mlp_ratio {ratio} gives no usable MLP width"),
                    });
                }
                width as usize
            }
            (_, Some(width), _) => width,
            (_, None, _) => 3072,
        };
        let config = VisionConfig {
            hidden_size,
            intermediate_size,
            num_hidden_layers: f.num_hidden_layers.unwrap_or(layers),
            num_attention_heads: f.num_attention_heads.unwrap_or(heads),
            num_channels: f.num_channels.unwrap_or(3),
            image_size: f.image_size.unwrap_or(image),
            patch_size: f.patch_size.unwrap_or(patch),
            hidden_act: f.hidden_act.unwrap_or_else(|| act.into()),
            layer_norm_eps: f.layer_norm_eps.unwrap_or(eps),
            vision_use_head: true,
            family,
            position_image_size: None,
        };
        Ok(config)
    }

    /// Parse `config.json` text: a `SiglipVisionConfig`, or a full
    /// `SiglipConfig` whose `vision_config` is used. Validated.
    pub fn from_json(text: &str) -> Result<Self, ModelError> {
        let mut value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ModelError::ConfigJson {
                file: "config.json".into(),
                message: e.to_string(),
            })?;
        if !value.is_object() {
            // No family yet: name every config class a checkpoint may hold.
            return Err(ModelError::ConfigJson {
                file: "config.json".into(),
                message: format!(
                    "expected a JSON object ({})",
                    [Family::Siglip, Family::Clip, Family::Vit, Family::Dinov2]
                        .map(Family::config_classes)
                        .join(", ")
                ),
            });
        }
        let family = Self::family_of(&value)?;
        if let Some(vision) = value.get_mut("vision_config") {
            value = vision.take();
        }
        if !value.is_object() {
            return Err(ModelError::ConfigJson {
                file: "config.json".into(),
                message: format!("expected a JSON object ({})", family.config_classes()),
            });
        }
        let config = match family {
            Family::Siglip => {
                serde_json::from_value::<VisionConfig>(value.clone()).map_err(|e| {
                    // serde_json's message does not say which key; absent keys take
                    // their defaults, so the key that fails on its own is the one.
                    let key = value.as_object().and_then(|fields| {
                        fields.iter().find_map(|(k, v)| {
                            let alone = serde_json::json!({ k.clone(): v.clone() });
                            serde_json::from_value::<VisionConfig>(alone)
                                .is_err()
                                .then(|| k.clone())
                        })
                    });
                    ModelError::ConfigJson {
                        file: "config.json".into(),
                        message: match key {
                            Some(k) => format!("`{k}`: {e}"),
                            None => e.to_string(),
                        },
                    }
                })?
            }
            other => Self::from_tower_json(other, value)?,
        };
        config.validate()?;
        Ok(config)
    }

    /// Read `dir/config.json` (see [`VisionConfig::from_json`]).
    pub fn from_checkpoint_dir(dir: &std::path::Path) -> Result<Self, ModelError> {
        if !dir.exists() {
            return Err(ModelError::Io {
                path: dir.display().to_string(),
                message: missing_checkpoint(dir),
            });
        }
        let path = dir.join("config.json");
        let text =
            crate::fsio::read_string_bounded(&path, crate::fsio::Limit::CONFIG).map_err(|e| {
                ModelError::Io {
                    path: path.display().to_string(),
                    message: e.to_string(),
                }
            })?;
        let config = Self::from_json(&text).map_err(|e| match e {
            ModelError::ConfigJson { message, .. } => ModelError::ConfigJson {
                file: path.display().to_string(),
                message,
            },
            other => ModelError::ConfigFile {
                path: path.display().to_string(),
                error: Box::new(other),
            },
        })?;
        Ok(config)
    }

    /// Check the fields fit together.
    pub fn validate(&self) -> Result<(), ModelError> {
        let positive = [
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_channels", self.num_channels),
            ("image_size", self.image_size),
            ("patch_size", self.patch_size),
        ];
        for (field, value) in positive {
            if value == 0 {
                return Err(ModelError::InvalidConfig {
                    reason: format!("{field} must be positive"),
                });
            }
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(ModelError::InvalidConfig {
                reason: format!(
                    "hidden_size {} is not divisible by num_attention_heads {}",
                    self.hidden_size, self.num_attention_heads
                ),
            });
        }
        // Rows of FP16 or FP8 elements move between tiles as whole 32-bit
        // words. The MLP width and an odd patch's `C·p·p` are padded with
        // zeros where the graph is built (they stay inside one GEMM pair);
        // the width is every activation's, with LayerNorms over it.
        if !self.hidden_size.is_multiple_of(4) {
            return Err(ModelError::UnsupportedOption {
                family: self.family.display_name(),
                what: format!(
                    "hidden_size {} (ipuc needs a multiple of 4: rows of FP16 and FP8 \
                     elements move between tiles as whole 32-bit words)",
                    self.hidden_size
                ),
            });
        }
        let head_dim = self.hidden_size / self.num_attention_heads;
        if !head_dim.is_multiple_of(2) {
            return Err(ModelError::UnsupportedOption {
                family: self.family.display_name(),
                what: format!(
                    "hidden_size {} / num_attention_heads {} = head dim {head_dim} (ipuc needs \
                     an even head dim: a head's rows of FP16 elements move as whole 32-bit words)",
                    self.hidden_size, self.num_attention_heads
                ),
            });
        }
        if self.patch_size > self.image_size {
            return Err(ModelError::InvalidConfig {
                reason: format!(
                    "patch_size {} exceeds image_size {}",
                    self.patch_size, self.image_size
                ),
            });
        }
        if let Some(size) = self.position_image_size {
            if size < self.patch_size {
                return Err(ModelError::InvalidConfig {
                    reason: format!(
                        "a position table for {size}-pixel images (patch {}) has no patch positions to interpolate",
                        self.patch_size,
                    ),
                });
            }
        }
        if !SUPPORTED_ACTIVATIONS.contains(&self.hidden_act.as_str()) {
            return Err(ModelError::InvalidConfig {
                reason: format!(
                    "hidden_act \"{}\" is not supported (supported: {})",
                    self.hidden_act,
                    SUPPORTED_ACTIVATIONS.join(", ")
                ),
            });
        }
        // LayerNorm runs with an f32 epsilon.
        let eps32 = self.layer_norm_eps as f32;
        if !(eps32.is_finite() && eps32 > 0.0) {
            return Err(ModelError::InvalidConfig {
                reason: format!(
                    "layer_norm_eps {:e} must be a positive finite f32 (between {:e} and {:e})",
                    self.layer_norm_eps,
                    f32::from_bits(1),
                    f32::MAX
                ),
            });
        }
        // One layer, one image, FP8 weights: the least any build needs.
        self.check_limits(1, 1, 1, 2)
    }

    /// What `layers` layers at `batch` images need at least (weights of
    /// `weight_bytes`, activations of `activation_bytes` per element), with
    /// checked arithmetic.
    pub fn footprint(
        &self,
        layers: usize,
        batch: usize,
        weight_bytes: u64,
        activation_bytes: u64,
    ) -> Footprint {
        let u = |v: usize| v as u64;
        let (d, f, c, p, s) = (
            u(self.hidden_size),
            u(self.intermediate_size),
            u(self.num_channels),
            u(self.patch_size),
            u(self.image_size),
        );
        let per_side = s / p.max(1);
        let tokens = per_side.checked_mul(per_side);
        let weights = (|| {
            let attention = d.checked_mul(d)?.checked_mul(4)?;
            let mlp = d.checked_mul(f)?.checked_mul(2)?;
            let layer = attention.checked_add(mlp)?;
            let patch = d.checked_mul(c)?.checked_mul(p)?.checked_mul(p)?;
            let positions = tokens?.checked_mul(d)?;
            layer
                .checked_mul(u(layers))?
                .checked_add(patch)?
                .checked_add(positions)?
                .checked_mul(weight_bytes)
        })();
        let pixels = (|| {
            u(batch)
                .checked_mul(c)?
                .checked_mul(s)?
                .checked_mul(s)?
                .checked_mul(4)
        })();
        let activation = (|| {
            u(batch)
                .checked_mul(tokens?)?
                .checked_mul(d.max(f))?
                .checked_mul(activation_bytes)
        })();
        Footprint {
            weights,
            pixels,
            activation,
        }
    }

    /// Rejects builds whose weights, input or widest activation alone exceed
    /// [`DEVICE_SRAM_BYTES`] (see [`VisionConfig::footprint`]).
    pub fn check_limits(
        &self,
        layers: usize,
        batch: usize,
        weight_bytes: u64,
        activation_bytes: u64,
    ) -> Result<(), ModelError> {
        let fp = self.footprint(layers, batch, weight_bytes, activation_bytes);
        let items = [
            ("weights", fp.weights),
            ("pixel input", fp.pixels),
            ("widest activation", fp.activation),
        ];
        for (what, bytes) in items {
            if bytes.is_none_or(|b| b > DEVICE_SRAM_BYTES) {
                return Err(ModelError::TooLarge {
                    what,
                    bytes,
                    config: format!(
                        "hidden_size {}, intermediate_size {}, num_channels {}, image_size {}, patch_size {}, {layers} layer(s), batch {batch}",
                        self.hidden_size,
                        self.intermediate_size,
                        self.num_channels,
                        self.image_size,
                        self.patch_size
                    ),
                });
            }
        }
        Ok(())
    }

    /// Patches per side (`image_size / patch_size`, remainder dropped as by
    /// the unpadded convolution).
    pub fn patches_per_side(&self) -> usize {
        self.image_size / self.patch_size
    }

    /// Tokens: the patches, plus the class token for CLIP, ViT and DINOv2.
    pub fn num_tokens(&self) -> usize {
        self.num_patches() + usize::from(self.family.has_class_token())
    }

    /// Patch tokens (`patches_per_side()²`).
    pub fn num_patches(&self) -> usize {
        self.patches_per_side() * self.patches_per_side()
    }

    /// Rows of the stored position table: [`num_tokens`](Self::num_tokens),
    /// or with [`position_image_size`](Self::position_image_size) that
    /// size's patch grid (plus the class row).
    pub fn stored_positions(&self) -> usize {
        match self.position_image_size {
            Some(size) => {
                let side = size / self.patch_size.max(1);
                side * side + usize::from(self.family.has_class_token())
            }
            None => self.num_tokens(),
        }
    }

    /// Head width D/H.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }
}

/// Why a `--checkpoint` path that does not exist is not there, and what to
/// do: a value shaped like a Hugging Face Hub ID (`owner/name`, not a path
/// on disk) has to be downloaded first, since ipuc reads only local files.
fn missing_checkpoint(dir: &std::path::Path) -> String {
    let text = dir.to_string_lossy();
    let mut parts = text.split('/');
    let (owner, name, rest) = (parts.next(), parts.next(), parts.next());
    let hub_part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    match (owner, name, rest) {
        (Some(owner), Some(name), None) if hub_part(owner) && hub_part(name) => format!(
            "no such directory; it looks like a Hugging Face Hub ID: download it first (e.g. \
             with `huggingface-cli download {text} --local-dir DIR`) and pass --checkpoint DIR"
        ),
        _ => "no such directory (--checkpoint takes a local HF checkpoint directory with \
              config.json and model.safetensors)"
            .into(),
    }
}
