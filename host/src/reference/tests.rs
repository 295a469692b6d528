//! Interpreter checks on hand-built graphs against naive f64 arithmetic.

use std::collections::BTreeMap;

use ipuc_core::ir::{DType, GraphBuilder, TensorType};

use super::{graph_flops, Numerics, Reference, Tensor};
use crate::weights::{HostTensor, Weights};

/// Deterministic pseudo-random values in [−1, 1) (SplitMix64 from
/// `rand_xoshiro`).
fn values(n: usize, salt: u64) -> Vec<f32> {
    use rand_core::{RngCore, SeedableRng};
    let mut rng = rand_xoshiro::SplitMix64::seed_from_u64(0x9E37_79B9_7F4A_7C15u64 ^ salt);
    (0..n)
        .map(|_| ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0)
        .collect()
}

fn weights(list: &[(&str, Vec<usize>, Vec<f32>)]) -> Weights {
    Weights::from_map(
        list.iter()
            .map(|(n, s, d)| {
                (
                    n.to_string(),
                    HostTensor {
                        shape: s.clone(),
                        data: d.clone(),
                    },
                )
            })
            .collect::<BTreeMap<_, _>>(),
    )
}

fn naive_ln(x: &[f64], g: &[f32], b: &[f32], eps: f64) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    x.iter()
        .zip(g.iter().zip(b))
        .map(|(v, (g, b))| (v - mean) / (var + eps).sqrt() * f64::from(*g) + f64::from(*b))
        .collect()
}

fn naive_gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
}

#[test]
fn repeat_iterates_sequences_and_carries_the_residual() {
    let (rows, d, layers) = (3, 4, 3);
    let mut b = GraphBuilder::new();
    let x = b
        .input("x", TensorType::new(DType::F32, [1, rows, d]))
        .unwrap();
    let g = b.parameter("g", TensorType::new(DType::F32, [d])).unwrap();
    let beta = b
        .parameter("beta", TensorType::new(DType::F32, [d]))
        .unwrap();
    let mut ws = Vec::new();
    let mut bs = Vec::new();
    let mut list = vec![
        (
            "g",
            vec![d],
            values(d, 1).iter().map(|v| 1.0 + 0.2 * v).collect(),
        ),
        ("beta", vec![d], values(d, 2)),
    ];
    let names: Vec<(String, String)> = (0..layers)
        .map(|i| (format!("w{i}"), format!("b{i}")))
        .collect();
    for (i, (wn, bn)) in names.iter().enumerate() {
        ws.push(
            b.parameter(wn, TensorType::new(DType::F32, [d, d]))
                .unwrap(),
        );
        bs.push(b.parameter(bn, TensorType::new(DType::F32, [d])).unwrap());
        list.push((wn.as_str(), vec![d, d], values(d * d, 10 + i as u64)));
        list.push((bn.as_str(), vec![d], values(d, 20 + i as u64)));
    }
    let body = b.begin_repeat(layers as u32).unwrap();
    let h = b.carried(&body, x).unwrap();
    let gi = b.invariant(&body, g).unwrap();
    let bi = b.invariant(&body, beta).unwrap();
    let w = b.iterated(&body, &ws).unwrap();
    let bias = b.iterated(&body, &bs).unwrap();
    let n = b.layer_norm(h, gi, bi, 1e-6).unwrap();
    let y = b.matmul_transposed(n, w, DType::F32).unwrap();
    let y = b.add(y, bias).unwrap();
    let y = b.gelu_tanh(y).unwrap();
    let next = b.add(h, y).unwrap();
    let out = b.end_repeat(&body, &[next]).unwrap();
    b.output("y", out[0]).unwrap();
    let graph = b.finish().unwrap();
    assert_eq!(graph_flops(&graph), (layers * 2 * rows * d * d) as u64);

    let wts = weights(&list);
    let input = values(rows * d, 99);
    let r = Reference::new(&graph, &wts, Numerics::Fp32).unwrap();
    let got = r
        .run(&[("x", Tensor::new(vec![1, rows, d], input.clone()))])
        .unwrap();

    let mut hs: Vec<Vec<f64>> = input
        .chunks(d)
        .map(|c| c.iter().map(|&v| f64::from(v)).collect())
        .collect();
    for i in 0..layers {
        let wv = &list[2 + 2 * i].2;
        let bv = &list[3 + 2 * i].2;
        for row in hs.iter_mut() {
            let n = naive_ln(row, &list[0].2, &list[1].2, 1e-6);
            let y: Vec<f64> = (0..d)
                .map(|o| {
                    naive_gelu(
                        (0..d).map(|k| n[k] * f64::from(wv[o * d + k])).sum::<f64>()
                            + f64::from(bv[o]),
                    )
                })
                .collect();
            for (v, y) in row.iter_mut().zip(y) {
                *v += y;
            }
        }
    }
    let want: Vec<f64> = hs.concat();
    let err = got["y"]
        .data
        .iter()
        .zip(&want)
        .map(|(a, b)| (f64::from(*a) - b).abs())
        .fold(0.0, f64::max);
    assert!(err < 1e-5, "max error {err}");
}

