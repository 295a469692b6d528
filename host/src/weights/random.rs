//! Deterministic random weights from a seed.
//!
//! Each tensor gets its own stream, derived from (seed, tensor name, chunk),
//! so a tensor's values do not depend on which other tensors exist (layer 3
//! of a 4-layer model equals layer 3 of the 27-layer one) or on the thread
//! count. Values are uniform with the standard deviation a trained network
//! roughly has, so activations stay O(1) through 27 layers:
//! matrices 1/√fan_in, LayerNorm γ = 1 ± 0.1, biases and β 0.02, the
//! position table 1/√width, the MAP probe 1.

use std::hash::Hasher;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::SplitMix64;
use rayon::prelude::*;

use super::{canonical_name, HostTensor, WeightSpec, Weights};

/// Elements per independently seeded chunk (the parallel work unit).
const CHUNK: usize = 1 << 16;

/// Uniform in [−1, 1) from `rng` (SplitMix64, Steele, Lea, Flood 2014, from
/// `rand_xoshiro`: seeded with the state itself, so the streams are the
/// ones the weights always had).
fn next_signed_unit(rng: &mut SplitMix64) -> f32 {
    // 24 random bits → exactly representable f32 in [0, 1).
    let u = (rng.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32);
    2.0 * u - 1.0
}

/// FNV-1a (64-bit, the `fnv` crate) over the name: a stable per-tensor
/// stream id.
fn name_hash(name: &str) -> u64 {
    let mut h = fnv::FnvHasher::default();
    h.write(name.as_bytes());
    h.finish()
}

/// (mean, standard deviation) for a parameter, from its HF name and shape.
pub fn init_stats(name: &str, shape: &[usize]) -> (f32, f32) {
    let leaf = name.rsplit('.').next().unwrap_or(name);
    // Every LayerNorm name contains "norm" (SigLIP `layer_norm1`, CLIP
    // `pre_layrnorm`, ViT `layernorm_before`, DINOv2 `norm1`).
    let is_norm = name.contains("norm") || name.contains("layrnorm");
    let width = shape.last().copied().unwrap_or(1).max(1) as f32;
    if is_norm {
        if leaf == "weight" {
            (1.0, 0.1)
        } else {
            (0.0, 0.02)
        }
    } else if leaf == "lambda1" {
        // DINOv2 LayerScale: near 1, as the init value, so 24 layers keep
        // their residual balance.
        (1.0, 0.1)
    } else if leaf == "class_embedding" || leaf == "cls_token" {
        (0.0, 1.0 / width.sqrt())
    } else if leaf.ends_with("bias") {
        (0.0, 0.02)
    } else if name.contains("position_embedding") {
        (0.0, 1.0 / width.sqrt())
    } else if leaf == "probe" {
        (0.0, 1.0)
    } else if shape.len() >= 2 {
        let fan_in: usize = shape[1..].iter().product();
        (0.0, 1.0 / (fan_in.max(1) as f32).sqrt())
    } else {
        (0.0, 0.02)
    }
}

/// Values of one checkpoint tensor `name` with `shape`.
pub fn random_tensor(seed: u64, name: &str, shape: &[usize]) -> Vec<f32> {
    let canonical = canonical_name(name);
    let (mean, std) = init_stats(canonical, shape);
    // Uniform on [−a, a] has standard deviation a/√3.
    let half_width = std * 3f32.sqrt();
    let count: usize = shape.iter().product();
    let stream = seed ^ name_hash(canonical).rotate_left(17);
    let mut data = vec![0f32; count];
    data.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, out)| {
            let mut rng = SplitMix64::seed_from_u64(
                stream.wrapping_add((chunk as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)),
            );
            for v in out {
                *v = mean + half_width * next_signed_unit(&mut rng);
            }
        });
    data
}

