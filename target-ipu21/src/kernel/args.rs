//! Argument-block codec. Field layouts after the two header words
//! (`crate::ipu21::kernel_abi`):
//!
//! | Kernel | Words 2.. |
//! |---|---|
//! | `gemm_amp` | m, k, n, a type, b type, out type, flags (bit 0 b transposed `[n,k]`, bit 1 b interleaved, bit 2 accumulate, bit 3 bias), bias type (0 without bias) |
//! | `reduce_add` | elements, parts, input type, out type |
//! | `add` | rows, cols, flags (bit 0 broadcast `b` row), type |
//! | `layer_norm` | rows, cols, eps (f32 bits), x/out type, gamma/beta type |
//! | `gelu_tanh` | elements, type, out type |
//! | `softmax` | rows, cols, type |
//! | `cast` | elements, from type, to type |
//! | `attention_head` | q rows, kv rows, head dim, scale (f32 bits), type |
//! | `copy` | rows, row bytes, source pitch, destination pitch |
//! | `attention_partial` | q rows, kv rows, head dim, scale (f32 bits), type |
//! | `attention_combine` | q rows, head dim, parts, out type |
//! | `activation` | elements, type, function code (`ir::Activation::code`), out type |
//! | `mul` | rows, cols, flags (bit 0 broadcast `b` row), type |

use alloc::vec::Vec;

use super::error::AbiError;
use super::Kernel;
use super::{GemmEpilogue, KernelArgs, KernelSymbol};
use crate::ipu21::kernel_abi::{
    ARG_BLOCK_HEADER_WORDS, ARG_BLOCK_MAGIC, ARG_BLOCK_MAGIC_MASK, DTYPE_F143, DTYPE_F152,
    DTYPE_F16, DTYPE_F32,
};
use crate::numeric::{Activation, DType};
use crate::numeric::{F8Format, SCALE_MAX, SCALE_MIN};

const GEMM_B_TRANSPOSED: u32 = 1 << 0;
const GEMM_B_INTERLEAVED: u32 = 1 << 1;
const GEMM_ACCUMULATE: u32 = 1 << 2;
const GEMM_BIAS: u32 = 1 << 3;
const ADD_BROADCAST: u32 = 1 << 0;
const ATTENTION_VALUES_TRANSPOSED: u32 = 1 << 0;

/// One element-type word.
pub fn encode_dtype(d: DType) -> u32 {
    match d {
        DType::F32 => DTYPE_F32,
        DType::F16 => DTYPE_F16,
        DType::F8 { format, scale } => {
            let tag = match format {
                F8Format::F143 => DTYPE_F143,
                F8Format::F152 => DTYPE_F152,
            };
            tag | (u32::from(scale as u8) << 8)
        }
    }
}

/// Decodes an element-type word (`None` if invalid).
pub fn decode_dtype(word: u32) -> Option<DType> {
    let scale = (word >> 8) as u8 as i8;
    if word >> 16 != 0 {
        return None;
    }
    let fp8 = |format| {
        (SCALE_MIN..=SCALE_MAX)
            .contains(&scale)
            .then_some(DType::F8 { format, scale })
    };
    match word & 0xFF {
        DTYPE_F32 if scale == 0 => Some(DType::F32),
        DTYPE_F16 if scale == 0 => Some(DType::F16),
        DTYPE_F143 => fp8(F8Format::F143),
        DTYPE_F152 => fp8(F8Format::F152),
        _ => None,
    }
}

