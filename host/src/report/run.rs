//! What `ipuc run` and `ipuc compile` print: planning statistics, memory,
//! package, simulated cycles, and the validation against the reference.

use std::path::Path;

use anyhow::{bail, Result};

use ipuc_target::ipu21::sram::{CLOCK_HZ, SUPPORT_CHARGE_BYTES, TILE_MEMORY_BUDGET};

use crate::device::DeviceOutput;
use crate::model::{LAST_HIDDEN_STATE, POOLER_OUTPUT};
use crate::reference::SiglipOutputs;
use crate::report::{Profile, CYCLE_SOURCES};
use ipuc_core::pipeline::{CompileReport, Compiled};
use ipuc_sim::codelets::AMP_KERNELS;
use ipuc_target::package::{Package, SummaryValue};

/// Device output vs reference for one inference.
#[derive(Clone, Debug)]
pub struct Validation {
    /// `(output name, max abs error, cosine, elements outside tolerance)`.
    pub outputs: Vec<(String, f32, f64, usize)>,
    /// Every element within `atol + rtol·|ref|`, and every device value
    /// finite.
    pub pass: bool,
    /// The first NaN or infinity in the device's outputs, and where the
    /// reference's first one began (`None`: all finite).
    pub non_finite: Option<String>,
    /// With a batch of more than one image: each image's outputs
    /// `(output name, max abs error, cosine, elements outside tolerance)`,
    /// in input order (empty at batch 1, where `outputs` is the image).
    pub images: Vec<Vec<(String, f32, f64, usize)>>,
}

impl Validation {
    /// Whether image `i` of the batch is within tolerance (the whole
    /// batch's verdict at batch 1).
    pub fn image_pass(&self, i: usize) -> bool {
        match self.images.get(i) {
            Some(outputs) => self.non_finite.is_none() && outputs.iter().all(|o| o.3 == 0),
            None => self.pass,
        }
    }
}

/// What one resident inference produced and how it compared.
#[derive(Clone, Debug)]
pub struct InferenceCheck {
    /// Simulated cycles to the last halt.
    pub cycles: u64,
    /// Wall time of the simulation.
    pub wall_seconds: f64,
    /// Tiles simulated.
    pub tiles: usize,
    /// Words the exchange fabric moved (simulated).
    pub words_moved: u64,
    /// Against the device-numerics reference (the PASS criterion).
    pub device: Option<Validation>,
    /// Against the FP32 reference (`--reference-fp32`; reported, not judged).
    pub fp32: Option<Validation>,
}

/// Max abs error, cosine similarity and count of elements outside tolerance.
pub fn error_stats(device: &[f32], reference: &[f32], atol: f32, rtol: f32) -> (f32, f64, usize) {
    let mut max_abs = 0f32;
    let mut outside = 0;
    let (mut dot, mut nd, mut nr) = (0f64, 0f64, 0f64);
    for (&d, &r) in device.iter().zip(reference) {
        let err = (d - r).abs();
        // NaN errors count as outside.
        let within = err <= atol + rtol * r.abs();
        if !within {
            outside += 1;
        }
        if err > max_abs || err.is_nan() {
            max_abs = err;
        }
        dot += f64::from(d) * f64::from(r);
        nd += f64::from(d) * f64::from(d);
        nr += f64::from(r) * f64::from(r);
    }
    let cosine = if nd > 0.0 && nr > 0.0 {
        dot / (nd.sqrt() * nr.sqrt())
    } else {
        f64::NAN
    };
    (max_abs, cosine, outside)
}

/// Compares the device's outputs with a reference run.
pub fn compare(
    out: &DeviceOutput,
    reference: &SiglipOutputs,
    atol: f32,
    rtol: f32,
) -> Result<Validation> {
    let mut pairs = vec![(LAST_HIDDEN_STATE, &reference.last_hidden_state)];
    if let Some(p) = &reference.pooler_output {
        pairs.push((POOLER_OUTPUT, p));
    }
    let mut outputs = Vec::new();
    let mut non_finite = None;
    let batch = reference
        .last_hidden_state
        .shape
        .first()
        .copied()
        .unwrap_or(1);
    let mut images = vec![Vec::new(); if batch > 1 { batch } else { 0 }];
    for (name, r) in pairs {
        let Some(d) = out.outputs.get(name) else {
            bail!("the device produced no `{name}` output");
        };
        if d.data.len() != r.data.len() {
            bail!(
                "`{name}`: device has {} elements, reference {}",
                d.data.len(),
                r.data.len()
            );
        }
        let (max_abs, cosine, outside) = error_stats(&d.data, &r.data, atol, rtol);
        outputs.push((name.to_string(), max_abs, cosine, outside));
        // Outputs are batch-major: image `i` is the `i`-th equal run.
        if !images.is_empty() && r.data.len() % batch == 0 {
            let per = r.data.len() / batch;
            for (i, image) in images.iter_mut().enumerate() {
                let span = i * per..(i + 1) * per;
                let (m, c, o) = error_stats(&d.data[span.clone()], &r.data[span], atol, rtol);
                image.push((name.to_string(), m, c, o));
            }
        }
        if non_finite.is_none() {
            if let Some((i, v)) = d.data.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                non_finite = Some(format!(
                    "`{name}` element {i} is {v}; {}",
                    match &reference.first_non_finite {
                        Some(f) => format!(
                            "the reference's first non-finite value comes from `{}` (element {} = {})",
                            f.op, f.element, f.value
                        ),
                        None => "the reference stays finite throughout, so the device alone produced it".into(),
                    }
                ));
            }
        }
    }
    let pass = non_finite.is_none() && outputs.iter().all(|o| o.3 == 0);
    Ok(Validation {
        outputs,
        pass,
        non_finite,
        images,
    })
}

