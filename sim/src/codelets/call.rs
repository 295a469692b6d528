//! One kernel call on a tile: read the argument block at `$m8`, check every
//! operand against SRAM and the kernel ABI's rules, run the kernel, charge
//! its cycles.

use ipuc_target::ipu21::kernel_abi::{ARG_BLOCK_ALIGN, ARG_BLOCK_HEADER_WORDS, ARG_BLOCK_REGISTER};
use ipuc_target::ipu21::rates::RateEnd;
use ipuc_target::ipu21::sram::{effective_element, in_sram, INTERLEAVED_BASE};
use ipuc_target::ipu21::timing::AmpMode;
use ipuc_target::ipu21::topology::PhysicalTile;
use ipuc_target::kernel::{
    attention_mode, decode, decode_header, AbiError, AmpProduct, Kernel, KernelArgs, KernelSymbol,
    OperandRole, PartialRecord,
};
use ipuc_target::numeric::DType;

use super::elements::{decode as decode_elements, encode, round_in_place};
use super::error::{CodeletError, CodeletErrorKind};
use super::math;
use crate::kernel_timing::kernel_timing;
use crate::memory::TileMemory;
use crate::{CodeletCharge, OperandFault, OperandRule};

/// Runs kernel `symbol` with the MRF `regs` on `memory`; returns what it
/// costs: the simulator's kernel timing model
/// ([`crate::kernel_timing::kernel_timing`], modelled, every rate at end
/// `rates` of its sources) and the address
/// of the argument block, where a report finds the planner's estimate.
/// Every operand is checked before the call runs: inside SRAM, aligned to
/// its element, and for AMP kernels the rules of
/// `docs/facts/ipu21-target.md` §2.10 rule 6 and the argument block's
/// interleaved-weights claim ([`check_amp_rules`]); a broken rule is a
/// [`CodeletErrorKind::Operand`] error.
pub fn run_kernel(
    symbol: KernelSymbol,
    rates: RateEnd,
    tile: PhysicalTile,
    regs: &[u32; 16],
    memory: &mut TileMemory,
) -> Result<CodeletCharge, CodeletError> {
    let err = |kind| CodeletError {
        tile,
        kernel: symbol.name(),
        kind,
    };
    let operand_err = |operand, addr, rule| {
        err(CodeletErrorKind::Operand(OperandFault {
            operand,
            addr,
            rule,
        }))
    };
    let arg_block = regs[ARG_BLOCK_REGISTER as usize];
    let args = read_args(symbol, arg_block, memory).map_err(err)?;
    let mut addrs = [0u32; 6];
    for spec in args.operands() {
        let register = spec.role.register();
        let addr = regs[register as usize];
        let fits = u32::try_from(spec.bytes).is_ok_and(|b| in_sram(addr, b));
        if spec.bytes > 0 && !fits {
            return Err(operand_err(
                spec.name,
                addr,
                OperandRule::OutsideSram { bytes: spec.bytes },
            ));
        }
        if !addr.is_multiple_of(spec.align.max(1)) {
            return Err(operand_err(
                spec.name,
                addr,
                OperandRule::Misaligned { align: spec.align },
            ));
        }
        let slot = match spec.role {
            OperandRole::Output => 0,
            OperandRole::Input(i) => 1 + i as usize,
        };
        addrs[slot] = addr;
    }
    check_amp_rules(&args, &addrs).map_err(|f| err(CodeletErrorKind::Operand(f)))?;
    execute(&args, &addrs, memory);
    Ok(CodeletCharge {
        cycles: kernel_timing(&args, &addrs, rates).total,
        arg_block: Some(arg_block),
    })
}

