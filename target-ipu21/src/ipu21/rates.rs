//! The kernel rates: every figure a native codelet's modelled cycles and the
//! planner's estimate are built from, each with the ends its sources span,
//! the value ipuc charges, what stands behind it and where it comes from.
//!
//! Kernel bodies run as native codelets, so their cycles are *modelled*;
//! a model that flatters us is a defect. The rule for [`Rate::chosen`]:
//! where sources disagree the slower stands unless an IPU21 measurement
//! supports the faster; where only an estimate exists, its conservative
//! end. [`RateEnd`] moves every rate to one end at once, which is how the
//! band beside a headline figure is made (`ipuc run --rate-band`).
//!
//! `docs/facts/kernel-rates.md` is this table as `ipuc rates` prints it
//! (a test keeps the two equal).

/// Which end of its sources every rate is taken at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RateEnd {
    /// The fastest figure any source gives.
    Optimistic,
    /// The figure ipuc charges (the module's rule).
    #[default]
    Chosen,
    /// The slowest figure any source gives, or the far end of an estimate.
    Conservative,
}

impl RateEnd {
    /// Every end, fastest first.
    pub const ALL: [RateEnd; 3] = [RateEnd::Optimistic, RateEnd::Chosen, RateEnd::Conservative];

    /// Lower-case name (flag values, reports).
    pub const fn name(self) -> &'static str {
        match self {
            RateEnd::Optimistic => "optimistic",
            RateEnd::Chosen => "chosen",
            RateEnd::Conservative => "conservative",
        }
    }
}

/// What stands behind a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Evidence {
    /// Measured on IPU21 hardware (by the public peer or the seeds).
    Measured,
    /// Graphcore's own cycle estimator (poplibs), read per vertex.
    VendorEstimator,
    /// An estimate: no measurement and no vendor figure behind it.
    Estimate,
}

impl Evidence {
    /// Short name for tables.
    pub const fn name(self) -> &'static str {
        match self {
            Evidence::Measured => "measured",
            Evidence::VendorEstimator => "vendor estimator",
            Evidence::Estimate => "estimate",
        }
    }
}

/// One kernel rate: the ends of its sources and the value charged.
///
/// The three values are in [`Rate::unit`]; for a cost (cycles per …) the
/// optimistic end is the smallest, for a throughput (… per cycle) the
/// largest. `source` names the public repository path or document section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Identifier in tables.
    pub name: &'static str,
    /// What one unit of the value is.
    pub unit: &'static str,
    /// Fastest end.
    pub optimistic: u32,
    /// Charged.
    pub chosen: u32,
    /// Slowest end.
    pub conservative: u32,
    /// What stands behind `chosen`.
    pub evidence: Evidence,
    /// Where it comes from (and why `chosen` is where it is).
    pub source: &'static str,
}

impl Rate {
    /// The value at `end`.
    pub const fn at(&self, end: RateEnd) -> u32 {
        match end {
            RateEnd::Optimistic => self.optimistic,
            RateEnd::Chosen => self.chosen,
            RateEnd::Conservative => self.conservative,
        }
    }

    /// A rate whose three values agree (a measurement, one estimator).
    const fn exact(
        name: &'static str,
        unit: &'static str,
        value: u32,
        evidence: Evidence,
        source: &'static str,
    ) -> Rate {
        Rate {
            name,
            unit,
            optimistic: value,
            chosen: value,
            conservative: value,
            evidence,
            source,
        }
    }
}

use crate::numeric::{Activation, DType};

