//! A multi-tile device: tiles run in parallel (rayon) between global syncs;
//! the device resolves each superstep and hands it to an exchange fabric.
//!
//! Bulk-synchronous execution: every tile runs until its supervisor halts or
//! parks at a global sync (`sync 3` INTERNAL, `sync 1` ANS for tiles sitting
//! out an exchange, `sync 0` RECV, or an external/host zone). When all live
//! tiles are parked, they are released together at the latest arrival plus
//! the sync latency ([`INTERNAL_SYNC_CYCLES`] unless set with
//! [`Device::with_sync_cycles`]); then the [`ExchangeFabric`] runs the superstep's
//! exchange (by convention the row each supervisor calls right after the
//! sync), moving words between tiles and advancing each supervisor past its
//! row. With [`NoExchange`] the supervisors simply continue.

use ipuc_target::ipu21::topology::PhysicalTile;
use rayon::prelude::*;

use super::cycle::INTERNAL_SYNC_CYCLES;
use super::fault::{running_list, FaultKind, SimFault};
use super::tile::{StopReason, Tile};

/// Default simulated cycles a tile runs before the device looks up again
/// within a superstep ([`Device::with_slice_cycles`]), so progress reports (and their heartbeat) keep coming while
/// one superstep runs long — a runaway loop on its way to the cycle budget.
/// Far above any superstep of a compiled model, so normal runs never pause.
pub const SLICE_CYCLES: u64 = 1 << 26;

/// The slice a run starts with: a long superstep is cut into slices whose
/// length follows the wall time each takes (doubled while one takes less
/// than a quarter of [`SLICE_WALL`], halved while it takes more, within
/// this and the device's slice), so a progress report — and the host's
/// heartbeat — comes within about a second however many tiles spin: a
/// fixed 2^26 cycles on 1472 busy tiles is minutes of wall time.
pub const FIRST_SLICE_CYCLES: u64 = 1 << 14;

/// The wall time one slice aims at.
pub const SLICE_WALL: std::time::Duration = std::time::Duration::from_millis(500);

/// Stalled tiles named in a [`DeviceError::NoProgress`] message.
const STALLED_LISTED: usize = 8;

fn no_progress_message(stalled: &[SimFault]) -> String {
    let mut tiles: Vec<String> = stalled
        .iter()
        .take(STALLED_LISTED)
        .map(|f| match &f.kind {
            FaultKind::NoProgress { running, .. } => {
                format!("tile {} ({})", f.tile.get(), running_list(running))
            }
            _ => format!("tile {} ({} at {:#x})", f.tile.get(), f.context, f.pc),
        })
        .collect();
    if stalled.len() > STALLED_LISTED {
        tiles.push(format!("and {} more", stalled.len() - STALLED_LISTED));
    }
    let instructions = stalled.iter().find_map(|f| match f.kind {
        FaultKind::NoProgress { instructions, .. } => Some(instructions),
        _ => None,
    });
    format!(
        "no progress on {} tile(s): {}; each came back to the same state (registers, PCs, CSRs; nothing stored) within {} instructions, so the program loops forever there",
        stalled.len(),
        tiles.join(", "),
        instructions.unwrap_or(0)
    )
}

/// The error for the faults of one round, in device order: every stalled
/// tile when all of them stalled, else the first fault.
fn faults_error(mut faults: Vec<SimFault>) -> DeviceError {
    if faults
        .iter()
        .all(|f| matches!(f.kind, FaultKind::NoProgress { .. }))
    {
        DeviceError::NoProgress { stalled: faults }
    } else {
        DeviceError::Fault(faults.swap_remove(0))
    }
}

/// One resolved global sync, as the exchange fabric sees it.
pub struct Superstep<'a> {
    /// 0 for the first global sync of the run.
    pub index: u64,
    /// Cycle at which every participating supervisor was released.
    pub release_cycle: u64,
    /// Every tile of the device, in device order; `zones[i]` is the sync zone
    /// tile `i` arrived with (`None` if it had already halted).
    pub tiles: &'a mut [Tile],
    pub zones: &'a [Option<u8>],
    /// Words the fabric moved in this superstep (the fabric adds to it).
    pub words_moved: u64,
}

