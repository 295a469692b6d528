//! Turning a simulated run's per-tile traces into the report's [`Profile`]:
//! one sample per executed step per tile, Repeat iterations numbered, and an
//! exchange step split into its patch, sync-wait and exchange parts.
//!
//! A step starts when the supervisor issues the step's first instruction
//! (the marker addresses from the package's step table) and ends where the
//! next step starts (the last one at the tile's halt).

use std::collections::BTreeMap;

use ipuc_core::plan::cost::call_cycles;
use ipuc_target::ipu21::kernel_abi::ARG_BLOCK_HEADER_WORDS;
use ipuc_target::ipu21::sram::CLOCK_HZ;
use ipuc_target::kernel::{decode, decode_header};
use ipuc_target::package::{Package, StepInfo, TileImage, TileStepTable};

use crate::device::simulated::{RunProfile, TileTrace};
use crate::report::{CycleSample, KernelKindTiming, Profile, ProfileStep, StepKind, TileSamples};
use ipuc_sim::SampleKind;

/// Per kernel kind over all tiles: calls, planner estimate, the cycles the
/// simulator's kernel timing model charged. The estimate is the planner's
/// cost model (`plan::cost::call_cycles`) of the argument block each call
/// read, as `package` holds it: the report joins the two, the device never
/// calls the planner.
pub fn kernel_kind_timing(package: &Package, run: &RunProfile) -> Vec<KernelKindTiming> {
    let mut by_kind: BTreeMap<&str, KernelKindTiming> = BTreeMap::new();
    let mut estimates: BTreeMap<(u32, u32), Option<u64>> = BTreeMap::new();
    for trace in &run.tiles {
        let tile = u32::from(trace.tile.get());
        let image = package.tiles.iter().find(|t| t.physical_tile == tile);
        for s in &trace.samples {
            let SampleKind::Codelet {
                name, arg_block, ..
            } = &s.kind
            else {
                continue;
            };
            let planned = arg_block.and_then(|addr| {
                *estimates
                    .entry((tile, addr))
                    .or_insert_with(|| image.and_then(|i| planned_cycles(i, addr)))
            });
            let k = by_kind
                .entry(name.as_ref())
                .or_insert_with(|| KernelKindTiming {
                    kernel: name.to_string(),
                    calls: 0,
                    planned_cycles: 0,
                    simulated_cycles: 0,
                });
            k.calls += 1;
            k.planned_cycles += planned.unwrap_or(0);
            k.simulated_cycles += s.end - s.start;
        }
    }
    by_kind.into_values().collect()
}

/// The planner's estimate of the kernel call whose argument block `image`
/// holds at `addr`, or `None` if the image holds no valid block there.
fn planned_cycles(image: &TileImage, addr: u32) -> Option<u64> {
    let word = |a: u32| -> Option<u32> {
        let segment = image
            .segments
            .iter()
            .find(|s| a >= s.address && a - s.address + 4 <= s.data.len() as u32)?;
        let at = (a - segment.address) as usize;
        Some(u32::from_le_bytes(
            segment.data[at..at + 4].try_into().ok()?,
        ))
    };
    let words = |n: u32| -> Option<Vec<u32>> { (0..n).map(|i| word(addr + 4 * i)).collect() };
    let (_, len) = decode_header(&words(ARG_BLOCK_HEADER_WORDS)?).ok()?;
    let args = decode(&words(len)?).ok()?;
    Some(call_cycles(&args))
}

/// Global step descriptors, keyed by (step id, iteration, part).
struct Steps {
    list: Vec<ProfileStep>,
    index: BTreeMap<(u32, Option<u32>, StepKind), u32>,
}

impl Steps {
    fn id(&mut self, step: u32, iteration: Option<u32>, kind: StepKind, operation: &str) -> u32 {
        let key = (step, iteration, kind);
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(ProfileStep {
            kind,
            operation: crate::report::profile::operation_in_iteration(operation, iteration),
            iteration,
            summed: false,
        });
        self.index.insert(key, i);
        i
    }
}

/// The profile of `run` for `package` (simulated cycles).
pub fn build_profile(package: &Package, run: &RunProfile, title: &str) -> Profile {
    let mut steps = Steps {
        list: Vec::new(),
        index: BTreeMap::new(),
    };
    let mut tiles = Vec::with_capacity(run.tiles.len());
    for trace in &run.tiles {
        let Some(table) = package
            .steps
            .tiles
            .iter()
            .find(|t| t.physical_tile == u32::from(trace.tile.get()))
        else {
            continue;
        };
        let samples = tile_samples(package, table, trace, &mut steps);
        tiles.push(TileSamples {
            tile: u32::from(trace.tile.get()),
            samples,
        });
    }
    Profile {
        title: title.to_string(),
        simulated: true,
        clock_hz: CLOCK_HZ,
        steps: steps.list,
        tiles,
        kernels: kernel_kind_timing(package, run),
    }
}

/// One tile's samples: each step mark of its trace up to the next mark
/// (or the halt), an exchange step cut into its patch and set-up, its
/// wait at the internal sync and its row.
fn tile_samples(
    package: &Package,
    table: &TileStepTable,
    trace: &TileTrace,
    steps: &mut Steps,
) -> Vec<CycleSample> {
    let by_address: BTreeMap<u32, &StepInfo> =
        table.steps.iter().map(|s| (s.code_address, s)).collect();
    let waits: Vec<(u64, u64)> = trace
        .samples
        .iter()
        .filter(|s| matches!(s.kind, SampleKind::SyncWait { .. }))
        .map(|s| (s.start, s.end))
        .collect();
    let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
    let mut samples = Vec::with_capacity(trace.marks.len());
    for (k, &(address, start)) in trace.marks.iter().enumerate() {
        let Some(info) = by_address.get(&address) else {
            continue;
        };
        let end = trace
            .marks
            .get(k + 1)
            .map(|m| m.1)
            .unwrap_or(trace.halt)
            .max(start);
        let count = seen.entry(info.step).or_insert(0);
        let iteration = info.repeat.map(|_| *count);
        *count += 1;
        let op = package
            .steps
            .operations
            .get(info.operation as usize)
            .map(String::as_str)
            .unwrap_or("?");
        let mut push = |kind: StepKind, from: u64, to: u64, steps: &mut Steps| {
            if to > from {
                samples.push(CycleSample {
                    step: steps.id(info.step, iteration, kind, op),
                    start_cycle: from,
                    end_cycle: to,
                });
            }
        };
        match info.kind {
            StepKind::Exchange => {
                // patch + set-up | wait at the internal sync | the row.
                let wait = waits
                    .iter()
                    .find(|w| w.0 >= start && w.1 <= end)
                    .copied()
                    .unwrap_or((start, start));
                push(StepKind::Patch, start, wait.0, steps);
                push(StepKind::Sync, wait.0, wait.1, steps);
                push(StepKind::Exchange, wait.1, end, steps);
            }
            other => push(other, start, end, steps),
        }
    }
    samples
}