/// Planning, memory, exchange and package figures.
pub fn print_compile_report(r: &CompileReport) {
    let s = &r.plan_stats;
    crate::detail!("planning: {} candidates screened, {} body searches, {} cache hits, {} memory rejections, {:.0} ms",
        s.candidates_screened, s.body_searches, s.cache_hits, s.memory_rejections, r.times.planning_ms);
    if let Some(o) = &r.optimization {
        crate::detail!(
            "optimization: {} of {} steps, {} changes kept of {} tried; estimated cycles {} before, {} after",
            o.steps_run, o.steps, o.accepted, o.tried, o.cycles_before, o.cycles_after
        );
    }
    let t = &r.times;
    crate::detail!(
        "stages: lowering {:.0} ms, placement {:.0} ms, exchange scheduling {:.0} ms, emission {:.0} ms, linking {:.0} ms, packaging {:.0} ms (total with planning {:.0} ms)",
        t.lowering_ms, t.placement_ms, t.exchange_ms, t.emission_ms, t.linking_ms, t.packaging_ms, t.total_ms()
    );
    crate::detail!(
        "memory: peak {} bytes/tile charged on tile {} after placement ({} runtime state + {} code elements and live data incl. patch data); planner bound {} ({} runtime state + {} code elements and data on tile {}) + patch data up to {} (allowance {}); budget {} bytes/tile",
        r.placed_peak_bytes,
        r.placed_peak_tile.get(),
        SUPPORT_CHARGE_BYTES,
        r.placed_peak_bytes.saturating_sub(SUPPORT_CHARGE_BYTES),
        r.estimated_peak_bytes + u64::from(SUPPORT_CHARGE_BYTES),
        SUPPORT_CHARGE_BYTES,
        r.estimated_peak_bytes,
        r.estimated_peak_tile,
        r.patch_data_bytes_per_tile,
        r.patch_allowance_bytes,
        TILE_MEMORY_BUDGET
    );
    crate::detail!(
        "reserved per tile: exchange tables {} bytes, host descriptors {} bytes, code image {} bytes (planner estimate up to {}; image/estimate at most {:.3} on tile {}; least room left below data {} bytes on tile {}); {} tiles",
        r.exchange_table_bytes_per_tile,
        r.host_descriptor_bytes_per_tile,
        r.code_bytes_per_tile,
        r.code_estimate_bytes_per_tile,
        r.code_actual_over_estimate.0,
        r.code_actual_over_estimate.1.get(),
        r.code_room_min.0,
        r.code_room_min.1.get(),
        r.tiles
    );
    let e = &r.exchange;
    crate::detail!(
        "exchange: {} phases, {} stored rows ({} used by more than one phase), {} row uses with a sharing patch list, {} Repeat-patched words; {} events vs lower bound {}",
        e.phases,
        e.stored_rows,
        e.audit.sharing_shared_rows,
        e.shared_uses,
        e.repeat_patched_words,
        e.events,
        e.lower_bound
    );
    crate::detail!(
        "exchange check: {} of {} phases decoded, replayed with the route model and compared with their requests at compile time ({} words; every build profile); the simulator's fabric executes the rows with its own witness (host::sim::witness)",
        e.checked_phases, e.phases, e.checked_words
    );
    super::patch_audit::print_brief(&e.audit);
    crate::say!(
        "memory: peak {} bytes/tile on tile {} after placement, budget {} bytes/tile",
        r.placed_peak_bytes,
        r.placed_peak_tile.get(),
        TILE_MEMORY_BUDGET
    );
    crate::say!("package: {} bytes, sha256 {}", r.package_bytes, r.sha256);
}