/// The exchange hook: called once per global sync after release.
pub trait ExchangeFabric: Send + Sync {
    /// Resolve the exchange of this superstep. Errors are reported as faults
    /// of the tile concerned (e.g. [`super::FaultKind::Exchange`]).
    fn superstep(&self, step: &mut Superstep<'_>) -> Result<(), SimFault>;
}

/// A fabric that moves nothing: supervisors continue after the sync.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoExchange;

impl ExchangeFabric for NoExchange {
    fn superstep(&self, _step: &mut Superstep<'_>) -> Result<(), SimFault> {
        Ok(())
    }
}

/// A device run that could not finish.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// A tile faulted (lowest device index first when several did).
    #[error("{0}")]
    Fault(SimFault),
    /// Some tiles halted while others wait at a global sync: the sync can
    /// never complete.
    #[error(
        "deadlock: {} tile(s) halted (first {:?}) while {} wait at a global sync (first {:?})",
        halted.len(),
        halted.first().map(|t| t.get()),
        waiting.len(),
        waiting.first().map(|&(t, z)| (t.get(), z))
    )]
    Deadlock {
        halted: Vec<PhysicalTile>,
        waiting: Vec<(PhysicalTile, u8)>,
    },
    /// Every faulting tile stopped making progress ([`FaultKind::NoProgress`]:
    /// its state repeated with nothing stored), in device order: the
    /// program loops forever on these tiles.
    #[error("{}", no_progress_message(stalled))]
    NoProgress { stalled: Vec<SimFault> },
    /// Tiles wait at global syncs of different zones (§1.7), which the
    /// hardware would not release together; only `sync 1` (ANS, tiles
    /// sitting out an exchange) may meet `sync 3` (INTERNAL).
    #[error(
        "global sync {superstep}: tile {} waits in sync zone {} (pc {:#x}) but tile {} in zone {} (pc {:#x}); the tiles would never be released together",
        first.0.get(), first.1, first.2, other.0.get(), other.1, other.2
    )]
    SyncZoneMismatch {
        /// Global sync (superstep) index.
        superstep: u64,
        /// First tile (device order), its zone and the address of its `sync`.
        first: (PhysicalTile, u8, u32),
        /// A tile waiting in another zone, its zone and `sync` address.
        other: (PhysicalTile, u8, u32),
    },
}

/// Why [`Device::restart`] refused to re-enter the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestartError {
    /// Not one entry point per tile.
    #[error("{entries} entry points for {tiles} tiles")]
    EntryCount { entries: usize, tiles: usize },
    /// A tile is still running.
    #[error("tile {} has not halted", .tile.get())]
    NotHalted { tile: PhysicalTile },
}

impl From<SimFault> for DeviceError {
    fn from(f: SimFault) -> Self {
        DeviceError::Fault(f)
    }
}

/// Zone ANS (`sync 1`): tiles sitting out an exchange (§1.7).
const ZONE_ANS: u8 = 1;
/// Zone INTERNAL (`sync 3`): all tiles of the IPU (§1.7).
const ZONE_INTERNAL: u8 = 3;

