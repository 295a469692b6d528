//! One tile's streams while a phase is scheduled (`TileState`: busy events,
//! control marks, element windows) and a job's receivers as the tiles see them.

use super::*;

#[derive(Default)]
pub(super) struct TileState {
    /// The streams as intervals, for the test-only tile walk.
    #[cfg(test)]
    pub(super) out: BusyIntervals,
    #[cfg(test)]
    pub(super) inc: BusyIntervals,
    /// Send starts, receive controls, and XPIC and PIC events kept apart
    /// (tiles in single-control mode refuse an XPIC and a PIC at one event),
    /// and the strict events of paired receives (see [`EventMarks`]).
    pub(super) marks: EventMarks,
    /// Never put an XPIC and a PIC control on one event of this tile, so its
    /// row needs no `sendpicp` (and therefore no 8-byte realignment). Set by
    /// [`schedule_pieces_avoiding`] for tiles whose row could not be aligned.
    pub(super) single_controls: bool,
    /// SRAM windows of this tile's sends and receives (§2.10 rule 5).
    pub(super) send_windows: WindowIndex,
    pub(super) receive_windows: WindowIndex,
    /// `out` and `inc` as bits (the common-gap search reads them 64 events at a time).
    pub(super) out_bits: EventBits,
    pub(super) inc_bits: EventBits,
    /// Starts `s` refused by [`Self::send_blocked`].
    pub(super) send_block: EventBits,
    /// Selects `x` refused by [`Self::receive_controls_blocked`] with this tile's PIC lag.
    pub(super) receive_block: EventBits,
    /// This tile's PIC lag (`pic_lag`), for `receive_block`.
    pub(super) lag: u64,
}