/// Argument-block words of a call.
pub fn encode(args: &KernelArgs) -> Vec<u32> {
    let d = encode_dtype;
    let body: Vec<u32> = match args.kernel {
        Kernel::Gemm {
            m,
            k,
            n,
            a,
            b,
            out,
            b_transposed,
            b_interleaved,
        } => {
            let e = args.epilogue;
            let flags = (u32::from(b_transposed) * GEMM_B_TRANSPOSED)
                | (u32::from(b_interleaved) * GEMM_B_INTERLEAVED)
                | (u32::from(e.accumulate) * GEMM_ACCUMULATE)
                | (u32::from(e.bias.is_some()) * GEMM_BIAS);
            let bias = e.bias.map_or(0, d);
            alloc::vec![m, k, n, d(a), d(b), d(out), flags, bias]
        }
        Kernel::ReduceAdd {
            elements,
            parts,
            input,
            out,
        } => alloc::vec![elements, parts, d(input), d(out)],
        // Add and Mul share one layout (the symbol tells them apart).
        Kernel::Add {
            rows,
            cols,
            broadcast_rows,
            dtype,
        }
        | Kernel::Mul {
            rows,
            cols,
            broadcast_rows,
            dtype,
        } => alloc::vec![
            rows,
            cols,
            u32::from(broadcast_rows) * ADD_BROADCAST,
            d(dtype)
        ],
        Kernel::LayerNorm {
            rows,
            cols,
            eps,
            dtype,
            param,
            out,
        } => alloc::vec![rows, cols, eps.to_bits(), d(dtype), d(param), d(out)],
        Kernel::Gelu {
            elements,
            dtype,
            out,
        } => alloc::vec![elements, d(dtype), d(out)],
        Kernel::Activation {
            elements,
            dtype,
            function,
            out,
        } => alloc::vec![elements, d(dtype), function.code(), d(out)],
        Kernel::Softmax { rows, cols, dtype } => alloc::vec![rows, cols, d(dtype)],
        Kernel::Cast { elements, from, to } => alloc::vec![elements, d(from), d(to)],
        Kernel::Attention {
            q_rows,
            kv_rows,
            head_dim,
            scale,
            dtype,
        } => alloc::vec![q_rows, kv_rows, head_dim, scale.to_bits(), d(dtype)],
        Kernel::AttentionPartial {
            q_rows,
            kv_rows,
            head_dim,
            scale,
            dtype,
            values_transposed,
        } => alloc::vec![
            q_rows,
            kv_rows,
            head_dim,
            scale.to_bits(),
            d(dtype),
            u32::from(values_transposed) * ATTENTION_VALUES_TRANSPOSED
        ],
        Kernel::Copy {
            rows,
            row_bytes,
            src_pitch,
            dst_pitch,
        } => alloc::vec![rows, row_bytes, src_pitch, dst_pitch],
        Kernel::Transpose {
            rows,
            cols,
            src_pitch,
            dtype,
        } => alloc::vec![rows, cols, src_pitch, d(dtype)],
        Kernel::AttentionCombine {
            q_rows,
            head_dim,
            parts,
            dtype,
        } => alloc::vec![q_rows, head_dim, parts, d(dtype)],
    };
    let mut words = Vec::with_capacity(body.len() + ARG_BLOCK_HEADER_WORDS as usize);
    words.push(ARG_BLOCK_MAGIC | u32::from(args.symbol().code()));
    words.push(body.len() as u32 + ARG_BLOCK_HEADER_WORDS);
    words.extend(body);
    words
}

/// Body words of each kernel's layout.
const fn body_words(s: KernelSymbol) -> u32 {
    match s {
        KernelSymbol::GemmAmp => 8,
        KernelSymbol::ReduceAdd
        | KernelSymbol::Add
        | KernelSymbol::Mul
        | KernelSymbol::Copy
        | KernelSymbol::Activation
        | KernelSymbol::AttentionCombine
        | KernelSymbol::Transpose => 4,
        KernelSymbol::AttentionHead => 5,
        KernelSymbol::AttentionPartial => 6,
        KernelSymbol::LayerNorm => 6,
        KernelSymbol::Softmax | KernelSymbol::Cast | KernelSymbol::GeluTanh => 3,
    }
}

/// Reads the header: the symbol and the total length the block claims.
/// Needs only words 0 and 1, so a codelet can size its SRAM read.
pub fn decode_header(words: &[u32]) -> Result<(KernelSymbol, u32), AbiError> {
    let (Some(&w0), Some(&len)) = (words.first(), words.get(1)) else {
        return Err(AbiError::BadLength {
            expected: ARG_BLOCK_HEADER_WORDS,
            found: words.len() as u32,
        });
    };
    if w0 & ARG_BLOCK_MAGIC_MASK != ARG_BLOCK_MAGIC {
        return Err(AbiError::BadMagic { word: w0 });
    }
    let code = (w0 & 0xFF) as u8;
    let sym = KernelSymbol::from_code(code).ok_or(AbiError::UnknownKernel { code })?;
    let expected = body_words(sym) + ARG_BLOCK_HEADER_WORDS;
    if len != expected {
        return Err(AbiError::BadLength {
            expected,
            found: len,
        });
    }
    Ok((sym, len))
}