/// The sources the table cites by key: public repository files (path,
/// commit) and the facts copied into `docs/facts/`.
pub const SOURCES: [(&str, &str); 8] = [
    ("popops-tables", "poplibs lib/popops/popopsCycleEstimators.hpp @0b8caa89: unaryOpPerfInfo, binaryOpPerfInfo; .cpp UnaryOp1D/BinaryOp1D"),
    ("popops-cast", "poplibs lib/popops/PerformanceEstimation.cpp @03953b1c: castWorkerCycles, getCast1DCycleEstimate; CastModelling.cpp @06f1b393"),
    ("popops-reduce", "poplibs lib/popops/reduction/CycleEstimationFunctions.cpp @b2996457: getCyclesEstimateForStridedReduce, getCycleEstimateReduceAllRegionsContinuous"),
    ("poplin-amp", "poplibs lib/poplin/PerformanceEstimation.hpp, poplinCycleEstimators.cpp @f9d7e152: ConvPartial1x1Out (weight load, inner and outer loops, half and quarter)"),
    ("popnn", "poplibs lib/popnn/NonLinearity.cpp (softmax: max-reduce, subtract, exp, sum-reduce, multiply), PerformanceEstimation.hpp @54b30a26 getNonLinearityOpCycles; lib/poplin/Norms.cpp @307ce7b2"),
    ("popnn-gelu", "poplibs lib/popnn/codelets/asm/NonLinearity2D_gelu.S @8592a438 (half and float loops) and NonLinearityLoop_gelu.S @2111340b (half): the tanh-form GELU, counted bundle by bundle"),
    ("peer", "ipu-stack crates/ipu-codegen/src/cost.rs (IPU21_TARGET_COSTS, IPU21_AMP_KERNEL_COSTS; two revisions): docs/facts/ipu21-target.md §6, peer study §3"),
    ("seeds", "docs/facts/seed-vit-repeat-evaluation.txt (patcher cycles measured on hardware)"),
];

/// Fixed cost of one AMP product: call, worker start, AMP set-up.
pub const AMP_CALL: Rate = Rate::exact(
    "amp_call",
    "cycles per AMP call",
    294,
    Evidence::Measured,
    "[peer] IPU21_AMP_KERNEL_COSTS.call_cycles, measured (§6); poplibs' 1x1 AMP vertex: 295 fixed (ld128)",
);

/// K one AMP call covers (0: the whole product in one call).
pub const AMP_CALL_K: Rate = Rate {
    name: "amp_call_k",
    unit: "K elements per AMP call (0 = one call per product)",
    optimistic: 0,
    chosen: 0,
    conservative: 64,
    evidence: Evidence::VendorEstimator,
    source: "poplibs' AMP vertex loops over every input-channel group in one call [poplin-amp]; [peer]'s kernel is called per 64-K block (conservative end)",
};

/// Weight feed per 16-column group per 64 K, weights in interleaved memory
/// (fed with 128-bit loads).
pub const AMP_FEED_INTERLEAVED: Rate = Rate {
    name: "amp_feed_interleaved",
    unit: "cycles per 16 columns × 64 K (G)",
    optimistic: 833,
    chosen: 1157,
    conservative: 1157,
    evidence: Evidence::Measured,
    source: "[peer] cost.rs: 940 in one revision, 1157 in another (both 'cycle counts of the generated IPU21 AMP kernel'; the slower stands); poplibs' 1x1 vertex ≈ 833 per group (optimistic)",
};

/// The same with weights in standard memory (64-bit loads).
pub const AMP_FEED_STANDARD: Rate = Rate {
    name: "amp_feed_standard",
    unit: "cycles per 16 columns × 64 K (G)",
    optimistic: 961,
    chosen: 1280,
    conservative: 1280,
    evidence: Evidence::Measured,
    source: "[peer] cost.rs: 1063 in one revision, 1280 in another (the slower stands); poplibs' 1x1 vertex ≈ 961 (ld64, optimistic)",
};

/// K covered by one FP8 weight set of 16 columns (its feed costs a
/// quarter of G, as a 16-K FP16 set does).
pub const AMP_FP8_SET_K: Rate = Rate {
    name: "amp_fp8_set_k",
    unit: "K per FP8 weight set (feed G/4)",
    optimistic: 32,
    chosen: 32,
    conservative: 16,
    evidence: Evidence::VendorEstimator,
    source: "poplibs QUARTER weight load: 32 cycles per 16 columns × 32 K, as FP16's per 16 × 16 [poplin-amp]; [peer]'s FP8 kernel: 512-byte sets of 16 × 32 (siglip-and-fp8.md §4); no FP8 measurement (conservative: FP16's feed per K)",
};

