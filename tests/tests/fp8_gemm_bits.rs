//! An FP8 × FP8 GEMM into FP16 partials gives the same bits on the
//! simulator (the codelet, after planning, lowering, placement and the
//! argument block) as in the device-numerics reference: the contract that
//! keeps `--reference-run` a faithful PASS criterion for FP8 GEMMs.

use std::collections::BTreeMap;

use ipuc::compile::{compile, CompileOptions};
use ipuc::device::simulated::{kernel_abi, SimDevice};
use ipuc::reference::{Numerics, Reference, Tensor};
use ipuc::weights::{HostTensor, Weights};
use ipuc_core::description::KSplit;
use ipuc_core::ir::{DType, Graph, GraphBuilder, TensorType};

const M: usize = 12;
/// Three 32-K micro-groups: the partials are rounded to FP16 twice on the way.
const K: usize = 96;
const N: usize = 32;

/// `y = f8(x) · wᵀ` with `x` FP16, `w` F143 at scale −4, FP16 out.
fn fp8_gemm() -> Graph {
    fp8_gemm_of(M, K, N)
}

fn fp8_gemm_of(m: usize, k: usize, n: usize) -> Graph {
    let mut g = GraphBuilder::new();
    let x = g.input("x", TensorType::new(DType::F16, [m, k])).unwrap();
    let w = g
        .parameter("w", TensorType::new(DType::f143(-4), [n, k]))
        .unwrap();
    let x8 = g.cast(x, DType::f143(0)).unwrap();
    let y = g.matmul_transposed(x8, w, DType::F16).unwrap();
    let y = g.cast(y, DType::F32).unwrap();
    g.output("y", y).unwrap();
    g.finish().unwrap()
}

/// Values spread over several binades so products and partials need rounding.
fn values(len: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let v = ((i * 7919 + seed * 104_729) % 1013) as f32 / 1013.0 - 0.5;
            v * scale * (1.0 + (i % 5) as f32)
        })
        .collect()
}

/// Compiles `graph` for `tiles` tiles and runs it on input `x`: the
/// package's K splits and output `y`.
fn compile_and_run(
    graph: &Graph,
    tiles: u32,
    (shape, data): (Vec<usize>, Vec<f32>),
    weights: &Weights,
) -> (Vec<KSplit>, Vec<f32>) {
    let compiled = compile(
        graph,
        &kernel_abi(),
        &CompileOptions {
            beam_width: 4,
            tiles,
            name: format!("fp8-gemm on {tiles} tiles"),
            ..CompileOptions::default()
        },
    )
    .unwrap();
    let inputs = BTreeMap::from([("x".to_string(), HostTensor { shape, data })]);
    let mut out = SimDevice::for_package(&compiled.package)
        .unwrap()
        .run(&compiled.package, &inputs, weights)
        .unwrap();
    let y = out.outputs.remove("y").unwrap().data;
    (compiled.description.k_splits.clone(), y)
}

#[test]
fn device_and_reference_agree_bit_for_bit() {
    let graph = fp8_gemm();
    let w = HostTensor {
        shape: vec![N, K],
        data: values(N * K, 1, 0.6),
    };
    let x = values(M * K, 2, 7.0);
    let weights = Weights::from_map(BTreeMap::from([("w".to_string(), w)]));
    let reference = Reference::new(&graph, &weights, Numerics::Device).unwrap();
    let want = reference
        .run(&[("x", Tensor::new(vec![M, K], x.clone()))])
        .unwrap()["y"]
        .data
        .clone();
    // One tile: the whole K on one AMP, the order the reference uses.
    let (_, got) = compile_and_run(&graph, 1, (vec![M, K], x.clone()), &weights);
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
    // And the FP16 partials mattered: FP32 accumulation of the same FP8
    // operands gives different values.
    let fp32 = Reference::new(&graph, &weights, Numerics::Fp32).unwrap();
    let exact = fp32.run(&[("x", Tensor::new(vec![M, K], x))]).unwrap()["y"]
        .data
        .clone();
    assert_ne!(bits(&got), bits(&exact));
}

/// A K-split plan rounds each part's FP16 partials apart and sums the
/// parts in F32: the reference, told the package's K splits, gives the
/// same bits; without them (one sequence over K) it does not.
#[test]
fn a_k_split_product_agrees_with_the_reference_following_the_package() {
    // Four rows and one column group use 4 tiles; K = 2048 makes a K split
    // across the other 12 worth its reduction.
    let (m, k, n) = (4, 2048, 16);
    let graph = fp8_gemm_of(m, k, n);
    let w = HostTensor {
        shape: vec![n, k],
        data: values(n * k, 3, 0.6),
    };
    let x = values(m * k, 4, 7.0);
    let weights = Weights::from_map(BTreeMap::from([("w".to_string(), w)]));
    let (splits, got) = compile_and_run(&graph, 16, (vec![m, k], x.clone()), &weights);
    assert_eq!(splits.len(), 1, "{splits:?}");
    assert!(splits[0].parts > 1 && splits[0].k == k as u32);
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    let run = |splits| {
        Reference::new(&graph, &weights, Numerics::Device)
            .unwrap()
            .with_k_splits(splits)
            .unwrap()
            .run(&[("x", Tensor::new(vec![m, k], x.clone()))])
            .unwrap()["y"]
            .data
            .clone()
    };
    assert_eq!(bits(&got), bits(&run(&splits)));
    assert_ne!(bits(&got), bits(&run(&[])));
}
