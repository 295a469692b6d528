//! Section 8, the package's description of what it was compiled from: the
//! model (config, layers built, numerics, where its weights come from) and
//! the compile flags. With it a package is self-describing: `ipuc exec
//! model.ipuc --reference-run` rebuilds the model, its weights and its
//! reference from the package alone.
//!
//! The section has its own layout version ([`DESCRIPTION_VERSION`]) so it
//! can grow without a new container format. Every field is checked as it is
//! read (counts, enum tags, option tags, value ranges), with the byte offset
//! of the offending field; nothing here panics on any input.
//!
//! ```text
//! description  version u16 · has_build u8 · [build] · has_model u8 · [model]
//!              · k_splits (version 2 on)
//! build        beam_width u32 · planning_tiles u32 · optimization_steps u32
//!              · exchange_stream_words opt u32 · outgoing_base bool
//!              · planner_data_budget opt u64 · min_key_parts u32
//!              · runtime_name str · runtime_sha256 (32)
//! model        preset str · config · layers u32 · batch u32 · numerics · weights
//! config       hidden u32 · intermediate u32 · layers u32 · heads u32 · channels u32
//!              · image u32 · patch u32 · hidden_act str · layer_norm_eps f64 bits
//!              · vision_use_head bool
//! numerics     fp8_scale opt i8 · fp8_operands u8 (bit 0: GEMM weights, bit 1: GEMM
//!              activations) · fp8_activation_scale opt i8 · fuse_qkv bool
//!              · activations dtype u8 · attention dtype u8
//! weights      tag u8 (0 random: seed u64 · 1 checkpoint: sha256 (32) · path str)
//! k_splits     count u32 · (op u32 · k u32 · parts u32)*, by op, each parts ≥ 2
//! opt T        tag u8 (0 none · 1 some) · T
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use super::error::{PackageError, Result};
use super::model::DType;
use super::wire::{ByteReader, ByteWriter};

/// Layout version of the description section this crate writes; it reads
/// this one and version 1 (before [`Description::k_splits`]).
pub const DESCRIPTION_VERSION: u16 = 2;

/// Longest name (preset, activation) the reader accepts, in bytes.
const MAX_NAME_BYTES: usize = 64;
/// Longest path (checkpoint, runtime source) the reader accepts, in bytes.
const MAX_PATH_BYTES: usize = 4096;
/// The IPU21's FP8 scale range (`docs/facts/siglip-and-fp8.md`): [−32, 31].
const FP8_SCALES: core::ops::RangeInclusive<i8> = -32..=31;

/// What a package was compiled from. Both parts are optional: a package
/// built from a graph by `ipuc-core` alone has compile flags but no model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Description {
    pub build: Option<BuildFlags>,
    pub model: Option<ModelDescription>,
    /// Every product the program splits over K, by op: part of the
    /// device's numerics (each part rounds its partials apart), so the
    /// device-numerics reference follows it.
    pub k_splits: Vec<KSplit>,
}

/// A product whose K axis the compiled program accumulates in `parts`
/// sequences, each from zero, then merges in part order: a GEMM's K in
/// near-equal runs of whole AMP micro-groups, summed in F32; an
/// attention's keys in near-equal runs of keys, each a partial softmax
/// that the combine kernel merges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KSplit {
    /// The product's op in the compiled graph.
    pub op: u32,
    /// Its K extent — a GEMM's K, an attention's key count (a check that
    /// the op is the one compiled).
    pub k: u32,
    /// Parts of K (at least 2).
    pub parts: u32,
}

/// The compile flags a package was built with. With `serde`, they
/// serialize as `ipuc inspect --json` shows them (the runtime's name as
/// `runtime_source`, its digest in hex).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BuildFlags {
    pub beam_width: u32,
    pub planning_tiles: u32,
    pub optimization_steps: u32,
    pub exchange_stream_words: Option<u32>,
    /// `false` for the table-based program (`--no-outgoing-base`).
    pub outgoing_base: bool,
    /// `--planner-data-budget` (testing only).
    pub planner_data_budget: Option<u64>,
    pub min_key_parts: u32,
    /// The static runtime's source name (its path, or the built-in name).
    #[cfg_attr(feature = "serde", serde(rename = "runtime_source"))]
    pub runtime_name: String,
    /// SHA-256 of the runtime source text.
    #[cfg_attr(feature = "serde", serde(serialize_with = "serialize_hex"))]
    pub runtime_sha256: [u8; 32],
}

/// The model a package computes.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelDescription {
    /// The preset it was built from (`siglip-small`, `siglip-so400m`);
    /// empty when the config came from a checkpoint's `config.json`.
    pub preset: String,
    pub config: ModelConfig,
    /// Encoder layers built (the Repeat trip count), 1..=`num_hidden_layers`.
    pub layers: u32,
    /// Images per inference.
    pub batch: u32,
    pub numerics: ModelNumerics,
    pub weights: WeightOrigin,
}

