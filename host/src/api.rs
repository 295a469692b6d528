//! The host as a library: the entry points the Python package (`python/`,
//! issue #45) calls. Each is a thin layer over what the CLI does, so a
//! package compiled here is the one `ipuc compile` makes from the same
//! flags, an image is preprocessed as `--image` does it, and a package is
//! rebuilt from its description as `ipuc exec` does. Nothing here prints:
//! the caller sets [`crate::output`]'s verbosity.
//!
//! Errors are the CLI's (`anyhow` chains); [`crate::exit::code_of`] gives
//! the exit code the CLI would have ended with, which the Python package
//! maps to its exception classes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ipuc_core::description::Description;
use ipuc_target::package::Package;

use crate::cli::package_model::{description_of, resolve};
use crate::cli::run::{compile_workload, BuildArgs, WeightUse};
use crate::cli::workload::{check_flags, load_config, load_model_with_origin, WorkloadArgs};
use crate::compile::Compiled;
use crate::device::simulated::{cycle_budget, LoadedSim, SimDevice};
use crate::device::DeviceOutput;
use crate::input::preprocess::Rgb8;
use crate::input::processor::{ImageProcessor, PREPROCESSOR_FILE};
use crate::input::PixelValues;
use crate::model::{SiglipModel, LAST_HIDDEN_STATE, PIXEL_VALUES, POOLER_OUTPUT};
use crate::reference::{run_siglip, Numerics, SiglipOutputs};
use crate::report::run::error_stats;
use crate::weights::{HostTensor, Weights};

/// Which model to build, as the library's callers say it: the CLI's model
/// flags (`--workload` or `--checkpoint`, `--vit-layers`, `--vit-batch`,
/// numerics, `--image-size`, `--seed`). Like the CLI's flags, they are
/// checked into the one [`crate::model::ModelSpec`] every command builds
/// from.
#[derive(Clone, Debug, Default)]
pub struct ModelFlags {
    pub workload: Option<String>,
    pub checkpoint: Option<PathBuf>,
    pub layers: Option<usize>,
    /// Images per inference.
    pub batch: usize,
    pub fuse_qkv: bool,
    pub fp8_scale: Option<i8>,
    pub fp8_activation_scale: Option<i8>,
    pub fp8_weights_only: bool,
    pub image_size: Option<usize>,
    pub seed: u64,
}

impl ModelFlags {
    fn workload_args(&self) -> WorkloadArgs {
        WorkloadArgs {
            workload: self.workload.clone(),
            vit_small: false,
            checkpoint: self.checkpoint.clone(),
            vit_layers: self.layers,
            vit_batch: Some(crate::cli::batch::BatchFlag::Images(self.batch)),
            fuse_qkv: self.fuse_qkv,
            fp8_scale: self.fp8_scale,
            fp8_activation_scale: self.fp8_activation_scale,
            fp8_weights_only: self.fp8_weights_only,
            image_size: self.image_size,
            seed: Some(self.seed),
        }
    }

    /// The flags' own checks (a zero batch, an activation scale without
    /// FP8 weights, …) and the model choice: usage errors as in the CLI.
    fn check(&self) -> Result<crate::model::ModelSpec> {
        let args = self.workload_args();
        if args.workload.is_some() == args.checkpoint.is_some() {
            crate::usage_bail!(
                "give exactly one of workload= (a preset) and checkpoint= (a directory)"
            );
        }
        if args.fp8_weights_only && args.fp8_scale.is_none() {
            crate::usage_bail!("fp8_weights_only needs fp8_scale");
        }
        check_flags(&args)?;
        Ok(args.spec())
    }
}