struct Fields<'a> {
    words: &'a [u32],
}

impl Fields<'_> {
    fn word(&self, i: u32) -> u32 {
        // Invariant: decode checked `words.len()` against the layout first.
        self.words[i as usize]
    }
    fn dtype(&self, i: u32) -> Result<DType, AbiError> {
        decode_dtype(self.word(i)).ok_or(AbiError::BadDType {
            word_index: i,
            word: self.word(i),
        })
    }
    /// An arithmetic type (F16 or F32).
    fn arith(&self, i: u32) -> Result<DType, AbiError> {
        let d = self.dtype(i)?;
        if matches!(d, DType::F8 { .. }) {
            return Err(self.bad(i));
        }
        Ok(d)
    }
    /// The type a result computed in `arith` is stored as: `arith` itself
    /// or an FP8 type (a fused cast).
    fn stored(&self, i: u32, arith: DType) -> Result<DType, AbiError> {
        let d = self.dtype(i)?;
        if d == arith || d.is_fp8() {
            Ok(d)
        } else {
            Err(self.bad(i))
        }
    }
    fn finite(&self, i: u32) -> Result<f32, AbiError> {
        let x = f32::from_bits(self.word(i));
        if x.is_finite() {
            Ok(x)
        } else {
            Err(self.bad(i))
        }
    }
    fn flags(&self, i: u32, allowed: u32) -> Result<u32, AbiError> {
        let w = self.word(i);
        if w & !allowed != 0 {
            return Err(self.bad(i));
        }
        Ok(w)
    }
    fn bad(&self, i: u32) -> AbiError {
        AbiError::BadField {
            word_index: i,
            word: self.word(i),
        }
    }
}

