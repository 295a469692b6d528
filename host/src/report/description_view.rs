//! The package's description section as `ipuc inspect` shows it in text
//! (its JSON is the description's own serde form).

use ipuc_core::description::{Description, WeightOrigin};

/// Text lines for `ipuc inspect`.
pub fn lines(d: &Description) -> Vec<String> {
    let mut out = Vec::new();
    match &d.model {
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
                    (Some(s), Some(a)) =>
                        format!("FP8 F143, weights at scale {s}, activations at {a} ({operands})"),
                    (None, _) => "no FP8".into(),
                },
                if n.fuse_qkv { "yes" } else { "no" },
                n.activations.name(),
                n.attention.name()
            ));
            out.push(match &m.weights {
                WeightOrigin::Random { seed } => format!("weights: random, seed {seed}"),
                WeightOrigin::Checkpoint { sha256, path } => {
                    format!(
                        "weights: checkpoint {path} (sha256 {})",
                        hex::encode(sha256)
                    )
                }
            });
        }
    }
    if let Some(b) = &d.build {
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
