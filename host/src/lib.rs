//! ipuc host crate: CLI back-ends, model builder, FP32 reference, the
//! embedded IPU21 simulator, devices and reports.

pub mod cli;
pub mod codelets;
pub mod compile;
pub mod device;
/// Atomic writes and bounded reads of every file the host touches (#28).
pub mod fsio;
/// Matrix products shared by the reference and the codelets (neither
/// imports the other).
pub mod gemm;
pub mod hwcheck;
pub mod input;
pub mod model;
pub mod phase_image;
pub mod progress;
pub mod reference;
pub mod report;
pub mod run_report;
pub mod run_summary;
pub mod sim;
pub mod weights;
