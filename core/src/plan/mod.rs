//! Planning: layouts, operator plans, the cost model, the per-tile memory
//! estimator and the Pareto beam search with cached Repeat-region frontiers.

pub mod candidates;
pub mod cost;
pub mod error;
pub mod layout;
pub mod memory;
pub mod opplan;
pub mod relayout;

pub use cost::Cycles;
pub use error::{PlanError, PlanResult};
pub mod region;
pub mod search;
pub mod state;

pub use search::{
    plan_graph, plan_graph_with_stats, BodyPlan, Plan, PlanConfig, PlanStats, DEFAULT_BEAM_WIDTH,
};
pub use state::{OperandRelayout, PlannedOp, StorageChoice};
#[cfg(test)]
mod tests;