/// The AMP operand rules of `docs/facts/ipu21-target.md` §2.10 rule 6 —
/// operands (output and streams) 32-byte aligned, output in interleaved
/// memory, left stream and output in different effective elements — and
/// the argument block's claim that GEMM weights are in interleaved memory.
/// The compiler meets them (lowering's AMP alignment and memory class,
/// placement's element conflicts); the first rule broken is returned.
fn check_amp_rules(args: &KernelArgs, addrs: &[u32; 6]) -> Result<(), OperandFault> {
    let fault = |operand, addr, rule| OperandFault {
        operand,
        addr,
        rule,
    };
    // (operand name, slot) of the AMP streams; the left stream is slot 1.
    let streams: &[(&'static str, usize)] = match args.kernel {
        Kernel::Gemm { b_interleaved, .. } => {
            if b_interleaved && addrs[2] < INTERLEAVED_BASE {
                return Err(fault("b", addrs[2], OperandRule::WeightsNotInterleaved));
            }
            &[("out", 0), ("a", 1), ("b", 2)]
        }
        Kernel::Attention { .. } | Kernel::AttentionPartial { .. } => {
            &[("out", 0), ("q", 1), ("k", 2), ("v", 3)]
        }
        _ => return Ok(()),
    };
    if let Some(&(operand, slot)) = streams
        .iter()
        .find(|(_, slot)| !addrs[*slot].is_multiple_of(AMP_OPERAND_ALIGN))
    {
        return Err(fault(operand, addrs[slot], OperandRule::AmpMisaligned));
    }
    if addrs[0] < INTERLEAVED_BASE {
        return Err(fault("out", addrs[0], OperandRule::AmpOutputStandard));
    }
    let element = effective_element(addrs[0]);
    if element == effective_element(addrs[1]) {
        return Err(fault(
            "out",
            addrs[0],
            OperandRule::AmpSharesElement {
                left: addrs[1],
                element,
            },
        ));
    }
    Ok(())
}

/// The kernels that run on the AMP and are held to §2.10 rule 6.
pub const AMP_KERNELS: [&str; 3] = [
    KernelSymbol::GemmAmp.name(),
    KernelSymbol::AttentionHead.name(),
    KernelSymbol::AttentionPartial.name(),
];

/// AMP operand alignment (`docs/facts/ipu21-target.md` §2.10 rule 6).
pub const AMP_OPERAND_ALIGN: u32 = 32;

/// Reads and decodes the argument block at `addr`.
fn read_args(
    symbol: KernelSymbol,
    addr: u32,
    memory: &TileMemory,
) -> Result<KernelArgs, CodeletErrorKind> {
    if !addr.is_multiple_of(ARG_BLOCK_ALIGN) {
        return Err(CodeletErrorKind::ArgBlockMisaligned { addr });
    }
    let read = |words: u32| -> Result<Vec<u32>, CodeletErrorKind> {
        let bytes = memory
            .slice(addr, words * 4)
            .map_err(|_| CodeletErrorKind::ArgBlockOutsideSram { addr, words })?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    };
    let abi = |error| CodeletErrorKind::ArgBlock { addr, error };
    let header = read(ARG_BLOCK_HEADER_WORDS)?;
    let (found, len) = decode_header(&header).map_err(abi)?;
    if found != symbol {
        return Err(abi(AbiError::WrongKernel {
            expected: symbol.code(),
            found: found.code(),
        }));
    }
    decode(&read(len)?).map_err(abi)
}

/// Operand addresses: `[out, in0, in1, …]`, all checked against SRAM.
struct Io<'a> {
    memory: &'a mut TileMemory,
    addrs: &'a [u32; 6],
}

impl Io<'_> {
    /// `elements` values of type `d` from operand slot `slot`.
    fn load(&self, slot: usize, elements: usize, d: DType) -> Vec<f32> {
        let bytes = (elements * d.size_bytes()) as u32;
        // Invariant: run_kernel checked this extent against SRAM.
        let raw = self.memory.slice(self.addrs[slot], bytes).unwrap_or(&[]);
        decode_elements(raw, d)
    }

    /// Stores `values` as type `d` at operand slot `slot`.
    fn store(&mut self, slot: usize, values: &[f32], d: DType) {
        let bytes = (values.len() * d.size_bytes()) as u32;
        // Invariant: run_kernel checked this extent against SRAM.
        if let Ok(raw) = self.memory.slice_mut(self.addrs[slot], bytes) {
            encode(values, d, raw);
        }
    }

    /// Stores the logical rows `[o (head_dim), m, l]` of `rows` as
    /// `record`s: `o` in the record's element type (exact: the AMP's
    /// partials), `m` and `l` as F32 ([`PartialRecord::write_bytes`]).
    fn store_partials(
        &mut self,
        slot: usize,
        rows: &[f32],
        record: PartialRecord,
        head_dim: usize,
    ) {
        let count = rows.len() / (head_dim + 2);
        let mut raw = vec![0u8; count * record.row_bytes() as usize];
        record.write_bytes(rows, head_dim, &mut raw, |o, bytes| {
            encode(o, record.element, bytes)
        });
        // Invariant: run_kernel checked this extent against SRAM.
        if let Ok(dst) = self.memory.slice_mut(self.addrs[slot], raw.len() as u32) {
            dst.copy_from_slice(&raw);
        }
    }

    /// `count` `record`s from operand slot `slot` as logical rows `[o, m,
    /// l]` ([`PartialRecord::read_bytes`]).
    fn load_partials(
        &self,
        slot: usize,
        count: usize,
        record: PartialRecord,
        head_dim: usize,
    ) -> Vec<f32> {
        // Invariant: run_kernel checked this extent against SRAM.
        let raw = self
            .memory
            .slice(
                self.addrs[slot],
                (count as u32).saturating_mul(record.row_bytes()),
            )
            .unwrap_or(&[]);
        record.read_bytes(raw, head_dim, |bytes, rows| {
            rows.extend(decode_elements(bytes, record.element))
        })
    }

    /// Stores `values` computed in `arith` as type `stored`: rounded to
    /// `arith` first, as the separate cast a fused one replaces would
    /// have read them, so fusing changes no bit.
    fn store_via(&mut self, slot: usize, values: &mut [f32], arith: DType, stored: DType) {
        if stored != arith {
            round_in_place(values, arith);
        }
        self.store(slot, values, stored);
    }
}

