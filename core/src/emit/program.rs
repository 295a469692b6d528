//! The generated supervisor program of one tile, as IPU21 assembly text.
//!
//! Register use (docs/facts/ipu21-target.md §1.5, §2.7, §2.9, §5.3):
//! `$m0`, `$m1` scratch; kernel operands and the argument block in the
//! registers the [`KernelAbi`] names; `$m10` link for kernels and rows,
//! `$m9` for the patchers, `$m7` for the worker barrier; `$m8` CSR staging;
//! `$m11` the supervisor stack (Repeat frame at `[$m11]`).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::tables::{PatchAddresses, PatchData};
use super::EmitError;
use crate::lower::{KernelCall, RepeatFrame, RepeatStep, Step, StepIndex, TileSchedule};
use crate::place::{address, BufferAddresses};
use crate::rows::ExchangePlan;
use crate::runtime::symbols;
use ipuc_target::ipu21::tile_set::TileSet;
use ipuc_target::ipu21::topology::{LogicalTile, PhysicalTile};
use ipuc_target::kernel::KernelAbi;
use ipuc_target::lookup::LookupMap;

/// Everything emission reads.
pub struct EmitInput<'a> {
    /// The lowered program.
    pub schedule: &'a TileSchedule,
    /// Placement.
    pub addresses: &'a dyn BufferAddresses,
    /// Kernel calling convention.
    pub kernels: &'a dyn KernelAbi,
    /// Scheduled rows and patches ([`crate::rows::schedule_exchanges`] on
    /// the same placement).
    pub exchange: &'a ExchangePlan,
    /// Where each tile's patch-data block ([`PatchData::for_tile`]) was placed.
    pub patch_addresses: &'a dyn PatchAddresses,
}

/// One tile's generated program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmittedProgram {
    /// Logical tile.
    pub logical_tile: LogicalTile,
    /// Physical tile (the package and the fabric use physical ids).
    pub physical_tile: PhysicalTile,
    /// Assembly source defining the global `ipuc_program`.
    pub source: String,
    /// The tile's patch data and the address it was emitted for (`None`
    /// when the tile patches nothing): a data block, not part of the image.
    pub patch: Option<(u32, PatchData)>,
}

/// Symbol of a kernel family's entry.
pub fn kernel_symbol(family: &str) -> String {
    format!("ipuc_kernel_{family}")
}

/// Assembly defining every kernel entry: 8 bytes each, `trap 0` then
/// `br $m10`. The simulator runs the registered native codelet instead of
/// these words; on a device without that kernel the trap stops the tile with
/// a breakpoint exception rather than computing nothing silently.
pub fn kernel_stubs_source(abi: &dyn KernelAbi) -> String {
    let mut s = String::from("        .text\n        .supervisor\n");
    for family in abi.families() {
        let sym = kernel_symbol(family);
        let _ = writeln!(
            s,
            "        .p2align 3\n        .globl {sym}\n{sym}:\n        trap 0\n        br $m10"
        );
    }
    s
}

/// Label of step `index`'s first instruction (global, so the linked image
/// lists it for profiles).
pub fn step_label(index: StepIndex) -> String {
    format!("ipuc_step_{}", index.0)
}

/// Emits every tile's program. Tiles are those holding any buffer block or
/// taking part in any step, in logical order.
pub fn emit_programs(input: &EmitInput<'_>) -> Result<Vec<EmittedProgram>, EmitError> {
    tiles_used(input.schedule)
        .into_iter()
        .map(|tile| emit_program(input, tile))
        .collect()
}

