//! Per-event marks of one tile in a phase being scheduled: which events hold
//! a send start, a receive control (XPIC, PIC) or a paired control.
//!
//! The scheduler asks "is there a control at `e`, `e ± 1`, `e ± 2`?" many
//! times for every candidate start of every piece. Sets ordered by event made
//! each question a tree walk; a byte per event makes it one load, and the
//! array is as long as the phase (tiles × events, never tiles² or pieces²).

use alloc::vec::Vec;

/// A send (outgoing message) starts at this event.
pub(crate) const SEND_START: u8 = 1;
/// Some receive control (XPIC or PIC write) takes effect at this event.
pub(crate) const CONTROL: u8 = 1 << 1;
/// An XPIC (select or tear-down) takes effect at this event.
pub(crate) const XPIC: u8 = 1 << 2;
/// A PIC write (pointer or paired format) takes effect at this event.
pub(crate) const PIC: u8 = 1 << 3;
/// A control of a paired receive: nothing else may share its event (§2.6).
pub(crate) const STRICT: u8 = 1 << 4;

/// Marks by event (events past the end carry none).
#[derive(Clone, Debug, Default)]
pub(crate) struct EventMarks {
    bits: Vec<u8>,
}

impl EventMarks {
    /// The marks at event `e`.
    pub(crate) fn at(&self, e: u64) -> u8 {
        usize::try_from(e)
            .ok()
            .and_then(|i| self.bits.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Does event `e` carry any of `marks`?
    pub(crate) fn has(&self, e: u64, marks: u8) -> bool {
        self.at(e) & marks != 0
    }

    /// The marks at events `e − 2 ..= e + 2` (none before event 0), for a
    /// question about an event and its neighbours with one slice read.
    pub(crate) fn around(&self, e: u64) -> [u8; 5] {
        let window = usize::try_from(e)
            .ok()
            .and_then(|i| Some(i.checked_sub(2)?..i.checked_add(3)?))
            .and_then(|r| self.bits.get(r));
        match window {
            Some(w) => [w[0], w[1], w[2], w[3], w[4]],
            // Events past `u64::MAX` carry none, as events past the end.
            None => core::array::from_fn(|k| {
                e.checked_add(k as u64)
                    .and_then(|v| v.checked_sub(2))
                    .map_or(0, |at| self.at(at))
            }),
        }
    }

    /// Adds `marks` at event `e`. Events are bounded by the phase length
    /// (`u32` events, checked when rows are built).
    pub(crate) fn mark(&mut self, e: u64, marks: u8) {
        let i = e as usize;
        if self.bits.len() <= i {
            self.bits.resize(i + 1, 0);
        }
        self.bits[i] |= marks;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn around_reads_the_neighbours_with_none_before_zero_and_past_the_end() {
        let mut m = EventMarks::default();
        for e in [0, 1, 3, 7, 8] {
            m.mark(e, 1 << (e % 5));
        }
        for e in 0..14 {
            let expected: [u8; 5] = core::array::from_fn(|k| match (e + k as u64).checked_sub(2) {
                Some(at) => m.at(at),
                None => 0,
            });
            assert_eq!(m.around(e), expected, "event {e}");
        }
        assert_eq!(m.around(u64::MAX - 1), [0; 5]);
    }

    #[test]
    fn marks_accumulate_and_default_to_none() {
        let mut m = EventMarks::default();
        assert_eq!(m.at(5), 0);
        m.mark(5, CONTROL);
        m.mark(5, XPIC);
        m.mark(2, SEND_START);
        assert_eq!(m.at(5), CONTROL | XPIC);
        assert!(m.has(2, SEND_START | PIC));
        assert!(!m.has(2, PIC));
        assert!(!m.has(4, u8::MAX));
        assert!(!m.has(u64::MAX, u8::MAX));
    }
}