/// Runs the arithmetic; every extent was checked by the caller.
fn execute(args: &KernelArgs, addrs: &[u32; 6], memory: &mut TileMemory) {
    let mut io = Io { memory, addrs };
    let us = |x: u32| x as usize;
    match args.kernel {
        Kernel::Gemm {
            m,
            k,
            n,
            a,
            b,
            out,
            b_transposed,
            ..
        } => {
            let (m, k, n) = (us(m), us(k), us(n));
            let mut acc = if args.epilogue.accumulate {
                io.load(0, m * n, out)
            } else {
                vec![0.0; m * n]
            };
            let av = io.load(1, m * k, a);
            let bv = io.load(2, k * n, b);
            let mode = AmpProduct::of(a, b, out).mode;
            math::amp_accumulate(mode, (m, k, n), &av, &bv, b_transposed, &mut acc);
            if let Some(bias_type) = args.epilogue.bias {
                let bias = io.load(3, n, bias_type);
                let sum = acc.clone();
                math::add(&sum, &bias, n, true, &mut acc);
            }
            io.store(0, &acc, out);
        }
        Kernel::ReduceAdd {
            elements,
            parts,
            input,
            out,
        } => {
            let len = us(elements);
            let partials = io.load(1, len * us(parts), input);
            let mut sum = vec![0.0; len];
            math::reduce_parts(&partials, len, &mut sum);
            io.store(0, &sum, out);
        }
        Kernel::Add {
            rows,
            cols,
            broadcast_rows,
            dtype,
        } => elementwise(
            &mut io,
            (us(rows), us(cols)),
            broadcast_rows,
            dtype,
            math::add,
        ),
        Kernel::LayerNorm {
            rows,
            cols,
            eps,
            dtype,
            param,
            out: stored,
        } => {
            let total = us(rows) * us(cols);
            let x = io.load(1, total, dtype);
            let gamma = io.load(2, us(cols), param);
            let beta = io.load(3, us(cols), param);
            let mut out = vec![0.0; total];
            math::layer_norm(&x, &gamma, &beta, eps, &mut out);
            io.store_via(0, &mut out, dtype, stored);
        }
        Kernel::Gelu {
            elements,
            dtype,
            out,
        } => {
            let mut x = io.load(1, us(elements), dtype);
            let gelu = if dtype == DType::F16 {
                math::gelu_tanh_f16
            } else {
                math::gelu_tanh
            };
            x.iter_mut().for_each(|v| *v = gelu(*v));
            io.store_via(0, &mut x, dtype, out);
        }
        Kernel::Activation {
            elements,
            dtype,
            function,
            out,
        } => {
            let mut x = io.load(1, us(elements), dtype);
            x.iter_mut().for_each(|v| *v = function.apply(*v));
            io.store_via(0, &mut x, dtype, out);
        }
        Kernel::Mul {
            rows,
            cols,
            broadcast_rows,
            dtype,
        } => elementwise(
            &mut io,
            (us(rows), us(cols)),
            broadcast_rows,
            dtype,
            math::mul,
        ),
        Kernel::Softmax { rows, cols, dtype } => {
            let mut x = io.load(1, us(rows) * us(cols), dtype);
            math::softmax_rows(&mut x, us(cols));
            io.store(0, &x, dtype);
        }
        Kernel::Cast { elements, from, to } => {
            let x = io.load(1, us(elements), from);
            io.store(0, &x, to);
        }
        Kernel::Attention {
            q_rows,
            kv_rows,
            head_dim,
            scale,
            dtype,
        } => {
            let shape = (us(q_rows), us(kv_rows), us(head_dim));
            let (mode, scores, v) = attention_scores(&mut io, shape, scale, dtype);
            let out = math::attention_output(mode, dtype, shape, scores, &v);
            io.store(0, &out, dtype);
        }
        Kernel::AttentionPartial {
            q_rows,
            kv_rows,
            head_dim,
            scale,
            dtype,
            values_transposed,
        } => {
            let shape = (us(q_rows), us(kv_rows), us(head_dim));
            let (mode, scores, mut v) = attention_scores(&mut io, shape, scale, dtype);
            if values_transposed {
                // `[head_dim, keys]` back to the `[keys, head_dim]` p·v reads.
                v = ipuc_target::kernel::transposed(&v, (shape.2, shape.1), shape.1);
            }
            let out = math::attention_partial(mode, dtype, shape, scores, &v);
            io.store_partials(0, &out, PartialRecord::of(head_dim, dtype), shape.2);
        }
        Kernel::AttentionCombine {
            q_rows,
            head_dim,
            parts,
            dtype,
        } => {
            let (qr, hd, np) = (us(q_rows), us(head_dim), us(parts));
            let record = PartialRecord::of(head_dim, dtype);
            let partials = io.load_partials(1, np * qr, record, hd);
            let out = ipuc_target::kernel::combine_attention_partials(&partials, qr, hd, np);
            io.store(0, &out, dtype);
        }
        Kernel::Copy {
            rows,
            row_bytes,
            src_pitch,
            dst_pitch,
        } => copy_runs(&mut io, rows, row_bytes, src_pitch, dst_pitch),
        Kernel::Transpose {
            rows,
            cols,
            src_pitch,
            dtype,
        } => transpose_block(
            &mut io,
            (us(rows), us(cols)),
            us(src_pitch),
            dtype.size_bytes(),
        ),
    }
}

