//! Position-table interpolation for an image size other than the one a
//! table was trained for (`--image-size`), as transformers does it with
//! `interpolate_pos_encoding=True` (DINOv2 on every forward). One call
//! for every family: `SiglipVisionEmbeddings`, `CLIPVisionEmbeddings`,
//! `ViTEmbeddings` and `Dinov2Embeddings.interpolate_pos_encoding`
//! (transformers 5.24 and 5.25) all keep the class row (SigLIP has none),
//! reshape the `g×g` patch rows to a grid and resize it to `n×n` with
//! `F.interpolate(size=(n, n), mode="bicubic", align_corners=False)` in
//! f32 — an explicit size (so the scale is `g/n`), no antialiasing. When
//! `g == n` they return the table unchanged.
//!
//! PyTorch's CPU bicubic (ATen `UpSampleKernel.cpp`, `HelperInterpCubic`):
//! per output index `i`, source position `x = (in/out)·(i + 0.5) − 0.5`,
//! `x0 = min(floor(x), in − 1)`, `t = clamp(x − x0, 0, 1)`, Keys' cubic
//! convolution weights with `A = −0.75` at `x0 − 1 … x0 + 2`, indices
//! clamped to the edge; the 2-D result is `Σ_y w_y · Σ_x w_x · in[y][x]`.

/// Keys' cubic convolution coefficient PyTorch uses.
const A: f32 = -0.75;

fn cubic_near(x: f32) -> f32 {
    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
}

fn cubic_far(x: f32) -> f32 {
    ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A
}

/// For each of `out` outputs: four (clamped source index, weight) pairs.
fn taps(input: usize, out: usize) -> Vec<[(usize, f32); 4]> {
    let scale = input as f32 / out as f32;
    let last = input as i64 - 1;
    (0..out)
        .map(|i| {
            let real = scale * (i as f32 + 0.5) - 0.5;
            let x0 = (real.floor() as i64).min(last);
            let t = (real - x0 as f32).clamp(0.0, 1.0);
            let w = [
                cubic_far(t + 1.0),
                cubic_near(t),
                cubic_near(1.0 - t),
                cubic_far(2.0 - t),
            ];
            let mut taps = [(0usize, 0f32); 4];
            for (j, tap) in taps.iter_mut().enumerate() {
                let index = (x0 + j as i64 - 1).clamp(0, last) as usize;
                *tap = (index, w[j]);
            }
            taps
        })
        .collect()
}

/// Resize a `[class_rows + from², width]` position table (the class row
/// first when `class_rows` is 1, then the patch rows row-major) to
/// `[class_rows + to², width]`.
///
/// `table.len()` must be `(class_rows + from²)·width`; `from`, `to` ≥ 1.
pub fn interpolate_positions(
    table: &[f32],
    width: usize,
    class_rows: usize,
    (from, to): (usize, usize),
) -> Vec<f32> {
    if from == to {
        return table.to_vec();
    }
    let mut out = Vec::with_capacity((class_rows + to * to) * width);
    out.extend_from_slice(&table[..class_rows * width]);
    let patch = |y: usize, x: usize, c: usize| table[(class_rows + y * from + x) * width + c];
    let taps = taps(from, to);
    for ty in &taps {
        for tx in &taps {
            for c in 0..width {
                let mut acc = 0f32;
                for &(sy, wy) in ty {
                    let mut row = 0f32;
                    for &(sx, wx) in tx {
                        row += patch(sy, sx, c) * wx;
                    }
                    acc += row * wy;
                }
                out.push(acc);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_size_is_the_identity_and_constants_stay_constant() {
        let t: Vec<f32> = (0..10 * 2).map(|v| v as f32).collect();
        assert_eq!(interpolate_positions(&t, 2, 1, (3, 3)), t);
        // Bicubic weights sum to 1, so a constant grid stays constant.
        let mut c = vec![7.0f32; (1 + 16) * 3];
        c[0] = -1.0;
        let r = interpolate_positions(&c, 3, 1, (4, 3));
        assert_eq!(r.len(), 10 * 3);
        assert_eq!(r[0], -1.0);
        assert!(r[3..].iter().all(|&v| (v - 7.0).abs() < 1e-5), "{r:?}");
    }

    #[test]
    fn upsampling_a_ramp_matches_torch() {
        // torch.nn.functional.interpolate(torch.tensor([[0.,1.],[2.,3.]])[None,None],
        //   size=(3,3), mode="bicubic", align_corners=False)[0,0,0] with
        // torch 2.15 (the edge clamping makes it overshoot the ramp).
        let t = [9.0f32, 0.0, 1.0, 2.0, 3.0];
        let r = interpolate_positions(&t, 1, 1, (2, 3));
        assert_eq!(r[0], 9.0);
        let want = [-0.260_416_8f32, 0.326_388_96, 0.913_194_4];
        for (got, want) in r[1..4].iter().zip(want) {
            assert!((got - want).abs() < 1e-5, "{r:?}");
        }
        // SigLIP's table has no class row: the same grid, nothing kept.
        let s = interpolate_positions(&t[1..], 1, 0, (2, 3));
        assert_eq!(s, r[1..]);
    }
}
