//! The embedded IPU21 simulator as a device: loads a package (tile images,
//! bindings), registers the native codelets at the package's kernel symbols,
//! connects the tiles with the exchange fabric, runs to completion and reads
//! the outputs back through the output bindings. Every cycle it reports is
//! simulated.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};

use ipuc_target::ipu21::rates::RateEnd;
use ipuc_target::ipu21::sram::layout;
use ipuc_target::ipu21::topology::PhysicalTile;
use ipuc_target::package::{
    Binding, BindingKind, BindingSlice, HostCall, NativeKernelAbi, Package, StepTables, TileImage,
    INFERENCE_CALL,
};

use super::convert::{decode_elements, encode_elements};
use super::DeviceOutput;
use crate::weights::{HostTensor, Weights};
use ipuc_sim::bsp::Progress;
use ipuc_sim::codelets::codelet_table;
use ipuc_sim::fabric::RouteFabric;
use ipuc_sim::{
    CodeletTable, CycleSample, Device, DeviceError, DeviceRun, ExchangeFabric, FaultKind,
    OperandFault, Tile,
};

/// Default bound on every tile's clock: a runaway program faults instead of
/// spinning forever.
pub const DEFAULT_CYCLE_LIMIT: u64 = 50_000_000_000;

/// How many times the compiler's estimate an inference may take before it
/// is a runaway: simulated runs come within 1.5× of it (siglip-small, 1
/// layer: 117,192 simulated for 87,384 estimated cycles).
pub const BUDGET_PER_ESTIMATE: u64 = 16;

/// Added to every budget, so a tiny package is not cut short by start-up.
pub const BUDGET_FLOOR: u64 = 10_000_000;

/// The most a default budget gives one inference, whatever the package
/// claims: its `estimated_cycles` is a number it carries, not one the
/// program proves, so a package re-sealed to claim 2^62 cycles would
/// otherwise set its own budget (and a runaway would spin for hours).
/// The largest model the repository runs (So400m, 27 layers at 378×378)
/// takes 10.8 M simulated cycles (`docs/reports`); 10^9 is ~90× that,
/// a few minutes of one spinning tile. `--cycle-budget` raises it.
pub const MAX_DEFAULT_BUDGET: u64 = 1_000_000_000;

/// A package's cycle budget per inference (every tile's clock restarts at
/// 0): [`BUDGET_PER_ESTIMATE`] × the package's `estimated_cycles` (its
/// plan summary), scaled by how much longer than the default a global sync
/// is modelled (`sync_cycles`), plus [`BUDGET_FLOOR`]; never above
/// [`MAX_DEFAULT_BUDGET`], which a package without an estimate gets.
/// A loop that changes nothing (a branch to itself, a spin on a word no one
/// writes) is caught sooner by the simulator's progress watch (a typed
/// `NoProgress` error naming the tiles and PCs, in milliseconds); the
/// budget stops the loops that keep changing state (a counter that never
/// reaches its end) with a typed `CycleLimit` fault naming tile and PC, in
/// seconds instead of minutes.
pub fn cycle_budget(package: &Package, sync_cycles: u64) -> u64 {
    let Some(&ipuc_target::package::SummaryValue::Integer(estimate)) =
        package.plan_summary.get("estimated_cycles")
    else {
        return MAX_DEFAULT_BUDGET;
    };
    let sync_scale = (sync_cycles / ipuc_sim::cycle::INTERNAL_SYNC_CYCLES).max(1);
    u64::try_from(estimate)
        .unwrap_or(0)
        .saturating_mul(BUDGET_PER_ESTIMATE)
        .saturating_mul(sync_scale)
        .saturating_add(BUDGET_FLOOR)
        .min(MAX_DEFAULT_BUDGET)
}

/// What one tile did during a run (simulated cycles).
#[derive(Clone, Debug)]
pub struct TileTrace {
    /// Physical tile id.
    pub tile: PhysicalTile,
    /// The simulator's samples (compute spans, sync waits, codelets, exchange).
    pub samples: Vec<CycleSample>,
    /// `(code address, cycle)` each time a profile step started.
    pub marks: Vec<(u32, u64)>,
    /// Cycle at which the tile halted.
    pub halt: u64,
}

