//! Placement-stage memory rejections: the planner's estimate accepted the
//! plan but exact SRAM placement of some tile went over the budget
//! (`PlaceError::OverBudget`) or found no free range for a buffer
//! (`PlaceError::NoRoom`), or — late, once code and patch data are known —
//! a tile's linked code image did not fit below its lowest region-0 data
//! (`PlaceError::CodeDoesNotFit`) or its patch data found no room.
//! [`PlacementRejected`] carries a [`MemoryRejection`] built from the
//! placement requests or placements (every schedule step a moment, the
//! support ranges and buffer spans as placement charges them; for a late
//! failure the [`Shortfall`]: tile, bytes needed, bytes free, what the
//! tile holds), so the CLI writes the same interactive report as for a
//! planner rejection.

use std::fmt::Write as _;
use std::path::PathBuf;

use ipuc_core::lower::TileSchedule;
use ipuc_core::place::{blocked_span, PlaceError, PlacementRequest, TilePlacement};
use ipuc_target::ipu21::sram::{
    APPLICATION_LOAD_BASE, EXECUTABLE_MEMORY_LIMIT, TILE_MEMORY_BUDGET,
};
use ipuc_target::ipu21::topology::LogicalTile;

use super::memory::{
    reports_line, AllocationClass, LiveAllocation, MemoryBudget, MemoryRejection, Shortfall,
    TileMemoryMap,
};
use super::placement_map::{
    buffer_class, buffer_row, reserved_class, schedule_moments, static_row, tile_map,
};

/// Refused tiles a placement report's picker holds at most: all of them
/// on every run seen so far; above this the page says how many of how many
/// it holds (each tile costs its allocations over every schedule step in
/// the page and the JSON).
pub const REPORT_REFUSED_TILES: usize = 256;

/// Tiles placement accepted that the picker adds after the refused ones,
/// most loaded first (for comparison).
pub const REPORT_OTHER_TILES: usize = 32;

/// Allocations listed in the error message.
const LISTED: usize = 12;

/// Placement refused at least one tile although the planner accepted the
/// plan (typed, so the CLI can write the report and name it).
#[derive(Debug, thiserror::Error)]
#[error("{}", self.message())]
pub struct PlacementRejected {
    /// Every tile placement refused, in tile order.
    pub errors: Vec<PlaceError>,
    /// The report: the worst refused tile, the picker's tiles.
    pub report: Box<MemoryRejection>,
    /// The op of the step at that tile's peak (`rejected-op<N>-…`).
    pub op_index: u32,
    /// The reports written for it (set by the CLI).
    pub paths: Vec<PathBuf>,
    /// A late failure's own first line (patch data: what the tile's
    /// patch data is); `None`: the placement error's text.
    pub headline: Option<String>,
}

impl PlacementRejected {
    /// The message: the refused tile's error, what the tile holds, then
    /// where the report is.
    fn message(&self) -> String {
        let r = &self.report;
        let worst = self
            .errors
            .iter()
            .find(|e| error_tile(e).map(raw) == Some(r.peak_tile))
            .or(self.errors.first());
        let mut f = String::new();
        if let Some(s) = &r.shortfall {
            // A late failure: the cause, then the tile's parts.
            match (&self.headline, worst) {
                (Some(h), _) => f.push_str(h),
                (None, Some(e)) => {
                    let _ = write!(f, "{e}");
                }
                (None, None) => {}
            }
            let _ = write!(
                f,
                "\n  {} of tile {}: {} bytes needed, {} free; the tile holds:",
                s.what, s.tile, s.needed_bytes, s.free_bytes
            );
            for p in &s.parts {
                let _ = write!(f, "\n  {:>9} B  {}", p.bytes, p.name);
            }
        } else {
            let _ = write!(
                f,
                "{} tile(s) do not fit although the planner's estimate accepted the plan; tile {} is the worst",
                self.errors.len(),
                r.peak_tile
            );
            if let Some(e) = worst {
                let _ = write!(f, ":\n{e}");
            }
            // `OverBudget` lists its largest live buffers; otherwise list
            // the tile's peak here.
            if !matches!(worst, Some(PlaceError::OverBudget { .. })) {
                let _ = write!(
                    f,
                    "\n  tile {}'s peak: {} bytes at \"{}\" (step {}), of which the largest:",
                    r.peak_tile,
                    r.effective_bytes(),
                    r.peak_moment,
                    r.peak_moment_index
                );
                for a in r.live.iter().take(LISTED) {
                    let _ = write!(f, "\n  {:>9} B  {}", a.bytes, a.name);
                }
                if r.live.len() > LISTED {
                    let _ = write!(f, "\n  … {} more", r.live.len() - LISTED);
                }
            }
        }
        let reports = reports_line(self.paths.get(..1).unwrap_or_default());
        if !reports.is_empty() {
            let _ = write!(f, "\n{reports}");
        }
        f
    }
}

