//! The description body's bytes: [`encode`] and [`read`] (the layout is in
//! the module above).

use alloc::string::String;
use alloc::vec::Vec;

use ipuc_target::package::wire::{ByteReader, ByteWriter};
use ipuc_target::package::{DType, DescriptionSection, PackageError};

use super::{
    BuildFlags, Description, DescriptionError, Fp8Operands, KSplit, ModelConfig, ModelDescription,
    ModelNumerics, WeightOrigin, DESCRIPTION_VERSION,
};

type Result<T> = core::result::Result<T, DescriptionError>;

/// Longest name (preset, activation) the reader accepts, in bytes.
const MAX_NAME_BYTES: usize = 64;
/// Longest path (checkpoint, runtime source) the reader accepts, in bytes.
const MAX_PATH_BYTES: usize = 4096;
/// The IPU21's FP8 scale range (`docs/facts/siglip-and-fp8.md`): [−32, 31].
const FP8_SCALES: core::ops::RangeInclusive<i8> = -32..=31;

/// The body of `d` at [`DESCRIPTION_VERSION`].
pub(super) fn encode(d: &Description) -> Result<Vec<u8>> {
    let w = &mut ByteWriter::new();
    match &d.build {
        None => w.u8(0),
        Some(b) => {
            w.u8(1);
            encode_build(w, b)?;
        }
    }
    match &d.model {
        None => w.u8(0),
        Some(m) => {
            w.u8(1);
            encode_model(w, m)?;
        }
    }
    w.len32("k splits", d.k_splits.len())?;
    for s in &d.k_splits {
        for v in [s.op, s.k, s.parts] {
            w.u32(v);
        }
    }
    Ok(core::mem::take(w).into_bytes())
}

fn encode_build(w: &mut ByteWriter, b: &BuildFlags) -> Result<()> {
    w.u32(b.beam_width);
    w.u32(b.planning_tiles);
    w.u32(b.optimization_steps);
    option(w, b.exchange_stream_words, ByteWriter::u32);
    w.u8(u8::from(b.outgoing_base));
    option(w, b.planner_data_budget, ByteWriter::u64);
    w.u32(b.min_key_parts);
    w.string("runtime name", &b.runtime_name)?;
    w.raw(&b.runtime_sha256);
    Ok(())
}

fn encode_model(w: &mut ByteWriter, m: &ModelDescription) -> Result<()> {
    w.string("preset", &m.preset)?;
    let c = &m.config;
    for v in [
        c.hidden_size,
        c.intermediate_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.num_channels,
        c.image_size,
        c.patch_size,
    ] {
        w.u32(v);
    }
    w.string("hidden_act", &c.hidden_act)?;
    w.u64(c.layer_norm_eps.to_bits());
    w.u8(u8::from(c.vision_use_head));
    w.u32(m.layers);
    w.u32(m.batch);
    let n = &m.numerics;
    option(w, n.fp8_scale, |w, s| w.u8(s as u8));
    w.u8(n.fp8_operands.bits());
    option(w, n.fp8_activation_scale, |w, s| w.u8(s as u8));
    w.u8(u8::from(n.fuse_qkv));
    w.u8(n.activations.code());
    w.u8(n.attention.code());
    match &m.weights {
        WeightOrigin::Random { seed } => {
            w.u8(0);
            w.u64(*seed);
        }
        WeightOrigin::Checkpoint { sha256, path } => {
            w.u8(1);
            w.raw(sha256);
            w.string("checkpoint path", path)?;
        }
    }
    Ok(())
}

fn option<T>(w: &mut ByteWriter, v: Option<T>, put: impl FnOnce(&mut ByteWriter, T)) {
    match v {
        None => w.u8(0),
        Some(v) => {
            w.u8(1);
            put(w, v);
        }
    }
}

/// Reads and checks a description section's body, every byte of it, on
/// a target of `tile_count` tiles.
pub(super) fn read(section: &DescriptionSection, tile_count: u32) -> Result<Description> {
    if *section == DescriptionSection::default() {
        // Nothing recorded (a package assembled without the compiler).
        return Ok(Description::default());
    }
    let version = section.version;
    if !(1..=DESCRIPTION_VERSION).contains(&version) {
        return Err(PackageError::UnknownEnum {
            offset: 0,
            field: "description version",
            value: u32::from(version),
        }
        .into());
    }
    let r = &mut ByteReader::new(&section.body);
    let build = if flag(r, "has build flags")? {
        Some(read_build(r, tile_count)?)
    } else {
        None
    };
    let model = if flag(r, "has model")? {
        Some(read_model(r)?)
    } else {
        None
    };
    let k_splits = if version >= 2 {
        read_k_splits(r)?
    } else {
        Vec::new()
    };
    if r.remaining() != 0 {
        return Err(PackageError::TrailingBytes {
            offset: r.offset(),
            count: r.remaining(),
        }
        .into());
    }
    Ok(Description {
        build,
        model,
        k_splits,
    })
}