/// K a product is padded to (0: the mode's micro-group, 16 or 32 for FP8).
pub const AMP_K_PAD: Rate = Rate {
    name: "amp_k_pad",
    unit: "K padded to a multiple of (0 = the mode's micro-group)",
    optimistic: 0,
    chosen: 0,
    conservative: 64,
    evidence: Evidence::VendorEstimator,
    source: "poplibs' AMP vertex works in input-channel groups of the conv unit's load (16 half, 32 quarter) [poplin-amp]; [peer] pads K to 64 (conservative)",
};

/// Element-wise add, subtract or multiply of 2-byte elements (F32: twice).
pub const BINARY: Rate = Rate {
    name: "binary_op",
    unit: "1/16 cycle per FP16 element (F32 ×2)",
    optimistic: 8,
    chosen: 12,
    conservative: 12,
    evidence: Evidence::VendorEstimator,
    source: "[popops-tables] ADD/SUB/MUL {1, natural vector} + 2 loop cycles per 4 halves = 0.75; 0.5 in place with interleaved operands (optimistic)",
};

/// `exp` of one element, FP16 (F32 below).
pub const EXP_F16: Rate = Rate::exact(
    "exp_f16",
    "1/16 cycle per element",
    16,
    Evidence::VendorEstimator,
    "[popops-tables] EXPONENT half {4 cycles per 4 elements} (f16v2exp) = 1.0",
);

/// `exp` of one F32 element.
pub const EXP_F32: Rate = Rate::exact(
    "exp_f32",
    "1/16 cycle per element",
    48,
    Evidence::VendorEstimator,
    "[popops-tables] EXPONENT float {6 cycles per 2 elements} = 3.0",
);

/// A row reduction (max, sum, sum of squares) over 2-byte elements (F32 ×2).
pub const ROW_REDUCE: Rate = Rate::exact(
    "row_reduce",
    "1/16 cycle per FP16 element (F32 ×2)",
    4,
    Evidence::VendorEstimator,
    "[popops-reduce] all-regions-contiguous: 1 cycle per 4 halves (2 floats) = 0.25",
);

/// Per-row cost of a row-wise kernel built from reductions and broadcast
/// element-wise passes (softmax, LayerNorm): reduction outputs, broadcast
/// row starts.
pub const ROW_OVERHEAD_SOFTMAX: Rate = Rate {
    name: "softmax_row",
    unit: "cycles per row",
    optimistic: 38,
    chosen: 74,
    conservative: 74,
    evidence: Evidence::VendorEstimator,
    source: "[popops-reduce] 12 per output ×2 reductions + 7–25 per broadcast row ×2 passes ([popops-tables])",
};

/// The same for LayerNorm (two reductions, four broadcast passes, an
/// inverse standard deviation).
pub const ROW_OVERHEAD_LAYER_NORM: Rate = Rate {
    name: "layer_norm_row",
    unit: "cycles per row",
    optimistic: 30,
    chosen: 130,
    conservative: 130,
    evidence: Evidence::VendorEstimator,
    source: "[popnn] Norms.cpp normStatistics, normWhiten, normalise at [popops-reduce] and [popops-tables] row costs: 30–130",
};

/// The tanh GELU of one F32 element, in F32 arithmetic as the device
/// numerics define it (`docs/facts/device-numerics.md` §6).
pub const GELU_TANH: Rate = Rate {
    name: "gelu_tanh",
    unit: "1/16 cycle per element",
    optimistic: 96,
    chosen: 160,
    conservative: 160,
    evidence: Evidence::Estimate,
    source: "[popnn] getNonLinearityOpCycles GELU float 10 (a placeholder) and [peer]'s ≈10 agree; optimistic: [popnn-gelu]'s float loop, 12 bundles per 2 floats with f32tanh at one issue",
};

