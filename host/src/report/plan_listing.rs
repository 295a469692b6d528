//! `--plan-output`: the chosen plan as text, one line per op with the
//! planner's estimate, so a person can see which grid and weight mode each
//! GEMM got and where the estimated cycles go.

use std::fmt::Write as _;

use ipuc_core::ir::Graph;
use ipuc_core::pipeline::CompileReport;

/// The listing: a header with the plan's totals, then one line per op.
pub fn plan_listing(graph: &Graph, report: &CompileReport) -> String {
    let mut text = format!(
        "# chosen plan: {} ops, estimated {} cycles in all (planner model; one line per op, a Repeat's body indented, its cycles one iteration)\n",
        report.plan_lines.len(),
        report.estimated_cycles
    );
    text.push_str("#    op  est. cycles  (compute + exchange)  label: implementation [operands re-laid out first]\n");
    for line in &report.plan_lines {
        let label = graph.label(line.op).unwrap_or("-");
        let indent = "  ".repeat(line.depth as usize);
        let _ = write!(
            text,
            "{:>7} {:>12}  ({:>9} + {:>9})  {indent}{label}: {}",
            line.op.index(),
            line.cycles.total(),
            line.cycles.compute,
            line.cycles.exchange,
            line.summary
        );
        if !line.relayouts.is_empty() {
            let ops: Vec<String> = line.relayouts.iter().map(u8::to_string).collect();
            let _ = write!(text, " [re-laid out: operand {}]", ops.join(", "));
        }
        text.push('\n');
    }
    text
}
