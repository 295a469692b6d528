//! A semantic oracle for lowering: runs a [`TileSchedule`] in f32 on
//! per-tile, per-buffer element arrays (no addresses, no timing) so tests
//! can compare a lowered program with a reference interpretation of the IR.
//! Every element offset goes through [`Buffer::iteration_offset`], the same
//! per-iteration address function emission uses. Element types are ignored
//! (all arithmetic in f32); this checks data movement and kernel operand
//! wiring, not rounding.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::schedule::*;
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::kernel::{transposed, Kernel, PartialRecord};

/// Why execution stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// A host buffer whose tensor the caller could not supply.
    MissingTensor(String),
    /// A reference outside a buffer's block on a tile.
    BadReference {
        /// Buffer.
        buffer: BufferId,
        /// Tile.
        tile: LogicalTile,
    },
}

impl core::fmt::Display for ExecError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::MissingTensor(name) => write!(f, "no data for tensor `{name}`"),
            Self::BadReference { buffer, tile } => write!(
                f,
                "a reference outside buffer {}'s block on logical tile {}",
                buffer.0,
                tile.get()
            ),
        }
    }
}

impl core::error::Error for ExecError {}

type Key = (u32, LogicalTile);

/// The executor's memory.
pub struct Executor<'s> {
    schedule: &'s TileSchedule,
    mem: BTreeMap<Key, Vec<f32>>,
    iteration: u32,
}

fn elem(b: &Buffer) -> u32 {
    b.dtype.size_bytes() as u32
}

impl<'s> Executor<'s> {
    /// Allocates every buffer and fills host-written ones from `tensor(name)`
    /// (row-major data of the named input/parameter).
    pub fn new(
        schedule: &'s TileSchedule,
        mut tensor: impl FnMut(&str) -> Option<Vec<f32>>,
    ) -> Result<Self, ExecError> {
        let mut mem = BTreeMap::new();
        for b in &schedule.buffers {
            let e = elem(b);
            let names: Vec<String> = match &b.role {
                BufferRole::Input { name } | BufferRole::Parameter { name } => vec![name.clone()],
                BufferRole::Iterated { names } => names.clone(),
                _ => Vec::new(),
            };
            let data: Vec<Vec<f32>> = names
                .iter()
                .map(|n| tensor(n).ok_or_else(|| ExecError::MissingTensor(n.clone())))
                .collect::<Result<_, _>>()?;
            for blk in &b.blocks {
                let stride = (b.iteration_stride(blk) / e) as usize;
                let mut v = vec![f32::NAN; stride * b.copies.max(1) as usize];
                for (copy, d) in data.iter().enumerate() {
                    let cols = blk.cols.len();
                    for (i, r) in blk.rows.clone().enumerate() {
                        for (j, c) in blk.cols.clone().enumerate() {
                            v[copy * stride + i * cols + j] = d
                                .get((r * b.shape[1] + c) as usize)
                                .copied()
                                .unwrap_or(f32::NAN);
                        }
                    }
                }
                mem.insert((b.id.0, blk.tile), v);
            }
        }
        Ok(Executor {
            schedule,
            mem,
            iteration: 0,
        })
    }

    fn start(&self, r: BufferRef, tile: LogicalTile) -> Result<(Key, usize), ExecError> {
        let bad = ExecError::BadReference {
            buffer: r.buffer,
            tile,
        };
        let b = self.schedule.buffer(r.buffer).ok_or(bad.clone())?;
        let blk = b.block_on(tile).ok_or(bad)?;
        Ok((
            (r.buffer.0, tile),
            (b.iteration_offset(blk, self.iteration, r.offset) / elem(b)) as usize,
        ))
    }

    fn read(&self, r: BufferRef, tile: LogicalTile, n: usize) -> Result<Vec<f32>, ExecError> {
        let (k, s) = self.start(r, tile)?;
        let v = self.mem.get(&k).ok_or(ExecError::BadReference {
            buffer: r.buffer,
            tile,
        })?;
        v.get(s..s + n)
            .map(|x| x.to_vec())
            .ok_or(ExecError::BadReference {
                buffer: r.buffer,
                tile,
            })
    }

    fn write(&mut self, r: BufferRef, tile: LogicalTile, data: &[f32]) -> Result<(), ExecError> {
        let (k, s) = self.start(r, tile)?;
        let v = self.mem.get_mut(&k).ok_or(ExecError::BadReference {
            buffer: r.buffer,
            tile,
        })?;
        let dst = v
            .get_mut(s..s + data.len())
            .ok_or(ExecError::BadReference {
                buffer: r.buffer,
                tile,
            })?;
        dst.copy_from_slice(data);
        Ok(())
    }

