//! Buffer lifetimes in pre-order step indices.
//!
//! Host-written buffers (inputs, parameters, constants, iterated sequences)
//! live for the whole program; outputs live to the end. Any buffer a Repeat
//! body touches that was first touched before the Repeat lives until the
//! body's last step, so it survives every iteration.

use alloc::vec::Vec;

use bitvec::slice::BitSlice;
use bitvec::vec::BitVec;

use super::schedule::*;

fn refs_of(step: &Step, out: &mut Vec<BufferId>) {
    match step {
        Step::Compute(c) => out.extend(
            c.calls
                .iter()
                .flat_map(|k| k.operands.iter().map(|r| r.buffer)),
        ),
        Step::Exchange(e) => {
            for t in &e.transfers {
                out.push(t.source.buffer);
                out.extend(t.destinations.iter().map(|d| d.at.buffer));
            }
        }
        Step::Repeat(r) => {
            out.extend(r.iterated.iter().copied());
            out.extend(r.carried.iter().copied());
        }
    }
}

/// Last pre-order index inside `steps` (or `fallback` when empty).
fn last_index(steps: &[Step], fallback: u32) -> u32 {
    match steps.last() {
        Some(Step::Repeat(r)) => last_index(&r.body, r.index.0),
        Some(s) => s.index().0,
        None => fallback,
    }
}

fn walk(steps: &[Step], first: &mut [u32], last: &mut [u32], repeats: &mut Vec<(u32, u32)>) {
    let mut refs = Vec::new();
    for s in steps {
        refs.clear();
        refs_of(s, &mut refs);
        let i = s.index().0;
        for b in &refs {
            let b = b.index();
            if b < first.len() {
                first[b] = first[b].min(i);
                last[b] = last[b].max(i);
            }
        }
        if let Step::Repeat(r) = s {
            repeats.push((r.index.0, last_index(&r.body, r.index.0)));
            walk(&r.body, first, last, repeats);
        }
    }
}

/// Marks in `touched` (a bit per buffer id) every buffer `steps` or their
/// Repeat bodies name; `refs` is scratch.
fn touched_in(steps: &[Step], refs: &mut Vec<BufferId>, touched: &mut BitSlice) {
    for s in steps {
        refs.clear();
        refs_of(s, refs);
        for b in refs.iter() {
            if let Some(mut bit) = touched.get_mut(b.index()) {
                *bit = true;
            }
        }
        if let Step::Repeat(r) = s {
            touched_in(&r.body, refs, touched);
        }
    }
}

/// Fills `first_step`/`last_step` of every buffer.
pub fn assign(s: &mut TileSchedule) {
    let n = s.buffers.len();
    let mut first = alloc::vec![u32::MAX; n];
    let mut last = alloc::vec![0u32; n];
    let mut repeats = Vec::new();
    walk(&s.steps, &mut first, &mut last, &mut repeats);
    // Values crossing iterations survive the whole body.
    let mut stack = Vec::new();
    s.visit(|step, _| {
        if let Step::Repeat(r) = step {
            stack.push((r.index.0, last_index(&r.body, r.index.0), r.body.clone()));
        }
    });
    let (mut refs, mut inside) = (Vec::new(), BitVec::<usize>::repeat(false, n));
    for (start, end, body) in stack {
        inside.fill(false);
        touched_in(&body, &mut refs, &mut inside);
        for b in inside.iter_ones() {
            if first[b] <= start {
                last[b] = last[b].max(end);
            }
        }
    }
    let end = s.step_count.saturating_sub(1);
    for o in &s.outputs {
        if let Some(l) = last.get_mut(o.buffer.index()) {
            *l = end;
        }
    }
    for (i, buf) in s.buffers.iter_mut().enumerate() {
        let host = matches!(
            buf.role,
            BufferRole::Input { .. }
                | BufferRole::Parameter { .. }
                | BufferRole::Constant { .. }
                | BufferRole::Iterated { .. }
        );
        if host {
            buf.first_step = StepIndex(0);
            buf.last_step = StepIndex(end);
        } else {
            let f = if first[i] == u32::MAX { 0 } else { first[i] };
            buf.first_step = StepIndex(f);
            buf.last_step = StepIndex(last[i].max(f));
        }
    }
}
