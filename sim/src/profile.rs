//! Per-tile cycle samples for profiles.

use std::sync::Arc;

/// What a [`CycleSample`] covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SampleKind {
    /// Tile-local execution from the release of global sync `index − 1` (or
    /// the start) to this tile's arrival at global sync `index` (or its halt).
    Compute { superstep: u64 },
    /// Waiting at global sync `superstep` from arrival to release.
    SyncWait { superstep: u64, zone: u8 },
    /// One native codelet call (its cycles are the kernel timing model's,
    /// i.e. modelled); `arg_block` is the address of the argument block it
    /// read, where a report finds the call the planner estimated.
    Codelet {
        name: Arc<str>,
        entry: u32,
        arg_block: Option<u32>,
    },
    /// Exchange work charged by the exchange fabric (label chosen by it).
    Exchange { superstep: u64, label: Arc<str> },
}

/// A span of tile cycles `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CycleSample {
    pub kind: SampleKind,
    pub start: u64,
    pub end: u64,
}

impl CycleSample {
    pub fn cycles(&self) -> u64 {
        self.end - self.start
    }
}
