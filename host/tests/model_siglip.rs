//! SigLIP graph builder: shapes, parameter specs and Repeat structure for
//! both presets, several layer counts and the option matrix.

use ipuc::cli::batch::BatchFlag;
use ipuc::cli::workload::{build_model, WorkloadArgs};
use ipuc::model::{
    build_siglip, ModelError, ModelOptions, ParameterRole, SiglipModel, VisionConfig,
    LAST_HIDDEN_STATE, POOLER_OUTPUT,
};
use ipuc_core::ir::{DType, OpKind};

fn build(config: &VisionConfig, options: ModelOptions) -> SiglipModel {
    build_siglip(config, &options).unwrap()
}

fn dims(model: &SiglipModel, name: &str) -> (Vec<usize>, DType) {
    let v = model.graph.output(name).unwrap();
    let ty = model.graph.ty(v).unwrap();
    (ty.shape.dims().to_vec(), ty.dtype)
}

fn element_total(model: &SiglipModel) -> usize {
    model.parameters.iter().map(|p| p.element_count()).sum()
}

#[test]
fn so400m_full_model_matches_the_published_parameter_count() {
    let model = build(&VisionConfig::siglip_so400m(), ModelOptions::default());
    assert_eq!(
        dims(&model, LAST_HIDDEN_STATE),
        (vec![1, 729, 1152], DType::F32)
    );
    assert_eq!(dims(&model, POOLER_OUTPUT), (vec![1, 1152], DType::F32));
    assert_eq!(model.layers, 27);
    // facts §1.4: 428,225,600 parameters in the vision tower with head.
    assert_eq!(element_total(&model), 428_225_600);
    assert_eq!(model.parameters.len(), 3 + 27 * 16 + 2 + 11);
    let repeat = model.graph.repeat(model.encoder).unwrap();
    assert_eq!(repeat.trip_count(), 27);
    assert_eq!(repeat.sequence_count(), 16);
    assert_eq!(repeat.carried_inits().len(), 1);
    assert!(repeat.invariants().is_empty());
    assert_eq!(
        model
            .graph
            .ty(repeat.carried_args()[0])
            .unwrap()
            .shape
            .dims(),
        &[1, 729, 1152]
    );
    // F16 everywhere except the F32 pixels and outputs.
    assert_eq!(
        model
            .parameter("vision_model.encoder.layers.26.mlp.fc2.weight")
            .unwrap()
            .dtype,
        DType::F16
    );
    assert_eq!(model.parameter_bytes(), 2 * 428_225_600);
}

#[test]
fn every_layer_parameter_is_its_sequence_element() {
    let model = build(
        &VisionConfig::siglip_small(),
        ModelOptions {
            vit_layers: Some(5),
            ..Default::default()
        },
    );
    let repeat = model.graph.repeat(model.encoder).unwrap();
    let mut per_layer = 0;
    for spec in &model.parameters {
        let Some(layer) = spec.layer else { continue };
        per_layer += 1;
        let pattern = spec.pattern.as_deref().unwrap();
        assert_eq!(spec.name, pattern.replace("{i}", &layer.to_string()));
        let seq = (0..repeat.sequence_count())
            .find(|&s| repeat.sequence(s).contains(&spec.value))
            .unwrap();
        assert_eq!(repeat.sequence(seq)[layer], spec.value, "{}", spec.name);
        assert_eq!(spec.sources, vec![spec.name.clone()]);
        let arg_ty = model.graph.ty(repeat.iterated_args()[seq]).unwrap();
        assert_eq!(arg_ty.shape.dims(), spec.shape.as_slice());
    }
    assert_eq!(per_layer, 5 * 16);
    // Graph parameter names are exactly the spec names, in graph order.
    let graph_names: Vec<_> = model
        .graph
        .parameters()
        .map(|(_, op)| op.kind().external_name().unwrap().to_string())
        .collect();
    let spec_names: Vec<_> = model.parameters.iter().map(|p| p.name.clone()).collect();
    assert_eq!(graph_names, spec_names);
}

