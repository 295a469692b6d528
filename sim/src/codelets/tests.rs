//! Every kernel through the register ABI against a straightforward loop,
//! FP8/FP16 cast behaviour, ABI error reports and the registry.

use ipuc_target::ipu21::rates::RateEnd;
use ipuc_target::ipu21::timing::AmpMode;
use ipuc_target::ipu21::topology::PhysicalTile;
use ipuc_target::kernel::Kernel;
use ipuc_target::kernel::{encode, encode_dtype, GemmEpilogue, KernelArgs, KernelSymbol};
use ipuc_target::numeric::{round_to_f16, F8Format, Fp8};
use ipuc_target::numeric::{Activation, DType};

use super::elements::{decode, encode as encode_elements};
use super::*;

fn phys(id: u32) -> PhysicalTile {
    PhysicalTile::new(id).unwrap()
}
use crate::{OperandFault, OperandRule, TileMemory};

/// A tile with a bump allocator for operands.
struct Bench {
    mem: TileMemory,
    next: u32,
    regs: [u32; 16],
}

impl Bench {
    fn new() -> Self {
        Self {
            mem: TileMemory::new(),
            next: 0x80000,
            regs: [0; 16],
        }
    }

    fn alloc(&mut self, bytes: usize) -> u32 {
        let a = self.next;
        self.next += (bytes as u32).div_ceil(32) * 32 + 32;
        a
    }

    /// Moves the allocator to the next 32 KiB interleaved element, so an
    /// AMP output does not share the left stream's element (§2.10 rule 6).
    fn next_element(&mut self) {
        self.next = self.next.next_multiple_of(0x8000);
    }

    /// Stores `values` as `d`; returns the address.
    fn put(&mut self, values: &[f32], d: DType) -> u32 {
        let mut bytes = vec![0u8; values.len() * d.size_bytes()];
        encode_elements(values, d, &mut bytes);
        let a = self.alloc(bytes.len());
        self.mem.load(a, &bytes).unwrap();
        a
    }

    fn bytes(&self, addr: u32, len: usize) -> Vec<u8> {
        self.mem.slice(addr, len as u32).unwrap().to_vec()
    }

    fn get(&self, addr: u32, elements: usize, d: DType) -> Vec<f32> {
        decode(
            self.mem
                .slice(addr, (elements * d.size_bytes()) as u32)
                .unwrap(),
            d,
        )
    }

    /// Writes the argument block and sets `$m2`, `$m3..`, `$m8`; runs.
    fn run(
        &mut self,
        args: &KernelArgs,
        out: u32,
        inputs: &[u32],
    ) -> Result<crate::CodeletCharge, CodeletError> {
        let block: Vec<u8> = encode(args).iter().flat_map(|w| w.to_le_bytes()).collect();
        let at = self.alloc(block.len());
        self.mem.load(at, &block).unwrap();
        self.regs[2] = out;
        for (i, &a) in inputs.iter().enumerate() {
            self.regs[3 + i] = a;
        }
        self.regs[8] = at;
        run_kernel(
            args.symbol(),
            RateEnd::Chosen,
            phys(7),
            &self.regs,
            &mut self.mem,
        )
    }
}

/// Deterministic pseudo-random values in [-r, r].
fn values(n: usize, seed: u32, r: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32 * 2.0 - 1.0) * r
        })
        .collect()
}

fn rounded(v: &[f32], d: DType) -> Vec<f32> {
    let mut bytes = vec![0u8; v.len() * d.size_bytes()];
    encode_elements(v, d, &mut bytes);
    decode(&bytes, d)
}

fn assert_close(got: &[f32], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let tol = atol + rtol * w.abs();
        assert!(
            (g as f64 - w).abs() <= tol,
            "element {i}: got {g}, want {w} (tol {tol})"
        );
    }
}

