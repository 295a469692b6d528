//! SRAM placement: gives every logical buffer of every tile an address.
//!
//! Input is one [`PlacementRequest`] per tile: the reserved ranges (runtime
//! state, code, exchange-row tables, host window) and the tile's buffers with
//! size, copies, alignment, region class and lifetime, plus pairs of buffers
//! that must not share an effective memory element. Output is a
//! [`TilePlacement`]: an address per buffer and the memory-map data (reserved
//! ranges, allocations with lifetimes, peak live bytes).
//!
//! Rules (`docs/facts/ipu21-target.md` §1.2, §2.10):
//! - buffers live at overlapping steps never overlap in memory;
//! - interleaved-class buffers go in region 1 (`0x80000..0xE7BB0`); standard
//!   buffers fill region 0's free data area first, then overflow to region 1;
//! - code and exchange-row ranges block every element they touch, including
//!   the 64-byte fetch look-ahead past their end;
//! - a Repeat-iterated sequence is `copies` blocks at a constant stride (one
//!   block rounded up to the alignment), so iteration `i` is at
//!   `base + i × stride`; carried buffers keep one address for the whole Repeat
//!   because their lifetime spans it;
//! - conflict pairs (an AMP kernel's left operand and output) land in
//!   different effective elements.
//!
//! ```
//! use ipuc_target::ipu21::topology::LogicalTile;
//! use ipuc_core::place::{place_tile, BufferId, BufferRequest, PlacementRequest, RegionClass};
//! let weights = BufferRequest {
//!     key: BufferId(0), name: "fc1.weight".into(), bytes: 1000, copies: 4,
//!     align: 32, class: RegionClass::Interleaved, first_step: 0, last_step: 9,
//! };
//! let tile = LogicalTile::new(7).unwrap();
//! let req = PlacementRequest { tile, buffers: vec![weights], ..Default::default() };
//! let placed = place_tile(&req).unwrap();
//! let a = placed.allocation(BufferId(0)).unwrap();
//! assert_eq!((a.range.start, a.stride), (0x80000, 1024));
//! assert_eq!(a.copy_address(3), Some(0x80000 + 3 * 1024));
//! ```

mod addresses;
mod allocate;
mod error;
mod map;
mod regions;
mod request;
mod schedule;
#[cfg(test)]
mod tests;

pub use addresses::{address, BufferAddresses, Unplaced};
pub use allocate::place_tile;
pub use error::{PlaceError, PlaceResult};
pub use map::{Allocation, ConstantBlock, MemoryPeak, ReservedEntry, TilePlacement};
pub use regions::{
    blocked_span, element_bounds, share_element, support_reserved, REGION0, REGION1,
};
pub use request::{
    BufferId, BufferRequest, ElementConflict, PlacementRequest, RegionClass, ReservedKind,
    ReservedRange,
};
pub use schedule::{place_schedule, requests, SchedulePlacement};
