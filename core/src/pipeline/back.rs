//! The stages that write it down: emission (per-tile assembly), linking
//! (assemble, link, check each image below its tile's data) and packaging
//! (tile images, kernel symbols, bindings, host call, step tables, plan
//! summary, bytes), then the compile report.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::bindings::{bindings, host_calls};
use alloc::boxed::Box;

use super::error::{CodeDoesNotFit, CompileError, ImageParts, PatchDataFailed};
use super::front::{placed_peak, replace_with_room, Front};
use super::link::{kernel_symbols, link_tile, step_tables, LinkedTile};
use super::patch_data::{check_below, code_estimate_of, data_segments};
use super::{CompileHooks, CompileOptions, CompileReport, Compiled, Linked, Placed, Run, Stage};

use crate::description::{self, BuildFlags, Description, KSplit};
use crate::emit::{emit_program, program_tiles, EmitInput, EmittedProgram, PatchData};
use crate::ir::Graph;
use crate::place::{place_tile, support_reserved, PlaceError, PlacementRequest, TilePlacement};
use crate::plan::opplan::PlanFamily;
use crate::plan::PlannedOp;
use ipuc_target::ipu21::sram::{layout, APPLICATION_LOAD_BASE};
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::kernel::KernelAbi;
use ipuc_target::lookup::LookupMap;
use ipuc_target::package::{self, Package, Segment, SegmentRole, SummaryValue, TileImage};

/// Emission, linking, packaging and the report.
pub(super) fn emit_link_package<H: CompileHooks>(
    run: &mut Run<'_, H>,
    graph: &Graph,
    options: &CompileOptions,
    kernels: &dyn KernelAbi,
    mut front: Front,
) -> Result<Compiled, CompileError> {
    // At most CODE_REPLACEMENTS re-placements for images past their tile's
    // data, each keeping the room given before (it only grows).
    let mut replacements = 0;
    let mut rooms: BTreeMap<LogicalTile, u32> = BTreeMap::new();
    let (programs, images, fit) = loop {
        let mut programs = emit(run, &front, kernels)?;
        let may_replace = replacements < CODE_REPLACEMENTS;
        match link(run, &mut front, kernels, &mut programs, may_replace)? {
            Linking::Done(images, fit) => break (programs, images, fit),
            Linking::Replace(room) => {
                replacements += 1;
                for (tile, bytes) in room {
                    let r = rooms.entry(tile).or_insert(0);
                    *r = (*r).max(bytes);
                }
                front = replace_with_room(run, front, options, &rooms)?;
            }
        }
    };
    let patch_segments = patch_segments(&programs);
    drop(programs);
    let (pkg, bytes, description) = package(
        run,
        graph,
        options,
        kernels,
        &front,
        &images,
        patch_segments,
    )?;
    let report = report(&front, &pkg, &bytes, &images, fit, &run.times);
    if report.tiles == 0 {
        return Err(CompileError::NoTiles);
    }
    Ok(Compiled {
        package: pkg,
        bytes,
        description,
        report,
        schedule: front.schedule,
        placements: front.placements,
    })
}

/// How many times a compile may place its tiles again for images that end
/// past their tile's lowest data (the rows part of the image estimate is a
/// model, not a bound); each time the room kept for code only grows, so a
/// tile either fits or is refused by placement (typed, tile and bytes).
pub const CODE_REPLACEMENTS: u32 = 3;

/// Patch-data segments by logical tile.
type PatchSegments = BTreeMap<LogicalTile, Vec<Segment>>;

/// Every tile's supervisor program (jobs: tiles).
fn emit<H: CompileHooks>(
    run: &mut Run<'_, H>,
    front: &Front,
    kernels: &dyn KernelAbi,
) -> Result<Vec<EmittedProgram>, CompileError> {
    let tiles = program_tiles(&front.schedule);
    let t = run.start(Stage::Emission, tiles.len());
    let programs = emit_all(run.hooks, front, kernels, &tiles)?;
    run.finish(
        Stage::Emission,
        t,
        &format!("{} tile programs", programs.len()),
    );
    Ok(programs)
}

