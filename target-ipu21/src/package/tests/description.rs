//! The description section: round trip, and one rejection per check,
//! made either by describing an impossible model (the writer validates with
//! the reader) or by editing the encoded section.

use alloc::string::ToString;

use super::super::description::{self as section, DESCRIPTION_VERSION};
use super::super::wire::ByteWriter;
use super::*;

/// A 2-of-27-layer FP8 model with random weights, built with a capped
/// exchange stream.
pub(in super::super) fn sample() -> Description {
    Description {
        build: Some(BuildFlags {
            beam_width: 16,
            planning_tiles: 1472,
            optimization_steps: 2,
            exchange_stream_words: Some(1024),
            outgoing_base: true,
            planner_data_budget: None,
            min_key_parts: 1,
            runtime_name: "target-ipu21/device-asm/static_runtime.S".to_string(),
            runtime_sha256: [7; 32],
        }),
        model: Some(ModelDescription {
            preset: "siglip-small".to_string(),
            config: ModelConfig {
                hidden_size: 144,
                intermediate_size: 288,
                num_hidden_layers: 27,
                num_attention_heads: 2,
                num_channels: 3,
                image_size: 28,
                patch_size: 14,
                hidden_act: "gelu_pytorch_tanh".to_string(),
                layer_norm_eps: 1e-6,
                vision_use_head: true,
            },
            layers: 2,
            batch: 1,
            numerics: ModelNumerics {
                fp8_scale: Some(-4),
                fp8_operands: Fp8Operands::GEMM_WEIGHTS.with(Fp8Operands::GEMM_ACTIVATIONS),
                fp8_activation_scale: Some(0),
                fuse_qkv: true,
                activations: DType::F16,
                attention: DType::F16,
            },
            weights: WeightOrigin::Random { seed: 5 },
        }),
        k_splits: vec![
            KSplit {
                op: 40,
                k: 288,
                parts: 3,
            },
            KSplit {
                op: 52,
                k: 144,
                parts: 2,
            },
        ],
    }
}

fn with_model(edit: impl FnOnce(&mut ModelDescription)) -> Package {
    let mut p = super::sample();
    edit(p.description.model.as_mut().unwrap());
    p
}

/// The byte offset (in the body) where the description section's body
/// starts: it is the last section.
fn description_start(body: &[u8], p: &Package) -> usize {
    let mut w = ByteWriter::new();
    section::encode(&mut w, &p.description).unwrap();
    body.len() - w.len()
}

#[test]
fn a_described_package_round_trips_and_a_checkpoint_origin_too() {
    let mut p = super::sample();
    assert_eq!(
        read_sealed(&write(&p).unwrap()).unwrap().description,
        p.description
    );
    // A checkpoint's package names no preset (the two exclude each other).
    p.description.model.as_mut().unwrap().preset = String::new();
    p.description.model.as_mut().unwrap().weights = WeightOrigin::Checkpoint {
        sha256: [0xAB; 32],
        path: "/models/siglip".to_string(),
    };
    p.description.build = None;
    assert_eq!(
        read_sealed(&write(&p).unwrap()).unwrap().description,
        p.description
    );
}

/// An edit that makes a model impossible.
type Edit = fn(&mut ModelDescription);

#[test]
fn impossible_models_are_rejected_naming_the_field() {
    let cases: [(&str, Edit); 10] = [
        ("num_attention_heads", |m| m.config.num_attention_heads = 5),
        ("patch_size", |m| m.config.patch_size = 29),
        ("layer_norm_eps", |m| m.config.layer_norm_eps = f64::NAN),
        ("layers built", |m| m.layers = 28),
        ("fp8 scale", |m| m.numerics.fp8_scale = Some(40)),
        ("fp8 operands", |m| m.numerics.fp8_scale = None),
        ("fp8 operands", |m| {
            m.numerics.fp8_operands = Fp8Operands::NONE
        }),
        ("batch", |m| m.batch = 0),
        ("fp8 activation scale", |m| {
            m.numerics.fp8_activation_scale = None
        }),
        ("fp8 operands", |m| {
            m.numerics.fp8_operands = Fp8Operands::GEMM_ACTIVATIONS;
        }),
    ];
    for (field, edit) in cases {
        let e = err(&with_model(edit));
        let named = match &e {
            PackageError::BadDescription { field: f, .. }
            | PackageError::ZeroCount { field: f, .. } => *f,
            other => panic!("{field}: unexpected {other:?}"),
        };
        assert_eq!(named, field, "{e}");
    }
    let e = err(&with_model(|m| m.numerics.activations = DType::I8));
    assert!(
        matches!(
            e,
            PackageError::UnknownEnum {
                field: "activation dtype",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn bad_tags_and_versions_are_rejected_at_their_byte() {
    let p = super::sample();
    let body = bytes_of(&p);
    let start = description_start(&body, &p);
    // Version.
    let mut b = body.clone();
    b[start] = (DESCRIPTION_VERSION + 1) as u8;
    assert_eq!(
        read(&b),
        Err(PackageError::UnknownEnum {
            offset: start,
            field: "description version",
            value: u32::from(DESCRIPTION_VERSION + 1)
        })
    );
    // The has-build flag must be 0 or 1.
    let mut b = body.clone();
    b[start + 2] = 2;
    assert!(matches!(
        read(&b),
        Err(PackageError::UnknownEnum {
            field: "has build flags",
            value: 2,
            ..
        })
    ));
    // The weight origin tag is 9 bytes (tag + seed) before the two K
    // splits (a count and 2 × 12 bytes) that end the section.
    let mut b = body;
    let tag = b.len() - 9 - 28;
    assert_eq!(b[tag], 0);
    b[tag] = 3;
    assert_eq!(
        read(&b),
        Err(PackageError::UnknownEnum {
            offset: tag,
            field: "weight origin",
            value: 3
        })
    );
}

#[test]
fn a_package_without_a_description_round_trips() {
    let mut p = super::sample();
    p.description = Description::default();
    assert_eq!(
        read_sealed(&write(&p).unwrap()).unwrap().description,
        Description::default()
    );
}

#[test]
fn k_splits_must_be_ordered_and_split() {
    let p = super::sample();
    let body = bytes_of(&p);
    // The last split's `parts` is the body's last u32, its op 8 bytes before.
    let end = body.len();
    let mut b = body.clone();
    b[end - 4..].copy_from_slice(&1u32.to_le_bytes());
    assert!(matches!(
        read(&b),
        Err(PackageError::BadDescription {
            field: "k split parts",
            ..
        })
    ));
    let mut b = body.clone();
    b[end - 12..end - 8].copy_from_slice(&40u32.to_le_bytes());
    assert_eq!(
        read(&b),
        Err(PackageError::BadDescription {
            offset: end - 12,
            field: "k split op",
            reason: "not after the previous op",
        })
    );
    // A count the section cannot hold is refused before any allocation.
    let mut b = body;
    let count = end - 28;
    b[count..count + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        read(&b),
        Err(PackageError::LengthPastEnd {
            field: "k splits",
            ..
        })
    ));
}

#[test]
fn a_version_1_description_reads_without_k_splits() {
    let mut p = super::sample();
    let mut w = ByteWriter::new();
    section::encode(&mut w, &p.description).unwrap();
    let mut v1 = w.into_bytes();
    v1[..2].copy_from_slice(&1u16.to_le_bytes());
    v1.truncate(v1.len() - 28);
    let mut r = super::super::wire::ByteReader::new(&v1);
    p.description.k_splits.clear();
    assert_eq!(section::read(&mut r, 1472).unwrap(), p.description);
}
