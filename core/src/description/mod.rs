//! The package's description of what it was compiled from: the model
//! (config, layers built, batch, numerics, where its weights come from),
//! the compile flags and the K splits the plan chose. With it a package is
//! self-describing: `ipuc exec model.ipuc --reference-run` rebuilds the
//! model, its weights and its reference from the package alone.
//!
//! To the target the section is opaque
//! ([`ipuc_target::package::DescriptionSection`]: a version and bytes);
//! what it means is the compiler's and the host's, here. The body has its
//! own layout version ([`DESCRIPTION_VERSION`]) so it can grow without a
//! new container format. [`read`] checks every field as it is read
//! (counts, enum tags, option tags, value ranges), with the byte offset of
//! the offending field from the body's start, and then checks what the
//! program determines against what the description claims; nothing here
//! panics on any input.
//!
//! Version 0 without a body records nothing (a package assembled without
//! the compiler) and reads as [`Description::default`]. The body, after
//! the section's `version u16`:
//!
//! ```text
//! description  has_build u8 · [build] · has_model u8 · [model]
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

mod check;
mod codec;
#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use ipuc_target::package::{DType, DescriptionSection, Package, PackageError};

/// Layout version of the description body this crate writes; it reads
/// this one and version 1 (before [`Description::k_splits`]).
pub const DESCRIPTION_VERSION: u16 = 2;

/// The description a compile records, as the section `package` carries.
pub fn encode(description: &Description) -> Result<DescriptionSection, DescriptionError> {
    Ok(DescriptionSection {
        version: DESCRIPTION_VERSION,
        body: codec::encode(description)?,
    })
}

/// The description `package` carries, read and checked against its
/// program (the layers its Repeat runs, the weights' dtypes and scales,
/// the input's shape).
pub fn read(package: &Package) -> Result<Description, DescriptionError> {
    let description = codec::read(&package.description, package.target.tile_count)?;
    if let Some(model) = &description.model {
        check::against_program(model, &package.bindings, &package.steps)?;
    }
    Ok(description)
}

/// Why a package's description cannot be used.
#[derive(Clone, Debug, PartialEq)]
pub enum DescriptionError {
    /// A field cannot be read (truncated, a length past the end, an
    /// unknown tag, a zero count): the package format's error, its byte
    /// offset counted from the description body's start.
    Field(PackageError),
    /// A field holds a value no model could have.
    Invalid {
        /// From the body's start.
        offset: usize,
        field: &'static str,
        reason: &'static str,
    },
    /// The description says one thing and the program another (layers
    /// against the Repeat's iterations, FP8 against the weights' dtypes,
    /// batch and image against the input binding).
    ContradictsProgram {
        field: &'static str,
        described: String,
        program: String,
    },
}

impl From<PackageError> for DescriptionError {
    fn from(e: PackageError) -> Self {
        DescriptionError::Field(e)
    }
}

impl fmt::Display for DescriptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DescriptionError::Field(e) => {
                write!(
                    f,
                    "the package's description (offsets from its body's start): {e}"
                )
            }
            DescriptionError::Invalid {
                offset,
                field,
                reason,
            } => write!(
                f,
                "the package's description, byte {offset} of its body: field `{field}`: {reason}"
            ),
            DescriptionError::ContradictsProgram {
                field,
                described,
                program,
            } => write!(
                f,
                "the description says {field} {described}, but the program has {program}"
            ),
        }
    }
}

impl core::error::Error for DescriptionError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            DescriptionError::Field(e) => Some(e),
            _ => None,
        }
    }
}

/// What a package was compiled from. Both parts are optional: a package
/// built from a graph by `ipuc-core` alone has compile flags but no model.
/// With `serde`, the model and the build flags serialize as `ipuc inspect
/// --json` shows them (`host/schemas/package.schema.json`).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Description {
    pub build: Option<BuildFlags>,
    pub model: Option<ModelDescription>,
    /// Every product the program splits over K, by op: part of the
    /// device's numerics (each part rounds its partials apart), so the
    /// device-numerics reference follows it.
    #[cfg_attr(feature = "serde", serde(skip))]
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

/// The model a package computes. With `serde`, one flat object: the
/// preset, the config's and the numerics' fields, layers, batch and the
/// weight origin's.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ModelDescription {
    /// The preset it was built from (`siglip-small`, `siglip-so400m`);
    /// empty when the config came from a checkpoint's `config.json`.
    pub preset: String,
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub config: ModelConfig,
    /// Encoder layers built (the Repeat trip count), 1..=`num_hidden_layers`.
    pub layers: u32,
    /// Images per inference.
    pub batch: u32,
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub numerics: ModelNumerics,
    #[cfg_attr(feature = "serde", serde(flatten))]
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

/// A digest as lower-case hex.
#[cfg(feature = "serde")]
fn hex(digest: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    digest
        .iter()
        .flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]])
        .map(char::from)
        .collect()
}

/// A digest as a lower-case hex string.
#[cfg(feature = "serde")]
fn serialize_hex<S: serde::Serializer>(
    digest: &[u8; 32],
    s: S,
) -> core::result::Result<S::Ok, S::Error> {
    s.serialize_str(&hex(digest))
}

/// The operand classes by name.
#[cfg(feature = "serde")]
impl serde::Serialize for Fp8Operands {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.names())
    }
}

/// The origin as four fields, each present (`null` where the kind has
/// none): `weights` (`random` or `checkpoint`), `seed`,
/// `checkpoint_sha256` (hex), `checkpoint_path`.
#[cfg(feature = "serde")]
impl serde::Serialize for WeightOrigin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (kind, seed, sha256, path) = match self {
            WeightOrigin::Random { seed } => ("random", Some(*seed), None, None),
            WeightOrigin::Checkpoint { sha256, path } => {
                ("checkpoint", None, Some(hex(sha256)), Some(path.as_str()))
            }
        };
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("weights", kind)?;
        m.serialize_entry("seed", &seed)?;
        m.serialize_entry("checkpoint_sha256", &sha256)?;
        m.serialize_entry("checkpoint_path", &path)?;
        m.end()
    }
}
