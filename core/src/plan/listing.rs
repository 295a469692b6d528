//! The chosen plan as lines a person reads (`ipuc … --plan-output`): one
//! line per op in program order, a Repeat's body indented under it, each
//! with the implementation the search kept and the planner's own estimate.
//! Labels are the caller's (core keeps op ids; the host knows the names).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::cost::Cycles;
use super::planned::PlannedOp;
use super::search::Plan;
use crate::ir::OpId;

/// One op of the chosen plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanLine {
    /// Repeat nesting (0 for the top region).
    pub depth: u32,
    /// The op.
    pub op: OpId,
    /// Its implementation (`OpPlan::summary`), or the Repeat body's shape.
    pub summary: String,
    /// The planner's estimate of the op's own stages (for a Repeat: one
    /// iteration of its body); operand re-layouts are not included.
    pub cycles: Cycles,
    /// Operand positions re-laid out before the op runs.
    pub relayouts: Vec<u8>,
}

/// The plan's ops, depth first.
pub fn plan_lines(plan: &Plan) -> Vec<PlanLine> {
    let mut lines = Vec::new();
    push_ops(&plan.ops, 0, &mut lines);
    lines
}

fn push_ops(ops: &[PlannedOp], depth: u32, lines: &mut Vec<PlanLine>) {
    for op in ops {
        let relayouts = op.relayouts.iter().map(|r| r.operand).collect();
        match (&op.plan, &op.repeat) {
            (Some(p), _) => lines.push(PlanLine {
                depth,
                op: op.op,
                summary: p.summary.clone(),
                cycles: p.cost,
                relayouts,
            }),
            (None, Some(body)) => {
                lines.push(PlanLine {
                    depth,
                    op: op.op,
                    summary: format!("repeat body of {} ops", body.ops.len()),
                    cycles: body.cycles,
                    relayouts,
                });
                push_ops(&body.ops, depth.saturating_add(1), lines);
            }
            (None, None) => {}
        }
    }
}
