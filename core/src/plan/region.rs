//! Static facts about a region the search needs: which ops it plans, which
//! values are sources whose storage a consumer chooses, and where each value
//! is used last.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use super::error::{PlanError, PlanResult};
use crate::ir::{Graph, OpId, OpKind, RegionId, ValueId};

/// Position meaning "live until the region ends" (yields, graph outputs).
pub const LIVE_TO_END: u32 = u32::MAX;

/// Who writes a source value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// Graph input (host, every run).
    Input(String),
    /// Parameter (host, once).
    Parameter(String),
    /// Literal (host, once).
    Constant(OpId),
    /// Iterated Repeat argument: `trip_count` copies, one per iteration.
    Iterated {
        /// Copies kept.
        trip_count: u32,
    },
}

/// One region, analysed.
#[derive(Clone, Debug)]
pub struct RegionInfo {
    /// The region.
    pub region: RegionId,
    /// Ops the search plans, in order (sources excluded).
    pub ops: Vec<OpId>,
    /// Values whose storage their first consumer chooses.
    pub sources: Vec<(ValueId, SourceKind)>,
    /// Last position (index into `ops`) reading each value.
    pub last_use: BTreeMap<ValueId, u32>,
}

impl RegionInfo {
    /// Analyses `region`. `kept` values (graph outputs, yields) live to the end.
    pub fn new(graph: &Graph, region: RegionId) -> PlanResult<Self> {
        let r = graph
            .region(region)
            .ok_or(PlanError::MalformedGraph { what: "region" })?;
        let mut ops = Vec::new();
        let mut sources = Vec::new();
        let mut last_use = BTreeMap::new();
        if let Some(parent) = r.parent() {
            let rep = graph
                .repeat(parent)
                .ok_or(PlanError::MalformedGraph { what: "repeat" })?;
            for &arg in rep.iterated_args() {
                sources.push((
                    arg,
                    SourceKind::Iterated {
                        trip_count: rep.trip_count() as u32,
                    },
                ));
            }
        }
        for &id in r.ops() {
            let op = graph
                .op(id)
                .ok_or(PlanError::MalformedGraph { what: "op" })?;
            let source = match op.kind() {
                OpKind::Input { name, .. } => Some(SourceKind::Input(name.clone())),
                OpKind::Parameter { name, .. } => Some(SourceKind::Parameter(name.clone())),
                OpKind::Constant { .. } => Some(SourceKind::Constant(id)),
                _ => None,
            };
            if let Some(kind) = source {
                let v = op.result().ok_or(PlanError::MalformedGraph {
                    what: "source result",
                })?;
                sources.push((v, kind));
                continue;
            }
            let pos = ops.len() as u32;
            for &v in op.operands() {
                last_use.insert(v, pos);
            }
            ops.push(id);
        }
        for &v in r.yields() {
            last_use.insert(v, LIVE_TO_END);
        }
        if r.parent().is_none() {
            for out in graph.outputs() {
                last_use.insert(out.value, LIVE_TO_END);
            }
        }
        Ok(RegionInfo {
            region,
            ops,
            sources,
            last_use,
        })
    }

    /// Last use of `v`; values never read die right after they are made.
    pub fn last_use(&self, v: ValueId, defined_at: u32) -> u32 {
        self.last_use.get(&v).copied().unwrap_or(defined_at)
    }
}
