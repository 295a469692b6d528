//! Sorted disjoint half-open event intervals: one tile's busy outgoing or
//! incoming stream.

use alloc::vec::Vec;

/// Busy `[start, end)` intervals, sorted and disjoint (touching allowed).
#[derive(Clone, Debug, Default)]
pub struct BusyIntervals {
    spans: Vec<(u64, u64)>,
}

/// Where an event falls relative to the busy intervals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Free from the queried event until this event (exclusive; `u64::MAX` = forever).
    FreeUntil(u64),
    /// Busy until this event.
    BusyUntil(u64),
}

impl BusyIntervals {
    /// Free or busy at `t`, and for how long.
    pub fn slot(&self, t: u64) -> Slot {
        let idx = self.spans.partition_point(|&(a, _)| a <= t);
        if idx > 0 && self.spans[idx - 1].1 > t {
            return Slot::BusyUntil(self.spans[idx - 1].1);
        }
        Slot::FreeUntil(self.spans.get(idx).map_or(u64::MAX, |&(a, _)| a))
    }

    /// Marks `[start, end)` busy. The caller guarantees it is free.
    pub fn insert(&mut self, start: u64, end: u64) {
        let idx = self.spans.partition_point(|&(a, _)| a < start);
        self.spans.insert(idx, (start, end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots() {
        let mut b = BusyIntervals::default();
        b.insert(10, 20);
        b.insert(30, 40);
        assert_eq!(b.slot(0), Slot::FreeUntil(10));
        assert_eq!(b.slot(10), Slot::BusyUntil(20));
        assert_eq!(b.slot(19), Slot::BusyUntil(20));
        assert_eq!(b.slot(20), Slot::FreeUntil(30));
        assert_eq!(b.slot(45), Slot::FreeUntil(u64::MAX));
        b.insert(20, 30);
        assert_eq!(b.slot(25), Slot::BusyUntil(30));
    }
}
