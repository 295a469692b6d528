//! Planning: layouts, operator plans, the cost model, the per-tile memory
//! estimator and the Pareto beam search with cached Repeat-region frontiers.
//!
//! ```
//! use ipuc_core::ir::{DType, GraphBuilder, TensorType};
//! use ipuc_core::plan::{plan_graph, PlanConfig};
//!
//! let mut b = GraphBuilder::new();
//! let x = b.input("x", TensorType::new(DType::F16, [1, 16, 64]))?;
//! let w = b.parameter("w", TensorType::new(DType::F16, [64, 64]))?;
//! let y = b.matmul_transposed(x, w, DType::F16)?;
//! b.output("y", y)?;
//! let graph = b.finish()?;
//!
//! // Plan for 64 tiles, then lower to the address-independent tile program.
//! let plan = plan_graph(&graph, PlanConfig { tiles: 64, ..PlanConfig::default() }).unwrap();
//! let op = &plan.ops[0];
//! let gemm = op.plan.as_ref().unwrap(); // the one OpPlan cost, memory and lowering read
//! assert!(gemm.summary.starts_with("gemm 16x64x64"));
//! assert!(plan.peak_bytes <= plan.config.budget);
//! let schedule = ipuc_core::lower::lower(&graph, &plan).unwrap();
//! ipuc_core::lower::check::check(&schedule).unwrap();
//! # Ok::<(), ipuc_core::ir::IrError>(())
//! ```
//!
//! Map: [`layout`] (which tile holds which block), [`opplan`] (one
//! candidate implementation, described once), [`candidates`] (generators per
//! op kind), [`relayout`] (block moves between layouts), [`cost`] (cycles),
//! [`memory`] (per-tile estimator and rejection reports), [`code`] (the
//! per-tile estimate of the linked image, charged up to its fetch guard), [`region`],
//! [`state`] and [`search`] (the beam and the Repeat-region cache), and
//! [`listing`] (the chosen plan, one line per op).

pub mod block;
pub mod candidates;
pub mod charges;
pub mod code;
pub mod context;
pub mod cost;
pub mod error;
pub mod improve;
pub mod layout;
pub mod listing;
pub mod memory;
pub mod opplan;
pub mod planned;
pub mod relayout;

pub use block::TileBlock;
pub use cost::Cycles;
pub use error::{OpRef, PlanError, PlanResult};
pub use improve::{improve_plan, Improvement};
pub mod region;
pub mod search;
pub mod state;

pub use context::{
    BodySearch, PlanConfig, PlanStats, SearchJobs, DEFAULT_BEAM_WIDTH, DEFAULT_FIXED_CODE_BYTES,
};
pub use planned::{BodyPlan, OperandRelayout, PlannedOp, StorageChoice};
pub use search::{plan_graph, plan_graph_with, plan_graph_with_stats, Plan, SearchHooks};
#[cfg(test)]
pub(crate) mod tests;