#[test]
fn gemm_f16_times_scaled_fp8_weights_with_accumulate_and_bias() {
    let (m, k, n) = (5usize, 40usize, 19usize);
    let f8 = DType::f143(-4);
    let mut b = Bench::new();
    let a = rounded(&values(m * k, 1, 2.0), DType::F16);
    // Weights stored [n, k] (PyTorch layout), quantized to F143 at scale −4.
    let w = rounded(&values(n * k, 2, 1.0), f8);
    let bias = rounded(&values(n, 3, 1.0), DType::F16);
    let init = values(m * n, 4, 3.0);
    let (pa, pw, pb) = (
        b.put(&a, DType::F16),
        b.put(&w, f8),
        b.put(&bias, DType::F16),
    );
    b.next_element();
    let out = b.put(&init, DType::F32);
    let mut args = KernelArgs::new(Kernel::Gemm {
        m: m as u32,
        k: k as u32,
        n: n as u32,
        a: DType::F16,
        b: f8,
        out: DType::F32,
        b_transposed: true,
        b_interleaved: true,
    });
    args.epilogue = GemmEpilogue {
        accumulate: true,
        bias: Some(DType::F16),
    };
    let charge = b.run(&args, out, &[pa, pw, pb]).unwrap();
    assert_eq!(charge.arg_block, Some(b.regs[8]));
    let want: Vec<f64> = (0..m * n)
        .map(|idx| {
            let (i, j) = (idx / n, idx % n);
            let dot: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * w[j * k + p] as f64)
                .sum();
            init[idx] as f64 + dot + bias[j] as f64
        })
        .collect();
    assert_close(&b.get(out, m * n, DType::F32), &want, 1e-4, 1e-5);

    // Same product, row-major [k, n] weights in F16, fresh F16 output.
    let wt: Vec<f32> = (0..k * n).map(|idx| w[(idx % n) * k + idx / n]).collect();
    let pwt = b.put(&wt, DType::F16);
    let out16 = b.alloc(m * n * 2);
    let args = KernelArgs::new(Kernel::Gemm {
        m: m as u32,
        k: k as u32,
        n: n as u32,
        a: DType::F16,
        b: DType::F16,
        out: DType::F16,
        b_transposed: false,
        b_interleaved: false,
    });
    b.run(&args, out16, &[pa, pwt]).unwrap();
    let want16: Vec<f64> = (0..m * n)
        .map(|idx| {
            let (i, j) = (idx / n, idx % n);
            let dot: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * w[j * k + p] as f64)
                .sum();
            round_to_f16(dot as f32) as f64
        })
        .collect();
    // One F16 rounding of the F32 sum: within one half-ulp of the rounded exact value.
    assert_close(&b.get(out16, m * n, DType::F16), &want16, 1e-3, 1e-3);
}

#[test]
fn reduce_add_sums_k_split_partials() {
    let (len, parts) = (37usize, 4usize);
    let mut b = Bench::new();
    let p = values(len * parts, 5, 10.0);
    let pp = b.put(&p, DType::F32);
    let out = b.alloc(len * 2);
    let args = KernelArgs::new(Kernel::ReduceAdd {
        elements: len as u32,
        parts: parts as u32,
        input: DType::F32,
        out: DType::F16,
    });
    b.run(&args, out, &[pp]).unwrap();
    let want: Vec<f64> = (0..len)
        .map(|i| round_to_f16((0..parts).map(|q| p[q * len + i]).sum::<f32>()) as f64)
        .collect();
    assert_close(&b.get(out, len, DType::F16), &want, 0.0, 0.0);
}

#[test]
fn add_with_and_without_row_broadcast() {
    let (rows, cols) = (3usize, 10usize);
    let mut b = Bench::new();
    let x = rounded(&values(rows * cols, 6, 4.0), DType::F16);
    let full = rounded(&values(rows * cols, 7, 4.0), DType::F16);
    let row = rounded(&values(cols, 8, 4.0), DType::F16);
    let (px, pf, pr) = (
        b.put(&x, DType::F16),
        b.put(&full, DType::F16),
        b.put(&row, DType::F16),
    );
    for (broadcast, other, po) in [(false, &full, pf), (true, &row, pr)] {
        let out = b.alloc(rows * cols * 2);
        let args = KernelArgs::new(Kernel::Add {
            rows: rows as u32,
            cols: cols as u32,
            broadcast_rows: broadcast,
            dtype: DType::F16,
        });
        b.run(&args, out, &[px, po]).unwrap();
        let want: Vec<f64> = (0..rows * cols)
            .map(|i| {
                let y = if broadcast { other[i % cols] } else { other[i] };
                round_to_f16(x[i] + y) as f64
            })
            .collect();
        assert_close(&b.get(out, rows * cols, DType::F16), &want, 0.0, 0.0);
    }
}

