//! C600 topology: logical ↔ physical tile ids, pair partners and the exchange
//! route timing model (`docs/facts/ipu21-target.md` §1.1, §2.5).
//!
//! The route model is ipu-stack's empirical fit (validated against SDK rows and
//! hardware stress tests), restated exactly; the unit tests pin it to every
//! vector of the facts table.
//!
//! ```
//! use ipuc_target::ipu21::topology::{LogicalTile, route};
//! let s = LogicalTile::new(0).unwrap().physical();
//! let d = LogicalTile::new(2).unwrap().physical();
//! let r = route(s, d);
//! assert_eq!((s.get(), d.get(), r.mux_time, r.displacement), (0, 64, -31, 1));
//! ```

use core::fmt;

/// Tiles on one C600 IPU21 (`docs/facts/ipu21-target.md` §1.1).
pub const TILE_COUNT: u16 = 1472;

/// Tile rows in the physical id layout, bits 10:6 (§1.1).
pub const TILE_ROWS: u16 = 23;

/// A tile id outside `0..TILE_COUNT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileOutOfRange {
    /// The rejected id.
    pub id: u32,
}

impl fmt::Display for TileOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tile id {} is outside 0..{}", self.id, TILE_COUNT)
    }
}

impl core::error::Error for TileOutOfRange {}

/// A physical tile id (what `$TILE_ID`, XPIC sources and the route model use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PhysicalTile(u16);

/// A logical tile id in ipu-stack's C600 numbering (what users and packages
/// outside the exchange layer count in). The default is logical tile 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogicalTile(u16);

/// What both numberings share: a range-checked constructor, the raw id and
/// a display that says which numbering it is.
macro_rules! tile_id {
    ($name:ident, $label:literal) => {
        impl $name {
            /// Validates `id < TILE_COUNT`.
            pub fn new(id: u32) -> Result<Self, TileOutOfRange> {
                if id < u32::from(TILE_COUNT) {
                    Ok(Self(id as u16))
                } else {
                    Err(TileOutOfRange { id })
                }
            }
            /// The raw id.
            pub const fn get(self) -> u16 {
                self.0
            }
            /// Index for dense per-tile tables.
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($label, " {}"), self.0)
            }
        }
    };
}
tile_id!(PhysicalTile, "phys");
tile_id!(LogicalTile, "logical");

impl PhysicalTile {
    /// The tile sharing this one's double-width exchange resources (`p ^ 2`, §1.1).
    pub const fn pair_partner(self) -> Self {
        // p ^ 2 only flips bit 1 (the lane), so it stays below TILE_COUNT.
        Self(self.0 ^ 2)
    }
    /// Physical row, bits 10:6 (0..23).
    pub const fn row(self) -> u16 {
        self.0 >> 6
    }
    /// Column, bits 5:2 (0..16).
    pub const fn column(self) -> u16 {
        (self.0 >> 2) & 15
    }
    /// Logical id of this tile.
    pub fn logical(self) -> LogicalTile {
        LogicalTile(PHYSICAL_TO_LOGICAL[self.index()])
    }
}

impl LogicalTile {
    /// Physical id of this tile on a C600.
    pub fn physical(self) -> PhysicalTile {
        PhysicalTile(LOGICAL_TO_PHYSICAL[self.index()])
    }
}

/// ipu-stack's C600 logical → physical numbering (§1.1): logical `2k, 2k+1`
/// are pair partners; blocks of 23 pairs snake up and down the rows.
const fn c600_logical_to_physical(logical: u16) -> u16 {
    let pair = logical / 2;
    let lane = logical & 1;
    let block = pair / TILE_ROWS;
    let mut r = pair % TILE_ROWS;
    if block & 1 == 1 {
        r = TILE_ROWS - 1 - r;
    }
    let column_bits = (block / 2) * 4 + (block & 1);
    64 * r + column_bits + 2 * lane
}