/// Per-tile traces of a run (simulated).
#[derive(Clone, Debug, Default)]
pub struct RunProfile {
    /// In device order.
    pub tiles: Vec<TileTrace>,
    /// Latest halt cycle over all tiles.
    pub cycles: u64,
    /// Global syncs resolved.
    pub supersteps: u64,
    /// Words the exchange fabric moved between tiles (simulated).
    pub words_moved: u64,
    /// Wall seconds the simulation took (host time, not simulated).
    pub wall_seconds: f64,
}

/// A kernel call on the device broke a kernel-ABI operand rule (alignment,
/// SRAM extent, or an AMP rule of `docs/facts/ipu21-target.md` §2.10 rule
/// 6): where (tile, the model operation from the package's step table, the
/// call's address), which kernel, which operand at which address, and the
/// rule ([`OperandFault`]). [`LoadedSim::infer`] returns it as the error's
/// root cause (`anyhow::Error::downcast_ref`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "tile {}: operation `{operation}`: kernel {kernel} called at {pc:#x}: {fault}",
    .tile.get()
)]
pub struct KernelOperandError {
    /// Physical tile.
    pub tile: PhysicalTile,
    /// The operation whose step contains the call (`?` without a step table).
    pub operation: String,
    /// Address of the supervisor's `call`.
    pub pc: u32,
    /// Kernel symbol name.
    pub kernel: String,
    /// Operand, address and rule.
    pub fault: OperandFault,
}

/// The operation of the step containing `pc` on physical tile `tile`: the
/// step with the highest code address at or below `pc`.
fn operation_at(steps: &StepTables, tile: PhysicalTile, pc: u32) -> String {
    steps
        .tiles
        .iter()
        .find(|t| t.physical_tile == u32::from(tile.get()))
        .and_then(|t| {
            t.steps
                .iter()
                .filter(|s| s.code_address <= pc)
                .max_by_key(|s| s.code_address)
        })
        .and_then(|s| steps.operations.get(s.operation as usize))
        .cloned()
        .unwrap_or_else(|| "?".into())
}

/// The kernel ABI emission uses for the simulator's native codelets.
pub fn kernel_abi() -> NativeKernelAbi {
    NativeKernelAbi
}

/// Where the simulator gets its kernels and exchange fabric.
pub struct SimDevice {
    pub codelets: Arc<CodeletTable>,
    pub fabric: Box<dyn ExchangeFabric>,
    pub cycle_limit: u64,
    /// Global sync latency (modelled), `--sync-cycles`.
    pub sync_cycles: u64,
}

fn binding_named<'a>(package: &'a Package, name: &str) -> Result<&'a Binding> {
    package
        .bindings
        .iter()
        .find(|b| b.name == name)
        .ok_or_else(|| anyhow!("host call names binding `{name}`, which the package lacks"))
}

/// The host tensor of an input or weight binding, encoded in its dtype.
fn binding_bytes(
    binding: &Binding,
    inputs: &BTreeMap<String, HostTensor>,
    weights: &Weights,
) -> Result<Vec<u8>> {
    let tensor = tensor_for(binding, inputs, weights)?;
    encode_elements(&tensor.data, binding.dtype, binding.scale)
        .with_context(|| format!("binding `{}`", binding.name))
}

/// The part of `slice` inside the tensor byte range `range`: (offset into
/// the slice, offset into the tensor, length).
fn overlap(slice: &BindingSlice, range: &Range<u64>) -> Option<(u32, usize, usize)> {
    let start = slice.file_offset.max(range.start);
    let end = (slice.file_offset + u64::from(slice.size)).min(range.end);
    (start < end).then(|| {
        (
            (start - slice.file_offset) as u32,
            start as usize,
            (end - start) as usize,
        )
    })
}

/// Writes the tensor bytes in `range` to the tiles holding them.
fn load_range(
    tiles: &mut [Tile],
    index_of: &BTreeMap<u32, usize>,
    binding: &Binding,
    bytes: &[u8],
    range: Range<u64>,
) -> Result<()> {
    for s in &binding.slices {
        let Some((into_slice, from, len)) = overlap(s, &range) else {
            continue;
        };
        let i = *index_of.get(&s.tile).ok_or_else(|| {
            anyhow!(
                "binding `{}` names tile {} which has no image",
                binding.name,
                s.tile
            )
        })?;
        let data = bytes
            .get(from..from + len)
            .ok_or_else(|| anyhow!("binding `{}` slice past the tensor's end", binding.name))?;
        tiles[i]
            .load(s.tile_address + into_slice, data)
            .with_context(|| format!("binding `{}` on tile {}", binding.name, s.tile))?;
    }
    Ok(())
}