#[test]
fn attention_heads_patches_and_movement_ops() {
    // im2col → split heads → attention (broadcast query) → merge heads, and
    // slice/concat/transpose round trips, against direct formulas.
    let (c, s, p, heads) = (2, 4, 2, 2);
    let mut b = GraphBuilder::new();
    let img = b
        .input("img", TensorType::new(DType::F32, [1, c, s, s]))
        .unwrap();
    let cols = b.im2col_patches(img, p).unwrap(); // [1, 4, 8]
    let probe = b
        .input("probe", TensorType::new(DType::F32, [1, 1, 8]))
        .unwrap();
    let q = b.split_heads(probe, heads).unwrap(); // [1, 2, 1, 4]
    let k = b.split_heads(cols, heads).unwrap(); // [1, 2, 4, 4]
    let a = b.attention(q, k, k).unwrap(); // [1, 2, 1, 4]
    let m = b.merge_heads(a).unwrap(); // [1, 1, 8]
    b.output("cols", cols).unwrap();
    b.output("attn", m).unwrap();
    let left = b.slice(cols, 2, 0, 3).unwrap();
    let right = b.slice(cols, 2, 3, 8).unwrap();
    let joined = b.concat(&[left, right], 2).unwrap();
    let t = b.transpose(joined, &[0, 2, 1]).unwrap();
    let t = b.transpose(t, &[0, 2, 1]).unwrap();
    b.output("same", t).unwrap();
    let graph = b.finish().unwrap();

    let img_v = values(c * s * s, 5);
    let probe_v = values(8, 6);
    let no_weights = Weights::default();
    let r = Reference::new(&graph, &no_weights, Numerics::Fp32).unwrap();
    let out = r
        .run(&[
            ("img", Tensor::new(vec![1, c, s, s], img_v.clone())),
            ("probe", Tensor::new(vec![1, 1, 8], probe_v.clone())),
        ])
        .unwrap();
    // im2col: token (py, px), feature (ch, ky, kx).
    let cols = &out["cols"].data;
    for tok in 0..4 {
        let (py, px) = (tok / 2, tok % 2);
        for ch in 0..c {
            for ky in 0..p {
                for kx in 0..p {
                    let want = img_v[(ch * s + py * p + ky) * s + px * p + kx];
                    assert_eq!(cols[tok * 8 + (ch * p + ky) * p + kx], want);
                }
            }
        }
    }
    assert_eq!(out["same"].data, out["cols"].data);
    // Attention per head over the 4 tokens.
    let dh = 4;
    for h in 0..heads {
        let qh = &probe_v[h * dh..(h + 1) * dh];
        let scores: Vec<f64> = (0..4)
            .map(|t| {
                (0..dh)
                    .map(|j| f64::from(qh[j]) * f64::from(cols[t * 8 + h * dh + j]))
                    .sum::<f64>()
                    / 2.0
            })
            .collect();
        let mx = scores.iter().cloned().fold(f64::MIN, f64::max);
        let e: Vec<f64> = scores.iter().map(|v| (v - mx).exp()).collect();
        let z: f64 = e.iter().sum();
        for j in 0..dh {
            let want: f64 = (0..4)
                .map(|t| e[t] / z * f64::from(cols[t * 8 + h * dh + j]))
                .sum();
            let got = f64::from(out["attn"].data[h * dh + j]);
            assert!(
                (got - want).abs() < 1e-6,
                "head {h} dim {j}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn device_numerics_round_parameters_and_results() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", TensorType::new(DType::F32, [1, 8])).unwrap();
    let xh = b.cast(x, DType::F16).unwrap();
    let w = b
        .parameter("w", TensorType::new(DType::f143(-4), [8, 8]))
        .unwrap();
    let y = b.matmul_transposed(xh, w, DType::F16).unwrap();
    let y = b.cast(y, DType::F32).unwrap();
    b.output("y", y).unwrap();
    let graph = b.finish().unwrap();
    let wv: Vec<f32> = values(64, 3).iter().map(|v| v * 0.3).collect();
    let xv = values(8, 4);
    let wts = weights(&[("w", vec![8, 8], wv.clone())]);
    let exact = Reference::new(&graph, &wts, Numerics::Fp32)
        .unwrap()
        .run(&[("x", Tensor::new(vec![1, 8], xv.clone()))])
        .unwrap();
    let device = Reference::new(&graph, &wts, Numerics::Device)
        .unwrap()
        .run(&[("x", Tensor::new(vec![1, 8], xv.clone()))])
        .unwrap();
    let fp8 = ipuc_target::numeric::Fp8::new(ipuc_target::numeric::F8Format::F143, -4).unwrap();
    for o in 0..8 {
        let mut e = 0f64;
        let mut d = 0f64;
        for k in 0..8 {
            let xk = f64::from(xv[k]);
            e += xk * f64::from(wv[o * 8 + k]);
            let xq = f64::from(ipuc_target::numeric::round_to_f16(xv[k]));
            d += xq
                * f64::from(fp8.quantize(wv[o * 8 + k], ipuc_target::numeric::Overflow::Saturate));
        }
        let d = f64::from(ipuc_target::numeric::round_to_f16(d as f32));
        assert!((f64::from(exact["y"].data[o]) - e).abs() < 1e-6);
        assert!(
            (f64::from(device["y"].data[o]) - d).abs() < 1e-3 * d.abs().max(1e-3),
            "{o}"
        );
    }
    assert_ne!(exact["y"].data, device["y"].data);
}

#[test]
fn missing_or_misshapen_bindings_are_errors() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", TensorType::new(DType::F32, [2, 3])).unwrap();
    let w = b
        .parameter("w", TensorType::new(DType::F32, [4, 3]))
        .unwrap();
    let y = b.matmul_transposed(x, w, DType::F32).unwrap();
    b.output("y", y).unwrap();
    let graph = b.finish().unwrap();
    let e = Reference::new(&graph, &Weights::default(), Numerics::Fp32)
        .err()
        .unwrap();
    assert!(e.to_string().contains("`w`"), "{e}");
    let wrong = weights(&[("w", vec![3, 4], vec![0.0; 12])]);
    let e = Reference::new(&graph, &wrong, Numerics::Fp32)
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("[3, 4]") && e.to_string().contains("[4, 3]"),
        "{e}"
    );
    let ok = weights(&[("w", vec![4, 3], vec![0.0; 12])]);
    let r = Reference::new(&graph, &ok, Numerics::Fp32).unwrap();
    let e = r.run(&[]).unwrap_err();
    assert!(e.to_string().contains("`x`"), "{e}");
    let e = r
        .run(&[("x", Tensor::new(vec![3, 2], vec![0.0; 6]))])
        .unwrap_err();
    assert!(e.to_string().contains("[3, 2]"), "{e}");
}

