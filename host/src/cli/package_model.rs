//! The model a package describes (its description section), both ways:
//! `compile` records the [`ModelSpec`] it built, and `exec` takes the
//! package's spec ([`ModelSpec::from_description`]), checking any flag
//! given against it (a contradiction is an error naming both).

use anyhow::{Context, Result};
use ipuc_core::description::{
    Description, Fp8Operands, ModelConfig, ModelDescription, ModelNumerics, WeightOrigin,
};
use ipuc_target::package::Package;

use super::batch::BatchFlag;
use super::workload::{check_flags, load_config, preset_name, WorkloadArgs};
use crate::model::{
    canonical_preset, origin_text, package_dtype, ModelSource, ModelSpec, RecordedCheckpoint,
    SiglipModel, SpecError, VisionConfig,
};

/// What `package` says it was compiled from, read and checked against its
/// program (a bad or contradicting description is bad input, exit 4).
pub fn description_of(package: &Package) -> Result<Description> {
    ipuc_core::description::read(package).context("the package's description section")
}

/// What `compile` records about the model it built from `spec`.
pub fn describe_model(
    spec: &ModelSpec,
    model: &SiglipModel,
    weights: WeightOrigin,
) -> Result<ModelDescription> {
    let c = &model.config;
    let n = |what: &str, v: usize| {
        u32::try_from(v).with_context(|| format!("{what} {v} does not fit the package's u32"))
    };
    let o = &model.options;
    let dtype = |d| {
        package_dtype(d).with_context(|| {
            format!("activations in {d:?} cannot be recorded in a package description")
        })
    };
    Ok(ModelDescription {
        preset: spec
            .preset()
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
            activations: dtype(o.activations)?,
            attention: dtype(o.attention)?,
        },
        weights,
    })
}

fn contradiction(flag: &'static str, given: impl ToString, recorded: impl ToString) -> SpecError {
    SpecError::Contradiction {
        flag,
        given: given.to_string(),
        recorded: recorded.to_string(),
    }
}

/// `--workload` and `--checkpoint`, if given, agree with where the
/// package's model came from (`recorded`, from `d`).
fn check_source(
    flags: &WorkloadArgs,
    recorded: &ModelSpec,
    d: &ModelDescription,
) -> Result<(), SpecError> {
    let source = origin_text(&d.weights);
    // `--workload` (or `--vit-small`) names the preset the package was
    // built from (empty for a checkpoint's config).
    if let Some(given) = preset_name(flags).map(canonical_preset) {
        if given != d.preset {
            let was = if d.preset.is_empty() {
                format!("the config of {source}")
            } else {
                format!("--workload {}", d.preset)
            };
            return Err(contradiction("--workload", given, was));
        }
    }
    if let (Some(dir), Some(ModelSource::Preset(_))) = (&flags.checkpoint, &recorded.source) {
        return Err(contradiction("--checkpoint", dir.display(), &source));
    }
    Ok(())
}

/// Every other model flag given agrees with the package's model
/// (`recorded`, from `d`): a contradiction names the flag and what the
/// package has.
fn check_given(
    flags: &WorkloadArgs,
    recorded: &ModelSpec,
    d: &ModelDescription,
) -> Result<(), SpecError> {
    let source = origin_text(&d.weights);
    let same = |flag: &'static str, given: Option<usize>, recorded: usize| match given {
        Some(v) if v != recorded => Err(contradiction(flag, v, format!("{flag} {recorded}"))),
        _ => Ok(()),
    };
    same("--vit-layers", flags.vit_layers, d.layers as usize)?;
    same(
        "--vit-batch",
        flags.vit_batch.and_then(BatchFlag::images),
        d.batch as usize,
    )?;
    same(
        "--image-size",
        flags.image_size,
        d.config.image_size as usize,
    )?;
    if let Some(given) = flags.fp8_scale.filter(|&s| Some(s) != recorded.fp8_scale) {
        let was = match recorded.fp8_scale {
            Some(s) => format!("--fp8-scale {s}"),
            None => "no --fp8-scale (FP16 weights)".into(),
        };
        return Err(contradiction("--fp8-scale", given, was));
    }
    let activation_scale = recorded.fp8_activation_scale;
    if let Some(given) = flags
        .fp8_activation_scale
        .filter(|&s| Some(s) != activation_scale)
    {
        let was = match activation_scale {
            Some(s) => format!("--fp8-activation-scale {s}"),
            None => "FP16 GEMM activations".into(),
        };
        return Err(contradiction("--fp8-activation-scale", given, was));
    }
    if flags.fp8_weights_only && recorded.fp8_scale.is_none() {
        return Err(contradiction("--fp8-weights-only", "(set)", "FP16 weights"));
    }
    if flags.fp8_weights_only && activation_scale.is_some() {
        return Err(contradiction(
            "--fp8-weights-only",
            "(set)",
            "FP8 × FP8 GEMMs",
        ));
    }
    if flags.fuse_qkv && !recorded.fuse_qkv {
        return Err(contradiction(
            "--fuse-qkv",
            "(set)",
            "separate Q/K/V projections",
        ));
    }
    if let (WeightOrigin::Random { seed }, Some(given)) = (&d.weights, flags.seed) {
        if given != *seed {
            return Err(contradiction("--seed", given, &source));
        }
    }
    Ok(())
}

