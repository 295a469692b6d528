//! What the program determines, against what the description claims.

use alloc::format;
use alloc::string::{String, ToString};

use ipuc_target::package::{Binding, BindingKind, DType, StepTables};

use super::{DescriptionError, Fp8Operands, ModelDescription};

/// What the program determines, against what the description says of it:
/// the layers built (the Repeat's iterations and the layer weights bound),
/// FP8 weights (the bound weights' dtypes and scales), and the batch,
/// channels and image size (the `pixel_values` input's shape). A package
/// re-sealed to claim another model would otherwise run and validate
/// against a reference of the model it only claims to be.
pub(super) fn against_program(
    model: &ModelDescription,
    bindings: &[Binding],
    steps: &StepTables,
) -> Result<(), DescriptionError> {
    let contradiction = |field: &'static str, described: String, program| {
        Err(DescriptionError::ContradictsProgram {
            field,
            described,
            program,
        })
    };
    let trips: alloc::collections::BTreeSet<u32> = steps
        .tiles
        .iter()
        .flat_map(|t| t.steps.iter())
        .filter_map(|s| s.repeat.map(|r| r.trip_count))
        .collect();
    if let Some(&other) = trips.iter().find(|&&t| t != model.layers) {
        return contradiction(
            "layers",
            model.layers.to_string(),
            format!("a Repeat of {other} iterations"),
        );
    }
    let weights = || bindings.iter().filter(|b| b.kind == BindingKind::Weight);
    if let Some(deepest) = weights().filter_map(|b| layer_of(&b.name)).max() {
        if u64::from(deepest) + 1 != u64::from(model.layers) {
            return contradiction(
                "layers",
                model.layers.to_string(),
                format!("weights bound for {} layers", u64::from(deepest) + 1),
            );
        }
    }
    let fp8 = |d: DType| matches!(d, DType::F8E4M3 | DType::F8E5M2);
    let claims_fp8 = model
        .numerics
        .fp8_operands
        .contains(Fp8Operands::GEMM_WEIGHTS);
    match (claims_fp8, weights().find(|b| fp8(b.dtype))) {
        (true, None) => {
            return contradiction(
                "FP8 GEMM weights",
                format!("at scale {}", model.numerics.fp8_scale.unwrap_or(0)),
                "no FP8 weight bound".to_string(),
            )
        }
        (false, Some(b)) => {
            return contradiction(
                "no FP8 weights",
                String::new(),
                format!("`{}` bound as {}", b.name, b.dtype.name()),
            )
        }
        _ => {}
    }
    if let Some(scale) = model.numerics.fp8_scale.filter(|_| claims_fp8) {
        if let Some(b) = weights().find(|b| fp8(b.dtype) && b.scale != scale) {
            return contradiction(
                "FP8 weight scale",
                scale.to_string(),
                format!("`{}` at scale {}", b.name, b.scale),
            );
        }
    }
    let pixels = bindings
        .iter()
        .find(|b| b.kind == BindingKind::Input && b.name == "pixel_values");
    if let Some(p) = pixels {
        let c = &model.config;
        let described = [
            u64::from(model.batch),
            u64::from(c.num_channels),
            u64::from(c.image_size),
            u64::from(c.image_size),
        ];
        if p.shape[..] != described[..] {
            return contradiction(
                "batch × channels × image",
                format!("{described:?}"),
                format!("a pixel_values input of shape {:?}", p.shape),
            );
        }
    }
    Ok(())
}

/// The encoder layer a weight binding belongs to: `…encoder.layers.{i}.…`
/// (SigLIP, CLIP) or `…encoder.layer.{i}.…` (ViT, DINOv2).
fn layer_of(name: &str) -> Option<u32> {
    let at = name
        .find("encoder.layers.")
        .map(|i| i + "encoder.layers.".len());
    let at = at.or_else(|| {
        name.find("encoder.layer.")
            .map(|i| i + "encoder.layer.".len())
    })?;
    let rest = name.get(at..)?;
    let digits = rest.split('.').next()?;
    digits.parse().ok()
}