/// Simulated cycles and validation.
pub fn print_run_report(
    package: &Package,
    out: &DeviceOutput,
    profile: &Profile,
    checks: &[InferenceCheck],
    atol: f32,
    rtol: f32,
) {
    let p = &out.profile;
    let ms = |c: u64| c as f64 / CLOCK_HZ as f64 * 1e3;
    let estimate = match package.plan_summary.get("estimated_cycles") {
        Some(SummaryValue::Integer(c)) => c.to_string(),
        _ => "not in the package".to_string(),
    };
    crate::say!(
        "simulated: {} cycles to the last halt ({:.6} ms at 1.5 GHz), {} supersteps",
        p.cycles,
        ms(p.cycles),
        p.supersteps,
    );
    crate::detail!("planner estimate: {estimate} cycles");
    if let Some((first, last)) = profile.span() {
        crate::detail!(
            "simulated cropped span: {} cycles ({:.6} ms at 1.5 GHz), first to last step",
            last - first,
            ms(last - first)
        );
    }
    let spans = profile.iteration_spans();
    if let Some(per_layer) = crate::report::profile::cycles_per_layer(&spans) {
        // Tiles enter the next iteration at different times, so the
        // iterations' spans (each from its first step's start on any tile
        // to its last step's end on any tile) overlap: the pace is the
        // seeds' per-layer figure, the spans are printed beside it.
        let total: u64 = spans.iter().map(|s| s.cycles()).sum();
        crate::say!(
            "simulated Repeat: {} iterations at {} cycles per layer; their spans overlap, {} on average (first {})",
            spans.len(),
            per_layer,
            total / spans.len() as u64,
            spans.first().map_or(0, |s| s.cycles()),
        );
    }
    print_kernel_timing(profile);
    for (i, c) in checks.iter().enumerate() {
        print_inference(i, c, atol, rtol);
    }
}

/// One inference's cycles, simulation rate and validation against each
/// reference it ran.
fn print_inference(i: usize, c: &InferenceCheck, atol: f32, rtol: f32) {
    let wall = c.wall_seconds.max(1e-9);
    crate::say!(
        "inference[{i}]: {} simulated cycles, {} words moved by the exchange fabric, {:.2} s wall",
        c.cycles,
        c.words_moved,
        c.wall_seconds,
    );
    crate::detail!(
        "inference[{i}] simulation rate: {:.3} M cycles/s ({:.1} M tile-cycles/s over {} tiles), {:.1} M words/s",
        c.cycles as f64 / wall / 1e6,
        c.cycles as f64 * c.tiles as f64 / wall / 1e6,
        c.tiles,
        c.words_moved as f64 / wall / 1e6
    );
    if let Some(v) = &c.device {
        for (name, max_abs, cosine, outside) in &v.outputs {
            crate::say!(
                "validation[{i}] {name}: max abs error {max_abs:.6}, cosine {cosine:.9} vs the device-numerics reference, {outside} outside"
            );
            crate::detail!(
                "validation[{i}] {name}: {outside} elements outside atol {atol} / rtol {rtol}"
            );
        }
    }
    if let Some(v) = &c.fp32 {
        for (name, max_abs, cosine, _) in &v.outputs {
            crate::say!(
                "validation[{i}] {name}: max abs error {max_abs:.6}, cosine {cosine:.9} vs the FP32 reference"
            );
        }
    }
    print_images(i, c);
    if let Some(v) = &c.device {
        if let Some(what) = &v.non_finite {
            crate::say!("validation[{i}]: non-finite output: {what}");
        }
        crate::say!("validation[{i}]: {}", if v.pass { "PASS" } else { "FAIL" });
    }
}

/// Each image of a batch: its outputs' max abs error and cosine against
/// each reference, and its verdict.
fn print_images(i: usize, c: &InferenceCheck) {
    let images = [&c.device, &c.fp32]
        .iter()
        .filter_map(|v| v.as_ref().map(|v| v.images.len()))
        .max()
        .unwrap_or(0);
    let short = |name: &str| {
        match name {
            LAST_HIDDEN_STATE => "hidden",
            POOLER_OUTPUT => "pooled",
            other => other,
        }
        .to_string()
    };
    for k in 0..images {
        for (v, against) in [(&c.device, "device"), (&c.fp32, "FP32")] {
            let Some(v) = v.as_ref() else {
                continue;
            };
            let Some(outputs) = v.images.get(k) else {
                continue;
            };
            let stats: Vec<String> = outputs
                .iter()
                .map(|(name, m, cos, _)| format!("{} max abs {m:.6} cos {cos:.9}", short(name)))
                .collect();
            let verdict = match against {
                "device" if v.image_pass(k) => " PASS",
                "device" => " FAIL",
                _ => "",
            };
            crate::say!(
                "validation[{i}] image {k} vs {against}: {}{verdict}",
                stats.join(", ")
            );
        }
    }
}

