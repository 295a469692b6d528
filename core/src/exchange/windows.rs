//! One tile's SRAM access windows of one kind (sends or receives), indexed
//! so the scheduler's element-clash query (§2.10 rule 5) does not scan every
//! window the tile already has.
//!
//! A large phase puts thousands of windows on a tile and the scheduler asks
//! the clash query for every candidate start of every piece, so a linear
//! scan made scheduling quadratic. Windows are kept in length classes
//! (powers of two), each a set ordered by start that remembers its longest
//! window: a window of length ≤ `longest` can only overlap `[start, end)`
//! if it starts in `[start − longest, end)`. Windows of one kind on one tile
//! barely overlap each other (their streams are exclusive), so each class
//! range holds only a few windows. The answer is a maximum, so it does not
//! depend on the order windows are visited: identical to a full scan.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// One length class: windows with `end − start` in `[2^k, 2^(k+1))`
/// (class 0 also holds empty windows).
#[derive(Clone, Debug, Default)]
struct LengthClass {
    /// `(start, end, element mask)`; identical duplicates collapse, which
    /// cannot change a maximum.
    windows: BTreeSet<(u64, u64, u64)>,
    /// Longest `end − start` in this class.
    longest: u64,
}

/// Windows of one kind (send or receive) on one tile.
#[derive(Clone, Debug, Default)]
pub(crate) struct WindowIndex {
    /// Indexed by `floor(log2(len))`; grown on demand.
    classes: Vec<LengthClass>,
}

impl WindowIndex {
    /// Records the window `[start, end)` touching the SRAM elements in `mask`.
    pub(crate) fn insert(&mut self, mask: u64, start: u64, end: u64) {
        let len = end.saturating_sub(start);
        let class = (u64::BITS - 1 - len.max(1).leading_zeros()) as usize;
        if self.classes.len() <= class {
            self.classes.resize_with(class + 1, LengthClass::default);
        }
        let c = &mut self.classes[class];
        c.longest = c.longest.max(len);
        c.windows.insert((start, end, mask));
    }

    /// The latest end among windows that overlap `[start, end)` and share an
    /// element with `mask`, if any.
    pub(crate) fn latest_clash(&self, mask: u64, start: u64, end: u64) -> Option<u64> {
        let mut latest = None;
        for c in &self.classes {
            // w.end > start with w.end − w.start ≤ longest ⇒ w.start > start − longest.
            let lo = start.saturating_sub(c.longest);
            if c.windows.is_empty() || lo >= end {
                continue;
            }
            for &(ws, we, wm) in c.windows.range((lo, 0, 0)..(end, 0, 0)) {
                if wm & mask != 0 && ws < end && start < we {
                    latest = latest.max(Some(we));
                }
            }
        }
        latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference answer: a scan over every window.
    fn scan(all: &[(u64, u64, u64)], mask: u64, start: u64, end: u64) -> Option<u64> {
        all.iter()
            .filter(|&&(ws, we, wm)| wm & mask != 0 && ws < end && start < we)
            .map(|&(_, we, _)| we)
            .max()
    }

    #[test]
    fn matches_a_full_scan() {
        // Deterministic pseudo-random windows of mixed lengths (1 to ~5000
        // events, including empty ones) and queries around them.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut index = WindowIndex::default();
        let mut all = Vec::new();
        for i in 0..600u64 {
            let start = next() % 20_000;
            let len = match i % 4 {
                0 => next() % 5000,
                1 => next() % 40,
                2 => 0,
                _ => next() % 300,
            };
            let mask = 1u64 << (next() % 8);
            index.insert(mask, start, start + len);
            all.push((start, start + len, mask));
            for _ in 0..20 {
                let qs = next() % 22_000;
                let qe = qs + next() % 600;
                let qm = next() & 0xff;
                assert_eq!(
                    index.latest_clash(qm, qs, qe),
                    scan(&all, qm, qs, qe),
                    "query {qm:#x} [{qs}, {qe}) after {} windows",
                    all.len()
                );
            }
        }
    }

    #[test]
    fn boundaries_are_half_open() {
        let mut index = WindowIndex::default();
        index.insert(1, 10, 20);
        assert_eq!(index.latest_clash(1, 20, 30), None);
        assert_eq!(index.latest_clash(1, 0, 10), None);
        assert_eq!(index.latest_clash(1, 19, 30), Some(20));
        assert_eq!(index.latest_clash(1, 0, 11), Some(20));
        assert_eq!(index.latest_clash(2, 0, 100), None);
        // An empty window strictly inside the query still counts (as in a scan).
        index.insert(1, 50, 50);
        assert_eq!(index.latest_clash(1, 40, 60), Some(50));
    }
}
