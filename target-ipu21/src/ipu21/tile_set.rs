//! Sets of tiles: one bit per C600 tile in a fixed array (`bitvec`).
//!
//! A tile set is bounded by the chip, not by its contents: `TILE_COUNT`
//! bits (46 `u32` words, 184 bytes, no heap) whatever it holds, with
//! constant-time insert and membership and iteration in ascending id order
//! — the order a sorted, deduplicated `Vec` of ids gave, so replacing one
//! by a set changes no output. The words are `u32` because `bitvec` stores
//! `u64` only on 64-bit targets and core also builds for 32-bit ones.

use core::fmt;
use core::marker::PhantomData;

use bitvec::{order::Lsb0, BitArr};

use super::topology::{LogicalTile, PhysicalTile, TILE_COUNT};

/// One bit per tile id `0..TILE_COUNT`.
type Bits = BitArr!(for TILE_COUNT as usize, in u32, Lsb0);

/// A tile numbering a [`TileSet`] can hold: an id below `TILE_COUNT`.
pub trait TileId: Copy + sealed::Sealed {
    /// The id as an index below `TILE_COUNT`.
    fn index(self) -> usize;
    /// The tile at `index`; `None` at or past `TILE_COUNT`.
    fn at(index: usize) -> Option<Self>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::LogicalTile {}
    impl Sealed for super::PhysicalTile {}
}

impl TileId for LogicalTile {
    fn index(self) -> usize {
        LogicalTile::index(self)
    }
    fn at(index: usize) -> Option<Self> {
        LogicalTile::new(u32::try_from(index).ok()?).ok()
    }
}

impl TileId for PhysicalTile {
    fn index(self) -> usize {
        PhysicalTile::index(self)
    }
    fn at(index: usize) -> Option<Self> {
        PhysicalTile::new(u32::try_from(index).ok()?).ok()
    }
}

/// A set of tiles of one numbering (logical or physical).
#[derive(Clone, PartialEq, Eq)]
pub struct TileSet<T> {
    bits: Bits,
    numbering: PhantomData<T>,
}

impl<T: TileId> TileSet<T> {
    /// The empty set.
    pub fn new() -> Self {
        Self {
            bits: Bits::ZERO,
            numbering: PhantomData,
        }
    }

    /// Adds `tile`; `true` if it was not in the set.
    pub fn insert(&mut self, tile: T) -> bool {
        // Every `TileId` is below TILE_COUNT, the array's length.
        !self.bits.replace(tile.index(), true)
    }

    /// Whether `tile` is in the set.
    pub fn contains(&self, tile: T) -> bool {
        self.bits[tile.index()]
    }

    /// Tiles in the set.
    pub fn len(&self) -> usize {
        self.bits.count_ones()
    }

    /// Whether the set holds no tile.
    pub fn is_empty(&self) -> bool {
        self.bits.not_any()
    }

    /// The tiles in ascending id order.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.bits.iter_ones().filter_map(T::at)
    }
}

impl<T: TileId> Default for TileSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: TileId> Extend<T> for TileSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, tiles: I) {
        for t in tiles {
            self.insert(t);
        }
    }
}

impl<T: TileId> FromIterator<T> for TileSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(tiles: I) -> Self {
        let mut set = Self::new();
        set.extend(tiles);
        set
    }
}

impl<T: TileId + fmt::Debug> fmt::Debug for TileSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn iterates_ascending_without_duplicates() {
        let ids = [1471u32, 3, 0, 64, 3, 1471, 31, 32];
        let set: TileSet<LogicalTile> = ids.iter().map(|&i| LogicalTile::new(i).unwrap()).collect();
        let mut sorted: Vec<u32> = ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let got: Vec<u32> = set.iter().map(|t| u32::from(t.get())).collect();
        assert_eq!(got, sorted);
        assert_eq!(set.len(), sorted.len());
        assert!(set.contains(LogicalTile::new(64).unwrap()));
        assert!(!set.contains(LogicalTile::new(65).unwrap()));
    }

    #[test]
    fn holds_every_tile_and_insert_reports_news() {
        let mut set = TileSet::<PhysicalTile>::new();
        assert!(set.is_empty());
        for id in 0..u32::from(TILE_COUNT) {
            assert!(set.insert(PhysicalTile::new(id).unwrap()));
        }
        assert!(!set.insert(PhysicalTile::new(7).unwrap()));
        assert_eq!(set.len(), usize::from(TILE_COUNT));
        assert_eq!(set.iter().count(), usize::from(TILE_COUNT));
    }
}