const fn build_logical_to_physical() -> [u16; TILE_COUNT as usize] {
    let mut table = [0u16; TILE_COUNT as usize];
    let mut l = 0;
    while l < TILE_COUNT {
        table[l as usize] = c600_logical_to_physical(l);
        l += 1;
    }
    table
}

const fn build_physical_to_logical() -> [u16; TILE_COUNT as usize] {
    let forward = build_logical_to_physical();
    let mut table = [0u16; TILE_COUNT as usize];
    let mut l = 0;
    while l < TILE_COUNT {
        table[forward[l as usize] as usize] = l;
        l += 1;
    }
    table
}

static LOGICAL_TO_PHYSICAL: [u16; TILE_COUNT as usize] = build_logical_to_physical();
static PHYSICAL_TO_LOGICAL: [u16; TILE_COUNT as usize] = build_physical_to_logical();

/// Route direction bit used in a send's `sctl` (§2.3, §2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// `sctl` bit 0.
    One = 1,
    /// `sctl` bit 1.
    Two = 2,
}

impl Direction {
    /// The `sctl` bit for this direction.
    pub const fn sctl_bit(self) -> u8 {
        self as u8
    }
    /// 1 or 2.
    pub const fn number(self) -> u8 {
        self as u8
    }
}

/// One route `s → d` under the timing model (§2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Route displacement Δ(s,d).
    pub displacement: i32,
    /// Direction: 2 when Δ ≤ 0, else 1.
    pub direction: Direction,
    /// Mux time T(s,d): the receiver selects the sender at `S + T + 1`.
    pub mux_time: i32,
}

/// Route displacement Δ(s,d) (§2.5 step 2).
pub fn displacement(s: PhysicalTile, d: PhysicalTile) -> i32 {
    let (s, d) = (i32::from(s.0), i32::from(d.0));
    let col = |x: i32| (x >> 2) & 15;
    let half = |x: i32| col(x) >> 3;
    let fold = |c: i32| if c < 8 { c } else { 15 - c };
    let b0 = |x: i32| x & 1;
    let q = |x: i32| x & 3;
    let m = fold(col(s)) + (half(s) ^ b0(s));
    let k = if q(d) >= 2 {
        if half(d) == b0(d) {
            2
        } else {
            4
        }
    } else if half(d) == q(d) {
        1
    } else {
        5
    };
    6 * (fold(col(d)) - m) + k
}

/// Route direction for `s → d` (§2.5 step 3).
pub fn direction(s: PhysicalTile, d: PhysicalTile) -> Direction {
    if displacement(s, d) <= 0 {
        Direction::Two
    } else {
        Direction::One
    }
}

/// Mux time T(s,d) (§2.5 step 4).
pub fn mux_time(s: PhysicalTile, d: PhysicalTile) -> i32 {
    let delta = displacement(s, d);
    let (s, d) = (i32::from(s.0), i32::from(d.0));
    let row = |x: i32| x >> 6;
    let col = |x: i32| (x >> 2) & 15;
    let half = |x: i32| col(x) >> 3;
    let fold = |c: i32| if c < 8 { c } else { 15 - c };
    let lo = |x: i32| col(x) & 7;
    let base = 8 * half(s) + ((col(s) >> 1) & 3) - col(d) + ((lo(s) >> 1) ^ 3);
    let columns = 4 * fold(col(s)) - 4 * fold(col(d));
    let halves = if half(s) == half(d) {
        lo(s) + 1
    } else {
        16 - lo(s)
    };
    base + columns + halves + 2 * (row(s) - row(d)) + delta.abs() - 34
}

