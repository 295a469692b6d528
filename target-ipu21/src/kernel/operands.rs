//! Operand extents of a kernel call: how many bytes each register's address
//! must cover, and its alignment. Codelets check these before touching SRAM;
//! emission and placement can check them before a package exists.

use alloc::vec::Vec;

use super::{Kernel, PartialRecord};
use super::{KernelArgs, KernelSymbol};
use crate::ipu21::kernel_abi::{FIRST_INPUT_REGISTER, OUTPUT_REGISTER};
use crate::numeric::DType;

/// Which operand of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandRole {
    /// The output, in `$m2`.
    Output,
    /// Input `i`, in `$m(3 + i)`.
    Input(u8),
}

impl OperandRole {
    /// The MRF register holding its address.
    pub const fn register(self) -> u8 {
        match self {
            OperandRole::Output => OUTPUT_REGISTER,
            OperandRole::Input(i) => FIRST_INPUT_REGISTER + i,
        }
    }
}

/// One operand's extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperandSpec {
    /// Which operand.
    pub role: OperandRole,
    /// What it is, for error messages (`a`, `b`, `bias`, `gamma`, …).
    pub name: &'static str,
    /// Bytes from its address the kernel reads or writes.
    pub bytes: u64,
    /// Required address alignment (the element size; 1 for byte copies).
    pub align: u32,
}

/// Extents are computed from argument-block words (u32 each, read from
/// SRAM), so products of two fit u64 but not of three or with the element
/// size: they saturate. A saturated extent exceeds any tile's SRAM, so the
/// bounds checks that read it reject the call instead of a wrapped (small)
/// size passing them.
fn spec(role: OperandRole, name: &'static str, elements: u64, d: DType) -> OperandSpec {
    let size = d.size_bytes() as u32;
    OperandSpec {
        role,
        name,
        bytes: elements.saturating_mul(u64::from(size)),
        align: size,
    }
}

/// Bytes a strided run sequence spans: `(rows − 1) × pitch + row_bytes`.
fn strided(rows: u32, row_bytes: u32, pitch: u32) -> u64 {
    if rows == 0 || row_bytes == 0 {
        0
    } else {
        u64::from(rows - 1) * u64::from(pitch) + u64::from(row_bytes)
    }
}

/// An attention kernel's operands after its `output`: the `q`, `k` and
/// `v` blocks of `dtype` and the F32 scores scratch, as both the whole
/// head (`attention_head`) and a key block's partial read them.
fn attention_specs(
    output: OperandSpec,
    (q_rows, kv_rows, head_dim): (u32, u32, u32),
    dtype: DType,
) -> Vec<OperandSpec> {
    use OperandRole::Input;
    let x = u64::from;
    alloc::vec![
        output,
        spec(Input(0), "q", x(q_rows) * x(head_dim), dtype),
        spec(Input(1), "k", x(kv_rows) * x(head_dim), dtype),
        spec(Input(2), "v", x(kv_rows) * x(head_dim), dtype),
        spec(Input(3), "scores", x(q_rows) * x(kv_rows), DType::F32),
    ]
}