/// The tanh GELU of one FP16 element in FP16 arithmetic, as poplibs' half
/// loop computes it (`docs/facts/device-numerics.md` §6).
pub const GELU_TANH_F16: Rate = Rate {
    name: "gelu_tanh_f16",
    unit: "1/16 cycle per element",
    optimistic: 36,
    chosen: 48,
    conservative: 48,
    evidence: Evidence::Estimate,
    source: "[popnn-gelu] half loops, our bundle counts: NonLinearity2D_gelu.S 12 bundles per 4 halves = 3.0 (the slower stands), NonLinearityLoop_gelu.S 9 per 4 = 2.25 (optimistic); [popnn] getNonLinearityOpCycles GELU half 5 per 2 ops per 4 = 2.5 (a placeholder)",
};

/// `erf` of one element in F32 (the exact GELU's transcendental).
pub const ERF: Rate = Rate {
    name: "erf",
    unit: "1/16 cycle per element",
    optimistic: 256,
    chosen: 288,
    conservative: 288,
    evidence: Evidence::VendorEstimator,
    source: "[popops-tables] ERF float {18 cycles per element} (an f32 polynomial); half {16}, the same in float with a cast in and out (optimistic)",
};

/// The logistic sigmoid of one element in F32 (the quick GELU's).
pub const SIGMOID: Rate = Rate {
    name: "sigmoid",
    unit: "1/16 cycle per element",
    optimistic: 80,
    chosen: 96,
    conservative: 96,
    evidence: Evidence::VendorEstimator,
    source: "[popops-tables] SIGMOID float {12 cycles per 2 elements} = 6; in place {10 per 2} = 5 (optimistic); half {6 per 4} computes in FP16: not these numerics",
};

/// `tanh` of one element in F32.
pub const TANH: Rate = Rate {
    name: "tanh",
    unit: "1/16 cycle per element",
    optimistic: 80,
    chosen: 96,
    conservative: 96,
    evidence: Evidence::VendorEstimator,
    source: "[popops-tables] TANH float {12 cycles per 2 elements} = 6; in place {10 per 2} = 5 (optimistic); half {4 per 4} computes in FP16: not these numerics",
};

/// One F32 multiply or add inside an element loop (a fused activation's
/// scale, offset and product).
pub const F32_OP: Rate = Rate::exact(
    "f32_op",
    "1/16 cycle per element",
    8,
    Evidence::VendorEstimator,
    "[popops-tables] ADD/MULTIPLY float {1 cycle per natural vector of 2 floats}, without a pass's own loads and stores",
);

/// Conversion bytes (in + out) per cycle, every type pair.
pub const CAST_BYTES: Rate = Rate::exact(
    "cast_bytes",
    "bytes (in + out) per cycle",
    8,
    Evidence::Estimate,
    "[peer] Cast (in + out bytes) ÷ 8 (peer study §3, estimate)",
);

/// Conversion to or from FP8, per element.
pub const CAST_FP8: Rate = Rate {
    name: "cast_fp8",
    unit: "1/16 cycle per element (to or from FP8)",
    optimistic: 0,
    chosen: 32,
    conservative: 32,
    evidence: Evidence::VendorEstimator,
    source: "[popops-cast]: no FP8 path, the generic one costs 2 cycles/element (the slower stands); optimistic: CAST_BYTES alone",
};

/// F32 ↔ FP16 conversion per element (optimistic end only: the peer's
/// byte rate is slower and stands).
pub const CAST_F32_F16: Rate = Rate {
    name: "cast_f32_f16",
    unit: "1/16 cycle per element (F32 ↔ FP16)",
    optimistic: 8,
    chosen: 12,
    conservative: 12,
    evidence: Evidence::VendorEstimator,
    source: "[popops-cast] float↔half 0.5 per element (optimistic); chosen: CAST_BYTES, 6 bytes ÷ 8 (the slower stands)",
};

/// Partial-sum reduction: output bytes per cycle per pairwise add.
pub const REDUCE_OUTPUT: Rate = Rate::exact(
    "reduce_output",
    "output bytes per cycle per extra part",
    1,
    Evidence::Measured,
    "[peer] reduction_output_bytes_per_cycle: 'current profiles sustain roughly one output byte per cycle'; [popops-reduce] (R+13)/4 per FP16 output is the optimistic end",
);