/// The programs of `tiles`, in order, with the front's addresses and patch
/// bases (the host's jobs; emission is deterministic per tile).
fn emit_all<H: CompileHooks>(
    hooks: &H,
    front: &Front,
    kernels: &dyn KernelAbi,
    tiles: &[LogicalTile],
) -> Result<Vec<EmittedProgram>, CompileError> {
    let input = EmitInput {
        schedule: &front.schedule,
        addresses: &Placed::new(&front.placements),
        kernels,
        exchange: &front.exchange,
        patch_addresses: &front.patch,
    };
    hooks
        .run_jobs(Stage::Emission, tiles, &|&tile| emit_program(&input, tile))
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(CompileError::Emit)
}

/// Every tile's patch data as segments, at the bases its program uses.
fn patch_segments(programs: &[EmittedProgram]) -> PatchSegments {
    let words = |w: &[u32]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
    programs
        .iter()
        .filter_map(|p| {
            let (base, data) = p.patch.as_ref()?;
            let mut segs = Vec::new();
            if data.repeat_bytes() > 0 {
                segs.push(Segment::data(
                    *base,
                    data.repeat_bytes(),
                    SegmentRole::RepeatPatchTable,
                    words(&data.repeat_words),
                ));
            }
            if data.sharing_bytes() > 0 {
                segs.push(Segment::data(
                    base + data.repeat_bytes(),
                    data.sharing_bytes(),
                    SegmentRole::SharingPatchList,
                    words(&data.sharing_words),
                ));
            }
            Some((p.logical_tile, segs))
        })
        .collect()
}

/// How well the images fit: the largest image/estimate ratio and its tile,
/// the least room left below a tile's data and that tile.
struct Fit {
    ratio: (f64, LogicalTile),
    room: (u32, LogicalTile),
    estimate_max: u64,
}

/// What linking came to: every image checked, or tiles to place again
/// with more room for code (their bytes).
enum Linking {
    Done(Vec<LinkedTile>, Fit),
    Replace(BTreeMap<LogicalTile, u32>),
}

/// Links every tile (jobs: tiles) and checks each image below its tile's
/// lowest region-0 data (less that data's element and the fetch
/// look-ahead) and below its patch data: a typed error otherwise. An image
/// that ran past its patch data at the top of its code reservation gets
/// the first refit ([`refit_patch_blocks`]); with `may_replace`, images
/// that still end past their tile's data ask for the second
/// ([`Linking::Replace`]: placement, exchange and patch data again, with
/// those tiles' code reservations grown) instead of failing.
fn link<H: CompileHooks>(
    run: &mut Run<'_, H>,
    front: &mut Front,
    kernels: &dyn KernelAbi,
    programs: &mut [EmittedProgram],
    may_replace: bool,
) -> Result<Linking, CompileError> {
    let t = run.start(Stage::Linking, programs.len());
    let linked = run.hooks.run_jobs(Stage::Linking, programs, &|p| {
        link_tile(&front.stubs, p, &front.runtime)
    });
    let mut images = linked
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(CompileError::Link)?;
    let moved = refit_patch_blocks(run, front, kernels, programs, &mut images)?;
    if may_replace {
        let room = room_for_images_past_data(front, &images);
        if !room.is_empty() {
            for (tile, bytes) in &room {
                run.hooks.note(&format!(
                    "linking: tile {}: code image past the tile's lowest data (estimate {} bytes): placing again with {bytes} bytes kept for code, then the exchange and the patch data",
                    tile.get(),
                    code_estimate_of(&front.plan.code_bytes, *tile, front.fixed_code),
                ));
            }
            run.finish(
                Stage::Linking,
                t,
                &format!(
                    "{} tile images, {} past their tile's data: placing again",
                    images.len(),
                    room.len()
                ),
            );
            return Ok(Linking::Replace(room));
        }
    }
    let fit = check_images(front, &images)?;
    run.hooks
        .linked(&Linked {
            images: &images,
            code_estimates: &front.plan.code_bytes,
            exchange: &front.exchange,
        })
        .map_err(CompileError::Hook)?;
    let summary = format!(
        "{} tile images, largest code image {} bytes (largest estimate {}; image/estimate at most {:.3}, on tile {}; least room left {} bytes, on tile {}){}",
        images.len(),
        images.iter().map(|i| i.code_bytes()).max().unwrap_or(0),
        fit.estimate_max,
        fit.ratio.0,
        fit.ratio.1.get(),
        fit.room.0,
        fit.room.1.get(),
        if moved == 0 {
            String::new()
        } else {
            format!("; {moved} patch block(s) moved to the data region for images past their estimate")
        }
    );
    run.finish(Stage::Linking, t, &summary);
    Ok(Linking::Done(images, fit))
}

