//! The description: round trip, one rejection per field check (an
//! impossible model described, or the encoded body edited) and one per
//! contradiction with the program.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use ipuc_target::package::{
    Binding, BindingKind, DType, DescriptionSection, Package, PackageError, RepeatScope, StepInfo,
    StepKind, TileStepTable,
};

use super::*;

/// A 2-of-27-layer FP8 model with random weights, built with a capped
/// exchange stream.
fn sample() -> Description {
    Description {
        build: Some(BuildFlags {
            beam_width: 16,
            planning_tiles: 1472,
            optimization_steps: 2,
            exchange_stream_words: Some(1024),
            outgoing_base: true,
            planner_data_budget: None,
            min_key_parts: 1,
            runtime_name: "device-asm/static_runtime.S".to_string(),
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

/// A program [`sample`] describes truly: one FP8 weight at scale −4 and a
/// Repeat of two iterations (the description check reads nothing else).
fn program() -> Package {
    let mut p = Package::new("test");
    p.bindings.push(Binding {
        name: "w.qkv".to_string(),
        scale: -4,
        kind: BindingKind::Weight,
        dtype: DType::F8E4M3,
        shape: vec![16],
        slices: Vec::new(),
    });
    p.steps.operations = vec!["layer".to_string()];
    p.steps.tiles.push(TileStepTable {
        physical_tile: 0,
        steps: vec![StepInfo {
            step: 0,
            kind: StepKind::Compute,
            operation: 0,
            code_address: 0,
            repeat: Some(RepeatScope {
                repeat: 0,
                trip_count: 2,
            }),
        }],
    });
    p
}

/// `program` carrying `d`.
fn described(mut p: Package, d: &Description) -> Package {
    p.description = encode(d).unwrap();
    p
}

/// The error reading `program` described as `sample` with `edit` made.
fn err_with(edit: impl FnOnce(&mut ModelDescription)) -> DescriptionError {
    let mut d = sample();
    edit(d.model.as_mut().unwrap());
    read(&described(program(), &d)).unwrap_err()
}

/// The sample's body.
fn body() -> Vec<u8> {
    encode(&sample()).unwrap().body
}

/// Reads a body at `version`.
fn read_body(version: u16, body: Vec<u8>) -> Result<Description, DescriptionError> {
    read(&Package {
        description: DescriptionSection { version, body },
        ..program()
    })
}

#[test]
fn a_description_round_trips_and_a_checkpoint_origin_too() {
    let d = sample();
    assert_eq!(read(&described(program(), &d)), Ok(d.clone()));
    // A checkpoint's package names no preset (the two exclude each other).
    let mut d = d;
    let m = d.model.as_mut().unwrap();
    m.preset = String::new();
    m.weights = WeightOrigin::Checkpoint {
        sha256: [0xAB; 32],
        path: "/models/siglip".to_string(),
    };
    d.build = None;
    assert_eq!(read(&described(program(), &d)), Ok(d));
}

#[test]
fn an_empty_description_round_trips_and_an_unrecorded_one_reads_empty() {
    let d = Description::default();
    assert_eq!(read(&described(program(), &d)), Ok(d.clone()));
    // Version 0 without a body: nothing recorded; with one, unknown.
    assert_eq!(read_body(0, Vec::new()), Ok(d));
    assert!(matches!(
        read_body(0, vec![0]),
        Err(DescriptionError::Field(PackageError::UnknownEnum {
            field: "description version",
            ..
        }))
    ));
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
        let e = err_with(edit);
        let named = match &e {
            DescriptionError::Invalid { field: f, .. }
            | DescriptionError::Field(PackageError::ZeroCount { field: f, .. }) => *f,
            other => panic!("{field}: unexpected {other:?}"),
        };
        assert_eq!(named, field, "{e}");
    }
    let e = err_with(|m| m.numerics.activations = DType::I8);
    assert!(
        matches!(
            e,
            DescriptionError::Field(PackageError::UnknownEnum {
                field: "activation dtype",
                ..
            })
        ),
        "{e}"
    );
}

#[test]
fn bad_tags_versions_and_trailing_bytes_are_rejected_at_their_byte() {
    assert_eq!(
        read_body(DESCRIPTION_VERSION + 1, body()),
        Err(DescriptionError::Field(PackageError::UnknownEnum {
            offset: 0,
            field: "description version",
            value: u32::from(DESCRIPTION_VERSION + 1)
        }))
    );
    // The has-build flag must be 0 or 1.
    let mut b = body();
    b[0] = 2;
    assert_eq!(
        read_body(DESCRIPTION_VERSION, b),
        Err(DescriptionError::Field(PackageError::UnknownEnum {
            offset: 0,
            field: "has build flags",
            value: 2,
        }))
    );
    // The weight origin tag is 9 bytes (tag + seed) before the two K
    // splits (a count and 2 × 12 bytes) that end the body.
    let mut b = body();
    let tag = b.len() - 9 - 28;
    assert_eq!(b[tag], 0);
    b[tag] = 3;
    assert_eq!(
        read_body(DESCRIPTION_VERSION, b),
        Err(DescriptionError::Field(PackageError::UnknownEnum {
            offset: tag,
            field: "weight origin",
            value: 3
        }))
    );
    // Every byte of the body is the description's.
    let mut b = body();
    let end = b.len();
    b.push(0);
    assert_eq!(
        read_body(DESCRIPTION_VERSION, b),
        Err(DescriptionError::Field(PackageError::TrailingBytes {
            offset: end,
            count: 1
        }))
    );
}

#[test]
fn k_splits_must_be_ordered_and_split() {
    let body = body();
    // The last split's `parts` is the body's last u32, its op 8 bytes before.
    let end = body.len();
    let mut b = body.clone();
    b[end - 4..].copy_from_slice(&1u32.to_le_bytes());
    assert!(matches!(
        read_body(DESCRIPTION_VERSION, b),
        Err(DescriptionError::Invalid {
            field: "k split parts",
            ..
        })
    ));
    let mut b = body.clone();
    b[end - 12..end - 8].copy_from_slice(&40u32.to_le_bytes());
    assert_eq!(
        read_body(DESCRIPTION_VERSION, b),
        Err(DescriptionError::Invalid {
            offset: end - 12,
            field: "k split op",
            reason: "not after the previous op",
        })
    );
    // A count the body cannot hold is refused before any allocation.
    let mut b = body;
    let count = end - 28;
    b[count..count + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        read_body(DESCRIPTION_VERSION, b),
        Err(DescriptionError::Field(PackageError::LengthPastEnd {
            field: "k splits",
            ..
        }))
    ));
}

#[test]
fn a_version_1_description_reads_without_k_splits() {
    let mut v1 = body();
    v1.truncate(v1.len() - 28);
    let mut want = sample();
    want.k_splits.clear();
    assert_eq!(read_body(1, v1), Ok(want));
}

#[test]
fn a_description_contradicting_the_program_is_refused() {
    let contradiction = |e: DescriptionError| match e {
        DescriptionError::ContradictsProgram { field, program, .. } => (field, program),
        other => panic!("not a contradiction: {other:?}"),
    };
    // Five layers described, a Repeat of two compiled.
    let (field, program_has) = contradiction(err_with(|m| m.layers = 5));
    assert_eq!(field, "layers");
    assert_eq!(program_has, "a Repeat of 2 iterations");
    // FP16 described, an FP8 weight bound.
    let e = err_with(|m| {
        m.numerics.fp8_scale = None;
        m.numerics.fp8_operands = Fp8Operands::NONE;
        m.numerics.fp8_activation_scale = None;
    });
    assert_eq!(contradiction(e).0, "no FP8 weights");
    // FP8 described, every weight FP16.
    let mut p = program();
    p.bindings[0].dtype = DType::F16;
    p.bindings[0].scale = 0;
    let e = read(&described(p, &sample())).unwrap_err();
    assert_eq!(contradiction(e).0, "FP8 GEMM weights");
    // Another FP8 scale than the weights carry.
    let e = err_with(|m| m.numerics.fp8_scale = Some(-3));
    assert_eq!(contradiction(e).0, "FP8 weight scale");
    // A preset and a checkpoint origin: a model comes from one of them.
    let e = err_with(|m| {
        m.weights = WeightOrigin::Checkpoint {
            sha256: [1; 32],
            path: "/ck".to_string(),
        }
    });
    assert!(
        matches!(
            e,
            DescriptionError::Invalid {
                field: "weight origin",
                ..
            }
        ),
        "{e}"
    );
}