impl TileState {
    pub(super) fn new(tile: PhysicalTile, single_controls: bool) -> Self {
        Self {
            single_controls,
            lag: u64::from(pic_lag(tile)),
            ..Self::default()
        }
    }
    /// Marks the outgoing stream busy on `[start, end)` (free before).
    pub(super) fn busy_out(&mut self, start: u64, end: u64) {
        #[cfg(test)]
        self.out.insert(start, end);
        self.out_bits.set_range(start, end);
    }
    /// Marks the incoming stream busy on `[start, end)` (free before).
    pub(super) fn busy_in(&mut self, start: u64, end: u64) {
        #[cfg(test)]
        self.inc.insert(start, end);
        self.inc_bits.set_range(start, end);
    }
    /// Adds `marks` at event `e` and refreshes the starts and selects they
    /// may now block (marks only ever add refusals).
    pub(super) fn mark(&mut self, e: u64, marks: u8) {
        self.marks.mark(e, marks);
        // A refusal already recorded stays (marks only add refusals), so
        // only starts and selects not yet refused are re-evaluated.
        for s in [e.saturating_sub(1), e] {
            if !self.send_block.get(s) && self.send_blocked(s) {
                self.send_block.set(s);
            }
        }
        // A mark at `e` decides selects `x` with `e` within ±2 of `x` or of
        // its pointer write `x + lag`.
        let near = e.saturating_sub(2)..=e + 2;
        let via_pointer = e.saturating_sub(self.lag + 2)..=(e + 2).saturating_sub(self.lag);
        for x in near.chain(via_pointer) {
            if !self.receive_block.get(x) && self.receive_controls_blocked(x, self.lag) {
                self.receive_block.set(x);
            }
        }
    }
    /// Is the stream free on `[start, end)`? Otherwise the first event worth trying.
    pub(super) fn free(bits: &EventBits, start: u64, end: u64) -> core::result::Result<(), u64> {
        if bits.get(start) {
            return Err(bits.next_clear(start));
        }
        match bits.next_set(start) {
            Some(f) if f < end => Err(f),
            _ => Ok(()),
        }
    }
    /// Is `c` (a receive control on this tile) on one of its sends' first two events?
    pub(super) fn control_blocked(&self, c: u64) -> bool {
        self.marks.has(c, SEND_START) || (c > 0 && self.marks.has(c - 1, SEND_START))
    }
    /// Would a new control at `c` fall within two events of a different
    /// existing control? Keeping distinct control events ≥ 3 apart leaves a
    /// multi-event instruction between any two of them, which the encoder
    /// can split to 8-byte-align a following `sendpicp` (§2.3).
    pub(super) fn control_crowded(&self, c: u64) -> bool {
        (c.saturating_sub(2)..=c + 2).any(|e| e != c && self.marks.has(e, CONTROL))
    }
    /// May a piece's tear-down (an XPIC back to neutral) not go at `e`?
    pub(super) fn teardown_blocked(&self, e: u64) -> bool {
        self.control_refused(e, PIC)
    }
    /// May no receive control go at `c`: [`Self::control_blocked`],
    /// [`Self::strict`], [`Self::control_crowded`] or, on a single-control
    /// tile, a control of kind `doubles` at `c` (`PIC` for an XPIC, `XPIC`
    /// for a PIC) — read from the marks around `c` at once (asked for every
    /// select a mark may change and every candidate start).
    fn control_refused(&self, c: u64, doubles: u8) -> bool {
        let m = self.marks.around(c);
        (m[1] | m[2]) & SEND_START != 0
            || m[2] & STRICT != 0
            || (m[0] | m[1] | m[3] | m[4]) & CONTROL != 0
            || (self.single_controls && m[2] & doubles != 0)
    }
    /// Would a send starting at `s` put a receive control on its first two events?
    pub(super) fn send_blocked(&self, s: u64) -> bool {
        self.marks.has(s, CONTROL) || self.marks.has(s + 1, CONTROL)
    }
    /// Is a paired receive's control at `c` (nothing else may share it, §2.6)?
    pub(super) fn strict(&self, c: u64) -> bool {
        self.marks.has(c, STRICT)
    }
    /// May a 32-bit receive select its sender at `x` and write its pointer
    /// at `x + lag`? (Depends only on `x`: not on the piece's length.)
    pub(super) fn receive_controls_blocked(&self, x: u64, lag: u64) -> bool {
        self.control_refused(x, PIC) || self.control_refused(x + lag, XPIC)
    }
    /// The first `x' > x` at which [`Self::receive_controls_blocked`] is false.
    /// Past the last mark (plus the ±2 look-around) nothing blocks, so this ends.
    pub(super) fn next_receive_controls(&self, x: u64, lag: u64) -> u64 {
        let mut x = x + 1;
        while self.receive_controls_blocked(x, lag) {
            x += 1;
        }
        x
    }
    /// The first `s' > s` at which [`Self::send_blocked`] is false.
    pub(super) fn next_send_start(&self, s: u64) -> u64 {
        let mut s = s + 1;
        while self.send_blocked(s) {
            s += 1;
        }
        s
    }
    /// Earliest event the window `[start, end)` with `mask` may be moved to,
    /// if it collides with an opposite-kind window sharing an element.
    pub(super) fn window_clash(&self, mask: u64, start: u64, end: u64, send: bool) -> Option<u64> {
        let opposite = if send {
            &self.receive_windows
        } else {
            &self.send_windows
        };
        opposite.latest_clash(mask, start, end)
    }
}

pub(super) struct Receiver {
    pub(super) index: u16,
    pub(super) tile: PhysicalTile,
    /// `T(s,d) + 1`: receiver XPIC event minus sender start.
    pub(super) offset: i64,
    /// XPIC → first memory write.
    pub(super) lag: u64,
}

impl Receiver {
    /// The receivers of a job: `destinations` index `t`'s destinations.
    pub(super) fn of(t: &Transfer, destinations: &[u16]) -> Vec<Receiver> {
        destinations
            .iter()
            .map(|&k| {
                let d = &t.destinations[usize::from(k)];
                Receiver {
                    index: k,
                    tile: d.tile,
                    offset: i64::from(mux_time(t.source, d.tile)) + 1,
                    lag: u64::from(pic_lag(d.tile)),
                }
            })
            .collect()
    }
}

/// The earliest sender start: every receiver's XPIC select must be at
/// event ≥ 1 (multicast shift, §2.5).
pub(super) fn earliest_start(receivers: &[Receiver]) -> u64 {
    receivers
        .iter()
        .map(|r| (1 - r.offset).max(0) as u64)
        .max()
        .unwrap_or(0)
}
