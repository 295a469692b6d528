//! The transition: extend a state by one planned op (its allocations, frees
//! and code), after the check.

use super::*;
use crate::plan::opplan::OperandPlan;

/// What staging an op's operands adds to it.
struct StagedOperands {
    /// The plan's cycles plus the re-layouts'.
    cost: Cycles,
    relayouts: Vec<OperandRelayout>,
    storage: Vec<StorageChoice>,
    /// Staging buffers live during the op.
    transient: Vec<Arc<Allocation>>,
    /// Operand 0's staging buffer, when the result is a view of it.
    view_root: Option<Arc<Allocation>>,
}

impl State {
    /// Extends the state by `op` implemented as `plan` at position `pos`.
    pub fn apply(
        &self,
        cx: &SearchCx<'_>,
        info: &RegionInfo,
        pos: u32,
        op: OpId,
        plan: &Arc<OpPlan>,
        mut mode: Mode<'_>,
    ) -> Result<State, Reject> {
        let mut s = self.clone();
        let graph_op = cx.graph.op(op).ok_or(Reject::Unaligned)?;
        let operands = graph_op.operands();
        let StagedOperands {
            cost,
            relayouts,
            storage,
            mut transient,
            view_root,
        } = s.stage_operands(cx, op, plan, operands)?;
        transient.extend(plan.scratch.iter().map(|sc| {
            Arc::new(Allocation {
                name: format!("{} {}", cx.op_label(op), sc.name),
                kind: AllocationKind::Scratch,
                class: sc.class,
                tiles: TileBytes::Blocks(sc.blocks.clone()),
                copies: 1,
            })
        }));
        let result = graph_op.result().ok_or(Reject::Unaligned)?;
        let out_elem = cx.view(result).map(|w| w.elem()).unwrap_or(1);
        let out_alloc = if plan.output_is_view {
            view_root
        } else {
            let a = alloc_for(
                cx.value_name(result),
                AllocationKind::Activation,
                plan.output_class,
                plan.output,
                out_elem,
                1,
            );
            transient.push(a.clone());
            Some(a)
        };
        s.add_code(&cx.plan_code(plan));
        let peak = s.check(cx, &transient, None, &mut mode, &|| {
            (
                String::from(graph_op.mnemonic()),
                cx.op_label(op),
                pos,
                format!("during {} (op {pos}: {})", cx.op_label(op), plan.summary),
            )
        })?;
        s.peak = s.peak.max(peak);
        s.cycles = s.cycles.plus(cost);
        s.define_result(cx, result, out_alloc, operands, plan.output, out_elem);
        // Operands used for the last time here, and a result never used.
        for v in operands.iter().copied().chain([result]) {
            if info.last_use(v, pos) == pos {
                s.drop_value(cx, v);
            }
        }
        s.push(PlannedOp {
            op,
            plan: Some(plan.clone()),
            relayouts,
            storage,
            repeat: None,
        });
        Ok(s)
    }

    /// Each operand where the plan wants it: a source's storage chosen,
    /// an operand in another layout re-laid out into a staging buffer
    /// (operand 0's is the result's root when the result is a view).
    fn stage_operands(
        &mut self,
        cx: &SearchCx<'_>,
        op: OpId,
        plan: &OpPlan,
        operands: &[ValueId],
    ) -> Result<StagedOperands, Reject> {
        let mut cost = plan.cost;
        let mut relayouts = Vec::new();
        let mut storage = Vec::new();
        let mut transient: Vec<Arc<Allocation>> = Vec::new();
        let mut view_root: Option<Arc<Allocation>> = None;
        for (i, (&v, req)) in operands.iter().zip(&plan.operands).enumerate() {
            let Some(loc) = self.values.get(&v).copied() else {
                return Err(Reject::Unaligned);
            };
            let current = match loc.layout {
                Some(l) => l,
                None => self.choose_storage(cx, v, loc.elem, req, &mut storage),
            };
            if current != req.layout {
                let relayout = OperandRelayout {
                    operand: i as u8,
                    from: current,
                    to: req.layout,
                    elem: loc.elem,
                };
                cost = cost.plus(self.stage_relayout(cx, &relayout)?);
                let a = relayout_staging(cx, op, &relayout, req.class);
                relayouts.push(relayout);
                if i == 0 && plan.output_is_view {
                    view_root = Some(a.clone());
                }
                transient.push(a);
            }
        }
        Ok(StagedOperands {
            cost,
            relayouts,
            storage,
            transient,
            view_root,
        })
    }

    /// A source operand whose storage is not chosen yet gets the plan's:
    /// its static allocation in that layout (the storage layout and
    /// standard memory when the plan stages it from there), recorded in
    /// `storage`. Returns the layout chosen.
    fn choose_storage(
        &mut self,
        cx: &SearchCx<'_>,
        v: ValueId,
        elem: u32,
        req: &OperandPlan,
        storage: &mut Vec<StorageChoice>,
    ) -> Layout {
        let layout = req.storage.unwrap_or(req.layout);
        let class = if req.storage.is_some() {
            MemoryClass::Standard
        } else {
            req.class
        };
        let copies = self.statics.get(&v).map(|a| a.copies).unwrap_or(1);
        let kind = self
            .statics
            .get(&v)
            .map(|a| a.kind)
            .unwrap_or(AllocationKind::Parameter);
        self.set_static(
            cx,
            v,
            Some(alloc_for(
                cx.value_name(v),
                kind,
                class,
                layout,
                elem,
                copies,
            )),
        );
        if let Some(l) = self.values.get_mut(&v) {
            l.layout = Some(layout);
        }
        storage.push(StorageChoice {
            value: v,
            layout,
            class,
        });
        layout
    }

    /// The code of re-laying an operand out (added to the state's code);
    /// returns its cycles.
    fn stage_relayout(&mut self, cx: &SearchCx<'_>, r: &OperandRelayout) -> Result<Cycles, Reject> {
        let (cycles, code) = cx
            .relayout_charge(r.from, r.to, r.elem)
            .ok_or(Reject::Unaligned)?;
        self.add_code(&code);
        Ok(cycles)
    }

    /// Defines `result`: its own dynamic root `out_alloc`, or (without
    /// one) a view of operand 0's root, which gains a user.
    fn define_result(
        &mut self,
        cx: &SearchCx<'_>,
        result: ValueId,
        out_alloc: Option<Arc<Allocation>>,
        operands: &[ValueId],
        output: Layout,
        out_elem: u32,
    ) {
        let root = match out_alloc {
            Some(a) => {
                self.insert_root(cx, result, a);
                Some(result)
            }
            None => {
                // A view of operand 0's buffer (or of static storage).
                let r = operands
                    .first()
                    .and_then(|v| self.values.get(v))
                    .and_then(|l| l.root);
                if let Some(r) = r {
                    if let Some(root) = self.roots.get_mut(&r) {
                        root.users += 1;
                    }
                }
                r
            }
        };
        self.values.insert(
            result,
            ValueLoc {
                layout: Some(output),
                root,
                elem: out_elem,
            },
        );
    }
}

/// The staging buffer an operand is re-laid out into, live during the op.
fn relayout_staging(
    cx: &SearchCx<'_>,
    op: OpId,
    r: &OperandRelayout,
    class: MemoryClass,
) -> Arc<Allocation> {
    alloc_for(
        format!("{} operand {} staging", cx.op_label(op), r.operand),
        AllocationKind::Staging,
        class,
        r.to,
        r.elem,
        1,
    )
}