/// Where the cycles come from, then the planner-vs-simulated table per
/// kernel kind (kernel bodies are modelled by the simulator's timing model).
pub fn print_kernel_timing(profile: &Profile) {
    for (part, how) in CYCLE_SOURCES {
        crate::detail!("cycles: {part}: {how}");
    }
    if profile.kernels.is_empty() {
        return;
    }
    use crate::report::text_table::{Align, TextTable};
    let mut table = TextTable::new(&[
        ("kernel", Align::Left),
        ("calls", Align::Right),
        ("planner", Align::Right),
        ("simulator", Align::Right),
        ("error", Align::Right),
    ]);
    let mut row = |k: &crate::report::KernelKindTiming| {
        table.row(vec![
            k.kernel.clone(),
            k.calls.to_string(),
            k.planned_cycles.to_string(),
            k.simulated_cycles.to_string(),
            format!("{:+.1}%", k.error_percent()),
        ])
    };
    let (mut planned, mut simulated) = (0u64, 0u64);
    for k in &profile.kernels {
        row(k);
        planned += k.planned_cycles;
        simulated += k.simulated_cycles;
    }
    let total = crate::report::KernelKindTiming {
        kernel: "all".into(),
        calls: profile.kernels.iter().map(|k| k.calls).sum(),
        planned_cycles: planned,
        simulated_cycles: simulated,
    };
    row(&total);
    crate::detail!("kernel timing (tile-cycles over all tiles; planner estimate vs the simulator's model, error = (planner − simulator) / simulator):");
    crate::detail!("{}", table.render(2).trim_end_matches('\n'));
    let amp_calls: u64 = profile
        .kernels
        .iter()
        .filter(|k| AMP_KERNELS.contains(&k.kernel.as_str()))
        .map(|k| k.calls)
        .sum();
    crate::detail!(
        "hardware rules (enforced by the codelets; facts §2.10 rule 6): {} AMP calls checked: operands 32-byte aligned, output in interleaved memory, left stream and output in different effective elements, claimed interleaved weights at interleaved addresses",
        amp_calls
    );
}

/// Writes the profile's files ([`crate::report::write_profile`]) and says
/// where they went.
pub fn write_profile(
    out: &Path,
    profile: &Profile,
    detail: crate::report::ProfileDetail,
) -> Result<()> {
    let files = crate::report::write_profile(out, profile, detail)?;
    crate::say!(
        "profile: {} (timeline), {} (Perfetto trace, gzipped)",
        files.profile_html.display(),
        files.trace_json.display()
    );
    crate::detail!(
        "profile data: {} (per-operation summary), {}",
        files.operations_json.display(),
        files.profile_json.display()
    );
    Ok(())
}

/// The placed per-tile peak as `(bytes, tile, step, moment label)`: the
/// tile with the most charged bytes and the schedule step at which that
/// peak happens, named by its originating op.
pub fn placed_peak_moment(compiled: &Compiled) -> (u32, u32, u32, String) {
    let r = &compiled.report;
    let step = compiled
        .placements
        .iter()
        .find(|p| p.tile == r.placed_peak_tile)
        .map_or(0, |p| p.peak.step);
    let mut label = format!("step {step}");
    compiled.schedule.visit(|s, _| {
        use ipuc_core::lower::schedule::Step;
        let (i, text) = match s {
            Step::Compute(c) => (c.index.0, format!("compute: {}", c.origin.label)),
            Step::Exchange(e) => (e.index.0, format!("exchange: {}", e.origin.label)),
            Step::Repeat(x) => (
                x.index.0,
                format!("repeat ×{}: {}", x.trip_count, x.origin.label),
            ),
        };
        if i == step {
            label = text;
        }
    });
    (
        r.placed_peak_bytes,
        u32::from(r.placed_peak_tile.get()),
        step,
        label,
    )
}

/// One line: the placed peak against the budget and its 95 % target.
pub fn print_peak_moment(compiled: &Compiled) {
    let (bytes, tile, step, label) = placed_peak_moment(compiled);
    let target = ipuc_core::plan::memory::HEADROOM_BYTES;
    let percent = ipuc_core::plan::memory::HEADROOM_PERCENT;
    crate::detail!(
        "memory peak: {bytes} bytes on tile {tile} at step {step} ({label}); {:.1} % of the {} byte budget ({} the {percent} % target of {target} bytes)",
        f64::from(bytes) * 100.0 / f64::from(TILE_MEMORY_BUDGET),
        TILE_MEMORY_BUDGET,
        if u64::from(bytes) <= target { "within" } else { "ABOVE" },
    );
}
