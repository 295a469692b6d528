//! One bit per event of a tile's phase timeline (busy stream, blocked
//! start), so the scheduler's common-gap search reads 64 events of every
//! tile it asks at once instead of walking each tile's gaps one by one.
//!
//! The array is as long as the tile's last marked event (tiles × events
//! bits, never tiles² or pieces²); events past the end read as clear.

use alloc::vec::Vec;

/// Events as bits, grown on demand.
#[derive(Clone, Debug, Default)]
pub(crate) struct EventBits {
    words: Vec<u64>,
}

impl EventBits {
    /// Bits `[e, e + 64)`, bit 0 = event `e` (clear past the end).
    pub(crate) fn window(&self, e: u64) -> u64 {
        let Ok(i) = usize::try_from(e / 64) else {
            return 0;
        };
        let sh = (e % 64) as u32;
        let lo = self.words.get(i).copied().unwrap_or(0);
        if sh == 0 {
            return lo;
        }
        let hi = i
            .checked_add(1)
            .and_then(|j| self.words.get(j))
            .copied()
            .unwrap_or(0);
        (lo >> sh) | (hi << (64 - sh))
    }

    /// Events covered by the array (every later event is clear).
    pub(crate) fn end(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    /// The first set event at or after `e`, if any.
    pub(crate) fn next_set(&self, e: u64) -> Option<u64> {
        let mut e = e;
        while e < self.end() {
            let w = self.window(e);
            if w != 0 {
                return Some(e + u64::from(w.trailing_zeros()));
            }
            e += 64;
        }
        None
    }

    /// The first clear event at or after `e`.
    pub(crate) fn next_clear(&self, e: u64) -> u64 {
        let mut e = e;
        loop {
            let w = self.window(e);
            if w != u64::MAX {
                return e + u64::from(w.trailing_ones());
            }
            e += 64;
        }
    }

    /// Is event `e` set?
    pub(crate) fn get(&self, e: u64) -> bool {
        self.window(e) & 1 != 0
    }

    /// Sets event `e`. Events are bounded by the phase length (`u32`
    /// events, checked when rows are built).
    pub(crate) fn set(&mut self, e: u64) {
        self.set_range(e, e.saturating_add(1));
    }

    /// Sets events `[start, end)`.
    pub(crate) fn set_range(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        let (first, last) = ((start / 64) as usize, ((end - 1) / 64) as usize);
        if self.words.len() <= last {
            self.words.resize(last + 1, 0);
        }
        for (i, w) in self.words[first..=last].iter_mut().enumerate() {
            let base = (first + i) as u64 * 64;
            let lo = start.max(base) - base;
            let hi = end.min(base + 64) - base;
            let mask = if hi - lo == 64 {
                u64::MAX
            } else {
                ((1u64 << (hi - lo)) - 1) << lo
            };
            *w |= mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_read_across_words_and_past_the_end() {
        let mut b = EventBits::default();
        b.set_range(60, 70);
        b.set(130);
        assert!(!b.get(59) && b.get(60) && b.get(69) && !b.get(70));
        assert!(b.get(130) && !b.get(131) && !b.get(1_000_000));
        assert_eq!(b.window(60), 0x3ff);
        assert_eq!(b.window(70), 1 << 60);
        assert_eq!(b.window(0), ((1u64 << 4) - 1) << 60);
        assert_eq!(b.window(128), 0b100);
        assert_eq!(b.window(u64::MAX), 0);
        assert_eq!(b.end(), 192);
        b.set_range(0, 64);
        assert_eq!(b.window(0), u64::MAX);
        b.set_range(5, 5);
        assert_eq!(b.window(200), 0);
        assert_eq!(b.next_set(64), Some(64));
        assert_eq!(b.next_set(70), Some(130));
        assert_eq!(b.next_set(131), None);
        assert_eq!(b.next_clear(0), 70);
        assert_eq!(b.next_clear(70), 70);
        assert_eq!(b.next_clear(130), 131);
    }
}
