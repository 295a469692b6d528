//! Sorted disjoint half-open event intervals: one tile's busy outgoing or
//! incoming stream.
//!
//! The scheduler asks each stream for the first free run of at least `L`
//! events at or after some event ([`BusyIntervals::first_fit`]). A nearly
//! full stream has hundreds of small gaps, and walking them for every piece
//! made dense phases quadratic. Spans are therefore kept in chunks of at
//! most `2 × CHUNK` spans, each remembering its largest inner gap, so a
//! query skips whole chunks whose gaps are all too small: about
//! `CHUNK + spans / CHUNK` steps instead of `spans`.

use alloc::vec::Vec;

/// Target spans per chunk (a chunk splits at twice this).
const CHUNK: usize = 32;

#[derive(Clone, Debug, Default)]
struct Chunk {
    /// Sorted, disjoint (touching allowed), non-empty.
    spans: Vec<(u64, u64)>,
    /// Largest gap between consecutive spans of this chunk.
    max_gap: u64,
}

impl Chunk {
    fn new(spans: Vec<(u64, u64)>) -> Self {
        let mut c = Chunk { spans, max_gap: 0 };
        c.refresh();
        c
    }
    fn refresh(&mut self) {
        self.max_gap = self
            .spans
            .windows(2)
            .map(|w| w[1].0.saturating_sub(w[0].1))
            .max()
            .unwrap_or(0);
    }
    fn first(&self) -> u64 {
        self.spans.first().map_or(u64::MAX, |s| s.0)
    }
    fn last_end(&self) -> u64 {
        self.spans.last().map_or(0, |s| s.1)
    }
}

/// Busy `[start, end)` intervals, sorted and disjoint (touching allowed).
#[derive(Clone, Debug, Default)]
pub struct BusyIntervals {
    chunks: Vec<Chunk>,
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
    /// Index of the chunk that holds (or would hold) a span starting at `t`.
    fn chunk_of(&self, t: u64) -> usize {
        self.chunks
            .partition_point(|c| c.first() <= t)
            .saturating_sub(1)
    }

    /// Free or busy at `t`, and for how long.
    pub fn slot(&self, t: u64) -> Slot {
        let (q, free_until) = self.first_fit(t, 0);
        if q > t {
            Slot::BusyUntil(q)
        } else {
            Slot::FreeUntil(free_until)
        }
    }

    /// The earliest `q ≥ t` from which at least `min_len` events are free,
    /// and the end of that free run (`u64::MAX` = forever). With
    /// `min_len = 0`, `q` is `t` if `t` is free, else the end of the busy
    /// run that holds `t`.
    pub fn first_fit(&self, t: u64, min_len: u64) -> (u64, u64) {
        let mut q = t;
        let mut c = self.chunk_of(t);
        let mut first_chunk = true;
        while let Some(chunk) = self.chunks.get(c) {
            // Skip a later chunk whose gaps are all too short, unless the run
            // from `q` to its first span already fits (or it has one big gap).
            if !first_chunk && chunk.max_gap < min_len.max(1) && chunk.first() < q + min_len {
                q = q.max(chunk.last_end());
                c += 1;
                continue;
            }
            let spans = &chunk.spans;
            let mut j = if first_chunk {
                spans.partition_point(|&(a, _)| a <= q).saturating_sub(1)
            } else {
                0
            };
            first_chunk = false;
            while let Some(&(a, b)) = spans.get(j) {
                if b <= q {
                    j += 1;
                    continue;
                }
                if a > q && a - q >= min_len {
                    return (q, a);
                }
                q = q.max(b);
                j += 1;
            }
            c += 1;
        }
        (q, u64::MAX)
    }

    /// Marks `[start, end)` busy. The caller guarantees it is free.
    pub fn insert(&mut self, start: u64, end: u64) {
        if self.chunks.is_empty() {
            self.chunks.push(Chunk::new(alloc::vec![(start, end)]));
            return;
        }
        let c = self.chunk_of(start);
        let chunk = &mut self.chunks[c];
        let idx = chunk.spans.partition_point(|&(a, _)| a < start);
        chunk.spans.insert(idx, (start, end));
        if chunk.spans.len() > 2 * CHUNK {
            let tail = chunk.spans.split_off(CHUNK);
            chunk.refresh();
            self.chunks.insert(c + 1, Chunk::new(tail));
        } else {
            chunk.refresh();
        }
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
        // Touching spans form one busy run.
        assert_eq!(b.slot(25), Slot::BusyUntil(40));
    }

    /// The reference: walk the busy spans one by one.
    fn walk(spans: &[(u64, u64)], t: u64, min_len: u64) -> (u64, u64) {
        let mut q = t;
        loop {
            match spans.iter().find(|&&(_, b)| b > q) {
                None => return (q, u64::MAX),
                Some(&(a, b)) => {
                    if a > q && a - q >= min_len {
                        return (q, a);
                    }
                    q = q.max(b);
                }
            }
        }
    }

    #[test]
    fn first_fit_matches_a_walk() {
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut b = BusyIntervals::default();
        let mut all: Vec<(u64, u64)> = Vec::new();
        // Fill a stream with many small spans at random free places (some
        // touching), checking queries as it fills up.
        for round in 0..3000 {
            let len = 1 + next(30);
            let at = next(40_000);
            let (q, f) = walk(&all, at, len);
            let start = q;
            let end = (q + len).min(f);
            if end > start {
                b.insert(start, end);
                let i = all.partition_point(|&(a, _)| a < start);
                all.insert(i, (start, end));
            }
            for _ in 0..5 {
                let t = next(45_000);
                let l = next(40);
                assert_eq!(
                    b.first_fit(t, l),
                    walk(&all, t, l),
                    "round {round}: t={t} l={l}"
                );
                let s = b.slot(t);
                let expect = match walk(&all, t, 0) {
                    (q, _) if q > t => Slot::BusyUntil(q),
                    (_, f) => Slot::FreeUntil(f),
                };
                assert_eq!(s, expect, "round {round}: slot {t}");
            }
        }
        assert!(b.chunks.len() > 10, "the test exercises chunk skipping");
    }
}
