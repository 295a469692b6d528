//! Floating-point operation counts (2 per multiply-accumulate), for
//! reports such as GFLOP/s of the reference or the simulator.
//!
//! Only the contractions are counted (matmul, both products inside
//! attention); elementwise work is a rounding error next to them
//! (docs/facts/siglip-and-fp8.md §1.5 counts the same way: ≈670.3 GFLOP for
//! So400m at 729 tokens).

use super::graph::Graph;
use super::id::{OpId, RegionId};
use super::op::OpKind;

impl Graph {
    /// FLOPs of one execution of `op` (a Repeat counts its body × trip count).
    pub fn op_flops(&self, op: OpId) -> u64 {
        let Some(o) = self.op(op) else { return 0 };
        let dims = |i: usize| {
            o.operands()
                .get(i)
                .and_then(|&v| self.ty(v))
                .map(|t| t.shape.dims())
                .unwrap_or(&[])
        };
        let out = o
            .results()
            .first()
            .and_then(|&v| self.ty(v))
            .map(|t| t.shape.dims())
            .unwrap_or(&[]);
        let count = |d: &[usize]| d.iter().fold(1u64, |acc, &x| acc.saturating_mul(x as u64));
        match o.kind() {
            OpKind::MatMul(mm) => {
                // out = [batch..., M, N]; K from operand a.
                let a = dims(0);
                let k = match (a.len(), mm.transpose_a) {
                    (0 | 1, _) => 0,
                    (n, false) => a[n - 1],
                    (n, true) => a[n - 2],
                };
                count(out).saturating_mul(2 * k as u64)
            }
            OpKind::Attention { .. } => {
                // q·kᵀ: out-sized [.., Sq, Sk] × Dk; p·v: [.., Sq, Dv] × Sk.
                let (q, k) = (dims(0), dims(1));
                let (Some(&dk), Some(&sk)) =
                    (q.last(), k.len().checked_sub(2).and_then(|i| k.get(i)))
                else {
                    return 0;
                };
                let dv = out.last().copied().unwrap_or(0) as u64;
                let rows = count(out) / dv.max(1); // batch·heads·Sq
                rows.saturating_mul(2 * sk as u64)
                    .saturating_mul(dk as u64 + dv)
            }
            OpKind::Repeat(r) => self
                .region_flops(r.body)
                .saturating_mul(u64::from(r.trip_count)),
            _ => 0,
        }
    }

    /// FLOPs of one execution of every op in `region`.
    pub fn region_flops(&self, region: RegionId) -> u64 {
        self.region(region)
            .map(|r| {
                r.ops()
                    .iter()
                    .fold(0u64, |acc, &op| acc.saturating_add(self.op_flops(op)))
            })
            .unwrap_or(0)
    }

    /// FLOPs of one run of the whole graph.
    pub fn flops(&self) -> u64 {
        self.region_flops(Graph::TOP)
    }
}
