//! Cycle costs used by the planner's cost model and the simulator: the AMP's
//! modes, exchange, sync and patching. Kernel rates (with the ends of their
//! sources) are in [`super::rates`]. One constant per fact, each with its
//! source.

use super::rates::{self, RateEnd};

/// An AMP engine mode: the operand type and the partials (accumulator) type,
/// which together set the engine's rate, its K micro-group and its weight
/// feed. The rates are per tile cycle with all 16 engines busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmpMode {
    /// FP32 operands, FP32 partials: 16 MACs/cycle (`docs/facts/ipu21-target.md`
    /// §6, "F32 uses 4× the row term"; `docs/facts/siglip-and-fp8.md` §4,
    /// poplibs: 8 core cycles per 16×8 block), weights fed at 2 × G.
    F32,
    /// FP16 operands, FP32 partials: 32 MACs/cycle — float partials run on 8
    /// conv units, half the FP16-partials rate (`docs/facts/siglip-and-fp8.md`
    /// §4, poplibs' cycle model). Weight feed: G (poplibs loads the same
    /// 512 weight bytes per 16 columns × 16 K for both partials types).
    F16F32Partials,
    /// FP16 operands, FP16 partials: 64 MACs/cycle and feed G, both
    /// *measured* (`docs/facts/ipu21-target.md` §6, ipu-stack
    /// `amp_kernel_cycles`: ⌈rows·cols/4⌉ per 16-K micro-group).
    F16F16Partials,
    /// FP8 × FP8 operands, FP16 partials (the only partials type FP8 allows):
    /// `f8v8hihov4amp`, 128 MACs/cycle (`docs/facts/siglip-and-fp8.md` §4).
    /// The K micro-group is 32: one 512-byte weight set per 16 columns × 32
    /// K (§4, the peer's FP8 kernel; poplibs' quarter weight load), fed as
    /// one FP16 set is ([`super::rates::AMP_FP8_SET_K`]).
    F8F16Partials,
}

impl AmpMode {
    /// Every mode, slowest first (for tables and tests).
    pub const ALL: [AmpMode; 4] = [
        AmpMode::F32,
        AmpMode::F16F32Partials,
        AmpMode::F16F16Partials,
        AmpMode::F8F16Partials,
    ];

    /// Multiply-accumulates per tile cycle.
    pub const fn macs_per_cycle(self) -> u32 {
        match self {
            AmpMode::F32 => 16,
            AmpMode::F16F32Partials => 32,
            AmpMode::F16F16Partials => 64,
            AmpMode::F8F16Partials => 128,
        }
    }

    /// K elements per AMP micro-group: the K extent one weight set covers.
    pub const fn k_micro_group(self) -> u32 {
        match self {
            AmpMode::F8F16Partials => 32,
            _ => 16,
        }
    }

    /// Weight-feed cycles per 16-column group per 64 K (the facts' G: four
    /// 16-K weight sets), for weights in interleaved or standard memory, at
    /// `end` of the sources ([`super::rates::AMP_FEED_INTERLEAVED`]).
    pub const fn feed_cycles_per_group(self, interleaved: bool, end: RateEnd) -> u32 {
        let g = if interleaved {
            rates::AMP_FEED_INTERLEAVED.at(end)
        } else {
            rates::AMP_FEED_STANDARD.at(end)
        };
        match self {
            AmpMode::F32 => 2 * g,
            _ => g,
        }
    }

    /// Bytes of one partial (accumulator) element.
    pub const fn partials_bytes(self) -> u32 {
        match self {
            AmpMode::F32 | AmpMode::F16F32Partials => 4,
            AmpMode::F16F16Partials | AmpMode::F8F16Partials => 2,
        }
    }

    /// Short name for reports: operands → partials.
    pub const fn name(self) -> &'static str {
        match self {
            AmpMode::F32 => "FP32→FP32",
            AmpMode::F16F32Partials => "FP16→FP32",
            AmpMode::F16F16Partials => "FP16→FP16",
            AmpMode::F8F16Partials => "FP8×FP8→FP16",
        }
    }
}

/// Output columns per AMP column group (`docs/facts/ipu21-target.md` §6).
pub const AMP_COLUMN_GROUP: u32 = 16;
/// Exchange payload per tile per cycle (`docs/facts/ipu21-target.md` §6: one 32-bit word per event).
pub const EXCHANGE_BYTES_PER_CYCLE: u32 = 4;
/// Latency of one internal (all-tile) sync: the last tile's arrival to the
/// release of every tile. No public *measurement* exists for IPU21
/// (`docs/facts/ipu21-target.md` §6, "Internal sync latency": Jia et al.
/// 2019 measure memory and interconnect latency, not the sync); this is
/// Poplar's bound `Target::getMaxIPUSyncDelay` = 126 cycles as recorded by
/// ipu-stack. The planner and the simulator (default of `--sync-cycles`)
/// both use it.
pub const INTERNAL_SYNC_CYCLES: u32 = 126;
