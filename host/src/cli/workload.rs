//! Flags shared by the commands that build a SigLIP model: which model, how
//! it is built, where its weights and inputs come from.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};

use crate::input::PixelValues;
use crate::model::{build_siglip, ModelOptions, SiglipModel, VisionConfig};
use crate::weights::{random_tensor, weights_for, WeightSource, Weights, CONFIG_FILE};

/// Model selection and build options (the seeds' flags).
#[derive(clap::Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Preset: `siglip-small` (28×28, width 144, 2 heads) or `siglip-so400m` (378×378, 27 layers).
    #[arg(
        long,
        required_unless_present = "checkpoint",
        conflicts_with = "checkpoint"
    )]
    pub workload: Option<String>,
    /// HF checkpoint directory (`config.json` + `model.safetensors`); without
    /// it weights are random from `--seed`.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Encoder layers to build (1..=config layers).
    #[arg(long)]
    pub vit_layers: Option<usize>,
    /// Images per run.
    #[arg(long, default_value_t = 1)]
    pub vit_batch: usize,
    /// One fused QKV projection per layer.
    #[arg(long)]
    pub fuse_qkv: bool,
    /// Store GEMM weights as FP8 F143 at this power-of-two scale (else FP16).
    #[arg(long, allow_hyphen_values = true)]
    pub fp8_scale: Option<i8>,
    /// Seed of random weights (and of the synthetic input when no image is given).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// Model input: an image, a `.npy`, or (neither) a seeded synthetic input.
#[derive(clap::Args, Debug, Clone)]
pub struct InputArgs {
    /// PNG/JPEG image, preprocessed as SigLIP does.
    #[arg(long, conflicts_with = "input")]
    pub image: Option<PathBuf>,
    /// `pixel_values.npy`, float32 NCHW.
    #[arg(long)]
    pub input: Option<PathBuf>,
}

/// The workload's name for reports.
pub fn workload_name(args: &WorkloadArgs) -> String {
    match (&args.workload, &args.checkpoint) {
        (Some(w), _) => w.clone(),
        (None, Some(dir)) => dir.display().to_string(),
        (None, None) => "model".into(),
    }
}

/// The config of a checkpoint directory or a preset.
pub fn load_config(args: &WorkloadArgs) -> Result<VisionConfig> {
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

/// Builds the model and binds (or draws) its weights.
pub fn load_model(args: &WorkloadArgs) -> Result<(SiglipModel, Weights)> {
    let config = load_config(args)?;
    let options = ModelOptions {
        vit_layers: args.vit_layers,
        vit_batch: args.vit_batch,
        fuse_qkv: args.fuse_qkv,
        fp8_scale: args.fp8_scale,
        ..ModelOptions::default()
    };
    let model = build_siglip(&config, &options)?;
    let source = match &args.checkpoint {
        Some(dir) => WeightSource::Checkpoint(dir.clone()),
        None => WeightSource::Random { seed: args.seed },
    };
    let weights = weights_for(&model, &source)?;
    Ok((model, weights))
}

/// The model input named by `input`, or a seeded synthetic image in [-1, 1].
pub fn load_pixels(input: &InputArgs, model: &SiglipModel, seed: u64) -> Result<PixelValues> {
    let size = model.config.image_size;
    let channels = model.config.num_channels;
    let batch = model.options.vit_batch;
    if let Some(path) = &input.image {
        if batch != 1 {
            bail!("--image gives one image but --vit-batch is {batch}");
        }
        return PixelValues::from_image(path, size);
    }
    if let Some(path) = &input.input {
        return PixelValues::from_npy(path, Some(batch), channels, size)
            .map_err(|e| anyhow!("{e}"));
    }
    let shape = [batch, channels, size, size];
    let data = random_tensor(seed ^ 0x5EED_1A6E, "pixel_values", &shape)
        .into_iter()
        .map(|v| v.clamp(-1.0, 1.0))
        .collect();
    Ok(PixelValues { shape, data })
}