#[test]
fn layer_norm_rows() {
    let (rows, cols) = (4usize, 48usize);
    let mut b = Bench::new();
    let x = rounded(&values(rows * cols, 9, 3.0), DType::F16);
    let g = values(cols, 10, 1.5);
    let be = values(cols, 11, 0.5);
    let (px, pg, pb) = (
        b.put(&x, DType::F16),
        b.put(&g, DType::F32),
        b.put(&be, DType::F32),
    );
    let out = b.alloc(rows * cols * 2);
    let args = KernelArgs::new(Kernel::LayerNorm {
        rows: rows as u32,
        cols: cols as u32,
        eps: 1e-6,
        dtype: DType::F16,
        param: DType::F32,
        out: DType::F16,
    });
    b.run(&args, out, &[px, pg, pb]).unwrap();
    let mut want = Vec::new();
    for r in 0..rows {
        let row: Vec<f64> = x[r * cols..(r + 1) * cols]
            .iter()
            .map(|&v| v as f64)
            .collect();
        let mean = row.iter().sum::<f64>() / cols as f64;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / cols as f64;
        for c in 0..cols {
            want.push((row[c] - mean) / (var + 1e-6).sqrt() * g[c] as f64 + be[c] as f64);
        }
    }
    assert_close(&b.get(out, rows * cols, DType::F16), &want, 2e-3, 2e-3);
}

#[test]
fn gelu_and_softmax() {
    let mut b = Bench::new();
    let x = rounded(&values(64, 12, 5.0), DType::F16);
    let px = b.put(&x, DType::F16);
    let out = b.alloc(128);
    b.run(
        &KernelArgs::new(Kernel::Gelu {
            elements: 64,
            dtype: DType::F16,
            out: DType::F16,
        }),
        out,
        &[px],
    )
    .unwrap();
    let want: Vec<f64> = x
        .iter()
        .map(|&v| {
            let v = v as f64;
            0.5 * v
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v.powi(3))).tanh())
        })
        .collect();
    // FP16 input: the half loop's FP16 steps and constants, within 4e-3
    // of the exact tanh GELU (docs/facts/device-numerics.md §6).
    let got = b.get(out, 64, DType::F16);
    assert_close(&got, &want, 4e-3, 4e-3);
    for (g, &v) in got.iter().zip(&x) {
        assert_eq!(*g, super::math::gelu_tanh_f16(v));
    }
    // The table the kernel reads is the steps, on every FP16 value.
    for bits in 0..=u16::MAX {
        let v = half::f16::from_bits(bits).to_f32();
        let (t, s) = (
            super::math::gelu_tanh_f16(v),
            super::math::gelu_tanh_f16_steps(v),
        );
        assert_eq!(t.to_bits(), s.to_bits(), "{bits:#06x}");
    }

    let (rows, cols) = (4usize, 16usize);
    let sm = b.alloc(128);
    b.run(
        &KernelArgs::new(Kernel::Softmax {
            rows: rows as u32,
            cols: cols as u32,
            dtype: DType::F16,
        }),
        sm,
        &[px],
    )
    .unwrap();
    let mut want = Vec::new();
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let s: f64 = row.iter().map(|&v| (v as f64).exp()).sum();
        want.extend(row.iter().map(|&v| (v as f64).exp() / s));
    }
    let got = b.get(sm, rows * cols, DType::F16);
    assert_close(&got, &want, 1e-4, 2e-3);
    for r in 0..rows {
        let s: f32 = got[r * cols..(r + 1) * cols].iter().sum();
        assert!((s - 1.0).abs() < 1e-2);
    }
}

