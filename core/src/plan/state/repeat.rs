//! A structured Repeat as one transition: its body planned once, charged
//! for every iteration.

use super::*;
use crate::ir::RepeatView;

impl State {
    /// Extends the state by a Repeat whose body is planned as `body`.
    pub fn apply_repeat(
        &self,
        cx: &SearchCx<'_>,
        info: &RegionInfo,
        pos: u32,
        op: OpId,
        body: &Arc<BodyPlan>,
        mut mode: Mode<'_>,
    ) -> Result<State, Reject> {
        let mut s = self.clone();
        let rep = cx.graph.repeat(op).ok_or(Reject::Unaligned)?;
        let trip = rep.trip_count() as u64;
        let mut cost = body.cycles.times(trip);
        cost = cost.plus(s.copy_carried_inits(cx, &rep, body)?);
        // The body's code is emitted once; the frame is set up on every tile.
        s.add_code_tiles(
            body.code_all + crate::plan::code::repeat_frame_bytes(body.iterated.len()),
            &body.code_tiles,
        );
        s.store_sequences_in_body(cx, info, pos, op, &rep, body);
        let label = |_: ()| {
            (
                String::from("repeat"),
                cx.op_label(op),
                pos,
                format!("during the repeat body (op {pos}, ×{trip})"),
            )
        };
        let peak = s.check(
            cx,
            &[],
            Some((&body.dyn_tile, &body.dyn_il_tile)),
            &mut mode,
            &|| label(()),
        )?;
        s.peak = s.peak.max(peak);
        s.cycles = s.cycles.plus(cost);
        s.define_carried_results(cx, &rep, body);
        let operands: Vec<ValueId> = cx
            .graph
            .op(op)
            .map(|o| o.operands().to_vec())
            .unwrap_or_default();
        for v in operands {
            if info.last_use(v, pos) == pos {
                s.drop_value(cx, v);
            }
        }
        for &r in rep.results() {
            if info.last_use(r, pos) == pos {
                s.drop_value(cx, r);
            }
        }
        s.push(PlannedOp {
            op,
            plan: None,
            relayouts: Vec::new(),
            storage: Vec::new(),
            repeat: Some(body.clone()),
        });
        Ok(s)
    }

    /// Sequence elements read only here are stored by the body: their
    /// default storage is released, and the body's iterated storage (static
    /// from the start, so charged at every moment, this one included)
    /// replaces it. The same u64 sums as releasing and adding each
    /// allocation in turn ([`State::set_static`]): the released ones were
    /// added to the statics' usage, so nothing saturates, and the sums of
    /// both lists are worked out once (per Repeat and per body).
    fn store_sequences_in_body(
        &mut self,
        cx: &SearchCx<'_>,
        info: &RegionInfo,
        pos: u32,
        op: OpId,
        rep: &RepeatView<'_>,
        body: &BodyPlan,
    ) {
        let statics = Arc::make_mut(&mut self.statics);
        let mut released = Vec::new();
        for seq in rep.sequences() {
            for &v in seq {
                if self.values.get(&v).is_some_and(|l| l.layout.is_none())
                    && info.last_use(v, pos) == pos
                {
                    if let Some(a) = statics.remove(&v) {
                        released.push(a);
                    }
                }
            }
        }
        let mut replaced = Vec::new();
        for (arg, a) in &body.iterated {
            if let Some(old) = statics.insert(*arg, a.clone()) {
                replaced.push(old);
            }
        }
        if released.is_empty() && replaced.is_empty() && body.iterated.is_empty() {
            return;
        }
        let usage = Arc::make_mut(&mut self.static_usage);
        let mut il_changed = false;
        if !released.is_empty() {
            let sum = cx.released_sum(op, released);
            memory::add_usage(usage, &sum.usage, false);
            if let Some(il) = &sum.interleaved {
                memory::add_usage(Arc::make_mut(&mut self.static_il).as_mut_slice(), il, false);
                il_changed = true;
            }
        }
        for old in &replaced {
            accumulate(cx, old, usage, false);
            if old.class == MemoryClass::Interleaved {
                accumulate(
                    cx,
                    old,
                    Arc::make_mut(&mut self.static_il).as_mut_slice(),
                    false,
                );
                il_changed = true;
            }
        }
        memory::add_usage(usage, &body.iterated_usage, true);
        if let Some(il) = &body.iterated_il {
            memory::add_usage(Arc::make_mut(&mut self.static_il).as_mut_slice(), il, true);
            il_changed = true;
        }
        self.static_max = memory::peak_of(usage).0;
        if il_changed {
            self.static_il_max = memory::peak_of(&self.static_il).0;
        }
    }

    /// Carried initial values are copied into the carried buffers (in
    /// their own layout); returns the copies' cycles, their code added.
    fn copy_carried_inits(
        &mut self,
        cx: &SearchCx<'_>,
        rep: &RepeatView<'_>,
        body: &BodyPlan,
    ) -> Result<Cycles, Reject> {
        let mut cost = Cycles::default();
        // Carried initial values are copied into the carried buffers.
        for (&init, layout) in rep.carried_inits().iter().zip(&body.carried_layouts) {
            let elem = self.values.get(&init).map(|l| l.elem).unwrap_or(1);
            let (cycles, code) = cx
                .relayout_charge(*layout, *layout, elem)
                .ok_or(Reject::Unaligned)?;
            cost = cost.plus(cycles);
            self.add_code(&code);
        }
        Ok(cost)
    }

    /// The Repeat's results: each a carried buffer of its own, in the
    /// layout the body carries it in.
    fn define_carried_results(&mut self, cx: &SearchCx<'_>, rep: &RepeatView<'_>, body: &BodyPlan) {
        for ((&result, layout), &init) in rep
            .results()
            .iter()
            .zip(&body.carried_layouts)
            .zip(rep.carried_inits())
        {
            let elem = self.values.get(&init).map(|l| l.elem).unwrap_or(1);
            let a = alloc_for(
                cx.value_name(result),
                AllocationKind::Carried,
                MemoryClass::Standard,
                *layout,
                elem,
                1,
            );
            self.insert_root(cx, result, a);
            self.values.insert(
                result,
                ValueLoc {
                    layout: Some(*layout),
                    root: Some(result),
                    elem,
                },
            );
        }
    }
}