/// Tiles whose image ends past their placement's code limit (the lowest
/// region-0 data less its element and the look-ahead), with the bytes to
/// keep for code when placing them again: the image plus its overshoot of
/// the estimate (rows scheduled for the new addresses may differ again),
/// 8-byte rounded.
fn room_for_images_past_data(front: &Front, images: &[LinkedTile]) -> BTreeMap<LogicalTile, u32> {
    let by_logical: LookupMap<LogicalTile, &TilePlacement> =
        front.placements.iter().map(|p| (p.tile, p)).collect();
    images
        .iter()
        .filter_map(|img| {
            let p = by_logical.get(&img.logical_tile)?;
            let bytes = img.code_bytes();
            if p.check_code(bytes).is_ok() {
                return None;
            }
            let estimate =
                code_estimate_of(&front.plan.code_bytes, img.logical_tile, front.fixed_code);
            let room = bytes
                .saturating_add(bytes.saturating_sub(estimate))
                .checked_next_multiple_of(8)?;
            Some((img.logical_tile, room))
        })
        .collect()
}

/// The one refit after linking, bounded to one pass and not a re-plan: the
/// rows part of the planner's image estimate is a model, not a bound (the
/// scheduler may cut a transfer into more pieces than the estimate counts,
/// each with its own send and receive controls), so an image may end past
/// its estimate. Where that image ran into its tile's patch data at the top
/// of the code reservation, the block moves to the tile's data region
/// (charged like data; no room or budget there is the typed
/// [`CompileError::PatchData`]), the tile's program is emitted and linked
/// again, and the usual check follows: the image is then bounded by the
/// tile's lowest data, which placement keeps above the whole elements of
/// the estimate. Plans whose images fit are untouched (same bytes). Returns
/// the blocks moved; each move is a note naming the tile and the bytes.
fn refit_patch_blocks<H: CompileHooks>(
    run: &mut Run<'_, H>,
    front: &mut Front,
    kernels: &dyn KernelAbi,
    programs: &mut [EmittedProgram],
    images: &mut [LinkedTile],
) -> Result<usize, CompileError> {
    let over: Vec<usize> = images
        .iter()
        .enumerate()
        .filter(|(_, img)| {
            front
                .patch
                .code_ceiling
                .get(&img.logical_tile)
                .is_some_and(|&c| img.code_bytes() > c.saturating_sub(APPLICATION_LOAD_BASE))
        })
        .map(|(i, _)| i)
        .collect();
    if over.is_empty() {
        return Ok(0);
    }
    for &i in &over {
        let img = &images[i];
        let tile = img.logical_tile;
        let data = PatchData::for_tile(&front.exchange, img.physical_tile);
        let ceiling = front.patch.code_ceiling.get(&tile).copied().unwrap_or(0);
        let estimates = &front.plan.code_bytes;
        let fixed = front.fixed_code;
        let code_estimate = |t: LogicalTile| code_estimate_of(estimates, t, fixed);
        let moved = front
            .patch
            .move_to_data(tile, &data, &mut front.placements, &code_estimate);
        let base = match moved {
            Ok(base) => base.unwrap_or(0),
            Err(error) => {
                return Err(CompileError::PatchData(Box::new(PatchDataFailed {
                    error,
                    schedule: front.schedule.clone(),
                    placements: front.placements.clone(),
                })))
            }
        };
        run.hooks.note(&format!(
            "linking: tile {}: code image {} bytes (estimate {}) ran past its {}-byte patch data at the top of its code reservation ({} bytes free below it): the block moved to the data region at {base:#x}, the tile is emitted and linked again",
            tile.get(),
            img.code_bytes(),
            code_estimate(tile),
            data.bytes(),
            ceiling.saturating_sub(APPLICATION_LOAD_BASE),
        ));
    }
    // Emission is deterministic: every other tile's program comes out the
    // same (its patch base did not move), so only the moved tiles are
    // emitted and linked again.
    let tiles: Vec<LogicalTile> = over.iter().map(|&i| images[i].logical_tile).collect();
    let again = emit_all(run.hooks, front, kernels, &tiles)?;
    for (&i, program) in over.iter().zip(again) {
        images[i] =
            link_tile(&front.stubs, &program, &front.runtime).map_err(CompileError::Link)?;
        let slot = programs
            .iter_mut()
            .find(|p| p.logical_tile == program.logical_tile)
            .ok_or(
                // Cannot happen: the same schedule emits the same tiles.
                CompileError::Emit(crate::emit::EmitError::UnplacedPatchData {
                    tile: program.logical_tile,
                    bytes: 0,
                }),
            )?;
        *slot = program;
    }
    Ok(over.len())
}

