//! The arithmetic of key-split attention shared by the schedule oracle
//! (`lower::oracle`) and the simulator's codelet: one definition of how key
//! block partials combine, and of the values' transposition.

use alloc::vec;
use alloc::vec::Vec;

/// The `rows × cols` block of `m` (rows `pitch` elements apart, `pitch ≥
/// cols`) transposed: `cols` rows of `rows` elements. Values transposed
/// for `p·v` (`Kernel::AttentionPartial::values_transposed`) are this of
/// the `[keys, head_dim]` block, and `Kernel::Transpose` writes it.
/// Generic over the element so the codelet can move raw element bytes
/// (`[u8; size]`) as the oracle moves f32 values.
pub fn transposed<T: Copy + Default>(
    m: &[T],
    (rows, cols): (usize, usize),
    pitch: usize,
) -> Vec<T> {
    (0..cols)
        .flat_map(|c| (0..rows).map(move |r| r * pitch + c))
        .map(|i| m.get(i).copied().unwrap_or_default())
        .collect()
}

/// Combines `parts` partial rows `[o (head_dim), m, l]` per query row
/// (stored part-major: part `p`'s `q_rows` rows, then part `p + 1`'s) into
/// `out[i] = Σ_p e^{m_p − M}·o_p / Σ_p e^{m_p − M}·l_p` with `M = max_p m_p`
/// (`q_rows × head_dim`, F32). A row whose total weight is zero gives zeros.
pub fn combine_attention_partials(
    partials: &[f32],
    q_rows: usize,
    head_dim: usize,
    parts: usize,
) -> Vec<f32> {
    let w = head_dim + 2;
    let mut out = vec![0f32; q_rows * head_dim];
    for i in 0..q_rows {
        let row = |p: usize| partials.get((p * q_rows + i) * w..(p * q_rows + i + 1) * w);
        let m = (0..parts)
            .filter_map(|p| row(p).map(|r| r[head_dim]))
            .fold(f32::NEG_INFINITY, f32::max);
        let mut total = 0f32;
        let acc = &mut out[i * head_dim..(i + 1) * head_dim];
        for p in 0..parts {
            let Some(r) = row(p) else { continue };
            let scale = libm::expf(r[head_dim] - m);
            total += scale * r[head_dim + 1];
            for (a, o) in acc.iter_mut().zip(&r[..head_dim]) {
                *a += scale * o;
            }
        }
        if total > 0.0 {
            acc.iter_mut().for_each(|a| *a /= total);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splitting the keys in two and combining equals softmax over all keys.
    #[test]
    fn two_key_blocks_combine_to_the_full_softmax() {
        let scores = [0.5f32, -1.0, 2.0, 0.25];
        let values = [1.0f32, 2.0, 3.0, 4.0]; // head_dim 1
        let full: f32 = {
            let m = 2.0f32;
            let e: Vec<f32> = scores.iter().map(|s| libm::expf(s - m)).collect();
            e.iter().zip(&values).map(|(a, b)| a * b).sum::<f32>() / e.iter().sum::<f32>()
        };
        let partial = |s: &[f32], v: &[f32]| {
            let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = s.iter().map(|x| libm::expf(x - m)).collect();
            [e.iter().zip(v).map(|(a, b)| a * b).sum(), m, e.iter().sum()]
        };
        let mut partials = Vec::new();
        partials.extend(partial(&scores[..2], &values[..2]));
        partials.extend(partial(&scores[2..], &values[2..]));
        let out = combine_attention_partials(&partials, 1, 1, 2);
        assert!((out[0] - full).abs() < 1e-6, "{} vs {full}", out[0]);
    }
}