/// The K splits, ordered by op without repeats, each of 2..=k parts.
fn read_k_splits(r: &mut ByteReader<'_>) -> Result<Vec<KSplit>> {
    let n = r.count("k splits", 12)?;
    let mut splits: Vec<KSplit> = Vec::with_capacity(n);
    for _ in 0..n {
        let offset = r.offset();
        let op = r.u32("k split op")?;
        if splits.last().is_some_and(|last| last.op >= op) {
            return Err(invalid(offset, "k split op", "not after the previous op"));
        }
        let k = positive(r, "k split k")?;
        let offset = r.offset();
        let parts = r.u32("k split parts")?;
        if !(2..=k).contains(&parts) {
            return Err(invalid(offset, "k split parts", "not in 2..=k"));
        }
        splits.push(KSplit { op, k, parts });
    }
    Ok(splits)
}

fn read_build(r: &mut ByteReader<'_>, tile_count: u32) -> Result<BuildFlags> {
    let beam_width = positive(r, "beam width")?;
    let offset = r.offset();
    let planning_tiles = positive(r, "planning tiles")?;
    if planning_tiles > tile_count {
        return Err(invalid(
            offset,
            "planning tiles",
            "more than the target's tiles",
        ));
    }
    let optimization_steps = r.u32("optimization steps")?;
    let exchange_stream_words = if flag(r, "has exchange stream words")? {
        Some(positive(r, "exchange stream words")?)
    } else {
        None
    };
    let outgoing_base = flag(r, "outgoing base")?;
    let planner_data_budget = if flag(r, "has planner data budget")? {
        Some(r.u64("planner data budget")?)
    } else {
        None
    };
    let min_key_parts = positive(r, "min key parts")?;
    let runtime_name = bounded_string(r, "runtime name", MAX_PATH_BYTES)?;
    let runtime_sha256 = r.fixed("runtime sha256")?;
    Ok(BuildFlags {
        beam_width,
        planning_tiles,
        optimization_steps,
        exchange_stream_words,
        outgoing_base,
        planner_data_budget,
        min_key_parts,
        runtime_name,
        runtime_sha256,
    })
}

fn read_model(r: &mut ByteReader<'_>) -> Result<ModelDescription> {
    let preset = bounded_string(r, "preset", MAX_NAME_BYTES)?;
    let config = read_config(r)?;
    let offset = r.offset();
    let layers = positive(r, "layers built")?;
    if layers > config.num_hidden_layers {
        return Err(invalid(
            offset,
            "layers built",
            "more than the config's num_hidden_layers",
        ));
    }
    let batch = positive(r, "batch")?;
    let numerics = read_numerics(r)?;
    let offset = r.offset();
    let weights = match r.u8("weight origin")? {
        0 => WeightOrigin::Random {
            seed: r.u64("weight seed")?,
        },
        1 => WeightOrigin::Checkpoint {
            sha256: r.fixed("checkpoint sha256")?,
            path: bounded_string(r, "checkpoint path", MAX_PATH_BYTES)?,
        },
        value => {
            return Err(PackageError::UnknownEnum {
                offset,
                field: "weight origin",
                value: u32::from(value),
            }
            .into())
        }
    };
    // `--workload` and `--checkpoint` exclude each other: a package built
    // from both could not be run again from its description.
    if !preset.is_empty() && matches!(weights, WeightOrigin::Checkpoint { .. }) {
        return Err(invalid(
            offset,
            "weight origin",
            "a checkpoint beside a preset, where a model comes from exactly one",
        ));
    }
    Ok(ModelDescription {
        preset,
        config,
        layers,
        batch,
        numerics,
        weights,
    })
}

fn read_config(r: &mut ByteReader<'_>) -> Result<ModelConfig> {
    let hidden_size = positive(r, "hidden_size")?;
    let intermediate_size = positive(r, "intermediate_size")?;
    let num_hidden_layers = positive(r, "num_hidden_layers")?;
    let offset = r.offset();
    let num_attention_heads = positive(r, "num_attention_heads")?;
    if hidden_size % num_attention_heads != 0 {
        return Err(invalid(
            offset,
            "num_attention_heads",
            "does not divide hidden_size",
        ));
    }
    let num_channels = positive(r, "num_channels")?;
    let image_size = positive(r, "image_size")?;
    let offset = r.offset();
    let patch_size = positive(r, "patch_size")?;
    if patch_size > image_size {
        return Err(invalid(offset, "patch_size", "larger than image_size"));
    }
    let hidden_act = bounded_string(r, "hidden_act", MAX_NAME_BYTES)?;
    let offset = r.offset();
    let layer_norm_eps = f64::from_bits(r.u64("layer_norm_eps")?);
    if !(layer_norm_eps.is_finite() && layer_norm_eps > 0.0) {
        return Err(invalid(
            offset,
            "layer_norm_eps",
            "not a positive finite number",
        ));
    }
    let vision_use_head = flag(r, "vision_use_head")?;
    Ok(ModelConfig {
        hidden_size,
        intermediate_size,
        num_hidden_layers,
        num_attention_heads,
        num_channels,
        image_size,
        patch_size,
        hidden_act,
        layer_norm_eps,
        vision_use_head,
    })
}