/// [`link`]'s check of every image against its tile's limit; an image that
/// does not fit is a [`CodeDoesNotFit`] carrying what a memory report
/// needs.
fn check_images(front: &Front, images: &[LinkedTile]) -> Result<Fit, CompileError> {
    let estimates = &front.plan.code_bytes;
    let by_logical: LookupMap<LogicalTile, &TilePlacement> =
        front.placements.iter().map(|p| (p.tile, p)).collect();
    let mut ratio = (0.0f64, LogicalTile::default());
    let mut room = (u32::MAX, LogicalTile::default());
    for img in images {
        let tile = img.logical_tile;
        let bytes = img.code_bytes();
        let estimate = estimates
            .get(tile.index())
            .copied()
            .unwrap_or(u64::from(front.fixed_code))
            .max(1);
        let r = f64::from(bytes) / estimate as f64;
        if r > ratio.0 {
            ratio = (r, tile);
        }
        let ceiling = front.patch.code_ceiling.get(&tile).copied();
        let late = |placement: &TilePlacement, error: PlaceError| {
            late_failure(front, img, ceiling.is_some(), placement, error)
        };
        let limit = match by_logical.get(&tile) {
            Some(p) => {
                p.check_code(bytes).map_err(|e| late(p, e))?;
                let limit = p.code_limit();
                match ceiling {
                    Some(c) if c < limit => {
                        check_below(tile, bytes, c).map_err(|e| late(p, e))?;
                        c
                    }
                    _ => limit,
                }
            }
            None => {
                let empty = place_tile(&PlacementRequest {
                    tile,
                    reserved: support_reserved(code_estimate_of(estimates, tile, front.fixed_code)),
                    ..PlacementRequest::default()
                })
                .map_err(CompileError::EmptyTile)?;
                empty.check_code(bytes).map_err(|e| late(&empty, e))?;
                empty.code_limit()
            }
        };
        let left = limit
            .saturating_sub(APPLICATION_LOAD_BASE)
            .saturating_sub(bytes);
        if left < room.0 {
            room = (left, tile);
        }
    }
    Ok(Fit {
        ratio,
        room,
        estimate_max: estimates.iter().copied().max().unwrap_or(0),
    })
}

/// The [`CodeDoesNotFit`] of `img` on `placement` (its patch data counts
/// as part of the image when it sits in the code reservation).
fn late_failure(
    front: &Front,
    img: &LinkedTile,
    patch_in_reservation: bool,
    placement: &TilePlacement,
    error: PlaceError,
) -> CompileError {
    let (runtime, program, rows) = match img.part_bytes() {
        Ok(parts) => parts,
        Err(e) => return CompileError::Link(e),
    };
    let patch_data = if patch_in_reservation {
        PatchData::for_tile(&front.exchange, img.physical_tile).bytes()
    } else {
        0
    };
    CompileError::Code(Box::new(CodeDoesNotFit {
        error,
        placement: placement.clone(),
        parts: ImageParts {
            runtime,
            program,
            rows,
            patch_data,
        },
        schedule: front.schedule.clone(),
        placements: front.placements.clone(),
    }))
}