/// The planning flags of `ipuc compile` (their CLI defaults by
/// [`Default`]).
#[derive(Clone, Debug)]
pub struct BuildSpec {
    pub beam_width: usize,
    pub tiles: u32,
    pub optimization_steps: u32,
    pub exchange_stream_words: Option<u32>,
    pub outgoing_base: bool,
    pub planner_data_budget: Option<u64>,
    pub runtime_source: Option<PathBuf>,
    /// Where the memory map (and, on a memory rejection, the rejection
    /// reports) are written.
    pub memory_profile_directory: Option<PathBuf>,
}

impl Default for BuildSpec {
    fn default() -> Self {
        BuildSpec {
            beam_width: ipuc_core::plan::DEFAULT_BEAM_WIDTH,
            tiles: ipuc_target::ipu21::topology::TILE_COUNT as u32,
            optimization_steps: 0,
            exchange_stream_words: None,
            outgoing_base: true,
            planner_data_budget: None,
            runtime_source: None,
            memory_profile_directory: None,
        }
    }
}

impl BuildSpec {
    /// The CLI's range checks of these flags (usage errors).
    fn build_args(&self) -> Result<BuildArgs> {
        use crate::cli::checks;
        let beam = self.beam_width.to_string();
        checks::beam_width(&beam)
            .map_err(|e| crate::exit::UsageError(format!("planning_beam_width {beam}: {e}")))?;
        let tiles = self.tiles.to_string();
        checks::tile_count(&tiles)
            .map_err(|e| crate::exit::UsageError(format!("planning_tiles {tiles}: {e}")))?;
        if self.optimization_steps > checks::MAX_OPTIMIZATION_STEPS {
            crate::usage_bail!(
                "optimization_steps {} is above the limit {}",
                self.optimization_steps,
                checks::MAX_OPTIMIZATION_STEPS
            );
        }
        if self.exchange_stream_words == Some(0) {
            crate::usage_bail!("exchange_stream_words must be at least 1");
        }
        let args = BuildArgs {
            planning_beam_width: self.beam_width,
            planning_tiles: self.tiles,
            optimization_steps: self.optimization_steps,
            exchange_stream_words: self.exchange_stream_words,
            runtime_source: self.runtime_source.clone(),
            package: None,
            memory_profile_directory: self.memory_profile_directory.clone(),
            plan_output: None,
            no_outgoing_base: !self.outgoing_base,
            planner_data_budget: self.planner_data_budget,
        };
        args.check()?;
        Ok(args)
    }
}

/// A model built and its weights bound (drawn from the seed or read from
/// the checkpoint).
pub struct BoundModel {
    pub model: SiglipModel,
    pub weights: Weights,
}

/// `ipuc compile`: builds the model `model` names, compiles it with
/// `build`'s flags; returns the model with its weights and the package.
pub fn compile(model: &ModelFlags, build: &BuildSpec) -> Result<(BoundModel, Compiled)> {
    let spec = model.check()?;
    let build = build.build_args()?;
    let (model, weights, compiled) = compile_workload(&spec, model.batch, &build, WeightUse::Used)?;
    let weights = weights.context("the weights of a compile that uses them")?;
    Ok((BoundModel { model, weights }, compiled))
}

/// A package file's bytes, read and checked (magic, digest, structure,
/// description) as `ipuc exec` reads them; with its description and digest.
pub fn read_package(path: &Path) -> Result<(Vec<u8>, Package, Description, String)> {
    let bytes = crate::fsio::read_package(path)
        .with_context(|| format!("reading the package {}", path.display()))?;
    let package = ipuc_target::package::read(&bytes).with_context(|| path.display().to_string())?;
    let description = description_of(&package).with_context(|| path.display().to_string())?;
    let digest = ipuc_target::package::digest_hex(&bytes);
    Ok((bytes, package, description, digest))
}

/// Writes package bytes atomically (the previous file stays whole on any
/// error).
pub fn write_package(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::fsio::write_atomic(path, bytes)
        .with_context(|| format!("writing the package to {}", path.display()))
}

/// The package's description section as `ipuc inspect --json` shows it.
pub fn description_json(description: &Description) -> Result<String> {
    Ok(serde_json::to_string(description)?)
}