/// Decodes and validates a whole argument block.
pub fn decode(words: &[u32]) -> Result<KernelArgs, AbiError> {
    let (sym, len) = decode_header(words)?;
    if (words.len() as u32) < len {
        return Err(AbiError::BadLength {
            expected: len,
            found: words.len() as u32,
        });
    }
    let f = Fields {
        words: &words[..len as usize],
    };
    let w = |i| f.word(i);
    let mut epilogue = GemmEpilogue::default();
    let kernel = match sym {
        KernelSymbol::GemmAmp => {
            let flags = f.flags(
                8,
                GEMM_B_TRANSPOSED | GEMM_B_INTERLEAVED | GEMM_ACCUMULATE | GEMM_BIAS,
            )?;
            epilogue.accumulate = flags & GEMM_ACCUMULATE != 0;
            if flags & GEMM_BIAS != 0 {
                epilogue.bias = Some(f.arith(9)?);
            } else if w(9) != 0 {
                return Err(f.bad(9));
            }
            Kernel::Gemm {
                m: w(2),
                k: w(3),
                n: w(4),
                a: f.dtype(5)?,
                b: f.dtype(6)?,
                out: f.arith(7)?,
                b_transposed: flags & GEMM_B_TRANSPOSED != 0,
                b_interleaved: flags & GEMM_B_INTERLEAVED != 0,
            }
        }
        KernelSymbol::ReduceAdd => Kernel::ReduceAdd {
            elements: w(2),
            parts: w(3),
            input: f.arith(4)?,
            out: f.arith(5)?,
        },
        KernelSymbol::Add => Kernel::Add {
            rows: w(2),
            cols: w(3),
            broadcast_rows: f.flags(4, ADD_BROADCAST)? != 0,
            dtype: f.arith(5)?,
        },
        KernelSymbol::LayerNorm => {
            let eps = f.finite(4)?;
            if eps < 0.0 {
                return Err(f.bad(4));
            }
            let dtype = f.arith(5)?;
            Kernel::LayerNorm {
                rows: w(2),
                cols: w(3),
                eps,
                dtype,
                param: f.arith(6)?,
                out: f.stored(7, dtype)?,
            }
        }
        KernelSymbol::GeluTanh => {
            let dtype = f.arith(3)?;
            Kernel::Gelu {
                elements: w(2),
                dtype,
                out: f.stored(4, dtype)?,
            }
        }
        KernelSymbol::Activation => {
            let dtype = f.arith(3)?;
            Kernel::Activation {
                elements: w(2),
                dtype,
                function: Activation::from_code(w(4)).ok_or(f.bad(4))?,
                out: f.stored(5, dtype)?,
            }
        }
        KernelSymbol::Mul => Kernel::Mul {
            rows: w(2),
            cols: w(3),
            broadcast_rows: f.flags(4, ADD_BROADCAST)? != 0,
            dtype: f.arith(5)?,
        },
        KernelSymbol::Softmax => Kernel::Softmax {
            rows: w(2),
            cols: w(3),
            dtype: f.arith(4)?,
        },
        KernelSymbol::Cast => Kernel::Cast {
            elements: w(2),
            from: f.dtype(3)?,
            to: f.dtype(4)?,
        },
        KernelSymbol::AttentionHead => Kernel::Attention {
            q_rows: w(2),
            kv_rows: w(3),
            head_dim: w(4),
            scale: f.finite(5)?,
            dtype: f.arith(6)?,
        },
        KernelSymbol::Copy => Kernel::Copy {
            rows: w(2),
            row_bytes: w(3),
            src_pitch: w(4),
            dst_pitch: w(5),
        },
        KernelSymbol::AttentionPartial => Kernel::AttentionPartial {
            q_rows: w(2),
            kv_rows: w(3),
            head_dim: w(4),
            scale: f.finite(5)?,
            dtype: f.arith(6)?,
            values_transposed: f.flags(7, ATTENTION_VALUES_TRANSPOSED)? != 0,
        },
        KernelSymbol::Transpose => Kernel::Transpose {
            rows: w(2),
            cols: w(3),
            src_pitch: w(4),
            dtype: f.dtype(5)?,
        },
        KernelSymbol::AttentionCombine => {
            if w(4) == 0 {
                return Err(f.bad(4));
            }
            Kernel::AttentionCombine {
                q_rows: w(2),
                head_dim: w(3),
                parts: w(4),
                dtype: f.arith(5)?,
            }
        }
    };
    Ok(KernelArgs { kernel, epilogue })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::AbiError;

    fn all_kernels() -> Vec<KernelArgs> {
        let f8 = DType::f152(3);
        let mut v: Vec<KernelArgs> = [
            Kernel::Gemm {
                m: 3,
                k: 5,
                n: 7,
                a: DType::F16,
                b: DType::f143(-4),
                out: DType::F32,
                b_transposed: true,
                b_interleaved: false,
            },
            Kernel::ReduceAdd {
                elements: 10,
                parts: 3,
                input: DType::F32,
                out: DType::F16,
            },
            Kernel::Add {
                rows: 2,
                cols: 9,
                broadcast_rows: true,
                dtype: DType::F16,
            },
            Kernel::LayerNorm {
                rows: 4,
                cols: 16,
                eps: 1e-6,
                dtype: DType::F16,
                param: DType::F32,
                out: DType::f143(0),
            },
            Kernel::Gelu {
                elements: 100,
                dtype: DType::F32,
                out: DType::F32,
            },
            Kernel::Softmax {
                rows: 3,
                cols: 11,
                dtype: DType::F16,
            },
            Kernel::Cast {
                elements: 17,
                from: DType::F16,
                to: f8,
            },
            Kernel::Attention {
                q_rows: 8,
                kv_rows: 13,
                head_dim: 72,
                scale: 0.117_851_13,
                dtype: DType::F16,
            },
            Kernel::Copy {
                rows: 14,
                row_bytes: 28,
                src_pitch: 28,
                dst_pitch: 1176,
            },
            Kernel::AttentionPartial {
                q_rows: 8,
                kv_rows: 243,
                head_dim: 72,
                scale: 0.117_851_13,
                dtype: DType::F16,
                values_transposed: true,
            },
            Kernel::Transpose {
                rows: 73,
                cols: 8,
                src_pitch: 72,
                dtype: DType::F16,
            },
            Kernel::AttentionCombine {
                q_rows: 8,
                head_dim: 72,
                parts: 3,
                dtype: DType::F16,
            },
            Kernel::Activation {
                elements: 33,
                dtype: DType::F16,
                function: Activation::QuickGelu,
                out: DType::F16,
            },
            Kernel::Activation {
                elements: 40,
                dtype: DType::F16,
                function: Activation::GeluErf,
                out: f8,
            },
            Kernel::Mul {
                rows: 5,
                cols: 7,
                broadcast_rows: true,
                dtype: DType::F32,
            },
        ]
        .into_iter()
        .map(KernelArgs::new)
        .collect();
        v[0].epilogue = GemmEpilogue {
            accumulate: true,
            bias: Some(DType::F16),
        };
        v
    }

    #[test]
    fn every_kernel_round_trips_and_names_match_the_lowering() {
        for args in all_kernels() {
            let words = encode(&args);
            assert_eq!(decode(&words), Ok(args.clone()));
            assert_eq!(args.symbol().name(), args.kernel.name());
            assert_eq!(
                KernelSymbol::from_name(args.kernel.name()),
                Some(args.symbol())
            );
            assert!(words.len() as u32 <= crate::ipu21::kernel_abi::ARG_BLOCK_MAX_WORDS);
        }
    }

    #[test]
    fn dtype_words_round_trip_and_reject_garbage() {
        for d in [
            DType::F32,
            DType::F16,
            DType::f143(-32),
            DType::f143(31),
            DType::f152(-4),
        ] {
            assert_eq!(decode_dtype(encode_dtype(d)), Some(d));
        }
        assert_eq!(encode_dtype(DType::f143(-4)), 0xFC02);
        assert_eq!(decode_dtype(4), None);
        assert_eq!(decode_dtype(0x0100), None); // F32 with a scale
        assert_eq!(decode_dtype(0x2002), None); // F143 scale 32
        assert_eq!(decode_dtype(0x1_0001), None);
    }

    #[test]
    fn malformed_blocks_are_rejected_with_the_word_at_fault() {
        let good = encode(&all_kernels()[0]);
        assert_eq!(
            decode(&[]),
            Err(AbiError::BadLength {
                expected: 2,
                found: 0
            })
        );
        let mut w = good.clone();
        w[0] = 0xDEAD_0001;
        assert_eq!(decode(&w), Err(AbiError::BadMagic { word: 0xDEAD_0001 }));
        w[0] = ARG_BLOCK_MAGIC | 0x77;
        assert_eq!(decode(&w), Err(AbiError::UnknownKernel { code: 0x77 }));
        let mut w = good.clone();
        w[1] = 5;
        assert_eq!(
            decode(&w),
            Err(AbiError::BadLength {
                expected: 10,
                found: 5
            })
        );
        assert_eq!(
            decode(&good[..7]),
            Err(AbiError::BadLength {
                expected: 10,
                found: 7
            })
        );
        let mut w = good.clone();
        w[7] = encode_dtype(DType::f143(0)); // FP8 output
        assert_eq!(
            decode(&w),
            Err(AbiError::BadField {
                word_index: 7,
                word: 2
            })
        );
        let mut w = good.clone();
        w[8] |= 1 << 7;
        assert!(matches!(
            decode(&w),
            Err(AbiError::BadField { word_index: 8, .. })
        ));
        let mut w = good.clone();
        w[5] = 9;
        assert_eq!(
            decode(&w),
            Err(AbiError::BadDType {
                word_index: 5,
                word: 9
            })
        );
        let mut ln = encode(&all_kernels()[3]);
        ln[4] = f32::NAN.to_bits();
        assert!(matches!(
            decode(&ln),
            Err(AbiError::BadField { word_index: 4, .. })
        ));
    }
}
