//! ipuc-core: everything about compiling for the IPU21 that needs no I/O.
//!
//! `#![no_std]` + `alloc`: the IPU21 target facts and ISA (`ipu21`), the IR with
//! structured Repeat (`ir`), IPU numerics (`numeric`), exchange scheduling
//! (`exchange`), patch generation (`patch`), planning (`plan`), lowering
//! (`lower`), SRAM placement (`place`) and the package format (`package`).
//! Bad input is a typed error, never a panic.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod emit;
pub mod exchange;
pub mod ipu21;
pub mod ir;
pub mod kernel;
pub mod lower;
pub mod numeric;
pub mod package;
pub mod patch;
pub mod place;
pub mod plan;
pub mod runtime;
