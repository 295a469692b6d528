//! ipuc-core: everything about compiling for the IPU21 that needs no I/O.
//!
//! A graph in, a package out, with this crate alone (`no_std` + `alloc`, no
//! threads; the `examples/embed` crate does exactly this and `cargo xtask
//! ci` builds it for `thumbv7em-none-eabi`):
//!
//! ```
//! use ipuc_core::ir::{DType, GraphBuilder, TensorType};
//! use ipuc_target::package;
//! use ipuc_core::pipeline::{compile, CompileOptions};
//!
//! // y = gelu(x · wᵀ)
//! let mut b = GraphBuilder::new();
//! let x = b.input("x", TensorType::new(DType::F16, [1, 8, 32]))?;
//! let w = b.parameter("w", TensorType::new(DType::F16, [16, 32]))?;
//! let y = b.matmul_transposed(x, w, DType::F16)?;
//! let y = b.gelu_tanh(y)?;
//! b.output("y", y)?;
//! let graph = b.finish()?;
//!
//! // Plan, lower, place, schedule the exchange, emit, link, package.
//! let options = CompileOptions { tiles: 4, ..CompileOptions::default() };
//! let written = compile(&graph, &options).unwrap();
//! let bytes = package::write(&written).unwrap();
//!
//! // What a device loads: the validating reader gives the same package.
//! let read = package::read(&bytes).unwrap();
//! assert_eq!(read, written);
//! assert!(read.tiles.len() <= 4);
//! # Ok::<(), ipuc_core::ir::IrError>(())
//! ```
//!
//! The layers, lowest first: the IPU21 target facts and ISA (`ipu21`),
//! the static runtime (`runtime`), IPU numerics (`numeric`), the IR with
//! structured Repeat (`ir`), kernels (`kernel`), planning (`plan`),
//! lowering (`lower`), SRAM placement (`place`), exchange scheduling
//! (`exchange`), patch generation (`patch`), exchange planning (`rows`:
//! rows, Repeat patches, relocation and sharing per phase), emission (`emit`), the
//! package format (`package`) and the pipeline over all of them
//! (`pipeline`, whose `CompileHooks` let a host add progress, a clock and
//! parallel jobs). Bad input is a typed error, never a panic.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

#[cfg(test)]
extern crate std;

/// Property-test configuration of the unit tests: `default_cases` cases
/// from a fixed seed (CI is small and reproducible); campaigns
/// (`cargo xtask proptest --cases N`) set `IPUC_PROPTEST_CASES`, and
/// `IPUC_PROPTEST_SEED` picks another seed.
#[cfg(test)]
pub(crate) fn proptest_config(default_cases: u32) -> proptest::prelude::ProptestConfig {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    proptest::prelude::ProptestConfig {
        cases: env("IPUC_PROPTEST_CASES").map_or(default_cases, |c| c as u32),
        rng_seed: proptest::test_runner::RngSeed::Fixed(
            env("IPUC_PROPTEST_SEED").unwrap_or(0x1BC0_2026),
        ),
        ..proptest::prelude::ProptestConfig::default()
    }
}

pub mod emit;
pub mod exchange;
pub mod ir;
pub mod lower;
pub mod patch;
pub mod pipeline;
pub mod place;
pub mod plan;
pub mod rows;

pub mod asm;
pub mod description;
pub mod runtime;

/// Every error type of the public API is a `core::error::Error`, so an
/// embedding toolchain (or the std host's `anyhow`) keeps the typed error
/// instead of flattening it to text. A type that loses the impl fails to
/// compile here.
#[cfg(test)]
mod error_types {
    fn is_error<E: core::error::Error + Send + Sync + 'static>() {}

    #[test]
    fn public_errors_implement_core_error() {
        is_error::<crate::emit::EmitError>();
        is_error::<crate::description::DescriptionError>();
        is_error::<crate::rows::RowsError>();
        is_error::<crate::place::Unplaced>();
        is_error::<crate::exchange::ExchangeError>();
        is_error::<crate::exchange::RowDecodeError>();
        is_error::<crate::exchange::ReceiveError>();
        is_error::<crate::exchange::CheckError>();
        is_error::<crate::asm::AsmError>();
        is_error::<ipuc_target::ipu21::isa::IsaError>();
        is_error::<ipuc_target::ipu21::topology::TileOutOfRange>();
        is_error::<crate::ir::IrError>();
        is_error::<ipuc_target::kernel::AbiError>();
        is_error::<crate::lower::LowerError>();
        is_error::<crate::lower::check::ScheduleError>();
        is_error::<crate::lower::oracle::ExecError>();
        is_error::<ipuc_target::numeric::ScaleOutOfRange>();
        is_error::<ipuc_target::package::PackageError>();
        is_error::<crate::patch::PatchError>();
        is_error::<crate::pipeline::BindingError>();
        is_error::<crate::pipeline::CompileError>();
        is_error::<crate::pipeline::LinkError>();
        is_error::<crate::pipeline::PatchDataDoesNotFit>();
        is_error::<crate::pipeline::PatchDataFailed>();
        is_error::<crate::pipeline::CodeDoesNotFit>();
        is_error::<crate::pipeline::PlacementFailed>();
        is_error::<crate::place::PlaceError>();
        is_error::<crate::plan::PlanError>();
        is_error::<crate::plan::memory::MemoryRejection>();
        is_error::<crate::plan::layout::LayoutError>();
    }
}