#[test]
fn small_preset_shapes_for_several_layer_counts() {
    let config = VisionConfig::siglip_small();
    for layers in [1, 2, 7, 27] {
        let model = build(
            &config,
            ModelOptions {
                vit_layers: Some(layers),
                ..Default::default()
            },
        );
        assert_eq!(
            model.graph.repeat(model.encoder).unwrap().trip_count(),
            layers
        );
        assert_eq!(dims(&model, LAST_HIDDEN_STATE).0, vec![1, 4, 144]);
        assert_eq!(dims(&model, POOLER_OUTPUT).0, vec![1, 144]);
        // patch 3·14·14·144+144, pos 4·144, per layer 4·(144²+144) + 2·(144·288) + 288 + 144 + 4·144, post 288,
        // head: probe 144, in_proj 3·144²+432, out_proj 144²+144, LN 288, MLP 2·144·288+288+144.
        let per_layer = 4 * (144 * 144 + 144) + 2 * 144 * 288 + 288 + 144 + 4 * 144;
        let head = 144 + 3 * 144 * 144 + 432 + 144 * 144 + 144 + 288 + 2 * 144 * 288 + 288 + 144;
        let once = 3 * 14 * 14 * 144 + 144 + 4 * 144 + 288;
        assert_eq!(element_total(&model), once + layers * per_layer + head);
    }
    let model = build(
        &VisionConfig::siglip_so400m(),
        ModelOptions {
            vit_layers: Some(2),
            ..Default::default()
        },
    );
    assert_eq!(model.graph.repeat(model.encoder).unwrap().trip_count(), 2);
    assert_eq!(model.parameters.len(), 3 + 2 * 16 + 13);
}

