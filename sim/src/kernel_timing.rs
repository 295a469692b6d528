//! The simulator's own kernel timing model: what a native codelet charges.
//!
//! Kernel *bodies* are not executed as IPU instructions (they run as native
//! codelets), so their cycles are **modelled**, not simulated. This model is
//! the simulator's, kept apart from the planner's estimator
//! (`ipuc_core::plan::cost`): it follows each kernel's structure on the tile
//! and reads the operand addresses of the actual call, so a plan whose
//! estimate ignores a structural cost (uneven work over the six workers,
//! the memory port, the region an operand really lives in, an extra AMP
//! pass) shows up as planner-vs-simulated error in the run report.
//!
//! Every rate comes from `ipuc_target::ipu21::rates`, where each one names
//! its source, what stands behind it (a measurement, Graphcore's poplibs
//! cycle estimators, an estimate) and the ends its sources span. The model
//! is evaluated at one [`RateEnd`] per run: the chosen rates by default,
//! every rate at its optimistic or conservative end for the band a report
//! prints beside its headline.
//!
//! # Structure charged
//!
//! * **Call and worker start-up.** A six-worker codelet costs the measured
//!   six-worker call (`rates::SIX_WORKER_CALL`); an AMP product costs
//!   `rates::AMP_CALL` per call, one call per product or per 64-K block
//!   (`rates::AMP_CALL_K`).
//! * **Six workers on the six-slot barrel.** Work is split over the six
//!   workers (rows of a GEMM/softmax/LayerNorm, vectors of an element-wise
//!   kernel); the call lasts as long as its most loaded worker. A worker
//!   issues once every six cycles ([`super::cycle::ISSUE_INTERVAL`]), so a
//!   loop of `c` issues per element costs the tile `c` cycles per element
//!   when the six workers share the work, and a split that leaves one
//!   worker an extra row costs six cycles per issue of that row.
//! * **AMP passes.** Per K micro-group (16, or 32 for FP8; K padded per
//!   `rates::AMP_K_PAD`), every output row of each 16-column group passes
//!   through the AMP (`m·n_pad·µ / MACs`), and the weights of every column
//!   group are fed once per weight set (`rates::AMP_FEED_*`, G per 64 K),
//!   the region taken from `b`'s address, not the argument block's claim.
//! * **Operand loads and stores.** Element-wise kernels are bound by the
//!   slower of their issue rate and the memory port (`rates::STANDARD_PORT`,
//!   `rates::INTERLEAVED_PORT`). GEMM output stores overlap the next AMP
//!   passes and are not charged separately.
//! * **Composite kernels** — softmax, LayerNorm — are charged as poplibs
//!   builds them from reductions and element-wise passes
//!   (`rates::softmax_x16`, `rates::layer_norm_x16`) plus a per-row cost.
//!   A kernel that stores its result as FP8 (a fused cast) pays the
//!   conversion at the Cast rate (`rates::cast_x16`). Attention's `p·v`
//!   reads its values as AMP weights, which the AMP takes per output
//!   column (`[n, k]`): the `[keys, d]` value block is transposed first
//!   (`rates::PANEL_TRANSPOSE`), by the kernel or — values that arrive
//!   transposed — by `transpose` calls before it, at the same rate.

use ipuc_target::ipu21::rates::{self, RateEnd, SoftmaxForm};
use ipuc_target::ipu21::sram::INTERLEAVED_BASE;
use ipuc_target::ipu21::timing as t;
use ipuc_target::ipu21::timing::AmpMode;
use ipuc_target::kernel::{
    attention_mode, partials_type, AmpProduct, Kernel, KernelArgs, PartialRecord,
};
use ipuc_target::numeric::{Activation, DType};

use super::cycle::ISSUE_INTERVAL;

/// Workers a codelet splits its work over (`docs/facts/ipu21-target.md` §1.3;
/// the count is `ipuc_target::ipu21::contexts::WORKERS`).
pub const WORKERS: u64 = ipuc_target::ipu21::contexts::WORKERS_U64;

/// Where a call's cycles go (all modelled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelTiming {
    /// Call, worker start and rendezvous (or AMP call set-up).
    pub fixed: u64,
    /// Issue-bound work of the most loaded worker (AMP passes for GEMMs).
    pub compute: u64,
    /// Memory-port time of the operand loads and stores.
    pub memory: u64,
    /// AMP weight feed (column groups × weight sets).
    pub weight_feed: u64,
    /// Total charged: `fixed + max(compute, memory) + weight_feed`.
    pub total: u64,
}

