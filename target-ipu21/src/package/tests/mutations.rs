//! Properties: arbitrary mutations of a valid package never panic the
//! reader, and any mutant it accepts is canonical (re-encodes identically).

use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;

proptest! {
    #![proptest_config(crate::proptest_config(512))]

    #[test]
    fn mutated_packages_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut b = bytes_of(&sample());
        for (i, v) in edits {
            let at = i.index(b.len());
            b[at] = v;
        }
        if truncate {
            let at = cut.index(b.len());
            b.truncate(at);
        }
        if let Ok(p) = read(&b) {
            prop_assert_eq!(write(&p).unwrap(), seal(b));
        }
    }

    #[test]
    fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut with_header: Vec<u8> = MAGIC.to_vec();
        with_header.extend_from_slice(&[1, 0, 0, 0]);
        with_header.extend_from_slice(&b);
        let _ = read(&b);
        let _ = read(&with_header);
        let _ = read_sealed(&b);
        let _ = read_sealed(&with_header);
    }

    #[test]
    fn any_changed_byte_of_a_package_is_rejected(
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let mut b = write(&sample()).unwrap();
        let at = at.index(b.len());
        b[at] ^= flip;
        prop_assert!(read_sealed(&b).is_err());
    }
}