#[test]
fn layer_count_and_batch_are_validated() {
    let config = VisionConfig::siglip_small();
    for (layers, text) in [
        (
            0,
            "--vit-layers 0 is outside 1..=27 (the config has 27 layers)",
        ),
        (
            28,
            "--vit-layers 28 is outside 1..=27 (the config has 27 layers)",
        ),
    ] {
        let e = build_siglip(
            &config,
            &ModelOptions {
                vit_layers: Some(layers),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.to_string(), text);
    }
    let e = build_siglip(
        &config,
        &ModelOptions {
            vit_batch: 0,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e, ModelError::BatchSize);
    let e = build_siglip(
        &config,
        &ModelOptions {
            fp8_scale: Some(40),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--fp8-scale 40 is outside the FP8 metadata range [-32, 31]"
    );
    let e = build_siglip(
        &config,
        &ModelOptions {
            activations: DType::f143(0),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "activation dtype f143<0> is not supported (use f32 or f16)"
    );
    assert_eq!(
        VisionConfig::preset("siglip-huge").unwrap_err().to_string(),
        "unknown workload \"siglip-huge\" (known: siglip-so400m, siglip-small, siglip-vit-benchmark, clip-vit-l14-336, vit-b16-224, dinov2-l14-224)"
    );
    // A near miss names the preset it most likely meant.
    assert_eq!(
        VisionConfig::preset("dinov2-l14").unwrap_err().to_string(),
        "unknown workload \"dinov2-l14\" (did you mean \"dinov2-l14-224\"? known: siglip-so400m, siglip-small, siglip-vit-benchmark, clip-vit-l14-336, vit-b16-224, dinov2-l14-224)"
    );
}

#[test]
fn batch_fuse_qkv_and_fp8_options() {
    let config = VisionConfig::siglip_small();
    let options = ModelOptions {
        vit_batch: 3,
        fuse_qkv: true,
        fp8_scale: Some(-4),
        vit_layers: Some(2),
        ..Default::default()
    };
    let model = build(&config, options);
    assert_eq!(dims(&model, LAST_HIDDEN_STATE).0, vec![3, 4, 144]);
    assert_eq!(dims(&model, POOLER_OUTPUT).0, vec![3, 144]);
    assert_eq!(
        model.graph.ty(model.pixel_values).unwrap().shape.dims(),
        &[3, 3, 28, 28]
    );
    let repeat = model.graph.repeat(model.encoder).unwrap();
    assert_eq!(repeat.sequence_count(), 12);
    let qkv = model
        .parameter("vision_model.encoder.layers.1.self_attn.qkv_proj.weight")
        .unwrap();
    assert_eq!(qkv.shape, vec![432, 144]);
    assert_eq!(qkv.dtype, DType::f143(-4));
    assert_eq!(
        qkv.sources,
        vec![
            "vision_model.encoder.layers.1.self_attn.q_proj.weight",
            "vision_model.encoder.layers.1.self_attn.k_proj.weight",
            "vision_model.encoder.layers.1.self_attn.v_proj.weight",
        ]
    );
    let qkv_b = model
        .parameter("vision_model.encoder.layers.0.self_attn.qkv_proj.bias")
        .unwrap();
    assert_eq!(
        (qkv_b.shape.clone(), qkv_b.dtype, qkv_b.role),
        (vec![432], DType::F16, ParameterRole::GemmBias)
    );
    for p in &model.parameters {
        let want = if p.role == ParameterRole::GemmWeight {
            DType::f143(-4)
        } else {
            DType::F16
        };
        assert_eq!(p.dtype, want, "{}", p.name);
    }
    // Fusing changes packaging, not the amount of weights.
    let unfused = build(
        &config,
        ModelOptions {
            vit_batch: 3,
            vit_layers: Some(2),
            ..Default::default()
        },
    );
    assert_eq!(element_total(&model), element_total(&unfused));
}

fn body_ops(model: &SiglipModel) -> Vec<&'static str> {
    let repeat = model.graph.repeat(model.encoder).unwrap();
    let body = model.graph.region(repeat.body()).unwrap();
    body.ops()
        .iter()
        .map(|&op| model.graph.op(op).unwrap().mnemonic())
        .collect()
}

#[test]
fn encoder_body_is_one_pre_ln_layer() {
    let config = VisionConfig::siglip_small();
    let model = build(&config, ModelOptions::default());
    assert_eq!(
        body_ops(&model),
        [
            "layer_norm",
            "matmul",
            "add",
            "matmul",
            "add",
            "matmul",
            "add",
            "split_heads",
            "split_heads",
            "split_heads",
            "attention",
            "merge_heads",
            "matmul",
            "add",
            "add",
            "layer_norm",
            "matmul",
            "add",
            "gelu_tanh",
            "matmul",
            "add",
            "add",
        ]
    );
    let fused = build(
        &config,
        ModelOptions {
            fuse_qkv: true,
            ..Default::default()
        },
    );
    assert_eq!(
        &body_ops(&fused)[..7],
        [
            "layer_norm",
            "matmul",
            "add",
            "slice",
            "slice",
            "slice",
            "split_heads"
        ]
    );
    // F32 activations with FP16 attention: casts around attention only.
    let mixed = build(
        &config,
        ModelOptions {
            activations: DType::F32,
            ..Default::default()
        },
    );
    let ops = body_ops(&mixed);
    assert_eq!(ops.iter().filter(|&&o| o == "cast").count(), 4);
    let attention = mixed
        .graph
        .walk()
        .into_iter()
        .find(|&op| matches!(mixed.graph.op(op).unwrap().kind(), OpKind::Attention { .. }))
        .unwrap();
    let op = mixed.graph.op(attention).unwrap();
    assert_eq!(mixed.graph.ty(op.results()[0]).unwrap().dtype, DType::F16);
    match op.kind() {
        OpKind::Attention { scale } => assert_eq!(*scale, 1.0 / 72f32.sqrt()),
        _ => unreachable!(),
    }
    let all_f32 = build(
        &config,
        ModelOptions {
            activations: DType::F32,
            attention: DType::F32,
            ..Default::default()
        },
    );
    assert!(!body_ops(&all_f32).contains(&"cast"));
}

#[test]
fn config_json_vision_and_full_siglip() {
    // The transformers unit-test config (facts §2), as a full SiglipConfig.
    let full = r#"{
        "model_type": "siglip",
        "text_config": {"hidden_size": 32},
        "vision_config": {"image_size": 30, "patch_size": 2, "hidden_size": 32,
                          "num_hidden_layers": 2, "num_attention_heads": 4,
                          "intermediate_size": 37, "model_type": "siglip_vision_model"}
    }"#;
    let config = VisionConfig::from_json(full).unwrap();
    assert_eq!(config.num_tokens(), 225);
    assert_eq!(config.layer_norm_eps, 1e-6);
    assert_eq!(config.hidden_act, "gelu_pytorch_tanh");
    assert!(config.vision_use_head);
    let model = build(&config, ModelOptions::default());
    assert_eq!(dims(&model, LAST_HIDDEN_STATE).0, vec![1, 225, 32]);
    assert_eq!(dims(&model, POOLER_OUTPUT).0, vec![1, 32]);

    let vision = r#"{"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1,
                     "intermediate_size": 96, "image_size": 32, "patch_size": 8,
                     "layer_norm_eps": 1e-5, "hidden_act": "gelu_new", "vision_use_head": false}"#;
    let config = VisionConfig::from_json(vision).unwrap();
    let model = build(&config, ModelOptions::default());
    assert_eq!(dims(&model, LAST_HIDDEN_STATE).0, vec![1, 16, 64]);
    assert!(model.pooled.is_none());
    assert!(model.graph.output(POOLER_OUTPUT).is_none());
    assert!(model.parameters.iter().all(|p| !p.name.contains(".head.")));
    let eps =
        model
            .graph
            .walk()
            .into_iter()
            .find_map(|op| match model.graph.op(op).unwrap().kind() {
                OpKind::LayerNorm { eps, .. } => Some(*eps),
                _ => None,
            });
    assert_eq!(eps, Some(1e-5));
    // Defaults for everything absent: the HF class defaults.
    assert_eq!(VisionConfig::from_json("{}").unwrap().num_tokens(), 196);
}

#[test]
fn config_json_errors_are_clear() {
    let cases = [
        (r#"{"hidden_act": "relu"}"#, "invalid vision config: hidden_act \"relu\" is not supported (supported: gelu_pytorch_tanh, gelu_new, gelu, quick_gelu)"),
        (r#"{"hidden_size": 100, "num_attention_heads": 3}"#, "invalid vision config: hidden_size 100 is not divisible by num_attention_heads 3"),
        (r#"{"patch_size": 300}"#, "invalid vision config: patch_size 300 exceeds image_size 224"),
        (r#"{"num_hidden_layers": 0}"#, "invalid vision config: num_hidden_layers must be positive"),
        (r#"[1, 2]"#, "config.json: expected a JSON object (SiglipVisionConfig or SiglipConfig, CLIPVisionConfig or CLIPConfig, ViTConfig, Dinov2Config)"),
        (r#"{"model_type": "siglip", "vision_config": 3}"#, "config.json: expected a JSON object (SiglipVisionConfig or SiglipConfig)"),
        (r#"{"model_type": "clip", "vision_config": 3}"#, "config.json: expected a JSON object (CLIPVisionConfig or CLIPConfig)"),
    ];
    for (json, text) in cases {
        assert_eq!(
            VisionConfig::from_json(json).unwrap_err().to_string(),
            text,
            "{json}"
        );
    }
    let e = VisionConfig::from_json(r#"{"hidden_size": "big"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("config.json: `hidden_size`: invalid type: string \"big\""),
        "{e}"
    );
    let e = VisionConfig::from_json("{").unwrap_err().to_string();
    assert!(e.starts_with("config.json: EOF"), "{e}");
}

/// Filetest: the whole 1-layer small graph. Re-bless with IPUC_BLESS=1.
#[test]
fn small_one_layer_dump_filetest() {
    let model = build(
        &VisionConfig::siglip_small(),
        ModelOptions {
            vit_layers: Some(1),
            ..Default::default()
        },
    );
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/siglip-small-1layer.ir"
    );
    let dump = model.graph.dump();
    if std::env::var_os("IPUC_BLESS").is_some() {
        std::fs::write(path, &dump).unwrap();
    }
    let expected = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        dump, expected,
        "dump changed; re-bless with IPUC_BLESS=1 after checking it"
    );
}

#[test]
fn so400m_flops_match_the_facts_estimate() {
    let model = build(&VisionConfig::siglip_so400m(), ModelOptions::default());
    let (n, d, f, h, p) = (729u64, 1152u64, 4304u64, 16u64, 588u64);
    let patch = 2 * n * p * d;
    let layer = 2 * n * d * 4 * d + 2 * 2 * n * d * f + 2 * 2 * h * n * n * (d / h);
    let head = 2 * d * d + 2 * n * d * 2 * d + 2 * 2 * h * n * (d / h) + 2 * d * d + 2 * 2 * d * f;
    let total = model.graph.flops();
    assert_eq!(total, patch + 27 * layer + head);
    // docs/facts/siglip-and-fp8.md §1.5: ≈ 670.3 GFLOP per image.
    assert!((total as f64 / 1e9 - 670.3).abs() < 0.2, "{total}");
    assert_eq!(model.graph.op_flops(model.encoder), 27 * layer);
    // Batch scales everything.
    let b2 = build(
        &VisionConfig::siglip_so400m(),
        ModelOptions {
            vit_batch: 2,
            vit_layers: Some(1),
            ..Default::default()
        },
    );
    let b1 = build(
        &VisionConfig::siglip_so400m(),
        ModelOptions {
            vit_layers: Some(1),
            ..Default::default()
        },
    );
    // The probe's q projection is computed once for the whole batch.
    assert_eq!(b2.graph.flops(), 2 * b1.graph.flops() - 2 * d * d);
}

#[derive(clap::Parser, Debug)]
struct Cli {
    #[command(flatten)]
    model: WorkloadArgs,
}

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    use clap::Parser;
    Cli::try_parse_from(std::iter::once("ipuc").chain(args.iter().copied()))
}

/// The model `args` describe (batch from `--vit-batch`, else 1).
fn build_from(args: &[&str]) -> anyhow::Result<SiglipModel> {
    let cli = parse(args)?;
    build_model(
        &cli.model.spec(),
        cli.model.vit_batch.and_then(BatchFlag::images).unwrap_or(1),
    )
}

#[test]
fn workload_flags_build_the_described_model() {
    let model = build_from(&[
        "--workload",
        "siglip-small",
        "--vit-layers",
        "2",
        "--fp8-scale",
        "-4",
        "--fuse-qkv",
        "--vit-batch",
        "2",
    ])
    .unwrap();
    assert_eq!(model.layers, 2);
    assert_eq!(model.options.fp8_scale, Some(-4));
    assert!(model.options.fuse_qkv);
    assert_eq!(dims(&model, LAST_HIDDEN_STATE).0, vec![2, 4, 144]);
    let model = build_from(&[
        "--workload",
        "siglip-so400m",
        "--fp8-scale=-3",
        "--vit-layers",
        "1",
    ])
    .unwrap();
    assert_eq!(model.options.fp8_scale, Some(-3));
    assert!(parse(&["--workload", "siglip-small", "--checkpoint", "/tmp"]).is_err());
    // A model must be named; the flags are `exec`'s too, where the package
    // names it, so the build says so rather than the parser.
    let unnamed = build_from(&[]).unwrap_err();
    assert!(matches!(
        unnamed.downcast_ref::<ModelError>(),
        Some(ModelError::ModelChoice)
    ));
    let e = build_from(&["--workload", "siglip-small", "--vit-layers", "30"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--vit-layers 30 is outside 1..=27 (the config has 27 layers)"
    );
}

#[test]
fn checkpoint_dir_config() {
    let dir = std::env::temp_dir().join(format!("ipuc-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = build_from(&["--checkpoint", dir.to_str().unwrap()]).unwrap_err();
    assert!(
        matches!(
            missing.downcast_ref::<ModelError>(),
            Some(ModelError::Io { .. })
        ),
        "{missing}"
    );
    assert!(missing.to_string().contains("config.json"), "{missing}");
    std::fs::write(
        dir.join("config.json"),
        r#"{"vision_config": {"hidden_size": 48, "num_attention_heads": 2,
        "num_hidden_layers": 3, "intermediate_size": 64, "image_size": 16, "patch_size": 4}}"#,
    )
    .unwrap();
    let model = build_from(&["--checkpoint", dir.to_str().unwrap(), "--vit-layers", "2"]).unwrap();
    assert_eq!(dims(&model, LAST_HIDDEN_STATE).0, vec![1, 16, 48]);
    std::fs::write(dir.join("config.json"), "{\"hidden_size\": -1}").unwrap();
    let bad = VisionConfig::from_checkpoint_dir(&dir)
        .unwrap_err()
        .to_string();
    assert!(
        bad.starts_with(&format!(
            "{}: `hidden_size`: invalid value",
            dir.join("config.json").display()
        )),
        "{bad}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ops_carry_hf_module_labels() {
    let model = build(
        &VisionConfig::siglip_small(),
        ModelOptions {
            vit_layers: Some(1),
            ..Default::default()
        },
    );
    let g = &model.graph;
    let find = |label: &str| {
        g.walk()
            .into_iter()
            .find(|&op| g.label(op) == Some(label))
            .unwrap()
    };
    for (label, mnemonic) in [
        ("embeddings.patchify", "im2col_patches"),
        ("embeddings.patch_embedding", "matmul"),
        ("encoder.layers.*.layer_norm1", "layer_norm"),
        ("encoder.layers.*.self_attn.q_proj", "matmul"),
        ("encoder.layers.*.self_attn.attention", "attention"),
        ("encoder.layers.*.mlp.fc1", "matmul"),
        ("encoder.layers.*.mlp.fc2.bias", "add"),
        ("encoder.layers.*.residual_mlp", "add"),
        ("encoder", "repeat"),
        ("post_layernorm", "layer_norm"),
        ("head.attention.kv_proj", "matmul"),
        ("head.mlp.gelu", "gelu_tanh"),
    ] {
        assert_eq!(g.op(find(label)).unwrap().mnemonic(), mnemonic, "{label}");
    }
    assert_eq!(find("encoder"), model.encoder);
}