/// A strided partial-sum reduction per output, per part (poplibs; the
/// optimistic end of [`REDUCE_OUTPUT`]).
pub const REDUCE_PER_PART: Rate = Rate::exact(
    "reduce_per_part",
    "1/16 cycle per FP16 output per part (F32 ×2)",
    4,
    Evidence::VendorEstimator,
    "[popops-reduce] strided reduce: 1 cycle per 4 half outputs per partial",
);

/// The same reduction's cost per output beyond its parts.
pub const REDUCE_PER_OUTPUT: Rate = Rate::exact(
    "reduce_per_output",
    "1/16 cycle per FP16 output (F32 ×2)",
    52,
    Evidence::VendorEstimator,
    "[popops-reduce] strided reduce: (3 + 8 + 3 − 1) per 4 half outputs = 13/4",
);

/// A transposed copy of FP16 elements (a panel written `[n, k]` from
/// `[k, n]`): key-major attention's probabilities and `p·v`'s values.
pub const PANEL_TRANSPOSE: Rate = Rate {
    name: "panel_transpose",
    unit: "1/16 cycle per FP16 element",
    optimistic: 16,
    chosen: 48,
    conservative: 48,
    evidence: Evidence::Measured,
    source: "[peer] contiguous_panel_pack_cycles_per_element = 3 ('generated F16 layout-transform measurements'); optimistic: one shuffle per element (ours)",
};

/// A six-worker codelet's fixed cost: call, `runall`, worker start and
/// the rendezvous.
pub const SIX_WORKER_CALL: Rate = Rate::exact(
    "six_worker_call",
    "cycles per call",
    288,
    Evidence::Measured,
    "[peer] local_copy_call_cycles, the six-worker copy call incl. both rendezvous (§6)",
);

/// Local copy bandwidth.
pub const LOCAL_COPY: Rate = Rate::exact(
    "local_copy",
    "bytes per cycle",
    8,
    Evidence::VendorEstimator,
    "Poplar Target::getMemcpyBytesPerCycle as [peer] records it (§6)",
);

/// Load/store bandwidth per tile, standard memory.
pub const STANDARD_PORT: Rate = Rate::exact(
    "standard_port",
    "bytes per cycle",
    8,
    Evidence::VendorEstimator,
    "Poplar Target::getMemcpyBytesPerCycle as [peer] records it; poplibs' 64-bit data path (§6)",
);

/// Load/store bandwidth per tile, interleaved memory.
pub const INTERLEAVED_PORT: Rate = Rate::exact(
    "interleaved_port",
    "bytes per cycle",
    16,
    Evidence::VendorEstimator,
    "[peer] interleaved_load_bytes_per_cycle (both elements); poplibs ld128 conv-unit loads [poplin-amp]",
);

/// Supervisor overhead of one kernel launch (planner only).
pub const KERNEL_LAUNCH: Rate = Rate::exact(
    "kernel_launch",
    "cycles per launch",
    11,
    Evidence::VendorEstimator,
    "poplibs popops::internal::basicOpSupervisorOverhead as [peer] records it (§6)",
);

/// Every rate, in the order of `docs/facts/kernel-rates.md`.
pub const TABLE: [&Rate; 30] = [
    &AMP_CALL,
    &AMP_CALL_K,
    &AMP_FEED_INTERLEAVED,
    &AMP_FEED_STANDARD,
    &AMP_FP8_SET_K,
    &AMP_K_PAD,
    &BINARY,
    &EXP_F16,
    &EXP_F32,
    &ROW_REDUCE,
    &ROW_OVERHEAD_SOFTMAX,
    &ROW_OVERHEAD_LAYER_NORM,
    &GELU_TANH,
    &GELU_TANH_F16,
    &ERF,
    &SIGMOID,
    &TANH,
    &F32_OP,
    &CAST_BYTES,
    &CAST_FP8,
    &CAST_F32_F16,
    &REDUCE_OUTPUT,
    &REDUCE_PER_PART,
    &REDUCE_PER_OUTPUT,
    &PANEL_TRANSPOSE,
    &SIX_WORKER_CALL,
    &LOCAL_COPY,
    &STANDARD_PORT,
    &INTERLEAVED_PORT,
    &KERNEL_LAUNCH,
];