#[test]
fn casts_round_to_nearest_even_and_fp8_saturates() {
    let mut b = Bench::new();
    // 1 + 2^-11 is a tie between 1 and 1 + 2^-10 in F16: goes to even (1.0).
    let x = [
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        70000.0,
        -0.3,
    ];
    let px = b.put(&x, DType::F32);
    let o16 = b.alloc(8);
    b.run(
        &KernelArgs::new(Kernel::Cast {
            elements: 4,
            from: DType::F32,
            to: DType::F16,
        }),
        o16,
        &[px],
    )
    .unwrap();
    let got = b.get(o16, 4, DType::F16);
    assert_eq!(got[0], 1.0);
    assert_eq!(got[1], 1.0 + 2.0 * 2f32.powi(-10));
    assert!(got[2].is_infinite());
    assert_eq!(got[3], round_to_f16(-0.3));

    // F16 → F143 at scale −4: max magnitude 15, 7.25/16 ties to even.
    let f8 = DType::f143(-4);
    let y = rounded(&[0.4375, 100.0, -100.0, 7.25 / 16.0], DType::F16);
    let py = b.put(&y, DType::F16);
    let o8 = b.alloc(4);
    b.run(
        &KernelArgs::new(Kernel::Cast {
            elements: 4,
            from: DType::F16,
            to: f8,
        }),
        o8,
        &[py],
    )
    .unwrap();
    let fmt = Fp8::new(F8Format::F143, -4).unwrap();
    let codes = b.mem.slice(o8, 4).unwrap().to_vec();
    assert_eq!(fmt.decode(codes[0]), 0.4375);
    assert_eq!(fmt.decode(codes[1]), 15.0);
    assert_eq!(fmt.decode(codes[2]), -15.0);
    assert_eq!(fmt.decode(codes[3]), 7.0 / 16.0);

    // F143 → F32 is exact.
    let o32 = b.alloc(16);
    b.run(
        &KernelArgs::new(Kernel::Cast {
            elements: 4,
            from: f8,
            to: DType::F32,
        }),
        o32,
        &[o8],
    )
    .unwrap();
    assert_eq!(b.get(o32, 4, DType::F32), [0.4375, 15.0, -15.0, 0.4375]);
}

#[test]
fn attention_head_matches_naive_softmax_attention() {
    let (qr, kv, hd) = (6usize, 11usize, 8usize);
    let scale = 1.0 / (hd as f32).sqrt();
    let mut b = Bench::new();
    let q = rounded(&values(qr * hd, 13, 2.0), DType::F16);
    let k = rounded(&values(kv * hd, 14, 2.0), DType::F16);
    let v = rounded(&values(kv * hd, 15, 2.0), DType::F16);
    let (pq, pk, pv) = (
        b.put(&q, DType::F16),
        b.put(&k, DType::F16),
        b.put(&v, DType::F16),
    );
    let scratch = b.alloc(qr * kv * 4);
    b.next_element();
    let out = b.alloc(qr * hd * 2);
    let args = KernelArgs::new(Kernel::Attention {
        q_rows: qr as u32,
        kv_rows: kv as u32,
        head_dim: hd as u32,
        scale,
        dtype: DType::F16,
    });
    b.run(&args, out, &[pq, pk, pv, scratch]).unwrap();
    let mut want = Vec::new();
    let mut want_scores = Vec::new();
    for i in 0..qr {
        let s: Vec<f64> = (0..kv)
            .map(|j| {
                (0..hd)
                    .map(|d| q[i * hd + d] as f64 * k[j * hd + d] as f64)
                    .sum::<f64>()
                    * scale as f64
            })
            .collect();
        want_scores.extend(&s);
        let mx = s.iter().cloned().fold(f64::MIN, f64::max);
        let z: f64 = s.iter().map(|x| (x - mx).exp()).sum();
        for d in 0..hd {
            want.push(
                (0..kv)
                    .map(|j| (s[j] - mx).exp() / z * v[j * hd + d] as f64)
                    .sum(),
            );
        }
    }
    // The scores are FP16 (FP16 partials, scaled in FP16): within two
    // roundings of the exact value.
    assert_close(
        &b.get(scratch, qr * kv, DType::F32),
        &want_scores,
        1e-3,
        2e-3,
    );
    assert_close(&b.get(out, qr * hd, DType::F16), &want, 3e-3, 8e-3);
}

#[test]
fn strided_copy_gathers_patch_rows() {
    // im2col-style: 3 runs of 6 bytes, source pitch 10, destination pitch 8.
    let mut b = Bench::new();
    let src: Vec<u8> = (0..30).collect();
    let ps = b.alloc(30);
    b.mem.load(ps + 1, &src).unwrap();
    let dst = b.alloc(24);
    let args = KernelArgs::new(Kernel::Copy {
        rows: 3,
        row_bytes: 6,
        src_pitch: 10,
        dst_pitch: 8,
    });
    b.run(&args, dst + 2, &[ps + 1]).unwrap();
    let got = b.mem.slice(dst, 26).unwrap();
    assert_eq!(&got[2..8], &[0, 1, 2, 3, 4, 5]);
    assert_eq!(&got[10..16], &[10, 11, 12, 13, 14, 15]);
    assert_eq!(&got[18..24], &[20, 21, 22, 23, 24, 25]);
    assert_eq!(&got[8..10], &[0, 0]);
}

