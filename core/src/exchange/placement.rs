//! Where a row may live (§2.10 rules 1–2): below the executable limit, on an
//! 8-byte boundary (so its `sendpicp`s are aligned), and in SRAM elements —
//! including the supervisor's fetch look-ahead past its end — that no send
//! source or receive destination of the phase touches on that tile.

use super::error::{ExchangeError, Result};
use super::request::{element_mask, ExchangePhase};
use ipuc_target::ipu21::exchange_model::SENDPICP_ALIGN_BYTES;
use ipuc_target::ipu21::sram::{
    EXECUTABLE_MEMORY_LIMIT, SUPERVISOR_FETCH_LOOKAHEAD, TILE_MEMORY_BASE,
};
use ipuc_target::ipu21::topology::PhysicalTile;

/// Checks that `tile`'s row of `row_bytes` bytes may be placed at `row_address`.
pub fn check_row_placement(
    phase: &ExchangePhase,
    tile: PhysicalTile,
    row_address: u32,
    row_bytes: u32,
) -> Result<()> {
    let fail = |reason| ExchangeError::RowPlacement {
        tile,
        row_address,
        reason,
    };
    if !row_address.is_multiple_of(SENDPICP_ALIGN_BYTES) {
        return Err(fail("row is not 8-byte aligned"));
    }
    let fetch_end =
        u64::from(row_address) + u64::from(row_bytes) + u64::from(SUPERVISOR_FETCH_LOOKAHEAD);
    if row_address < TILE_MEMORY_BASE
        || u64::from(row_address) + u64::from(row_bytes) > u64::from(EXECUTABLE_MEMORY_LIMIT)
    {
        return Err(fail("row outside the executable region"));
    }
    let fetch_mask = element_mask(row_address, (fetch_end - u64::from(row_address)) as u32);
    for t in &phase.transfers {
        let bytes = t.bytes();
        if t.source == tile && element_mask(t.source_address, bytes) & fetch_mask != 0 {
            return Err(fail("row shares an SRAM element with a send source"));
        }
        for d in t.destinations.iter().filter(|d| d.tile == tile) {
            if element_mask(d.address, bytes) & fetch_mask != 0 {
                return Err(fail(
                    "row shares an SRAM element with a receive destination",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use alloc::vec;

    use super::*;
    use crate::exchange::{Destination, Transfer, Width};

    #[test]
    fn rows_keep_clear_of_data_elements() {
        let p = |id| PhysicalTile::new(id).unwrap();
        let phase = ExchangePhase {
            transfers: vec![Transfer {
                source: p(0),
                source_address: 0x6_0000,
                words: 16,
                destinations: vec![Destination {
                    tile: p(2),
                    address: 0x5_4000,
                }],
                width: Width::Word32,
            }],
        };
        assert!(check_row_placement(&phase, p(0), 0x5_0000, 0x100).is_ok());
        assert!(check_row_placement(&phase, p(0), 0x5_0004, 0x100).is_err());
        assert!(check_row_placement(&phase, p(0), 0x6_0000, 0x100).is_err());
        assert!(check_row_placement(&phase, p(0), 0x8_0000, 0x100).is_err());
        // Tile 2 receives at 0x54000: a row ending 32 bytes before that
        // element still reaches it with the fetch look-ahead.
        assert!(check_row_placement(&phase, p(2), 0x5_3F00, 0xE0).is_err());
        assert!(check_row_placement(&phase, p(2), 0x5_0000, 0x100).is_ok());
    }
}