/// Reads the tensor bytes in `range` from the tiles holding them.
fn read_range(
    tiles: &[Tile],
    index_of: &BTreeMap<u32, usize>,
    binding: &Binding,
    bytes: &mut [u8],
    range: Range<u64>,
) -> Result<()> {
    for s in &binding.slices {
        let Some((into_slice, from, len)) = overlap(s, &range) else {
            continue;
        };
        let tile = index_of
            .get(&s.tile)
            .and_then(|&i| tiles.get(i))
            .ok_or_else(|| {
                anyhow!(
                    "output `{}` names tile {} which has no image",
                    binding.name,
                    s.tile
                )
            })?;
        let data = tile
            .memory()
            .slice(s.tile_address + into_slice, len as u32)
            .with_context(|| format!("reading output `{}`", binding.name))?;
        bytes
            .get_mut(from..from + len)
            .ok_or_else(|| anyhow!("output `{}` slice past the tensor's end", binding.name))?
            .copy_from_slice(data);
    }
    Ok(())
}

fn tensor_for<'a>(
    binding: &Binding,
    inputs: &'a BTreeMap<String, HostTensor>,
    weights: &'a Weights,
) -> Result<&'a HostTensor> {
    let t = match binding.kind {
        BindingKind::Input => inputs.get(&binding.name),
        BindingKind::Weight => weights.get(&binding.name),
        BindingKind::Output => None,
    }
    .ok_or_else(|| {
        anyhow!(
            "no host tensor for {:?} binding `{}`",
            binding.kind,
            binding.name
        )
    })?;
    let want: u64 = binding.shape.iter().product();
    if t.data.len() as u64 != want {
        bail!(
            "binding `{}` holds {} elements (shape {:?}) but the host tensor has {} (shape {:?})",
            binding.name,
            want,
            binding.shape,
            t.data.len(),
            t.shape
        );
    }
    Ok(t)
}

impl SimDevice {
    /// The simulator for `package`: a native codelet at every kernel symbol
    /// charging the chosen kernel rates, the row-executing exchange fabric,
    /// the default cycle limit.
    pub fn for_package(package: &Package) -> Result<SimDevice> {
        Self::with_rates(package, RateEnd::Chosen)
    }

    /// The same with every modelled kernel rate at `rates`'s end of its
    /// sources (`ipuc_target::ipu21::rates`).
    pub fn with_rates(package: &Package, rates: RateEnd) -> Result<SimDevice> {
        let symbols = package.kernels.iter().map(|k| (k.name.as_str(), k.address));
        let table = codelet_table(symbols, rates)?;
        Ok(SimDevice {
            codelets: Arc::new(table),
            fabric: Box::new(RouteFabric::default()),
            cycle_limit: DEFAULT_CYCLE_LIMIT,
            sync_cycles: ipuc_sim::cycle::INTERNAL_SYNC_CYCLES,
        })
    }

    /// Loads `package` and runs one inference: [`SimDevice::load`] then
    /// [`LoadedSim::infer`].
    pub fn run(
        self,
        package: &Package,
        inputs: &BTreeMap<String, HostTensor>,
        weights: &Weights,
    ) -> Result<DeviceOutput> {
        self.load(package, weights)?.infer(inputs)
    }

    /// One tile image in SRAM, with the simulator's codelets and the step
    /// markers of its table; returns the tile and the bytes loaded.
    fn load_image(&self, package: &Package, image: &TileImage) -> Result<(Tile, u64)> {
        let id = PhysicalTile::new(image.physical_tile)
            .map_err(|_| anyhow!("tile id {} out of range", image.physical_tile))?;
        let mut tile = Tile::new(id);
        let mut bytes = 0u64;
        for seg in &image.segments {
            tile.load(seg.address, &seg.data).with_context(|| {
                format!("tile {}: loading segment at {:#x}", id.get(), seg.address)
            })?;
            bytes += seg.data.len() as u64;
        }
        tile.set_codelets(self.codelets.clone());
        if let Some(table) = package
            .steps
            .tiles
            .iter()
            .find(|t| t.physical_tile == image.physical_tile)
        {
            let mut marks: Vec<u32> = table.steps.iter().map(|s| s.code_address).collect();
            marks.sort_unstable();
            marks.dedup();
            tile.set_markers(Arc::new(marks));
        }
        Ok((tile, bytes))
    }