impl KernelTiming {
    fn new(fixed: u64, compute: u64, memory: u64, weight_feed: u64) -> Self {
        Self {
            fixed,
            compute,
            memory,
            weight_feed,
            total: fixed + compute.max(memory) + weight_feed,
        }
    }
    fn plus(self, o: KernelTiming) -> Self {
        Self {
            fixed: self.fixed + o.fixed,
            compute: self.compute + o.compute,
            memory: self.memory + o.memory,
            weight_feed: self.weight_feed + o.weight_feed,
            total: self.total + o.total,
        }
    }
}

/// Operand addresses of a call: `[out, in0, in1, …]` (as the ABI passes them).
pub type OperandAddresses = [u32; 6];

fn is_interleaved(addr: u32) -> bool {
    addr >= INTERLEAVED_BASE
}

/// The model at one end of the rates' sources.
#[derive(Clone, Copy, Debug)]
struct Model {
    end: RateEnd,
}

impl Model {
    /// Memory-port cycles to move `bytes` at `addr`'s region rate.
    fn port(&self, bytes: u64, addr: u32) -> u64 {
        let rate = if is_interleaved(addr) {
            rates::INTERLEAVED_PORT.at(self.end)
        } else {
            rates::STANDARD_PORT.at(self.end)
        };
        bytes.div_ceil(u64::from(rate))
    }

    fn six_worker_call(&self) -> u64 {
        u64::from(rates::SIX_WORKER_CALL.at(self.end))
    }

    /// One AMP product `out[m,n] = a[m,k] · b[k,n]` with `b` at `b_addr`,
    /// in the mode its operand types select ([`AmpProduct`]), plus the
    /// conversions the codelet performs on the way in and out.
    fn amp_product(
        &self,
        (m, k, n): (u32, u32, u32),
        (a, b, out): (DType, DType, DType),
        b_addr: u32,
    ) -> KernelTiming {
        let product = AmpProduct::of(a, b, out);
        let x = u64::from;
        let partials = product.partials();
        let converted = [
            (product.convert_a, x(m) * x(k), a, product.operand_type(a)),
            (product.convert_b, x(k) * x(n), b, product.operand_type(b)),
            (product.convert_out, x(m) * x(n), partials, out),
        ];
        let convert: u64 = converted
            .iter()
            .filter(|c| c.0)
            .map(|&(_, elements, from, to)| self.conversion(elements, from, to))
            .sum();
        self.amp_passes(m, k, n, product.mode, b_addr)
            .plus(KernelTiming::new(0, convert, 0, 0))
    }

    /// The AMP passes and weight feed of one product in `mode`.
    fn amp_passes(&self, m: u32, k: u32, n: u32, mode: AmpMode, b_addr: u32) -> KernelTiming {
        let mu = mode.k_micro_group();
        let groups = u64::from(n.div_ceil(t::AMP_COLUMN_GROUP));
        let n_pad = groups * u64::from(t::AMP_COLUMN_GROUP);
        let (micro, calls) = rates::amp_k_geometry(k, mu, self.end);
        // Rows are dealt to the workers; each worker's rows pass through
        // the AMP at 1/6 of the tile's MAC rate.
        let rows = per_worker(u64::from(m)) * WORKERS;
        let pass = (rows * n_pad * u64::from(mu)).div_ceil(u64::from(mode.macs_per_cycle()));
        let g = mode.feed_cycles_per_group(is_interleaved(b_addr), self.end);
        let fp8 = mode == AmpMode::F8F16Partials;
        let feed = rates::amp_feed_cycles(groups, g, mu, fp8, self.end);
        let call = u64::from(rates::AMP_CALL.at(self.end));
        KernelTiming::new(calls * call, micro * pass, 0, micro * feed)
    }

    /// An MLP activation over `elements` (`None`: the tanh GELU) read as
    /// `dtype` and stored as `out`.
    fn activation(
        &self,
        elements: u64,
        function: Option<Activation>,
        (dtype, out): (DType, DType),
        addrs: &OperandAddresses,
    ) -> KernelTiming {
        let rate = rates::mlp_activation_x16(function, dtype, self.end);
        let compute =
            elementwise(elements, vector_of(dtype), rate) + self.conversion(elements, dtype, out);
        let memory = self.port(elements * dtype.size_bytes() as u64, addrs[1])
            + self.port(elements * out.size_bytes() as u64, addrs[0]);
        KernelTiming::new(self.six_worker_call(), compute, memory, 0)
    }

    /// Cycles of the workers writing `elements` transposed
    /// (`rates::PANEL_TRANSPOSE` per element), dealt out evenly.
    fn transpose(&self, elements: u64) -> u64 {
        elementwise(elements, 1, rates::PANEL_TRANSPOSE.at(self.end))
    }

    /// Cycles of the workers converting `elements` from `from` to `to`
    /// (`rates::cast_x16`), dealt out evenly.
    fn conversion(&self, elements: u64, from: DType, to: DType) -> u64 {
        worker_cost(per_worker(elements), rates::cast_x16(from, to, self.end))
    }

