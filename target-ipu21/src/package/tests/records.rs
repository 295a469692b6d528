//! Semantic rejections: target, tiles and segments, kernel symbols,
//! bindings, host calls and step tables. `sample().tiles[0]` is tile 2.

use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use super::*;

#[test]
fn rejects_other_target() {
    let mut p = Package::new("x");
    p.target.tile_memory_base = 0x40000;
    assert!(matches!(
        err(&p),
        PackageError::TargetMismatch {
            field: "tile memory base",
            found: 0x40000,
            ..
        }
    ));
}

#[test]
fn rejects_tile_out_of_range() {
    let mut p = sample();
    p.tiles[0].physical_tile = 1472;
    assert!(matches!(
        err(&p),
        PackageError::TileOutOfRange { tile: 1472, .. }
    ));
}

#[test]
fn rejects_duplicate_tiles() {
    let mut p = sample();
    p.tiles[0].physical_tile = 0;
    assert!(matches!(
        err(&p),
        PackageError::DuplicateTile {
            tile: 0,
            field: "tile images",
            ..
        }
    ));
}

#[test]
fn rejects_segment_below_memory() {
    let mut p = sample();
    p.tiles[0]
        .segments
        .push(Segment::data(0x4B000, 16, SegmentRole::Scratch, Vec::new()));
    assert!(matches!(
        err(&p),
        PackageError::SegmentOutsideMemory {
            tile: 2,
            address: 0x4B000,
            ..
        }
    ));
}

#[test]
fn rejects_segment_past_memory_end() {
    let mut p = sample();
    p.tiles[0].segments.push(Segment::data(
        0xE7FF0,
        0x20,
        SegmentRole::Scratch,
        Vec::new(),
    ));
    assert!(matches!(
        err(&p),
        PackageError::SegmentOutsideMemory {
            tile: 2,
            end: 0xE8010,
            ..
        }
    ));
}

#[test]
fn rejects_overlapping_segments() {
    let mut p = sample();
    p.tiles[1].segments.push(Segment::data(
        DATA + 0xFF0,
        0x20,
        SegmentRole::Scratch,
        Vec::new(),
    ));
    assert!(matches!(
        err(&p),
        PackageError::SegmentOverlap {
            tile: 0,
            address: 0x80FF0,
            previous_end: 0x81000,
            ..
        }
    ));
}

#[test]
fn rejects_empty_segment() {
    let mut p = sample();
    p.tiles[0]
        .segments
        .push(Segment::data(0xA0000, 0, SegmentRole::Scratch, Vec::new()));
    assert!(matches!(
        err(&p),
        PackageError::EmptySegment {
            tile: 2,
            address: 0xA0000,
            ..
        }
    ));
}

#[test]
fn rejects_executable_segment_above_fetch_limit() {
    let mut p = sample();
    p.tiles[0]
        .segments
        .push(Segment::code(0x7FFFC, SegmentRole::SupervisorCode, &[1, 2]));
    assert!(matches!(
        err(&p),
        PackageError::ExecutableAboveLimit {
            tile: 2,
            address: 0x7FFFC,
            end: 0x80004,
            limit: 0x80000,
            ..
        }
    ));
}

#[test]
fn rejects_data_longer_than_memory() {
    let mut p = sample();
    p.tiles[0]
        .segments
        .push(Segment::data(0xA0000, 4, SegmentRole::Scratch, vec![1; 5]));
    assert!(matches!(
        err(&p),
        PackageError::DataLongerThanMemory {
            data_len: 5,
            memory_size: 4,
            ..
        }
    ));
}

#[test]
fn rejects_data_above_loader_limit() {
    let mut p = sample();
    p.tiles[0].segments.push(Segment::data(
        0xE7B00,
        0x100,
        SegmentRole::Scratch,
        vec![1; 0xB8],
    ));
    assert!(matches!(
        err(&p),
        PackageError::DataAboveLoaderLimit {
            data_end: 0xE7BB8,
            ..
        }
    ));
}

#[test]
fn rejects_entry_outside_code() {
    let mut p = sample();
    p.tiles[0].entry_point = DATA;
    assert!(matches!(
        err(&p),
        PackageError::EntryNotExecutable {
            tile: 2,
            entry_point: DATA,
            ..
        }
    ));
}

