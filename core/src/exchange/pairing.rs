//! Which receivers of a 64-bit request get a real paired (64-bit) transfer
//! and which fall back to 32-bit items (`docs/facts/ipu21-target.md` §2.6).
//!
//! Rules applied, each from §2.6 (readings of unclear points are marked
//! *conservative* and explained where they are applied):
//!
//! - receivers must be complete physical pairs `{d, d ^ 2}`, both
//!   destinations of the same transfer; both members get the whole 64-bit
//!   stream, each at its own address;
//! - at least [`PAIRED_MIN_ITEMS`] 64-bit items;
//! - the member with the smaller `T(s,d)` ("early", ties → lower physical
//!   id) owns the paired XPIC stream; the supervisor sets
//!   `$INCOMING_FORMAT` = 1 (early) / 2 (late) and `$INCOMING_MUXPAIR =
//!   sender ^ 2` before the phase. Those are per-phase CSR values, so a
//!   receiver pair takes paired streams from **one sender per phase**;
//! - a format change may not fall on the event of a source select or
//!   tear-down ("coincident paired controls make the hardware fault"). A
//!   transfer's own tear-down at `source_event + items` meets its format
//!   write at `source_event + 51 + 2·row` when `items = 51 + 2·row`; we also
//!   refuse `items = 53 + 2·row` (tear-down on the pointer write, which would
//!   need a paired `sendpicp` that §2.6 does not describe) — conservative.
//!
//! Everything that fails a rule is delivered with 32-bit items; the reasons
//! are counted in [`PairingReport`].
//!
//! Unknown in §2.6, and how we read it: whether a tile set up for paired
//! receives (`$INCOMING_FORMAT` ≠ 0) can still take 32-bit words outside its
//! PIC-format window. We assume yes — the row's format control is what
//! switches 64-bit mode on and off (§2.4 "PIC format: 1 or 2 = start paired
//! 64-bit mode, 0 = end it") — and keep every 32-bit write of such a tile
//! outside the format window (checked by the replay).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::request::{ExchangePhase, Width};
use ipuc_target::ipu21::exchange_model::{
    paired_format_lag, PAIRED_MIN_ITEMS, PAIRED_POINTER_AFTER_FORMAT,
};
use ipuc_target::ipu21::topology::{direction, mux_time, PhysicalTile};
use ipuc_target::lookup::LookupMap;

/// Why a receiver of a 64-bit request got 32-bit items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PairedFallback {
    /// Fewer than 64 items (§2.6).
    TooFewItems,
    /// The receiver's pair partner is not a destination of the transfer.
    IncompletePair,
    /// The receiver pair already takes a paired stream from another sender
    /// in this phase (`$INCOMING_MUXPAIR` is one value per phase).
    PairTakenByOtherSender,
    /// The transfer's tear-down would coincide with its own format or
    /// pointer write on this pair's row.
    CoincidentControls,
    /// The two members are reached on different routes (never happens with
    /// the §2.5 model; kept so the rule is explicit).
    MixedRoutes,
}

impl PairedFallback {
    /// Short description for reports.
    pub fn describe(self) -> &'static str {
        match self {
            PairedFallback::TooFewItems => "fewer than 64 items",
            PairedFallback::IncompletePair => "pair partner not a receiver",
            PairedFallback::PairTakenByOtherSender => "pair already paired with another sender",
            PairedFallback::CoincidentControls => "tear-down would coincide with format/pointer",
            PairedFallback::MixedRoutes => "pair members on different routes",
        }
    }
}

/// One receiving pair of a paired transfer (indices into its destinations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverPair {
    /// Member with the smaller route time: owns the paired XPIC stream.
    pub early: u16,
    /// The other member.
    pub late: u16,
}

/// How one transfer is delivered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferPairing {
    /// Receiver pairs served with 64-bit items.
    pub pairs: Vec<ReceiverPair>,
    /// Destinations served with 32-bit items, sorted.
    pub singles: Vec<u16>,
}

/// Supervisor set-up a paired receiver needs before the phase (§2.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairedReceiveSetup {
    pub tile: PhysicalTile,
    /// `$INCOMING_FORMAT`: 1 early, 2 late.
    pub format: u32,
    /// `$INCOMING_MUXPAIR`: the sender's partner (`sender ^ 2`).
    pub muxpair: u32,
}

/// What became of the phase's 64-bit requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PairingReport {
    /// Transfers requesting 64-bit items.
    pub requested: usize,
    /// Of those, transfers delivered entirely as 64-bit items.
    pub paired: usize,
    /// Transfers with some receivers at 64 and some at 32 bits.
    pub partial: usize,
    /// Transfers delivered entirely as 32-bit items.
    pub fell_back: usize,
    /// Receivers of 64-bit requests that got 32-bit items, by reason.
    pub reasons: BTreeMap<PairedFallback, usize>,
    /// Words delivered with 64-bit items (counted per receiver).
    pub paired_words: u64,
}

