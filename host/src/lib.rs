//! ipuc host crate: CLI back-ends, model builder, FP32 reference, the
//! embedded IPU21 simulator, devices and reports.

pub mod cli;
pub mod codelets;
pub mod compile;
pub mod device;
pub mod exit;
/// Matrix products shared by the reference and the codelets (neither
/// imports the other).
pub mod gemm;
pub mod hwcheck;
pub mod input;
pub mod model;
pub mod output;
pub mod phase_image;
pub mod progress;
pub mod reference;
pub mod report;
pub mod run_report;
pub mod run_summary;
pub mod sim;
pub mod weights;

/// `ipuc --version`: the package version, the git commit it was built from
/// (`host/build.rs`) and the build profile.
pub const VERSION_LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("IPUC_COMMIT"),
    ", ",
    env!("IPUC_PROFILE"),
    " build)"
);
