//! IPU21 target facts: geometry, instruction encodings, routes. Every
//! constant cites its source (see `docs/facts/ipu21-target.md`).

pub mod contexts;
pub mod exchange_model;
pub mod isa;
pub mod kernel_abi;
pub mod rates;
pub mod sram;
pub mod tile_set;
pub mod timing;
pub mod topology;
