//! Largest-remaining-load-first job order for the phase scheduler.
//!
//! A job's key is the largest unscheduled stream load among the tiles it
//! touches (its sender's outgoing stream, its receivers' incoming streams);
//! the next job is the one with the largest key, then the most words, then
//! the lowest index. Re-evaluating keys in a lazy heap costs a job's whole
//! fan-out per stale pop, and with wide multicasts every placement makes
//! many keys stale, so large phases spent their time re-ranking jobs.
//!
//! Instead each stream (a *resource*) keeps its live jobs ranked by
//! (words, lowest index), and streams are ranked by (remaining load, best
//! live job, stream). The largest of those names exactly the job with the
//! largest (key, words, lowest index): a job's key is reached on one of its
//! streams, and no stream ranks a job above its key. Placing a job only
//! changes the streams it touches, so the cost per job is its fan-out times
//! a logarithm.
//!
//! A job's rank never changes, so each stream's jobs are sorted once (best
//! first) and a cursor skips jobs already taken: finding a stream's best
//! live job is amortised constant. Streams are ranked in a tournament tree
//! (a binary max-tree over the streams, leaves in stream order), updated in
//! place along one leaf-to-root path per touched stream.

use alloc::vec::Vec;
use core::cmp::Reverse;

/// A live job's rank within one stream: more words first, then lower index.
type JobRank = (u32, Reverse<usize>);

/// A stream's rank: (remaining load, best live job, stream); `None` when
/// it has no live job (below every stream that has one).
type StreamRank = Option<(u64, JobRank, usize)>;

/// Jobs in largest-remaining-load-first order (see the module comment).
pub(crate) struct RemainingLoadOrder {
    /// Remaining load per stream.
    load: Vec<u64>,
    /// Jobs per stream, best rank first (a job listed once per stream).
    jobs: Vec<Vec<JobRank>>,
    /// Per stream, how many of `jobs` are known to be taken.
    cursor: Vec<usize>,
    /// Jobs already taken.
    taken: Vec<bool>,
    /// Tournament tree: `tree[leaves + r]` is stream `r`'s rank, each inner
    /// node the larger of its two children, `tree[1]` the largest.
    tree: Vec<StreamRank>,
    leaves: usize,
    /// Streams each job touches (a stream may repeat: it is charged once per mention).
    streams: Vec<Vec<usize>>,
    /// Events each job takes off each stream it touches.
    cost: Vec<u64>,
    /// Scratch: the streams of the job being taken, deduplicated.
    touched: Vec<usize>,
}

impl RemainingLoadOrder {
    /// `load` is the initial remaining load per stream; job `i` touches
    /// `streams[i]`, costs `cost[i]` events on each and carries `words[i]`.
    pub(crate) fn new(
        load: Vec<u64>,
        streams: Vec<Vec<usize>>,
        cost: Vec<u64>,
        words: Vec<u32>,
    ) -> Self {
        let mut jobs: Vec<Vec<JobRank>> = (0..load.len()).map(|_| Vec::new()).collect();
        for (j, touched) in streams.iter().enumerate() {
            for &r in touched {
                jobs[r].push((words[j], Reverse(j)));
            }
        }
        for list in &mut jobs {
            // Best first; a job mentioning a stream twice is listed once.
            list.sort_unstable_by(|a, b| b.cmp(a));
            list.dedup();
        }
        let leaves = load.len().max(1).next_power_of_two();
        let mut order = Self {
            cursor: alloc::vec![0; load.len()],
            taken: alloc::vec![false; streams.len()],
            tree: alloc::vec![None; 2 * leaves],
            leaves,
            load,
            jobs,
            streams,
            cost,
            touched: Vec::new(),
        };
        for r in 0..order.load.len() {
            order.tree[leaves + r] = order.rank(r);
        }
        for i in (1..leaves).rev() {
            order.tree[i] = order.tree[2 * i].max(order.tree[2 * i + 1]);
        }
        order
    }

