//! The IR: shaped SSA values, the ops SigLIP needs, and a structured
//! **Repeat** whose body region runs once per iteration with carried values,
//! invariants and per-iteration value sequences.
//!
//! ```
//! use ipuc_core::ir::{DType, GraphBuilder, OpKind, TensorType};
//!
//! let mut b = GraphBuilder::new();
//! let x = b.input("x", TensorType::new(DType::F16, [1, 4, 8]))?;
//! // One weight and bias per layer: the sequences a Repeat iterates over.
//! let mut weights = Vec::new();
//! let mut biases = Vec::new();
//! for layer in 0..3 {
//!     weights.push(b.parameter(&format!("layers.{layer}.w"), TensorType::new(DType::f143(-4), [8, 8]))?);
//!     biases.push(b.parameter(&format!("layers.{layer}.b"), TensorType::new(DType::F16, [8]))?);
//! }
//! let body = b.begin_repeat(3)?;
//! let h = b.carried(&body, x)?;        // residual stream
//! let w = b.iterated(&body, &weights)?; // layer i's weight in iteration i
//! let bias = b.iterated(&body, &biases)?;
//! let y = b.matmul_transposed(h, w, DType::F16)?; // h · wᵀ, FP8 weight, F16 result
//! let y = b.add(y, bias)?;
//! let y = b.gelu_tanh(y)?;
//! let next = b.add(h, y)?;
//! let out = b.end_repeat(&body, &[next])?;
//! b.output("y", out[0])?;
//! let graph = b.finish()?; // verified
//!
//! // Reading it back: walk the ops, find the Repeat, look at its parts.
//! let repeat = graph.walk().into_iter().find_map(|op| graph.repeat(op)).unwrap();
//! assert_eq!(repeat.trip_count(), 3);
//! assert_eq!(repeat.carried_inits(), &[x]);
//! assert_eq!(repeat.sequence(0), weights.as_slice());
//! assert_eq!(repeat.iterated_args(), &[w, bias]);
//! let body_ops: Vec<&str> = graph.region(repeat.body()).unwrap().ops().iter()
//!     .map(|&op| graph.op(op).unwrap().mnemonic()).collect();
//! assert_eq!(body_ops, ["matmul", "add", "gelu_tanh", "add"]);
//! assert!(matches!(graph.op(graph.walk()[0]).unwrap().kind(), OpKind::Input { .. }));
//! assert!(graph.dump().contains("repeat x3"));
//! # Ok::<(), ipuc_core::ir::IrError>(())
//! ```
//!
//! Layout: ids (`id`), dtypes/shapes (`types`), op kinds (`op`), the graph
//! arenas and Repeat view (`graph`), shape rules (`infer`), the checked
//! builder (`builder`), the verifier (`verify`), errors (`error`) and the
//! text dump (`dump`) and its parser (`parse`), FLOP counts (`flops`).

mod builder;
mod dump;
mod error;
mod flops;
mod graph;
mod id;
mod infer;
mod op;
mod parse;
mod types;
mod verify;

pub use builder::{GraphBuilder, RepeatHandle};
pub use error::{IrError, IrResult, RepeatArgKind};
pub use graph::{Graph, GraphOutput, Op, Region, RepeatView, Value, ValueDef};
pub use id::{OpId, RegionId, ValueId};
pub use infer::broadcast_dims;
pub use op::{Activation, MatMul, OpKind, Repeat};
pub use parse::{ParseError, ParseErrorKind};
pub use types::{DType, Shape, TensorType};
