//! The vision-tower families ipuc builds and where they differ: tensor
//! names, the class token, LayerScale and the pooler (issue #29).
//!
//! | family | HF class | tokens | MLP activation | extra | pooler_output |
//! |---|---|---|---|---|---|
//! | SigLIP | `SiglipVisionModel` | patches | tanh GELU | — | MAP head |
//! | CLIP | `CLIPVisionModel` | class + patches | `quick_gelu` | `pre_layrnorm` | `post_layernorm(class)` |
//! | ViT | `ViTModel` | class + patches | erf GELU | final `layernorm` | `tanh(dense(class))` |
//! | DINOv2 | `Dinov2Model` | class + patches | erf GELU | LayerScale, final `layernorm`, bicubic positions | class token |

/// A vision-tower family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Family {
    /// Google SigLIP (`siglip`, `siglip_vision_model`).
    #[default]
    Siglip,
    /// OpenAI CLIP's vision tower (`clip`, `clip_vision_model`).
    Clip,
    /// Google ViT (`vit`).
    Vit,
    /// Meta DINOv2 (`dinov2`).
    Dinov2,
}

/// The `model_type` values recognised in `config.json`.
pub const SUPPORTED_MODEL_TYPES: [&str; 6] = [
    "siglip",
    "siglip_vision_model",
    "clip",
    "clip_vision_model",
    "vit",
    "dinov2",
];

/// Stems (no `.weight`/`.bias`) of one encoder layer's tensors, relative to
/// the layer prefix.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LayerNames {
    pub norm1: &'static str,
    pub q: &'static str,
    pub k: &'static str,
    pub v: &'static str,
    /// The synthetic fused-QKV name (`--fuse-qkv`).
    pub qkv: &'static str,
    pub out: &'static str,
    pub norm2: &'static str,
    pub fc1: &'static str,
    pub fc2: &'static str,
    /// LayerScale vectors (DINOv2 only), full leaf names.
    pub scales: Option<(&'static str, &'static str)>,
}

const SIGLIP_LAYER: LayerNames = LayerNames {
    norm1: "layer_norm1",
    q: "self_attn.q_proj",
    k: "self_attn.k_proj",
    v: "self_attn.v_proj",
    qkv: "self_attn.qkv_proj",
    out: "self_attn.out_proj",
    norm2: "layer_norm2",
    fc1: "mlp.fc1",
    fc2: "mlp.fc2",
    scales: None,
};

const VIT_LAYER: LayerNames = LayerNames {
    norm1: "layernorm_before",
    q: "attention.attention.query",
    k: "attention.attention.key",
    v: "attention.attention.value",
    qkv: "attention.attention.qkv",
    out: "attention.output.dense",
    norm2: "layernorm_after",
    fc1: "intermediate.dense",
    fc2: "output.dense",
    scales: None,
};

const DINOV2_LAYER: LayerNames = LayerNames {
    norm1: "norm1",
    q: "attention.attention.query",
    k: "attention.attention.key",
    v: "attention.attention.value",
    qkv: "attention.attention.qkv",
    out: "attention.output.dense",
    norm2: "norm2",
    fc1: "mlp.fc1",
    fc2: "mlp.fc2",
    scales: Some(("layer_scale1.lambda1", "layer_scale2.lambda1")),
};

impl Family {
    /// Short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Siglip => "siglip",
            Family::Clip => "clip",
            Family::Vit => "vit",
            Family::Dinov2 => "dinov2",
        }
    }

    /// The transformers config classes of this family's checkpoints, as
    /// messages name them.
    pub fn config_classes(self) -> &'static str {
        match self {
            Family::Siglip => "SiglipVisionConfig or SiglipConfig",
            Family::Clip => "CLIPVisionConfig or CLIPConfig",
            Family::Vit => "ViTConfig",
            Family::Dinov2 => "Dinov2Config",
        }
    }

    /// The name papers and HF use (`SigLIP`, `CLIP`, `ViT`, `DINOv2`).
    pub fn display_name(self) -> &'static str {
        match self {
            Family::Siglip => "SigLIP",
            Family::Clip => "CLIP",
            Family::Vit => "ViT",
            Family::Dinov2 => "DINOv2",
        }
    }

    /// The family of a `model_type` (top level or `vision_config`'s).
    pub fn from_model_type(model_type: &str) -> Option<Family> {
        match model_type {
            "siglip" | "siglip_vision_model" => Some(Family::Siglip),
            "clip" | "clip_vision_model" => Some(Family::Clip),
            "vit" => Some(Family::Vit),
            "dinov2" => Some(Family::Dinov2),
            _ => None,
        }
    }

    /// The family of an HF `architectures` entry (configs without
    /// `model_type`).
    pub fn from_architecture(architecture: &str) -> Option<Family> {
        match architecture {
            "SiglipModel" | "SiglipVisionModel" => Some(Family::Siglip),
            "CLIPModel" | "CLIPVisionModel" | "CLIPVisionModelWithProjection" => Some(Family::Clip),
            "ViTModel" => Some(Family::Vit),
            "Dinov2Model" => Some(Family::Dinov2),
            _ => None,
        }
    }

    /// Prefix of every vision tensor in graph parameter names: HF's
    /// `vision_model.` for the towers that live inside a two-tower model
    /// (optional in checkpoints), nothing for ViT and DINOv2.
    pub fn prefix(self) -> &'static str {
        match self {
            Family::Siglip | Family::Clip => super::VISION_PREFIX,
            Family::Vit | Family::Dinov2 => "",
        }
    }

    /// `<prefix><suffix>`.
    pub fn tower_name(self, suffix: &str) -> String {
        format!("{}{suffix}", self.prefix())
    }

    /// `<prefix>encoder.layers.{i}.<suffix>` (ViT/DINOv2: `encoder.layer.{i}`).
    pub fn layer_pattern(self, suffix: &str) -> String {
        let layers = match self {
            Family::Siglip | Family::Clip => "encoder.layers",
            Family::Vit | Family::Dinov2 => "encoder.layer",
        };
        format!("{}{layers}.{{i}}.{suffix}", self.prefix())
    }

    pub(crate) fn layer_names(self) -> &'static LayerNames {
        match self {
            Family::Siglip | Family::Clip => &SIGLIP_LAYER,
            Family::Vit => &VIT_LAYER,
            Family::Dinov2 => &DINOV2_LAYER,
        }
    }

    /// A class token is prepended to the patches.
    pub fn has_class_token(self) -> bool {
        self != Family::Siglip
    }

    /// Checkpoint tensors of this family that the vision tower's forward
    /// never reads (masked-image-modelling tokens, a two-tower model's
    /// projections), accepted and skipped.
    pub fn unused_tensors(self) -> &'static [&'static str] {
        match self {
            Family::Siglip => &[],
            Family::Clip => &["visual_projection.weight", "text_projection.weight"],
            Family::Vit | Family::Dinov2 => &["embeddings.mask_token"],
        }
    }
}