/// A logical tile as the reports number it (their JSON keeps raw ids).
fn raw(tile: LogicalTile) -> u32 {
    u32::from(tile.get())
}

/// The logical tile a placement error names (all variants name one).
pub fn error_tile(e: &PlaceError) -> Option<LogicalTile> {
    Some(match e {
        PlaceError::NoRoom { tile, .. }
        | PlaceError::BadAlignment { tile, .. }
        | PlaceError::SizeOverflow { tile, .. }
        | PlaceError::BadLifetime { tile, .. }
        | PlaceError::DuplicateBuffer { tile, .. }
        | PlaceError::UnknownConflictBuffer { tile, .. }
        | PlaceError::SelfConflict { tile, .. }
        | PlaceError::OverBudget { tile, .. }
        | PlaceError::CodeDoesNotFit { tile, .. }
        | PlaceError::ReservedOutsideSram { tile, .. } => *tile,
    })
}

/// Is `e` a memory rejection (rather than a malformed request)?
fn is_memory(e: &PlaceError) -> bool {
    matches!(e, PlaceError::OverBudget { .. } | PlaceError::NoRoom { .. })
}

/// One tile's request as a memory map: its reserved ranges at their
/// blocked spans (live throughout) and every buffer's span over its steps.
pub fn request_map(schedule: &TileSchedule, request: &PlacementRequest) -> TileMemoryMap {
    let reserved = request.reserved.iter().map(|r| {
        let b = blocked_span(r);
        static_row(
            schedule,
            &r.name,
            reserved_class(r.kind),
            None,
            u64::from(b.end.saturating_sub(b.start)),
        )
    });
    let buffers = request.buffers.iter().map(|b| {
        buffer_row(
            schedule,
            b.key,
            &b.name,
            None,
            u64::from(b.span().unwrap_or(u32::MAX)),
            (b.first_step, b.last_step),
        )
    });
    TileMemoryMap {
        tile: raw(request.tile),
        allocations: reserved.chain(buffers).collect(),
    }
}