/// Every parked tile waits in one zone, or in ANS/INTERNAL together.
fn check_zones(superstep: u64, tiles: &[Tile], zones: &[Option<u8>]) -> Result<(), DeviceError> {
    let key = |z: u8| if z == ZONE_ANS { ZONE_INTERNAL } else { z };
    let mut first: Option<(PhysicalTile, u8, u32)> = None;
    for (t, z) in tiles.iter().zip(zones) {
        let Some(z) = *z else { continue };
        // The supervisor has moved past its `sync` (a 4-byte instruction).
        let here = (t.id(), z, t.supervisor().pc.wrapping_sub(4));
        match first {
            None => first = Some(here),
            Some(f) if key(f.1) != key(z) => {
                return Err(DeviceError::SyncZoneMismatch {
                    superstep,
                    first: f,
                    other: here,
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Summary of a finished run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRun {
    /// Latest tile cycle at halt.
    pub cycles: u64,
    /// Global syncs resolved.
    pub supersteps: u64,
    /// Words the exchange fabric moved (as it reported them).
    pub words_moved: u64,
}

/// Tiles plus the exchange fabric that connects them.
pub struct Device {
    tiles: Vec<Tile>,
    fabric: Box<dyn ExchangeFabric>,
    supersteps: u64,
    words_moved: u64,
    progress: Option<Progress>,
    sync_cycles: u64,
    slice_cycles: u64,
}

/// Called with the run's [`RunStatus`] at most once per `every` of wall time
/// (checked between supersteps, and every [`SLICE_CYCLES`] of a tile within
/// a long one), so long simulations show they are moving.
pub struct Progress {
    pub every: std::time::Duration,
    pub report: Box<dyn FnMut(&RunStatus) + Send>,
}

/// How far a [`Device::run`] has got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStatus {
    /// Global syncs resolved so far.
    pub supersteps: u64,
    /// The furthest tile clock (simulated cycles).
    pub cycles: u64,
    /// Step markers passed, summed over tiles ([`Tile::marks`]).
    pub steps: u64,
}

impl core::fmt::Debug for Device {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Device")
            .field("tiles", &self.tiles.len())
            .field("supersteps", &self.supersteps)
            .finish()
    }
}

impl Device {
    /// A device over `tiles` with no exchange fabric.
    pub fn new(tiles: Vec<Tile>) -> Self {
        Self::with_fabric(tiles, Box::new(NoExchange))
    }

    pub fn with_fabric(tiles: Vec<Tile>, fabric: Box<dyn ExchangeFabric>) -> Self {
        Self {
            tiles,
            fabric,
            supersteps: 0,
            words_moved: 0,
            progress: None,
            sync_cycles: INTERNAL_SYNC_CYCLES,
            slice_cycles: SLICE_CYCLES,
        }
    }

    /// How many simulated cycles a tile runs before the device looks up
    /// (progress reports) within a superstep; at least 1. Slicing changes
    /// nothing in the simulation, only how often it is interrupted.
    pub fn with_slice_cycles(mut self, cycles: u64) -> Self {
        self.slice_cycles = cycles.max(1);
        self
    }

    /// Global sync latency in cycles (modelled; default
    /// [`INTERNAL_SYNC_CYCLES`]).
    pub fn with_sync_cycles(mut self, cycles: u64) -> Self {
        self.sync_cycles = cycles;
        self
    }

    /// Report progress while [`Device::run`] runs.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Replace the progress reporter (e.g. before each run of a resident
    /// program).
    pub fn set_progress(&mut self, progress: Progress) {
        self.progress = Some(progress);
    }

    /// Remove the progress reporter (dropping its callback).
    pub fn clear_progress(&mut self) {
        self.progress = None;
    }

    fn status(&self) -> RunStatus {
        RunStatus {
            supersteps: self.supersteps,
            cycles: self.tiles.iter().map(Tile::cycle).max().unwrap_or(0),
            steps: self.tiles.iter().map(|t| t.marks().len() as u64).sum(),
        }
    }

    pub fn tiles(&self) -> &[Tile] {
        &self.tiles
    }

    pub fn tiles_mut(&mut self) -> &mut [Tile] {
        &mut self.tiles
    }

    pub fn into_tiles(self) -> Vec<Tile> {
        self.tiles
    }

    /// Re-enter the program on every (halted) tile: tile `i` restarts at
    /// `entries[i]` with its SRAM untouched and its clock at zero (see
    /// [`Tile::restart`]); the superstep count starts again too. Errors name
    /// the first tile that is still running or has no entry.
    pub fn restart(&mut self, entries: &[u32]) -> Result<(), RestartError> {
        if entries.len() != self.tiles.len() {
            return Err(RestartError::EntryCount {
                entries: entries.len(),
                tiles: self.tiles.len(),
            });
        }
        if let Some(t) = self.tiles.iter().find(|t| !t.is_halted()) {
            return Err(RestartError::NotHalted { tile: t.id() });
        }
        for (t, &entry) in self.tiles.iter_mut().zip(entries) {
            t.restart(entry);
        }
        self.supersteps = 0;
        self.words_moved = 0;
        Ok(())
    }

    /// Runs every live tile for one slice of cycles (in parallel): `None`
    /// when some tile paused inside the superstep, else each tile's sync
    /// zone (`None`: halted).
    fn run_slice(
        &mut self,
        cycle_limit: u64,
        slice: u64,
    ) -> Result<Option<Vec<Option<u8>>>, DeviceError> {
        let results: Vec<Result<Option<StopReason>, SimFault>> = self
            .tiles
            .par_iter_mut()
            .map(|t| {
                if t.is_halted() {
                    Ok(None)
                } else {
                    let pause = t.cycle().saturating_add(slice);
                    t.run_until(cycle_limit, pause).map(Some)
                }
            })
            .collect();
        let mut zones = Vec::with_capacity(results.len());
        let mut faults = Vec::new();
        let mut paused = false;
        for r in results {
            match r {
                Err(f) => faults.push(f),
                Ok(None | Some(StopReason::Halted)) => zones.push(None),
                Ok(Some(StopReason::Sync { zone })) => zones.push(Some(zone)),
                Ok(Some(StopReason::Paused)) => {
                    paused = true;
                    zones.push(None);
                }
            }
        }
        if !faults.is_empty() {
            return Err(faults_error(faults));
        }
        Ok((!paused).then_some(zones))
    }

    /// Run every tile until all halt. `cycle_limit` bounds every tile's clock
    /// (absolute cycles); passing it is a fault on the tile concerned.
    pub fn run(&mut self, cycle_limit: u64) -> Result<DeviceRun, DeviceError> {
        let mut last_report = std::time::Instant::now();
        let mut slice = FIRST_SLICE_CYCLES.min(self.slice_cycles);
        loop {
            let due = self
                .progress
                .as_ref()
                .is_some_and(|p| last_report.elapsed() >= p.every);
            if due {
                last_report = std::time::Instant::now();
                let status = self.status();
                if let Some(p) = &mut self.progress {
                    (p.report)(&status);
                }
            }
            let started = std::time::Instant::now();
            let Some(zones) = self.run_slice(cycle_limit, slice)? else {
                // Some tile is still in this superstep: report, then go on,
                // with a slice sized to the wall time this one took.
                let took = started.elapsed();
                if took > SLICE_WALL {
                    slice = (slice / 2).max(1);
                } else if took < SLICE_WALL / 4 {
                    slice = slice.saturating_mul(2).min(self.slice_cycles);
                }
                continue;
            };
            let waiting: Vec<(PhysicalTile, u8)> = self
                .tiles
                .iter()
                .zip(&zones)
                .filter_map(|(t, z)| z.map(|z| (t.id(), z)))
                .collect();
            if waiting.is_empty() {
                let cycles = self.tiles.iter().map(Tile::cycle).max().unwrap_or(0);
                return Ok(DeviceRun {
                    cycles,
                    supersteps: self.supersteps,
                    words_moved: self.words_moved,
                });
            }
            if waiting.len() != self.tiles.len() {
                let halted = self
                    .tiles
                    .iter()
                    .zip(&zones)
                    .filter(|(_, z)| z.is_none())
                    .map(|(t, _)| t.id())
                    .collect();
                return Err(DeviceError::Deadlock { halted, waiting });
            }
            check_zones(self.supersteps, &self.tiles, &zones)?;
            let release =
                self.tiles.iter().map(Tile::sync_arrival).max().unwrap_or(0) + self.sync_cycles;
            for t in &mut self.tiles {
                t.release_sync(release);
            }
            let mut step = Superstep {
                index: self.supersteps,
                release_cycle: release,
                tiles: &mut self.tiles,
                zones: &zones,
                words_moved: 0,
            };
            self.fabric.superstep(&mut step)?;
            self.words_moved += step.words_moved;
            self.supersteps += 1;
        }
    }
}