/// The package and its canonical bytes.
fn package<H: CompileHooks>(
    run: &mut Run<'_, H>,
    graph: &Graph,
    options: &CompileOptions,
    kernels: &dyn KernelAbi,
    front: &Front,
    images: &[LinkedTile],
    patch_segments: PatchSegments,
) -> Result<(Package, Vec<u8>, Description), CompileError> {
    let t = run.start(Stage::Packaging, 0);
    let mut pkg = Package::new(format!(
        "ipuc {} ({})",
        env!("CARGO_PKG_VERSION"),
        options.name
    ));
    pkg.tiles = tile_images(front, images, patch_segments).map_err(CompileError::Link)?;
    pkg.kernels = kernel_symbols(kernels, images).map_err(CompileError::Link)?;
    let addresses = Placed::new(&front.placements);
    pkg.bindings = bindings(graph, &front.schedule, &addresses).map_err(CompileError::Bindings)?;
    pkg.host_calls = host_calls(&pkg.bindings).map_err(CompileError::Bindings)?;
    pkg.steps = step_tables(&front.schedule, images).map_err(CompileError::Link)?;
    pkg.plan_summary = plan_summary(options, front);
    let description = Description {
        build: Some(build_flags(options)),
        model: options.model.clone(),
        k_splits: k_splits(graph, &front.plan.ops),
    };
    pkg.description = description::encode(&description).map_err(CompileError::Description)?;
    // What a reader of the package will get: it reads back to the same
    // value and agrees with the program.
    let read = description::read(&pkg).map_err(CompileError::Description)?;
    debug_assert_eq!(read, description);
    let bytes = package::write(&pkg).map_err(CompileError::Package)?;
    run.finish(Stage::Packaging, t, &format!("{} bytes", bytes.len()));
    Ok((pkg, bytes, description))
}

/// Every tile's image: code segments, the runtime state block, its
/// buffers' data segments and its patch data, by address.
fn tile_images(
    front: &Front,
    images: &[LinkedTile],
    mut patch_segments: PatchSegments,
) -> Result<Vec<TileImage>, super::LinkError> {
    let by_logical: LookupMap<LogicalTile, &TilePlacement> =
        front.placements.iter().map(|p| (p.tile, p)).collect();
    let mut tiles = Vec::with_capacity(images.len());
    for img in images {
        let mut tile = img.tile_image()?;
        tile.segments.push(Segment::data(
            layout::STATE_BASE,
            layout::STATE_END - layout::STATE_BASE,
            SegmentRole::State,
            Vec::new(),
        ));
        if let Some(p) = by_logical.get(&img.logical_tile) {
            tile.segments.extend(data_segments(&front.schedule, p));
        }
        if let Some(segs) = patch_segments.remove(&img.logical_tile) {
            tile.segments.extend(segs);
        }
        tile.segments.sort_by_key(|s| s.address);
        tiles.push(tile);
    }
    Ok(tiles)
}

