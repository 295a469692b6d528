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