/// The placements of every tile, or — when any tile's placement is a
/// memory rejection — a [`PlacementRejected`] error with its report. Other
/// placement errors are returned as they are (the first one).
pub fn placements_or_rejection(
    schedule: &TileSchedule,
    requests: &[PlacementRequest],
    placed: Vec<Result<TilePlacement, PlaceError>>,
) -> anyhow::Result<Vec<TilePlacement>> {
    let mut ok = Vec::with_capacity(placed.len());
    let mut errors = Vec::new();
    for p in placed {
        match p {
            Ok(p) => ok.push(p),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        return Ok(ok);
    }
    if let Some(other) = errors.iter().position(|e| !is_memory(e)) {
        return Err(anyhow::Error::new(errors.swap_remove(other)));
    }
    Err(anyhow::Error::new(rejection(schedule, requests, errors)))
}

/// The budget of a placement report: the support ranges are allocations
/// of each tile there.
fn placement_budget() -> MemoryBudget {
    MemoryBudget {
        tile_bytes: u64::from(TILE_MEMORY_BUDGET),
        support_reserve: 0,
        ..MemoryBudget::IPU21
    }
}

/// The report of `maps` (the reported tile first), over every schedule
/// step.
fn report_of(
    schedule: &TileSchedule,
    operation: Option<&str>,
    tiles: Vec<TileMemoryMap>,
    fallback_tile: u32,
) -> (MemoryRejection, u32) {
    let moments = schedule_moments(schedule);
    let worst = tiles.first().cloned().unwrap_or(TileMemoryMap {
        tile: fallback_tile,
        allocations: Vec::new(),
    });
    let peak = worst.peak(moments.len());
    let op_index = step_op(schedule, peak.moment).unwrap_or(0);
    let at = moments
        .get(peak.moment as usize)
        .map_or("placement", String::as_str);
    let mut report = MemoryRejection::at_peak(
        operation.unwrap_or(at),
        &worst,
        &moments,
        placement_budget(),
    );
    report.tiles = tiles;
    (report, op_index)
}

/// Builds the report of placement `errors` from the tiles' `requests`.
pub fn rejection(
    schedule: &TileSchedule,
    requests: &[PlacementRequest],
    errors: Vec<PlaceError>,
) -> PlacementRejected {
    let moments = schedule.step_count.max(1) as usize;
    let refused: std::collections::BTreeSet<LogicalTile> =
        errors.iter().filter_map(error_tile).collect();
    // Every tile's map and peak; the refused tiles first (all of them, up
    // to REPORT_REFUSED_TILES), then the most loaded others, each group by
    // peak.
    let (mut refused_maps, mut others): (Vec<(u64, TileMemoryMap)>, Vec<_>) = requests
        .iter()
        .map(|r| {
            let m = request_map(schedule, r);
            (m.peak(moments).live_bytes, m)
        })
        .partition(|(_, m)| refused.iter().any(|t| raw(*t) == m.tile));
    let by_peak = |a: &(u64, TileMemoryMap), b: &(u64, TileMemoryMap)| {
        b.0.cmp(&a.0).then(a.1.tile.cmp(&b.1.tile))
    };
    refused_maps.sort_by(by_peak);
    others.sort_by(by_peak);
    refused_maps.truncate(REPORT_REFUSED_TILES);
    others.truncate(REPORT_OTHER_TILES);
    let tiles: Vec<TileMemoryMap> = refused_maps
        .into_iter()
        .chain(others)
        .map(|(_, m)| m)
        .collect();
    let fallback = errors.first().and_then(error_tile).map_or(0, raw);
    let (mut report, op_index) = report_of(schedule, None, tiles, fallback);
    report.tiles_over_budget = Some(refused.len() as u32);
    report.refused_tiles = refused.iter().map(|t| raw(*t)).collect();
    PlacementRejected {
        errors,
        report: Box::new(report),
        op_index,
        paths: Vec::new(),
        headline: None,
    }
}

/// The parts of a linked tile image (the pipeline's, re-exported here
/// beside the report that draws them).
pub use ipuc_core::pipeline::ImageParts;

/// What a tile's patch data is (Repeat tables, sharing lists).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PatchDataParts {
    pub repeat_bytes: u32,
    pub sharing_bytes: u32,
}

