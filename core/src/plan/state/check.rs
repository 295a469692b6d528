//! The memory check of one transition: would the state after an op fit
//! every tile (cheap bounds in the beam, exact per-tile peaks in replays)?

use super::*;

/// One moment's per-tile bytes, as a rejection report needs them.
struct MomentUsage {
    /// Dynamic bytes live at this moment (roots, transients, `extra`).
    now: Vec<u64>,
    /// Statics, the dynamic history and the code charge: what is checked
    /// against the budget.
    usage: Vec<u64>,
}

impl State {
    /// Checks one moment with `transient` allocations (and `extra` per-tile
    /// bytes, a Repeat body's dynamic peak) on top of the live ones, and
    /// folds the moment into the dynamic history. The checked peak is
    /// `max_t(static[t] + dyn_hist[t])`: exact, because statics are live at
    /// every moment.
    pub(super) fn check(
        &mut self,
        cx: &SearchCx<'_>,
        transient: &[Arc<Allocation>],
        extra: Option<(&[u64], &[u64])>,
        mode: &mut Mode<'_>,
        moment: &dyn Fn() -> (String, String, u32, String),
    ) -> Result<u64, Reject> {
        // This moment's dynamic bytes, in the context's reused buffer.
        let mut now = core::mem::take(&mut *cx.moment_buffer.borrow_mut());
        let il_peak = self.fold_moment(cx, transient, extra, &mut now);
        // The peak of `static + dyn_hist + code charge` (and the elementwise
        // max into an exact replay's record), without the array.
        let mut record = match mode {
            Mode::Exact(record) => Some(record.iter_mut()),
            _ => None,
        };
        let mut best = (0u64, 0u32);
        for (t, u) in self.usage_iter().enumerate() {
            if let Some(r) = record.as_mut().and_then(|r| r.next()) {
                *r = (*r).max(u);
            }
            if u > best.0 {
                best = (u, t as u32);
            }
        }
        let (peak, tile) = best;
        let budget = cx.config.budget;
        let il_excess = {
            let (p, t) = il_peak;
            (p > memory::INTERLEAVED_BUDGET_BYTES).then_some((p, t))
        };
        if peak <= budget && il_excess.is_none() {
            *cx.moment_buffer.borrow_mut() = now;
            return Ok(peak);
        }
        // Report the tile that breaks a budget: the total one first.
        let tile = if peak > budget {
            tile
        } else {
            il_excess.map(|e| e.1).unwrap_or(tile)
        };
        let report = matches!(mode, Mode::Report).then(|| {
            let m = MomentUsage {
                now: now.clone(),
                usage: self.usage_iter().collect(),
            };
            self.memory_rejection(cx, moment, transient, &m, (tile, peak))
        });
        *cx.moment_buffer.borrow_mut() = now;
        Err(Reject::Memory {
            peak: peak.max(il_excess.map(|e| e.0).unwrap_or(0)),
            report,
        })
    }

