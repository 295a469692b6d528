//! The FP32 reference: interprets an `ipuc_core::ir::Graph` directly on the
//! host (architecture invariant 2: it never looks at planner or lowering
//! structures), multi-threaded over rayon with the `gemm` crate's kernels.
//!
//! Two numerics:
//! * [`Numerics::Fp32`] — every value in f32, dtypes ignored: the trusted
//!   answer (matches HF transformers to ~1e-6 on the fixtures).
//! * [`Numerics::Device`] — the device's arithmetic as
//!   `docs/facts/device-numerics.md` writes it (module [`device`]):
//!   parameters rounded to their graph dtype (FP8 F143 at the graph's
//!   scale, FP16) when an op reads them, every op result rounded to its
//!   result dtype, the AMP's partials rounded after every K micro-group, K
//!   splits added in F32, attention with FP16 scores and probabilities.
//!
//! The reference borrows the caller's weights: nothing is copied when it
//! is built, so a 1.6 GiB tower's f32 weights exist once.
//!
//! ```
//! use ipuc::reference::{Numerics, Reference, Tensor};
//! use ipuc::weights::{HostTensor, Weights};
//! use ipuc_core::ir::{DType, GraphBuilder, TensorType};
//!
//! let mut b = GraphBuilder::new();
//! let x = b.input("x", TensorType::new(DType::F32, [2, 3]))?;
//! let w = b.parameter("w", TensorType::new(DType::F32, [4, 3]))?;
//! let y = b.matmul_transposed(x, w, DType::F32)?; // x · wᵀ
//! b.output("y", y)?;
//! let graph = b.finish()?;
//!
//! let mut weights = std::collections::BTreeMap::new();
//! weights.insert("w".to_string(), HostTensor { shape: vec![4, 3], data: (0..12).map(|i| i as f32).collect() });
//! let weights = Weights::from_map(weights);
//! let reference = Reference::new(&graph, &weights, Numerics::Fp32)?;
//! let out = reference.run(&[("x", Tensor::new(vec![2, 3], vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))])?;
//! assert_eq!(out["y"].data.as_slice(), &[0.0, 3.0, 6.0, 9.0, 1.0, 4.0, 7.0, 10.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod amp;
pub mod device;
mod error;
mod interp;
pub mod kernels;
pub mod ops;
pub mod products;
mod siglip;

use std::sync::Arc;

pub use error::ReferenceError;
pub use interp::{graph_flops, NonFinite, Progress, Reference};
pub use siglip::{process_cpu_seconds, run_siglip, SiglipOutputs};

/// How the reference treats dtypes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numerics {
    /// Everything in f32; graph dtypes ignored.
    Fp32,
    /// Round to graph dtypes as the device does.
    Device,
}

impl std::str::FromStr for Numerics {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fp32" => Ok(Numerics::Fp32),
            "device" => Ok(Numerics::Device),
            other => Err(format!("unknown numerics {other:?} (use fp32 or device)")),
        }
    }
}

/// A dense row-major f32 tensor; data is shared so reshapes, parameter
/// bindings and carried values cost no copies.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Elements.
    pub data: Arc<Vec<f32>>,
}

impl Tensor {
    /// Wrap owned data (`data.len()` must equal the shape's element count;
    /// the interpreter checks it where it matters).
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Tensor {
        Tensor {
            shape,
            data: Arc::new(data),
        }
    }

    /// Element count of the shape.
    pub fn element_count(&self) -> usize {
        self.shape.iter().product()
    }
}

#[cfg(test)]
mod tests;