/// The multicast's receivers, tile → first destination index: a receiver
/// finds its pair partner in constant time, not by a scan of every
/// destination (wide multicasts have ~1,472).
fn first_destination_of(t: &crate::exchange::Transfer) -> LookupMap<PhysicalTile, usize> {
    let mut first = LookupMap::default();
    for (k, d) in t.destinations.iter().enumerate() {
        first.entry(d.tile).or_insert(k);
    }
    first
}

/// Why the receiver pair whose lower member is `tile` cannot take
/// `items` 64-bit items from `source`, if it cannot: the pair is `taken`
/// by another sender, its members' routes differ, or the format and
/// pointer controls would coincide with the stream's end.
fn pair_refusal(
    source: PhysicalTile,
    tile: PhysicalTile,
    items: u32,
    taken: bool,
) -> Option<PairedFallback> {
    if taken {
        Some(PairedFallback::PairTakenByOtherSender)
    } else if direction(source, tile) != direction(source, tile.pair_partner()) {
        Some(PairedFallback::MixedRoutes)
    } else {
        let lag = paired_format_lag(tile);
        (items == lag || items == lag + PAIRED_POINTER_AFTER_FORMAT)
            .then_some(PairedFallback::CoincidentControls)
    }
}

/// Destinations `k` and `pk` of `t` (a receiver pair) take its 64-bit
/// items: the one whose mux sees the stream first is the early member;
/// each gets its receive setup (format, the sender's pair as `muxpair`).
fn pair_receivers(
    t: &crate::exchange::Transfer,
    k: u16,
    pk: u16,
    setups: &mut BTreeMap<u16, PairedReceiveSetup>,
) -> ReceiverPair {
    let (a, b) = (
        t.destinations[usize::from(k)].tile,
        t.destinations[usize::from(pk)].tile,
    );
    let (early, late) = if mux_time(t.source, a) <= mux_time(t.source, b) {
        (k, pk)
    } else {
        (pk, k)
    };
    for (member, format) in [
        (
            early,
            ipuc_target::ipu21::exchange_model::INCOMING_FORMAT_EARLY,
        ),
        (
            late,
            ipuc_target::ipu21::exchange_model::INCOMING_FORMAT_LATE,
        ),
    ] {
        let tile = t.destinations[usize::from(member)].tile;
        setups.insert(
            tile.get(),
            PairedReceiveSetup {
                tile,
                format,
                muxpair: u32::from(t.source.pair_partner().get()),
            },
        );
    }
    ReceiverPair { early, late }
}

/// Decides, for every transfer, which receivers get 64-bit items.
/// Deterministic: transfers claim receiver pairs in request order.
pub fn plan_pairing(
    phase: &ExchangePhase,
) -> (Vec<TransferPairing>, Vec<PairedReceiveSetup>, PairingReport) {
    let mut report = PairingReport::default();
    let mut plans = Vec::with_capacity(phase.transfers.len());
    // Receiver pair (lower member's id) → the sender it takes paired data
    // from; lookup only (the setups below keep tile order).
    let mut claimed: LookupMap<u16, PhysicalTile> = LookupMap::default();
    let mut setups: BTreeMap<u16, PairedReceiveSetup> = BTreeMap::new();
    for t in &phase.transfers {
        let all: Vec<u16> = (0..t.destinations.len() as u16).collect();
        if t.width != Width::Paired64 {
            plans.push(TransferPairing {
                pairs: Vec::new(),
                singles: all,
            });
            continue;
        }
        report.requested += 1;
        let items = t.words / 2;
        let mut plan = TransferPairing::default();
        let mut fallback = |k: u16, why: PairedFallback, plan: &mut TransferPairing| {
            plan.singles.push(k);
            *report.reasons.entry(why).or_default() += 1;
        };
        let receivers: LookupMap<PhysicalTile, usize> = if items < PAIRED_MIN_ITEMS {
            LookupMap::default()
        } else {
            first_destination_of(t)
        };
        for (k, d) in t.destinations.iter().enumerate() {
            let k = k as u16;
            if items < PAIRED_MIN_ITEMS {
                fallback(k, PairedFallback::TooFewItems, &mut plan);
                continue;
            }
            let partner = d.tile.pair_partner();
            let Some(&pk) = receivers.get(&partner) else {
                fallback(k, PairedFallback::IncompletePair, &mut plan);
                continue;
            };
            // Each pair is decided once, from its lower member.
            if partner.get() < d.tile.get() {
                continue;
            }
            let pk = pk as u16;
            let base = d.tile.get();
            let taken = claimed.get(&base).is_some_and(|&s| s != t.source);
            if let Some(why) = pair_refusal(t.source, d.tile, items, taken) {
                fallback(k, why, &mut plan);
                fallback(pk, why, &mut plan);
                continue;
            }
            claimed.insert(base, t.source);
            plan.pairs.push(pair_receivers(t, k, pk, &mut setups));
            report.paired_words += 2 * u64::from(t.words);
        }
        plan.singles.sort_unstable();
        match (plan.pairs.is_empty(), plan.singles.is_empty()) {
            (false, true) => report.paired += 1,
            (false, false) => report.partial += 1,
            _ => report.fell_back += 1,
        }
        plans.push(plan);
    }
    (plans, setups.into_values().collect(), report)
}