/// #28: a value FP16 cannot hold becomes an infinity in device numerics;
/// the reference names the first op whose result was not finite.
#[test]
fn the_first_non_finite_result_is_named() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", TensorType::new(DType::F32, [1, 4])).unwrap();
    let xh = b.cast(x, DType::F16).unwrap();
    let w = b
        .parameter("w", TensorType::new(DType::F16, [4, 4]))
        .unwrap();
    let y = b.matmul_transposed(xh, w, DType::F16).unwrap();
    let y = b.label(y, "blow.up").unwrap();
    let y = b.cast(y, DType::F32).unwrap();
    b.output("y", y).unwrap();
    let graph = b.finish().unwrap();
    let run = |scale: f32| {
        let wts = weights(&[("w", vec![4, 4], vec![scale; 16])]);
        let r = Reference::new(&graph, &wts, Numerics::Device).unwrap();
        r.run(&[("x", Tensor::new(vec![1, 4], vec![1000.0; 4]))])
            .unwrap();
        r.first_non_finite().cloned()
    };
    assert_eq!(run(0.001), None);
    // 4 × 1000 × 30 = 120,000 > 65,504: infinite in FP16.
    let f = run(30.0).expect("an infinity");
    assert_eq!(f.op, "blow.up");
    assert_eq!((f.element, f.value), (0, f32::INFINITY));
}