/// The model `exec` runs: the package's, with every flag given checked
/// against it; a checkpoint at `--checkpoint` when given (it has moved),
/// else where the package recorded it. Packages without a description
/// need the flags to name the model (as before packages described
/// themselves).
pub fn resolve(description: Option<&ModelDescription>, flags: &WorkloadArgs) -> Result<ModelSpec> {
    let Some(d) = description else {
        return from_flags_alone(flags);
    };
    let mut spec = ModelSpec::from_description(d)?;
    check_source(flags, &spec, d)?;
    if let Some(ModelSource::Checkpoint { dir, recorded }) = &mut spec.source {
        match (&flags.checkpoint, recorded) {
            (Some(given), _) => *dir = given.clone(),
            (None, Some(RecordedCheckpoint { sha256, path })) if !dir.is_dir() => {
                return Err(SpecError::CheckpointMissing {
                    path: path.clone(),
                    sha256: *sha256,
                }
                .into());
            }
            (None, _) => {}
        }
    }
    check_given(flags, &spec, d)?;
    if let Some(ModelSource::Checkpoint { .. }) = &spec.source {
        // Synthetic inputs: the seed given, else 0.
        spec.seed = flags.seed.unwrap_or(0);
    }
    // The size is recorded as built: an override only when it is not the
    // config's own (so names and the graph are the compile's).
    let recorded_size = spec.image_size.take();
    if recorded_size != Some(load_config(&spec)?.image_size) {
        spec.image_size = recorded_size;
    }
    check_config(&load_config(&spec)?, &d.config, &origin_text(&d.weights))?;
    Ok(spec)
}

/// A package whose model is not recorded: the flags must name it.
fn from_flags_alone(flags: &WorkloadArgs) -> Result<ModelSpec> {
    if flags.workload.is_none() && !flags.vit_small && flags.checkpoint.is_none() {
        crate::usage_bail!("the package records no model (it was built without one, e.g. by ipuc-core alone): name it with --workload or --checkpoint");
    }
    check_flags(flags)?;
    Ok(flags.spec())
}

/// The config rebuilt from the preset or checkpoint must be the one the
/// package was compiled from (a changed `config.json` is caught here).
fn check_config(now: &VisionConfig, recorded: &ModelConfig, source: &str) -> Result<(), SpecError> {
    let fields: [(&'static str, String, String); 10] = [
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
            return Err(SpecError::ConfigChanged {
                source_text: source.to_string(),
                name,
                now,
                then,
            });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::workload::build_model;

    fn flags() -> WorkloadArgs {
        WorkloadArgs {
            workload: Some("siglip-small".into()),
            vit_layers: Some(2),
            vit_batch: Some(BatchFlag::Images(2)),
            fuse_qkv: true,
            fp8_scale: Some(-4),
            seed: Some(7),
            ..WorkloadArgs::default()
        }
    }

    /// compile's spec, recorded and read back, is exec's spec.
    #[test]
    fn a_described_spec_resolves_to_itself() {
        let spec = flags().spec();
        let model = build_model(&spec, 2).unwrap();
        let d = describe_model(&spec, &model, WeightOrigin::Random { seed: 7 }).unwrap();
        let recorded = ModelSpec::from_description(&d).unwrap();
        assert_eq!(recorded.image_size, Some(28));
        assert_eq!(recorded.fp8_activation_scale, Some(0));
        assert_eq!(resolve(Some(&d), &WorkloadArgs::default()).unwrap(), spec);
        assert_eq!(resolve(Some(&d), &flags()).unwrap(), spec);
    }

    /// A flag the package contradicts is a typed usage error naming both.
    #[test]
    fn contradictions_are_usage_errors() {
        let spec = flags().spec();
        let model = build_model(&spec, 2).unwrap();
        let d = describe_model(&spec, &model, WeightOrigin::Random { seed: 7 }).unwrap();
        let given = WorkloadArgs {
            vit_layers: Some(3),
            ..WorkloadArgs::default()
        };
        let err = resolve(Some(&d), &given).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--vit-layers 3 contradicts the package, which was compiled with --vit-layers 2"
        );
        assert_eq!(crate::exit::code_of(&err), crate::exit::USAGE);
        let mut odd = d.clone();
        odd.preset.clear();
        let err = resolve(Some(&odd), &WorkloadArgs::default()).unwrap_err();
        assert!(matches!(
            err.downcast_ref::<SpecError>(),
            Some(SpecError::Source { .. })
        ));
        assert_eq!(crate::exit::code_of(&err), crate::exit::BAD_INPUT);
    }
}