/// The supervisor program of one of [`program_tiles`] (tiles are
/// independent: a host may emit them in parallel).
pub fn emit_program(input: &EmitInput<'_>, tile: LogicalTile) -> Result<EmittedProgram, EmitError> {
    let physical = tile.physical();
    let patch = PatchData::for_tile(input.exchange, physical);
    let patch_base = if patch.bytes() == 0 {
        0
    } else {
        input
            .patch_addresses
            .patch_base(tile)
            .ok_or(EmitError::UnplacedPatchData {
                tile,
                bytes: patch.bytes(),
            })?
    };
    let mut w = TileWriter {
        input,
        exchange: input.exchange,
        tile,
        physical,
        code: String::new(),
        args: String::new(),
        patch: &patch,
        patch_base,
        rows: String::new(),
        labels: 0,
        arg_blocks: LookupMap::default(),
    };
    w.program()?;
    let source = w.finish();
    Ok(EmittedProgram {
        logical_tile: tile,
        physical_tile: physical,
        source,
        patch: (patch.bytes() > 0).then_some((patch_base, patch)),
    })
}

/// Logical tiles that get a program (hold a block or take part in a step).
pub fn program_tiles(schedule: &TileSchedule) -> Vec<LogicalTile> {
    tiles_used(schedule)
}

/// Logical tiles that hold a block or appear in a call or transfer, sorted.
/// A tile set: a tile appears once however many blocks, calls and
/// transfers name it, and the set iterates in ascending id.
fn tiles_used(schedule: &TileSchedule) -> Vec<LogicalTile> {
    let mut tiles: TileSet<LogicalTile> = TileSet::new();
    for b in &schedule.buffers {
        tiles.extend(b.blocks.iter().map(|blk| blk.tile));
    }
    schedule.visit(|step, _| match step {
        Step::Compute(c) => tiles.extend(c.calls.iter().map(|k| k.tile)),
        Step::Exchange(p) => {
            for t in &p.transfers {
                tiles.insert(t.source_tile);
                tiles.extend(t.destinations.iter().map(|d| d.tile));
            }
        }
        Step::Repeat(_) => {}
    });
    tiles.iter().collect()
}

struct TileWriter<'a, 'i> {
    input: &'a EmitInput<'i>,
    exchange: &'a ExchangePlan,
    tile: LogicalTile,
    /// The key of the exchange plan's per-tile maps.
    physical: PhysicalTile,
    /// Instructions.
    code: String,
    /// Kernel argument blocks.
    args: String,
    /// The tile's patch data (Repeat tables, sharing lists) and its base.
    patch: &'a PatchData,
    patch_base: u32,
    /// Stored exchange rows.
    rows: String,
    labels: u32,
    /// Argument blocks already emitted on this tile, by contents.
    arg_blocks: LookupMap<Vec<u32>, String>,
}

impl TileWriter<'_, '_> {
    fn op(&mut self, text: &str) {
        let _ = writeln!(self.code, "        {text}");
    }

    fn label(&mut self, name: &str) {
        let _ = writeln!(self.code, "{name}:");
    }

    fn fresh(&mut self, stem: &str) -> String {
        self.labels += 1;
        format!(".L{stem}_{}", self.labels)
    }

    fn program(&mut self) -> Result<(), EmitError> {
        self.code.push_str(
            "        .text\n        .supervisor\n        .globl ipuc_program\n        .p2align 3\nipuc_program:\n",
        );
        for step in &self.input.schedule.steps {
            self.step(step, None)?;
        }
        self.op(&format!("setzi $m0, {}", symbols::COMPLETE));
        self.op("br $m0");
        self.emit_rows();
        Ok(())
    }

    /// Code, then the data areas in a fixed order, each opened by the global
    /// label [`area_label`] names so the image can be split into segments by role.
    fn finish(self) -> String {
        let mut s = self.code;
        for (area, text) in [
            (Area::Args, self.args),
            (Area::Rows, self.rows),
            (Area::End, String::new()),
        ] {
            let label = area_label(area);
            let _ = writeln!(s, "        .p2align 3\n        .globl {label}\n{label}:");
            s.push_str(&text);
        }
        s
    }

    fn step(&mut self, step: &Step, frame: Option<&RepeatFrame>) -> Result<(), EmitError> {
        let label = step_label(step.index());
        let _ = writeln!(self.code, "        .globl {label}");
        self.label(&label);
        match step {
            Step::Compute(c) => {
                let tile = self.tile;
                for call in c.calls.iter().filter(|k| k.tile == tile) {
                    self.kernel_call(call, frame)?;
                }
            }
            Step::Exchange(p) => self.exchange_phase(p.index, frame)?,
            Step::Repeat(r) => {
                if frame.is_some() {
                    return Err(EmitError::NestedRepeat { step: r.index.0 });
                }
                self.repeat(r)?;
            }
        }
        Ok(())
    }

