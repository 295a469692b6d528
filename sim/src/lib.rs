//! The embedded IPU21 tile simulator: its own crate over `ipuc-target`
//! only, so it reads packages and the kernel ABI and cannot name the
//! compiler.
//!
//! Supervisor and worker code is interpreted from the words in SRAM (so
//! patched exchange rows and the runtime's worker patcher run for real);
//! compute kernels are native [`Codelet`]s; exchange is resolved per
//! superstep by an [`ExchangeFabric`]. Timing follows the barrel model in
//! [`cycle`].
//!
//! ```
//! use ipuc_sim::{Device, Tile};
//! use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;
//! // `setzi $m1, 5` ; `br $m15` (branch to 0: the supervisor halts)
//! let code: Vec<u8> = [0x1910_0005u32, 0x43F0_0000]
//!     .iter().flat_map(|w| w.to_le_bytes()).collect();
//! let mut tile = Tile::new(ipuc_target::ipu21::topology::PhysicalTile::new(0).unwrap());
//! tile.load(APPLICATION_LOAD_BASE, &code).unwrap();
//! tile.start_supervisor(APPLICATION_LOAD_BASE);
//! let mut device = Device::new(vec![tile]);
//! let run = device.run(1_000_000).unwrap();
//! assert_eq!(device.tiles()[0].supervisor().m[1], 5);
//! assert_eq!(run.cycles, 7); // two supervisor issues, six cycles apart
//! ```

pub mod bsp;
pub mod codelet;
pub mod codelets;
pub mod context;
pub mod csr;
pub mod cycle;
mod execute;
pub mod fabric;
pub mod fault;
/// Matrix products: how an AMP product accumulates
/// (`docs/facts/device-numerics.md` §3), which the codelets run.
pub mod gemm;
pub mod kernel_timing;
pub mod memory;
pub mod op;
pub mod phase_memory;
pub mod profile;
pub mod row_call;
pub mod tile;
mod watch;
pub mod witness;

pub use bsp::{Device, DeviceError, DeviceRun, ExchangeFabric, NoExchange, Superstep};
pub use codelet::{
    Codelet, CodeletCall, CodeletCharge, CodeletFailure, CodeletTable, FnCodelet, OperandFault,
    OperandRule,
};
pub use context::{Context, ContextId, ContextState};
pub use fault::{ExchangeError, FaultKind, SimFault};
pub use memory::{AccessError, TileMemory};
pub use profile::{CycleSample, SampleKind};
pub use row_call::RowCall;
pub use tile::{StopReason, Tile};
pub use watch::CHECK_INTERVAL;

#[cfg(test)]
mod tests;