    /// Loads `package` once: every tile image, then the weights through
    /// their bindings. The result runs any number of inferences
    /// ([`LoadedSim::infer`]) without reloading either.
    pub fn load(self, package: &Package, weights: &Weights) -> Result<LoadedSim> {
        let no_inputs = BTreeMap::new();
        self.load_with(package, |binding| {
            binding_bytes(binding, &no_inputs, weights)
        })
    }

    /// [`SimDevice::load`] consuming the weights: every weight binding is
    /// encoded in its device dtype first, each f32 tensor freed once the
    /// last binding reading it is encoded, so the host's f32 weights are
    /// gone before the tiles' SRAM fills (a So400m's 1.6 GiB of f32 never
    /// sits beside the simulator's state).
    pub fn load_consuming(self, package: &Package, mut weights: Weights) -> Result<LoadedSim> {
        let no_inputs = BTreeMap::new();
        let bindings: Vec<&Binding> = package.bindings_of(BindingKind::Weight).collect();
        let last_use: BTreeMap<&str, usize> = bindings
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name.as_str(), i))
            .collect();
        let mut encoded = Vec::with_capacity(bindings.len());
        for (i, binding) in bindings.iter().enumerate() {
            encoded.push(binding_bytes(binding, &no_inputs, &weights)?);
            if last_use.get(binding.name.as_str()) == Some(&i) {
                weights.remove(&binding.name);
                // The freed f32 pages go back to the OS now: mimalloc
                // returns them after a delay, and the encodes finish
                // inside it, which left them counted beside the encoded
                // bytes and then the tiles' SRAM (So400m: peak 1.81 →
                // 2.09 GiB without this).
                // SAFETY: `mi_collect` takes a plain flag and only frees
                // pages no allocation uses; with another global allocator
                // it finds nothing.
                unsafe { libmimalloc_sys::mi_collect(true) };
            }
        }
        drop(weights);
        let mut encoded = encoded.into_iter();
        self.load_with(package, |binding| {
            encoded
                .next()
                .with_context(|| format!("binding `{}` was not encoded", binding.name))
        })
    }

    /// Loads every tile image, then writes each weight binding (in package
    /// order) with the bytes `weight_bytes` gives for it.
    fn load_with(
        self,
        package: &Package,
        mut weight_bytes: impl FnMut(&Binding) -> Result<Vec<u8>>,
    ) -> Result<LoadedSim> {
        let mut index_of: BTreeMap<u32, usize> = BTreeMap::new();
        let mut tiles = Vec::with_capacity(package.tiles.len());
        let mut entries = Vec::with_capacity(package.tiles.len());
        let mut loaded_bytes = 0u64;
        for (i, image) in package.tiles.iter().enumerate() {
            let (tile, bytes) = self.load_image(package, image)?;
            loaded_bytes += bytes;
            index_of.insert(image.physical_tile, i);
            entries.push(image.entry_point);
            tiles.push(tile);
        }
        // Weights are loaded once with the images; the inference call says
        // which input ranges the host writes before each run.
        for binding in package.bindings_of(BindingKind::Weight) {
            let bytes = weight_bytes(binding)?;
            let whole = 0..bytes.len() as u64;
            load_range(&mut tiles, &index_of, binding, &bytes, whole)?;
            loaded_bytes += bytes.len() as u64;
        }
        let call = package
            .host_calls
            .iter()
            .find(|c| c.name == INFERENCE_CALL)
            .ok_or_else(|| anyhow!("the package has no `{INFERENCE_CALL}` host call"))?
            .clone();
        let mut bindings = BTreeMap::new();
        for t in call.inputs.iter().chain(&call.outputs) {
            let b = binding_named(package, &t.binding)?;
            bindings.insert(b.name.clone(), b.clone());
        }
        let steps_per_inference = steps_per_inference(&package.steps);
        Ok(LoadedSim {
            device: Device::with_fabric(tiles, self.fabric).with_sync_cycles(self.sync_cycles),
            progress: crate::progress::Progress::quiet(),
            planned_inferences: None,
            steps_per_inference,
            steps: package.steps.clone(),
            index_of,
            entries,
            call,
            bindings,
            cycle_limit: self.cycle_limit,
            inferences: 0,
            loaded_bytes,
            kernels: package
                .kernels
                .iter()
                .map(|k| (k.name.clone(), k.address))
                .collect(),
        })
    }
}

