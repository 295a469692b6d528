//! CLIP, ViT and DINOv2 configs (issue #29): family recognition, HF
//! defaults, the options named as unsupported, and the presets' graphs.

use ipuc::model::{build_siglip, Family, ModelOptions, VisionConfig};
use ipuc::weights::{random_weights, WeightSpec};

fn err(json: &str) -> String {
    VisionConfig::from_json(json).unwrap_err().to_string()
}

#[test]
fn families_come_from_model_type_or_architectures_with_hf_defaults() {
    let clip = VisionConfig::from_json(r#"{"model_type": "clip_vision_model"}"#).unwrap();
    assert_eq!(
        (
            clip.family,
            clip.patch_size,
            clip.hidden_act.as_str(),
            clip.layer_norm_eps
        ),
        (Family::Clip, 32, "quick_gelu", 1e-5)
    );
    assert_eq!(clip.num_tokens(), 50); // 7² patches + the class token
    let full = VisionConfig::from_json(
        r#"{"model_type": "clip", "vision_config": {"hidden_size": 64, "num_attention_heads": 4}}"#,
    )
    .unwrap();
    assert_eq!((full.family, full.hidden_size), (Family::Clip, 64));
    let vit = VisionConfig::from_json(r#"{"architectures": ["ViTModel"]}"#).unwrap();
    assert_eq!(
        (vit.family, vit.layer_norm_eps, vit.num_tokens()),
        (Family::Vit, 1e-12, 197)
    );
    let dino = VisionConfig::from_json(r#"{"model_type": "dinov2", "mlp_ratio": 4}"#).unwrap();
    assert_eq!(
        (dino.family, dino.intermediate_size),
        (Family::Dinov2, 3072)
    );
    // No model_type and no architectures: a SigLIP config, as always.
    assert_eq!(
        VisionConfig::from_json("{}").unwrap().family,
        Family::Siglip
    );
}

#[test]
fn unsupported_architectures_and_options_are_named() {
    assert_eq!(
        err(r#"{"model_type": "dinov2_with_registers"}"#),
        "model_type \"dinov2_with_registers\" is not supported (supported model types: siglip, siglip_vision_model, clip, clip_vision_model, vit, dinov2)"
    );
    assert!(err(r#"{"architectures": ["ViTForImageClassification"]}"#)
        .starts_with("architecture \"ViTForImageClassification\" is not supported"));
    assert_eq!(
        err(r#"{"model_type": "dinov2", "use_swiglu_ffn": true}"#),
        "DINOv2: the SwiGLU MLP (use_swiglu_ffn: true, as in dinov2-giant) is not supported"
    );
    assert_eq!(
        err(r#"{"model_type": "vit", "qkv_bias": false}"#),
        "ViT: qkv_bias: false (Q/K/V projections without bias) is not supported"
    );
    assert_eq!(
        err(r#"{"model_type": "vit", "pooler_act": "relu"}"#),
        "ViT: pooler_act \"relu\" (the pooler is built with tanh) is not supported"
    );
    assert!(
        err(r#"{"model_type": "clip_vision_model", "hidden_act": "silu"}"#)
            .contains("hidden_act \"silu\" is not supported")
    );
}

#[test]
fn presets_build_with_their_token_counts_and_parameters() {
    for (name, family, tokens, layers) in [
        ("clip-vit-l14-336", Family::Clip, 577, 24),
        ("vit-b16-224", Family::Vit, 197, 12),
        ("dinov2-l14-224", Family::Dinov2, 257, 24),
    ] {
        let config = VisionConfig::preset(name).unwrap();
        assert_eq!(
            (config.family, config.num_tokens()),
            (family, tokens),
            "{name}"
        );
        let options = ModelOptions {
            vit_layers: Some(2),
            fuse_qkv: true,
            fp8_scale: Some(-4),
            ..ModelOptions::default()
        };
        let model = build_siglip(&config, &options).unwrap();
        assert_eq!(config.num_hidden_layers, layers);
        let hidden = model.graph.ty(model.last_hidden_state).unwrap();
        assert_eq!(
            hidden.shape.dims(),
            &[1, tokens, config.hidden_size],
            "{name}"
        );
        let pooled = model.graph.ty(model.pooled.unwrap()).unwrap();
        assert_eq!(pooled.shape.dims(), &[1, config.hidden_size], "{name}");
        let encoder = model.graph.repeat(model.encoder).unwrap();
        assert_eq!(encoder.trip_count(), 2);
        // DINOv2 carries two LayerScale vectors per layer.
        let per_layer = if family == Family::Dinov2 { 14 } else { 12 };
        assert_eq!(encoder.sequence_count(), per_layer, "{name}");
    }
}

#[test]
fn dinov2_position_table_is_drawn_at_518_and_interpolated_to_224() {
    let config = VisionConfig::preset("dinov2-l14-224").unwrap();
    let model = build_siglip(
        &config,
        &ModelOptions {
            vit_layers: Some(1),
            ..ModelOptions::default()
        },
    )
    .unwrap();
    let spec = model.parameter("embeddings.position_embeddings").unwrap();
    assert_eq!(spec.shape, vec![1, 257, 1024]);
    let ws = WeightSpec::from(spec);
    assert_eq!(ws.part_shape(), Some(vec![1, 37 * 37 + 1, 1024]));
    let w = random_weights(3, &[ws]);
    let table = w.get("embeddings.position_embeddings").unwrap();
    assert_eq!(table.data.len(), 257 * 1024);
    assert!(table.data.iter().all(|v| v.is_finite()));
}

/// Issue #43: the widths the device cannot lay out are refused by their
/// config key (exit 4); an MLP width and an odd patch's `C·p·p` that are
/// not multiples of 4 are padded with zeros instead (`tests/tests/towers_props.rs`
/// runs such towers).
#[test]
fn widths_that_cannot_move_as_words_are_named() {
    assert_eq!(
        err(r#"{"model_type": "vit", "hidden_size": 18, "num_attention_heads": 3}"#),
        "ViT: hidden_size 18 (ipuc needs a multiple of 4: rows of FP16 and FP8 elements move between tiles as whole 32-bit words) is not supported"
    );
    assert!(
        err(r#"{"model_type": "dinov2", "hidden_size": 36, "num_attention_heads": 4}"#)
            .starts_with("DINOv2: hidden_size 36 / num_attention_heads 4 = head dim 9")
    );
    let config = VisionConfig::from_json(
        r#"{"model_type": "clip_vision_model", "hidden_size": 36, "num_attention_heads": 3,
            "intermediate_size": 37, "image_size": 10, "patch_size": 5}"#,
    )
    .unwrap();
    let model = build_siglip(&config, &ModelOptions::default()).unwrap();
    let shape = |name: &str| model.parameter(name).unwrap().shape.clone();
    assert_eq!(
        shape("vision_model.embeddings.patch_embedding.weight"),
        [36, 76]
    );
    assert_eq!(
        shape("vision_model.encoder.layers.0.mlp.fc1.weight"),
        [40, 36]
    );
    assert_eq!(
        shape("vision_model.encoder.layers.0.mlp.fc2.weight"),
        [36, 40]
    );
}

#[test]
fn zero_pad_appends_zero_columns_then_zero_rows() {
    let pad = ipuc::model::ZeroPad {
        stored: vec![2, 1, 3],
    };
    assert_eq!(
        pad.widen(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 4]),
        [1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    // A bias: one column per row.
    let bias = ipuc::model::ZeroPad { stored: vec![3] };
    assert_eq!(bias.widen(&[1.0, 2.0, 3.0], &[4]), [1.0, 2.0, 3.0, 0.0]);
}
