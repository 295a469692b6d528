//! Linking tile programs with the static runtime and turning the linked
//! images into package tile images, kernel symbols and profile step tables.

use anyhow::{anyhow, bail, Context, Result};

use ipuc_core::emit::{
    area_label, kernel_stubs_source, kernel_symbol, step_label, Area, EmittedProgram, KernelAbi,
};
use ipuc_core::ipu21::asm::{assemble, Image, Object};
use ipuc_core::ipu21::sram::APPLICATION_LOAD_BASE;
use ipuc_core::lower::{Step, StepIndex, TileSchedule};
use ipuc_core::package::{
    KernelSymbol, RepeatScope, Segment, SegmentRole, StepInfo, StepKind, StepTables, TileImage,
    TileStepTable,
};
use ipuc_core::runtime::{link_with_runtime_source, symbols, RuntimeSource};

/// One tile's linked image.
pub struct LinkedTile {
    pub logical_tile: u32,
    pub physical_tile: u16,
    pub image: Image,
}

/// The kernel stub table, assembled once: linked right after the runtime it
/// sits at the same address on every tile.
pub fn kernel_stubs(kernels: &dyn KernelAbi) -> Result<Object> {
    assemble("<kernel stubs>", &kernel_stubs_source(kernels))
        .map_err(|e| anyhow!("{e}"))
        .context("assembling the kernel stub table")
}

/// Bytes of the runtime and the kernel stub table every image starts with
/// (linked once with an empty program): the fixed part of the planner's
/// per-tile image estimate (`PlanConfig::fixed_code_bytes`).
pub fn fixed_code_bytes(stubs: &Object, runtime: &RuntimeSource) -> Result<u32> {
    let empty = assemble(
        "<empty program>",
        "        .text\n        .supervisor\n        .globl ipuc_program\n        .p2align 3\nipuc_program:\n",
    )
    .map_err(|e| anyhow!("{e}"))
    .context("assembling an empty program")?;
    let image = link_with_runtime_source(runtime, &[stubs.clone(), empty])
        .map_err(|e| anyhow!("{e}"))
        .context("linking the runtime and kernel stubs")?;
    Ok(image.end() - APPLICATION_LOAD_BASE)
}

/// Assembles one tile program and links it after the runtime and the stubs.
/// Whether the image fits is checked against the tile's placement
/// (`TilePlacement::check_code`), not here.
pub fn link_tile(
    stubs: &Object,
    program: &EmittedProgram,
    runtime: &RuntimeSource,
) -> Result<LinkedTile> {
    let name = format!("<tile {} program>", program.logical_tile);
    let object = assemble(&name, &program.source)
        .map_err(|e| anyhow!("{e}"))
        .with_context(|| {
            format!(
                "assembling the program of logical tile {}",
                program.logical_tile
            )
        })?;
    let image = link_with_runtime_source(runtime, &[stubs.clone(), object])
        .map_err(|e| anyhow!("{e}"))
        .with_context(|| format!("linking logical tile {}", program.logical_tile))?;
    Ok(LinkedTile {
        logical_tile: program.logical_tile,
        physical_tile: program.physical_tile,
        image,
    })
}

impl LinkedTile {
    fn symbol(&self, name: &str) -> u32 {
        // Every emitted program defines the area labels and the runtime
        // defines its entry points; a missing one is a bug in emission.
        self.image
            .symbol(name)
            .unwrap_or_else(|| panic!("linked image lacks `{name}`"))
    }

    /// Bytes of the image's parts: (runtime + stubs, supervisor program +
    /// argument blocks, exchange rows).
    pub fn part_bytes(&self) -> (u32, u32, u32) {
        let program = self.symbol(symbols::PROGRAM);
        let rows = self.symbol(area_label(Area::Rows));
        let end = self.symbol(area_label(Area::End));
        (
            program - APPLICATION_LOAD_BASE,
            rows - program,
            end.saturating_sub(rows),
        )
    }

    /// Bytes of the linked image from the load address.
    pub fn code_bytes(&self) -> u32 {
        self.image.end() - APPLICATION_LOAD_BASE
    }

    /// Package image: one executable segment per role, split at the area labels.
    pub fn tile_image(&self) -> TileImage {
        let words = &self.image.words;
        let base = self.image.base;
        let cut = |addr: u32| ((addr - base) / 4) as usize;
        let bounds = [
            (base, SegmentRole::Runtime),
            (self.symbol(symbols::PROGRAM), SegmentRole::SupervisorCode),
            (
                self.symbol(area_label(Area::Rows)),
                SegmentRole::ExchangeRows,
            ),
            (self.symbol(area_label(Area::End)), SegmentRole::Runtime),
            (self.image.end(), SegmentRole::Runtime),
        ];
        let start = self.symbol(symbols::START);
        let mut tile = TileImage::new(u32::from(self.physical_tile), start);
        for pair in bounds.windows(2) {
            let ((from, role), (to, _)) = (pair[0], pair[1]);
            if to > from {
                tile.segments
                    .push(Segment::code(from, role, &words[cut(from)..cut(to)]));
            }
        }
        tile
    }
}

/// Kernel entries: one address per family, checked equal on every tile.
pub fn kernel_symbols(kernels: &dyn KernelAbi, images: &[LinkedTile]) -> Result<Vec<KernelSymbol>> {
    let mut out: Vec<KernelSymbol> = Vec::new();
    for family in kernels.families() {
        let sym = kernel_symbol(family);
        let mut address = None;
        for img in images {
            let a = img.symbol(&sym);
            if *address.get_or_insert(a) != a {
                bail!("kernel `{family}` is at different addresses on different tiles");
            }
        }
        if let Some(address) = address {
            out.push(KernelSymbol {
                name: family.to_string(),
                address,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Profile step tables: every step's code address on every tile.
pub fn step_tables(schedule: &TileSchedule, images: &[LinkedTile]) -> StepTables {
    let mut operations: Vec<String> = Vec::new();
    let mut steps: Vec<(StepIndex, StepKind, u32, Option<RepeatScope>)> = Vec::new();
    schedule.visit(|step, parent| {
        let (kind, origin) = match step {
            Step::Compute(c) => (StepKind::Compute, &c.origin),
            Step::Exchange(p) => (StepKind::Exchange, &p.origin),
            Step::Repeat(r) => (StepKind::Sync, &r.origin),
        };
        let op = match operations.iter().position(|o| *o == origin.label) {
            Some(i) => i,
            None => {
                operations.push(origin.label.clone());
                operations.len() - 1
            }
        } as u32;
        let repeat = parent.map(|r| RepeatScope {
            repeat: r.index.0,
            trip_count: r.trip_count,
        });
        steps.push((step.index(), kind, op, repeat));
    });
    let tiles = images
        .iter()
        .map(|img| TileStepTable {
            physical_tile: u32::from(img.physical_tile),
            steps: steps
                .iter()
                .map(|&(index, kind, operation, repeat)| StepInfo {
                    step: index.0,
                    kind,
                    operation,
                    code_address: img.symbol(&step_label(index)),
                    repeat,
                })
                .collect(),
        })
        .collect();
    let mut tables = StepTables { operations, tiles };
    tables.tiles.sort_by_key(|t| t.physical_tile);
    tables
}
