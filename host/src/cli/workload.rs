//! Flags shared by the commands that build a SigLIP model: which model, how
//! it is built, where its weights and inputs come from.

use std::path::PathBuf;

use anyhow::{bail, Result};

use super::batch::BatchFlag;
use crate::input::processor::{ImageProcessor, PREPROCESSOR_FILE};
use crate::input::PixelValues;
use crate::model::{
    build_siglip, ModelError, ModelSource, ModelSpec, RecordedCheckpoint, SiglipModel, SpecError,
    VisionConfig,
};
use ipuc_core::description::WeightOrigin;

use crate::weights::{random_tensor, weights_for, Checkpoint, WeightSource, WeightSpec, Weights};

/// Model selection and build options (the seeds' flags), declared once:
/// `compile`, `run` and `reference` build the model they name; `exec`
/// rebuilds the package's model and checks each one given against it
/// (`package_model::resolve`).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = super::headings::MODEL)]
pub struct WorkloadArgs {
    /// Preset: `siglip-small` (28×28, width 144, 2 heads), `siglip-so400m`
    /// (378×378, 27 layers; `siglip-vit-benchmark` is the seeds' name for
    /// it), `clip-vit-l14-336` (OpenAI CLIP ViT-L/14@336, 24 layers, 577
    /// tokens), `vit-b16-224` (Google ViT-B/16, 12 layers, 197 tokens) or
    /// `dinov2-l14-224` (Meta DINOv2 ViT-L/14 at 224, 24 layers, 257 tokens).
    /// One of `--workload`, `--vit-small` or `--checkpoint` names the model
    /// (`exec`: the package does).
    #[arg(long, conflicts_with_all = ["checkpoint", "vit_small"])]
    pub workload: Option<String>,
    /// The seeds' `--vit-small`: the same as `--workload siglip-small`.
    #[arg(long, conflicts_with = "checkpoint")]
    pub vit_small: bool,
    /// HF checkpoint directory (`config.json` + `model.safetensors`) of a
    /// SigLIP, CLIP (`CLIPVisionModel` or `CLIPModel`), ViT (`ViTModel`) or
    /// DINOv2 (`Dinov2Model`) vision tower; without it weights are random
    /// from `--seed`.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Encoder layers to build (1..=config layers).
    #[arg(long)]
    pub vit_layers: Option<usize>,
    /// Images per run (default: the batch of the inputs given, else 1);
    /// `max`: the largest batch that fits (`run`, `compile`).
    #[arg(long, value_parser = super::batch::parse)]
    pub vit_batch: Option<BatchFlag>,
    /// One fused QKV projection per layer.
    #[arg(long)]
    pub fuse_qkv: bool,
    /// Store GEMM weights as FP8 F143 at this power-of-two scale (else
    /// FP16). The projections' and MLPs' activations are then cast to FP8
    /// too (`--fp8-activation-scale`) and those GEMMs run FP8 × FP8 into
    /// FP16 partials, as the seeds run them; attention stays FP16.
    #[arg(long, allow_hyphen_values = true, help_heading = super::headings::NUMERICS)]
    pub fp8_scale: Option<i8>,
    /// With `--fp8-scale`: the F143 scale of the activations cast for FP8 ×
    /// FP8 GEMMs. 0 (max ±240, normal from 2^-7) holds the LayerNorm
    /// outputs that feed QKV and fc1 (unit variance before γ, β) in the
    /// middle of its range; larger values saturate at ±240·2^scale.
    /// Default 0; given without `--fp8-scale` (or with
    /// `--fp8-weights-only`) it would change nothing: a usage error.
    #[arg(long, allow_hyphen_values = true, help_heading = super::headings::NUMERICS,
          value_parser = clap::value_parser!(i8).range(-32..=31))]
    pub fp8_activation_scale: Option<i8>,
    /// With `--fp8-scale`: keep activations FP16 and widen the FP8 weights
    /// to FP16 in every GEMM (FP32 partials): more precise, and slower
    /// (half the FP8 × FP8 rate's work per cycle, plus the conversion).
    #[arg(long, help_heading = super::headings::NUMERICS)]
    pub fp8_weights_only: bool,
    /// Override the config's image size in pixels (≥ the patch size; tokens
    /// = (size / patch)²), e.g. `--image-size 56` for a full-width So400m
    /// with 16 tokens.
    #[arg(long)]
    pub image_size: Option<usize>,
    /// Seed of random weights (and of the synthetic input when no image is
    /// given); default 0 (`exec`: the package's).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Model input: an image, a `.npy`, or (neither) a seeded synthetic input.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = super::headings::MODEL)]
