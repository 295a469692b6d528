//! `cargo xtask bench models`: the CLIP, ViT and DINOv2 presets (issue #29)
//! at full depth with the seeds' build (fused QKV, FP8 −4 GEMM weights),
//! each through the release `ipuc run` with both references, one table row
//! per tower from its `--summary-json`. Cycle figures are simulated (kernel
//! bodies modelled); weights are random (`--seed`).

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use crate::sweep::{float, group, int, release_ipuc, run_args, run_case, Build};

/// Tiles of the C600 and FP8 multiply-adds per cycle per tile (the compute
/// limit, docs/facts/siglip-and-fp8.md).
const LIMIT_MACS_PER_CYCLE: f64 = 1472.0 * 128.0;

/// The presets benchmarked and their full depth.
const TOWERS: [(&str, usize); 3] = [
    ("clip-vit-l14-336", 24),
    ("vit-b16-224", 12),
    ("dinov2-l14-224", 24),
];

/// `extra`: leading preset names (default: all of [`TOWERS`]), then `ipuc
/// run` flags; a `--vit-layers N` among them replaces the full depth.
pub fn bench_models(root: &Path, out: &Path, timeout_minutes: u64, extra: &[String]) -> Result<()> {
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
    let layers_override = match flags.iter().position(|f| f == "--vit-layers") {
        Some(i) if i + 1 < flags.len() => {
            let n: usize = flags[i + 1].parse()?;
            flags.drain(i..i + 2);
            Some(n)
        }
        _ => None,
    };
    let ipuc = release_ipuc(root)?;
    std::fs::create_dir_all(out)?;
    let mut rows = Vec::new();
    for (tower, depth) in TOWERS {
        if !named.is_empty() && !named.contains(&tower) {
            continue;
        }
        let layers = layers_override.unwrap_or(depth);
        let dir = out.join(tower);
        std::fs::create_dir_all(&dir)?;
        let summary = dir.join("summary.json");
        std::fs::remove_file(&summary).ok();
        let args = run_args(tower, layers, Build::SEEDS, &summary, &flags);
        let v = run_case(
            &ipuc,
            &args,
            &dir,
            layers,
            timeout_minutes,
            &format!("bench models: {tower}"),
        )?;
        rows.push((tower, v));
        let all: Vec<&Value> = rows.iter().map(|r| &r.1).collect();
        crate::atomic::write(
            &out.join("summary.json"),
            serde_json::to_string_pretty(&all)?,
        )?;
    }
    print_table(&rows, &flags);
    println!("summary: {}", out.join("summary.json").display());
    Ok(())
}

fn print_table(rows: &[(&str, Value)], flags: &[String]) {
    println!(
        "Vision towers, fused QKV, FP8 GEMM weights at scale -4, random weights{}",
        if flags.is_empty() {
            String::new()
        } else {
            format!(", with {}", flags.join(" "))
        }
    );
    println!(
        "| Tower | Layers | Tokens | Result | Compile s | Cycles/image | Cycles/layer | Peak bytes/tile | FP32 cosine | × FP8 compute limit |"
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    for (tower, v) in rows {
        let ratio = match (v["cropped_cycles"].as_u64(), v["model_flops"].as_u64()) {
            (Some(c), Some(f)) if f > 0 => {
                format!("{:.2}", c as f64 / (f as f64 / 2.0 / LIMIT_MACS_PER_CYCLE))
            }
            _ => "—".into(),
        };
        let result = match v["error"].as_str() {
            Some(e) => format!(
                "{}: {}",
                v["result"].as_str().unwrap_or("?"),
                e.lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(80)
                    .collect::<String>()
            ),
            None => v["result"].as_str().unwrap_or("?").to_string(),
        };
        println!(
            "| {tower} | {} | {} | {result} | {} | {} | {} | {} | {} | {ratio} |",
            v["layers"].as_u64().map_or("—".into(), group),
            v["tokens"].as_u64().map_or("—".into(), group),
            float(v, "compile_seconds", 1),
            int(v, "cropped_cycles"),
            int(v, "cycles_per_layer"),
            int(v, "peak_bytes_per_tile"),
            float(v, "fp32_cosine", 6),
        );
    }
    println!("Cycles are simulated from the package's instructions with modelled kernel bodies, never hardware; the limit is the model's multiply-adds at 128 FP8 MAC/cycle/tile on 1472 tiles; the cosine is against the FP32 reference.");
}
