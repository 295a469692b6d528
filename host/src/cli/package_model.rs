//! The model a package describes (its description section), both ways:
//! `compile` records what it built from the workload flags, and `exec`
//! rebuilds the workload from the package, checking any flag given against
//! what the package records (a contradiction is an error naming both).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ipuc_target::package::{
    DType, Fp8Operands, ModelConfig, ModelDescription, ModelNumerics, WeightOrigin,
};

use super::workload::{load_config, preset_name, WorkloadArgs};
use crate::model::{ModelOptions, SiglipModel, VisionConfig};

/// What `compile` records about the model it built.
pub fn describe_model(
    args: &WorkloadArgs,
    model: &SiglipModel,
    weights: WeightOrigin,
) -> Result<ModelDescription> {
    let c = &model.config;
    let n = |what: &str, v: usize| {
        u32::try_from(v).with_context(|| format!("{what} {v} does not fit the package's u32"))
    };
    let o = &model.options;
    Ok(ModelDescription {
        preset: preset_name(args)
            .map(canonical_preset)
            .unwrap_or_default()
            .into(),
        config: ModelConfig {
            hidden_size: n("hidden_size", c.hidden_size)?,
            intermediate_size: n("intermediate_size", c.intermediate_size)?,
            num_hidden_layers: n("num_hidden_layers", c.num_hidden_layers)?,
            num_attention_heads: n("num_attention_heads", c.num_attention_heads)?,
            num_channels: n("num_channels", c.num_channels)?,
            image_size: n("image_size", c.image_size)?,
            patch_size: n("patch_size", c.patch_size)?,
            hidden_act: c.hidden_act.clone(),
            layer_norm_eps: c.layer_norm_eps,
            vision_use_head: c.vision_use_head,
        },
        layers: n("layers", model.layers)?,
        batch: n("batch", o.vit_batch)?,
        numerics: ModelNumerics {
            fp8_scale: o.fp8_scale,
            // `--fp8-scale` stores every GEMM weight as F143 (model::build);
            // with an activation scale the GEMMs run FP8 × FP8.
            fp8_operands: match (o.fp8_scale, o.fp8_activation_scale) {
                (None, _) => Fp8Operands::NONE,
                (Some(_), None) => Fp8Operands::GEMM_WEIGHTS,
                (Some(_), Some(_)) => Fp8Operands::GEMM_WEIGHTS.with(Fp8Operands::GEMM_ACTIVATIONS),
            },
            fp8_activation_scale: o.fp8_scale.and(o.fp8_activation_scale),
            fuse_qkv: o.fuse_qkv,
            activations: package_dtype(o.activations)?,
            attention: package_dtype(o.attention)?,
        },
        weights,
    })
}

/// The seeds' alias `siglip-vit-benchmark` is recorded as `siglip-so400m`.
fn canonical_preset(name: &str) -> &str {
    match name {
        "siglip-vit-benchmark" => "siglip-so400m",
        other => other,
    }
}

fn package_dtype(d: ipuc_core::ir::DType) -> Result<DType> {
    match d {
        ipuc_core::ir::DType::F16 => Ok(DType::F16),
        ipuc_core::ir::DType::F32 => Ok(DType::F32),
        other => bail!("activations in {other:?} cannot be recorded in a package description"),
    }
}

/// `--workload` (or `--vit-small`), if given, names the preset the
/// package was built from (`preset`; empty for a checkpoint's config, of
/// `source`).
fn check_preset(flags: &WorkloadArgs, preset: &str, source: &str) -> Result<()> {
    let given_preset = match (&flags.workload, flags.vit_small) {
        (Some(w), _) => Some(canonical_preset(w)),
        (None, true) => Some("siglip-small"),
        (None, false) => None,
    };
    if let Some(given) = given_preset {
        let recorded = if preset.is_empty() {
            format!("the config of {source}")
        } else {
            format!("--workload {preset}")
        };
        if given != preset {
            crate::usage_bail!("{}", contradiction("--workload", given, &recorded));
        }
    }
    Ok(())
}