/// The vision tower's shape (HF `SiglipVisionConfig`, image size as built).
/// With `serde`, its fields serialize under the HF names (`ipuc inspect
/// --json` flattens them into its model view).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ModelConfig {
    pub hidden_size: u32,
    pub intermediate_size: u32,
    pub num_hidden_layers: u32,
    pub num_attention_heads: u32,
    pub num_channels: u32,
    pub image_size: u32,
    pub patch_size: u32,
    pub hidden_act: String,
    pub layer_norm_eps: f64,
    pub vision_use_head: bool,
}

/// How the model computes. With `serde`: the FP8 operands as their
/// names, the dtypes as theirs (`ipuc inspect --json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ModelNumerics {
    /// The FP8 (F143) scale of the FP8 operands, `None` without FP8.
    pub fp8_scale: Option<i8>,
    /// Which operands are FP8 (empty exactly when `fp8_scale` is `None`;
    /// GEMM activations only with GEMM weights).
    pub fp8_operands: Fp8Operands,
    /// The F143 scale of the activations cast for FP8 × FP8 GEMMs (`Some`
    /// exactly when `fp8_operands` has the GEMM activations).
    pub fp8_activation_scale: Option<i8>,
    /// One fused QKV projection per layer.
    pub fuse_qkv: bool,
    /// Activation (and non-GEMM parameter) dtype.
    pub activations: DType,
    /// Dtype attention runs in.
    pub attention: DType,
}

/// A set of operand classes stored as FP8.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fp8Operands(u8);

impl Fp8Operands {
    /// No FP8 operands.
    pub const NONE: Fp8Operands = Fp8Operands(0);
    /// Every GEMM weight (patch embedding, Q/K/V/O, MLP).
    pub const GEMM_WEIGHTS: Fp8Operands = Fp8Operands(1);
    /// The activations cast to FP8 for FP8 × FP8 GEMMs.
    pub const GEMM_ACTIVATIONS: Fp8Operands = Fp8Operands(2);
    const KNOWN: u8 = 3;

    /// Both sets.
    pub const fn with(self, other: Fp8Operands) -> Fp8Operands {
        Fp8Operands(self.0 | other.0)
    }
    pub const fn bits(self) -> u8 {
        self.0
    }
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub const fn contains(self, other: Fp8Operands) -> bool {
        self.0 & other.0 == other.0
    }
    /// The operand classes by name, for reports.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        [
            (Self::GEMM_WEIGHTS, "GEMM weights"),
            (Self::GEMM_ACTIVATIONS, "GEMM activations"),
        ]
        .into_iter()
        .filter(move |(o, _)| self.contains(*o))
        .map(|(_, name)| name)
    }
}

/// Where the weights come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightOrigin {
    /// Drawn from this seed (the synthetic input is drawn from it too).
    Random { seed: u64 },
    /// A checkpoint directory; `sha256` is the digest of its
    /// `model.safetensors`, `path` the directory as given at compile time.
    Checkpoint { sha256: [u8; 32], path: String },
}

/// Appends the description section's body.
pub(super) fn encode(w: &mut ByteWriter, d: &Description) -> Result<()> {
    w.u16(DESCRIPTION_VERSION);
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
    Ok(())
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

/// Reads and checks the description section's body.
pub(super) fn read(r: &mut ByteReader<'_>, tile_count: u32) -> Result<Description> {
    let offset = r.offset();
    let version = r.u16("description version")?;
    if !(1..=DESCRIPTION_VERSION).contains(&version) {
        return Err(PackageError::UnknownEnum {
            offset,
            field: "description version",
            value: u32::from(version),
        });
    }
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
            })
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
        });
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
        }),
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
        }),
    }
}

/// A u32 that must be at least 1.
fn positive(r: &mut ByteReader<'_>, field: &'static str) -> Result<u32> {
    let offset = r.offset();
    let v = r.u32(field)?;
    if v == 0 {
        return Err(PackageError::ZeroCount { offset, field });
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
        });
    }
    Ok(s)
}

fn invalid(offset: usize, field: &'static str, reason: &'static str) -> PackageError {
    PackageError::BadDescription {
        offset,
        field,
        reason,
    }
}

/// A digest as lower-case hex.
#[cfg(feature = "serde")]
fn serialize_hex<S: serde::Serializer>(
    digest: &[u8; 32],
    s: S,
) -> core::result::Result<S::Ok, S::Error> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let text: String = digest
        .iter()
        .flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]])
        .map(char::from)
        .collect();
    s.serialize_str(&text)
}

/// The operand classes by name.
#[cfg(feature = "serde")]
impl serde::Serialize for Fp8Operands {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.names())
    }
}