    /// Per tile, what is checked against the budget: statics, the dynamic
    /// history and the code charge.
    fn usage_iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (code_all, code_charge) = (self.code_all, self.code_charge);
        self.static_usage
            .iter()
            .zip(self.dyn_hist.iter())
            .zip(self.code.iter())
            .map(move |((s, d), c)| s + d + crate::plan::code::charge(code_all + c, code_charge))
    }

    /// Works this moment's dynamic bytes out into `now` and folds them
    /// into the dynamic (and interleaved) history; returns the interleaved
    /// peak and its tile ([`memory::peak_of`] of `static_il + il_hist`).
    /// The roots' bytes are kept summed (`root_usage`); only this moment's
    /// transients are added (exact: the same u64 sums). A history is copied
    /// only when the moment raises it.
    fn fold_moment(
        &mut self,
        cx: &SearchCx<'_>,
        transient: &[Arc<Allocation>],
        extra: Option<(&[u64], &[u64])>,
        now: &mut Vec<u64>,
    ) -> (u64, u32) {
        now.clear();
        now.extend_from_slice(&self.root_usage);
        for a in transient {
            accumulate(cx, a, now, true);
        }
        let il_transient: Vec<&Allocation> = transient
            .iter()
            .map(|a| &**a)
            .filter(|a| a.class == MemoryClass::Interleaved)
            .collect();
        let il_now: Vec<u64>;
        let il_now: &[u64] = if il_transient.is_empty() {
            &self.root_il
        } else {
            let mut u = self.root_il.to_vec();
            for a in il_transient {
                accumulate(cx, a, &mut u, true);
            }
            il_now = u;
            &il_now
        };
        let (extra, extra_il) = match extra {
            Some((e, i)) => (Some(e), Some(i)),
            None => (None, None),
        };
        if let Some(extra) = extra {
            for (n, e) in now.iter_mut().zip(extra) {
                *n += e;
            }
        }
        // This moment's interleaved bytes on tile `t < il_now.len()`.
        let il_at = |t: usize| -> u64 {
            il_now[t] + extra_il.map_or(0, |x| x.get(t).copied().unwrap_or(0))
        };
        let il_tiles = il_now.len().min(self.il_hist.len());
        if (0..il_tiles).any(|t| il_at(t) > self.il_hist[t]) {
            let il_hist = Arc::make_mut(&mut self.il_hist);
            for (t, h) in il_hist.iter_mut().enumerate().take(il_tiles) {
                *h = (*h).max(il_at(t));
            }
        }
        let il_peak = memory::peak_of_sum(&self.static_il, &self.il_hist);
        if now.iter().zip(self.dyn_hist.iter()).any(|(n, h)| n > h) {
            let hist = Arc::make_mut(&mut self.dyn_hist);
            for (h, n) in hist.iter_mut().zip(now.iter()) {
                *h = (*h).max(*n);
            }
        }
        il_peak
    }

    /// The report of a moment over budget on `tile` (peak `peak`): what is
    /// live there, and on the most loaded other tiles.
    fn memory_rejection(
        &self,
        cx: &SearchCx<'_>,
        moment: &dyn Fn() -> (String, String, u32, String),
        transient: &[Arc<Allocation>],
        m: &MomentUsage,
        (tile, peak): (u32, u64),
    ) -> alloc::boxed::Box<MemoryRejection> {
        let budget = cx.config.budget;
        let usage = &m.usage;
        let (op_name, op_label, op_index, what) = moment();
        let dynamic: Vec<&Allocation> = self
            .roots
            .values()
            .map(|r| &*r.alloc)
            .chain(transient.iter().map(|a| &**a))
            .collect();
        let all = || {
            self.statics
                .values()
                .map(|a| &**a)
                .chain(dynamic.iter().copied())
        };
        let live = self.live_on_rejected_tile(tile, m, &dynamic, memory::live_on_tile(tile, all()));
        // The most loaded tiles (the reported one always among them).
        let mut order: Vec<u32> = (0..usage.len() as u32).collect();
        order.sort_by(|&a, &b| usage[b as usize].cmp(&usage[a as usize]).then(a.cmp(&b)));
        order.retain(|&t| t != tile);
        order.truncate(memory::REPORTED_TILES.saturating_sub(1));
        order.insert(0, tile);
        let tiles = order
            .into_iter()
            .map(|t| {
                let mut l = if t == tile {
                    live.clone()
                } else {
                    memory::live_on_tile(t, all())
                };
                l.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
                memory::TileLive {
                    tile: t,
                    bytes: usage.get(t as usize).copied().unwrap_or(0),
                    live: l,
                }
            })
            .collect();
        alloc::boxed::Box::new(MemoryRejection {
            op_name,
            op_label,
            op_index,
            region: cx.region_label(),
            moment: what,
            tile,
            peak_bytes: usage.get(tile as usize).copied().unwrap_or(peak),
            reserve_bytes: cx.reserve(),
            budget_bytes: budget + cx.reserve(),
            interleaved_bytes: memory::interleaved_on_tile(tile, all()),
            interleaved_budget_bytes: memory::INTERLEAVED_BUDGET_BYTES,
            tiles_over_budget: usage.iter().filter(|&&u| u > budget).count() as u32,
            live,
            tiles,
            candidates: Vec::new(),
        })
    }

    /// What is live on the rejected tile, largest first: the listed
    /// allocations, then what the check counts without listing — a Repeat
    /// body's dynamic peak, the code estimate, an earlier moment's dynamic
    /// data.
    fn live_on_rejected_tile(
        &self,
        tile: u32,
        m: &MomentUsage,
        dynamic: &[&Allocation],
        mut live: Vec<memory::LiveAllocation>,
    ) -> Vec<memory::LiveAllocation> {
        let t = tile as usize;
        let now_t = m.now.get(t).copied().unwrap_or(0);
        let listed_now: u64 = dynamic
            .iter()
            .map(|a| a.tiles.on_tile(tile) * a.copies.max(1) as u64)
            .sum();
        if now_t > listed_now {
            live.push(memory::LiveAllocation {
                name: String::from("repeat body dynamic peak"),
                kind: AllocationKind::Activation,
                class: MemoryClass::Standard,
                bytes: now_t - listed_now,
            });
        }
        let code_t = self.code.get(t).copied().unwrap_or(0) + self.code_all;
        live.push(memory::LiveAllocation {
            name: alloc::format!(
                "code, argument blocks and exchange rows (estimated image {code_t} bytes, {})",
                match self.code_charge {
                    crate::plan::code::CodeCharge::WholeElements => "whole elements",
                    crate::plan::code::CodeCharge::Span => "up to its fetch guard",
                }
            ),
            kind: AllocationKind::Code,
            class: MemoryClass::Standard,
            bytes: crate::plan::code::charge(code_t, self.code_charge),
        });
        let hist_t = self.dyn_hist.get(t).copied().unwrap_or(0);
        if hist_t > now_t {
            live.push(memory::LiveAllocation {
                name: String::from(
                    "dynamic data of an earlier moment (statics chosen since are live then too)",
                ),
                kind: AllocationKind::Activation,
                class: MemoryClass::Standard,
                bytes: hist_t - now_t,
            });
        }
        live.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
        live
    }
}