/// Step markers every inference passes (progress only): each marked
/// address of a tile's table once, a Repeat body's once per iteration.
fn steps_per_inference(steps: &StepTables) -> u64 {
    steps
        .tiles
        .iter()
        .map(|t| {
            let marked: BTreeMap<u32, u64> = t
                .steps
                .iter()
                .map(|s| {
                    (
                        s.code_address,
                        s.repeat.map_or(1, |r| u64::from(r.trip_count)),
                    )
                })
                .collect();
            marked.values().sum::<u64>()
        })
        .sum()
}

/// A package resident on the simulated device: tile images and weights are
/// in SRAM (loaded once by [`SimDevice::load`]); each [`LoadedSim::infer`]
/// writes the inputs, enters the program on every tile, runs it to
/// completion and reads the outputs back, as a host drives a loaded
/// executable.
pub struct LoadedSim {
    device: Device,
    index_of: BTreeMap<u32, usize>,
    /// Entry point of tile `i` (device order).
    entries: Vec<u32>,
    call: HostCall,
    /// The input and output bindings the inference call moves.
    bindings: BTreeMap<String, Binding>,
    cycle_limit: u64,
    inferences: u64,
    loaded_bytes: u64,
    /// Where each inference reports progress (quiet unless set).
    progress: crate::progress::Progress,
    /// How many inferences the caller means to run (for "inference 2 of 3").
    planned_inferences: Option<u64>,
    /// Step markers all tiles pass in one inference (the progress total).
    steps_per_inference: u64,
    /// The package's step tables (names the operation of a faulting call).
    steps: StepTables,
    /// The package's kernel symbols and entries (for
    /// [`LoadedSim::set_kernel_rates`]).
    kernels: Vec<(String, u32)>,
}

impl LoadedSim {
    /// A failed run as an error: a kernel operand fault becomes a typed
    /// [`KernelOperandError`] naming the operation; anything else keeps the
    /// device's message.
    fn device_error(&self, e: DeviceError) -> anyhow::Error {
        match e {
            DeviceError::Fault(f) => match f.kind {
                FaultKind::KernelOperand { kernel, fault } => {
                    anyhow::Error::new(KernelOperandError {
                        tile: f.tile,
                        operation: operation_at(&self.steps, f.tile, f.pc),
                        pc: f.pc,
                        kernel,
                        fault,
                    })
                    .context("simulated device")
                }
                kind => anyhow::Error::new(DeviceError::Fault(ipuc_sim::SimFault { kind, ..f }))
                    .context("simulated device"),
            },
            e => anyhow::Error::new(e).context("simulated device"),
        }
    }

    /// Inferences run so far on this loaded package.
    pub fn inferences(&self) -> u64 {
        self.inferences
    }

    /// Bytes written to tile SRAM at load: every image segment plus every
    /// weight (done once, not per inference).
    pub fn loaded_bytes(&self) -> u64 {
        self.loaded_bytes
    }

    /// Report each inference on `progress`: a bar with an ETA over the
    /// steps all tiles pass (on a terminal), one line when it ends
    /// (`device: inference 1 of 3 in … ms: … simulated cycles, …`).
    /// `planned` is how many inferences the caller will run, if known.
    pub fn set_progress(&mut self, progress: crate::progress::Progress, planned: Option<u64>) {
        self.progress = progress;
        self.planned_inferences = planned;
    }

