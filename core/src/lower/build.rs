//! Builds the [`TileSchedule`] from a chosen [`Plan`]: binds every slot of
//! every [`crate::plan::opplan::OpPlan`] to a buffer and copies its stages
//! verbatim, inserts the operand re-layouts the plan recorded (moves from
//! [`crate::plan::relayout::relayout`], the function the cost model priced),
//! and lowers the Repeat body once with iterated and carried buffers.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::schedule::*;
use crate::ir::{DType, Graph, OpKind, RegionId, RepeatView, ValueId};
use crate::plan::layout::Layout;
use crate::plan::memory::{Allocation, TileBytes};
use crate::plan::opplan::{PlannedCall, PlannedTransfer, Slot, SlotRef, Stage};
use crate::plan::region::RegionInfo;
use crate::plan::relayout::{relayout, Window};
use crate::plan::search::yield_in_place;
use crate::plan::TileBlock;
use crate::plan::{BodyPlan, Plan, PlannedOp};
use ipuc_target::ipu21::topology::{LogicalTile, TileOutOfRange};
use ipuc_target::kernel::Kernel;
use ipuc_target::lookup::LookupMap;

/// Why lowering failed (a plan inconsistent with its graph).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LowerError {
    /// A value the plan reads was never placed.
    UnplacedValue {
        /// The value.
        value: ValueId,
    },
    /// The graph does not match the plan (ids, kinds).
    Mismatch {
        /// What.
        what: &'static str,
    },
    /// A re-layout move was not word-aligned (the planner rejects these).
    UnalignedTransfer {
        /// Bytes per run.
        row_bytes: u32,
    },
    /// An AMP call reads or writes an operand at an offset into its buffer
    /// that is not 32-byte aligned (`docs/facts/ipu21-target.md` §2.10
    /// rule 6; the planner's AMP plans use offset 0).
    AmpOperandOffset {
        /// Kernel symbol name.
        kernel: &'static str,
        /// Operand index (0 = output).
        operand: u32,
        /// Offset into the buffer, bytes.
        offset: u32,
    },
    /// A planned tile past the machine (the planner's layouts are checked,
    /// so this is a plan that did not come from it).
    Tile(TileOutOfRange),
}

impl core::fmt::Display for LowerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::UnplacedValue { value } => {
                write!(f, "lowering: value v{} has no buffer", value.index())
            }
            Self::Mismatch { what } => {
                write!(f, "lowering: plan does not match the graph ({what})")
            }
            Self::UnalignedTransfer { row_bytes } => write!(
                f,
                "lowering: block move of {row_bytes} bytes is not word-aligned"
            ),
            Self::AmpOperandOffset {
                kernel,
                operand,
                offset,
            } => write!(
                f,
                "lowering: {kernel} operand {operand} at offset {offset} into its buffer is not 32-byte aligned (facts §2.10 rule 6)"
            ),
            Self::Tile(e) => write!(f, "lowering: {e}"),
        }
    }
}

impl core::error::Error for LowerError {}

type LResult<T> = Result<T, LowerError>;

/// A planned tile (plan arithmetic counts tiles as integers) as a checked
/// logical tile.
fn logical(tile: u32) -> LResult<LogicalTile> {
    LogicalTile::new(tile).map_err(LowerError::Tile)
}

/// A Repeat's carried value: its body argument, the yield that feeds it
/// back, its buffer and layout.
type Carried = (ValueId, ValueId, BufferId, Layout);

struct Builder<'g> {
    graph: &'g Graph,
    buffers: Vec<Buffer>,
    next_step: u32,
    /// Value → its buffer and layout (lookup only).
    vals: LookupMap<ValueId, (BufferId, Layout)>,
}

fn blocks_of(layout: &Layout, elem: u32) -> LResult<Vec<TileBlock>> {
    let mut v: Vec<TileBlock> = layout
        .placements()
        .map(|(tile, b)| {
            Ok(TileBlock {
                bytes: (b.elements() * elem as u64) as u32,
                tile: logical(tile)?,
                rows: b.rows,
                cols: b.cols,
            })
        })
        .collect::<LResult<_>>()?;
    v.sort_by_key(|b| b.tile);
    Ok(v)
}

impl<'g> Builder<'g> {
    fn dtype(&self, v: ValueId) -> LResult<DType> {
        self.graph
            .ty(v)
            .map(|t| t.dtype)
            .ok_or(LowerError::Mismatch { what: "value type" })
    }