/// Displacement, direction and mux time of `s → d` in one call.
pub fn route(s: PhysicalTile, d: PhysicalTile) -> Route {
    let displacement = displacement(s, d);
    Route {
        displacement,
        direction: if displacement <= 0 {
            Direction::Two
        } else {
            Direction::One
        },
        mux_time: mux_time(s, d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(id: u32) -> LogicalTile {
        LogicalTile::new(id).unwrap()
    }

    #[test]
    fn logical_examples_of_facts_1_1() {
        for (logical, physical) in [
            (0, 0),
            (1, 2),
            (2, 64),
            (5, 130),
            (46, 1409),
            (92, 4),
            (100, 260),
            (700, 1117),
            (1471, 63),
        ] {
            assert_eq!(l(logical).physical().get(), physical, "logical {logical}");
            assert_eq!(
                PhysicalTile::new(u32::from(physical))
                    .unwrap()
                    .logical()
                    .get(),
                logical as u16
            );
        }
    }

    #[test]
    fn mapping_is_a_permutation() {
        let mut seen = [false; TILE_COUNT as usize];
        for id in 0..u32::from(TILE_COUNT) {
            let p = l(id).physical();
            assert!(!seen[p.index()], "physical {} hit twice", p.get());
            seen[p.index()] = true;
            assert_eq!(p.logical().get() as u32, id);
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn logical_pairs_are_physical_partners() {
        for k in 0..u32::from(TILE_COUNT) / 2 {
            assert_eq!(l(2 * k).physical().pair_partner(), l(2 * k + 1).physical());
        }
    }

    #[test]
    fn ids_are_validated() {
        assert_eq!(LogicalTile::new(1472), Err(TileOutOfRange { id: 1472 }));
        assert!(PhysicalTile::new(1471).is_ok());
        assert!(PhysicalTile::new(u32::MAX).is_err());
    }

    #[test]
    fn route_vectors_of_facts_2_5() {
        // (logical s, logical d, physical s, physical d, T, Δ, direction)
        let table = [
            (0, 1, 0, 2, -28, 2, 1),
            (0, 2, 0, 64, -31, 1, 1),
            (2, 0, 64, 0, -27, 1, 1),
            (0, 46, 0, 1409, -69, 5, 1),
            (46, 2, 1409, 64, 17, -5, 2),
            (5, 700, 130, 1117, -48, 47, 1),
            (700, 5, 1117, 130, 81, -46, 2),
            (0, 1471, 0, 63, -28, 2, 1),
            (1471, 0, 63, 0, -13, 1, 1),
            (736, 737, 32, 34, -28, -2, 2),
            (100, 1000, 260, 361, -19, 25, 1),
        ];
        for (ls, ld, ps, pd, t, delta, dir) in table {
            let (s, d) = (l(ls).physical(), l(ld).physical());
            assert_eq!((s.get(), d.get()), (ps, pd), "{ls}->{ld}");
            let r = route(s, d);
            assert_eq!(r.mux_time, t, "T {ls}->{ld}");
            assert_eq!(r.displacement, delta, "Δ {ls}->{ld}");
            assert_eq!(r.direction.number(), dir, "direction {ls}->{ld}");
        }
    }

    #[test]
    fn shape_of_the_model_from_tile_zero() {
        let p = |x: u32| PhysicalTile::new(x).unwrap();
        for r in 1..23 {
            assert_eq!(mux_time(p(0), p(64 * r)), -29 - 2 * r as i32);
        }
        for c in 1..8 {
            assert_eq!(mux_time(p(0), p(4 * c)), -29 + c as i32);
        }
        for c in 8..16 {
            assert_eq!(mux_time(p(0), p(4 * c)), -4 - 3 * (c as i32 - 8));
        }
    }

    #[test]
    fn mux_time_range_and_direction_balance() {
        let (mut lo, mut hi, mut ones, mut twos) = (i32::MAX, i32::MIN, 0u32, 0u32);
        for s in 0..u32::from(TILE_COUNT) {
            for d in 0..u32::from(TILE_COUNT) {
                if s == d {
                    continue;
                }
                let r = route(PhysicalTile(s as u16), PhysicalTile(d as u16));
                lo = lo.min(r.mux_time);
                hi = hi.max(r.mux_time);
                match r.direction {
                    Direction::One => ones += 1,
                    Direction::Two => twos += 1,
                }
            }
        }
        assert_eq!((lo, hi), (-78, 112));
        assert_eq!(ones, twos);
    }
}