    /// Charge every native codelet at `rates`'s end of its sources from the
    /// next inference on (as [`SimDevice::with_rates`]); the resident
    /// program and weights stay as they are. Rates change cycles, never
    /// values.
    pub fn set_kernel_rates(&mut self, rates: RateEnd) -> Result<()> {
        let symbols = self.kernels.iter().map(|(name, a)| (name.as_str(), *a));
        let table = Arc::new(codelet_table(symbols, rates)?);
        for t in self.device.tiles_mut() {
            t.set_codelets(Arc::clone(&table));
        }
        Ok(())
    }

    /// Steps all tiles pass in one inference (the progress bar's total).
    pub fn steps_per_inference(&self) -> u64 {
        self.steps_per_inference
    }

    fn binding(&self, name: &str) -> Result<&Binding> {
        self.bindings
            .get(name)
            .ok_or_else(|| anyhow!("host call names binding `{name}`, which the package lacks"))
    }

    /// One inference on the resident package: the host writes the call's
    /// input ranges and clears every tile's completion word, the program
    /// starts at each tile's entry point (the tile clocks start at zero, so
    /// the profile is this inference's alone) and runs until every tile
    /// halts; outputs are read through their bindings.
    pub fn infer(&mut self, inputs: &BTreeMap<String, HostTensor>) -> Result<DeviceOutput> {
        self.enter_with_inputs(inputs)?;
        self.inferences += 1;
        let started = std::time::Instant::now();
        let run = self.run_with_progress()?;
        self.check_completion()?;
        let outputs = self.read_outputs()?;
        let tiles = self.device.tiles();
        let profile = RunProfile {
            tiles: tiles
                .iter()
                .map(|t| TileTrace {
                    tile: t.id(),
                    samples: t.samples().to_vec(),
                    marks: t.marks().to_vec(),
                    halt: t.cycle(),
                })
                .collect(),
            cycles: run.cycles,
            supersteps: run.supersteps,
            words_moved: run.words_moved,
            wall_seconds: started.elapsed().as_secs_f64(),
        };
        Ok(DeviceOutput { outputs, profile })
    }

    /// The supervisors started at their entries (the first inference) or
    /// the resident program re-entered, the inputs written through their
    /// bindings and every tile's completion word cleared.
    fn enter_with_inputs(&mut self, inputs: &BTreeMap<String, HostTensor>) -> Result<()> {
        if self.inferences > 0 {
            self.device
                .restart(&self.entries)
                .context("re-entering the resident program")?;
        } else {
            for (t, &entry) in self.device.tiles_mut().iter_mut().zip(&self.entries) {
                t.start_supervisor(entry);
            }
        }
        let no_weights = Weights::default();
        for t in &self.call.inputs {
            let binding = self.bindings.get(&t.binding).ok_or_else(|| {
                anyhow!(
                    "host call names binding `{}`, which the package lacks",
                    t.binding
                )
            })?;
            let bytes = binding_bytes(binding, inputs, &no_weights)?;
            load_range(
                self.device.tiles_mut(),
                &self.index_of,
                binding,
                &bytes,
                t.range(),
            )?;
        }
        for t in self.device.tiles_mut() {
            t.memory_mut()
                .write_u32(layout::COMPLETION_WORD, 0)
                .with_context(|| format!("tile {}: clearing the completion word", t.id().get()))?;
        }
        Ok(())
    }

    /// Runs to the last halt, showing progress (step markers passed) and
    /// finishing the stage with the cycles, supersteps and words moved.
    fn run_with_progress(&mut self) -> Result<DeviceRun> {
        let cpu_started = process_cpu_seconds();
        let name = match self.planned_inferences {
            Some(n) => format!("inference {} of {n}", self.inferences),
            None => format!("inference {}", self.inferences),
        };
        let stage = Arc::new(self.progress.stage(&name, self.steps_per_inference));
        let steps_total = self.steps_per_inference;
        let shown = Arc::clone(&stage);
        self.device.set_progress(Progress {
            every: std::time::Duration::from_millis(100),
            report: Box::new(move |status| {
                shown.set_position(status.steps);
                let detail = format!(
                    "superstep {}, cycle {}",
                    status.supersteps,
                    thousands(status.cycles)
                );
                shown.set_detail(&detail);
                // Without a bar (a log), a line every ten seconds instead.
                shown.heartbeat(&format!(
                    "{detail} (simulated), {} of {} step markers passed",
                    thousands(status.steps),
                    thousands(steps_total)
                ));
            }),
        });
        let run = self.device.run(self.cycle_limit);
        // Drops the callback's handle on the stage.
        self.device.clear_progress();
        let run = run.map_err(|e| self.device_error(e))?;
        if let Ok(stage) = Arc::try_unwrap(stage) {
            // CPU time says what a shared machine's wall time cannot.
            let cpu = match (cpu_started, process_cpu_seconds()) {
                (Some(a), Some(b)) => format!(
                    ", {:.2} s CPU (user + system, all threads; {:.1} M words per CPU second)",
                    b - a,
                    run.words_moved as f64 / 1e6 / (b - a).max(1e-9)
                ),
                _ => String::new(),
            };
            stage.finish(&format!(
                "{} simulated cycles, {} supersteps, {} words moved{cpu}",
                thousands(run.cycles),
                run.supersteps,
                thousands(run.words_moved)
            ));
        }
        Ok(run)
    }