#[test]
fn transpose_writes_columns_as_rows() {
    // Columns 1..4 of a 3 × 5 FP16 block become 3 rows of 3 elements.
    let mut b = Bench::new();
    let block: Vec<f32> = (0..15).map(|i| i as f32).collect();
    let src = b.put(&block, DType::F16);
    let dst = b.alloc(9 * 2);
    let args = KernelArgs::new(Kernel::Transpose {
        rows: 3,
        cols: 3,
        src_pitch: 5,
        dtype: DType::F16,
    });
    b.run(&args, dst, &[src + 2]).unwrap();
    assert_eq!(
        b.get(dst, 9, DType::F16),
        [1.0, 6.0, 11.0, 2.0, 7.0, 12.0, 3.0, 8.0, 13.0]
    );
}

/// A key-split partial given its values transposed (`head_dim × kv`, as
/// the plan's transpose stage writes them) writes the bytes it writes
/// given them as `kv × head_dim`.
#[test]
fn attention_partial_with_transposed_values_writes_the_same_bytes() {
    let (qr, kv, hd) = (5usize, 9usize, 8usize);
    let mut b = Bench::new();
    let q = rounded(&values(qr * hd, 21, 2.0), DType::F16);
    let k = rounded(&values(kv * hd, 22, 2.0), DType::F16);
    let v = rounded(&values(kv * hd, 23, 2.0), DType::F16);
    let vt: Vec<f32> = (0..hd)
        .flat_map(|d| (0..kv).map(move |j| (j, d)))
        .map(|(j, d)| v[j * hd + d])
        .collect();
    let (pq, pk, pv, pvt) = (
        b.put(&q, DType::F16),
        b.put(&k, DType::F16),
        b.put(&v, DType::F16),
        b.put(&vt, DType::F16),
    );
    let scratch = b.alloc(qr * kv * 4);
    let partial = |b: &mut Bench, values: u32, values_transposed: bool| {
        b.next_element();
        let out = b.alloc(qr * (hd + 2) * 4);
        let args = KernelArgs::new(Kernel::AttentionPartial {
            q_rows: qr as u32,
            kv_rows: kv as u32,
            head_dim: hd as u32,
            scale: 0.25,
            dtype: DType::F16,
            values_transposed,
        });
        b.run(&args, out, &[pq, pk, values, scratch]).unwrap();
        b.bytes(out, qr * (hd + 2) * 4)
    };
    let plain = partial(&mut b, pv, false);
    assert_eq!(partial(&mut b, pvt, true), plain);
    assert!(plain.iter().any(|&x| x != 0));
    // The record: `p·v` as FP16, then m and l as F32, per query row, and
    // nothing past the last record.
    let record = ipuc_target::kernel::PartialRecord::of(hd as u32, DType::F16);
    let row = record.row_bytes() as usize;
    assert_eq!(row, 2 * hd + 8);
    let logical = super::math::attention_partial(
        AmpMode::F16F16Partials,
        DType::F16,
        (qr, kv, hd),
        super::math::attention_scores(AmpMode::F16F16Partials, (qr, kv, hd), &q, &k, 0.25),
        &v,
    );
    for (rec, want) in plain.chunks(row).take(qr).zip(logical.chunks(hd + 2)) {
        for (d, w) in want[..hd].iter().enumerate() {
            let h = half::f16::from_le_bytes([rec[2 * d], rec[2 * d + 1]]);
            assert_eq!(h.to_f32(), *w);
        }
        let word = |at: usize| f32::from_le_bytes(rec[at..at + 4].try_into().unwrap());
        assert_eq!((word(2 * hd), word(2 * hd + 4)), (want[hd], want[hd + 1]));
    }
    assert!(plain[qr * row..].iter().all(|&x| x == 0));
}

fn gelu16(n: u32) -> KernelArgs {
    KernelArgs::new(Kernel::Gelu {
        elements: n,
        dtype: DType::F16,
        out: DType::F16,
    })
}