/// Random values for every spec. Each source tensor is drawn on its own, so
/// a fused QKV weight equals the concatenation of the unfused q, k, v.
pub fn random_weights(seed: u64, specs: &[WeightSpec]) -> Weights {
    let map = specs
        .par_iter()
        .map(|s| {
            let part = s.part_shape().unwrap_or_else(|| s.shape.clone());
            let sources = if s.part_shape().is_some() {
                s.sources.clone()
            } else {
                vec![s.name.clone()]
            };
            let resample = s.part_shape().is_some();
            let data = match sources.as_slice() {
                // A resampled position table is drawn at its stored size.
                [only] if resample => s.convert(random_tensor(seed, only, &part)),
                [only] => random_tensor(seed, only, &part),
                parts => {
                    let mut data = Vec::with_capacity(s.shape.iter().product());
                    for source in parts {
                        data.extend(random_tensor(seed, source, &part));
                    }
                    data
                }
            };
            (
                canonical_name(&s.name).to_string(),
                HostTensor {
                    shape: s.shape.clone(),
                    data,
                },
            )
        })
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    Weights::from_map(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, shape: &[usize]) -> WeightSpec {
        WeightSpec::single(name, shape.to_vec())
    }

    /// The crates reproduce the generators the weights were always drawn
    /// with (so packages and references keep their values): SplitMix64
    /// seeded 0 (Vigna's reference output) and FNV-1a 64 of "a" (the FNV
    /// test vector).
    #[test]
    fn crate_generators_match_the_reference_vectors() {
        let mut r = SplitMix64::seed_from_u64(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(name_hash("a"), 0xAF63_DC4C_8601_EC8C);
        assert_eq!(name_hash(""), 0xCBF2_9CE4_8422_2325);
        // Pinned weights (bits computed from the hand-written SplitMix64 +
        // FNV-1a the crates replaced): the same values as before.
        let w = random_tensor(7, "encoder.layers.0.mlp.fc1.weight", &[4, 4]);
        let bits: Vec<u32> = w[..4].iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, [0x3e58_5522, 0x3f37_99d6, 0x3ed7_49e9, 0xbeab_28d0]);
    }

    #[test]
    fn deterministic_and_independent_of_other_tensors() {
        let a = random_weights(7, &[spec("encoder.layers.0.mlp.fc1.weight", &[64, 32])]);
        let b = random_weights(
            7,
            &[
                spec("encoder.layers.1.mlp.fc1.weight", &[64, 32]),
                spec("encoder.layers.0.mlp.fc1.weight", &[64, 32]),
            ],
        );
        let c = random_weights(8, &[spec("encoder.layers.0.mlp.fc1.weight", &[64, 32])]);
        let name = "encoder.layers.0.mlp.fc1.weight";
        assert_eq!(a.get(name).unwrap().data, b.get(name).unwrap().data);
        assert_ne!(a.get(name).unwrap().data, c.get(name).unwrap().data);
        assert_ne!(
            b.get(name).unwrap().data,
            b.get("encoder.layers.1.mlp.fc1.weight").unwrap().data
        );
    }

    #[test]
    fn fused_sources_equal_their_parts() {
        let q = "vision_model.encoder.layers.0.self_attn.q_proj.weight";
        let k = "vision_model.encoder.layers.0.self_attn.k_proj.weight";
        let fused = WeightSpec {
            name: "vision_model.encoder.layers.0.self_attn.qkv_proj.weight".into(),
            shape: vec![8, 3],
            sources: vec![q.into(), k.into()],
            resample: None,
            pad: None,
        };
        let w = random_weights(3, &[fused, spec(q, &[4, 3]), spec(k, &[4, 3])]);
        let f = &w
            .get("encoder.layers.0.self_attn.qkv_proj.weight")
            .unwrap()
            .data;
        assert_eq!(&f[..12], &w.get(q).unwrap().data[..]);
        assert_eq!(&f[12..], &w.get(k).unwrap().data[..]);
    }

    #[test]
    fn statistics_follow_the_init_rules() {
        let w = random_tensor(1, "encoder.layers.0.self_attn.q_proj.weight", &[256, 1024]);
        let n = w.len() as f64;
        let mean = w.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let var = w
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / n;
        assert!(mean.abs() < 1e-3, "{mean}");
        assert!((var.sqrt() - 1.0 / 32.0).abs() < 1e-3, "{}", var.sqrt());
        let g = random_tensor(1, "vision_model.post_layernorm.weight", &[4096]);
        assert!(g
            .iter()
            .all(|&v| (v - 1.0).abs() <= 0.1 * 3f32.sqrt() + 1e-6));
    }
}