fn read_numerics(r: &mut ByteReader<'_>) -> Result<ModelNumerics> {
    let fp8_scale = optional_fp8_scale(r, "has fp8 scale", "fp8 scale")?;
    let offset = r.offset();
    let bits = r.u8("fp8 operands")?;
    if bits & !Fp8Operands::KNOWN != 0 {
        return Err(PackageError::UnknownEnum {
            offset,
            field: "fp8 operands",
            value: u32::from(bits),
        }
        .into());
    }
    let fp8_operands = Fp8Operands(bits);
    if fp8_operands.is_empty() != fp8_scale.is_none() {
        return Err(invalid(
            offset,
            "fp8 operands",
            "FP8 operands without an FP8 scale, or a scale without FP8 operands",
        ));
    }
    if fp8_operands.contains(Fp8Operands::GEMM_ACTIVATIONS)
        && !fp8_operands.contains(Fp8Operands::GEMM_WEIGHTS)
    {
        return Err(invalid(
            offset,
            "fp8 operands",
            "FP8 GEMM activations without FP8 GEMM weights",
        ));
    }
    let scale_offset = r.offset();
    let fp8_activation_scale =
        optional_fp8_scale(r, "has fp8 activation scale", "fp8 activation scale")?;
    if fp8_activation_scale.is_some() != fp8_operands.contains(Fp8Operands::GEMM_ACTIVATIONS) {
        return Err(invalid(
            scale_offset,
            "fp8 activation scale",
            "present exactly when the GEMM activations are FP8",
        ));
    }
    let fuse_qkv = flag(r, "fuse qkv")?;
    let activations = float_dtype(r, "activation dtype")?;
    let attention = float_dtype(r, "attention dtype")?;
    Ok(ModelNumerics {
        fp8_scale,
        fp8_operands,
        fp8_activation_scale,
        fuse_qkv,
        activations,
        attention,
    })
}

/// An optional FP8 scale, in the IPU21's range.
fn optional_fp8_scale(
    r: &mut ByteReader<'_>,
    has: &'static str,
    field: &'static str,
) -> Result<Option<i8>> {
    if !flag(r, has)? {
        return Ok(None);
    }
    let offset = r.offset();
    let scale = r.u8(field)? as i8;
    if !FP8_SCALES.contains(&scale) {
        return Err(invalid(
            offset,
            field,
            "outside the FP8 scale range -32..=31",
        ));
    }
    Ok(Some(scale))
}

/// F16 or F32 (the dtypes activations and attention may run in).
fn float_dtype(r: &mut ByteReader<'_>, field: &'static str) -> Result<DType> {
    let offset = r.offset();
    let code = r.u8(field)?;
    match DType::from_code(code) {
        Some(d @ (DType::F16 | DType::F32)) => Ok(d),
        _ => Err(PackageError::UnknownEnum {
            offset,
            field,
            value: u32::from(code),
        }
        .into()),
    }
}

/// A u8 that must be 0 or 1.
fn flag(r: &mut ByteReader<'_>, field: &'static str) -> Result<bool> {
    let offset = r.offset();
    match r.u8(field)? {
        0 => Ok(false),
        1 => Ok(true),
        value => Err(PackageError::UnknownEnum {
            offset,
            field,
            value: u32::from(value),
        }
        .into()),
    }
}

/// A u32 that must be at least 1.
fn positive(r: &mut ByteReader<'_>, field: &'static str) -> Result<u32> {
    let offset = r.offset();
    let v = r.u32(field)?;
    if v == 0 {
        return Err(PackageError::ZeroCount { offset, field }.into());
    }
    Ok(v)
}

fn bounded_string(r: &mut ByteReader<'_>, field: &'static str, max: usize) -> Result<String> {
    let offset = r.offset();
    let s = r.string(field)?;
    if s.len() > max {
        return Err(PackageError::LengthPastEnd {
            offset,
            field,
            length: s.len() as u64,
            available: max as u64,
        }
        .into());
    }
    Ok(s)
}

fn invalid(offset: usize, field: &'static str, reason: &'static str) -> DescriptionError {
    DescriptionError::Invalid {
        offset,
        field,
        reason,
    }
}
