//! ipuc host crate: CLI back-ends, model builder, FP32 reference, the
//! embedded IPU21 simulator, devices and reports.

/// The host as a library: the Python package's entry points (#45).
pub mod api;
pub mod cli;
pub mod compile;
pub mod device;
pub mod exit;
/// Atomic writes and bounded reads of every file the host touches (#28).
pub mod fsio;
pub mod input;
pub mod model;
pub mod output;
pub mod phase_image;
pub mod progress;
pub mod reference;
pub mod report;
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