    fn new_buffer(
        &mut self,
        name: String,
        role: BufferRole,
        dtype: DType,
        layout: &Layout,
        class: MemoryClass,
        copies: u32,
    ) -> LResult<BufferId> {
        let id = BufferId(self.buffers.len() as u32);
        let align = if class == MemoryClass::Interleaved {
            AMP_BUFFER_ALIGN
        } else {
            BASE_BUFFER_ALIGN
        };
        self.buffers.push(Buffer {
            id,
            name,
            role,
            dtype,
            shape: [layout.tensor_rows(), layout.tensor_cols()],
            align,
            class,
            first_step: StepIndex(u32::MAX),
            last_step: StepIndex(0),
            blocks: blocks_of(layout, dtype.size_bytes() as u32)?,
            copies: copies.max(1),
        });
        Ok(id)
    }

    fn scratch_buffer(
        &mut self,
        name: String,
        dtype: DType,
        blocks: Vec<TileBlock>,
        class: MemoryClass,
        align: u32,
    ) -> BufferId {
        let id = BufferId(self.buffers.len() as u32);
        let mut blocks = blocks;
        blocks.sort_by_key(|b| b.tile);
        self.buffers.push(Buffer {
            id,
            name,
            role: BufferRole::Scratch,
            dtype,
            shape: [0, 0],
            align,
            class,
            first_step: StepIndex(u32::MAX),
            last_step: StepIndex(0),
            blocks,
            copies: 1,
        });
        id
    }

    fn step_index(&mut self) -> StepIndex {
        let i = StepIndex(self.next_step);
        self.next_step += 1;
        i
    }

    fn source_buffer(&mut self, v: ValueId, a: &Allocation, role: BufferRole) -> LResult<()> {
        let TileBytes::Layout { layout, .. } = &a.tiles else {
            return Err(LowerError::Mismatch {
                what: "source storage",
            });
        };
        let dtype = self.dtype(v)?;
        let id = self.new_buffer(a.name.clone(), role, dtype, layout, a.class, a.copies)?;
        self.vals.insert(v, (id, *layout));
        Ok(())
    }

    fn map_ref(map: &BTreeMap<Slot, BufferId>, r: SlotRef) -> LResult<BufferRef> {
        map.get(&r.slot)
            .map(|&buffer| BufferRef {
                buffer,
                offset: r.offset,
            })
            .ok_or(LowerError::Mismatch {
                what: "slot without buffer",
            })
    }

    fn emit_stages(
        &mut self,
        stages: &[Stage],
        map: &BTreeMap<Slot, BufferId>,
        origin: &StepOrigin,
        out: &mut Vec<Step>,
    ) -> LResult<()> {
        for st in stages {
            let index = self.step_index();
            match st {
                Stage::Compute(calls) => {
                    let calls = calls
                        .iter()
                        .map(|c| self.call(c, map))
                        .collect::<LResult<Vec<_>>>()?;
                    out.push(Step::Compute(ComputeStep {
                        index,
                        origin: origin.clone(),
                        calls,
                    }));
                }
                Stage::Exchange(ts) => {
                    let transfers = ts
                        .iter()
                        .map(|t| Self::transfer(t, map))
                        .collect::<LResult<Vec<_>>>()?;
                    out.push(Step::Exchange(ExchangeStep {
                        index,
                        origin: origin.clone(),
                        transfers,
                    }));
                }
            }
        }
        Ok(())
    }

    fn call(&mut self, c: &PlannedCall, map: &BTreeMap<Slot, BufferId>) -> LResult<KernelCall> {
        let operands = c
            .operands
            .iter()
            .map(|r| Self::map_ref(map, *r))
            .collect::<LResult<Vec<_>>>()?;
        self.honour_amp_rules(&c.kernel, &operands)?;
        Ok(KernelCall {
            tile: logical(c.tile)?,
            kernel: c.kernel.clone(),
            operands,
        })
    }