/// The numerics flags given agree with the package's: FP8 scales, FP8
/// weights only, fused QKV.
fn check_numerics(flags: &WorkloadArgs, numerics: &ModelNumerics) -> Result<()> {
    if flags.fp8_scale.is_some() && flags.fp8_scale != numerics.fp8_scale {
        let recorded = match numerics.fp8_scale {
            Some(s) => format!("--fp8-scale {s}"),
            None => "no --fp8-scale (FP16 weights)".into(),
        };
        crate::usage_bail!(
            "{}",
            contradiction(
                "--fp8-scale",
                &format!("{}", flags.fp8_scale.unwrap_or_default()),
                &recorded
            )
        );
    }
    let activation_scale = numerics.fp8_activation_scale;
    if flags.fp8_activation_scale.is_some() && flags.fp8_activation_scale != activation_scale {
        let recorded = match activation_scale {
            Some(s) => format!("--fp8-activation-scale {s}"),
            None => "FP16 GEMM activations".into(),
        };
        crate::usage_bail!(
            "{}",
            contradiction(
                "--fp8-activation-scale",
                &flags.fp8_activation_scale.unwrap_or_default().to_string(),
                &recorded
            )
        );
    }
    if flags.fp8_weights_only && numerics.fp8_scale.is_none() {
        crate::usage_bail!(
            "{}",
            contradiction("--fp8-weights-only", "(set)", "FP16 weights")
        );
    }
    if flags.fp8_weights_only && activation_scale.is_some() {
        crate::usage_bail!(
            "{}",
            contradiction("--fp8-weights-only", "(set)", "FP8 × FP8 GEMMs")
        );
    }
    if flags.fuse_qkv && !numerics.fuse_qkv {
        crate::usage_bail!(
            "{}",
            contradiction("--fuse-qkv", "(set)", "separate Q/K/V projections")
        );
    }
    Ok(())
}

/// The workload `exec` runs: the package's model, with every flag given
/// checked against it. Packages without a description need the flags to
/// name the model (as before packages described themselves).
pub fn resolve(
    description: Option<&ModelDescription>,
    flags: &WorkloadArgs,
) -> Result<WorkloadArgs> {
    let Some(d) = description else {
        return from_flags_alone(flags);
    };
    let source = match &d.weights {
        WeightOrigin::Random { seed } => format!("random weights from seed {seed}"),
        WeightOrigin::Checkpoint { path, .. } => format!("checkpoint {path}"),
    };
    check_preset(flags, &d.preset, &source)?;
    let checkpoint = match (&d.weights, &flags.checkpoint) {
        (WeightOrigin::Random { .. }, Some(dir)) => crate::usage_bail!(
            "{}",
            contradiction("--checkpoint", &dir.display().to_string(), &source)
        ),
        (WeightOrigin::Random { .. }, None) => None,
        (WeightOrigin::Checkpoint { .. }, Some(dir)) => Some(dir.clone()),
        (WeightOrigin::Checkpoint { path, sha256 }, None) => {
            if !Path::new(path).is_dir() {
                bail!(
                    "the package was compiled from checkpoint {path} (model.safetensors SHA-256 {}), which is not there now: give its new place with --checkpoint DIR",
                    hex::encode(sha256)
                );
            }
            Some(PathBuf::from(path))
        }
    };
    check_same("--vit-layers", flags.vit_layers, d.layers as usize, |v| {
        format!("--vit-layers {v}")
    })?;
    check_same("--vit-batch", flags.vit_batch, d.batch as usize, |v| {
        format!("--vit-batch {v}")
    })?;
    check_same(
        "--image-size",
        flags.image_size,
        d.config.image_size as usize,
        |v| format!("--image-size {v}"),
    )?;
    check_numerics(flags, &d.numerics)?;
    let activation_scale = d.numerics.fp8_activation_scale;
    let seed = match (&d.weights, flags.seed) {
        (WeightOrigin::Random { seed }, Some(given)) if given != *seed => {
            crate::usage_bail!("{}", contradiction("--seed", &given.to_string(), &source))
        }
        (WeightOrigin::Random { seed }, _) => *seed,
        (WeightOrigin::Checkpoint { .. }, given) => given.unwrap_or(0),
    };
    let defaults = ModelOptions::default();
    if d.numerics.activations != package_dtype(defaults.activations)?
        || d.numerics.attention != package_dtype(defaults.attention)?
    {
        bail!(
            "the package computes activations in {} and attention in {}; `ipuc exec` rebuilds only the CLI's numerics (f16 and f16)",
            d.numerics.activations.name(),
            d.numerics.attention.name()
        );
    }
    let mut args = WorkloadArgs {
        workload: (!d.preset.is_empty()).then(|| d.preset.clone()),
        vit_small: false,
        checkpoint,
        vit_layers: Some(d.layers as usize),
        vit_batch: Some(d.batch as usize),
        fuse_qkv: d.numerics.fuse_qkv,
        fp8_scale: d.numerics.fp8_scale,
        fp8_activation_scale: activation_scale,
        fp8_weights_only: d.numerics.fp8_scale.is_some() && activation_scale.is_none(),
        image_size: None,
        seed: Some(seed),
    };
    if load_config(&args)?.image_size != d.config.image_size as usize {
        args.image_size = Some(d.config.image_size as usize);
    }
    check_config(&load_config(&args)?, &d.config, &source)?;
    Ok(args)
}