    fn elem_of(&self, r: BufferRef) -> u32 {
        self.schedule.buffer(r.buffer).map(elem).unwrap_or(4)
    }

    /// Runs every step.
    pub fn run(&mut self) -> Result<(), ExecError> {
        let steps = &self.schedule.steps;
        self.run_steps(steps)
    }

    fn run_steps(&mut self, steps: &'s [Step]) -> Result<(), ExecError> {
        for s in steps {
            match s {
                Step::Compute(c) => {
                    for call in &c.calls {
                        self.call(call)?;
                    }
                }
                Step::Exchange(e) => {
                    // BSP: every send reads before any receive lands.
                    let mut pending = Vec::new();
                    for t in &e.transfers {
                        let n = (t.row_bytes / self.elem_of(t.source)) as usize;
                        let sp = t.source_pitch / self.elem_of(t.source);
                        let mut rows = Vec::new();
                        for i in 0..t.rows {
                            let at = BufferRef {
                                buffer: t.source.buffer,
                                offset: t.source.offset + i * sp * self.elem_of(t.source),
                            };
                            rows.push(self.read(at, t.source_tile, n)?);
                        }
                        pending.push((t, rows));
                    }
                    for (t, rows) in pending {
                        for d in &t.destinations {
                            for (i, row) in rows.iter().enumerate() {
                                let at = BufferRef {
                                    buffer: d.at.buffer,
                                    offset: d.at.offset + i as u32 * d.pitch,
                                };
                                self.write(at, d.tile, row)?;
                            }
                        }
                    }
                }
                Step::Repeat(r) => {
                    for i in 0..r.trip_count {
                        self.iteration = i;
                        self.run_steps(&r.body)?;
                    }
                    self.iteration = 0;
                }
            }
        }
        Ok(())
    }

    /// Runs one kernel call in plain f32: its operands read from the
    /// tile's buffers, the math below, the result written back.
    fn call(&mut self, c: &KernelCall) -> Result<(), ExecError> {
        let t = c.tile;
        let op = |i: usize| operand(c, i);
        let out = match c.kernel {
            Kernel::Gemm {
                m,
                k,
                n,
                b_transposed,
                ..
            } => {
                let (m, k, n) = (m as usize, k as usize, n as usize);
                let (a, b) = (self.read(op(1)?, t, m * k)?, self.read(op(2)?, t, k * n)?);
                matmul(&a, &b, (m, k, n), b_transposed)
            }
            Kernel::ReduceAdd {
                elements, parts, ..
            } => {
                let e = elements as usize;
                let x = self.read(op(1)?, t, e * parts as usize)?;
                (0..e)
                    .map(|i| (0..parts as usize).fold(-0.0, |s, p| s + x[p * e + i]))
                    .collect()
            }
            Kernel::Add {
                rows,
                cols,
                broadcast_rows,
                ..
            } => self.elementwise(c, rows, cols, broadcast_rows, |a, b| a + b)?,
            Kernel::Mul {
                rows,
                cols,
                broadcast_rows,
                ..
            } => self.elementwise(c, rows, cols, broadcast_rows, |a, b| a * b)?,
            Kernel::LayerNorm {
                rows, cols, eps, ..
            } => {
                let (r, cn) = (rows as usize, cols as usize);
                let x = self.read(op(1)?, t, r * cn)?;
                let g = self.read(op(2)?, t, cn)?;
                let b = self.read(op(3)?, t, cn)?;
                layer_norm(&x, &g, &b, (r, cn), eps)
            }
            Kernel::Activation {
                elements, function, ..
            } => {
                let x = self.read(op(1)?, t, elements as usize)?;
                x.iter().map(|&v| function.apply(v)).collect()
            }
            Kernel::Gelu { elements, .. } => {
                let x = self.read(op(1)?, t, elements as usize)?;
                x.iter().map(|&v| gelu(v)).collect()
            }
            Kernel::Softmax { rows, cols, .. } => {
                let (r, cn) = (rows as usize, cols as usize);
                let mut x = self.read(op(1)?, t, r * cn)?;
                for row in x.chunks_mut(cn.max(1)) {
                    softmax(row);
                }
                x
            }
            Kernel::Cast { elements, .. } => self.read(op(1)?, t, elements as usize)?,
            Kernel::Attention {
                q_rows,
                kv_rows,
                head_dim,
                scale,
                ..
            } => self.attention_call(c, (q_rows, kv_rows, head_dim), (scale, false), attention)?,
            Kernel::AttentionPartial {
                q_rows,
                kv_rows,
                head_dim,
                scale,
                dtype,
                values_transposed,
            } => {
                let rows = self.attention_call(
                    c,
                    (q_rows, kv_rows, head_dim),
                    (scale, values_transposed),
                    attention_partial,
                )?;
                PartialRecord::of(head_dim, dtype).to_records(
                    &rows,
                    q_rows as usize,
                    head_dim as usize,
                )
            }
            Kernel::AttentionCombine {
                q_rows,
                head_dim,
                parts,
                dtype,
            } => {
                let (qr, d, np) = (q_rows as usize, head_dim as usize, parts as usize);
                let record = PartialRecord::of(head_dim, dtype);
                let records = self.read(op(1)?, t, np * qr * record.len as usize)?;
                let partials = record.from_records(&records, np * qr, d);
                ipuc_target::kernel::combine_attention_partials(&partials, qr, d, np)
            }
            Kernel::Transpose {
                rows,
                cols,
                src_pitch,
                ..
            } => {
                let (r, cn, pitch) = (rows as usize, cols as usize, src_pitch as usize);
                let span = if r == 0 { 0 } else { (r - 1) * pitch + cn };
                let x = self.read(op(1)?, t, span)?;
                transposed(&x, (r, cn), pitch)
            }
            Kernel::Copy {
                rows,
                row_bytes,
                src_pitch,
                dst_pitch,
            } => {
                // Rows move one by one: nothing is written as a whole.
                return self.copy_rows(c, rows, row_bytes, (src_pitch, dst_pitch));
            }
        };
        self.write(op(0)?, t, &out)
    }

