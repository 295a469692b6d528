//! Hand-checked graphs through the whole pipeline (plan → lower → place →
//! emit → package → simulator), independent of SigLIP and of the reference
//! interpreter: every input is a small integer (or half-integer) so each
//! product and sum is exact in FP16, and the expected outputs below were
//! worked out by hand (and re-checked with a calculator), not by ipuc.

use std::collections::BTreeMap;

use ipuc::compile::{compile, CompileOptions};
use ipuc::device::simulated::{kernel_abi, SimDevice};
use ipuc::weights::{HostTensor, Weights};
use ipuc_core::ir::{DType, Graph, GraphBuilder, TensorType};

const M: usize = 4;

/// `x[m][k] = (3m + 5k) mod 7 − 3`.
fn x_values(k_dim: usize) -> Vec<f32> {
    (0..M)
        .flat_map(|m| (0..k_dim).map(move |k| ((m * 3 + k * 5) % 7) as f32 - 3.0))
        .collect()
}

/// Linear weight `[n, k]` (PyTorch layout): `(2n + k + shift) mod 5 − 2`.
fn w_values(n_dim: usize, k_dim: usize, shift: usize) -> Vec<f32> {
    (0..n_dim)
        .flat_map(|n| (0..k_dim).map(move |k| ((n * 2 + k + shift) % 5) as f32 - 2.0))
        .collect()
}

/// Bias `n/2 − 2 + offset`.
fn b_values(n_dim: usize, offset: f32) -> Vec<f32> {
    (0..n_dim).map(|n| n as f32 * 0.5 - 2.0 + offset).collect()
}

fn tensor(shape: &[usize], data: Vec<f32>) -> HostTensor {
    HostTensor {
        shape: shape.to_vec(),
        data,
    }
}

fn run(graph: &Graph, tiles: u32, weights: Weights, x: HostTensor) -> Vec<f32> {
    let options = CompileOptions {
        beam_width: 8,
        tiles,
        name: "hand-checked".into(),
        ..CompileOptions::default()
    };
    let compiled = compile(graph, &kernel_abi(), &options).unwrap();
    let inputs = BTreeMap::from([("x".to_string(), x)]);
    let out = SimDevice::for_package(&compiled.package)
        .unwrap()
        .run(&compiled.package, &inputs, &weights)
        .unwrap();
    assert!(out.profile.cycles > 0, "the simulator charged no cycles");
    out.outputs["y"].data.clone()
}

/// `y = x · wᵀ + b` with `x [4,16]`, `w [8,16]`, `b [8]`, all FP16.
fn gemm_add() -> Graph {
    let mut g = GraphBuilder::new();
    let x = g.input("x", TensorType::new(DType::F16, [M, 16])).unwrap();
    let w = g
        .parameter("w", TensorType::new(DType::F16, [8, 16]))
        .unwrap();
    let b = g.parameter("b", TensorType::new(DType::F16, [8])).unwrap();
    let y = g.matmul_transposed(x, w, DType::F16).unwrap();
    let y = g.add(y, b).unwrap();
    g.output("y", y).unwrap();
    g.finish().unwrap()
}

#[rustfmt::skip]
const GEMM_ADD_EXPECTED: [f32; M * 8] = [
    -3.0,  0.5, -11.0,  -2.5,  11.0, -0.5,  3.0, -8.5,
    12.0, -6.5,  -5.0,   1.5,  -7.0, 14.5, -4.0, -2.5,
    -1.0,  7.5,   1.0, -15.5,   3.0,  1.5, 10.0,  3.5,
     0.0,  7.5,   0.0,   2.5, -15.0,  2.5, 10.0,  2.5,
];

#[test]
fn gemm_plus_bias_gives_the_hand_computed_values() {
    for tiles in [1, 4, 16] {
        let weights = Weights::from_map(BTreeMap::from([
            ("w".to_string(), tensor(&[8, 16], w_values(8, 16, 0))),
            ("b".to_string(), tensor(&[8], b_values(8, 0.0))),
        ]));
        let y = run(&gemm_add(), tiles, weights, tensor(&[M, 16], x_values(16)));
        assert_eq!(y, GEMM_ADD_EXPECTED, "on {tiles} tile(s)");
    }
}

/// A two-iteration Repeat: `h ← h · W_iᵀ + b_i` with distinct per-layer
/// parameters (iterated sequences) and the carried `h`.
fn repeated_gemm_add() -> Graph {
    let mut g = GraphBuilder::new();
    let x = g.input("x", TensorType::new(DType::F16, [M, 8])).unwrap();
    let mut ws = Vec::new();
    let mut bs = Vec::new();
    for layer in 0..2 {
        ws.push(
            g.parameter(
                &format!("layers.{layer}.w"),
                TensorType::new(DType::F16, [8, 8]),
            )
            .unwrap(),
        );
        bs.push(
            g.parameter(
                &format!("layers.{layer}.b"),
                TensorType::new(DType::F16, [8]),
            )
            .unwrap(),
        );
    }
    let body = g.begin_repeat(2).unwrap();
    let h = g.carried(&body, x).unwrap();
    let w = g.iterated(&body, &ws).unwrap();
    let b = g.iterated(&body, &bs).unwrap();
    let y = g.matmul_transposed(h, w, DType::F16).unwrap();
    let y = g.add(y, b).unwrap();
    let out = g.end_repeat(&body, &[y]).unwrap();
    g.output("y", out[0]).unwrap();
    g.finish().unwrap()
}

/// `h` after layer 0 is `[[5, -5.5, -1, -11.5, 8, 7.5, -3, 1.5], …]`; the
/// output is `h` after layer 1.
#[rustfmt::skip]
const REPEAT_EXPECTED: [f32; M * 8] = [
    -52.0,   5.5, -12.0,   8.0,  50.5, -49.5,   8.0,  -9.5,
     10.0,  56.5, -37.0, -38.0,   8.5,  12.5,  59.0, -34.5,
      2.0,  -4.5,  -6.0,  70.0, -61.5,   4.5,  -2.0,  -3.5,
     36.0, -30.5,  18.0,  24.0, -47.5,  38.5, -28.0,  20.5,
];

#[test]
fn a_repeat_with_per_layer_parameters_gives_the_hand_computed_values() {
    for tiles in [1, 4] {
        let mut map = BTreeMap::new();
        for layer in 0..2 {
            map.insert(
                format!("layers.{layer}.w"),
                tensor(&[8, 8], w_values(8, 8, layer)),
            );
            map.insert(
                format!("layers.{layer}.b"),
                tensor(&[8], b_values(8, layer as f32)),
            );
        }
        let y = run(
            &repeated_gemm_add(),
            tiles,
            Weights::from_map(map),
            tensor(&[M, 8], x_values(8)),
        );
        assert_eq!(y, REPEAT_EXPECTED, "on {tiles} tile(s)");
    }
}