/// A package whose model is not recorded: the flags must name it.
fn from_flags_alone(flags: &WorkloadArgs) -> Result<WorkloadArgs> {
    if flags.workload.is_none() && !flags.vit_small && flags.checkpoint.is_none() {
        crate::usage_bail!("the package records no model (it was built without one, e.g. by ipuc-core alone): name it with --workload or --checkpoint");
    }
    Ok(flags.clone())
}

fn check_same(
    flag: &str,
    given: Option<usize>,
    recorded: usize,
    show: impl Fn(usize) -> String,
) -> Result<()> {
    match given {
        Some(v) if v != recorded => {
            crate::usage_bail!("{}", contradiction(flag, &v.to_string(), &show(recorded)))
        }
        _ => Ok(()),
    }
}

fn contradiction(flag: &str, given: &str, recorded: &str) -> String {
    format!("{flag} {given} contradicts the package, which was compiled with {recorded}")
}

/// The config rebuilt from the preset or checkpoint must be the one the
/// package was compiled from (a changed `config.json` is caught here).
fn check_config(now: &VisionConfig, recorded: &ModelConfig, source: &str) -> Result<()> {
    let fields: [(&str, String, String); 10] = [
        (
            "hidden_size",
            now.hidden_size.to_string(),
            recorded.hidden_size.to_string(),
        ),
        (
            "intermediate_size",
            now.intermediate_size.to_string(),
            recorded.intermediate_size.to_string(),
        ),
        (
            "num_hidden_layers",
            now.num_hidden_layers.to_string(),
            recorded.num_hidden_layers.to_string(),
        ),
        (
            "num_attention_heads",
            now.num_attention_heads.to_string(),
            recorded.num_attention_heads.to_string(),
        ),
        (
            "num_channels",
            now.num_channels.to_string(),
            recorded.num_channels.to_string(),
        ),
        (
            "image_size",
            now.image_size.to_string(),
            recorded.image_size.to_string(),
        ),
        (
            "patch_size",
            now.patch_size.to_string(),
            recorded.patch_size.to_string(),
        ),
        (
            "hidden_act",
            now.hidden_act.clone(),
            recorded.hidden_act.clone(),
        ),
        (
            "layer_norm_eps",
            now.layer_norm_eps.to_string(),
            recorded.layer_norm_eps.to_string(),
        ),
        (
            "vision_use_head",
            now.vision_use_head.to_string(),
            recorded.vision_use_head.to_string(),
        ),
    ];
    for (name, now, then) in fields {
        if now != then {
            bail!("{source}: the model config has {name} = {now} but the package was compiled with {name} = {then}");
        }
    }
    Ok(())
}

/// After loading: the checkpoint's digest must be the package's.
pub fn check_weights(recorded: &WeightOrigin, loaded: &WeightOrigin) -> Result<()> {
    if let (
        WeightOrigin::Checkpoint { sha256, path },
        WeightOrigin::Checkpoint {
            sha256: now,
            path: now_path,
        },
    ) = (recorded, loaded)
    {
        if sha256 != now {
            bail!(
                "checkpoint {now_path}: model.safetensors has SHA-256 {} but the package was compiled from SHA-256 {} ({path})",
                hex::encode(now),
                hex::encode(sha256)
            );
        }
    }
    Ok(())
}

/// One line saying what the package computes, for `exec` and `inspect`.
pub fn summary_line(d: &ModelDescription) -> String {
    let name = if d.preset.is_empty() {
        "checkpoint config".to_string()
    } else {
        d.preset.clone()
    };
    let numerics = match (d.numerics.fp8_scale, d.numerics.fp8_activation_scale) {
        (Some(s), None) => format!("FP8 F143 at scale {s} (GEMM weights)"),
        (Some(s), Some(a)) => format!("FP8 x FP8 GEMMs (weights scale {s}, activations {a})"),
        (None, _) => "FP16 weights".into(),
    };
    let weights = match &d.weights {
        WeightOrigin::Random { seed } => format!("random weights, seed {seed}"),
        WeightOrigin::Checkpoint { sha256, path } => {
            format!("checkpoint {path} (sha256 {}…)", &hex::encode(sha256)[..12])
        }
    };
    format!(
        "{name}, {} of {} layers, image {}, {numerics}{}, {weights}",
        d.layers,
        d.config.num_hidden_layers,
        d.config.image_size,
        if d.numerics.fuse_qkv {
            ", fused QKV"
        } else {
            ""
        }
    )
}
