//! Lowering: from a chosen [`crate::plan::Plan`] to the address-independent
//! [`schedule::TileSchedule`] that placement, exchange scheduling and
//! emission consume.
//!
//! ```ignore
//! let plan = ipuc_core::plan::plan_graph(&graph, Default::default())?;
//! let schedule = ipuc_core::lower::lower(&graph, &plan)?;
//! ```

mod build;
pub mod check;
mod frame;
mod lifetime;
pub mod oracle;
pub mod schedule;
#[cfg(test)]
mod tests;

pub use build::{lower, LowerError};
pub(crate) use frame::RepeatFrame;
pub use schedule::*;
