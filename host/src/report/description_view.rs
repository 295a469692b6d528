//! The package's description section as `ipuc inspect` shows it (JSON and
//! text): what the package was compiled from.

use ipuc_target::package::{BuildFlags, Description, ModelConfig, ModelDescription, WeightOrigin};
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct DescriptionView {
    pub model: Option<ModelView>,
    pub build: Option<BuildView>,
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
    pub fp8_scale: Option<i8>,
    pub fp8_operands: Vec<&'static str>,
    pub fp8_activation_scale: Option<i8>,
    pub fuse_qkv: bool,
    pub activations: &'static str,
    pub attention: &'static str,
    /// `random` or `checkpoint`.
    pub weights: &'static str,
    pub seed: Option<u64>,
    pub checkpoint_sha256: Option<String>,
    pub checkpoint_path: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BuildView {
    pub beam_width: u32,
    pub planning_tiles: u32,
    pub optimization_steps: u32,
    pub exchange_stream_words: Option<u32>,
    pub outgoing_base: bool,
    pub planner_data_budget: Option<u64>,
    pub min_key_parts: u32,
    pub runtime_source: String,
    pub runtime_sha256: String,
}

impl DescriptionView {
    pub fn of(d: &Description) -> Self {
        DescriptionView {
            model: d.model.as_ref().map(ModelView::of),
            build: d.build.as_ref().map(BuildView::of),
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
                out.push(format!(
                    "numerics: {}, fused QKV {}, activations {}, attention {}",
                    match (m.fp8_scale, m.fp8_activation_scale) {
                        (Some(s), None) =>
                            format!("FP8 F143 at scale {s} ({})", m.fp8_operands.join(", ")),
                        (Some(s), Some(a)) => format!(
                            "FP8 F143, weights at scale {s}, activations at {a} ({})",
                            m.fp8_operands.join(", ")
                        ),
                        (None, _) => "no FP8".into(),
                    },
                    if m.fuse_qkv { "yes" } else { "no" },
                    m.activations,
                    m.attention
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
                b.runtime_source, b.runtime_sha256
            ));
        }
        out
    }
}

impl ModelView {
    fn of(m: &ModelDescription) -> Self {
        let n = &m.numerics;
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
            fp8_scale: n.fp8_scale,
            fp8_operands: n.fp8_operands.names().collect(),
            fp8_activation_scale: n.fp8_activation_scale,
            fuse_qkv: n.fuse_qkv,
            activations: n.activations.name(),
            attention: n.attention.name(),
            weights,
            seed,
            checkpoint_sha256: sha,
            checkpoint_path: path,
        }
    }
}

impl BuildView {
    fn of(b: &BuildFlags) -> Self {
        BuildView {
            beam_width: b.beam_width,
            planning_tiles: b.planning_tiles,
            optimization_steps: b.optimization_steps,
            exchange_stream_words: b.exchange_stream_words,
            outgoing_base: b.outgoing_base,
            planner_data_budget: b.planner_data_budget,
            min_key_parts: b.min_key_parts,
            runtime_source: b.runtime_name.clone(),
            runtime_sha256: hex::encode(b.runtime_sha256),
        }
    }
}