pub struct InputArgs {
    /// PNG/JPEG image, preprocessed as transformers' image processor for the
    /// model does it: the checkpoint's `preprocessor_config.json` (SigLIP,
    /// CLIP, ViT or DINOv2's BiT processor: resize, centre crop, rescale,
    /// normalise), a preset's published one, or the family's default.
    /// Given N times, a batch of N images in that order.
    #[arg(long, conflicts_with_all = ["input", "images"])]
    pub image: Vec<PathBuf>,
    /// A directory of images (`.png`, `.jpg`, `.jpeg`), one batch in file
    /// name order; the run says which files it took.
    #[arg(long, conflicts_with = "input")]
    pub images: Option<PathBuf>,
    /// `pixel_values.npy`, float32 NCHW (`[N, C, H, W]`: a batch of N).
    #[arg(long)]
    pub input: Option<PathBuf>,
}

impl InputArgs {
    /// The input files given, by flag (for [`super::checks::distinct_files`]).
    pub fn files(&self) -> Vec<(&'static str, PathBuf)> {
        let mut files = Vec::new();
        for p in &self.image {
            files.push(("--image", p.clone()));
        }
        if let Some(p) = &self.input {
            files.push(("--input", p.clone()));
        }
        files
    }
}

/// The input files of a run: its image or `.npy`, the checkpoint's files
/// and any runtime source.
pub fn input_files(
    input: &InputArgs,
    checkpoint: Option<&std::path::Path>,
    runtime: Option<&std::path::Path>,
) -> Vec<(&'static str, PathBuf)> {
    let mut files = input.files();
    files.extend(
        super::checks::checkpoint_files(checkpoint)
            .into_iter()
            .map(|p| ("--checkpoint", p)),
    );
    if let Some(p) = runtime {
        files.push(("--runtime-source", p.to_path_buf()));
    }
    files
}