    /// Stream `r`'s rank, advancing its cursor past taken jobs.
    fn rank(&mut self, r: usize) -> StreamRank {
        let list = &self.jobs[r];
        let mut c = self.cursor[r];
        while let Some(&(_, Reverse(j))) = list.get(c) {
            if !self.taken[j] {
                break;
            }
            c += 1;
        }
        self.cursor[r] = c;
        list.get(c).map(|&best| (self.load[r], best, r))
    }

    /// Re-ranks stream `r` and the tree above it.
    fn update(&mut self, r: usize) {
        let mut i = self.leaves + r;
        self.tree[i] = self.rank(r);
        while i > 1 {
            i /= 2;
            self.tree[i] = self.tree[2 * i].max(self.tree[2 * i + 1]);
        }
    }

    /// Takes the next job and charges its cost to the streams it touches.
    pub(crate) fn pop(&mut self) -> Option<usize> {
        let (_, (_, Reverse(job)), _) = self.tree.get(1).copied().flatten()?;
        self.take(job);
        Some(job)
    }

    /// Takes `job` out of turn (placed with another job, e.g. in a stream
    /// chain) and charges its cost; a job already taken is left as it is.
    pub(crate) fn take(&mut self, job: usize) {
        if self.taken.get(job).copied() != Some(false) {
            return;
        }
        self.taken[job] = true;
        for &r in &self.streams[job] {
            self.load[r] = self.load[r].saturating_sub(self.cost[job]);
        }
        let mut touched = core::mem::take(&mut self.touched);
        touched.clear();
        touched.extend_from_slice(&self.streams[job]);
        touched.sort_unstable();
        touched.dedup();
        for &r in &touched {
            self.update(r);
        }
        self.touched = touched;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: a lazily re-evaluated max-heap over (key, words, lowest index).
    fn lazy_heap_order(
        mut load: Vec<u64>,
        streams: &[Vec<usize>],
        cost: &[u64],
        words: &[u32],
    ) -> Vec<usize> {
        let key = |j: usize, load: &[u64]| streams[j].iter().map(|&r| load[r]).max().unwrap_or(0);
        let mut heap = alloc::collections::BinaryHeap::new();
        for (j, &w) in words.iter().enumerate() {
            heap.push((key(j, &load), w, Reverse(j)));
        }
        let mut order = Vec::new();
        while let Some((k, w, Reverse(j))) = heap.pop() {
            let now = key(j, &load);
            if now < k {
                heap.push((now, w, Reverse(j)));
                continue;
            }
            for &r in &streams[j] {
                load[r] = load[r].saturating_sub(cost[j]);
            }
            order.push(j);
        }
        order
    }

    #[test]
    fn matches_a_lazy_heap() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for round in 0..20 {
            let n_streams = 4 + next(40) as usize;
            let n_jobs = 1 + next(120) as usize;
            let mut streams = Vec::new();
            let mut cost = Vec::new();
            let mut words = Vec::new();
            let mut load = alloc::vec![0u64; n_streams];
            for _ in 0..n_jobs {
                let fanout = 1 + next(6) as usize;
                // Repeats allowed, as a stream may be mentioned twice.
                let touched: Vec<usize> = (0..fanout)
                    .map(|_| next(n_streams as u64) as usize)
                    .collect();
                // Few distinct costs and words so that ties happen.
                let c = 1 + next(4);
                for &r in &touched {
                    load[r] += c;
                }
                streams.push(touched);
                cost.push(c);
                words.push(next(3) as u32);
            }
            // Some streams carry extra load no job accounts for.
            for l in load.iter_mut().step_by(3) {
                *l += next(5);
            }
            let expected = lazy_heap_order(load.clone(), &streams, &cost, &words);
            let mut order = RemainingLoadOrder::new(load, streams, cost, words);
            let got: Vec<usize> = core::iter::from_fn(|| order.pop()).collect();
            assert_eq!(got, expected, "round {round}");
        }
    }
}