// Composite rates: kernels built from the table's parts, in 1/16 tile
// cycle per element (with six workers busy, a worker loop of c issues per
// element costs the tile c cycles per element).

/// Elements of `d` cost twice as much when they are 4 bytes: the data path
/// moves 64 bits, 4 halves or 2 floats ([popops-tables]).
const fn width(d: DType) -> u32 {
    if d.size_bytes() >= 4 {
        2
    } else {
        1
    }
}

/// An element-wise add, subtract or multiply of `d`.
pub const fn binary_x16(d: DType, end: RateEnd) -> u32 {
    BINARY.at(end) * width(d)
}

/// `exp` of an element of `d`.
pub const fn exp_x16(d: DType, end: RateEnd) -> u32 {
    if width(d) == 2 {
        EXP_F32.at(end)
    } else {
        EXP_F16.at(end)
    }
}

/// One conversion of an element from `from` to `to` (0 when the types
/// agree): the peer's byte rate, or poplibs' where a type pair has its own
/// figure — the slower of the two at the chosen and conservative ends, the
/// faster at the optimistic end.
pub const fn cast_x16(from: DType, to: DType, end: RateEnd) -> u32 {
    if from.size_bytes() == to.size_bytes() && from.is_fp8() == to.is_fp8() {
        return 0;
    }
    let bytes = (from.size_bytes() + to.size_bytes()) as u32;
    let peer = bytes * 16 / CAST_BYTES.at(end);
    let vendor = if from.is_fp8() || to.is_fp8() {
        CAST_FP8.at(end)
    } else if width(from) != width(to) {
        CAST_F32_F16.at(end)
    } else {
        0
    };
    match (vendor, end) {
        (0, _) => peer,
        (v, RateEnd::Optimistic) => {
            if v < peer {
                v
            } else {
                peer
            }
        }
        (v, _) => {
            if v > peer {
                v
            } else {
                peer
            }
        }
    }
}

/// One element of `function`, in F32 arithmetic whatever its operand
/// type (`docs/facts/device-numerics.md` §6): its transcendental plus the
/// F32 operations around it in the same loop — the exact GELU scales by
/// 1/√2, adds one, halves x and multiplies; the quick GELU scales by 1.702
/// and multiplies by x.
pub const fn activation_x16(function: Activation, end: RateEnd) -> u32 {
    let (transcendental, ops) = match function {
        Activation::GeluErf => (ERF.at(end), 4),
        Activation::QuickGelu => (SIGMOID.at(end), 2),
        Activation::Tanh => (TANH.at(end), 0),
    };
    transcendental + ops * F32_OP.at(end)
}

/// One element of an MLP activation kernel read as `input`: the tanh
/// GELU (`None`: the IR's own `GeluTanh` op and `gelu_tanh` kernel, in
/// FP16 arithmetic on FP16 input) or `function` (in F32).
pub const fn mlp_activation_x16(function: Option<Activation>, input: DType, end: RateEnd) -> u32 {
    match (function, input) {
        (None, DType::F16) => GELU_TANH_F16.at(end),
        (None, _) => GELU_TANH.at(end),
        (Some(function), _) => activation_x16(function, end),
    }
}

/// Whether a softmax ends with its normalising multiply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxForm {
    /// Probabilities: the exponentials times the inverse of their sum.
    Normalised,
    /// A key block's share of key-split attention: the exponentials and
    /// their sum, no inverse and no multiply (the combine normalises the
    /// outputs instead).
    Unnormalised,
}

