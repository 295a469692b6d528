//! ipuc-target: what the compiler and the device share, and nothing else.
//!
//! The IPU21 target facts and ISA encode/decode (`ipu21`), IPU numerics and
//! element types (`numeric`), the kernel ABI (`kernel`) and the package
//! format (`package`), plus the fixed-seed lookup map (`lookup`). The
//! assembler and the static runtime's linking are the compiler's
//! (`ipuc_core::asm`, `ipuc_core::runtime`); the simulator (`ipuc-sim`)
//! depends on this crate alone, so Cargo keeps the planner, lowering, scheduling and
//! the reference out of the device. `no_std` + `alloc`; bad input is a typed
//! error, never a panic.
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

pub mod ipu21;
pub mod kernel;
pub mod lookup;
pub mod numeric;
pub mod package;
