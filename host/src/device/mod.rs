//! The device that executes a package: the embedded IPU21 simulator. There
//! is no hardware backend (`cli::device_args::NO_HARDWARE_BACKEND` says why).
//!
//! A device sees only the package (architecture invariant 1): tile images,
//! kernel symbols and bindings. The host hands it inputs and weights as f32
//! tensors by binding name; the device converts them to each binding's dtype.

mod convert;
pub mod simulated;

use std::collections::BTreeMap;

use crate::weights::HostTensor;

pub use convert::{decode_elements, encode_elements};

/// What one run produced.
#[derive(Clone, Debug)]
pub struct DeviceOutput {
    /// Outputs by binding name, as f32.
    pub outputs: BTreeMap<String, HostTensor>,
    /// Profile of the run (simulated cycles).
    pub profile: crate::device::simulated::RunProfile,
}
