//! Host f32 ↔ binding element bytes (F32, F16, IPU FP8 with scale).

use anyhow::{bail, Result};
use rayon::prelude::*;

use ipuc_sim::codelets::elements::encode_fp8;
use ipuc_target::numeric::{f16_bits_to_f32, f32_to_f16_bits, F8Format, Fp8, Overflow};
use ipuc_target::package::DType;

fn fp8(dtype: DType, scale: i8) -> Result<Option<Fp8>> {
    let format = match dtype {
        DType::F8E4M3 => F8Format::F143,
        DType::F8E5M2 => F8Format::F152,
        _ => return Ok(None),
    };
    match Fp8::new(format, scale) {
        Ok(f) => Ok(Some(f)),
        Err(_) => bail!("FP8 scale {scale} is out of range"),
    }
}

/// Encodes `values` as `dtype` little-endian bytes (FP8 saturates like the
/// device's weight conversion).
pub fn encode_elements(values: &[f32], dtype: DType, scale: i8) -> Result<Vec<u8>> {
    Ok(match dtype {
        DType::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DType::F16 => values
            .iter()
            .flat_map(|&v| f32_to_f16_bits(v).to_le_bytes())
            .collect(),
        DType::F8E4M3 | DType::F8E5M2 => {
            let f = fp8(dtype, scale)?.expect("FP8 dtype");
            // Weight tensors run to millions of elements: encode them in
            // parallel, a chunk at a time in vector lanes.
            let mut out = vec![0u8; values.len()];
            out.par_chunks_mut(1 << 14)
                .zip(values.par_chunks(1 << 14))
                .for_each(|(o, v)| encode_fp8(f, v, o, Overflow::Saturate));
            out
        }
        other => bail!("bindings of dtype {other:?} are not supported"),
    })
}

/// Decodes `dtype` little-endian bytes to f32.
pub fn decode_elements(bytes: &[u8], dtype: DType, scale: i8) -> Result<Vec<f32>> {
    Ok(match dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|c| f16_bits_to_f32(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
        DType::F8E4M3 | DType::F8E5M2 => {
            let f = fp8(dtype, scale)?.expect("FP8 dtype");
            bytes.iter().map(|&b| f.decode(b)).collect()
        }
        other => bail!("bindings of dtype {other:?} are not supported"),
    })
}
