//! The transition: extend a state by one planned op (its allocations, frees
//! and code), after the check.

use super::*;

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
        let mut cost = plan.cost;
        let mut relayouts = Vec::new();
        let mut storage = Vec::new();
        let mut transient: Vec<Arc<Allocation>> = Vec::new();
        let mut view_root: Option<Arc<Allocation>> = None;
        for (i, (&v, req)) in operands.iter().zip(&plan.operands).enumerate() {
            let Some(loc) = s.values.get(&v).copied() else {
                return Err(Reject::Unaligned);
            };
            let current = match loc.layout {
                Some(l) => l,
                None => {
                    let layout = req.storage.unwrap_or(req.layout);
                    let class = if req.storage.is_some() {
                        MemoryClass::Standard
                    } else {
                        req.class
                    };
                    let copies = s.statics.get(&v).map(|a| a.copies).unwrap_or(1);
                    let kind = s
                        .statics
                        .get(&v)
                        .map(|a| a.kind)
                        .unwrap_or(AllocationKind::Parameter);
                    s.set_static(
                        v,
                        Some(alloc_for(
                            cx.value_name(v),
                            kind,
                            class,
                            layout,
                            loc.elem,
                            copies,
                        )),
                    );
                    if let Some(l) = s.values.get_mut(&v) {
                        l.layout = Some(layout);
                    }
                    storage.push(StorageChoice {
                        value: v,
                        layout,
                        class,
                    });
                    layout
                }
            };
            if current != req.layout {
                cost = cost.plus(
                    cx.relayout_cost(current, req.layout, loc.elem)
                        .ok_or(Reject::Unaligned)?,
                );
                if let Some(code) = cx.relayout_code(current, req.layout, loc.elem) {
                    s.add_code(&code);
                }
                relayouts.push(OperandRelayout {
                    operand: i as u8,
                    from: current,
                    to: req.layout,
                    elem: loc.elem,
                });
                let a = alloc_for(
                    format!("{} operand {i} staging", cx.op_label(op)),
                    AllocationKind::Staging,
                    req.class,
                    req.layout,
                    loc.elem,
                    1,
                );
                if i == 0 && plan.output_is_view {
                    view_root = Some(a.clone());
                }
                transient.push(a);
            }
        }
        for sc in &plan.scratch {
            transient.push(Arc::new(Allocation {
                name: format!("{} {}", cx.op_label(op), sc.name),
                kind: AllocationKind::Scratch,
                class: sc.class,
                tiles: TileBytes::Blocks(sc.blocks.clone()),
                copies: 1,
            }));
        }
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
        // Define the result.
        let root = match out_alloc {
            Some(a) => {
                s.insert_root(result, a);
                Some(result)
            }
            None => {
                // A view of operand 0's buffer (or of static storage).
                let r = operands
                    .first()
                    .and_then(|v| s.values.get(v))
                    .and_then(|l| l.root);
                if let Some(r) = r {
                    if let Some(root) = s.roots.get_mut(&r) {
                        root.users += 1;
                    }
                }
                r
            }
        };
        s.values.insert(
            result,
            ValueLoc {
                layout: Some(plan.output),
                root,
                elem: out_elem,
            },
        );
        for &v in operands {
            if info.last_use(v, pos) == pos {
                s.drop_value(v);
            }
        }
        if info.last_use(result, pos) == pos {
            s.drop_value(result);
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
}