    /// LayerNorm of `rows × cols` of `dtype` stored as `out`:
    /// `(merge, compute)`. The cheaper of two codelet variants, as a
    /// codelet with both would choose from its shape:
    ///
    /// * rows dealt to the workers, each worker normalising whole rows;
    /// * with fewer rows than workers (a block of one token row), each
    ///   row's columns dealt to them: partial sums and sums of squares
    ///   merged after a rendezvous, the normalisation after a second, both
    ///   charged as call overheads (`merge`), as for key-major attention.
    fn layer_norm(&self, rows: u32, cols: u32, dtype: DType, out: DType) -> (u64, u64) {
        let per_element = u64::from(
            rates::layer_norm_x16(dtype, self.end) + rates::cast_x16(dtype, out, self.end),
        );
        let row = u64::from(rates::ROW_OVERHEAD_LAYER_NORM.at(self.end));
        let worker = |rows: u64, cols: u64| {
            rows * ((cols * per_element).div_ceil(16) + row) * ISSUE_INTERVAL
        };
        let (rows, cols) = (u64::from(rows), u64::from(cols));
        let by_rows = (0, worker(per_worker(rows), cols));
        let by_cols = (2 * self.six_worker_call(), worker(rows, per_worker(cols)));
        if by_cols.0 + by_cols.1 < by_rows.1 {
            by_cols
        } else {
            by_rows
        }
    }

    /// Softmax of `rows × cols` scores of `scores` into `probs`
    /// (`rates::softmax_x16`), rows dealt to the workers, plus
    /// `extra_x16` per element (a transposed write) and the per-row cost.
    fn softmax(
        &self,
        (rows, cols): (u32, u32),
        (scores, probs): (DType, DType),
        form: SoftmaxForm,
        extra_x16: u32,
    ) -> u64 {
        let per_element = u64::from(rates::softmax_x16(scores, probs, form, self.end) + extra_x16);
        let row = u64::from(rates::softmax_row(form, self.end));
        rowwise(rows, cols, per_element, row)
    }

    /// One head's attention block: the scores on the AMP in the
    /// attention's mode (`attention_mode`: FP16 into FP16 partials), a
    /// softmax over them in that type, then p·v with the probabilities in
    /// the operand type, written as `out`. The scores are formed in
    /// whichever orientation costs less, as a codelet with both variants
    /// would choose from the shapes it is given:
    ///
    /// * **query-major** `q·kᵀ`: the keys are the AMP's weight stream (the
    ///   `[keys, d]` block is already the AMP's `[n, k]` weight order),
    ///   query rows are dealt to the workers, the softmax runs along each
    ///   row;
    /// * **key-major** `k·qᵀ`: the query block is the weight stream — a
    ///   short one when query blocks are small, so far fewer column groups
    ///   to feed — key rows are dealt to the workers; the softmax deals
    ///   keys to the workers too (each keeps per-query partial maxima and
    ///   sums, merged in two extra rendezvous) and writes the
    ///   probabilities transposed, as `[q, keys]` rows for p·v
    ///   (`rates::PANEL_TRANSPOSE` per element).
    ///
    /// `p·v` feeds the values as weights: the `[keys, d]` block is the
    /// `[k, n]` order, transposed to `[n, k]` first (`PANEL_TRANSPOSE`)
    /// unless they arrive `values_transposed`.
    /// The orientation changes no value: every score is the same
    /// micro-group sum over the head dimension
    /// (`codelets::math::attention_scores`).
    fn attention(
        &self,
        (q_rows, kv_rows, head_dim): (u32, u32, u32),
        (dtype, out): (DType, DType),
        values_transposed: bool,
        form: SoftmaxForm,
        addrs: &OperandAddresses,
    ) -> KernelTiming {
        // Both products in the attention's mode (FP16 into FP16 partials
        // for FP16 attention): the scores and probabilities are that type.
        let mode = attention_mode(dtype);
        let partials = partials_type(mode);
        let scores = u64::from(q_rows) * u64::from(kv_rows);
        // Scores written, read back, probabilities written.
        let memory = 3 * self.port(scores * partials.size_bytes() as u64, addrs[4]);
        let score_product = |rows: u32, cols: u32, weights: u32| {
            self.amp_passes(rows, head_dim, cols, mode, weights)
        };
        let softmax_types = (partials, dtype);
        let query_major = score_product(q_rows, kv_rows, addrs[2]).plus(KernelTiming::new(
            0,
            self.softmax((q_rows, kv_rows), softmax_types, form, 0),
            memory,
            0,
        ));
        // The partial statistics of the six workers, merged per query at
        // the element-wise rate, after two extra rendezvous (charged as
        // call overheads).
        let merge = 2 * self.six_worker_call()
            + elementwise(
                2 * WORKERS * u64::from(q_rows),
                1,
                rates::binary_x16(DType::F32, self.end),
            );
        let key_major = score_product(kv_rows, q_rows, addrs[1]).plus(KernelTiming::new(
            merge,
            self.softmax(
                (kv_rows, q_rows),
                softmax_types,
                form,
                rates::PANEL_TRANSPOSE.at(self.end),
            ),
            memory,
            0,
        ));
        let scores = if key_major.total < query_major.total {
            key_major
        } else {
            query_major
        };
        let values = if values_transposed {
            0
        } else {
            self.transpose(u64::from(kv_rows) * u64::from(head_dim))
        };
        let convert = self.conversion(u64::from(q_rows) * u64::from(head_dim), partials, out);
        let pv = self
            .amp_passes(q_rows, kv_rows, head_dim, mode, addrs[3])
            .plus(KernelTiming::new(0, values + convert, 0, 0));
        scores.plus(pv)
    }
}

