//! One tile's SRAM access windows of one kind (sends or receives), indexed
//! so the scheduler's element-clash query (§2.10 rule 5) does not scan every
//! window the tile already has.
//!
//! A large phase puts thousands of windows on a tile and the scheduler asks
//! the clash query for every candidate start of every piece. Windows are
//! kept per SRAM element (a window is listed under every element its mask
//! names), each list sorted by start and remembering its longest window: a
//! window of length ≤ `longest` can only overlap `[start, end)` if it starts
//! in `[start − longest, end)`, found by binary search. Windows of one kind on
//! one tile barely overlap each other (their streams are exclusive), so each
//! range holds only a few windows. The answer is a maximum over the windows
//! that share an element with the query, so it does not depend on the order
//! windows are visited: identical to a full scan.

use alloc::vec::Vec;

/// Windows touching one SRAM element.
#[derive(Clone, Debug, Default)]
struct ElementWindows {
    /// `(start, end)`, sorted.
    windows: Vec<(u64, u64)>,
    /// Longest `end − start` listed.
    longest: u64,
}

/// Windows of one kind (send or receive) on one tile.
#[derive(Clone, Debug, Default)]
pub(crate) struct WindowIndex {
    /// Indexed by element (mask bit); grown on demand.
    elements: Vec<ElementWindows>,
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let b = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        Some(b)
    })
}

impl WindowIndex {
    /// Records the window `[start, end)` touching the SRAM elements in `mask`.
    pub(crate) fn insert(&mut self, mask: u64, start: u64, end: u64) {
        if mask == 0 {
            return;
        }
        let top = (u64::BITS - mask.leading_zeros()) as usize;
        if self.elements.len() < top {
            self.elements.resize_with(top, ElementWindows::default);
        }
        let len = end.saturating_sub(start);
        for b in bits(mask) {
            let e = &mut self.elements[b];
            e.longest = e.longest.max(len);
            let at = e.windows.partition_point(|&w| w < (start, end));
            e.windows.insert(at, (start, end));
        }
    }

    /// The latest end among windows that overlap `[start, end)` and share an
    /// element with `mask`, if any.
    pub(crate) fn latest_clash(&self, mask: u64, start: u64, end: u64) -> Option<u64> {
        let mut latest = None;
        for b in bits(mask) {
            let Some(e) = self.elements.get(b) else {
                break;
            };
            // w.end > start with w.end − w.start ≤ longest ⇒ w.start ≥ start − longest.
            let lo = start.saturating_sub(e.longest);
            if lo >= end {
                continue;
            }
            let from = e.windows.partition_point(|&(ws, _)| ws < lo);
            for &(ws, we) in &e.windows[from..] {
                if ws >= end {
                    break;
                }
                if start < we {
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