/// A LayerNorm, GELU or other activation that stores its result as FP8
/// writes exactly the bytes the same kernel in FP16 followed by a separate
/// Cast writes: the fused cast rounds to FP16 first, as the separate pass
/// reads it.
#[test]
fn fused_fp8_store_matches_kernel_then_cast() {
    let fp8 = DType::f143(0);
    let (rows, cols) = (3usize, 40usize);
    let mut b = Bench::new();
    let x = rounded(&values(rows * cols, 7, 6.0), DType::F16);
    let (g, be) = (values(cols, 8, 1.5), values(cols, 9, 0.5));
    let px = b.put(&x, DType::F16);
    let (pg, pb) = (b.put(&g, DType::F32), b.put(&be, DType::F32));
    let n = rows * cols;
    let layer_norm = |out| Kernel::LayerNorm {
        rows: rows as u32,
        cols: cols as u32,
        eps: 1e-6,
        dtype: DType::F16,
        param: DType::F32,
        out,
    };
    let gelu = |out| Kernel::Gelu {
        elements: n as u32,
        dtype: DType::F16,
        out,
    };
    let activation = |function, out| Kernel::Activation {
        elements: n as u32,
        dtype: DType::F16,
        function,
        out,
    };
    let (erf, quick) = (Activation::GeluErf, Activation::QuickGelu);
    let cases = [
        (layer_norm(DType::F16), layer_norm(fp8), vec![px, pg, pb]),
        (gelu(DType::F16), gelu(fp8), vec![px]),
        (activation(erf, DType::F16), activation(erf, fp8), vec![px]),
        (
            activation(quick, DType::F16),
            activation(quick, fp8),
            vec![px],
        ),
    ];
    for (kernel, stored, inputs) in cases {
        let wide = b.alloc(n * 2);
        b.run(&KernelArgs::new(kernel.clone()), wide, &inputs)
            .unwrap();
        let cast = b.alloc(n);
        let to_fp8 = Kernel::Cast {
            elements: n as u32,
            from: DType::F16,
            to: fp8,
        };
        b.run(&KernelArgs::new(to_fp8), cast, &[wide]).unwrap();
        let fused = b.alloc(n);
        b.run(&KernelArgs::new(stored), fused, &inputs).unwrap();
        assert_eq!(b.bytes(fused, n), b.bytes(cast, n), "{kernel:?}");
    }
}

#[test]
fn abi_errors_name_tile_kernel_and_address() {
    fn run_on_tile_1(
        symbol: KernelSymbol,
        b: &mut Bench,
    ) -> Result<crate::CodeletCharge, CodeletError> {
        run_kernel(symbol, RateEnd::Chosen, phys(1), &b.regs, &mut b.mem)
    }
    let mut b = Bench::new();
    let x = b.put(&[1.0; 8], DType::F16);

    // Operand running off the end of SRAM.
    let e = b.run(&gelu16(8), 0xE7FF8, &[x]).unwrap_err();
    assert_eq!(e.tile, phys(7));
    assert_eq!(e.kernel, "gelu_tanh");
    assert_eq!(
        e.kind,
        CodeletErrorKind::Operand(OperandFault {
            operand: "out",
            addr: 0xE7FF8,
            rule: OperandRule::OutsideSram { bytes: 16 }
        })
    );
    assert!(e
        .to_string()
        .contains("tile 7: kernel gelu_tanh: operand out at 0xe7ff8 (16 bytes) is outside SRAM"));

    // Misaligned F16 input.
    let e = b.run(&gelu16(8), 0x81000, &[x + 1]).unwrap_err();
    assert_eq!(
        e.kind,
        CodeletErrorKind::Operand(OperandFault {
            operand: "x",
            addr: x + 1,
            rule: OperandRule::Misaligned { align: 2 }
        })
    );

    // Argument block address misaligned / outside SRAM.
    b.regs[8] = 0x90002;
    let e = run_on_tile_1(KernelSymbol::GeluTanh, &mut b).unwrap_err();
    assert_eq!(
        e.kind,
        CodeletErrorKind::ArgBlockMisaligned { addr: 0x90002 }
    );
    b.regs[8] = 0x1000;
    let e = run_on_tile_1(KernelSymbol::GeluTanh, &mut b).unwrap_err();
    assert_eq!(
        e.kind,
        CodeletErrorKind::ArgBlockOutsideSram {
            addr: 0x1000,
            words: 2
        }
    );

    // Zeroed memory is not an argument block.
    b.regs[8] = 0xA0000;
    let e = run_on_tile_1(KernelSymbol::GeluTanh, &mut b).unwrap_err();
    assert!(matches!(
        e.kind,
        CodeletErrorKind::ArgBlock {
            addr: 0xA0000,
            error: ipuc_target::kernel::AbiError::BadMagic { word: 0 }
        }
    ));

    // A GELU block handed to the softmax entry.
    let block: Vec<u8> = encode(&gelu16(8))
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    b.mem.load(0xA0000, &block).unwrap();
    let e = run_on_tile_1(KernelSymbol::Softmax, &mut b).unwrap_err();
    assert!(matches!(
        e.kind,
        CodeletErrorKind::ArgBlock {
            error: ipuc_target::kernel::AbiError::WrongKernel {
                expected: 6,
                found: 5
            },
            ..
        }
    ));

    // A bad element-type word inside the block.
    let mut words = encode(&gelu16(8));
    words[3] = encode_dtype(DType::f143(0)) | 0x4000_0000;
    let block: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    b.mem.load(0xA0000, &block).unwrap();
    let e = run_on_tile_1(KernelSymbol::GeluTanh, &mut b).unwrap_err();
    assert!(matches!(
        e.kind,
        CodeletErrorKind::ArgBlock {
            error: ipuc_target::kernel::AbiError::BadDType { word_index: 3, .. },
            ..
        }
    ));
}