/// `distinct_files` over owned paths.
pub fn distinct(
    inputs: &[(&'static str, PathBuf)],
    outputs: &[(&'static str, PathBuf)],
) -> Result<()> {
    let i: Vec<(&str, &std::path::Path)> = inputs.iter().map(|(f, p)| (*f, p.as_path())).collect();
    let o: Vec<(&str, &std::path::Path)> = outputs.iter().map(|(f, p)| (*f, p.as_path())).collect();
    super::checks::distinct_files(&i, &o)
}

/// The preset the flags name (`--workload NAME` or `--vit-small`), if any.
pub fn preset_name(args: &WorkloadArgs) -> Option<&str> {
    match (&args.workload, args.vit_small) {
        (Some(w), _) => Some(w.as_str()),
        (None, true) => Some("siglip-small"),
        (None, false) => None,
    }
}

/// Flag values that are wrong whatever the model: a zero batch, FP8
/// options without FP8 weights (usage errors, exit 2).
pub fn check_flags(args: &WorkloadArgs) -> Result<()> {
    if args.vit_batch == Some(BatchFlag::Images(0)) {
        return Err(ModelError::BatchSize.into());
    }
    if args.fp8_weights_only && args.fp8_scale.is_none() {
        crate::usage_bail!("--fp8-weights-only needs --fp8-scale (it widens FP8 weights to FP16; without --fp8-scale there are none)");
    }
    if let Some(scale) = args.fp8_activation_scale {
        if args.fp8_scale.is_none() {
            crate::usage_bail!("--fp8-activation-scale {scale} needs --fp8-scale (without FP8 weights no activation is cast to FP8)");
        }
        if args.fp8_weights_only {
            crate::usage_bail!("--fp8-activation-scale {scale} contradicts --fp8-weights-only, which keeps activations FP16");
        }
    }
    Ok(())
}

impl WorkloadArgs {
    /// The model the flags describe (their values as given; defaults
    /// filled in: seed 0, activation scale 0 with FP8 × FP8 GEMMs). Neither
    /// or both of a preset and a checkpoint is no source: building it is
    /// [`ModelError::ModelChoice`]. [`check_flags`] says whether the
    /// flags fit together.
    pub fn spec(&self) -> ModelSpec {
        let source = match (preset_name(self), &self.checkpoint) {
            (Some(name), None) => Some(ModelSource::Preset(name.to_string())),
            (None, Some(dir)) => Some(ModelSource::Checkpoint {
                dir: dir.clone(),
                recorded: None,
            }),
            _ => None,
        };
        ModelSpec {
            source,
            layers: self.vit_layers,
            batch: self.vit_batch.and_then(BatchFlag::images),
            fuse_qkv: self.fuse_qkv,
            fp8_scale: self.fp8_scale,
            fp8_activation_scale: (self.fp8_scale.is_some() && !self.fp8_weights_only)
                .then_some(self.fp8_activation_scale.unwrap_or(0)),
            image_size: self.image_size,
            seed: self.seed.unwrap_or(0),
        }
    }
}

/// The config of a checkpoint directory or a preset.
pub fn load_config(spec: &ModelSpec) -> Result<VisionConfig> {
    let mut config = match &spec.source {
        Some(ModelSource::Preset(name)) => VisionConfig::preset(name)?,
        Some(ModelSource::Checkpoint { dir, .. }) => crate::weights::checkpoint_config(dir)?,
        None => return Err(ModelError::ModelChoice.into()),
    };
    if let Some(size) = spec.image_size {
        // The stored position table is interpolated to the new grid, as
        // transformers does with `interpolate_pos_encoding=True` (DINOv2 on
        // every forward).
        if config.position_image_size.is_none() {
            config.position_image_size = Some(config.image_size);
        }
        config.image_size = size;
        // The config itself was valid: what fails now is the flag's value.
        if let Err(e) = config.validate() {
            crate::usage_bail!("--image-size {size}: {e}");
        }
    }
    Ok(config)
}

/// Builds the model `spec` describes, for `batch` images.
pub fn build_model(spec: &ModelSpec, batch: usize) -> Result<SiglipModel> {
    Ok(build_siglip(&load_config(spec)?, &spec.options(batch))?)
}

/// Builds the model for `batch` images and binds (or draws) its weights.
pub fn load_model(spec: &ModelSpec, batch: usize) -> Result<(SiglipModel, Weights)> {
    let (model, weights, _) = load_model_with_origin(spec, batch)?;
    Ok((model, weights))
}

/// [`load_model_with_origin`] for a caller that does not use the weights
/// (a compile): random weights are not drawn (`None`), a checkpoint's are
/// bound and checked as for a run.
pub fn load_model_unweighted(
    spec: &ModelSpec,
    batch: usize,
) -> Result<(SiglipModel, Option<Weights>, WeightOrigin)> {
    if let Some(ModelSource::Checkpoint { .. }) = &spec.source {
        let (model, weights, origin) = load_model_with_origin(spec, batch)?;
        return Ok((model, Some(weights), origin));
    }
    let model = build_model(spec, batch)?;
    Ok((model, None, WeightOrigin::Random { seed: spec.seed }))
}

/// [`load_model`], also saying where the weights came from (the seed, or
/// the checkpoint's digest and path) for the package's description.
///
/// A checkpoint is opened (its header read) before the graph is built, so a
/// `config.json` asking for more encoder layers than `model.safetensors`
/// holds is an error at once, not after building thousands of layers. A
/// checkpoint a package recorded must still have the recorded digest.
pub fn load_model_with_origin(
    spec: &ModelSpec,
    batch: usize,
) -> Result<(SiglipModel, Weights, WeightOrigin)> {
    let Some(ModelSource::Checkpoint { dir, recorded }) = &spec.source else {
        let model = build_model(spec, batch)?;
        let weights = weights_for(&model, &WeightSource::Random { seed: spec.seed })?;
        return Ok((model, weights, WeightOrigin::Random { seed: spec.seed }));
    };
    // The config first: it says when the directory is missing, and a
    // --vit-layers beyond its layers is a usage error (as for presets)
    // before the weights are looked at.
    let config = load_config(spec)?;
    if let Some(requested) = spec.layers {
        if requested == 0 || requested > config.num_hidden_layers {
            return Err(ModelError::LayerCount {
                requested,
                available: config.num_hidden_layers,
            }
            .into());
        }
    }
    let checkpoint = Checkpoint::open(dir)?.for_family(config.family);
    let layers = spec.layers.unwrap_or(config.num_hidden_layers);
    let stored = checkpoint.encoder_layers();
    if layers > stored {
        bail!(
            "{}: {} encoder layers are asked for (num_hidden_layers {} in config.json{}) but the checkpoint holds {stored}",
            checkpoint.file().display(),
            layers,
            config.num_hidden_layers,
            match spec.layers {
                Some(n) => format!(", --vit-layers {n}"),
                None => String::new(),
            }
        );
    }
    let model = build_model(spec, batch)?;
    let specs: Vec<WeightSpec> = model.parameters.iter().map(WeightSpec::from).collect();
    let weights = checkpoint.bind(&specs)?;
    check_weight_range(&model, &weights, &checkpoint.file().display().to_string())?;
    // Recorded absolute, so `exec` finds the checkpoint from any directory.
    let path = std::path::absolute(dir)
        .unwrap_or_else(|_| dir.clone())
        .display()
        .to_string();
    let sha256 = checkpoint.sha256();
    if let Some(recorded) = recorded.as_ref().filter(|r| r.sha256 != sha256) {
        return Err(SpecError::WeightsChanged {
            path,
            now: sha256,
            recorded: RecordedCheckpoint::clone(recorded),
        }
        .into());
    }
    Ok((model, weights, WeightOrigin::Checkpoint { sha256, path }))
}

/// Rejects checkpoint weights their storage type cannot hold, naming the
/// tensor and the first such value: any non-finite value, and for FP16
/// storage anything beyond ±65504 (it would become an infinity, then NaN
/// everywhere after it). FP8 storage saturates to its largest value at the
/// tensor's scale, as the device's weight conversion does (README).
fn check_weight_range(model: &SiglipModel, weights: &Weights, source: &str) -> Result<()> {
    use ipuc_core::ir::DType;
    for p in &model.parameters {
        let Some(t) = weights.get(&p.name) else {
            continue;
        };
        let max = match p.dtype {
            DType::F16 => FP16_MAX,
            _ => f32::MAX,
        };
        if let Some((index, v)) = t
            .data
            .iter()
            .enumerate()
            .find(|(_, v)| !v.is_finite() || v.abs() > max)
        {
            bail!(
                "{source}: element {index} of weight `{}` is {v}, outside what its storage type {:?} holds{}",
                p.name,
                p.dtype,
                if max < f32::MAX { " (±65504)" } else { " (finite values)" }
            );
        }
    }
    Ok(())
}

/// A PNG/JPEG by extension or by its first bytes.
fn looks_like_image(path: &std::path::Path) -> bool {
    let by_name = path.extension().is_some_and(|e| {
        let e = e.to_ascii_lowercase();
        e == "png" || e == "jpg" || e == "jpeg"
    });
    let mut head = [0u8; 4];
    // Only a regular file is opened: a FIFO would block the open.
    let by_magic = crate::fsio::open_regular(path)
        .and_then(|(mut f, _)| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && (head == [0x89, b'P', b'N', b'G'] || head[..3] == [0xFF, 0xD8, 0xFF]);
    by_name || by_magic
}

/// The model input named by `input` (its batch pinned by `--vit-batch` when
/// given), or `--vit-batch` seeded synthetic images in [-1, 1].
pub fn load_pixels(input: &InputArgs, spec: &ModelSpec) -> Result<PixelValues> {
    let config = load_config(spec)?;
    let size = config.image_size;
    let channels = config.num_channels;
    // Before anything is allocated: the batch, and what the device can hold.
    if spec.batch == Some(0) {
        return Err(ModelError::BatchSize.into());
    }
    config.check_limits(1, spec.batch.unwrap_or(1), 1, 2)?;
    let paths = super::images::image_paths(&input.image, input.images.as_deref())?;
    if !paths.is_empty() {
        let what = if input.images.is_some() {
            "--images"
        } else {
            "--image"
        };
        for path in &paths {
            super::checks::input_file(what, path)?;
        }
        if channels != 3 {
            bail!(
                "{what} {} gives RGB (3-channel) input but the model has num_channels = {channels}; give --input pixel_values.npy instead",
                paths[0].display()
            );
        }
        if let Some(batch) = spec.batch.filter(|&b| b != paths.len()) {
            return Err(super::images::count_mismatch(
                what,
                paths.len(),
                "--vit-batch",
                batch,
            ));
        }
        config.check_limits(1, paths.len(), 1, 2)?;
        let processor = image_processor(spec, &config)?;
        return super::images::stack(&paths, &processor, size, config.patch_size);
    }
    if let Some(path) = &input.input {
        super::checks::input_file("--input", path)?;
        if looks_like_image(path) {
            bail!(
                "--input {}: this is an image; --input takes a float32 `.npy` of pixel values (NCHW). Give images with --image {}",
                path.display(),
                path.display()
            );
        }
        let pixels = PixelValues::from_npy(path, None, channels, size)?;
        if let Some(batch) = spec.batch.filter(|&b| b != pixels.batch()) {
            return Err(super::images::count_mismatch(
                &format!("--input {}", path.display()),
                pixels.batch(),
                "--vit-batch",
                batch,
            ));
        }
        config.check_limits(1, pixels.shape[0], 1, 2)?;
        check_fp16_range(&pixels, &path.display().to_string())?;
        return Ok(pixels);
    }
    Ok(random_pixels(spec, channels, size))
}

/// The largest finite FP16 value: the device computes in FP16, so larger
/// inputs would silently become infinities (then NaN) there.
const FP16_MAX: f32 = 65504.0;

/// Rejects input values outside the FP16 range, naming the first one.
fn check_fp16_range(pixels: &PixelValues, source: &str) -> Result<()> {
    if let Some((index, v)) = pixels
        .data
        .iter()
        .enumerate()
        .find(|(_, v)| v.is_nan() || v.abs() > FP16_MAX)
    {
        bail!(
            "{source}: element {index} of pixel_values{:?} is {v}, outside the FP16 range ±{FP16_MAX} the device computes in",
            pixels.shape
        );
    }
    Ok(())
}

/// The image processor `--image` goes through: the checkpoint's
/// `preprocessor_config.json` (the family's default, with a warning, when
/// it has none), a preset's published processor, or the family's default
/// for a preset without one. Its output is set to the model's size when it
/// makes another patch grid (`--image-size`, or a checkpoint whose
/// processor disagrees with its config), saying so.
pub fn image_processor(spec: &ModelSpec, config: &VisionConfig) -> Result<ImageProcessor> {
    let size = config.image_size;
    let default = || ImageProcessor::family_default(config.family, size);
    let processor = match (spec.checkpoint(), spec.preset()) {
        (Some(dir), _) => {
            let file = dir.join(PREPROCESSOR_FILE);
            if file.exists() {
                ImageProcessor::from_file(&file)?
            } else {
                let p = default();
                tracing::warn!(
                    "warning: {} has no {PREPROCESSOR_FILE}; --image is preprocessed by {}'s default processor at {size} px ({})",
                    dir.display(),
                    config.family.display_name(),
                    p.describe()
                );
                p
            }
        }
        (None, Some(name)) => ImageProcessor::preset(name).unwrap_or_else(default),
        (None, None) => default(),
    };
    let patch = config.patch_size.max(1);
    let fits = |n: usize| n >= size && n / patch == size / patch;
    let processor = match processor.nominal_size() {
        Some((h, w)) if fits(h) && fits(w) => {
            if (h, w) != (size, size) {
                crate::detail!(
                    "preprocessing: the top-left {size}×{size} of its {w}×{h} output, all the {patch}-px patches read"
                );
            }
            processor
        }
        nominal => {
            let p = processor.resized_to(size);
            if let Some((h, w)) = nominal {
                crate::say!(
                    "preprocessing: the processor makes {w}×{h} images; the model takes {size}×{size}, so its sizes are scaled to {size}"
                );
            }
            p
        }
    };
    crate::detail!("preprocessing: {}", processor.describe());
    Ok(processor)
}

/// `--vit-batch` seeded synthetic images in [-1, 1].
fn random_pixels(spec: &ModelSpec, channels: usize, size: usize) -> PixelValues {
    let shape = [spec.batch.unwrap_or(1), channels, size, size];
    let data = random_tensor(spec.seed ^ 0x5EED_1A6E, "pixel_values", &shape)
        .into_iter()
        .map(|v| v.clamp(-1.0, 1.0))
        .collect();
    PixelValues { shape, data }
}
