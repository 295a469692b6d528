//! `--summary-json` for `run`, `compile` and `exec`: the flags a result
//! depends on, gathered from each command's arguments, and the one path
//! the three commands share: stdout reserved for `-` and the file checked
//! before any work ([`prepare`]), the compile and the execution recorded
//! as they finish ([`record_compile`], [`record_execution`]), and the
//! common ending ([`finish`]: outcome recorded, written to a file or to
//! stdout for `-`).

use std::path::Path;

use anyhow::Result;
use sha2::{Digest, Sha256};

use super::execute::Execution;
use crate::compile::Compiled;
use crate::model::ModelSpec;
use crate::report::run::placed_peak_moment;
use crate::report::run_summary::{Flags, InferenceSummary, RunSummary, Throughput};

/// Before anything is printed: `--summary-json -` takes stdout for the
/// JSON (the report goes to stderr).
pub fn reserve_stdout(path: Option<&Path>) {
    if path == Some(Path::new("-")) {
        crate::output::reserve_stdout_for_data();
    }
}

/// The summary's file among a command's outputs (for
/// [`super::workload::distinct`]).
pub fn output_file(path: Option<&Path>) -> Option<(&'static str, std::path::PathBuf)> {
    path.map(|p| ("--summary-json", p.to_path_buf()))
}

/// Before any work: the summary's file can be written (its directory
/// made); `-` is stdout.
pub fn check_path(path: Option<&Path>) -> Result<()> {
    if let Some(path) = path.filter(|p| *p != Path::new("-")) {
        super::checks::output_file_making_dir("--summary-json", path)?;
    }
    Ok(())
}

/// What a finished compile adds to the summary: the graph's FLOPs,
/// planning time, the placed peak, the package's digest and its tiles.
pub fn record_compile(summary: &mut RunSummary, graph: &ipuc_core::ir::Graph, compiled: &Compiled) {
    summary.model_flops = crate::reference::graph_flops(graph);
    let (peak_bytes, peak_tile, _, moment) = placed_peak_moment(compiled);
    summary.planning_seconds = Some(compiled.report.times.planning_ms / 1e3);
    summary.peak_bytes_per_tile = Some(peak_bytes);
    summary.peak_tile = Some(peak_tile);
    summary.peak_moment = Some(moment);
    summary.package_sha256 = Some(compiled.report.sha256.clone());
    summary.tiles = compiled.report.tiles as u32;
}

/// What an execution of `batch` images adds to the summary: the run's
/// figures from its profile, every inference's check, the rate band and
/// the batch's throughput (`summary.model_flops` already set).
pub fn record_execution(
    summary: &mut RunSummary,
    execution: &Execution,
    graph: &ipuc_core::ir::Graph,
    batch: usize,
) {
    let checks = &execution.checks;
    summary.set_run(
        &execution.profile,
        graph,
        checks
            .iter()
            .map(|c| InferenceSummary::from_check(c, c.words_moved))
            .collect(),
    );
    summary.rate_band = execution.band.clone();
    summary.throughput = checks
        .last()
        .map(|c| Throughput::of(c.cycles, batch, summary.model_flops));
}

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
pub fn with_package_build(mut f: Flags, b: &ipuc_core::description::BuildFlags) -> Flags {
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