#[test]
fn rejects_bad_kernel_symbols() {
    let mut p = sample();
    p.kernels[0].address = DATA;
    assert!(matches!(
        err(&p),
        PackageError::BadCodeAddress {
            field: "kernel address",
            address: DATA,
            ..
        }
    ));
    let mut p = sample();
    p.kernels[0].address = KERNEL_GEMM + 8;
    assert!(matches!(
        err(&p),
        PackageError::DuplicateValue {
            field: "kernel address",
            ..
        }
    ));
    let mut p = sample();
    p.kernels[0].name = "add_f16".to_string();
    assert!(matches!(
        err(&p),
        PackageError::DuplicateName {
            field: "kernel name",
            ..
        }
    ));
}

#[test]
fn rejects_slice_outside_tensor() {
    let mut p = sample();
    p.bindings[0].slices[0].file_offset = 40;
    assert!(matches!(
        err(&p),
        PackageError::SliceOutOfRange {
            tile: 2,
            file_offset: 40,
            tensor_bytes: 64,
            ..
        }
    ));
}

#[test]
fn rejects_slice_outside_data_segment() {
    let mut p = sample();
    p.bindings[0].slices[0].tile_address = DATA + 0xFF0;
    assert!(matches!(
        err(&p),
        PackageError::SliceOutsideSegment { tile: 2, .. }
    ));
    let mut p = sample();
    p.bindings[0].slices[0].tile_address = CODE;
    assert!(matches!(
        err(&p),
        PackageError::SliceOutsideSegment { tile: 2, .. }
    ));
}

#[test]
fn rejects_slice_on_missing_tile() {
    let mut p = sample();
    p.bindings[0].slices[0].tile = 4;
    assert!(matches!(
        err(&p),
        PackageError::SliceTileMissing { tile: 4, .. }
    ));
}

#[test]
fn rejects_uncovered_binding() {
    let mut p = sample();
    p.bindings[0].slices.remove(0);
    assert!(matches!(
        err(&p),
        PackageError::BindingNotCovered {
            first_missing_byte: 32,
            tensor_bytes: 64,
            ..
        }
    ));
}

#[test]
fn rejects_duplicate_slices() {
    let mut p = sample();
    let s = p.bindings[1].slices[0];
    p.bindings[1].slices.push(s);
    assert!(matches!(
        err(&p),
        PackageError::NotAscending {
            field: "binding slices",
            ..
        }
    ));
}

#[test]
fn rejects_shape_overflow() {
    let mut p = sample();
    p.bindings[0].shape = vec![u64::MAX, 4];
    assert!(matches!(err(&p), PackageError::ShapeOverflow { .. }));
}

/// #28: an output whose slices all alias one SRAM range declared 64 GiB
/// in a 3.5 MB package; the reader now refuses both the size and the alias.
#[test]
fn rejects_outputs_larger_than_the_chip() {
    let mut p = sample();
    p.bindings[2].shape = vec![1 << 34]; // F32: 64 GiB
    assert!(matches!(
        err(&p),
        PackageError::BindingLargerThanChip {
            tensor_bytes: 0x10_0000_0000,
            chip_bytes: 940_572_672,
            ..
        }
    ));
}

#[test]
fn rejects_slices_aliasing_one_sram_range() {
    // The output's 16 bytes as two 8-byte slices at the same address.
    let mut p = sample();
    p.bindings[2].slices = vec![
        BindingSlice {
            file_offset: 0,
            tile: 0,
            tile_address: DATA + 0x200,
            size: 8,
        },
        BindingSlice {
            file_offset: 8,
            tile: 0,
            tile_address: DATA + 0x200,
            size: 8,
        },
    ];
    let e = err(&p);
    assert!(
        matches!(e, PackageError::SlicesAlias { tile: 0, tile_address, .. } if tile_address == DATA + 0x200),
        "{e}"
    );
    assert!(e.to_string().contains("hold different bytes of the tensor"));
    // Partly overlapping weights with different bytes: refused too.
    let mut p = sample();
    p.bindings[1].slices[0].size = 8;
    p.bindings[1].slices.push(BindingSlice {
        file_offset: 8,
        tile: 0,
        tile_address: DATA + 0x104,
        size: 8,
    });
    assert!(matches!(err(&p), PackageError::SlicesAlias { .. }));
}

