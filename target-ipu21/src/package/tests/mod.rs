//! Package tests: a valid sample, round trip and determinism here; one test
//! per rejection in `bytes` (framing, enums, order) and `records` (memory,
//! bindings, host calls, steps); never-panic properties in `mutations`.

mod bytes;
mod mutations;
mod records;
mod round4;

use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use super::encode::encode;
use super::read as read_sealed;
use super::*;
use crate::ipu21::sram::APPLICATION_LOAD_BASE;

pub(super) const CODE: u32 = APPLICATION_LOAD_BASE;
pub(super) const ROWS: u32 = 0x5C000;
pub(super) const HOST: u32 = 0x50000;
pub(super) const DATA: u32 = 0x80000;
pub(super) const KERNEL_GEMM: u32 = 0x4E000;

fn tile(physical: u32) -> TileImage {
    let mut t = TileImage::new(physical, CODE);
    t.segments
        .push(Segment::code(CODE, SegmentRole::Runtime, &[0x19e0_0000; 4]));
    t.segments
        .push(Segment::code(ROWS, SegmentRole::ExchangeRows, &[1, 2, 3]));
    t.segments.push(Segment::data(
        HOST,
        256,
        SegmentRole::HostDescriptors,
        vec![7; 12],
    ));
    t.segments
        .push(Segment::data(DATA, 0x1000, SegmentRole::Tensor, Vec::new()));
    t
}

/// A small valid package: two tiles (stored as 2, 0), all sections populated.
pub(super) fn sample() -> Package {
    let mut p = Package::new("ipuc-test 0.1");
    // Deliberately out of order: the writer sorts.
    p.tiles.push(tile(2));
    p.tiles.push(tile(0));
    p.kernels.push(KernelSymbol {
        name: "gemm_f16".to_string(),
        address: KERNEL_GEMM,
    });
    p.kernels.push(KernelSymbol {
        name: "add_f16".to_string(),
        address: KERNEL_GEMM + 8,
    });
    p.bindings.push(Binding {
        name: "image".to_string(),
        scale: 0,
        kind: BindingKind::Input,
        dtype: DType::F16,
        shape: vec![4, 8],
        slices: vec![
            BindingSlice {
                file_offset: 32,
                tile: 2,
                tile_address: DATA,
                size: 32,
            },
            BindingSlice {
                file_offset: 0,
                tile: 0,
                tile_address: DATA,
                size: 32,
            },
        ],
    });
    p.bindings.push(Binding {
        name: "w.qkv".to_string(),
        scale: -4,
        kind: BindingKind::Weight,
        dtype: DType::F8E4M3,
        shape: vec![16],
        slices: vec![
            BindingSlice {
                file_offset: 0,
                tile: 0,
                tile_address: DATA + 0x100,
                size: 16,
            },
            BindingSlice {
                file_offset: 0,
                tile: 2,
                tile_address: DATA + 0x100,
                size: 16,
            },
        ],
    });
    p.bindings.push(Binding {
        name: "embedding".to_string(),
        scale: 0,
        kind: BindingKind::Output,
        dtype: DType::F32,
        shape: vec![4],
        slices: vec![BindingSlice {
            file_offset: 0,
            tile: 0,
            tile_address: DATA + 0x200,
            size: 16,
        }],
    });
    p.host_calls.push(HostCall {
        name: "infer".to_string(),
        command: 1,
        phases: 2,
        invocations: 1,
        inputs: vec![HostTransfer {
            binding: "image".to_string(),
            file_offset: 0,
            size: 64,
        }],
        outputs: vec![HostTransfer {
            binding: "embedding".to_string(),
            file_offset: 0,
            size: 16,
        }],
    });
    p.steps.operations = vec![
        "patch-embed".to_string(),
        "layer.qkv".to_string(),
        "layer.exchange".to_string(),
    ];
    let repeat = Some(RepeatScope {
        repeat: 0,
        trip_count: 2,
    });
    for t in [0, 2] {
        p.steps.tiles.push(TileStepTable {
            physical_tile: t,
            steps: vec![
                StepInfo {
                    step: 0,
                    kind: StepKind::Compute,
                    operation: 0,
                    code_address: CODE,
                    repeat: None,
                },
                StepInfo {
                    step: 1,
                    kind: StepKind::Patch,
                    operation: 2,
                    code_address: CODE + 4,
                    repeat,
                },
                StepInfo {
                    step: 2,
                    kind: StepKind::Exchange,
                    operation: 2,
                    code_address: ROWS,
                    repeat,
                },
                StepInfo {
                    step: 3,
                    kind: StepKind::Sync,
                    operation: 1,
                    code_address: CODE + 8,
                    repeat,
                },
            ],
        });
    }
    p.plan_summary
        .insert("beam width".to_string(), SummaryValue::Integer(64));
    p.plan_summary.insert(
        "workload".to_string(),
        SummaryValue::Text("siglip-small".to_string()),
    );
    p.plan_summary
        .insert("planning ms".to_string(), SummaryValue::Real(12.5));
    p.plan_summary
        .insert("offset".to_string(), SummaryValue::Integer(-4));
    // Opaque to the target: framed and carried, byte for byte.
    p.description = DescriptionSection {
        version: 2,
        body: b"what the compiler says".to_vec(),
    };
    p
}