/// The package's plan summary. Non-default build settings are recorded too
/// (defaults add nothing, so default packages keep their bytes).
fn plan_summary(options: &CompileOptions, front: &Front) -> BTreeMap<String, SummaryValue> {
    let plan = &front.plan;
    let summary = [
        (
            "beam_width",
            SummaryValue::Integer(options.beam_width as i64),
        ),
        (
            "estimated_cycles",
            SummaryValue::Integer(plan.cycles.total() as i64),
        ),
        (
            "estimated_peak_bytes",
            SummaryValue::Integer(plan.peak_bytes as i64),
        ),
        (
            "exchange_phases",
            SummaryValue::Integer(front.exchange.summary.phases as i64),
        ),
        ("workload", SummaryValue::Text(options.name.clone())),
    ];
    let extra = [
        options
            .exchange_stream_words
            .map(|w| ("exchange_stream_words", SummaryValue::Integer(i64::from(w)))),
        (options.optimization_steps > 0).then(|| {
            (
                "optimization_steps",
                SummaryValue::Integer(i64::from(options.optimization_steps)),
            )
        }),
        (!options.runtime.is_builtin()).then(|| {
            (
                "runtime_source",
                SummaryValue::Text(options.runtime.name.clone()),
            )
        }),
    ];
    summary
        .into_iter()
        .chain(extra.into_iter().flatten())
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Every product the plan splits over K, by op: GEMMs split over K, and
/// attentions split over their keys (the `p·v` contraction). A Repeat
/// body's ops are planned once for every iteration.
fn k_splits(graph: &Graph, ops: &[PlannedOp]) -> Vec<KSplit> {
    let mut splits = Vec::new();
    collect_k_splits(graph, ops, &mut splits);
    splits.sort_unstable_by_key(|s| s.op);
    splits
}

fn collect_k_splits(graph: &Graph, ops: &[PlannedOp], splits: &mut Vec<KSplit>) {
    for planned in ops {
        if let Some(body) = &planned.repeat {
            collect_k_splits(graph, &body.ops, splits);
        }
        // K: the last dim of a GEMM's `a` (GEMM plans refuse a transposed
        // `a`); the keys: the second-last dim of an attention's `k`.
        let (parts, operand, from_end) = match planned.plan.as_ref().map(|p| &p.family) {
            Some(PlanFamily::Gemm { k: parts, .. }) => (parts, 0, 1),
            Some(PlanFamily::Attention { key_parts, .. }) => (key_parts, 1, 2),
            _ => continue,
        };
        let k = graph
            .op(planned.op)
            .and_then(|op| op.operands().get(operand).copied())
            .and_then(|a| graph.ty(a))
            .map(|t| t.shape.dims())
            .and_then(|dims| dims.get(dims.len().checked_sub(from_end)?).copied())
            .and_then(|k| u32::try_from(k).ok());
        if let (true, Some(k)) = (*parts > 1, k) {
            splits.push(KSplit {
                op: planned.op.as_u32(),
                k,
                parts: *parts,
            });
        }
    }
}

/// The compile flags as the package records them.
fn build_flags(options: &CompileOptions) -> BuildFlags {
    use sha2::{Digest, Sha256};
    BuildFlags {
        // The CLI bounds the beam width far below 2^32 (`checks`).
        beam_width: u32::try_from(options.beam_width).unwrap_or(u32::MAX),
        planning_tiles: options.tiles,
        optimization_steps: options.optimization_steps,
        exchange_stream_words: options.exchange_stream_words,
        outgoing_base: options.outgoing_base,
        planner_data_budget: options.planner_data_budget,
        min_key_parts: options.min_key_parts,
        runtime_name: options.runtime.name.clone(),
        runtime_sha256: Sha256::digest(options.runtime.text.as_bytes()).into(),
    }
}

/// The figures the run report prints.
fn report(
    front: &Front,
    pkg: &Package,
    bytes: &[u8],
    images: &[LinkedTile],
    fit: Fit,
    times: &super::StageTimes,
) -> CompileReport {
    let per_tile = |f: &dyn Fn(&TileImage) -> u64| pkg.tiles.iter().map(f).max().unwrap_or(0);
    let peak = placed_peak(&front.placements);
    let plan = &front.plan;
    CompileReport {
        plan_stats: plan.stats,
        estimated_cycles: plan.cycles.total(),
        estimated_peak_bytes: plan.peak_bytes,
        estimated_peak_tile: plan.peak_tile,
        placed_peak_bytes: peak.0,
        placed_peak_tile: peak.1,
        patch_data_bytes_per_tile: u64::from(front.patch.largest),
        patch_allowance_bytes: front.allowance,
        replans: front.replans,
        patch_blocks_in_reservation: front.patch.in_reservation,
        patch_blocks_in_data: front.patch.in_data,
        exchange_table_bytes_per_tile: per_tile(&|t| {
            t.segments
                .iter()
                .filter(|s| s.role.is_exchange_table())
                .map(|s| u64::from(s.memory_size))
                .sum()
        }),
        host_descriptor_bytes_per_tile: per_tile(&|t| t.role_bytes(SegmentRole::HostDescriptors)),
        code_bytes_per_tile: images
            .iter()
            .map(|i| u64::from(i.code_bytes()))
            .max()
            .unwrap_or(0),
        code_estimate_bytes_per_tile: fit.estimate_max,
        code_actual_over_estimate: fit.ratio,
        code_room_min: fit.room,
        tiles: images.len(),
        exchange: front.exchange.summary.clone(),
        times: times.clone(),
        package_bytes: bytes.len(),
        // The package's own digest (SHA-256 of the canonical bytes before
        // it), which the reader verifies first.
        sha256: package::digest_hex(bytes),
        optimization: front.optimization,
        plan_lines: crate::plan::listing::plan_lines(plan),
    }
}
