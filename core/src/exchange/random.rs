//! Deterministic random phases for benchmarks and property tests.

use alloc::vec::Vec;

use super::request::{Destination, ExchangePhase, Transfer, Width};
use ipuc_target::ipu21::sram::TILE_MEMORY_END;
use ipuc_target::ipu21::topology::{LogicalTile, TILE_COUNT};

/// Shape of a random phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomPhaseSpec {
    /// Logical tiles `0..tiles` take part (each sends one transfer).
    pub tiles: u32,
    /// Words per transfer (the generator varies it in `words/2..=words` unless `exact_words`).
    pub words: u32,
    /// Destinations per transfer (capped at `tiles − 1`).
    pub fanout: u32,
    pub seed: u64,
    /// Every transfer exactly `words` long.
    pub exact_words: bool,
    /// Mark about half the transfers (even word counts) as paired 64-bit.
    pub mixed_width: bool,
}

/// Source data lives here on every sender (region 0, below receive buffers).
pub const RANDOM_SOURCE_BASE: u32 = 0x6_0000;
/// Receive buffers are allocated upwards from here on every receiver.
pub const RANDOM_DESTINATION_BASE: u32 = 0x7_0000;

/// SplitMix64 (the `rand_xoshiro` crate's; Steele, Lea, Flood 2014): tiny,
/// deterministic, good enough for test data. Seeded with the state itself,
/// so a seed gives the stream it always gave.
#[derive(Clone, Debug)]
pub struct SplitMix64(rand_xoshiro::SplitMix64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(rand_core::SeedableRng::seed_from_u64(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        rand_core::RngCore::next_u64(&mut self.0)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A random many-to-many phase: logical tile `i < tiles` sends one transfer
/// from [`RANDOM_SOURCE_BASE`] to `fanout` distinct random other tiles, each
/// receiving into its next free buffer. Receivers whose SRAM is full are
/// skipped, so a transfer may get fewer destinations on extreme shapes.
pub fn random_phase(spec: RandomPhaseSpec) -> ExchangePhase {
    let tiles = spec.tiles.clamp(2, u32::from(TILE_COUNT));
    let max_words = spec
        .words
        .clamp(1, (RANDOM_DESTINATION_BASE - RANDOM_SOURCE_BASE) / 4);
    let fanout = spec.fanout.clamp(1, tiles - 1);
    let mut rng = SplitMix64::new(spec.seed);
    let mut next_free: Vec<u32> = alloc::vec![RANDOM_DESTINATION_BASE; tiles as usize];
    let mut transfers = Vec::new();
    let phys = |l: u32| {
        // l < tiles ≤ TILE_COUNT.
        LogicalTile::new(l).map(|t| t.physical())
    };
    for s in 0..tiles {
        let mut words = if spec.exact_words {
            max_words
        } else {
            max_words / 2 + rng.below(u64::from(max_words - max_words / 2 + 1)) as u32
        }
        .max(1);
        let width = if spec.mixed_width && rng.below(2) == 1 && words >= 2 {
            words &= !1;
            Width::Paired64
        } else {
            Width::Word32
        };
        let bytes = words * 4;
        let mut destinations: Vec<Destination> = Vec::new();
        let mut tries = 0;
        while destinations.len() < fanout as usize && tries < 8 * fanout + 16 {
            tries += 1;
            let d = rng.below(u64::from(tiles - 1)) as u32;
            let d = if d >= s { d + 1 } else { d };
            // 64-bit requests mostly name complete pairs (logical 2k, 2k+1 are
            // physical partners, §1.1) so that they can be sent paired; one
            // pick in eight stays single and exercises the 32-bit fallback.
            let mut picks = alloc::vec![d];
            if width == Width::Paired64
                && rng.below(8) != 0
                && destinations.len() + 2 <= fanout as usize
                && (d ^ 1) < tiles
                && (d ^ 1) != s
            {
                picks.push(d ^ 1);
            }
            let mut chosen = Vec::new();
            for d in picks {
                let Ok(tile) = phys(d) else { continue };
                let addr = next_free[d as usize];
                if destinations.iter().any(|x| x.tile == tile) || addr + bytes > TILE_MEMORY_END {
                    chosen.clear();
                    break;
                }
                chosen.push((d, tile, addr));
            }
            for (d, tile, addr) in chosen {
                next_free[d as usize] = (addr + bytes + 7) & !7;
                destinations.push(Destination {
                    tile,
                    address: addr,
                });
            }
        }
        let Ok(source) = phys(s) else { continue };
        if destinations.is_empty() {
            continue;
        }
        transfers.push(Transfer {
            source,
            source_address: RANDOM_SOURCE_BASE,
            words,
            destinations,
            width,
        });
    }
    ExchangePhase { transfers }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    /// The crate's generator gives SplitMix64's reference stream (Vigna's
    /// output for seed 0), the one the random phases were always drawn from.
    #[test]
    fn splitmix_is_the_reference_stream() {
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