/// Units of work of the most loaded of six workers when `units` are dealt
/// out evenly.
fn per_worker(units: u64) -> u64 {
    units.div_ceil(WORKERS)
}

/// Cycles for one worker to do `units` of work at `cost_x16 / 16` issues
/// per unit (six workers sharing the barrel: one issue every six cycles).
fn worker_cost(units: u64, cost_x16: u32) -> u64 {
    (units * u64::from(cost_x16) * ISSUE_INTERVAL).div_ceil(16)
}

/// Row-wise kernel: rows dealt to workers, each row costing
/// `cols · per_element_x16 / 16 + row_overhead` issues.
fn rowwise(rows: u32, cols: u32, per_element_x16: u64, row_overhead: u64) -> u64 {
    let r = per_worker(u64::from(rows));
    let per_row = (u64::from(cols) * per_element_x16).div_ceil(16) + row_overhead;
    r * per_row * ISSUE_INTERVAL
}

/// Element-wise kernel over `elements` in vectors of `vector` elements at
/// `cost_x16 / 16` issues per element.
fn elementwise(elements: u64, vector: u64, cost_x16: u32) -> u64 {
    let vectors = per_worker(elements.div_ceil(vector.max(1)));
    worker_cost(vectors * vector, cost_x16)
}

/// Elements per 64-bit vector of `d`.
fn vector_of(d: DType) -> u64 {
    (8 / d.size_bytes().max(1)) as u64
}

