//! Embedding `ipuc-core` in another toolchain: `no_std` + `alloc`, no
//! threads, no I/O, nothing from the `ipuc` host crate. It builds a small
//! graph (a linear layer and a GELU), compiles it to an IPU21 package with
//! [`ipuc_core::pipeline::compile`] and reads the written bytes back
//! through the validating reader. `cargo xtask ci` builds this crate for
//! `thumbv7em-none-eabi` (a target without `std`) and runs its test on the
//! host.
//!
//! The embedder supplies what `alloc` needs (a global allocator) and,
//! in a binary, a panic handler; the compiler itself never panics on its
//! input (every failure is a typed error implementing
//! [`core::error::Error`]).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use core::fmt;

use ipuc_core::ir::{DType, Graph, GraphBuilder, IrError, TensorType};
use ipuc_core::pipeline::{compile, CompileError, CompileOptions};
use ipuc_target::package::{self, Package, PackageError};

/// `y = gelu(x · wᵀ)` for `x: [1, 8, 32]`, `w: [16, 32]`, in FP16.
pub fn small_graph() -> Result<Graph, IrError> {
    let mut b = GraphBuilder::new();
    let x = b.input("x", TensorType::new(DType::F16, [1, 8, 32]))?;
    let w = b.parameter("w", TensorType::new(DType::F16, [16, 32]))?;
    let y = b.matmul_transposed(x, w, DType::F16)?;
    let y = b.gelu_tanh(y)?;
    b.output("y", y)?;
    b.finish()
}

/// What can go wrong, by step.
#[derive(Debug)]
pub enum EmbedError {
    /// Building the graph.
    Graph(IrError),
    /// Compiling it.
    Compile(CompileError),
    /// Writing or reading the package.
    Package(PackageError),
    /// The package read back differs from the one written.
    RoundTrip,
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedError::Graph(_) => f.write_str("building the graph"),
            EmbedError::Compile(_) => f.write_str("compiling"),
            EmbedError::Package(_) => f.write_str("writing or reading the package"),
            EmbedError::RoundTrip => f.write_str("the package read back differs"),
        }
    }
}

impl core::error::Error for EmbedError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            EmbedError::Graph(e) => Some(e),
            EmbedError::Compile(e) => Some(e),
            EmbedError::Package(e) => Some(e),
            EmbedError::RoundTrip => None,
        }
    }
}

/// Compiles [`small_graph`] for `tiles` tiles; returns the package read
/// back from its bytes, and the bytes.
pub fn compile_and_read_back(tiles: u32) -> Result<(Package, Vec<u8>), EmbedError> {
    let graph = small_graph().map_err(EmbedError::Graph)?;
    let options = CompileOptions {
        tiles,
        name: "embedded".into(),
        ..CompileOptions::default()
    };
    let written = compile(&graph, &options).map_err(EmbedError::Compile)?;
    let bytes = package::write(&written).map_err(EmbedError::Package)?;
    let read = package::read(&bytes).map_err(EmbedError::Package)?;
    if read != written {
        return Err(EmbedError::RoundTrip);
    }
    Ok((read, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The package names its tiles, kernels and bindings, and compiling
    /// twice gives the same bytes.
    #[test]
    fn compiles_to_a_package_and_reads_it_back() {
        let (package, bytes) = compile_and_read_back(4).unwrap();
        assert!(!package.tiles.is_empty() && package.tiles.len() <= 4);
        assert!(!package.kernels.is_empty());
        let names: Vec<&str> = package.bindings.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["w", "x", "y"]);
        assert_eq!(compile_and_read_back(4).unwrap().1, bytes);
    }

    /// A bad option is a typed error naming it, not a panic.
    #[test]
    fn bad_options_are_typed_errors() {
        let err = compile_and_read_back(0).unwrap_err();
        assert!(matches!(
            err,
            EmbedError::Compile(CompileError::Tiles { tiles: 0 })
        ));
    }
}