/// The model a package was compiled from, rebuilt from its description as
/// `ipuc exec` does (a checkpoint read from its recorded path, or from
/// `checkpoint` when it has moved, and its digest checked; random weights
/// drawn again from the recorded seed).
pub fn package_model(package: &Package, checkpoint: Option<&Path>) -> Result<BoundModel> {
    let flags = WorkloadArgs {
        checkpoint: checkpoint.map(Path::to_path_buf),
        ..WorkloadArgs::default()
    };
    let description = description_of(package)?;
    let spec = resolve(description.model.as_ref(), &flags).context("the package's model")?;
    let (model, weights, _) = load_model_with_origin(&spec, spec.batch.unwrap_or(1))?;
    Ok(BoundModel { model, weights })
}

/// The largest finite FP16 value: the device computes in FP16.
const FP16_MAX: f32 = 65504.0;

/// Pixel values for `model`: `[batch, channels, size, size]` as built,
/// every value finite and within FP16's range (as `--input` requires).
pub fn check_pixels(model: &SiglipModel, pixels: &PixelValues) -> Result<()> {
    let c = &model.config;
    let want = [
        model.options.vit_batch,
        c.num_channels,
        c.image_size,
        c.image_size,
    ];
    if pixels.shape != want {
        bail!(
            "pixel_values has shape {:?}; the model takes {want:?} (batch {}, {} channels, {}×{} pixels)",
            pixels.shape,
            want[0],
            want[1],
            want[2],
            want[3]
        );
    }
    if let Some((index, v)) = pixels
        .data
        .iter()
        .enumerate()
        .find(|(_, v)| !v.is_finite() || v.abs() > FP16_MAX)
    {
        bail!(
            "element {index} of pixel_values{:?} is {v}, outside the FP16 range ±{FP16_MAX} the device computes in",
            pixels.shape
        );
    }
    Ok(())
}

/// The package loaded on a simulated device (tile images, then weights)
/// with the CLI's default sync latency and cycle budget, ready for any
/// number of resident inferences.
pub fn load_device(package: &Package, weights: &Weights) -> Result<LoadedSim> {
    let mut sim = SimDevice::for_package(package)?;
    sim.cycle_limit = cycle_budget(package, sim.sync_cycles);
    sim.load(package, weights)
        .context("loading the package on the simulated device")
}

/// One inference of `pixels` on a loaded device.
pub fn infer(device: &mut LoadedSim, pixels: &PixelValues) -> Result<DeviceOutput> {
    let mut inputs = BTreeMap::new();
    inputs.insert(
        PIXEL_VALUES.to_string(),
        HostTensor {
            shape: pixels.shape.to_vec(),
            data: pixels.data.clone(),
        },
    );
    device.infer(&inputs).context("simulated inference")
}

/// A reference forward pass: FP32 (`fp32`), else device numerics following
/// the package's K splits (the PASS criterion of `--reference-run`).
pub fn reference(
    bound: &BoundModel,
    pixels: &PixelValues,
    fp32: bool,
    package: Option<&Package>,
) -> Result<SiglipOutputs> {
    let (numerics, k_splits) = match package {
        _ if fp32 => (Numerics::Fp32, Vec::new()),
        Some(p) => (Numerics::Device, description_of(p)?.k_splits),
        None => (Numerics::Device, Vec::new()),
    };
    let what = if fp32 {
        "FP32 reference"
    } else {
        "device-numerics reference"
    };
    run_siglip(
        &bound.model,
        &bound.weights,
        pixels,
        (numerics, &k_splits),
        None,
    )
    .context(what)
}

/// The FP32 reference of the model `model` names, without compiling
/// (`ipuc reference`).
pub fn reference_model(model: &ModelFlags) -> Result<BoundModel> {
    let spec = model.check()?;
    let (model, weights, _) = load_model_with_origin(&spec, model.batch)?;
    Ok(BoundModel { model, weights })
}