#[test]
fn registry_covers_every_symbol_and_rejects_unknown_names() {
    let names: Vec<&str> = registry()
        .iter()
        .map(|(s, c)| {
            assert_eq!(c.name(), s.name());
            s.name()
        })
        .collect();
    assert_eq!(
        names,
        [
            "gemm_amp",
            "reduce_add",
            "add",
            "layer_norm",
            "gelu_tanh",
            "softmax",
            "cast",
            "attention_head",
            "copy",
            "attention_partial",
            "attention_combine",
            "activation",
            "mul",
            "transpose"
        ]
    );
    let table = codelet_table([("gemm_amp", 0x4D000), ("copy", 0x4D008)], RateEnd::Chosen).unwrap();
    assert_eq!(
        table.get(0x4D000).map(|c| c.name().to_owned()),
        Some("gemm_amp".into())
    );
    assert_eq!(
        table.get(0x4D008).map(|c| c.name().to_owned()),
        Some("copy".into())
    );
    let err = codelet_table([("conv2d", 0x4D010)], RateEnd::Chosen).unwrap_err();
    assert_eq!(err.entry, 0x4D010);
    assert!(err.to_string().contains("`conv2d`"));
}

fn small_gemm(b_interleaved: bool) -> KernelArgs {
    KernelArgs::new(Kernel::Gemm {
        m: 2,
        k: 4,
        n: 4,
        a: DType::F16,
        b: DType::F16,
        out: DType::F32,
        b_transposed: false,
        b_interleaved,
    })
}

fn amp_fault(e: CodeletError) -> OperandFault {
    match e.kind {
        CodeletErrorKind::Operand(f) => f,
        other => panic!("not an operand fault: {other:?}"),
    }
}

#[test]
fn amp_operands_must_be_32_byte_aligned() {
    let mut b = Bench::new();
    let a = b.put(&[1.0; 8], DType::F16);
    let w = b.put(&[1.0; 16], DType::F16);
    // An output 8 bytes past a 32-byte boundary: F32-aligned, not AMP-aligned.
    let out = 0x9_0008;
    let e = b.run(&small_gemm(true), out, &[a, w]).unwrap_err();
    assert!(
        e.to_string()
            .contains("tile 7: kernel gemm_amp: AMP operand out at 0x90008 is not 32-byte aligned"),
        "{e}"
    );
    assert_eq!(
        amp_fault(e),
        OperandFault {
            operand: "out",
            addr: out,
            rule: OperandRule::AmpMisaligned
        }
    );
    // A left stream 16 bytes off.
    let e = b
        .run(&small_gemm(true), 0x9_0000, &[a + 16, w])
        .unwrap_err();
    assert_eq!(
        amp_fault(e),
        OperandFault {
            operand: "a",
            addr: a + 16,
            rule: OperandRule::AmpMisaligned
        }
    );
}

