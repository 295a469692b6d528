//! `--summary-json` for `run`, `compile` and `exec`: the flags a result
//! depends on, gathered from each command's arguments, and the common
//! ending (outcome recorded, written to a file or to stdout for `-`).

use std::path::Path;

use anyhow::Result;
use sha2::{Digest, Sha256};

use crate::model::ModelSpec;
use crate::report::run_summary::{Flags, RunSummary};

/// The model's flags, from its spec (as given for `run` and `compile`,
/// the package's for `exec`).
pub fn model_flags(m: &ModelSpec) -> Flags {
    Flags {
        workload: Some(m.name()),
        checkpoint: m.checkpoint().map(|p| p.display().to_string()),
        seed: m.seed,
        vit_layers: m.layers,
        vit_batch: m.batch,
        image_size: m.image_size,
        fuse_qkv: m.fuse_qkv,
        fp8_scale: m.fp8_scale,
        fp8_activation_scale: m.fp8_activation_scale,
        ..Flags::default()
    }
}

/// Adds the planning flags a package records (for `exec`).
pub fn with_package_build(mut f: Flags, b: &ipuc_target::package::BuildFlags) -> Flags {
    f.planning_beam_width = Some(b.beam_width as usize);
    f.planning_tiles = Some(b.planning_tiles);
    f.optimization_steps = Some(b.optimization_steps);
    f.exchange_stream_words = b.exchange_stream_words;
    f.outgoing_base = Some(b.outgoing_base);
    f.planner_data_budget = b.planner_data_budget;
    f
}

/// The runtime source a build uses: its name and the SHA-256 of its text.
pub fn runtime_digest(path: Option<&Path>) -> Result<(String, String)> {
    let runtime = super::checks::runtime_source(path)?;
    Ok((
        runtime.name.clone(),
        hex::encode(Sha256::digest(runtime.text.as_bytes())),
    ))
}

/// Records how the command ended and writes the summary (when asked for);
/// the command's own result is returned unchanged.
pub fn finish(summary: &mut RunSummary, path: Option<&Path>, result: Result<()>) -> Result<()> {
    let Some(path) = path else { return result };
    summary.set_outcome(&result);
    summary.write(path)?;
    if path != Path::new("-") {
        tracing::info!("summary written to {}", path.display());
    }
    result
}
