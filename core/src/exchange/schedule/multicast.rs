//! Multicasts: splitting a transfer's receivers into smaller groups while the
//! sender has spare outgoing capacity, and the per-tile loads that decide it.

use super::*;

/// Splits multicasts whose receivers would be hard to align into smaller
/// groups, as far as the sender's spare outgoing capacity allows.
///
/// A multicast needs every receiver free at once (shifted by its route
/// time); with many receivers such common gaps appear late. Sending the same
/// words several times to smaller groups costs sender time, which is spare
/// whenever the sender's load is below the phase's lower bound — typically
/// the case in high fan-out phases where receivers are the bottleneck. Each
/// sender may grow its load to `sender_budget_percent` of the lower bound.
pub(super) fn split_multicasts(
    phase: &ExchangePhase,
    pairing: &[TransferPairing],
    out_load: &[u64],
    lower_bound: u64,
    options: ScheduleOptions,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    let budget = lower_bound * u64::from(options.sender_budget_percent) / 100;
    for (ti, t) in phase.transfers.iter().enumerate() {
        let load = out_load[t.source.index()].max(1);
        let by_budget = (budget / load) as usize;
        // Lag groups only for runs too short to chain, and only where the
        // sender can afford to send that often.
        let by_lag = match options.lag_groups {
            0 | 1 => 0,
            _ if t.words >= MIN_CHAIN_TRANSFER_WORDS => 0,
            g => (g as usize).min((lower_bound / load) as usize),
        };
        let groups = by_budget.max(by_lag);
        let plan = &pairing[ti];
        if !plan.singles.is_empty() {
            let mut idx = plan.singles.clone();
            let route = |k: u16| mux_time(t.source, t.destinations[usize::from(k)].tile);
            if by_lag > by_budget {
                // Receivers of neighbouring pointer lags together (see
                // `ScheduleOptions::lag_groups`), by route offset within a lag.
                idx.sort_by_key(|&k| (pic_lag(t.destinations[usize::from(k)].tile), route(k), k));
            } else {
                // By route offset, so a group's members start close together.
                idx.sort_by_key(|&k| (route(k), k));
            }
            let per = idx.len().div_ceil(groups.clamp(1, idx.len()));
            for chunk in idx.chunks(per) {
                let mut destinations = chunk.to_vec();
                destinations.sort_unstable();
                jobs.push(Job {
                    transfer: ti,
                    destinations,
                    paired: false,
                });
            }
        }
        if !plan.pairs.is_empty() {
            let mut pairs = plan.pairs.clone();
            pairs.sort_by_key(|p| {
                let e = t.destinations[usize::from(p.early)].tile;
                (paired_source_event(0, t.source, e), p.early)
            });
            // Paired receives keep their own lag rules (§2.6): budget only.
            let per = pairs.len().div_ceil(by_budget.clamp(1, pairs.len()));
            for chunk in pairs.chunks(per) {
                jobs.push(Job {
                    transfer: ti,
                    destinations: chunk.iter().flat_map(|p| [p.early, p.late]).collect(),
                    paired: true,
                });
            }
        }
    }
    jobs
}

/// Does `options`' sender budget split any multicast of `phase` into
/// several jobs? (If not, scheduling with budget 0 gives the same jobs.)
pub(crate) fn splits_multicasts(phase: &ExchangePhase, options: ScheduleOptions) -> bool {
    let (pairing, _, _) = plan_pairing(phase);
    let (out_load, in_load) = event_loads(phase, &pairing);
    let lower_bound = out_load.iter().chain(&in_load).copied().max().unwrap_or(0);
    let jobs = split_multicasts(phase, &pairing, &out_load, lower_bound, options);
    let whole: usize = pairing
        .iter()
        .map(|p| usize::from(!p.singles.is_empty()) + usize::from(!p.pairs.is_empty()))
        .sum();
    jobs.len() != whole
}

/// Events each tile streams out and in, given the pairing decisions: a
/// paired transfer costs `words / 2` events on the sender, its partner
/// (partner busy) and each receiver (plus the two guard events of a paired
/// receive window).
pub(crate) fn event_loads(
    phase: &ExchangePhase,
    pairing: &[TransferPairing],
) -> (Vec<u64>, Vec<u64>) {
    let n = usize::from(TILE_COUNT);
    let (mut out, mut inc) = (alloc::vec![0u64; n], alloc::vec![0u64; n]);
    for (t, plan) in phase.transfers.iter().zip(pairing) {
        let words = u64::from(t.words);
        if !plan.singles.is_empty() {
            out[t.source.index()] += words;
            for &k in &plan.singles {
                inc[t.destinations[usize::from(k)].tile.index()] += words;
            }
        }
        if !plan.pairs.is_empty() {
            let items = words / 2;
            out[t.source.index()] += items;
            out[t.source.pair_partner().index()] += items;
            inc[t.source.pair_partner().index()] += items;
            for p in &plan.pairs {
                for k in [p.early, p.late] {
                    inc[t.destinations[usize::from(k)].tile.index()] += items + 2;
                }
            }
        }
    }
    (out, inc)
}