impl KernelArgs {
    /// Operands in register order (output first).
    pub fn operands(&self) -> Vec<OperandSpec> {
        use OperandRole::{Input, Output};
        let x = u64::from;
        match self.kernel {
            Kernel::Gemm {
                m, k, n, a, b, out, ..
            } => {
                let mut v = alloc::vec![
                    spec(Output, "out", x(m) * x(n), out),
                    spec(Input(0), "a", x(m) * x(k), a),
                    spec(Input(1), "b", x(k) * x(n), b),
                ];
                if let Some(bias) = self.epilogue.bias {
                    v.push(spec(Input(2), "bias", x(n), bias));
                }
                v
            }
            Kernel::ReduceAdd {
                elements,
                parts,
                input,
                out,
            } => alloc::vec![
                spec(Output, "out", x(elements), out),
                spec(Input(0), "partials", x(elements) * x(parts), input),
            ],
            Kernel::Add {
                rows,
                cols,
                broadcast_rows,
                dtype,
            } => {
                let b_rows = if broadcast_rows { 1 } else { x(rows) };
                alloc::vec![
                    spec(Output, "out", x(rows) * x(cols), dtype),
                    spec(Input(0), "a", x(rows) * x(cols), dtype),
                    spec(Input(1), "b", b_rows * x(cols), dtype),
                ]
            }
            Kernel::LayerNorm {
                rows,
                cols,
                dtype,
                param,
                out,
                ..
            } => alloc::vec![
                spec(Output, "out", x(rows) * x(cols), out),
                spec(Input(0), "x", x(rows) * x(cols), dtype),
                spec(Input(1), "gamma", x(cols), param),
                spec(Input(2), "beta", x(cols), param),
            ],
            Kernel::Mul {
                rows,
                cols,
                broadcast_rows,
                dtype,
            } => {
                let b_rows = if broadcast_rows { 1 } else { x(rows) };
                alloc::vec![
                    spec(Output, "out", x(rows) * x(cols), dtype),
                    spec(Input(0), "a", x(rows) * x(cols), dtype),
                    spec(Input(1), "b", b_rows * x(cols), dtype),
                ]
            }
            Kernel::Activation {
                elements,
                dtype,
                out,
                ..
            } => alloc::vec![
                spec(Output, "out", x(elements), out),
                spec(Input(0), "x", x(elements), dtype),
            ],
            Kernel::Gelu {
                elements,
                dtype,
                out,
            } => alloc::vec![
                spec(Output, "out", x(elements), out),
                spec(Input(0), "x", x(elements), dtype),
            ],
            Kernel::Softmax { rows, cols, dtype } => alloc::vec![
                spec(Output, "out", x(rows) * x(cols), dtype),
                spec(Input(0), "x", x(rows) * x(cols), dtype),
            ],
            Kernel::Cast { elements, from, to } => alloc::vec![
                spec(Output, "out", x(elements), to),
                spec(Input(0), "x", x(elements), from),
            ],
            Kernel::Attention {
                q_rows,
                kv_rows,
                head_dim,
                dtype,
                ..
            } => attention_specs(
                spec(Output, "out", x(q_rows) * x(head_dim), dtype),
                (q_rows, kv_rows, head_dim),
                dtype,
            ),
            Kernel::AttentionPartial {
                q_rows,
                kv_rows,
                head_dim,
                dtype,
                ..
            } => {
                let record = PartialRecord::of(head_dim, dtype);
                attention_specs(
                    spec(Output, "partial", x(q_rows) * x(record.len), record.element),
                    (q_rows, kv_rows, head_dim),
                    dtype,
                )
            }
            Kernel::Transpose {
                rows,
                cols,
                src_pitch,
                dtype,
            } => alloc::vec![
                spec(Output, "out", x(rows) * x(cols), dtype),
                spec(Input(0), "in", strided(rows, cols, src_pitch), dtype),
            ],
            Kernel::AttentionCombine {
                q_rows,
                head_dim,
                parts,
                dtype,
            } => {
                let record = PartialRecord::of(head_dim, dtype);
                alloc::vec![
                    spec(Output, "out", x(q_rows) * x(head_dim), dtype),
                    spec(
                        Input(0),
                        "partials",
                        x(parts).saturating_mul(x(q_rows) * x(record.len)),
                        record.element,
                    ),
                ]
            }
            Kernel::Copy {
                rows,
                row_bytes,
                src_pitch,
                dst_pitch,
            } => alloc::vec![
                OperandSpec {
                    role: Output,
                    name: "dst",
                    bytes: strided(rows, row_bytes, dst_pitch),
                    align: 1,
                },
                OperandSpec {
                    role: Input(0),
                    name: "src",
                    bytes: strided(rows, row_bytes, src_pitch),
                    align: 1,
                },
            ],
        }
    }

    /// Does the kernel read its output before writing it (accumulating GEMM)?
    pub fn reads_output(&self) -> bool {
        self.symbol() == KernelSymbol::GemmAmp && self.epilogue.accumulate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_argument_words_saturate_instead_of_wrapping() {
        let s = spec(OperandRole::Output, "out", u64::MAX / 2, DType::F32);
        assert_eq!(s.bytes, u64::MAX);
        assert_eq!(
            strided(u32::MAX, u32::MAX, u32::MAX),
            u64::from(u32::MAX - 1) * u64::from(u32::MAX) + u64::from(u32::MAX)
        );
    }
}