#[test]
fn claimed_interleaved_weights_must_be_at_an_interleaved_address() {
    let mut b = Bench::new();
    let a = b.put(&[1.0; 8], DType::F16);
    let w = 0x6_0000;
    b.mem.load(w, &[0u8; 32]).unwrap();
    let e = b.run(&small_gemm(true), 0x9_0000, &[a, w]).unwrap_err();
    assert_eq!(
        amp_fault(e),
        OperandFault {
            operand: "b",
            addr: w,
            rule: OperandRule::WeightsNotInterleaved
        }
    );
    // The same call without the claim runs, charged at the standard-memory
    // weight-feed rate.
    let standard = b.run(&small_gemm(false), 0x9_0000, &[a, w]).unwrap();
    let w2 = b.put(&[0.0; 16], DType::F16);
    let interleaved = b.run(&small_gemm(false), 0x9_0000, &[a, w2]).unwrap();
    assert_eq!(
        standard.cycles - interleaved.cycles,
        1280u64.div_ceil(4) - 1157u64.div_ceil(4)
    );
}

#[test]
fn amp_output_placement_rules_are_enforced() {
    let mut b = Bench::new();
    let a = b.put(&[1.0; 8], DType::F16);
    let w = b.put(&[1.0; 16], DType::F16);
    // Output in standard memory.
    let e = b.run(&small_gemm(true), 0x6_0000, &[a, w]).unwrap_err();
    assert_eq!(
        amp_fault(e),
        OperandFault {
            operand: "out",
            addr: 0x6_0000,
            rule: OperandRule::AmpOutputStandard
        }
    );
    // Output in the left stream's effective element (32 KiB interleaved).
    let e = b.run(&small_gemm(true), a + 0x400, &[a, w]).unwrap_err();
    let element = ipuc_target::ipu21::sram::effective_element(a);
    assert_eq!(
        amp_fault(e),
        OperandFault {
            operand: "out",
            addr: a + 0x400,
            rule: OperandRule::AmpSharesElement { left: a, element }
        }
    );
    // Another element: runs.
    b.run(&small_gemm(true), 0x9_8000, &[a, w]).unwrap();
}

/// The FP16 slice decode gives the bits `f16_bits_to_f32` gives, for every
/// one of the 65,536 encodings (NaN payloads included).
#[test]
fn f16_slice_decode_matches_the_scalar_conversion_bit_for_bit() {
    let bytes: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
    let got = super::elements::decode(&bytes, DType::F16);
    assert_eq!(got.len(), 65_536);
    for (bits, v) in (0..=u16::MAX).zip(&got) {
        let want = ipuc_target::numeric::f16_bits_to_f32(bits);
        assert_eq!(v.to_bits(), want.to_bits(), "{bits:#06x}");
    }
}

/// `UnknownKernel` and `CodeletError` (now on `thiserror`) print what their
/// hand-written `Display`s did.
#[test]
fn codelet_error_messages_are_the_hand_written_ones() {
    let u = UnknownKernel {
        name: "mystery".into(),
        entry: 0x4c100,
    };
    assert_eq!(
        u.to_string(),
        format!(
            "kernel symbol `mystery` at 0x4c100 has no native codelet (known: {})",
            KernelSymbol::ALL.map(|s| s.name()).join(", ")
        )
    );
    let e = CodeletError {
        tile: PhysicalTile::new(4).unwrap(),
        kernel: "gemm_amp",
        kind: CodeletErrorKind::ArgBlockOutsideSram {
            addr: 0x10,
            words: 3,
        },
    };
    assert_eq!(
        e.to_string(),
        "tile 4: kernel gemm_amp: argument block 0x10 (3 words) is outside SRAM"
    );
    let e = CodeletError {
        tile: PhysicalTile::new(4).unwrap(),
        kernel: "gemm_amp",
        kind: CodeletErrorKind::ArgBlockMisaligned { addr: 0x12 },
    };
    assert_eq!(
        e.to_string(),
        "tile 4: kernel gemm_amp: argument block address 0x12 ($m8) is not word aligned"
    );
}
