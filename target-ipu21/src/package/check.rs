//! Memory rules the reader applies to each record as it parses it: segments
//! inside SRAM and disjoint, code only where it can be fetched, binding slices
//! inside their tile's tensor or scratch segments (never code, exchange
//! rows, argument blocks or runtime state) and covering the tensor, and no
//! SRAM byte holding two different tensor bytes, whatever classes the two
//! bindings are.

use alloc::vec::Vec;

use super::error::{PackageError, Result};
use super::model::{BindingKind, BindingSlice, Segment, SegmentRole, TargetFacts, TileImage};

/// Instructions are 32-bit words (`docs/facts/ipu21-target.md` §0).
const INSTRUCTION_BYTES: u32 = 4;

/// Checks one segment against the target and the previous segment of the
/// same tile (segments arrive sorted by address).
pub fn segment(
    offset: usize,
    tile: u32,
    target: &TargetFacts,
    s: &Segment,
    previous_end: Option<u64>,
) -> Result<()> {
    if s.memory_size == 0 {
        return Err(PackageError::EmptySegment {
            offset,
            tile,
            address: s.address,
        });
    }
    let memory_end = target.tile_memory_end();
    if s.address < target.tile_memory_base || s.end() > memory_end {
        return Err(PackageError::SegmentOutsideMemory {
            offset,
            tile,
            address: s.address,
            end: s.end(),
            memory_start: target.tile_memory_base,
            memory_end,
        });
    }
    if let Some(previous_end) = previous_end {
        if u64::from(s.address) < previous_end {
            return Err(PackageError::SegmentOverlap {
                offset,
                tile,
                address: s.address,
                previous_end,
            });
        }
    }
    if s.flags.is_executable() && s.end() > u64::from(target.executable_limit) {
        return Err(PackageError::ExecutableAboveLimit {
            offset,
            tile,
            address: s.address,
            end: s.end(),
            limit: target.executable_limit,
        });
    }
    let data_len = s.data.len() as u64;
    if data_len > u64::from(s.memory_size) {
        return Err(PackageError::DataLongerThanMemory {
            offset,
            tile,
            address: s.address,
            data_len,
            memory_size: s.memory_size,
        });
    }
    let data_end = u64::from(s.address) + data_len;
    if data_len > 0 && data_end > u64::from(target.loader_limit) {
        return Err(PackageError::DataAboveLoaderLimit {
            offset,
            tile,
            address: s.address,
            data_end,
            limit: target.loader_limit,
        });
    }
    Ok(())
}

/// The segment of `tile` containing `[address, address + size)`, if any.
/// Segments are sorted by address and disjoint.
pub fn containing_segment(tile: &TileImage, address: u32, size: u64) -> Option<&Segment> {
    let i = tile.segments.partition_point(|s| s.address <= address);
    let s = tile.segments.get(i.checked_sub(1)?)?;
    (u64::from(address) + size <= s.end()).then_some(s)
}

/// True when `address` can be the target of a supervisor call on `tile`.
pub fn is_code_address(tile: &TileImage, address: u32) -> bool {
    address.is_multiple_of(INSTRUCTION_BYTES)
        && containing_segment(tile, address, u64::from(INSTRUCTION_BYTES))
            .is_some_and(|s| s.flags.is_executable())
}

/// A kernel entry must be an aligned address in the executable region.
pub fn is_kernel_address(target: &TargetFacts, address: u32) -> bool {
    address.is_multiple_of(INSTRUCTION_BYTES)
        && address >= target.tile_memory_base
        && address < target.executable_limit
}