    /// `$mR = address of operand` — through the Repeat frame for iterated
    /// buffers (current iteration's base), else an absolute `setzi`.
    fn load_address(
        &mut self,
        reg: u8,
        at: crate::lower::BufferRef,
        frame: Option<&RepeatFrame>,
    ) -> Result<(), EmitError> {
        if let Some(slot) = frame.and_then(|f| f.slot_of(at.buffer)) {
            self.op(&format!("ld32 $m{reg}, $m11, $m15, {slot}"));
            if at.offset != 0 {
                self.op(&format!("setzi $m1, {:#x}", at.offset));
                self.op(&format!("add $m{reg}, $m{reg}, $m1"));
            }
        } else {
            let a = address(self.input.schedule, self.input.addresses, at, self.tile)?;
            self.op(&format!("setzi $m{reg}, {a:#x}"));
        }
        Ok(())
    }

    fn kernel_call(
        &mut self,
        call: &KernelCall,
        frame: Option<&RepeatFrame>,
    ) -> Result<(), EmitError> {
        let abi = self.input.kernels;
        let kernel = abi.family(&call.kernel);
        if !abi.families().contains(&kernel) {
            return Err(EmitError::UnknownKernel { kernel });
        }
        for (i, &operand) in call.operands.iter().enumerate() {
            let reg = abi.operand_register(i).ok_or(EmitError::TooManyOperands {
                kernel,
                operands: call.operands.len(),
                limit: i,
            })?;
            self.load_address(reg, operand, frame)?;
        }
        let args = abi.arg_block(&call.kernel);
        let label = match self.arg_blocks.get(&args) {
            Some(l) => l.clone(),
            None => {
                let l = self.fresh("args");
                let _ = writeln!(self.args, "        .p2align 3\n{l}:");
                for w in &args {
                    let _ = writeln!(self.args, "        .long {w:#010x}");
                }
                self.arg_blocks.insert(args, l.clone());
                l
            }
        };
        self.op(&format!("setzi $m{}, {label}", abi.arg_register()));
        self.op(&format!("call $m10, {}", kernel_symbol(kernel)));
        Ok(())
    }

    /// The per-phase sequence of docs/facts/ipu21-target.md §2.7: patches,
    /// base registers, worker barrier, receive count, internal sync, row.
    fn exchange_phase(
        &mut self,
        step: StepIndex,
        frame: Option<&RepeatFrame>,
    ) -> Result<(), EmitError> {
        let exchange = self.exchange;
        let row_use = exchange
            .phases
            .get(&step)
            .and_then(|phase| phase.uses.get(&self.physical));
        if let Some(u) = &row_use {
            let row = row_label(u.stored);
            // Patch data lives in the tile's placed data block (tables.rs).
            let patch = self.patch.phase(step).cloned().unwrap_or_default();
            let base = self.patch_base;
            if let Some((offs, vals, count)) = patch.sharing {
                self.op(&format!("setzi $m2, {row}"));
                self.op(&format!("setzi $m3, {:#x}", base + offs));
                self.op(&format!("setzi $m4, {:#x}", base + vals));
                self.op(&format!("setzi $m5, {count}"));
                self.op(&format!("call $m9, {}", symbols::PATCH_ROW));
            }
            let total = frame.map(|f| f.trip_count).unwrap_or(1);
            for (word_index, table) in patch.repeat {
                self.op(&format!("setzi $m2, {row} + {}", 4 * word_index));
                self.op(&format!("setzi $m3, {:#x}", base + table));
                self.op("ld32 $m4, $m11, $m15, 0");
                self.op(&format!("setzi $m5, {total}"));
                self.op(&format!("call $m9, {}", symbols::PATCH_WORD));
            }
        }
        // Receivers use absolute PIC word addresses (INCOMING_BASE = 0).
        // Senders use absolute item addresses (OUTGOING_BASE = 0), except a
        // relocated sender, whose base is its source buffer's current
        // iteration base from the Repeat frame (§2.3, §2.9).
        self.op("setzi $m8, 0");
        self.op("put $INCOMING_BASE, $m8");
        match row_use.and_then(|u| u.outgoing_base) {
            Some(b) => {
                if frame.is_none() {
                    return Err(EmitError::RelocatedOutsideRepeat { step: step.0 });
                }
                self.op(&format!("ld32 $m8, $m11, $m15, {}", b.frame_slot));
                self.op("put $OUTGOING_BASE, $m8");
            }
            None => self.op("put $OUTGOING_BASE, $m15"),
        }
        self.op(&format!("call $m7, {}", symbols::WORKER_BARRIER));
        self.op("setzi $m8, 1");
        self.op("put $INCOMING_DCOUNT, $m8");
        self.op("sync SYNCZONE_INTERNAL");
        match &row_use {
            Some(u) => self.op(&format!("call $m10, {}", row_label(u.stored))),
            None => self.op("call $m10, .Lidle_row"),
        }
        Ok(())
    }

