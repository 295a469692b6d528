//! Linking tile programs with the static runtime and turning the linked
//! images into package tile images, kernel symbols and profile step tables.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::error::LinkError;

use crate::asm::{assemble, Image, Object};
use crate::emit::{
    area_label, kernel_stubs_source, kernel_symbol, step_label, Area, EmittedProgram,
};
use crate::lower::{Step, StepIndex, TileSchedule};
use crate::runtime::{link_with_runtime_objects, symbols};
use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;
use ipuc_target::ipu21::topology::{LogicalTile, PhysicalTile};
use ipuc_target::kernel::KernelAbi;
use ipuc_target::package::{
    KernelSymbol, RepeatScope, Segment, SegmentRole, StepInfo, StepKind, StepTables, TileImage,
    TileStepTable,
};

/// One tile's linked image.
#[derive(Clone, Debug)]
pub struct LinkedTile {
    /// The planner's tile id.
    pub logical_tile: LogicalTile,
    /// The C600 tile it runs on.
    pub physical_tile: PhysicalTile,
    /// Runtime, kernel stubs and program, linked from the load address.
    pub image: Image,
}

/// The kernel stub table, assembled once: linked right after the runtime it
/// sits at the same address on every tile.
pub fn kernel_stubs(kernels: &dyn KernelAbi) -> Result<Object, LinkError> {
    assemble("<kernel stubs>", &kernel_stubs_source(kernels)).map_err(LinkError::Stubs)
}

/// Bytes of the runtime and the kernel stub table every image starts with
/// (the runtime objects assembled once per compile, linked once with an
/// empty program): the fixed part of the planner's
/// per-tile image estimate (`PlanConfig::fixed_code_bytes`).
pub fn fixed_code_bytes(stubs: &Object, runtime: &[Object; 2]) -> Result<u32, LinkError> {
    let empty = assemble(
        "<empty program>",
        "        .text\n        .supervisor\n        .globl ipuc_program\n        .p2align 3\nipuc_program:\n",
    )
    .map_err(LinkError::FixedCode)?;
    let image =
        link_with_runtime_objects(runtime, &[stubs, &empty]).map_err(LinkError::FixedCode)?;
    Ok(image.end().saturating_sub(APPLICATION_LOAD_BASE))
}

/// Assembles one tile program and links it after the runtime (assembled
/// once per compile, `runtime::runtime_objects_from`) and the stubs, without
/// a listing. Whether the image fits is checked against the tile's
/// placement (`TilePlacement::check_code`), not here.
pub fn link_tile(
    stubs: &Object,
    program: &EmittedProgram,
    runtime: &[Object; 2],
) -> Result<LinkedTile, LinkError> {
    let tile = program.logical_tile;
    let name = format!("<tile {} program>", tile.get());
    let object =
        assemble(&name, &program.source).map_err(|error| LinkError::Assemble { tile, error })?;
    let image = link_with_runtime_objects(runtime, &[stubs, &object])
        .map_err(|error| LinkError::Link { tile, error })?;
    Ok(LinkedTile {
        logical_tile: program.logical_tile,
        physical_tile: program.physical_tile,
        image,
    })
}

impl LinkedTile {
    /// A symbol every emitted program (area and step labels) or the
    /// runtime (entry points) defines; a missing one is a typed error.
    fn symbol(&self, name: &str) -> Result<u32, LinkError> {
        self.image
            .symbol(name)
            .ok_or_else(|| LinkError::MissingSymbol {
                tile: self.logical_tile,
                symbol: name.to_string(),
            })
    }

    /// Bytes of the image's parts: (runtime + stubs, supervisor program +
    /// argument blocks, exchange rows).
    pub fn part_bytes(&self) -> Result<(u32, u32, u32), LinkError> {
        let program = self.symbol(symbols::PROGRAM)?;
        let rows = self.symbol(area_label(Area::Rows))?;
        let end = self.symbol(area_label(Area::End))?;
        Ok((
            program.saturating_sub(APPLICATION_LOAD_BASE),
            rows.saturating_sub(program),
            end.saturating_sub(rows),
        ))
    }

    /// Bytes of the linked image from the load address.
    pub fn code_bytes(&self) -> u32 {
        self.image.end().saturating_sub(APPLICATION_LOAD_BASE)
    }

    /// Package image: one executable segment per role, split at the area labels.
    pub fn tile_image(&self) -> Result<TileImage, LinkError> {
        let words = &self.image.words;
        let base = self.image.base;
        let bounds = [
            (base, SegmentRole::Runtime),
            (self.symbol(symbols::PROGRAM)?, SegmentRole::SupervisorCode),
            (
                self.symbol(area_label(Area::Rows))?,
                SegmentRole::ExchangeRows,
            ),
            (self.symbol(area_label(Area::End))?, SegmentRole::Runtime),
            (self.image.end(), SegmentRole::Runtime),
        ];
        let start = self.symbol(symbols::START)?;
        let mut tile = TileImage::new(u32::from(self.physical_tile.get()), start);
        let cut = |addr: u32| (addr.saturating_sub(base) / 4) as usize;
        for pair in bounds.windows(2) {
            let ((from, role), (to, _)) = (pair[0], pair[1]);
            if to > from {
                let missing = || LinkError::MissingSymbol {
                    tile: self.logical_tile,
                    symbol: String::from("(segment outside the image)"),
                };
                let slice = words.get(cut(from)..cut(to)).ok_or_else(missing)?;
                tile.segments.push(Segment::code(from, role, slice));
            }
        }
        Ok(tile)
    }
}

/// Kernel entries: one address per family, checked equal on every tile.
pub fn kernel_symbols(
    kernels: &dyn KernelAbi,
    images: &[LinkedTile],
) -> Result<Vec<KernelSymbol>, LinkError> {
    let mut out: Vec<KernelSymbol> = Vec::new();
    for family in kernels.families() {
        let sym = kernel_symbol(family);
        let mut address = None;
        for img in images {
            let a = img.symbol(&sym)?;
            if *address.get_or_insert(a) != a {
                return Err(LinkError::KernelAddressDiffers { kernel: family });
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
pub fn step_tables(
    schedule: &TileSchedule,
    images: &[LinkedTile],
) -> Result<StepTables, LinkError> {
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
    let mut tiles = Vec::with_capacity(images.len());
    for img in images {
        let mut table = Vec::with_capacity(steps.len());
        for &(index, kind, operation, repeat) in &steps {
            table.push(StepInfo {
                step: index.0,
                kind,
                operation,
                code_address: img.symbol(&step_label(index))?,
                repeat,
            });
        }
        tiles.push(TileStepTable {
            physical_tile: u32::from(img.physical_tile.get()),
            steps: table,
        });
    }
    let mut tables = StepTables { operations, tiles };
    tables.tiles.sort_by_key(|t| t.physical_tile);
    Ok(tables)
}
