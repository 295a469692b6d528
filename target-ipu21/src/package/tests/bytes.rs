//! Framing, enum and ordering rejections, made by editing encoded bytes.

use alloc::string::ToString;

use super::*;

#[test]
fn rejects_bad_magic() {
    let mut b = bytes_of(&sample());
    b[0] = b'X';
    assert!(matches!(read(&b), Err(PackageError::BadMagic { .. })));
}

#[test]
fn rejects_unknown_version() {
    let mut b = bytes_of(&sample());
    b[8] = 9;
    assert_eq!(
        read(&b),
        Err(PackageError::UnsupportedVersion {
            found: 9,
            supported: FORMAT_VERSION
        })
    );
}

#[test]
fn rejects_nonzero_header_reserved() {
    let mut b = bytes_of(&sample());
    b[10] = 1;
    assert!(matches!(
        read(&b),
        Err(PackageError::NonZeroReserved { offset: 10, .. })
    ));
}

#[test]
fn rejects_truncation_at_every_length() {
    let b = bytes_of(&sample());
    // Bodies cut inside the magic put digest bytes where the magic belongs.
    for cut in MAGIC.len()..b.len() {
        let e = read(&b[..cut]).expect_err("truncated package accepted");
        assert!(
            matches!(
                e,
                PackageError::Truncated { .. } | PackageError::LengthPastEnd { .. }
            ),
            "cut {cut}: {e}"
        );
    }
    // Sealed packages cut anywhere: too short, bad digest or bad magic.
    let sealed = write(&sample()).unwrap();
    for cut in 0..sealed.len() {
        let e = read_sealed(&sealed[..cut]).expect_err("truncated package accepted");
        assert!(
            matches!(
                e,
                PackageError::Truncated { .. }
                    | PackageError::DigestMismatch { .. }
                    | PackageError::BadMagic { .. }
            ),
            "cut {cut}: {e}"
        );
    }
}

#[test]
fn rejects_trailing_bytes() {
    let mut b = bytes_of(&sample());
    let len = b.len();
    b.extend_from_slice(&[0, 0, 0]);
    assert_eq!(
        read(&b),
        Err(PackageError::TrailingBytes {
            offset: len,
            count: 3
        })
    );
}

#[test]
fn rejects_wrong_section_tag() {
    let mut b = bytes_of(&sample());
    b[12] = 5; // first section tag, right after the 12-byte header
    assert_eq!(
        read(&b),
        Err(PackageError::UnexpectedSection {
            offset: 12,
            expected: 1,
            found: 5
        })
    );
}

#[test]
fn rejects_section_length_mismatch() {
    let mut p = Package::new("x");
    p.plan_summary
        .insert("k".to_string(), SummaryValue::Integer(1));
    let mut b = bytes_of(&p);
    // Grow the target section's declared length by one: its body then ends
    // one byte before the declared end.
    b[16] += 1;
    assert!(matches!(
        read(&b),
        Err(PackageError::SectionLength {
            offset: 12,
            section: "target",
            ..
        })
    ));
}

#[test]
fn rejects_length_past_end() {
    let mut b = bytes_of(&Package::new("abc"));
    b[24] = 0xff; // producer string length (after tag u32 + length u64)
    assert!(matches!(
        read(&b),
        Err(PackageError::LengthPastEnd {
            offset: 24,
            field: "producer",
            ..
        })
    ));
}

#[test]
fn rejects_invalid_utf8() {
    let mut b = bytes_of(&Package::new("abc"));
    b[28] = 0xff;
    assert_eq!(
        read(&b),
        Err(PackageError::InvalidUtf8 {
            offset: 24,
            field: "producer"
        })
    );
}

/// Offset of the first segment's flags byte: header 12, target section,
/// tiles section header 12, tile count 4, tile header 12, address+size 8.
fn first_segment_flags(b: &[u8]) -> usize {
    let target_len = u64::from_le_bytes(b[16..24].try_into().unwrap()) as usize;
    12 + 12 + target_len + 12 + 4 + 12 + 8
}

#[test]
fn rejects_unknown_segment_flags_and_roles() {
    let mut b = bytes_of(&sample());
    let at = first_segment_flags(&b);
    b[at] = 0x0D;
    assert_eq!(
        read(&b),
        Err(PackageError::UnknownEnum {
            offset: at,
            field: "segment flags",
            value: 0x0D
        })
    );
    let mut b = bytes_of(&sample());
    b[at + 1] = 42;
    assert_eq!(
        read(&b),
        Err(PackageError::UnknownEnum {
            offset: at + 1,
            field: "segment role",
            value: 42
        })
    );
}

#[test]
fn rejects_unknown_binding_kind_and_dtype() {
    let b = bytes_of(&sample());
    // The first binding in name order is "embedding"; its record starts 8
    // bytes before the name text (kind, dtype, reserved, name length).
    let at = find(&b, b"embedding") - 8;
    let mut bad = b.clone();
    bad[at] = 3;
    assert_eq!(
        read(&bad),
        Err(PackageError::UnknownEnum {
            offset: at,
            field: "binding kind",
            value: 3
        })
    );
    let mut bad = b.clone();
    bad[at + 1] = 8;
    assert_eq!(
        read(&bad),
        Err(PackageError::UnknownEnum {
            offset: at + 1,
            field: "binding dtype",
            value: 8
        })
    );
}

#[test]
fn rejects_unknown_step_kind_and_summary_tag() {
    let b = bytes_of(&sample());
    // The first step record follows the last operation name, the table
    // count, the tile id and the step count; its kind follows the step id.
    let at = find(&b, b"layer.exchange") + "layer.exchange".len() + 4 + 4 + 4 + 4;
    let mut bad = b.clone();
    bad[at] = 4;
    assert_eq!(
        read(&bad),
        Err(PackageError::UnknownEnum {
            offset: at,
            field: "step kind",
            value: 4
        })
    );
    let mut bad = b.clone();
    bad[at + 1] = 2;
    assert!(matches!(
        read(&bad),
        Err(PackageError::UnknownEnum {
            field: "step has repeat",
            value: 2,
            ..
        })
    ));
    let mut bad = b.clone();
    let tag = find(&b, b"beam width") + "beam width".len();
    bad[tag] = 3;
    assert_eq!(
        read(&bad),
        Err(PackageError::UnknownEnum {
            offset: tag,
            field: "summary value tag",
            value: 3
        })
    );
}

#[test]
fn rejects_unsorted_records() {
    let mut b = bytes_of(&sample());
    // "add_f16" → "zdd_f16" now sorts after "gemm_f16", which follows it.
    let at = find(&b, b"add_f16");
    b[at] = b'z';
    assert!(matches!(
        read(&b),
        Err(PackageError::NotAscending {
            field: "kernel name",
            ..
        })
    ));
}