    fn repeat(&mut self, r: &RepeatStep) -> Result<(), EmitError> {
        let frame = RepeatFrame::new(self.input.schedule, r, self.tile);
        let top = self.fresh("repeat");
        let end = self.fresh("repeat_end");
        self.op(&format!("add $m11, $m11, -{}", frame.bytes()));
        self.op(&format!("setzi $m0, {}", r.trip_count));
        self.op("st32 $m0, $m11, $m15, 0");
        for (slot, buffer) in frame.slots() {
            let at = crate::lower::BufferRef { buffer, offset: 0 };
            let a = address(self.input.schedule, self.input.addresses, at, self.tile)?;
            self.op(&format!("setzi $m0, {a:#x}"));
            self.op(&format!("st32 $m0, $m11, $m15, {slot}"));
        }
        self.label(&top);
        for step in &r.body {
            self.step(step, Some(&frame))?;
        }
        // Advance every iterated base by its stride, then count down.
        for (slot, stride) in frame.strides() {
            self.op(&format!("ld32 $m0, $m11, $m15, {slot}"));
            self.op(&format!("setzi $m1, {stride:#x}"));
            self.op("add $m0, $m0, $m1");
            self.op(&format!("st32 $m0, $m11, $m15, {slot}"));
        }
        self.op("ld32 $m0, $m11, $m15, 0");
        self.op("add $m0, $m0, -1");
        self.op("st32 $m0, $m11, $m15, 0");
        self.op(&format!("brz $m0, {end}"));
        self.op(&format!("bri {top}"));
        self.label(&end);
        self.op(&format!("add $m11, $m11, {}", frame.bytes()));
        Ok(())
    }

    /// Stored rows (8-byte aligned, `sendpicp` needs it) and the idle row.
    fn emit_rows(&mut self) {
        let _ = writeln!(
            self.rows,
            "        .p2align 3\n.Lidle_row:\n        br $m10"
        );
        if let Some(rows) = self.exchange.stored.get(&self.physical) {
            for (i, row) in rows.iter().enumerate() {
                let _ = writeln!(self.rows, "        .p2align 3\n{}:", row_label(i));
                for w in &row.words {
                    let _ = writeln!(self.rows, "        .long {w:#010x}");
                }
            }
        }
    }
}

/// The data areas after a tile's code, in image order. (Repeat patch
/// tables and sharing lists are not here: they are data read by the
/// patchers and live in a placed data block, see `tables.rs`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area {
    /// Kernel argument blocks.
    Args,
    /// Exchange rows.
    Rows,
    /// End of the image.
    End,
}

/// Global label opening `area` in every tile program.
pub const fn area_label(area: Area) -> &'static str {
    match area {
        Area::Args => "ipuc_args",
        Area::Rows => "ipuc_rows",
        Area::End => "ipuc_end",
    }
}

fn row_label(stored: usize) -> String {
    format!(".Lrow_{stored}")
}