/// Writes the `rows × cols` block of `size`-byte elements at the input
/// (rows `pitch` elements apart) as `cols` rows of `rows` elements, by
/// the oracle's own `transposed`. The elements move as bytes (FP8, FP16
/// or F32: 1, 2 or 4 of them): a transposition rounds nothing.
fn transpose_block(io: &mut Io<'_>, (rows, cols): (usize, usize), pitch: usize, size: usize) {
    if rows == 0 || cols == 0 {
        return;
    }
    let span = ((rows - 1) * pitch + cols) * size;
    // Invariant: run_kernel checked both extents against SRAM.
    let src = io.memory.slice(io.addrs[1], span as u32).unwrap_or(&[]);
    let shape = (rows, cols);
    let moved = match size {
        1 => ipuc_target::kernel::transposed(src, shape, pitch),
        2 => ipuc_target::kernel::transposed(src.as_chunks::<2>().0, shape, pitch)
            .as_flattened()
            .to_vec(),
        _ => ipuc_target::kernel::transposed(src.as_chunks::<4>().0, shape, pitch)
            .as_flattened()
            .to_vec(),
    };
    if let Ok(dst) = io.memory.slice_mut(io.addrs[0], moved.len() as u32) {
        dst.copy_from_slice(&moved);
    }
}

/// An elementwise kernel (Add, Mul) over `rows × cols` operands in
/// `dtype`, B either full or one row broadcast over every row.
fn elementwise(
    io: &mut Io<'_>,
    (rows, cols): (usize, usize),
    broadcast_rows: bool,
    dtype: DType,
    op: fn(&[f32], &[f32], usize, bool, &mut [f32]),
) {
    let total = rows * cols;
    let a = io.load(1, total, dtype);
    let b = io.load(2, if broadcast_rows { cols } else { total }, dtype);
    let mut out = vec![0.0; total];
    op(&a, &b, cols, broadcast_rows, &mut out);
    io.store(0, &out, dtype);
}

/// The attention block both attention kernels start with: Q, K and V
/// loaded in the operand type, the scores `scale · q·kᵀ`
/// ([`math::attention_scores`]) also stored in the F32 scratch operand
/// (slot 4). Returns the AMP mode, the scores and V.
fn attention_scores(
    io: &mut Io<'_>,
    (qr, kv, hd): (usize, usize, usize),
    scale: f32,
    dtype: DType,
) -> (AmpMode, Vec<f32>, Vec<f32>) {
    let q = io.load(1, qr * hd, dtype);
    let k = io.load(2, kv * hd, dtype);
    let v = io.load(3, kv * hd, dtype);
    let mode = attention_mode(dtype);
    let scores = math::attention_scores(mode, (qr, kv, hd), &q, &k, scale);
    io.store(4, &scores, DType::F32);
    (mode, scores, v)
}

/// Strided block copy; the source is read whole before any write, so
/// overlapping source and destination behave like a copy through a buffer.
fn copy_runs(io: &mut Io<'_>, rows: u32, row_bytes: u32, src_pitch: u32, dst_pitch: u32) {
    let mut staged = Vec::with_capacity(rows as usize * row_bytes as usize);
    for r in 0..rows {
        let addr = io.addrs[1] + r * src_pitch;
        // Invariant: run_kernel checked the strided extent against SRAM.
        staged.extend_from_slice(io.memory.slice(addr, row_bytes).unwrap_or(&[]));
    }
    for (r, run) in staged.chunks(row_bytes.max(1) as usize).enumerate() {
        let addr = io.addrs[0] + r as u32 * dst_pitch;
        if let Ok(dst) = io.memory.slice_mut(addr, row_bytes) {
            dst.copy_from_slice(run);
        }
    }
}