    /// `docs/facts/ipu21-target.md` §2.10 rule 6 for an AMP call (GEMM,
    /// attention, partial attention): every operand 32-byte aligned (the
    /// buffer's alignment, which is also its Repeat stride's granule, and
    /// the call's offset into it), the output in interleaved memory, and a
    /// GEMM's weights in interleaved memory when the call claims them there
    /// (`b_interleaved`, which the kernel's timing relies on). The plan
    /// declares these classes; lowering makes them true for buffers the plan
    /// does not class (carried buffers a call writes in place). The third
    /// part of rule 6 (left stream and output in different effective
    /// elements) is placement's element conflict
    /// (`crate::place::requests`).
    fn honour_amp_rules(&mut self, kernel: &Kernel, operands: &[BufferRef]) -> LResult<()> {
        let weights_claimed = match kernel {
            Kernel::Gemm { b_interleaved, .. } => *b_interleaved,
            Kernel::Attention { .. } | Kernel::AttentionPartial { .. } => false,
            _ => return Ok(()),
        };
        for (i, r) in operands.iter().enumerate() {
            if !r.offset.is_multiple_of(AMP_BUFFER_ALIGN) {
                return Err(LowerError::AmpOperandOffset {
                    kernel: kernel.name(),
                    operand: i as u32,
                    offset: r.offset,
                });
            }
            let buf = self
                .buffers
                .get_mut(r.buffer.index())
                .ok_or(LowerError::Mismatch {
                    what: "kernel operand buffer",
                })?;
            buf.align = buf.align.max(AMP_BUFFER_ALIGN);
            if i == 0 || (i == 2 && weights_claimed) {
                buf.class = MemoryClass::Interleaved;
            }
        }
        Ok(())
    }

    fn transfer(t: &PlannedTransfer, map: &BTreeMap<Slot, BufferId>) -> LResult<BlockTransfer> {
        Ok(BlockTransfer {
            source_tile: logical(t.source_tile)?,
            source: Self::map_ref(map, t.source)?,
            source_pitch: t.source_pitch,
            rows: t.rows,
            row_bytes: t.row_bytes,
            destinations: t
                .destinations
                .iter()
                .map(|d| {
                    Ok(BlockDestination {
                        tile: logical(d.tile)?,
                        at: Self::map_ref(map, d.at)?,
                        pitch: d.pitch,
                    })
                })
                .collect::<LResult<Vec<_>>>()?,
        })
    }

    /// Moves `from` (buffer `src`) into `to` (buffer `dst`).
    #[allow(clippy::too_many_arguments)] // two (layout, buffer) endpoints + element size + where to emit
    fn emit_relayout(
        &mut self,
        from: &Layout,
        src: BufferId,
        to: &Layout,
        dst: BufferId,
        elem: u32,
        origin: &StepOrigin,
        out: &mut Vec<Step>,
    ) -> LResult<()> {
        let moves = relayout(
            from,
            Slot::Operand(0),
            to,
            Slot::Output,
            elem,
            Window::whole(to),
        )
        .map_err(|e| LowerError::UnalignedTransfer {
            row_bytes: e.row_bytes,
        })?;
        let map = BTreeMap::from([(Slot::Operand(0), src), (Slot::Output, dst)]);
        self.emit_stages(&moves.into_stages(), &map, origin, out)
    }

    fn lower_ops(
        &mut self,
        region: RegionId,
        ops: &[PlannedOp],
        carried: &[Carried],
        out: &mut Vec<Step>,
    ) -> LResult<()> {
        let info = RegionInfo::new(self.graph, region)
            .map_err(|_| LowerError::Mismatch { what: "region" })?;
        for (pos, p) in ops.iter().enumerate() {
            let op = self
                .graph
                .op(p.op)
                .ok_or(LowerError::Mismatch { what: "op" })?;
            let origin = StepOrigin {
                op: pos as u32,
                // The model's name for the op (the graph builder's label,
                // e.g. `encoder.layers.*.mlp.fc1`), else mnemonic#index.
                label: self.graph.label(p.op).map_or_else(
                    || format!("{}#{}", op.mnemonic(), p.op.index()),
                    String::from,
                ),
            };
            if let Some(body) = &p.repeat {
                self.lower_repeat(p, body, &origin, out)?;
                continue;
            }
            let plan = p.plan.as_ref().ok_or(LowerError::Mismatch {
                what: "op without plan",
            })?;
            let mut map = self.stage_operands(op.operands(), p, plan, &origin, out)?;
            let result = op.result().ok_or(LowerError::Mismatch { what: "result" })?;
            let out_buf = if plan.output_is_view {
                *map.get(&Slot::Operand(0)).ok_or(LowerError::Mismatch {
                    what: "view operand",
                })?
            } else if let Some(&(_, _, cbuf, _)) = carried.iter().find(|(arg, y, _, l)| {
                *y == result && yield_in_place(self.graph, &info, ops, *arg, *y, l)
            }) {
                cbuf
            } else {
                let dtype = self.dtype(result)?;
                self.new_buffer(
                    format!("{} result", origin.label),
                    BufferRole::Activation,
                    dtype,
                    &plan.output,
                    plan.output_class,
                    1,
                )?
            };
            map.insert(Slot::Output, out_buf);
            for (j, sc) in plan.scratch.iter().enumerate() {
                let id = self.scratch_buffer(
                    format!("{} {}", origin.label, sc.name),
                    sc.dtype,
                    (*sc.blocks).clone(),
                    sc.class,
                    sc.align,
                );
                map.insert(Slot::Scratch(j as u8), id);
            }
            self.emit_stages(&plan.stages, &map, &origin, out)?;
            self.vals.insert(result, (out_buf, plan.output));
        }
        Ok(())
    }