    /// `a + b` or `a * b` (by `f`) of a `rows × cols` operand and another
    /// as large, or one row broadcast over every row.
    fn elementwise(
        &self,
        c: &KernelCall,
        rows: u32,
        cols: u32,
        broadcast_rows: bool,
        f: fn(f32, f32) -> f32,
    ) -> Result<Vec<f32>, ExecError> {
        let n = (rows * cols) as usize;
        let a = self.read(operand(c, 1)?, c.tile, n)?;
        let b = self.read(
            operand(c, 2)?,
            c.tile,
            if broadcast_rows { cols as usize } else { n },
        )?;
        Ok((0..n)
            .map(|i| {
                f(
                    a[i],
                    if broadcast_rows {
                        b[i % cols as usize]
                    } else {
                        b[i]
                    },
                )
            })
            .collect())
    }

    /// An attention call: Q (`q_rows × head_dim`), K and V (`kv_rows ×
    /// head_dim` each; V `head_dim × kv_rows` when `values_transposed`)
    /// from operands 1 to 3, then `f` (whole or partial attention) over
    /// them.
    fn attention_call(
        &self,
        c: &KernelCall,
        (q_rows, kv_rows, head_dim): (u32, u32, u32),
        (scale, values_transposed): (f32, bool),
        f: AttentionFn,
    ) -> Result<Vec<f32>, ExecError> {
        let (qr, kr, d) = (q_rows as usize, kv_rows as usize, head_dim as usize);
        let q = self.read(operand(c, 1)?, c.tile, qr * d)?;
        let k = self.read(operand(c, 2)?, c.tile, kr * d)?;
        let mut v = self.read(operand(c, 3)?, c.tile, kr * d)?;
        if values_transposed {
            // `[head_dim, keys]` back to `[keys, head_dim]`.
            v = transposed(&v, (d, kr), kr);
        }
        Ok(f(&q, &k, &v, (qr, kr, d), scale))
    }

    /// A strided copy of `rows` rows of `row_bytes` from operand 1 to
    /// operand 0, each side stepping by its own pitch.
    fn copy_rows(
        &mut self,
        c: &KernelCall,
        rows: u32,
        row_bytes: u32,
        (src_pitch, dst_pitch): (u32, u32),
    ) -> Result<(), ExecError> {
        let (dst, src) = (operand(c, 0)?, operand(c, 1)?);
        let e = self.elem_of(src);
        for i in 0..rows {
            let row = self.read(
                BufferRef {
                    buffer: src.buffer,
                    offset: src.offset + i * src_pitch,
                },
                c.tile,
                (row_bytes / e) as usize,
            )?;
            self.write(
                BufferRef {
                    buffer: dst.buffer,
                    offset: dst.offset + i * dst_pitch,
                },
                c.tile,
                &row,
            )?;
        }
        Ok(())
    }

