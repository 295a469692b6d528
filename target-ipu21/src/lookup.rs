//! Lookup-only maps: `hashbrown` tables hashed with `foldhash`'s fixed seed.
//!
//! A map that is only asked "what is stored under this key" (symbol tables,
//! name indices, memo tables of one compile) gains nothing from a B-tree's
//! order. Such maps are [`LookupMap`]s; a map whose iteration order can reach
//! a package, a report or an error stays a `BTreeMap`, so output never
//! depends on hashing. The hasher is seedless — the same on every host and
//! run, with no randomness from `std` (which core does not have) — so even
//! a stray iteration would be reproducible, and no per-process seed exists.

/// A `hashbrown` map with `foldhash`'s fixed-seed hasher; build one with
/// [`LookupMap::default`] (or `collect`). Never iterate one into output.
pub type LookupMap<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

#[cfg(test)]
mod tests {
    use super::LookupMap;
    use core::hash::BuildHasher;

    #[test]
    fn the_hasher_has_one_fixed_seed() {
        let (a, b) = (
            foldhash::fast::FixedState::default(),
            foldhash::fast::FixedState::default(),
        );
        assert_eq!(a.hash_one("tile 7"), b.hash_one("tile 7"));
        let mut m: LookupMap<&str, u32> = LookupMap::default();
        m.insert("a", 1);
        assert_eq!(m.insert("a", 2), Some(1));
        assert_eq!(m.get("a"), Some(&2));
    }
}