/// Softmax over scores of `scores`, probabilities stored as `probs`,
/// scaled by a constant first (attention's 1/√d): a max-reduce, subtract,
/// scale, exp, sum-reduce and (`Normalised`) the normalising multiply, as
/// poplibs builds it ([popnn] NonLinearity), plus the conversion of the
/// probabilities. At the optimistic end the scale rides on the subtract
/// (one scaled pass).
pub const fn softmax_x16(scores: DType, probs: DType, form: SoftmaxForm, end: RateEnd) -> u32 {
    let scaled_subtract = match end {
        RateEnd::Optimistic => 1,
        _ => 2,
    };
    let passes = match form {
        SoftmaxForm::Normalised => scaled_subtract + 1,
        SoftmaxForm::Unnormalised => scaled_subtract,
    };
    2 * ROW_REDUCE.at(end) * width(scores)
        + passes * binary_x16(scores, end)
        + exp_x16(scores, end)
        + cast_x16(scores, probs, end)
}

/// Reduction output cost of one softmax row, per reduction: the
/// [`ROW_OVERHEAD_SOFTMAX`] source's 12 per output.
const SOFTMAX_REDUCTION_OUTPUT: u32 = 12;

/// Per-row cycles of a softmax in `form`: [`ROW_OVERHEAD_SOFTMAX`] (two
/// reductions' outputs and two broadcast passes' row starts), one
/// broadcast pass fewer without the normalising multiply.
pub const fn softmax_row(form: SoftmaxForm, end: RateEnd) -> u32 {
    let full = ROW_OVERHEAD_SOFTMAX.at(end);
    match form {
        SoftmaxForm::Normalised => full,
        SoftmaxForm::Unnormalised => full - (full - 2 * SOFTMAX_REDUCTION_OUTPUT) / 2,
    }
}

/// LayerNorm of `d`: a sum and a sum of squares (two row reductions), then
/// four broadcast passes — subtract the mean, multiply by the inverse
/// standard deviation, γ, β — as poplibs' norms run it ([popnn] Norms.cpp).
/// The conservative end is the stable variant (one more subtract first).
pub const fn layer_norm_x16(d: DType, end: RateEnd) -> u32 {
    let passes = match end {
        RateEnd::Conservative => 5,
        _ => 4,
    };
    2 * ROW_REDUCE.at(end) * width(d) + passes * binary_x16(d, end)
}

/// A partial-sum reduction of `parts` parts into `outputs` elements of
/// `out`, read as `input`: tile cycles. The peer's measured byte rate
/// (one pairwise add per extra part) is chosen; poplibs' strided reduce
/// sets the other end.
pub fn reduce_cycles(outputs: u64, parts: u32, input: DType, out: DType, end: RateEnd) -> u64 {
    let extra = u64::from(parts.saturating_sub(1).max(1));
    let peer = (outputs.saturating_mul(out.size_bytes() as u64))
        .saturating_mul(extra)
        .div_ceil(u64::from(REDUCE_OUTPUT.at(end)));
    let w = u64::from(width(input));
    let vendor = outputs
        .saturating_mul(
            u64::from(parts)
                .saturating_mul(u64::from(REDUCE_PER_PART.at(end)) * w)
                .saturating_add(u64::from(REDUCE_PER_OUTPUT.at(end)) * w),
        )
        .div_ceil(16);
    match end {
        RateEnd::Optimistic => peer.min(vendor),
        RateEnd::Chosen => peer,
        RateEnd::Conservative => peer.max(vendor),
    }
}

/// The AMP's K geometry for a product of inner extent `k` in a mode of
/// micro-group `micro` (16, or 32 for FP8): `(micro-groups after padding,
/// calls)`.
pub fn amp_k_geometry(k: u32, micro: u32, end: RateEnd) -> (u64, u64) {
    let pad = match AMP_K_PAD.at(end) {
        0 => micro,
        p => p.max(micro),
    };
    let padded = u64::from(k).div_ceil(u64::from(pad)) * u64::from(pad);
    let calls = match AMP_CALL_K.at(end) {
        0 => 1,
        c => padded.div_ceil(u64::from(c)).max(1),
    };
    (padded / u64::from(micro), calls)
}

