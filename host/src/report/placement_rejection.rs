//! Placement-stage memory rejections: the planner's estimate accepted the
//! plan but exact SRAM placement of some tile went over the budget
//! (`PlaceError::OverBudget`) or found no free range for a buffer
//! (`PlaceError::NoRoom`). [`PlacementRejected`] carries a
//! [`MemoryRejection`] built from the placement requests (every schedule
//! step a moment, the support ranges and buffer spans as placement charges
//! them), so the CLI writes the same interactive report as for a planner
//! rejection.

use std::path::PathBuf;

use ipuc_core::ipu21::sram::TILE_MEMORY_BUDGET;
use ipuc_core::lower::TileSchedule;
use ipuc_core::place::{blocked_span, PlaceError, PlacementRequest, TilePlacement};

use super::memory::{
    Allocation, AllocationClass, Liveness, MemoryBudget, MemoryRejection, TileMemoryMap,
};
use super::placement_map::{reserved_class, role_class, schedule_moments};

/// Tiles a placement report's picker offers at most (the refused tiles
/// first, then the most loaded others).
pub const REPORT_TILES: usize = 32;

/// Allocations listed in the error message.
const LISTED: usize = 12;

/// Placement refused at least one tile although the planner accepted the
/// plan (typed, so the CLI can write the report and name it).
#[derive(Debug)]
pub struct PlacementRejected {
    /// Every tile placement refused, in tile order.
    pub errors: Vec<PlaceError>,
    /// The report: the worst refused tile, the picker's tiles.
    pub report: Box<MemoryRejection>,
    /// The op of the step at that tile's peak (`rejected-op<N>-…`).
    pub op_index: u32,
    /// The reports written for it (set by the CLI).
    pub paths: Vec<PathBuf>,
}

impl std::fmt::Display for PlacementRejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.report;
        let worst = self
            .errors
            .iter()
            .find(|e| error_tile(e) == Some(r.peak_tile))
            .or(self.errors.first());
        write!(
            f,
            "{} tile(s) do not fit although the planner's estimate accepted the plan; tile {} is the worst",
            self.errors.len(),
            r.peak_tile
        )?;
        if let Some(e) = worst {
            write!(f, ":\n{e}")?;
        }
        // `OverBudget` lists its largest live buffers; otherwise list the
        // tile's peak here.
        if !matches!(worst, Some(PlaceError::OverBudget { .. })) {
            write!(
                f,
                "\n  tile {}'s peak: {} bytes at \"{}\" (step {}), of which the largest:",
                r.peak_tile,
                r.effective_bytes(),
                r.peak_moment,
                r.peak_moment_index
            )?;
            for a in r.live.iter().take(LISTED) {
                write!(f, "\n  {:>9} B  {}", a.bytes, a.name)?;
            }
            if r.live.len() > LISTED {
                write!(f, "\n  … {} more", r.live.len() - LISTED)?;
            }
        }
        if let Some(first) = self.paths.first() {
            write!(
                f,
                "\n  report: {} (+ .json: tile picker, live bytes against the budget, allocations at the peak)",
                first.display()
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for PlacementRejected {}

/// The logical tile a placement error names (all variants name one).
pub fn error_tile(e: &PlaceError) -> Option<u32> {
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
    let last = schedule.step_count.max(1) - 1;
    let reserved = request.reserved.iter().map(|r| {
        let b = blocked_span(r);
        Allocation {
            name: r.name.clone(),
            class: reserved_class(r.kind),
            address: None,
            size: u64::from(b.end.saturating_sub(b.start)),
            live: Liveness { first: 0, last },
        }
    });
    let buffers = request.buffers.iter().map(|b| {
        let class = schedule
            .buffers
            .get(b.key.0 as usize)
            .filter(|s| s.id == b.key)
            .map_or(AllocationClass::Activation, |s| role_class(&s.role));
        Allocation {
            name: b.name.clone(),
            class,
            address: None,
            size: u64::from(b.span().unwrap_or(u32::MAX)),
            live: Liveness {
                first: b.first_step.min(last),
                last: b.last_step.min(last).max(b.first_step.min(last)),
            },
        }
    });
    TileMemoryMap {
        tile: request.tile,
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

/// Builds the report of placement `errors` from the tiles' `requests`.
pub fn rejection(
    schedule: &TileSchedule,
    requests: &[PlacementRequest],
    errors: Vec<PlaceError>,
) -> PlacementRejected {
    let moments = schedule_moments(schedule);
    let refused: std::collections::BTreeSet<u32> = errors.iter().filter_map(error_tile).collect();
    // Every tile's map and peak; refused tiles first, each group by peak.
    let mut maps: Vec<(bool, u64, TileMemoryMap)> = requests
        .iter()
        .map(|r| {
            let m = request_map(schedule, r);
            let peak = m.peak(moments.len()).live_bytes;
            (refused.contains(&r.tile), peak, m)
        })
        .collect();
    maps.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then(a.2.tile.cmp(&b.2.tile))
    });
    maps.truncate(REPORT_TILES);
    let tiles: Vec<TileMemoryMap> = maps.into_iter().map(|(_, _, m)| m).collect();
    let budget = MemoryBudget {
        tile_bytes: u64::from(TILE_MEMORY_BUDGET),
        // The support ranges are allocations of each tile here.
        support_reserve: 0,
        ..MemoryBudget::IPU21
    };
    let worst = tiles.first().cloned().unwrap_or(TileMemoryMap {
        tile: errors.first().and_then(error_tile).unwrap_or(0),
        allocations: Vec::new(),
    });
    let peak = worst.peak(moments.len());
    let op_index = step_op(schedule, peak.moment).unwrap_or(0);
    let mut report = MemoryRejection::at_peak(
        moments
            .get(peak.moment as usize)
            .map_or("placement", String::as_str),
        &worst,
        &moments,
        budget,
    );
    report.tiles = tiles;
    report.tiles_over_budget = Some(refused.len() as u32);
    PlacementRejected {
        errors,
        report: Box::new(report),
        op_index,
        paths: Vec::new(),
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
