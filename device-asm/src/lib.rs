//! The IPU21 static runtime's assembly source, at the top level of the
//! repository as the design card lays it out (`device-asm/`).
//!
//! This crate's only job is to hand the text to whoever assembles it
//! (`ipuc_core::runtime`); keeping the `.S` inside a crate keeps
//! `cargo package` working. Nothing binary is committed.
#![no_std]

/// The runtime's assembly source (`device-asm/static_runtime.S`).
pub const STATIC_RUNTIME: &str = include_str!("../static_runtime.S");
