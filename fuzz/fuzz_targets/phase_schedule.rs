//! The exchange phase scheduler against the independent checker: a
//! byte-driven phase (up to 12 transfers among 24 tiles, arbitrary
//! addresses, lengths, widths and fan-outs) either fails `validate`/the
//! scheduler with a typed error, or is scheduled into rows that
//! `check_phase` (decode + replay + compare) accepts — never a panic.
#![no_main]

use ipuc_core::exchange::{
    check_phase, schedule_unchecked, Destination, ExchangePhase, ScheduleOptions, Transfer, Width,
};
use ipuc_target::ipu21::topology::PhysicalTile;
use libfuzzer_sys::fuzz_target;

mod bytes;
use bytes::Bytes;

impl Bytes<'_> {
    fn tile(&mut self) -> PhysicalTile {
        PhysicalTile::new(u32::from(self.u8() % 24) * 61 % 1472).unwrap()
    }
    /// Mostly word-aligned addresses in receive/send areas, sometimes anything.
    fn address(&mut self) -> u32 {
        match self.u8() % 8 {
            0 => self.u32(),
            1..=3 => 0x8_0000 + 4 * u32::from(self.u16()),
            _ => 0x6_0000 + 4 * u32::from(self.u16() % 0x4000),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let n = 1 + b.u8() % 12;
    let mut transfers = Vec::new();
    for _ in 0..n {
        let source = b.tile();
        let source_address = b.address();
        let words = match b.u8() % 8 {
            0 => u32::from(b.u16()) << (b.u8() % 17),
            _ => 1 + u32::from(b.u8() % 64),
        };
        let width = if b.u8() % 4 == 0 { Width::Paired64 } else { Width::Word32 };
        let fanout = b.u8() % 5;
        let destinations = (0..fanout)
            .map(|_| Destination {
                tile: b.tile(),
                address: b.address(),
            })
            .collect();
        transfers.push(Transfer {
            source,
            source_address,
            words,
            destinations,
            width,
        });
    }
    let phase = ExchangePhase { transfers };
    if phase.validate().is_err() {
        return;
    }
    let options = ScheduleOptions {
        min_piece_words: 1 + u32::from(b.u8() % 64),
        ..ScheduleOptions::default()
    };
    match schedule_unchecked(&phase, options) {
        Ok(scheduled) => {
            if let Err(e) = check_phase(&phase, &scheduled.rows) {
                panic!("scheduled rows fail the checker: {e}\n{phase:?}");
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
