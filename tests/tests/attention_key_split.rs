//! Key-split attention (each tile holds one key/value block of its head;
//! each query block's rows combined in pieces on its key blocks' tiles),
//! forced on siglip-small with `min_key_parts = 2`: the planner picks it for
//! every attention, every output row is combined exactly once and no tile
//! sends to itself, the schedule oracle matches the FP32 reference, the
//! package runs on the simulator (its body's values transposed once, a
//! piece per tile, then gathered) and passes validation, and the
//! device-numerics reference told the package's key splits reproduces the
//! simulator bit for bit.

use ipuc::compile::{compile, CompileOptions};
use ipuc::device::simulated::{kernel_abi, SimDevice};
use ipuc::input::PixelValues;
use ipuc::model::{build_siglip, ModelOptions, VisionConfig};
use ipuc::reference::{run_siglip, Numerics, Reference, Tensor};
use ipuc::report::run::compare;
use ipuc::weights::{random_tensor, random_weights, weights_for, WeightSource, WeightSpec};
use ipuc_core::description::KSplit;
use ipuc_core::ir::{OpId, OpKind};
use ipuc_core::lower::lower;
use ipuc_core::lower::oracle::Executor;
use ipuc_core::lower::schedule::Step;
use ipuc_core::plan::opplan::{PlanFamily, Stage};
use ipuc_core::plan::{plan_graph, PlanConfig};
use ipuc_target::kernel::Kernel;
use ipuc_tests::device_inputs;

fn model(layers: usize, image_size: usize) -> ipuc::model::SiglipModel {
    let opts = ModelOptions {
        vit_layers: Some(layers),
        ..ModelOptions::default()
    };
    let config = VisionConfig {
        image_size,
        ..VisionConfig::siglip_small()
    };
    build_siglip(&config, &opts).unwrap()
}

#[test]
fn forced_key_split_plans_lower_and_match_the_reference_in_the_oracle() {
    // 56×56: 16 tokens, so a query block has rows enough to be combined
    // in pieces on its key blocks' tiles.
    let model = model(2, 56);
    let graph = &model.graph;
    let plan = plan_graph(
        graph,
        PlanConfig {
            tiles: 16,
            min_key_parts: 2,
            ..PlanConfig::default()
        },
    )
    .unwrap();
    let mut key_split = 0;
    let mut spread = 0;
    let mut check = |p: &ipuc_core::plan::PlannedOp| {
        let Some(plan) = &p.plan else { return };
        let PlanFamily::Attention { key_parts, .. } = plan.family else {
            return;
        };
        assert!(key_parts >= 2);
        key_split += 1;
        let mut combined_rows = 0;
        let mut combining_tiles = Vec::new();
        for stage in &plan.stages {
            match stage {
                Stage::Exchange(transfers) => {
                    for t in transfers {
                        assert!(t.destinations.iter().all(|d| d.tile != t.source_tile));
                    }
                }
                Stage::Compute(calls) => {
                    for c in calls {
                        if let Kernel::AttentionCombine { q_rows, parts, .. } = c.kernel {
                            assert_eq!(parts, key_parts);
                            combined_rows += q_rows;
                            combining_tiles.push(c.tile);
                        }
                    }
                }
            }
        }
        assert_eq!(
            combined_rows, plan.output.rows.len,
            "every row combined once"
        );
        combining_tiles.dedup();
        let query_blocks = plan.output.rows.outer;
        if combining_tiles.len() as u32 == query_blocks * key_parts {
            spread += 1;
        }
    };
    for p in &plan.ops {
        check(p);
        if let Some(body) = &p.repeat {
            body.ops.iter().for_each(&mut check);
        }
    }
    // The encoder body's attention and the pooling head's; the body's
    // query blocks have rows enough for every key block's tile to combine
    // a piece (the head's one query is combined on one tile).
    assert_eq!(key_split, 2);
    assert_eq!(spread, 1);
    let schedule = lower(graph, &plan).unwrap();
    let mut kernels = (0, 0);
    schedule.visit(|step, _| {
        if let Step::Compute(c) = step {
            for call in &c.calls {
                match call.kernel {
                    Kernel::AttentionPartial { .. } => kernels.0 += 1,
                    Kernel::AttentionCombine { .. } => kernels.1 += 1,
                    Kernel::Attention { .. } => panic!("unsplit attention planned"),
                    _ => {}
                }
            }
        }
    });
    assert!(kernels.0 > kernels.1 && kernels.1 > 0, "{kernels:?}");

    let specs: Vec<WeightSpec> = model
        .parameters
        .iter()
        .map(|p| WeightSpec::single(p.name.clone(), p.shape.clone()))
        .collect();
    let weights = random_weights(7, &specs);
    let shape = graph.ty(model.pixel_values).unwrap().shape.dims().to_vec();
    let pixels = random_tensor(11, "pixel_values", &shape);
    let want = Reference::new(graph, &weights, Numerics::Fp32)
        .unwrap()
        .run(&[("pixel_values", Tensor::new(shape.clone(), pixels.clone()))])
        .unwrap();
    let mut ex = Executor::new(&schedule, |name| {
        if name == "pixel_values" {
            Some(pixels.clone())
        } else {
            weights.get(name).map(|t| t.data.clone())
        }
    })
    .unwrap();
    ex.run().unwrap();
    let got = ex.outputs().unwrap();
    for (name, w) in &want {
        let err = got[name]
            .iter()
            .zip(w.data.iter())
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        let scale = w.data.iter().map(|v| v.abs()).fold(0f32, f32::max);
        assert!(err <= 1e-3 * scale.max(1.0), "{name}: max abs error {err}");
    }
}