/// The modelled cycles of one kernel call with its operand addresses, with
/// every rate at `end` of its sources.
pub fn kernel_timing(args: &KernelArgs, addrs: &OperandAddresses, end: RateEnd) -> KernelTiming {
    let model = Model { end };
    let x = u64::from;
    let fixed = model.six_worker_call();
    let mut timing = match args.kernel {
        Kernel::Gemm {
            m, k, n, a, b, out, ..
        } => model.amp_product((m, k, n), (a, b, out), addrs[2]),
        Kernel::ReduceAdd {
            elements,
            parts,
            input,
            out,
        } => {
            // Dealt to the workers by output elements.
            let compute =
                rates::reduce_cycles(per_worker(x(elements)), parts, input, out, end) * WORKERS;
            let out_bytes = x(elements) * out.size_bytes() as u64;
            let memory = model.port(x(elements) * x(parts) * input.size_bytes() as u64, addrs[1])
                + model.port(out_bytes, addrs[0]);
            KernelTiming::new(fixed, compute, memory, 0)
        }
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
        } => {
            let e = x(rows) * x(cols);
            let size = dtype.size_bytes() as u64;
            let compute = elementwise(e, vector_of(dtype), rates::binary_x16(dtype, end));
            let b = if broadcast_rows { x(cols) } else { e };
            let memory = model.port(e * size, addrs[1])
                + model.port(b * size, addrs[2])
                + model.port(e * size, addrs[0]);
            KernelTiming::new(fixed, compute, memory, 0)
        }
        Kernel::LayerNorm {
            rows,
            cols,
            dtype,
            param,
            out,
            ..
        } => {
            let e = x(rows) * x(cols);
            let size = dtype.size_bytes() as u64;
            // Two reads of x (statistics, then normalise), one write.
            let memory = 2 * model.port(e * size, addrs[1])
                + model.port(e * out.size_bytes() as u64, addrs[0])
                + 2 * model.port(x(cols) * param.size_bytes() as u64, addrs[2]);
            let (merge, compute) = model.layer_norm(rows, cols, dtype, out);
            KernelTiming::new(fixed + merge, compute, memory, 0)
        }
        Kernel::Gelu {
            elements,
            dtype,
            out,
        } => model.activation(x(elements), None, (dtype, out), addrs),
        Kernel::Activation {
            elements,
            dtype,
            out,
            function,
        } => model.activation(x(elements), Some(function), (dtype, out), addrs),
        Kernel::Softmax { rows, cols, dtype } => {
            let compute = model.softmax((rows, cols), (dtype, dtype), SoftmaxForm::Normalised, 0);
            let e = x(rows) * x(cols);
            let size = dtype.size_bytes() as u64;
            let memory = 2 * model.port(e * size, addrs[1]) + model.port(e * size, addrs[0]);
            KernelTiming::new(fixed, compute, memory, 0)
        }
        Kernel::Cast { elements, from, to } => {
            let e = x(elements);
            let compute = model.conversion(e, from, to);
            let memory = model.port(e * from.size_bytes() as u64, addrs[1])
                + model.port(e * to.size_bytes() as u64, addrs[0]);
            KernelTiming::new(fixed, compute, memory, 0)
        }
        Kernel::Attention {
            q_rows,
            kv_rows,
            head_dim,
            dtype,
            ..
        } => model.attention(
            (q_rows, kv_rows, head_dim),
            (dtype, dtype),
            false,
            SoftmaxForm::Normalised,
            addrs,
        ),
        Kernel::AttentionPartial {
            q_rows,
            kv_rows,
            head_dim,
            dtype,
            values_transposed,
            ..
        } => model.attention(
            (q_rows, kv_rows, head_dim),
            (dtype, PartialRecord::of(head_dim, dtype).element),
            values_transposed,
            SoftmaxForm::Unnormalised,
            addrs,
        ),
        Kernel::AttentionCombine {
            q_rows,
            head_dim,
            parts,
            dtype,
        } => {
            // One rescale-and-add pass in F32 over every partial row (its
            // `p·v` widened from the record's type first), one exp per
            // query row and part.
            let record = PartialRecord::of(head_dim, dtype);
            let e = x(q_rows) * (x(head_dim) + 2) * x(parts);
            let widened = x(q_rows) * x(head_dim) * x(parts);
            let compute = elementwise(e, 2, rates::binary_x16(DType::F32, end))
                + model.conversion(widened, record.element, DType::F32)
                + elementwise(x(q_rows) * x(parts), 1, rates::exp_x16(DType::F32, end));
            let records = x(q_rows) * x(parts) * u64::from(record.row_bytes());
            let memory = model.port(records, addrs[1])
                + model.port(
                    x(q_rows) * x(head_dim) * dtype.size_bytes() as u64,
                    addrs[0],
                );
            KernelTiming::new(fixed, compute, memory, 0)
        }
        Kernel::Transpose {
            rows, cols, dtype, ..
        } => {
            let e = x(rows) * x(cols);
            let bytes = e * dtype.size_bytes() as u64;
            let memory = model.port(bytes, addrs[1]) + model.port(bytes, addrs[0]);
            KernelTiming::new(fixed, model.transpose(e), memory, 0)
        }
        Kernel::Copy {
            rows, row_bytes, ..
        } => {
            // 64-bit words dealt to the workers at the local-copy rate.
            let words = (x(rows) * x(row_bytes)).div_ceil(8);
            let per_byte_x16 = 16 / rates::LOCAL_COPY.at(end).max(1);
            let compute = worker_cost(per_worker(words) * 8, per_byte_x16.max(1));
            let bytes = x(rows) * x(row_bytes);
            let memory = model.port(bytes, addrs[1]) + model.port(bytes, addrs[0]);
            KernelTiming::new(fixed, compute, memory, 0)
        }
    };
    if let (Kernel::Gemm { m, n, out, .. }, Some(bias)) = (&args.kernel, args.epilogue.bias) {
        // Bias epilogue: a broadcast add over the output block by the workers.
        let e = x(*m) * x(*n);
        let compute = elementwise(e, vector_of(*out), rates::binary_x16(*out, end));
        let memory = 2 * model.port(e * out.size_bytes() as u64, addrs[0])
            + model.port(x(*n) * bias.size_bytes() as u64, addrs[3]);
        timing = timing.plus(KernelTiming::new(0, compute, memory, 0));
    }
    timing
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: RateEnd = RateEnd::Chosen;
    const M: Model = Model { end: C };

    fn gemm(m: u32, k: u32, n: u32, a: DType, b: DType) -> KernelArgs {
        KernelArgs::new(Kernel::Gemm {
            m,
            k,
            n,
            a,
            b,
            out: DType::F32,
            b_transposed: false,
            b_interleaved: true,
        })
    }

    const STANDARD: u32 = 0x6_0000;
    const INTERLEAVED: u32 = 0x9_0000;

    /// `docs/facts/ipu21-target.md` §6 (ipu-stack `amp_kernel_cycles`):
    /// 294 + Σ_{16-K micro-groups} (⌈rows·cols/4⌉ + ⌈groups·G/4⌉), with
    /// G = 1157 interleaved, 1280 standard (the slower revision,
    /// `docs/facts/kernel-rates.md`).
    fn peer_amp(m: u64, k: u64, n: u64, g: u64) -> u64 {
        let groups = n.div_ceil(16);
        294 + k.div_ceil(16) * ((groups * 16 * m).div_ceil(4) + (groups * g).div_ceil(4))
    }

    #[test]
    fn amp_model_matches_the_peer_kernel_formula() {
        // The peer's kernel is FP16 operands into FP16 partials. Row counts
        // that split evenly over six workers reproduce its formula exactly,
        // for both weight regions.
        let fp16 = AmpMode::F16F16Partials;
        for (m, k, n) in [
            (6u32, 16u32, 16u32),
            (48, 64, 64),
            (96, 768, 128),
            (192, 64, 80),
        ] {
            for (addr, g) in [(INTERLEAVED, 1157), (STANDARD, 1280)] {
                let got = M.amp_passes(m, k, n, fp16, addr).total;
                let want = peer_amp(m.into(), k.into(), n.into(), g);
                assert_eq!(got, want, "{m}x{k}x{n} at {addr:#x}");
            }
        }
        // Uneven rows: the model charges the most loaded worker — 64 rows
        // run as 11 per worker (66 row passes): two extra passes per group
        // and micro-group, below 3 % and structural (not tuned away).
        let got = M.amp_passes(64, 64, 64, fp16, STANDARD).total;
        let want = peer_amp(64, 64, 64, 1280);
        assert_eq!(got, 294 + 4 * (66 * 64 * 16 / 64 + 1280));
        assert!(
            got > want && (got - want) * 100 < 3 * want,
            "{got} vs {want}"
        );
    }

    #[test]
    fn the_rate_ends_order_every_kernel() {
        let at = |end, args: &KernelArgs, addrs: &OperandAddresses| {
            kernel_timing(args, addrs, end).total
        };
        let attention = KernelArgs::new(Kernel::Attention {
            q_rows: 32,
            kv_rows: 183,
            head_dim: 72,
            scale: 0.118,
            dtype: DType::F16,
        });
        let f8 = DType::f143(-4);
        let mut fp8_gemm = gemm(122, 431, 48, f8, f8);
        if let Kernel::Gemm { out, .. } = &mut fp8_gemm.kernel {
            *out = DType::F16;
        }
        let ln = KernelArgs::new(Kernel::LayerNorm {
            rows: 1,
            cols: 1152,
            eps: 1e-6,
            dtype: DType::F16,
            param: DType::F32,
            out: f8,
        });
        let mut addrs = [INTERLEAVED; 6];
        addrs[1] = INTERLEAVED + 0x1_0000;
        for args in [&attention, &fp8_gemm, &ln] {
            let (o, c, k) = (
                at(RateEnd::Optimistic, args, &addrs),
                at(C, args, &addrs),
                at(RateEnd::Conservative, args, &addrs),
            );
            assert!(o < c && c <= k, "{:?}: {o} {c} {k}", args.kernel);
        }
    }

    #[test]
    fn each_mode_runs_at_its_facts_rate() {
        // The row term of 600 rows × one column group × one micro-group.
        for mode in AmpMode::ALL {
            let mu = mode.k_micro_group();
            let t = M.amp_passes(600, mu, 16, mode, INTERLEAVED);
            assert_eq!(
                600 * 16 * u64::from(mu) / t.compute,
                u64::from(mode.macs_per_cycle()),
                "{mode:?}"
            );
            assert_eq!(
                t.weight_feed,
                u64::from(mode.feed_cycles_per_group(true, C)).div_ceil(4)
            );
        }
        // FP8 × FP8: per unit of K both terms are half the FP16 kernel's.
        let f8 = M.amp_passes(96, 1024, 128, AmpMode::F8F16Partials, INTERLEAVED);
        let f16 = M.amp_passes(96, 1024, 128, AmpMode::F16F16Partials, INTERLEAVED);
        assert_eq!(2 * f8.compute, f16.compute);
        assert_eq!(2 * f8.weight_feed, f16.weight_feed);
    }

    #[test]
    fn gemm_kernels_run_in_the_mode_of_their_types_and_pay_their_conversions() {
        let addrs = [INTERLEAVED; 6];
        let f8 = DType::f143(-4);
        let timing = |a, b, out| {
            let mut g = gemm(48, 64, 64, a, b);
            if let Kernel::Gemm { out: o, .. } = &mut g.kernel {
                *o = out;
            }
            kernel_timing(&g, &addrs, C)
        };
        let fp32_partials = timing(DType::F16, DType::F16, DType::F32);
        assert_eq!(
            fp32_partials,
            M.amp_passes(48, 64, 64, AmpMode::F16F32Partials, INTERLEAVED)
        );
        // FP16 output: 48·64 partials converted at 0.75 cycles each (6
        // bytes at 8 B/cycle), 512 per worker.
        let fp16_out = timing(DType::F16, DType::F16, DType::F16);
        assert_eq!(fp16_out.compute - fp32_partials.compute, 48 * 64 * 12 / 16);
        // FP8 weights with FP16 activations: widened at the FP8 cast rate,
        // 2 cycles per element, ⌈4096 / 6⌉ elements on the busiest worker.
        let widened = timing(DType::F16, f8, DType::F32);
        assert_eq!(widened.compute - fp32_partials.compute, 683 * 2 * 6);
        // FP8 × FP8 into FP16 partials: no conversion, the 128-MAC mode.
        assert_eq!(
            timing(f8, f8, DType::F16),
            M.amp_passes(48, 64, 64, AmpMode::F8F16Partials, INTERLEAVED)
        );
    }

    #[test]
    fn weight_region_comes_from_the_address() {
        let args = gemm(48, 64, 64, DType::F16, DType::F16);
        let mut addrs = [0x9_8000u32; 6];
        addrs[2] = STANDARD;
        let standard = kernel_timing(&args, &addrs, C).total;
        addrs[2] = INTERLEAVED;
        let interleaved = kernel_timing(&args, &addrs, C).total;
        assert_eq!(standard - interleaved, 4 * (1280 - 1157));
    }

    #[test]
    fn six_worker_overhead_is_the_measured_copy_call() {
        // A 48-byte copy: six 64-bit words, one per worker.
        let copy = KernelArgs::new(Kernel::Copy {
            rows: 1,
            row_bytes: 48,
            src_pitch: 48,
            dst_pitch: 48,
        });
        let t = kernel_timing(&copy, &[STANDARD; 6], C);
        assert_eq!(t.fixed, 288);
        // One 8-byte word per worker at 8/6 B/cycle: 6 cycles; the memory
        // port moves 48 + 48 bytes at 8 B/cycle: 12 cycles.
        assert_eq!(t.compute, 6);
        assert_eq!(t.memory, 12);
        assert_eq!(t.total, 300);
    }

    #[test]
    fn elementwise_kernels_are_bound_by_the_slower_of_issue_and_memory() {
        // 6144 F32 elements added in standard memory: issue 1.5 cycles per
        // element = 9216 cycles, memory 3 × 24 KiB / 8 B = 9216 cycles.
        let add = KernelArgs::new(Kernel::Add {
            rows: 64,
            cols: 96,
            broadcast_rows: false,
            dtype: DType::F32,
        });
        let t = kernel_timing(&add, &[STANDARD; 6], C);
        assert_eq!(t.compute, 9216);
        assert_eq!(t.memory, 9216);
        assert_eq!(t.total, 288 + 9216);
        // Interleaved operands halve the port time; the issue rate binds.
        let t = kernel_timing(&add, &[INTERLEAVED; 6], C);
        assert_eq!((t.memory, t.total), (4608, 288 + 9216));
    }

    #[test]
    fn rows_left_over_for_one_worker_cost_a_full_row() {
        let sm = |rows| {
            KernelArgs::new(Kernel::Softmax {
                rows,
                cols: 64,
                dtype: DType::F16,
            })
        };
        let six = kernel_timing(&sm(6), &[INTERLEAVED; 6], C).compute;
        let seven = kernel_timing(&sm(7), &[INTERLEAVED; 6], C).compute;
        // 64 × 3.75 + 74 issues per row, six cycles each.
        assert_eq!(six, (64 * 60 / 16 + 74) * 6);
        assert_eq!(seven, 2 * six);
    }

    /// A LayerNorm block of one token row deals its columns to the six
    /// workers and pays two merge rendezvous; twelve rows are dealt two to
    /// a worker. Storing FP8 adds the conversion at the FP8 cast rate.
    #[test]
    fn layer_norm_deals_short_blocks_by_columns_and_charges_a_fused_cast() {
        let ln = |rows, out| {
            KernelArgs::new(Kernel::LayerNorm {
                rows,
                cols: 1152,
                eps: 1e-6,
                dtype: DType::F16,
                param: DType::F32,
                out,
            })
        };
        let one = kernel_timing(&ln(1, DType::F16), &[INTERLEAVED; 6], C);
        // 192 columns per worker at 3.5 issues + 130 per row, six cycles each.
        assert_eq!(one.compute, (192 * 56 / 16 + 130) * 6);
        assert_eq!(one.fixed, 3 * 288);
        let twelve = kernel_timing(&ln(12, DType::F16), &[INTERLEAVED; 6], C);
        assert_eq!(twelve.compute, 2 * (1152 * 56 / 16 + 130) * 6);
        assert_eq!(twelve.fixed, 288);
        let stored = kernel_timing(&ln(1, DType::f143(0)), &[INTERLEAVED; 6], C);
        // 192 elements per worker at 2 more issues each.
        assert_eq!(stored.compute - one.compute, 192 * 2 * 6);
    }

    /// Attention: two AMP products in the attention's FP16→FP16 mode, the
    /// FP16 softmax over the scores built from its parts, the value block
    /// transposed for `p·v` — the scores in the cheaper orientation.
    /// A key block's partial runs the whole attention's products and
    /// softmax without the normalising multiply (no inverse, no pass, one
    /// broadcast row start fewer) and writes `p·v` as the AMP produced it
    /// (FP16, in its partial record), as the whole head writes its output.
    #[test]
    fn an_attention_partial_skips_the_normalising_multiply() {
        let (q_rows, kv_rows, head_dim) = (6, 16, 64);
        let whole = KernelArgs::new(Kernel::Attention {
            q_rows,
            kv_rows,
            head_dim,
            scale: 0.125,
            dtype: DType::F16,
        });
        let partial = KernelArgs::new(Kernel::AttentionPartial {
            q_rows,
            kv_rows,
            head_dim,
            scale: 0.125,
            dtype: DType::F16,
            values_transposed: false,
        });
        let mut addrs = [INTERLEAVED; 6];
        (addrs[1], addrs[2], addrs[3]) = (STANDARD, STANDARD, STANDARD);
        // Query-major, one row per worker: the pass is 16 FP16 elements at
        // 0.75 and 25 per row, times the six-cycle issue.
        let pass = ((16 * 12u64).div_ceil(16) + 25) * 6;
        assert_eq!(
            kernel_timing(&partial, &addrs, C).total,
            kernel_timing(&whole, &addrs, C).total - pass
        );
    }

    #[test]
    fn attention_is_two_fp16_products_a_softmax_and_two_transposes() {
        let call = |q_rows, kv_rows| {
            KernelArgs::new(Kernel::Attention {
                q_rows,
                kv_rows,
                head_dim: 64,
                scale: 0.125,
                dtype: DType::F16,
            })
        };
        let mut addrs = [INTERLEAVED; 6];
        (addrs[1], addrs[2], addrs[3]) = (STANDARD, STANDARD, STANDARD);
        let mode = AmpMode::F16F16Partials;
        let softmax_x16 = u64::from(rates::softmax_x16(
            DType::F16,
            DType::F16,
            SoftmaxForm::Normalised,
            C,
        ));
        let values = |kv: u64| worker_cost(per_worker(kv * 64), 48);
        // 6 queries × 16 keys: query-major, one row per worker.
        let qk = M.amp_passes(6, 64, 16, mode, STANDARD).total;
        let pv = M.amp_passes(6, 16, 64, mode, STANDARD).total;
        let softmax = ((16 * softmax_x16).div_ceil(16) + 74) * 6;
        assert_eq!(
            kernel_timing(&call(6, 16), &addrs, C).total,
            qk + pv + softmax + values(16)
        );
        // 32 queries × 192 keys: key-major feeds 2 query column groups
        // instead of 12 key groups, but writes the probabilities transposed
        // (3 more cycles per element), pays the per-row cost on 192 key rows
        // and merges the workers' statistics; at the chosen rates
        // query-major is the cheaper.
        let qk = M.amp_passes(192, 64, 32, mode, STANDARD).total;
        let softmax = 32 * ((32 * (softmax_x16 + 48)).div_ceil(16) + 74) * 6;
        let merge = 2 * 288 + elementwise(2 * 6 * 32, 1, 24);
        let key_major = qk + softmax + merge;
        let query_major =
            M.amp_passes(32, 64, 192, mode, STANDARD).total + rowwise(32, 192, softmax_x16, 74);
        assert!(query_major < key_major, "{query_major} vs {key_major}");
        let pv = M.amp_passes(32, 192, 64, mode, STANDARD).total;
        assert_eq!(
            kernel_timing(&call(32, 192), &addrs, C).total,
            query_major + pv + values(192)
        );
        // With one key per worker row (6 queries × 1152 keys), feeding the
        // 72 key groups costs more than the transposed write: key-major.
        let qk = M.amp_passes(1152, 64, 6, mode, STANDARD).total;
        let softmax = 192 * ((6 * (softmax_x16 + 48)).div_ceil(16) + 74) * 6;
        let merge = 2 * 288 + elementwise(2 * 6 * 6, 1, 24);
        let key_major = qk + softmax + merge;
        let query_major =
            M.amp_passes(6, 64, 1152, mode, STANDARD).total + rowwise(6, 1152, softmax_x16, 74);
        let pv = M.amp_passes(6, 1152, 64, mode, STANDARD).total;
        assert_eq!(
            kernel_timing(&call(6, 1152), &addrs, C).total,
            key_major.min(query_major) + pv + values(1152)
        );
    }
}