    /// Every tile ran the completion routine (it sets the completion word).
    fn check_completion(&self) -> Result<()> {
        for t in self.device.tiles() {
            let done = t
                .memory()
                .read_u32(layout::COMPLETION_WORD)
                .with_context(|| format!("tile {}: reading the completion word", t.id().get()))?;
            if done != 1 {
                bail!(
                    "tile {} halted without running the completion routine",
                    t.id().get()
                );
            }
        }

        Ok(())
    }

    /// The outputs read back through their bindings, as f32.
    fn read_outputs(&self) -> Result<BTreeMap<String, HostTensor>> {
        let tiles = self.device.tiles();
        let mut outputs = BTreeMap::new();
        for t in &self.call.outputs {
            let binding = self.binding(&t.binding)?;
            let size = binding
                .byte_size()
                .ok_or_else(|| anyhow!("output `{}` size overflows", binding.name))?
                as usize;
            let mut bytes = vec![0u8; size];
            read_range(tiles, &self.index_of, binding, &mut bytes, t.range())?;
            let data = decode_elements(&bytes, binding.dtype, binding.scale)?;
            outputs.insert(
                binding.name.clone(),
                HostTensor {
                    shape: binding.shape.iter().map(|&d| d as usize).collect(),
                    data,
                },
            );
        }
        Ok(outputs)
    }
}

/// User + system CPU seconds of this process (all threads) so far; `None`
/// where the platform does not say.
fn process_cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
        // SAFETY: getrusage writes a whole `rusage` on success (return 0).
        let usage = unsafe {
            if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
                return None;
            }
            usage.assume_init()
        };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + f64::from(t.tv_usec as u32) * 1e-6;
        Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// `n` with thousands separators, for progress lines.
fn thousands(n: u64) -> String {
    use num_format::{Locale, ToFormattedString};
    n.to_formatted_string(&Locale::en)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_target::package::SummaryValue;

    fn claiming(estimate: Option<i64>) -> Package {
        let mut p = Package::new("test");
        if let Some(e) = estimate {
            p.plan_summary
                .insert("estimated_cycles".into(), SummaryValue::Integer(e));
        }
        p
    }

    /// #44: the default budget follows a modest estimate, and no claim —
    /// huge, negative or missing — lifts it past `MAX_DEFAULT_BUDGET`.
    #[test]
    fn a_package_cannot_set_its_own_cycle_budget() {
        let sync = ipuc_sim::cycle::INTERNAL_SYNC_CYCLES;
        assert_eq!(
            cycle_budget(&claiming(Some(100_000)), sync),
            16 * 100_000 + BUDGET_FLOOR
        );
        for claim in [Some(i64::MAX), Some(1 << 62), Some(-1), None] {
            let budget = cycle_budget(&claiming(claim), sync);
            assert!(budget <= MAX_DEFAULT_BUDGET, "{claim:?}: {budget}");
        }
        assert_eq!(
            cycle_budget(&claiming(Some(i64::MAX)), sync),
            MAX_DEFAULT_BUDGET
        );
        // A slow modelled sync scales the budget, still within the cap.
        assert_eq!(
            cycle_budget(&claiming(Some(1 << 40)), 1_000_000),
            MAX_DEFAULT_BUDGET
        );
    }
}