    /// Each operand's buffer by slot: its own, or (when the plan re-lays
    /// it out) a staging buffer the re-layout fills first.
    fn stage_operands(
        &mut self,
        operands: &[ValueId],
        p: &PlannedOp,
        plan: &crate::plan::opplan::OpPlan,
        origin: &StepOrigin,
        out: &mut Vec<Step>,
    ) -> LResult<BTreeMap<Slot, BufferId>> {
        let mut map = BTreeMap::new();
        for (i, &v) in operands.iter().enumerate() {
            let (buf, layout) = *self
                .vals
                .get(&v)
                .ok_or(LowerError::UnplacedValue { value: v })?;
            let slot = Slot::Operand(i as u8);
            match p.relayouts.iter().find(|r| r.operand as usize == i) {
                Some(r) => {
                    let dtype = self.dtype(v)?;
                    let class = plan
                        .operands
                        .get(i)
                        .map(|o| o.class)
                        .unwrap_or(MemoryClass::Standard);
                    let staging = self.new_buffer(
                        format!("{} operand {i} staging", origin.label),
                        BufferRole::Scratch,
                        dtype,
                        &r.to,
                        class,
                        1,
                    )?;
                    let o = StepOrigin {
                        op: origin.op,
                        label: format!("{} operand {i} relayout", origin.label),
                    };
                    self.emit_relayout(&layout, buf, &r.to, staging, r.elem, &o, out)?;
                    map.insert(slot, staging);
                }
                None => {
                    map.insert(slot, buf);
                }
            }
        }
        Ok(map)
    }

    fn lower_repeat(
        &mut self,
        p: &PlannedOp,
        body: &BodyPlan,
        origin: &StepOrigin,
        out: &mut Vec<Step>,
    ) -> LResult<()> {
        let rep = self
            .graph
            .repeat(p.op)
            .ok_or(LowerError::Mismatch { what: "repeat" })?;
        let trip = rep.trip_count() as u32;
        let carried = self.carry_in(&rep, body, origin, out)?;
        for (&outer, &arg) in rep.invariants().iter().zip(rep.invariant_args()) {
            let v = *self
                .vals
                .get(&outer)
                .ok_or(LowerError::UnplacedValue { value: outer })?;
            self.vals.insert(arg, v);
        }
        let mut iterated = Vec::new();
        for (idx, &arg) in rep.iterated_args().iter().enumerate() {
            let names = rep
                .sequence(idx)
                .iter()
                .map(|&v| self.source_name(v))
                .collect();
            let a = body
                .iterated
                .iter()
                .find(|(v, _)| *v == arg)
                .map(|(_, a)| a.clone())
                .ok_or(LowerError::UnplacedValue { value: arg })?;
            self.source_buffer(arg, &a, BufferRole::Iterated { names })?;
            iterated.push(self.vals[&arg].0);
        }
        let index = self.step_index();
        let mut steps = Vec::new();
        self.lower_ops(rep.body(), &body.ops, &carried, &mut steps)?;
        self.write_back(&carried, origin, &mut steps)?;
        for (&result, &(_, _, cbuf, layout)) in rep.results().iter().zip(&carried) {
            self.vals.insert(result, (cbuf, layout));
        }
        out.push(Step::Repeat(RepeatStep {
            index,
            origin: origin.clone(),
            trip_count: trip,
            iterated,
            carried: carried.iter().map(|c| c.2).collect(),
            body: steps,
        }));
        Ok(())
    }