/// Checks one binding slice: its tile has an image, the range is inside the
/// tensor and inside one writable, non-executable segment of that tile
/// that holds tensors or scratch: the host writes inputs and weights
/// through bindings, so a slice over the supervisor's argument blocks,
/// exchange rows, patch tables, host descriptors or runtime state would
/// let a package's data overwrite its own program.
pub fn slice(
    offset: usize,
    tiles: &[TileImage],
    s: &BindingSlice,
    tensor_bytes: u64,
) -> Result<()> {
    let out_of_range = || PackageError::SliceOutOfRange {
        offset,
        tile: s.tile,
        tile_address: s.tile_address,
        size: s.size,
        file_offset: s.file_offset,
        tensor_bytes,
    };
    if s.size == 0
        || s.file_offset
            .checked_add(u64::from(s.size))
            .is_none_or(|end| end > tensor_bytes)
    {
        return Err(out_of_range());
    }
    let image = tiles
        .binary_search_by_key(&s.tile, |t| t.physical_tile)
        .map(|i| &tiles[i])
        .map_err(|_| PackageError::SliceTileMissing {
            offset,
            tile: s.tile,
        })?;
    let inside = containing_segment(image, s.tile_address, u64::from(s.size)).is_some_and(|seg| {
        seg.flags.contains(super::model::SegmentFlags::WRITE)
            && !seg.flags.is_executable()
            && matches!(seg.role, SegmentRole::Tensor | SegmentRole::Scratch)
    });
    if !inside {
        return Err(PackageError::SliceOutsideSegment {
            offset,
            tile: s.tile,
            tile_address: s.tile_address,
            size: s.size,
        });
    }
    Ok(())
}

/// Every byte of the tensor must be on some tile. Slices are sorted by
/// file offset, so one sweep finds the first gap.
pub fn coverage(offset: usize, slices: &[BindingSlice], tensor_bytes: u64) -> Result<()> {
    let mut covered = 0u64;
    for s in slices {
        if s.file_offset > covered {
            break;
        }
        covered = covered.max(s.file_offset + u64::from(s.size));
    }
    if covered < tensor_bytes {
        return Err(PackageError::BindingNotCovered {
            offset,
            first_missing_byte: covered,
            tensor_bytes,
        });
    }
    Ok(())
}

/// One binding slice's SRAM range and which tensor bytes it holds there.
#[derive(Clone, Copy, Debug)]
pub struct PlacedSlice {
    pub tile: u32,
    pub start: u64,
    pub end: u64,
    /// Offset of the slice's binding record (names the binding).
    pub binding_offset: usize,
    /// The binding's class.
    pub kind: BindingKind,
    /// `tile_address - file_offset`: slices of one binding with equal
    /// deltas put the same tensor byte at the same SRAM byte.
    pub delta: i128,
}

impl PlacedSlice {
    pub fn of(binding_offset: usize, kind: BindingKind, s: &BindingSlice) -> Self {
        PlacedSlice {
            tile: s.tile,
            start: u64::from(s.tile_address),
            end: u64::from(s.tile_address) + u64::from(s.size),
            binding_offset,
            kind,
            delta: i128::from(s.tile_address) - i128::from(s.file_offset),
        }
    }
}

/// Slices that share SRAM must hold the same bytes of the same binding
/// (replication of a range, or a duplicate, is fine; one SRAM byte for two
/// tensor bytes is not). Every pair of classes counts: weights stay
/// resident across inferences, so one sharing SRAM with another weight,
/// an input or an output would be overwritten; inputs are written and
/// outputs read in one host call each, and an input under an output would
/// hand the host its own pixels back. With every SRAM byte holding at most one tensor
/// byte, a binding can be no larger than the SRAM its slices cover, so
/// nothing sized from its shape exceeds what the tiles hold.
pub fn aliasing(mut placed: Vec<PlacedSlice>) -> Result<()> {
    placed.sort_unstable_by_key(|p| (p.tile, p.start, p.end));
    // Of the slices seen so far on this tile, the one reaching furthest:
    // any later slice overlapping an earlier one overlaps this one too.
    let mut reach: Option<PlacedSlice> = None;
    for p in placed {
        match reach {
            Some(o) if o.tile == p.tile && p.start < o.end => {
                if o.binding_offset != p.binding_offset || o.delta != p.delta {
                    return Err(PackageError::SlicesAlias {
                        offset: p.binding_offset,
                        tile: p.tile,
                        tile_address: p.start as u32,
                        other_binding_offset: o.binding_offset,
                        kind: p.kind.name(),
                        other_kind: o.kind.name(),
                    });
                }
                if p.end > o.end {
                    reach = Some(p);
                }
            }
            _ => reach = Some(p),
        }
    }
    Ok(())
}

