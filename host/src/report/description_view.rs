//! The package's description section as `ipuc inspect` shows it (JSON and
//! text): what the package was compiled from.

use ipuc_target::package::{
    BuildFlags, Description, ModelConfig, ModelDescription, ModelNumerics, WeightOrigin,
};
use serde::Serialize;

/// The description's own types serialize themselves (`ipuc-target`'s
/// `serde` feature): the build flags as they are, the model's config and
/// numerics flattened into its view; only the weight origin is spelled
/// out here (a kind and its fields, each present, `null` when unused).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DescriptionView {
    pub model: Option<ModelView>,
    pub build: Option<BuildFlags>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ModelView {
    /// Empty when the config came from a checkpoint.
    pub preset: String,
    /// The tower's shape, its fields at this level of the JSON.
    #[serde(flatten)]
    pub config: ModelConfig,
    pub layers: u32,
    pub batch: u32,
    /// FP8 scales and operands, fused QKV, activation and attention
    /// dtypes, their fields at this level of the JSON.
    #[serde(flatten)]
    pub numerics: ModelNumerics,
    /// `random` or `checkpoint`.
    pub weights: &'static str,
    pub seed: Option<u64>,
    pub checkpoint_sha256: Option<String>,
    pub checkpoint_path: Option<String>,
}

impl DescriptionView {
    pub fn of(d: &Description) -> Self {
        DescriptionView {
            model: d.model.as_ref().map(ModelView::of),
            build: d.build.clone(),
        }
    }

    /// Text lines for `ipuc inspect`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        match &self.model {
            None => out.push("model: not recorded".into()),
            Some(m) => {
                let name = if m.preset.is_empty() {
                    "checkpoint config"
                } else {
                    &m.preset
                };
                let c = &m.config;
                out.push(format!(
                    "model: {name}, {} of {} layers, batch {}, image {} (patch {}), width {}, MLP {}, {} heads",
                    m.layers,
                    c.num_hidden_layers,
                    m.batch,
                    c.image_size,
                    c.patch_size,
                    c.hidden_size,
                    c.intermediate_size,
                    c.num_attention_heads
                ));
                let n = &m.numerics;
                let operands = n.fp8_operands.names().collect::<Vec<_>>().join(", ");
                out.push(format!(
                    "numerics: {}, fused QKV {}, activations {}, attention {}",
                    match (n.fp8_scale, n.fp8_activation_scale) {
                        (Some(s), None) => format!("FP8 F143 at scale {s} ({operands})"),
                        (Some(s), Some(a)) => format!(
                            "FP8 F143, weights at scale {s}, activations at {a} ({operands})"
                        ),
                        (None, _) => "no FP8".into(),
                    },
                    if n.fuse_qkv { "yes" } else { "no" },
                    n.activations.name(),
                    n.attention.name()
                ));
                out.push(match (&m.seed, &m.checkpoint_path, &m.checkpoint_sha256) {
                    (Some(seed), _, _) => format!("weights: random, seed {seed}"),
                    (_, Some(path), Some(sha)) => {
                        format!("weights: checkpoint {path} (sha256 {sha})")
                    }
                    _ => "weights: unknown".into(),
                });
            }
        }
        if let Some(b) = &self.build {
            out.push(format!(
                "built with: beam width {}, {} planning tiles, {} optimization steps, stream words {}, {}",
                b.beam_width,
                b.planning_tiles,
                b.optimization_steps,
                b.exchange_stream_words
                    .map_or("uncapped".to_string(), |w| w.to_string()),
                if b.outgoing_base { "outgoing base" } else { "table-based program" }
            ));
            out.push(format!(
                "runtime: {} (sha256 {})",
                b.runtime_name,
                hex::encode(b.runtime_sha256)
            ));
        }
        out
    }
}

impl ModelView {
    fn of(m: &ModelDescription) -> Self {
        let (weights, seed, sha, path) = match &m.weights {
            WeightOrigin::Random { seed } => ("random", Some(*seed), None, None),
            WeightOrigin::Checkpoint { sha256, path } => (
                "checkpoint",
                None,
                Some(hex::encode(sha256)),
                Some(path.clone()),
            ),
        };
        ModelView {
            preset: m.preset.clone(),
            config: m.config.clone(),
            layers: m.layers,
            batch: m.batch,
            numerics: m.numerics,
            weights,
            seed,
            checkpoint_sha256: sha,
            checkpoint_path: path,
        }
    }
}