/// One output of one image against a reference.
#[derive(Clone, Debug)]
pub struct OutputCheck {
    pub output: String,
    pub max_abs_error: f32,
    pub cosine: f64,
    /// Elements outside `atol + rtol·|ref|` (NaN counts as outside).
    pub outside: usize,
}

/// Every output of each image of a run against a reference, image by
/// image (a batch's images are compared apart).
pub fn compare_images(
    out: &DeviceOutput,
    reference: &SiglipOutputs,
    batch: usize,
    atol: f32,
    rtol: f32,
) -> Result<Vec<Vec<OutputCheck>>> {
    let mut pairs = vec![(LAST_HIDDEN_STATE, &reference.last_hidden_state)];
    if let Some(p) = &reference.pooler_output {
        pairs.push((POOLER_OUTPUT, p));
    }
    let mut images = vec![Vec::new(); batch];
    for (name, r) in pairs {
        let Some(d) = out.outputs.get(name) else {
            bail!("the device produced no `{name}` output");
        };
        if d.data.len() != r.data.len() || batch == 0 || d.data.len() % batch != 0 {
            bail!(
                "`{name}`: device has {} elements, reference {}, for {batch} images",
                d.data.len(),
                r.data.len()
            );
        }
        let per = d.data.len() / batch;
        for (i, image) in images.iter_mut().enumerate() {
            let range = i * per..(i + 1) * per;
            let (max_abs, cosine, outside) =
                error_stats(&d.data[range.clone()], &r.data[range], atol, rtol);
            image.push(OutputCheck {
                output: name.to_string(),
                max_abs_error: max_abs,
                cosine,
                outside,
            });
        }
    }
    Ok(images)
}

/// The image processor `--image` uses for checkpoint `dir`: its
/// `preprocessor_config.json` (the family's default when it has none),
/// its output set to the model's size (`image_size`, else the config's)
/// as `--image` does. Returns the processor and the model's `(size,
/// patch)` its outputs are cut to; a directory with a
/// `preprocessor_config.json` and no `config.json` gets the processor as
/// the file says and no cut (as transformers' `from_pretrained`).
pub fn image_processor(
    dir: &Path,
    image_size: Option<usize>,
) -> Result<(ImageProcessor, Option<(usize, usize)>)> {
    let file = dir.join(PREPROCESSOR_FILE);
    if !dir.join("config.json").exists() && file.exists() {
        let p = ImageProcessor::from_file(&file)?;
        return Ok((
            image_size.map_or_else(|| p.clone(), |s| p.resized_to(s)),
            None,
        ));
    }
    let flags = ModelFlags {
        checkpoint: Some(dir.to_path_buf()),
        image_size,
        batch: 1,
        ..ModelFlags::default()
    };
    let spec = flags.workload_args().spec();
    let config = load_config(&spec)?;
    let processor = crate::cli::workload::image_processor(&spec, &config)?;
    Ok((processor, Some((config.image_size, config.patch_size))))
}

/// A decoded image (RGB, 8 bits) preprocessed by `processor` and cut to
/// the model's `(size, patch)` as `--image` does: `(height, width, CHW
/// data)`. `source` names the image in errors.
pub fn preprocess(
    processor: &ImageProcessor,
    model: Option<(usize, usize)>,
    img: &Rgb8,
    source: &str,
) -> Result<(usize, usize, Vec<f32>)> {
    match model {
        Some((size, patch)) => {
            let p = PixelValues::from_rgb_with(img, processor, size, patch, source)?;
            Ok((size, size, p.data))
        }
        None => Ok(processor.apply(img)),
    }
}

/// Decodes a PNG or JPEG file as `--image` does (as PIL does).
pub fn decode_image(path: &Path) -> Result<Rgb8> {
    crate::input::preprocess::decode_image(path)
}