    /// A Repeat's carried buffers, filled from the initial values before
    /// the loop: `(argument, yield, buffer, layout)` each.
    fn carry_in(
        &mut self,
        rep: &RepeatView<'g>,
        body: &BodyPlan,
        origin: &StepOrigin,
        out: &mut Vec<Step>,
    ) -> LResult<Vec<Carried>> {
        let mut carried = Vec::new();
        for (j, (&init, layout)) in rep
            .carried_inits()
            .iter()
            .zip(&body.carried_layouts)
            .enumerate()
        {
            let (ibuf, ilayout) = *self
                .vals
                .get(&init)
                .ok_or(LowerError::UnplacedValue { value: init })?;
            let dtype = self.dtype(init)?;
            let cbuf = self.new_buffer(
                format!("{} carried {j}", origin.label),
                BufferRole::Carried,
                dtype,
                layout,
                MemoryClass::Standard,
                1,
            )?;
            let o = StepOrigin {
                op: origin.op,
                label: format!("{} carried {j} init", origin.label),
            };
            self.emit_relayout(
                &ilayout,
                ibuf,
                layout,
                cbuf,
                dtype.size_bytes() as u32,
                &o,
                out,
            )?;
            let arg = rep.carried_args()[j];
            let y = rep
                .yields()
                .get(j)
                .copied()
                .ok_or(LowerError::Mismatch { what: "yield" })?;
            self.vals.insert(arg, (cbuf, *layout));
            carried.push((arg, y, cbuf, *layout));
        }
        Ok(carried)
    }

    /// Writes back the yields that were not produced in place into their
    /// carried buffers, at the end of the body.
    fn write_back(
        &mut self,
        carried: &[Carried],
        origin: &StepOrigin,
        steps: &mut Vec<Step>,
    ) -> LResult<()> {
        for (j, &(_, y, cbuf, layout)) in carried.iter().enumerate() {
            let (ybuf, ylayout) = *self
                .vals
                .get(&y)
                .ok_or(LowerError::UnplacedValue { value: y })?;
            if ybuf == cbuf {
                continue;
            }
            let elem = self.dtype(y)?.size_bytes() as u32;
            let o = StepOrigin {
                op: origin.op,
                label: format!("{} carried {j} write-back", origin.label),
            };
            self.emit_relayout(&ylayout, ybuf, &layout, cbuf, elem, &o, steps)?;
        }
        Ok(())
    }

    fn source_name(&self, v: ValueId) -> String {
        match self.graph.value(v).map(|x| x.def()) {
            Some(crate::ir::ValueDef::Result { op, .. }) => {
                match self.graph.op(op).map(|o| o.kind()) {
                    Some(OpKind::Parameter { name, .. }) | Some(OpKind::Input { name, .. }) => {
                        name.clone()
                    }
                    _ => format!("v{}", v.index()),
                }
            }
            _ => format!("v{}", v.index()),
        }
    }
}

/// Lowers `plan` (made for `graph` by [`crate::plan::plan_graph`]).
pub fn lower(graph: &Graph, plan: &Plan) -> LResult<TileSchedule> {
    let mut b = Builder {
        graph,
        buffers: Vec::new(),
        next_step: 0,
        vals: LookupMap::default(),
    };
    for (v, a) in &plan.sources {
        let role = match graph.value(*v).map(|x| x.def()) {
            Some(crate::ir::ValueDef::Result { op, .. }) => match graph.op(op).map(|o| o.kind()) {
                Some(OpKind::Input { name, .. }) => BufferRole::Input { name: name.clone() },
                Some(OpKind::Parameter { name, .. }) => {
                    BufferRole::Parameter { name: name.clone() }
                }
                Some(OpKind::Constant { .. }) => BufferRole::Constant {
                    op: op.index() as u32,
                },
                _ => {
                    return Err(LowerError::Mismatch {
                        what: "source kind",
                    })
                }
            },
            // Iterated Repeat arguments get their buffers with the Repeat.
            Some(crate::ir::ValueDef::Argument { .. }) => continue,
            None => {
                return Err(LowerError::Mismatch {
                    what: "source value",
                })
            }
        };
        b.source_buffer(*v, a, role)?;
    }
    let mut steps = Vec::new();
    b.lower_ops(graph.top(), &plan.ops, &[], &mut steps)?;
    let mut outputs = Vec::new();
    for o in graph.outputs() {
        let (buf, layout) = *b
            .vals
            .get(&o.value)
            .ok_or(LowerError::UnplacedValue { value: o.value })?;
        let dtype = b.dtype(o.value)?;
        outputs.push(OutputBinding {
            name: o.name.clone(),
            buffer: buf,
            dtype,
            shape: [layout.tensor_rows(), layout.tensor_cols()],
            blocks: blocks_of(&layout, dtype.size_bytes() as u32)?,
        });
    }
    let mut schedule = TileSchedule {
        buffers: b.buffers,
        steps,
        step_count: b.next_step,
        outputs,
    };
    super::lifetime::assign(&mut schedule);
    Ok(schedule)
}