    /// The graph outputs, row-major over their 2-D views.
    pub fn outputs(&self) -> Result<BTreeMap<String, Vec<f32>>, ExecError> {
        let mut out = BTreeMap::new();
        for o in &self.schedule.outputs {
            let mut v = vec![f32::NAN; (o.shape[0] * o.shape[1]) as usize];
            for blk in &o.blocks {
                let n = blk.rows.len() * blk.cols.len();
                let data = self.read(
                    BufferRef {
                        buffer: o.buffer,
                        offset: 0,
                    },
                    blk.tile,
                    n,
                )?;
                for (i, r) in blk.rows.clone().enumerate() {
                    for (j, c) in blk.cols.clone().enumerate() {
                        v[(r * o.shape[1] + c) as usize] = data[i * blk.cols.len() + j];
                    }
                }
            }
            out.insert(o.name.clone(), v);
        }
        Ok(out)
    }
}

/// Operand `i` of a call; a call with too few is a bad reference.
fn operand(c: &KernelCall, i: usize) -> Result<BufferRef, ExecError> {
    c.operands.get(i).copied().ok_or(ExecError::BadReference {
        buffer: BufferId(u32::MAX),
        tile: c.tile,
    })
}

/// `a (m × k) · b`, `b` being `k × n` or, transposed, `n × k`.
fn matmul(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize), b_transposed: bool) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for p in 0..k {
                let bv = if b_transposed {
                    b[j * k + p]
                } else {
                    b[p * n + j]
                };
                acc += a[i * k + p] * bv;
            }
            out[i * n + j] = acc;
        }
    }
    out
}

/// Each of the `r` `cn`-wide rows of `x` normalised, then scaled by `g` and shifted
/// by `b`.
fn layer_norm(x: &[f32], g: &[f32], b: &[f32], (r, cn): (usize, usize), eps: f32) -> Vec<f32> {
    let mut out = vec![0f32; r * cn];
    for i in 0..r {
        let row = &x[i * cn..(i + 1) * cn];
        let mean = row.iter().sum::<f32>() / cn as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / cn as f32;
        let inv = 1.0 / libm::sqrtf(var + eps);
        for j in 0..cn {
            out[i * cn + j] = (row[j] - mean) * inv * g[j] + b[j];
        }
    }
    out
}

/// [`attention`] or [`attention_partial`].
type AttentionFn = fn(&[f32], &[f32], &[f32], (usize, usize, usize), f32) -> Vec<f32>;

/// `softmax(q kᵀ · scale) v` for one head.
fn attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    (qr, kr, d): (usize, usize, usize),
    scale: f32,
) -> Vec<f32> {
    let mut out = vec![0f32; qr * d];
    let mut s = vec![0f32; kr];
    for i in 0..qr {
        for j in 0..kr {
            s[j] = (0..d).map(|p| q[i * d + p] * k[j * d + p]).sum::<f32>() * scale;
        }
        softmax(&mut s);
        for p in 0..d {
            out[i * d + p] = (0..kr).map(|j| s[j] * v[j * d + p]).sum();
        }
    }
    out
}

/// One key block's partial attention: per query row the unnormalised
/// `exp(s - max) v` (`d` values), then the max and the sum of the
/// exponentials, for `combine_attention_partials`.
fn attention_partial(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    (qr, kr, d): (usize, usize, usize),
    scale: f32,
) -> Vec<f32> {
    let w = d + 2;
    let mut out = vec![0f32; qr * w];
    let mut s = vec![0f32; kr];
    for i in 0..qr {
        for j in 0..kr {
            s[j] = (0..d).map(|p| q[i * d + p] * k[j * d + p]).sum::<f32>() * scale;
        }
        let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        s.iter_mut().for_each(|x| *x = libm::expf(*x - m));
        for p in 0..d {
            out[i * w + p] = (0..kr).map(|j| s[j] * v[j * d + p]).sum();
        }
        out[i * w + d] = m;
        out[i * w + d + 1] = s.iter().sum();
    }
    out
}

fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::tanhf(0.797_884_6 * (x + 0.044_715 * x * x * x)))
}

fn softmax(row: &mut [f32]) {
    let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = libm::expf(*v - m);
        sum += *v;
    }
    for v in row.iter_mut() {
        *v /= sum;
    }
}