#[test]
fn forced_key_split_runs_on_the_simulator_and_passes() {
    // 16 tokens: the body's pieces are combined on every key block's tile.
    let model = model(2, 56);
    let weights = weights_for(&model, &WeightSource::Random { seed: 7 }).unwrap();
    let opts = CompileOptions {
        beam_width: 8,
        tiles: 16,
        name: "siglip-small x2 key-split".into(),
        min_key_parts: 2,
        ..CompileOptions::default()
    };
    let compiled = compile(&model.graph, &kernel_abi(), &opts).unwrap();
    let names: Vec<&str> = compiled
        .package
        .kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    assert!(names.contains(&"attention_partial") && names.contains(&"attention_combine"));
    let mut calls = (0, 0);
    let mut values_transposed = (0, 0);
    compiled.schedule.visit(|step, _| {
        if let Step::Compute(c) = step {
            for call in &c.calls {
                match call.kernel {
                    Kernel::AttentionPartial {
                        values_transposed: t,
                        ..
                    } => {
                        calls.0 += 1;
                        values_transposed.0 += usize::from(t);
                    }
                    Kernel::AttentionCombine { .. } => calls.1 += 1,
                    Kernel::Transpose { .. } => values_transposed.1 += 1,
                    _ => {}
                }
            }
        }
    });
    // The body's key blocks are shared by query blocks enough to
    // transpose their values once, a piece per tile; the pooling head's
    // single query block transposes its own.
    assert!(values_transposed.0 > 0, "{values_transposed:?}");
    assert_eq!(values_transposed.0, values_transposed.1);
    // The body combines on every key block's tile (as many combines as
    // partials); one combining tile per query block would make at most
    // half as many combines as partials.
    assert!(2 * calls.1 > calls.0, "partials, combines: {calls:?}");
    let pixels = PixelValues {
        shape: [1, 3, 56, 56],
        data: (0..3 * 56 * 56)
            .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
            .collect(),
    };
    let inputs = device_inputs(&pixels);
    let out = SimDevice::for_package(&compiled.package)
        .unwrap()
        .run(&compiled.package, &inputs, &weights)
        .unwrap();
    let reference = run_siglip(&model, &weights, &pixels, (Numerics::Fp32, &[]), None).unwrap();
    let v = compare(&out, &reference, 0.2, 0.05).unwrap();
    assert!(v.pass, "{:?}", v.outputs);
    for (name, max_abs, cosine, _) in &v.outputs {
        assert!(*max_abs < 0.05, "{name}: max abs error {max_abs}");
        assert!(*cosine > 0.999, "{name}: cosine {cosine}");
    }

    // The package records both attentions' key splits; followed, the
    // device-numerics reference is the simulator's result to the bit.
    let splits = &compiled.description.k_splits;
    let attentions = splits
        .iter()
        .filter(|s| {
            let op = model.graph.op(OpId::new(s.op));
            op.is_some_and(|o| matches!(o.kind(), OpKind::Attention { .. }))
        })
        .count();
    assert_eq!(attentions, 2, "{splits:?}");
    let max_abs = |numerics_splits: &[KSplit]| {
        let device = run_siglip(
            &model,
            &weights,
            &pixels,
            (Numerics::Device, numerics_splits),
            None,
        )
        .unwrap();
        let v = compare(&out, &device, 0.2, 0.05).unwrap();
        v.outputs.iter().map(|o| o.1).fold(0f32, f32::max)
    };
    assert_eq!(max_abs(splits), 0.0);
    // One softmax over all keys rounds differently: the splits matter.
    assert!(max_abs(&[]) > 0.0);
}