/// The encoder layer a weight binding belongs to: `…encoder.layers.{i}.…`
/// (SigLIP, CLIP) or `…encoder.layer.{i}.…` (ViT, DINOv2).
fn layer_of(name: &str) -> Option<u32> {
    let at = name
        .find("encoder.layers.")
        .map(|i| i + "encoder.layers.".len());
    let at = at.or_else(|| {
        name.find("encoder.layer.")
            .map(|i| i + "encoder.layer.".len())
    })?;
    let rest = name.get(at..)?;
    let digits = rest.split('.').next()?;
    digits.parse().ok()
}

/// What the program determines, against what the description says of it:
/// the layers built (the Repeat's iterations and the layer weights bound),
/// FP8 weights (the bound weights' dtypes and scales), and the batch,
/// channels and image size (the `pixel_values` input's shape). A package
/// re-sealed to claim another model would otherwise run and validate
/// against a reference of the model it only claims to be.
pub fn description(
    model: &super::ModelDescription,
    bindings: &[super::model::Binding],
    steps: &super::model::StepTables,
) -> Result<()> {
    use alloc::string::ToString;
    let contradiction = |field: &'static str, described: alloc::string::String, program| {
        Err(PackageError::DescriptionContradictsProgram {
            field,
            described,
            program,
        })
    };
    let trips: alloc::collections::BTreeSet<u32> = steps
        .tiles
        .iter()
        .flat_map(|t| t.steps.iter())
        .filter_map(|s| s.repeat.map(|r| r.trip_count))
        .collect();
    if let Some(&other) = trips.iter().find(|&&t| t != model.layers) {
        return contradiction(
            "layers",
            model.layers.to_string(),
            alloc::format!("a Repeat of {other} iterations"),
        );
    }
    let weights = || bindings.iter().filter(|b| b.kind == BindingKind::Weight);
    if let Some(deepest) = weights().filter_map(|b| layer_of(&b.name)).max() {
        if u64::from(deepest) + 1 != u64::from(model.layers) {
            return contradiction(
                "layers",
                model.layers.to_string(),
                alloc::format!("weights bound for {} layers", u64::from(deepest) + 1),
            );
        }
    }
    let fp8 = |d: super::DType| matches!(d, super::DType::F8E4M3 | super::DType::F8E5M2);
    let claims_fp8 = model
        .numerics
        .fp8_operands
        .contains(super::Fp8Operands::GEMM_WEIGHTS);
    match (claims_fp8, weights().find(|b| fp8(b.dtype))) {
        (true, None) => {
            return contradiction(
                "FP8 GEMM weights",
                alloc::format!("at scale {}", model.numerics.fp8_scale.unwrap_or(0)),
                "no FP8 weight bound".to_string(),
            )
        }
        (false, Some(b)) => {
            return contradiction(
                "no FP8 weights",
                alloc::string::String::new(),
                alloc::format!("`{}` bound as {}", b.name, b.dtype.name()),
            )
        }
        _ => {}
    }
    if let Some(scale) = model.numerics.fp8_scale.filter(|_| claims_fp8) {
        if let Some(b) = weights().find(|b| fp8(b.dtype) && b.scale != scale) {
            return contradiction(
                "FP8 weight scale",
                scale.to_string(),
                alloc::format!("`{}` at scale {}", b.name, b.scale),
            );
        }
    }
    let pixels = bindings
        .iter()
        .find(|b| b.kind == BindingKind::Input && b.name == "pixel_values");
    if let Some(p) = pixels {
        let c = &model.config;
        let described = [
            u64::from(model.batch),
            u64::from(c.num_channels),
            u64::from(c.image_size),
            u64::from(c.image_size),
        ];
        if p.shape[..] != described[..] {
            return contradiction(
                "batch × channels × image",
                alloc::format!("{described:?}"),
                alloc::format!("a pixel_values input of shape {:?}", p.shape),
            );
        }
    }
    Ok(())
}
