//! Bytes → package, validating every field as it is read. The first problem
//! found is returned with its byte offset; nothing here panics on any input.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use super::check;
use super::error::{PackageError, Result};
use super::model::*;
use super::wire::ByteReader;
use super::{Section, FORMAT_VERSION, MAGIC};

/// Most iterations a step's Repeat may state. A Repeat runs a model's
/// layers (27 for So400m; no model that fits the C600's SRAM has
/// thousands), and reports keep a record per iteration, so a trip count
/// of 2^32 − 1 would be sized from, not merely shown.
pub const MAX_TRIP_COUNT: u32 = 1 << 16;

/// Minimum encoded sizes, used to bound counts before allocating.
const TILE_MIN: usize = 12;
const SEGMENT_MIN: usize = 16;
const KERNEL_MIN: usize = 8;
const BINDING_MIN: usize = 16;
const SLICE_BYTES: usize = 20;
const HOST_CALL_MIN: usize = 24;
const TRANSFER_MIN: usize = 20;
const STRING_MIN: usize = 4;
const STEP_TABLE_MIN: usize = 8;
const STEP_BYTES: usize = 24;
const SUMMARY_MIN: usize = 9;

/// Reads and validates a package.
pub fn read(bytes: &[u8]) -> Result<Package> {
    let mut r = ByteReader::new(bytes);
    let magic: [u8; 8] = r.fixed("magic")?;
    if magic != MAGIC {
        return Err(PackageError::BadMagic { found: magic });
    }
    let version = r.u16("format version")?;
    if version != FORMAT_VERSION {
        return Err(PackageError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    r.reserved_u16("header reserved")?;

    let (producer, target) = section(&mut r, Section::Target, read_target)?;
    let tiles = section(&mut r, Section::Tiles, |r| read_tiles(r, &target))?;
    let kernels = section(&mut r, Section::Kernels, |r| read_kernels(r, &target))?;
    let bindings = section(&mut r, Section::Bindings, |r| {
        read_bindings(r, &tiles, &target)
    })?;
    let host_calls = section(&mut r, Section::HostCalls, |r| {
        read_host_calls(r, &bindings)
    })?;
    let steps = section(&mut r, Section::Steps, |r| read_steps(r, &tiles))?;
    let plan_summary = section(&mut r, Section::PlanSummary, read_plan_summary)?;
    let description = section(&mut r, Section::Description, |r| {
        let version = r.u16("description version")?;
        let body = r.take_rest().to_vec();
        Ok(DescriptionSection { version, body })
    })?;

    if r.remaining() != 0 {
        return Err(PackageError::TrailingBytes {
            offset: r.offset(),
            count: r.remaining(),
        });
    }
    Ok(Package {
        target,
        producer,
        tiles,
        kernels,
        bindings,
        host_calls,
        steps,
        plan_summary,
        description,
    })
}

fn section<T>(
    r: &mut ByteReader<'_>,
    tag: Section,
    body: impl FnOnce(&mut ByteReader<'_>) -> Result<T>,
) -> Result<T> {
    let offset = r.offset();
    let found = r.u32("section tag")?;
    if found != tag as u32 {
        return Err(PackageError::UnexpectedSection {
            offset,
            expected: tag as u32,
            found,
        });
    }
    let declared = r.u64("section length")?;
    let previous = r.push_limit(tag.name(), declared)?;
    let start = r.offset();
    let value = body(r)?;
    let used = (r.offset() - start) as u64;
    if used != declared {
        return Err(PackageError::SectionLength {
            offset,
            section: tag.name(),
            declared,
            used,
        });
    }
    r.pop_limit(previous);
    Ok(value)
}

fn read_target(r: &mut ByteReader<'_>) -> Result<(String, TargetFacts)> {
    let producer = r.string("producer")?;
    let expected = TargetFacts::IPU21;
    let mut fact = |field: &'static str, value: u64, wide: bool| -> Result<u64> {
        let offset = r.offset();
        let found = if wide {
            r.u64(field)?
        } else {
            u64::from(r.u32(field)?)
        };
        if found != value {
            return Err(PackageError::TargetMismatch {
                offset,
                field,
                expected: value,
                found,
            });
        }
        Ok(found)
    };
    fact("tile count", u64::from(expected.tile_count), false)?;
    fact(
        "tile memory base",
        u64::from(expected.tile_memory_base),
        false,
    )?;
    fact(
        "tile memory size",
        u64::from(expected.tile_memory_size),
        false,
    )?;
    fact(
        "executable limit",
        u64::from(expected.executable_limit),
        false,
    )?;
    fact("loader limit", u64::from(expected.loader_limit), false)?;
    fact("clock hz", expected.clock_hz, true)?;
    Ok((producer, expected))
}

fn tile_id(r: &mut ByteReader<'_>, field: &'static str, target: &TargetFacts) -> Result<u32> {
    let offset = r.offset();
    let tile = r.u32(field)?;
    if tile >= target.tile_count {
        return Err(PackageError::TileOutOfRange {
            offset,
            field,
            tile,
            tile_count: target.tile_count,
        });
    }
    Ok(tile)
}

/// Strictly ascending keys: equal → duplicate error, smaller → order error.
fn ascending<K: Ord>(
    previous: &Option<K>,
    key: &K,
    duplicate: impl FnOnce() -> PackageError,
    unordered: impl FnOnce() -> PackageError,
) -> Result<()> {
    match previous {
        Some(p) if p == key => Err(duplicate()),
        Some(p) if p > key => Err(unordered()),
        _ => Ok(()),
    }
}

fn read_tiles(r: &mut ByteReader<'_>, target: &TargetFacts) -> Result<Vec<TileImage>> {
    let n = r.count("tile count", TILE_MIN)?;
    let mut tiles = Vec::with_capacity(n);
    let mut previous: Option<u32> = None;
    for _ in 0..n {
        let offset = r.offset();
        let physical_tile = tile_id(r, "physical tile", target)?;
        ascending(
            &previous,
            &physical_tile,
            || PackageError::DuplicateTile {
                offset,
                field: "tile images",
                tile: physical_tile,
            },
            || PackageError::NotAscending {
                offset,
                field: "tile images",
                tile: Some(physical_tile),
            },
        )?;
        previous = Some(physical_tile);
        let entry_point = r.u32("entry point")?;
        let mut tile = TileImage::new(physical_tile, entry_point);
        let segments = r.count("segment count", SEGMENT_MIN)?;
        tile.segments.reserve_exact(segments);
        let mut previous_end = None;
        for _ in 0..segments {
            let seg_offset = r.offset();
            let segment = read_segment(r)?;
            check::segment(seg_offset, physical_tile, target, &segment, previous_end)?;
            previous_end = Some(segment.end());
            tile.segments.push(segment);
        }
        if !check::is_code_address(&tile, entry_point) {
            return Err(PackageError::EntryNotExecutable {
                offset,
                tile: physical_tile,
                entry_point,
            });
        }
        tiles.push(tile);
    }
    Ok(tiles)
}

fn read_segment(r: &mut ByteReader<'_>) -> Result<Segment> {
    let address = r.u32("segment address")?;
    let memory_size = r.u32("segment memory size")?;
    let flags_offset = r.offset();
    let bits = r.u8("segment flags")?;
    let flags = SegmentFlags::from_bits(bits).ok_or(PackageError::UnknownEnum {
        offset: flags_offset,
        field: "segment flags",
        value: u32::from(bits),
    })?;
    let role_offset = r.offset();
    let code = r.u8("segment role")?;
    let role = SegmentRole::from_code(code).ok_or(PackageError::UnknownEnum {
        offset: role_offset,
        field: "segment role",
        value: u32::from(code),
    })?;
    r.reserved_u16("segment reserved")?;
    let data = r.blob("segment data")?.to_vec();
    Ok(Segment {
        address,
        memory_size,
        flags,
        role,
        data,
    })
}

fn read_kernels(r: &mut ByteReader<'_>, target: &TargetFacts) -> Result<Vec<KernelSymbol>> {
    let n = r.count("kernel count", KERNEL_MIN)?;
    let mut kernels: Vec<KernelSymbol> = Vec::with_capacity(n);
    let mut addresses = BTreeSet::new();
    for _ in 0..n {
        let offset = r.offset();
        let name = r.string("kernel name")?;
        let address = r.u32("kernel address")?;
        let previous = kernels.last().map(|k| &k.name);
        match previous {
            Some(p) if *p == name => {
                return Err(PackageError::DuplicateName {
                    offset,
                    field: "kernel name",
                })
            }
            Some(p) if *p > name => {
                return Err(PackageError::NotAscending {
                    offset,
                    field: "kernel name",
                    tile: None,
                })
            }
            _ => {}
        }
        if !check::is_kernel_address(target, address) {
            return Err(PackageError::BadCodeAddress {
                offset,
                field: "kernel address",
                tile: None,
                address,
            });
        }
        if !addresses.insert(address) {
            return Err(PackageError::DuplicateValue {
                offset,
                field: "kernel address",
                value: u64::from(address),
            });
        }
        kernels.push(KernelSymbol { name, address });
    }
    Ok(kernels)
}

fn read_bindings(
    r: &mut ByteReader<'_>,
    tiles: &[TileImage],
    target: &TargetFacts,
) -> Result<Vec<Binding>> {
    let n = r.count("binding count", BINDING_MIN)?;
    let mut bindings: Vec<Binding> = Vec::with_capacity(n);
    // No two bindings of any classes share SRAM (`check::aliasing`).
    let mut placed = Vec::new();
    let chip_bytes = u64::from(target.tile_count) * u64::from(target.tile_memory_size);
    for _ in 0..n {
        let offset = r.offset();
        let mut binding = read_binding_head(r, bindings.last().map(|b| b.name.as_str()))?;
        let tensor_bytes = binding.byte_size().ok_or(PackageError::ShapeOverflow {
            offset: r.offset(),
            binding_offset: offset,
        })?;
        if tensor_bytes > chip_bytes {
            return Err(PackageError::BindingLargerThanChip {
                offset,
                tensor_bytes,
                chip_bytes,
            });
        }
        binding.slices = read_slices(r, tiles, tensor_bytes)?;
        check::coverage(offset, &binding.slices, tensor_bytes)?;
        placed.extend(
            binding
                .slices
                .iter()
                .map(|s| check::PlacedSlice::of(offset, binding.kind, s)),
        );
        bindings.push(binding);
    }
    check::aliasing(placed)?;
    Ok(bindings)
}

/// A binding's kind, dtype, scale, name (after `previous`, ascending) and
/// shape; its slices follow.
fn read_binding_head(r: &mut ByteReader<'_>, previous: Option<&str>) -> Result<Binding> {
    let offset = r.offset();
    let kind_code = r.u8("binding kind")?;
    let kind = BindingKind::from_code(kind_code).ok_or(PackageError::UnknownEnum {
        offset,
        field: "binding kind",
        value: u32::from(kind_code),
    })?;
    let dtype_code = r.u8("binding dtype")?;
    let dtype = DType::from_code(dtype_code).ok_or(PackageError::UnknownEnum {
        offset: offset + 1,
        field: "binding dtype",
        value: u32::from(dtype_code),
    })?;
    // FP8 tensors carry their power-of-two scale (value = code · 2^scale);
    // other dtypes store 0.
    let scale = r.u8("binding scale")? as i8;
    let reserved_offset = r.offset();
    let reserved = r.u8("binding reserved")?;
    if reserved != 0 {
        return Err(PackageError::NonZeroReserved {
            offset: reserved_offset,
            field: "binding reserved",
            value: u32::from(reserved),
        });
    }
    let name = r.string("binding name")?;
    match previous {
        Some(p) if p == name => {
            return Err(PackageError::DuplicateName {
                offset,
                field: "binding name",
            })
        }
        Some(p) if p > name.as_str() => {
            return Err(PackageError::NotAscending {
                offset,
                field: "binding name",
                tile: None,
            })
        }
        _ => {}
    }
    let rank = r.count("binding rank", 8)?;
    let mut shape = Vec::with_capacity(rank);
    for _ in 0..rank {
        shape.push(r.u64("binding dimension")?);
    }
    Ok(Binding {
        name,
        kind,
        dtype,
        scale,
        shape,
        slices: Vec::new(),
    })
}

/// A binding's slices, ascending, each checked against its tile's image and
/// the tensor's `tensor_bytes`.
fn read_slices(
    r: &mut ByteReader<'_>,
    tiles: &[TileImage],
    tensor_bytes: u64,
) -> Result<Vec<BindingSlice>> {
    let count = r.count("slice count", SLICE_BYTES)?;
    let mut slices: Vec<BindingSlice> = Vec::with_capacity(count);
    for _ in 0..count {
        let slice_offset = r.offset();
        let s = BindingSlice {
            file_offset: r.u64("slice file offset")?,
            tile: r.u32("slice tile")?,
            tile_address: r.u32("slice tile address")?,
            size: r.u32("slice size")?,
        };
        if slices.last().is_some_and(|p| *p >= s) {
            return Err(PackageError::NotAscending {
                offset: slice_offset,
                field: "binding slices",
                tile: Some(s.tile),
            });
        }
        check::slice(slice_offset, tiles, &s, tensor_bytes)?;
        slices.push(s);
    }
    Ok(slices)
}

fn read_host_calls(r: &mut ByteReader<'_>, bindings: &[Binding]) -> Result<Vec<HostCall>> {
    let n = r.count("host call count", HOST_CALL_MIN)?;
    let mut calls: Vec<HostCall> = Vec::with_capacity(n);
    let mut commands = BTreeSet::new();
    for _ in 0..n {
        let offset = r.offset();
        let name = r.string("host call name")?;
        match calls.last().map(|c| &c.name) {
            Some(p) if *p == name => {
                return Err(PackageError::DuplicateName {
                    offset,
                    field: "host call name",
                })
            }
            Some(p) if *p > name => {
                return Err(PackageError::NotAscending {
                    offset,
                    field: "host call name",
                    tile: None,
                })
            }
            _ => {}
        }
        let command_offset = r.offset();
        let command = r.u32("host call command")?;
        if !commands.insert(command) {
            return Err(PackageError::DuplicateValue {
                offset: command_offset,
                field: "host call command",
                value: u64::from(command),
            });
        }
        let phases_offset = r.offset();
        let phases = r.u32("host call phases")?;
        let invocations = r.u32("host call invocations")?;
        if phases == 0 {
            return Err(PackageError::ZeroCount {
                offset: phases_offset,
                field: "host call phases",
            });
        }
        if invocations == 0 {
            return Err(PackageError::ZeroCount {
                offset: phases_offset + 4,
                field: "host call invocations",
            });
        }
        let inputs = read_transfers(r, bindings, BindingKind::Input)?;
        let outputs = read_transfers(r, bindings, BindingKind::Output)?;
        // The host runs each call once per inference: one phase writes its
        // inputs, one reads its outputs. Other counts would be recorded and
        // silently ignored, so they are refused.
        let directions = u32::from(!inputs.is_empty()) + u32::from(!outputs.is_empty());
        if phases != directions.max(1) {
            return Err(PackageError::CountMismatch {
                offset: phases_offset,
                field: "host call phases",
                value: u64::from(phases),
                expected: u64::from(directions.max(1)),
                why: "one phase writes the call's inputs and one reads its outputs",
            });
        }
        if invocations != 1 {
            return Err(PackageError::CountMismatch {
                offset: phases_offset + 4,
                field: "host call invocations",
                value: u64::from(invocations),
                expected: 1,
                why: "the host runs each call once per inference",
            });
        }
        calls.push(HostCall {
            name,
            command,
            phases,
            invocations,
            inputs,
            outputs,
        });
    }
    Ok(calls)
}

fn read_transfers(
    r: &mut ByteReader<'_>,
    bindings: &[Binding],
    kind: BindingKind,
) -> Result<Vec<HostTransfer>> {
    let field = match kind {
        BindingKind::Output => "host call output binding",
        _ => "host call input binding",
    };
    let n = r.count("transfer count", TRANSFER_MIN)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let offset = r.offset();
        let binding = r.string(field)?;
        let file_offset = r.u64("transfer file offset")?;
        let size = r.u64("transfer size")?;
        let target = bindings
            .binary_search_by(|b| b.name.as_str().cmp(&binding))
            .ok()
            .map(|i| &bindings[i])
            .filter(|b| b.kind == kind)
            .ok_or(PackageError::UnknownBinding { offset, field })?;
        // The binding was validated, so its size is known not to overflow.
        let tensor_bytes = target.byte_size().unwrap_or(0);
        if size == 0
            || file_offset
                .checked_add(size)
                .is_none_or(|end| end > tensor_bytes)
        {
            return Err(PackageError::TransferOutOfRange {
                offset,
                file_offset,
                size,
                tensor_bytes,
            });
        }
        out.push(HostTransfer {
            binding,
            file_offset,
            size,
        });
    }
    Ok(out)
}

fn read_steps(r: &mut ByteReader<'_>, tiles: &[TileImage]) -> Result<StepTables> {
    let n_ops = r.count("operation count", STRING_MIN)?;
    let mut operations = Vec::with_capacity(n_ops);
    let mut seen = BTreeSet::new();
    for _ in 0..n_ops {
        let offset = r.offset();
        let op = r.string("operation name")?;
        if !seen.insert(op.clone()) {
            return Err(PackageError::DuplicateName {
                offset,
                field: "operation name",
            });
        }
        operations.push(op);
    }
    let n_tables = r.count("step table count", STEP_TABLE_MIN)?;
    let mut tables: Vec<TileStepTable> = Vec::with_capacity(n_tables);
    // Each Repeat's trip count, as its first step states it.
    let mut trips: BTreeMap<u32, u32> = BTreeMap::new();
    for _ in 0..n_tables {
        let offset = r.offset();
        let physical_tile = r.u32("step table tile")?;
        let previous = tables.last().map(|t| t.physical_tile);
        ascending(
            &previous,
            &physical_tile,
            || PackageError::DuplicateTile {
                offset,
                field: "step tables",
                tile: physical_tile,
            },
            || PackageError::NotAscending {
                offset,
                field: "step tables",
                tile: Some(physical_tile),
            },
        )?;
        let image = tiles
            .binary_search_by_key(&physical_tile, |t| t.physical_tile)
            .map(|i| &tiles[i])
            .map_err(|_| PackageError::StepTileMissing {
                offset,
                tile: physical_tile,
            })?;
        let n = r.count("step count", STEP_BYTES)?;
        let mut steps: Vec<StepInfo> = Vec::with_capacity(n);
        for _ in 0..n {
            let step_offset = r.offset();
            let step = read_step(r, physical_tile, operations.len())?;
            if let Some(scope) = step.repeat {
                let trip_offset = step_offset + 20;
                if scope.trip_count > MAX_TRIP_COUNT {
                    return Err(PackageError::CountTooLarge {
                        offset: trip_offset,
                        field: "step repeat trip count",
                        value: u64::from(scope.trip_count),
                        max: u64::from(MAX_TRIP_COUNT),
                    });
                }
                let first = *trips.entry(scope.repeat).or_insert(scope.trip_count);
                if first != scope.trip_count {
                    return Err(PackageError::CountMismatch {
                        offset: trip_offset,
                        field: "step repeat trip count",
                        value: u64::from(scope.trip_count),
                        expected: u64::from(first),
                        why: "every step of one Repeat runs the same iterations",
                    });
                }
            }
            if steps.last().is_some_and(|p| p.step >= step.step) {
                return Err(PackageError::NotAscending {
                    offset: step_offset,
                    field: "step ids",
                    tile: Some(physical_tile),
                });
            }
            if !check::is_code_address(image, step.code_address) {
                return Err(PackageError::BadCodeAddress {
                    offset: step_offset + 12,
                    field: "step code address",
                    tile: Some(physical_tile),
                    address: step.code_address,
                });
            }
            steps.push(step);
        }
        tables.push(TileStepTable {
            physical_tile,
            steps,
        });
    }
    Ok(StepTables {
        operations,
        tiles: tables,
    })
}

fn read_step(r: &mut ByteReader<'_>, tile: u32, operations: usize) -> Result<StepInfo> {
    let step = r.u32("step id")?;
    let kind_offset = r.offset();
    let kind_code = r.u8("step kind")?;
    let kind = StepKind::from_code(kind_code).ok_or(PackageError::UnknownEnum {
        offset: kind_offset,
        field: "step kind",
        value: u32::from(kind_code),
    })?;
    let has_repeat = r.u8("step has repeat")?;
    r.reserved_u16("step reserved")?;
    let op_offset = r.offset();
    let operation = r.u32("step operation")?;
    if operation as usize >= operations {
        return Err(PackageError::OperationOutOfRange {
            offset: op_offset,
            tile,
            operation,
            operations: operations as u32,
        });
    }
    let code_address = r.u32("step code address")?;
    let repeat_offset = r.offset();
    let repeat_id = r.u32("step repeat")?;
    let trip_count = r.u32("step repeat trip count")?;
    let repeat = match has_repeat {
        0 if repeat_id == 0 && trip_count == 0 => None,
        0 => {
            return Err(PackageError::NonZeroReserved {
                offset: repeat_offset,
                field: "step repeat (no repeat)",
                value: repeat_id | trip_count,
            })
        }
        1 if trip_count == 0 => {
            return Err(PackageError::ZeroCount {
                offset: repeat_offset + 4,
                field: "step repeat trip count",
            })
        }
        1 => Some(RepeatScope {
            repeat: repeat_id,
            trip_count,
        }),
        other => {
            return Err(PackageError::UnknownEnum {
                offset: kind_offset + 1,
                field: "step has repeat",
                value: u32::from(other),
            })
        }
    };
    Ok(StepInfo {
        step,
        kind,
        operation,
        code_address,
        repeat,
    })
}

fn read_plan_summary(r: &mut ByteReader<'_>) -> Result<BTreeMap<String, SummaryValue>> {
    let n = r.count("summary entry count", SUMMARY_MIN)?;
    let mut summary = BTreeMap::new();
    let mut previous: Option<String> = None;
    for _ in 0..n {
        let offset = r.offset();
        let key = r.string("summary key")?;
        ascending(
            &previous.as_ref(),
            &&key,
            || PackageError::DuplicateName {
                offset,
                field: "summary key",
            },
            || PackageError::NotAscending {
                offset,
                field: "summary key",
                tile: None,
            },
        )?;
        let tag_offset = r.offset();
        let value = match r.u8("summary value tag")? {
            0 => SummaryValue::Text(r.string("summary text")?),
            1 => SummaryValue::Integer(r.u64("summary integer")? as i64),
            2 => SummaryValue::Real(f64::from_bits(r.u64("summary real")?)),
            other => {
                return Err(PackageError::UnknownEnum {
                    offset: tag_offset,
                    field: "summary value tag",
                    value: u32::from(other),
                })
            }
        };
        summary.insert(key.clone(), value);
        previous = Some(key);
    }
    Ok(summary)
}