/// The linked image's parts in load order: name, class and bytes.
fn image_parts(parts: &ImageParts) -> [(&'static str, AllocationClass, u32); 3] {
    [
        (
            "runtime and kernel stubs",
            AllocationClass::Code,
            parts.runtime,
        ),
        (
            "supervisor program and argument blocks",
            AllocationClass::Code,
            parts.program,
        ),
        ("exchange rows", AllocationClass::ExchangeTable, parts.rows),
    ]
}

/// A late failure: the linked image of `placement`'s tile (`parts`) does
/// not fit below its code limit (`error`, a `CodeDoesNotFit`). The report's
/// reported tile shows the image at its real addresses (overlapping the
/// data it runs into) instead of the estimate's reservation; the picker
/// offers the most loaded other tiles of `placements` after it.
pub fn code_rejection(
    schedule: &TileSchedule,
    placements: &[TilePlacement],
    placement: &TilePlacement,
    parts: ImageParts,
    error: PlaceError,
) -> PlacementRejected {
    let mut map = tile_map(schedule, placement);
    // The image replaces the reservation the estimate made for it.
    map.allocations.retain(|a| a.class != AllocationClass::Code);
    let mut at = APPLICATION_LOAD_BASE;
    let mut rows = Vec::new();
    for (name, class, bytes) in image_parts(&parts) {
        rows.push(static_row(
            schedule,
            name,
            class,
            Some(at),
            u64::from(bytes),
        ));
        at = at.saturating_add(bytes);
    }
    map.allocations.splice(0..0, rows);
    let (needed, free, limit) = match &error {
        PlaceError::CodeDoesNotFit {
            image_bytes,
            free_bytes,
            limit,
            ..
        } => (*image_bytes, *free_bytes, Some(*limit)),
        _ => (at - APPLICATION_LOAD_BASE, 0, None),
    };
    let mut held: Vec<_> = image_parts(&parts)
        .into_iter()
        .map(|(name, class, bytes)| live(name, class, bytes))
        .collect();
    if parts.patch_data > 0 {
        held.push(live(
            "patch data (at the top of the code elements)",
            AllocationClass::ExchangeTable,
            parts.patch_data,
        ));
    }
    held.extend(data_parts(schedule, placement));
    let shortfall = Shortfall {
        what: "code image (code, argument blocks and exchange rows)".into(),
        tile: raw(placement.tile),
        needed_bytes: u64::from(needed),
        free_bytes: u64::from(free),
        limit,
        parts: held,
    };
    late(
        schedule,
        placements,
        map,
        shortfall,
        &format!("linking: tile {}'s code image", placement.tile.get()),
        error,
        None,
    )
}

/// A late failure: `tile`'s patch data (`parts`) found no room or went over
/// the budget (`error`, from `TilePlacement::add_constant` or the tile's
/// own placement). `placement` is the tile's placement when it has one;
/// `headline` the failing stage's message (it includes `error`).
pub fn patch_data_rejection(
    schedule: &TileSchedule,
    placements: &[TilePlacement],
    tile: LogicalTile,
    placement: Option<&TilePlacement>,
    parts: PatchDataParts,
    error: PlaceError,
    headline: String,
) -> PlacementRejected {
    let needed = parts.repeat_bytes.saturating_add(parts.sharing_bytes);
    let free = match &error {
        PlaceError::NoRoom { largest_free, .. } => *largest_free,
        PlaceError::OverBudget {
            charged, budget, ..
        } => budget.saturating_sub(charged.saturating_sub(needed)),
        _ => 0,
    };
    let mut map = placement.map_or(
        TileMemoryMap {
            tile: raw(tile),
            allocations: Vec::new(),
        },
        |p| tile_map(schedule, p),
    );
    map.allocations.push(static_row(
        schedule,
        "patch data (Repeat tables, sharing lists) — does not fit",
        AllocationClass::ExchangeTable,
        None,
        u64::from(needed),
    ));
    let mut held = vec![
        live(
            "patch data: Repeat tables",
            AllocationClass::ExchangeTable,
            parts.repeat_bytes,
        ),
        live(
            "patch data: sharing lists",
            AllocationClass::ExchangeTable,
            parts.sharing_bytes,
        ),
    ];
    if let Some(p) = placement {
        held.extend(p.reserved.iter().map(|r| LiveAllocation {
            name: format!("{} (reserved)", r.name),
            class: reserved_class(r.kind),
            bytes: u64::from(r.blocked.end - r.blocked.start),
        }));
        held.extend(data_parts(schedule, p));
    }
    let shortfall = Shortfall {
        what: "patch data (Repeat tables, sharing lists)".into(),
        tile: raw(tile),
        needed_bytes: u64::from(needed),
        free_bytes: u64::from(free),
        limit: None,
        parts: held,
    };
    late(
        schedule,
        placements,
        map,
        shortfall,
        &format!("patch-data placement: tile {}'s patch data", tile.get()),
        error,
        Some(headline),
    )
}

fn live(name: &str, class: AllocationClass, bytes: u32) -> LiveAllocation {
    LiveAllocation {
        name: name.into(),
        class,
        bytes: u64::from(bytes),
    }
}

/// A placed tile's data by region and class: the SRAM its buffers and
/// constant blocks occupy at some step (the union of their address ranges,
/// so reused addresses count once), region 0 first — what the code image
/// and patch data compete with.
fn data_parts(schedule: &TileSchedule, p: &TilePlacement) -> Vec<LiveAllocation> {
    use std::collections::BTreeMap;
    let mut by: BTreeMap<(bool, AllocationClass), Vec<std::ops::Range<u32>>> = BTreeMap::new();
    let spans = p
        .allocations
        .iter()
        .map(|a| (buffer_class(schedule, a.key), a.range.clone()))
        .chain(
            p.constants
                .iter()
                .map(|c| (AllocationClass::ExchangeTable, c.range.clone())),
        );
    for (class, r) in spans.filter(|(_, r)| r.end > r.start) {
        by.entry((r.start >= EXECUTABLE_MEMORY_LIMIT, class))
            .or_default()
            .push(r);
    }
    by.into_iter()
        .map(|((high, class), mut ranges)| {
            ranges.sort_by_key(|r| (r.start, r.end));
            let lowest = ranges.first().map_or(0, |r| r.start);
            let count = ranges.len();
            let (mut bytes, mut end) = (0u64, 0u32);
            for r in ranges {
                let start = r.start.max(end);
                if r.end > start {
                    bytes += u64::from(r.end - start);
                }
                end = end.max(r.end);
            }
            let what = if class == AllocationClass::ExchangeTable {
                "patch data"
            } else {
                class.name()
            };
            LiveAllocation {
                name: format!(
                    "region {} {what} data: {count} block(s) from {lowest:#x} (addresses used at any step)",
                    u8::from(high)
                ),
                class,
                bytes,
            }
        })
        .collect()
}

/// The report of a late failure on `map`'s tile: that tile first, then the
/// most loaded other tiles of `placements`.
fn late(
    schedule: &TileSchedule,
    placements: &[TilePlacement],
    map: TileMemoryMap,
    shortfall: Shortfall,
    operation: &str,
    error: PlaceError,
    headline: Option<String>,
) -> PlacementRejected {
    let moments = schedule.step_count.max(1) as usize;
    let mut others: Vec<(u64, TileMemoryMap)> = placements
        .iter()
        .filter(|p| raw(p.tile) != map.tile)
        .map(|p| {
            let m = tile_map(schedule, p);
            (m.peak(moments).live_bytes, m)
        })
        .collect();
    others.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.tile.cmp(&b.1.tile)));
    let tile = map.tile;
    let tiles: Vec<TileMemoryMap> = std::iter::once(map)
        .chain(others.into_iter().map(|(_, m)| m).take(REPORT_OTHER_TILES))
        .collect();
    let (mut report, op_index) = report_of(schedule, Some(operation), tiles, tile);
    report.tiles_over_budget = None;
    report.refused_tiles = vec![tile];
    report.shortfall = Some(shortfall);
    PlacementRejected {
        errors: vec![error],
        report: Box::new(report),
        op_index,
        paths: Vec::new(),
        headline,
    }
}

/// The op (planning order) step `step` came from.
fn step_op(schedule: &TileSchedule, step: u32) -> Option<u32> {
    use ipuc_core::lower::schedule::Step;
    let mut op = None;
    schedule.visit(|s, _| {
        let (index, origin) = match s {
            Step::Compute(c) => (c.index.0, &c.origin),
            Step::Exchange(e) => (e.index.0, &e.origin),
            Step::Repeat(r) => (r.index.0, &r.origin),
        };
        if index == step {
            op = Some(origin.op);
        }
    });
    op
}
