//! Local improvement after the beam search (the seeds'
//! `--optimization-steps N`): each step re-plans one top-level op at a time
//! with every other op's plan fixed — every candidate implementation of the
//! op (every frontier body for a Repeat) is tried in place — and keeps a
//! change only when the whole program's estimated cycles go down and it
//! still fits the per-tile budget. A step that improves nothing ends the
//! search early.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::context::SearchCx;
use super::error::{PlanError, PlanResult};
use super::memory;
use super::opplan::OpPlan;
use super::planned::BodyPlan;
use super::region::RegionInfo;
use super::search::{body_frontier, Plan};
use super::state::{Mode, Reject, State};
use crate::ir::{Graph, OpId};

/// What [`improve_plan`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Improvement {
    /// Steps asked for.
    pub steps: u32,
    /// Steps run (fewer when one found nothing to improve).
    pub steps_run: u32,
    /// Alternatives evaluated.
    pub tried: u64,
    /// Changes kept.
    pub accepted: u32,
    /// Estimated cycles of the beam search's plan.
    pub cycles_before: u64,
    /// Estimated cycles after improvement (≤ `cycles_before`).
    pub cycles_after: u64,
}

#[derive(Clone)]
enum Choice {
    Op(Arc<OpPlan>),
    Body(Arc<BodyPlan>),
}

impl Choice {
    fn same(&self, other: &Choice) -> bool {
        match (self, other) {
            (Choice::Op(a), Choice::Op(b)) => Arc::ptr_eq(a, b),
            (Choice::Body(a), Choice::Body(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

fn apply(
    cx: &SearchCx<'_>,
    info: &RegionInfo,
    s: &State,
    pos: usize,
    op: OpId,
    c: &Choice,
    mode: Mode<'_>,
) -> Result<State, Reject> {
    match c {
        Choice::Op(p) => s.apply(cx, info, pos as u32, op, p, mode),
        Choice::Body(b) => s.apply_repeat(cx, info, pos as u32, op, b, mode),
    }
}

/// Applies `choices[from..]` to `s`; `None` when a transition fails or the
/// result exceeds the budget.
fn finish(
    cx: &SearchCx<'_>,
    info: &RegionInfo,
    mut s: State,
    ops: &[OpId],
    choices: &[Choice],
    from: usize,
) -> Option<State> {
    for (pos, (op, c)) in ops.iter().zip(choices).enumerate().skip(from) {
        s = apply(cx, info, &s, pos, *op, c, Mode::Search).ok()?;
    }
    let (peak, _) = memory::peak_of(&s.tile_peaks());
    (peak <= cx.config.budget).then_some(s)
}

/// Runs up to `steps` local-improvement steps on `plan` (see the module
/// docs). With `steps == 0` the plan comes back unchanged.
pub fn improve_plan(graph: &Graph, plan: Plan, steps: u32) -> PlanResult<(Plan, Improvement)> {
    let mut stats = Improvement {
        steps,
        cycles_before: plan.cycles.total(),
        cycles_after: plan.cycles.total(),
        ..Improvement::default()
    };
    if steps == 0 || plan.ops.is_empty() {
        return Ok((plan, stats));
    }
    let cx = SearchCx::new(graph, plan.config);
    let info = RegionInfo::new(graph, graph.top())?;
    let start = State::start(&cx, &info, &[])
        .with_fixed_code(plan.config.fixed_code_bytes + super::code::PROGRAM_FIXED_BYTES);
    let ops: Vec<OpId> = plan.ops.iter().map(|p| p.op).collect();
    let mut choices: Vec<Choice> = plan
        .ops
        .iter()
        .map(|p| match (&p.plan, &p.repeat) {
            (Some(op), _) => Ok(Choice::Op(op.clone())),
            (None, Some(body)) => Ok(Choice::Body(body.clone())),
            _ => Err(PlanError::MalformedGraph {
                what: "planned op without a plan",
            }),
        })
        .collect::<PlanResult<_>>()?;
    let Some(baseline) = finish(&cx, &info, start.clone(), &ops, &choices, 0) else {
        return Ok((plan, stats));
    };
    let mut best = baseline.cycles.total();
    for _ in 0..steps {
        stats.steps_run += 1;
        let mut improved = false;
        let mut prefix = start.clone();
        for k in 0..ops.len() {
            let alternatives: Vec<Choice> = match &choices[k] {
                Choice::Op(_) => cx
                    .candidates_for(ops[k], &prefix)?
                    .iter()
                    .cloned()
                    .map(Choice::Op)
                    .collect(),
                Choice::Body(_) => match body_frontier(&cx, &prefix, ops[k])? {
                    Ok(bodies) => bodies.iter().cloned().map(Choice::Body).collect(),
                    Err(_) => Vec::new(),
                },
            };
            for alt in alternatives {
                if alt.same(&choices[k]) {
                    continue;
                }
                stats.tried += 1;
                let Ok(next) = apply(&cx, &info, &prefix, k, ops[k], &alt, Mode::Search) else {
                    continue;
                };
                let mut trial = choices.clone();
                trial[k] = alt;
                if let Some(done) = finish(&cx, &info, next, &ops, &trial, k + 1) {
                    if done.cycles.total() < best {
                        best = done.cycles.total();
                        choices = trial;
                        stats.accepted += 1;
                        improved = true;
                    }
                }
            }
            prefix = match apply(&cx, &info, &prefix, k, ops[k], &choices[k], Mode::Search) {
                Ok(s) => s,
                Err(_) => {
                    return Err(PlanError::MalformedGraph {
                        what: "optimization: a kept plan no longer applies",
                    })
                }
            };
        }
        if !improved {
            break;
        }
    }
    if stats.accepted == 0 {
        return Ok((plan, stats));
    }
    // The improved program, replayed exactly (per-tile at every moment).
    let mut record = memory::empty_usage();
    let mut s = start;
    for (pos, (op, c)) in ops.iter().zip(&choices).enumerate() {
        s = apply(&cx, &info, &s, pos, *op, c, Mode::Exact(&mut record)).map_err(|_| {
            PlanError::MalformedGraph {
                what: "optimization: exact replay of the improved plan failed",
            }
        })?;
    }
    let tile_peaks = s.tile_peaks();
    let (peak_bytes, peak_tile) = memory::peak_of(&tile_peaks);
    if peak_bytes > plan.config.budget {
        return Ok((plan, stats));
    }
    stats.cycles_after = s.cycles.total();
    let mut plan_stats = plan.stats;
    plan_stats.candidates_screened += stats.tried;
    Ok((
        Plan {
            ops: s.planned_ops(),
            sources: s.statics().clone(),
            cycles: s.cycles,
            peak_bytes,
            peak_tile,
            tile_peaks: Arc::new(tile_peaks),
            code_bytes: Arc::new(s.code_bytes()),
            stats: plan_stats,
            config: plan.config,
        },
        stats,
    ))
}