#[test]
fn replicated_and_repeated_ranges_still_read() {
    // The same tensor bytes at the same SRAM bytes twice (overlapping
    // slices with one delta) are consistent: accepted.
    let mut p = sample();
    p.bindings[2].slices.push(BindingSlice {
        file_offset: 4,
        tile: 0,
        tile_address: DATA + 0x204,
        size: 8,
    });
    read(&bytes_of(&p)).unwrap();
}

#[test]
fn rejects_an_output_sharing_sram_with_another_output() {
    let mut p = sample();
    p.bindings.push(Binding {
        name: "hidden".to_string(),
        scale: 0,
        kind: BindingKind::Output,
        dtype: DType::F32,
        shape: vec![2],
        slices: vec![BindingSlice {
            file_offset: 0,
            tile: 0,
            tile_address: DATA + 0x208,
            size: 8,
        }],
    });
    let e = err(&p);
    assert!(
        matches!(e, PackageError::SlicesAlias { offset, other_binding_offset, .. } if offset != other_binding_offset),
        "{e}"
    );
}

#[test]
fn rejects_bad_host_calls() {
    let mut p = sample();
    p.host_calls[0].inputs[0].binding = "embedding".to_string();
    assert!(matches!(
        err(&p),
        PackageError::UnknownBinding {
            field: "host call input binding",
            ..
        }
    ));
    let mut p = sample();
    p.host_calls[0].outputs[0].size = 17;
    assert!(matches!(
        err(&p),
        PackageError::TransferOutOfRange {
            size: 17,
            tensor_bytes: 16,
            ..
        }
    ));
    let mut p = sample();
    p.host_calls[0].phases = 0;
    assert!(matches!(
        err(&p),
        PackageError::ZeroCount {
            field: "host call phases",
            ..
        }
    ));
    let mut p = sample();
    let mut c = p.host_calls[0].clone();
    c.name = "warmup".to_string();
    p.host_calls.push(c);
    assert!(matches!(
        err(&p),
        PackageError::DuplicateValue {
            field: "host call command",
            value: 1,
            ..
        }
    ));
}

#[test]
fn rejects_bad_step_tables() {
    let mut p = sample();
    p.steps.tiles[0].steps[1].operation = 3;
    assert!(matches!(
        err(&p),
        PackageError::OperationOutOfRange {
            tile: 0,
            operation: 3,
            operations: 3,
            ..
        }
    ));
    let mut p = sample();
    p.steps.tiles[0].steps[1].code_address = DATA;
    assert!(matches!(
        err(&p),
        PackageError::BadCodeAddress {
            field: "step code address",
            tile: Some(0),
            ..
        }
    ));
    let mut p = sample();
    p.steps.tiles[0].steps[1].step = 0;
    assert!(matches!(
        err(&p),
        PackageError::NotAscending {
            field: "step ids",
            tile: Some(0),
            ..
        }
    ));
    let mut p = sample();
    p.steps.tiles[0].physical_tile = 6;
    assert!(matches!(
        err(&p),
        PackageError::StepTileMissing { tile: 6, .. }
    ));
    let mut p = sample();
    p.steps.tiles[1].physical_tile = 0;
    assert!(matches!(
        err(&p),
        PackageError::DuplicateTile {
            field: "step tables",
            tile: 0,
            ..
        }
    ));
    let mut p = sample();
    p.steps.operations[2] = "layer.qkv".to_string();
    assert!(matches!(
        err(&p),
        PackageError::DuplicateName {
            field: "operation name",
            ..
        }
    ));
    let mut p = sample();
    p.steps.tiles[0].steps[1].repeat = Some(RepeatScope {
        repeat: 0,
        trip_count: 0,
    });
    assert!(matches!(
        err(&p),
        PackageError::ZeroCount {
            field: "step repeat trip count",
            ..
        }
    ));
}
