//! `ipuc reference`: run the host FP32 reference of a SigLIP vision tower on
//! an image or a `pixel_values.npy`, write the outputs as `.npy`, report wall
//! time and GFLOP/s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};

use crate::input::{write_npy, PixelValues};
use crate::model::{build_siglip, ModelOptions, SiglipModel, VisionConfig};
use crate::reference::{run_siglip, Numerics};
use crate::weights::{weights_for, WeightSource, CONFIG_FILE};

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("model").required(true).args(["workload", "checkpoint"])))]
#[command(group(clap::ArgGroup::new("pixels").required(true).args(["image", "input"])))]
pub struct Args {
    /// Preset: siglip-so400m or siglip-small (random weights from --seed).
    #[arg(long)]
    pub workload: Option<String>,
    /// HF checkpoint directory (config.json + model.safetensors).
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Encoder layers to run (1..=config layers; default all).
    #[arg(long)]
    pub vit_layers: Option<usize>,
    /// Seed for random weights (presets only).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// PNG or JPEG image (SigLIP preprocessing to the model's image size).
    #[arg(long)]
    pub image: Option<PathBuf>,
    /// float32 NCHW pixel values `[B, C, H, W]` (.npy).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Where to write the MAP-head embedding `[B, D]` (.npy).
    #[arg(long)]
    pub output_embedding: PathBuf,
    /// Where to write the last hidden state after the final LayerNorm (.npy).
    #[arg(long)]
    pub output_hidden: Option<PathBuf>,
    /// fp32 (exact) or device (FP8 weights / FP16 activations as the IPU casts).
    #[arg(long, default_value = "fp32")]
    pub numerics: Numerics,
    /// Store GEMM weights as FP8 F143 at this power-of-two scale (device numerics).
    #[arg(long, allow_negative_numbers = true)]
    pub fp8_scale: Option<i8>,
    /// One fused QKV projection per layer (same numbers).
    #[arg(long)]
    pub fuse_qkv: bool,
}

/// The config of a checkpoint directory or a preset.
fn load_config(args: &Args) -> anyhow::Result<VisionConfig> {
    match (&args.workload, &args.checkpoint) {
        (Some(name), None) => Ok(VisionConfig::preset(name)?),
        (None, Some(dir)) => {
            let file = dir.join(CONFIG_FILE);
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            VisionConfig::from_json(&text).with_context(|| format!("in {}", file.display()))
        }
        _ => bail!("give exactly one of --workload and --checkpoint"),
    }
}

fn load_pixels(args: &Args, config: &VisionConfig) -> anyhow::Result<PixelValues> {
    match (&args.image, &args.input) {
        (Some(image), None) => PixelValues::from_image(image, config.image_size),
        (None, Some(npy)) => Ok(PixelValues::from_npy(
            npy,
            None,
            config.num_channels,
            config.image_size,
        )?),
        _ => bail!("give exactly one of --image and --input"),
    }
}

fn describe(model: &SiglipModel) -> String {
    let c = &model.config;
    format!(
        "{} layers of {}, width {}, MLP {}, {} heads, {} tokens, batch {}",
        model.layers,
        c.num_hidden_layers,
        c.hidden_size,
        c.intermediate_size,
        c.num_attention_heads,
        c.num_tokens(),
        model.options.vit_batch
    )
}

fn write_output(path: &Path, shape: &[usize], data: &[f32], what: &str) -> anyhow::Result<()> {
    write_npy(path, shape, data)?;
    println!("wrote {what} {shape:?} to {}", path.display());
    Ok(())
}

/// The 1-minute load average (Linux), to qualify timings.
fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next().map(str::to_string)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let total = Instant::now();
    let config = load_config(&args)?;
    let pixels = load_pixels(&args, &config)?;
    let options = ModelOptions {
        vit_layers: args.vit_layers,
        vit_batch: pixels.batch(),
        fuse_qkv: args.fuse_qkv,
        fp8_scale: args.fp8_scale,
        ..ModelOptions::default()
    };
    let model = build_siglip(&config, &options)?;
    if model.pooled.is_none() {
        bail!("this config has no MAP head (vision_use_head = false), so there is no embedding to write");
    }
    println!("model: {}", describe(&model));

    let t = Instant::now();
    let source = match &args.checkpoint {
        Some(dir) => WeightSource::Checkpoint(dir.clone()),
        None => WeightSource::Random { seed: args.seed },
    };
    let weights = weights_for(&model, &source)?;
    let what = match &source {
        WeightSource::Checkpoint(dir) => format!("loaded from {}", dir.display()),
        WeightSource::Random { seed } => format!("random, seed {seed}"),
    };
    println!(
        "weights: {} tensors, {:.1} M parameters ({what}) in {:.2} s",
        weights.len(),
        weights.parameter_count() as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    println!(
        "running the {} reference on {} thread(s)…",
        match args.numerics {
            Numerics::Fp32 => "FP32",
            Numerics::Device => "device-numerics",
        },
        rayon::current_num_threads()
    );
    let progress: crate::reference::Progress = Box::new(|done, of| {
        eprint!("\r  encoder layer {done}/{of}");
        if done == of {
            eprintln!();
        }
        let _ = std::io::stderr().flush();
    });
    let out = run_siglip(&model, weights, &pixels, args.numerics, Some(progress))?;
    println!(
        "forward: {:.3} s wall, {:.1} GFLOP (matmul + attention), {:.1} GFLOP/s",
        out.seconds,
        out.flops as f64 / 1e9,
        out.gflops_per_second()
    );
    if let Some(cpu) = out.cpu_seconds {
        let threads = rayon::current_num_threads() as f64;
        println!(
            "forward CPU time: {cpu:.2} s over {threads} thread(s) (≈ {:.2} s wall on an otherwise idle machine; machine load {})",
            cpu / threads,
            load_average().unwrap_or_else(|| "unknown".into())
        );
    }

    let pooled = out
        .pooler_output
        .as_ref()
        .context("the graph produced no pooler_output")?;
    write_output(
        &args.output_embedding,
        &pooled.shape,
        &pooled.data,
        "embedding",
    )?;
    if let Some(path) = &args.output_hidden {
        let h = &out.last_hidden_state;
        write_output(path, &h.shape, &h.data, "last hidden state")?;
    }
    println!("total: {:.2} s", total.elapsed().as_secs_f64());
    Ok(())
}
