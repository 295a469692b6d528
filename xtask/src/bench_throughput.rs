//! `cargo xtask bench throughput` (issue #41): each tower at batch 1, 2,
//! 4, 8, … through the release `ipuc run` (fused QKV, FP8 −4, both
//! references) until a batch is rejected for memory, one table row per
//! batch from its `--summary-json`: cycles per image, images/s and
//! latency at 1.5 GHz, peak bytes per tile, compile seconds and the images
//! that PASS. Every cycle figure is simulated (kernel bodies modelled),
//! never hardware; the anchors printed beside the table are the issue's.

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use crate::sweep::{float, int, release_ipuc, run_args, run_case, Build};

/// The towers and their full depth.
const TOWERS: [(&str, usize); 4] = [
    ("vit-b16-224", 12),
    ("clip-vit-l14-336", 24),
    ("dinov2-l14-224", 24),
    ("siglip-so400m", 27),
];

/// Largest batch tried when nothing is rejected before it.
const LAST_BATCH: usize = 1024;

/// `extra`: leading tower names (default: all of [`TOWERS`]), then
/// `--batches 1,2,4` (default: powers of two until a rejection) and `ipuc
/// run` flags; a `--vit-layers N` among them replaces the full depth.
pub fn bench_throughput(
    root: &Path,
    out: &Path,
    timeout_minutes: u64,
    extra: &[String],
) -> Result<()> {
    let named: Vec<&str> = extra
        .iter()
        .map(String::as_str)
        .take_while(|a| !a.starts_with('-'))
        .collect();
    for name in &named {
        if !TOWERS.iter().any(|(t, _)| t == name) {
            anyhow::bail!(
                "unknown tower {name:?} (known: {})",
                TOWERS.map(|t| t.0).join(", ")
            );
        }
    }
    let mut flags: Vec<String> = extra[named.len()..].to_vec();
    let mut take = |flag: &str| -> Option<String> {
        let i = flags.iter().position(|f| f == flag)?;
        let value = flags.get(i + 1).cloned();
        flags.drain(i..(i + 2).min(flags.len()));
        value
    };
    let layers_override: Option<usize> = take("--vit-layers").map(|n| n.parse()).transpose()?;
    let batches: Vec<usize> = match take("--batches") {
        Some(list) => list
            .split(',')
            .map(|b| b.trim().parse::<usize>())
            .collect::<Result<_, _>>()?,
        None => std::iter::successors(Some(1usize), |b| Some(b * 2))
            .take_while(|&b| b <= LAST_BATCH)
            .collect(),
    };
    let ipuc = release_ipuc(root)?;
    std::fs::create_dir_all(out)?;
    let mut rows: Vec<(&str, usize, Value)> = Vec::new();
    for (tower, depth) in TOWERS {
        if !named.is_empty() && !named.contains(&tower) {
            continue;
        }
        let layers = layers_override.unwrap_or(depth);
        for &batch in &batches {
            let dir = out.join(tower).join(format!("batch-{batch}"));
            std::fs::create_dir_all(&dir)?;
            let summary = dir.join("summary.json");
            std::fs::remove_file(&summary).ok();
            let mut case_flags = vec!["--vit-batch".to_string(), batch.to_string()];
            case_flags.extend(flags.iter().cloned());
            let args = run_args(tower, layers, Build::SEEDS, &summary, &case_flags);
            let v = run_case(
                &ipuc,
                &args,
                &dir,
                layers,
                timeout_minutes,
                &format!("bench throughput: {tower} batch {batch}"),
            )?;
            let rejected = v["result"].as_str() == Some("rejected");
            rows.push((tower, batch, v));
            let all: Vec<Value> = rows
                .iter()
                .map(|(t, b, v)| serde_json::json!({"tower": t, "batch": b, "summary": v}))
                .collect();
            crate::atomic::write(
                &out.join("summary.json"),
                serde_json::to_string_pretty(&all)?,
            )?;
            if rejected {
                break;
            }
        }
    }
    print_table(&rows, &flags);
    println!("summary: {}", out.join("summary.json").display());
    Ok(())
}

/// `passed/images`, from the last inference's per-image verdicts (the
/// batch's verdict at batch 1).
fn passes(v: &Value, batch: usize) -> String {
    let last = v["inferences"].as_array().and_then(|a| a.last());
    let images = last
        .and_then(|i| i["images"].as_array())
        .filter(|a| !a.is_empty());
    match (images, last.and_then(|i| i["pass"].as_bool())) {
        (Some(images), _) => {
            let pass = images
                .iter()
                .filter(|i| i["pass"].as_bool() == Some(true))
                .count();
            format!("{pass}/{} PASS", images.len())
        }
        (None, Some(true)) => format!("{batch}/{batch} PASS"),
        (None, Some(false)) => format!("0/{batch} PASS"),
        (None, None) => "—".into(),
    }
}

fn print_table(rows: &[(&str, usize, Value)], flags: &[String]) {
    println!(
        "Throughput by batch: fused QKV, FP8 GEMM weights at scale -4, random weights and images{}",
        if flags.is_empty() {
            String::new()
        } else {
            format!(", with {}", flags.join(" "))
        }
    );
    println!(
        "| Tower | Batch | Result | Cycles/image | Images/s | Latency ms | × FP8 limit | Peak bytes/tile | Compile s | Images PASS |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---|");
    for (tower, batch, v) in rows {
        let t = &v["throughput"];
        let result = match (v["result"].as_str(), v["error"].as_str()) {
            (Some(r), Some(e)) => format!(
                "{r}: {}",
                e.lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(100)
                    .collect::<String>()
            ),
            (r, _) => r.unwrap_or("?").to_string(),
        };
        println!(
            "| {tower} | {batch} | {result} | {} | {} | {} | {} | {} | {} | {} |",
            int(t, "cycles_per_image"),
            float(t, "images_per_second", 0),
            float(t, "latency_ms", 3),
            float(t, "ratio_to_fp8_limit", 2),
            int(v, "peak_bytes_per_tile"),
            float(v, "compile_seconds", 1),
            passes(v, *batch),
        );
    }
    println!(
        "Cycles are simulated (to the last halt; kernel bodies modelled), never hardware; rates at the seeds' 1.5 GHz clock; \
         the limit is the model's multiply-adds at 128 FP8 MAC/cycle/tile on 1472 tiles."
    );
    println!("Anchors (issue #41):");
    for line in ANCHORS {
        println!("  {line}");
    }
}

/// The figures the issue sets beside ours.
const ANCHORS: [&str; 6] = [
    "ours before batching: ViT-B/16-224 FP8 -4 fused QKV, batch 1: 1,373,445 simulated cycles/image (1,092 images/s, 14.7x the FP8 limit), as filed",
    "seeds' clock: 12,836,412 cycles = 8.557608 ms, so 1.5 GHz",
    "Graphcore PopRT ViT example (FP16, hardware): 2,600 images/s at batch 8, 3,109 at batch 32",
    "ByteMLPerf Swin-L@384 FP8 on one C600 (hardware): 480 images/s at batch 4",
    "target: ViT-B/16-224 >= 4,000 images/s at batch 16 (<= 375,000 cycles/image), every image PASS",
    "target: So400m 27 layers batch 2 PASS at <= 0.9x batch 1's cycles/image; report the largest batch that fits",
];