/// Weight-feed cycles of one micro-group of `micro` K over `groups`
/// 16-column groups with per-group feed `g` (per 64 K: four 16-K sets):
/// FP8 sets cover [`AMP_FP8_SET_K`], FP16 and FP32 sets 16 K.
pub fn amp_feed_cycles(groups: u64, g: u32, micro: u32, fp8: bool, end: RateEnd) -> u64 {
    let set_k = if fp8 { AMP_FP8_SET_K.at(end) } else { 16 };
    let sets = u64::from(micro.div_ceil(set_k.max(1)));
    (groups * sets * u64::from(g)).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rate_orders_its_ends_and_names_a_source() {
        for r in TABLE {
            assert!(!r.source.is_empty() && !r.unit.is_empty(), "{}", r.name);
            // A throughput's optimistic end is its largest value.
            let throughput = r.unit.contains("per cycle") || r.unit.starts_with("K ");
            let (lo, hi) = if throughput {
                (r.conservative, r.optimistic)
            } else {
                (r.optimistic, r.conservative)
            };
            if r.name != "amp_call_k" && r.name != "amp_k_pad" && r.name != "cast_fp8" {
                assert!(lo <= r.chosen && r.chosen <= hi, "{}", r.name);
            }
            for key in ["popops-", "poplin-", "popnn", "peer", "seeds"] {
                if let Some(at) = r.source.find(&alloc::format!("[{key}")) {
                    let tag = &r.source[at + 1..];
                    let tag = &tag[..tag.find(']').unwrap_or(tag.len())];
                    assert!(
                        SOURCES.iter().any(|(k, _)| *k == tag),
                        "{}: unknown source [{tag}]",
                        r.name
                    );
                }
            }
        }
    }

    #[test]
    fn softmax_is_its_parts() {
        let c = RateEnd::Chosen;
        let (n, u) = (SoftmaxForm::Normalised, SoftmaxForm::Unnormalised);
        // F32 scores into FP16 probabilities: 2 × 0.5 (reductions) + 3 × 1.5
        // (subtract, scale, normalise) + 3.0 (exp) + 0.75 (cast) = 9.25.
        assert_eq!(softmax_x16(DType::F32, DType::F16, n, c), 148);
        // FP16 throughout: 2 × 0.25 + 3 × 0.75 + 1.0 = 3.75; without the
        // normalising multiply 3.0.
        assert_eq!(softmax_x16(DType::F16, DType::F16, n, c), 60);
        assert_eq!(softmax_x16(DType::F16, DType::F16, u, c), 48);
        assert!(
            softmax_x16(DType::F32, DType::F16, n, RateEnd::Optimistic)
                < softmax_x16(DType::F32, DType::F16, n, c)
        );
        // Per row: 2 × 12 (reduction outputs) + 2 × 25 (broadcast rows),
        // one broadcast row fewer unnormalised; 7 per row optimistic.
        assert_eq!(softmax_row(n, c), 74);
        assert_eq!(softmax_row(u, c), 49);
        assert_eq!(softmax_row(u, RateEnd::Optimistic), 31);
    }

    #[test]
    fn casts_take_the_slower_source() {
        let f8 = DType::f143(-4);
        let c = RateEnd::Chosen;
        assert_eq!(cast_x16(DType::F16, f8, c), 32);
        assert_eq!(cast_x16(DType::F16, f8, RateEnd::Optimistic), 6);
        assert_eq!(cast_x16(DType::F32, DType::F16, c), 12);
        assert_eq!(cast_x16(DType::F32, DType::F16, RateEnd::Optimistic), 8);
        assert_eq!(cast_x16(DType::F16, DType::F16, c), 0);
    }

    #[test]
    fn amp_k_geometry_pads_and_splits_calls() {
        assert_eq!(amp_k_geometry(72, 16, RateEnd::Chosen), (5, 1));
        assert_eq!(amp_k_geometry(72, 16, RateEnd::Conservative), (8, 2));
        assert_eq!(amp_k_geometry(431, 32, RateEnd::Chosen), (14, 1));
        assert_eq!(amp_k_geometry(431, 32, RateEnd::Conservative), (14, 7));
    }
}