/// The package as the reader returns it: every collection sorted.
pub(super) fn canonical(mut p: Package) -> Package {
    p.tiles.sort_by_key(|t| t.physical_tile);
    for t in &mut p.tiles {
        t.segments.sort_by_key(|s| s.address);
    }
    p.kernels.sort_by(|a, b| a.name.cmp(&b.name));
    p.bindings.sort_by(|a, b| a.name.cmp(&b.name));
    for b in &mut p.bindings {
        b.slices.sort();
    }
    p.host_calls.sort_by(|a, b| a.name.cmp(&b.name));
    p.steps.tiles.sort_by_key(|t| t.physical_tile);
    p
}

/// Encodes without validation or digest (the body), so invalid packages
/// reach the reader; tests edit these bytes and read them with [`read`].
pub(super) fn bytes_of(p: &Package) -> Vec<u8> {
    encode(p).expect("sample encodes")
}

/// Reads a package *body* (as [`bytes_of`] gives it, perhaps edited) after
/// sealing it with its digest, so the checks behind the digest are tested.
/// Sealed bytes (from [`write`]) are read with [`read_sealed`].
pub(super) fn read(body: &[u8]) -> Result<Package> {
    read_sealed(&seal(body.to_vec()))
}

pub(super) fn err(p: &Package) -> PackageError {
    read(&bytes_of(p)).expect_err("package must be rejected")
}

pub(super) fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("needle present")
}

#[test]
fn round_trip_returns_the_canonical_package() {
    let p = sample();
    let bytes = write(&p).expect("valid");
    let back = read_sealed(&bytes).expect("reads");
    assert_eq!(back, canonical(p));
    assert_eq!(write(&back).expect("valid"), bytes);
}

#[test]
fn empty_package_round_trips() {
    let p = Package::new("");
    assert_eq!(read_sealed(&write(&p).unwrap()).unwrap(), p);
}

#[test]
fn insertion_order_does_not_change_bytes() {
    let a = sample();
    let mut b = sample();
    b.tiles.reverse();
    for t in &mut b.tiles {
        t.segments.reverse();
    }
    b.kernels.reverse();
    b.bindings.reverse();
    for binding in &mut b.bindings {
        binding.slices.reverse();
    }
    b.steps.tiles.reverse();
    assert_eq!(write(&a).unwrap(), write(&b).unwrap());
}

#[test]
fn header_starts_with_magic_and_version() {
    let bytes = write(&sample()).unwrap();
    assert_eq!(&bytes[..8], b"IPUCPKG\0");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), FORMAT_VERSION);
}

#[test]
fn writer_refuses_invalid_packages() {
    let mut p = sample();
    p.tiles[0].entry_point = DATA;
    assert!(matches!(
        write(&p),
        Err(PackageError::EntryNotExecutable { tile: 2, .. })
    ));
}

#[test]
fn errors_name_their_location() {
    let mut p = sample();
    p.tiles[0].segments.push(Segment::data(
        DATA + 0xFF0,
        0x20,
        SegmentRole::Scratch,
        Vec::new(),
    ));
    let text = err(&p).to_string();
    assert!(
        text.contains("tile 2") && text.contains("byte ") && text.contains("0x80ff0"),
        "{text}"
    );
}

#[test]
fn every_single_bit_flip_is_rejected() {
    let bytes = write(&sample()).unwrap();
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[at] ^= 1 << bit;
            let e = read_sealed(&b).expect_err("flipped package accepted");
            assert!(
                matches!(
                    e,
                    PackageError::DigestMismatch { .. } | PackageError::BadMagic { .. }
                ),
                "byte {at} bit {bit}: {e}"
            );
        }
    }
}

#[test]
fn digest_is_the_sha256_of_the_body_and_is_checked_before_the_sections() {
    let body = bytes_of(&sample());
    let bytes = write(&sample()).unwrap();
    assert_eq!(&bytes[..body.len()], &body[..]);
    assert_eq!(bytes.len(), body.len() + DIGEST_BYTES);
    let hex_digest = digest_hex(&bytes);
    assert_eq!(hex_digest.len(), 64);
    assert_eq!(hex(&stored_digest(&bytes).unwrap()), hex_digest);
    // A structurally broken body with a wrong digest reports the digest.
    let mut b = bytes.clone();
    b[8] = 9; // version
    let e = read_sealed(&b).unwrap_err();
    assert!(
        matches!(e, PackageError::DigestMismatch { offset, .. } if offset == body.len()),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("digest mismatch") && text.contains(&hex_digest),
        "{text}"
    );
    // Too short for header and digest.
    assert!(matches!(
        read_sealed(&MAGIC),
        Err(PackageError::Truncated { needed: 44, .. })
    ));
}
