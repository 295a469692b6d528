//! `GraphBuilder`: typed construction with immediate checks.
//!
//! Every method infers the result type with the verifier's own rules and
//! fails with the same `IrError` the verifier would report, so a graph
//! produced by [`GraphBuilder::finish`] always verifies.

use alloc::string::String;
use alloc::vec::Vec;

use super::error::{IrError, IrResult, RepeatArgKind};
use super::graph::Graph;
use super::id::{OpId, RegionId, ValueId};
use super::infer::{infer, Operand};
use super::op::{Activation, MatMul, OpKind, Repeat};
use super::types::{DType, Shape, TensorType};
use ipuc_target::lookup::LookupMap;

/// Builds a [`Graph`]; see the [module docs](super) for an example.
#[derive(Debug, Default)]
pub struct GraphBuilder {
    graph: Graph,
    open: Vec<OpenRepeat>,
    /// External names (inputs and parameters) → defining op, so the
    /// duplicate check is a lookup and building stays linear in the ops
    /// (lookup only).
    names: LookupMap<String, OpId>,
}

/// An open Repeat, returned by [`GraphBuilder::begin_repeat`] and closed by
/// [`GraphBuilder::end_repeat`] (after which it is stale: using it again is
/// a `RepeatNotInnermost` error).
#[derive(Debug)]
#[must_use = "a Repeat must be closed with end_repeat"]
pub struct RepeatHandle {
    region: RegionId,
}

impl RepeatHandle {
    /// The body region being built.
    pub fn body(&self) -> RegionId {
        self.region
    }
}

#[derive(Debug)]
struct OpenRepeat {
    region: RegionId,
    trip_count: u32,
    carried: Vec<(ValueId, ValueId)>,
    invariants: Vec<(ValueId, ValueId)>,
    sequences: Vec<(ValueId, Vec<ValueId>)>,
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// The graph so far (for reading types and ids while building).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Type of a value.
    pub fn ty(&self, value: ValueId) -> IrResult<&TensorType> {
        self.graph
            .ty(value)
            .ok_or(IrError::UnknownValue { op: None, value })
    }

    /// Region new ops go to: the innermost open Repeat body, else the top.
    pub fn current_region(&self) -> RegionId {
        self.open.last().map_or(Graph::TOP, |r| r.region)
    }

    fn enclosing_region(&self) -> RegionId {
        let n = self.open.len();
        if n >= 2 {
            self.open[n - 2].region
        } else {
            Graph::TOP
        }
    }

    /// Append any op (results typed by inference) and return its results.
    pub fn op(&mut self, kind: OpKind, operands: &[ValueId]) -> IrResult<Vec<ValueId>> {
        let region = self.current_region();
        let id = OpId::new(self.graph.op_count() as u32);
        let name = kind.mnemonic();
        if matches!(kind, OpKind::Input { .. } | OpKind::Parameter { .. }) {
            if region != Graph::TOP {
                return Err(IrError::NotTopLevel {
                    op: id,
                    op_name: name,
                });
            }
            if let Some(ext) = kind.external_name() {
                if ext.is_empty() {
                    return Err(IrError::EmptyName { op: Some(id) });
                }
                if let Some(&first) = self.names.get(ext) {
                    return Err(IrError::DuplicateName {
                        op: id,
                        name: String::from(ext),
                        first,
                    });
                }
            }
        }
        if let Some(dtype) = match &kind {
            OpKind::Input { ty, .. }
            | OpKind::Parameter { ty, .. }
            | OpKind::Constant { ty, .. } => Some(ty.dtype),
            _ => None,
        } {
            if !dtype.is_valid() {
                return Err(IrError::InvalidDType {
                    value: ValueId::new(self.graph.value_count() as u32),
                    dtype,
                });
            }
        }
        let mut typed: Vec<Operand<'_>> = Vec::with_capacity(operands.len());
        for &v in operands {
            let ty = self.graph.ty(v).ok_or(IrError::UnknownValue {
                op: Some(id),
                value: v,
            })?;
            if self.graph.home_region(v) != Some(region) {
                return Err(IrError::NotVisible {
                    op: id,
                    op_name: name,
                    value: v,
                    region,
                });
            }
            typed.push((v, ty));
        }
        let results = infer(id, &kind, &typed)?;
        // Reject results whose size overflows now, naming the value they would get.
        let first_result = self.graph.value_count();
        for (i, ty) in results.iter().enumerate() {
            if ty.size_bytes().is_none() {
                return Err(IrError::ShapeOverflow {
                    value: ValueId::new((first_result + i) as u32),
                    shape: ty.shape.clone(),
                });
            }
        }
        let external = kind.external_name().map(String::from);
        let op = self
            .graph
            .append_op(region, kind, operands.to_vec(), results)
            .ok_or(IrError::UnknownRegion { region })?;
        if let Some(name) = external {
            self.names.insert(name, op);
        }
        Ok(self
            .graph
            .op(op)
            .map(|o| o.results().to_vec())
            .unwrap_or_default())
    }

    fn single(&mut self, kind: OpKind, operands: &[ValueId]) -> IrResult<ValueId> {
        let results = self.op(kind, operands)?;
        // Every non-Repeat kind infers exactly one result.
        Ok(results[0])
    }

    /// A named host input.
    pub fn input(&mut self, name: &str, ty: TensorType) -> IrResult<ValueId> {
        self.single(
            OpKind::Input {
                name: name.into(),
                ty,
            },
            &[],
        )
    }

    /// A named parameter (weight).
    pub fn parameter(&mut self, name: &str, ty: TensorType) -> IrResult<ValueId> {
        self.single(
            OpKind::Parameter {
                name: name.into(),
                ty,
            },
            &[],
        )
    }

    /// Label the op defining `value` (e.g. `mlp.fc1`); returns `value` so
    /// calls chain. Labels show in dumps and profiles only.
    pub fn label(&mut self, value: ValueId, label: &str) -> IrResult<ValueId> {
        self.ty(value)?;
        let op = self
            .graph
            .defining_op(value)
            .ok_or(IrError::NotAnOpResult { value })?;
        self.graph
            .set_label(op, label)
            .ok_or(IrError::UnknownOp { op })?;
        Ok(value)
    }

    /// A labelled literal tensor (row-major values).
    pub fn constant_named(
        &mut self,
        name: &str,
        ty: TensorType,
        values: Vec<f32>,
    ) -> IrResult<ValueId> {
        let value = self.constant(ty, values)?;
        self.label(value, name)
    }

    /// A literal tensor (row-major values).
    pub fn constant(&mut self, ty: TensorType, values: Vec<f32>) -> IrResult<ValueId> {
        self.single(OpKind::Constant { ty, values }, &[])
    }

    /// Batched matmul; see [`MatMul`].
    pub fn matmul(&mut self, a: ValueId, b: ValueId, attrs: MatMul) -> IrResult<ValueId> {
        self.single(OpKind::MatMul(attrs), &[a, b])
    }

    /// `x · wᵀ` for a PyTorch-layout weight `[out, in]`, result in `out`.
    pub fn matmul_transposed(&mut self, x: ValueId, w: ValueId, out: DType) -> IrResult<ValueId> {
        self.matmul(
            x,
            w,
            MatMul {
                transpose_a: false,
                transpose_b: true,
                out,
            },
        )
    }

    /// Broadcasting add.
    pub fn add(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.single(OpKind::Add, &[a, b])
    }

    /// LayerNorm over the last axis.
    pub fn layer_norm(
        &mut self,
        x: ValueId,
        gamma: ValueId,
        beta: ValueId,
        eps: f32,
    ) -> IrResult<ValueId> {
        self.single(OpKind::LayerNorm { eps, store: None }, &[x, gamma, beta])
    }

    /// LayerNorm whose result is stored as FP8 type `store` (the fused
    /// `cast(layer_norm(x), store)`; see [`OpKind::GeluTanh`]).
    pub fn layer_norm_stored_as(
        &mut self,
        x: ValueId,
        gamma: ValueId,
        beta: ValueId,
        eps: f32,
        store: DType,
    ) -> IrResult<ValueId> {
        let kind = OpKind::LayerNorm {
            eps,
            store: Some(store),
        };
        self.single(kind, &[x, gamma, beta])
    }

    /// GELU (tanh approximation).
    pub fn gelu_tanh(&mut self, x: ValueId) -> IrResult<ValueId> {
        self.single(OpKind::GeluTanh { store: None }, &[x])
    }

    /// GELU whose result is stored as FP8 type `store` (the fused
    /// `cast(gelu_tanh(x), store)`; see [`OpKind::GeluTanh`]).
    pub fn gelu_tanh_stored_as(&mut self, x: ValueId, store: DType) -> IrResult<ValueId> {
        self.single(OpKind::GeluTanh { store: Some(store) }, &[x])
    }

    /// An element-wise [`Activation`].
    pub fn activation(&mut self, x: ValueId, function: Activation) -> IrResult<ValueId> {
        let kind = OpKind::Activation {
            function,
            store: None,
        };
        self.single(kind, &[x])
    }

    /// An element-wise [`Activation`] whose result is stored as FP8 type
    /// `store` (the fused `cast(function(x), store)`; see
    /// [`OpKind::GeluTanh`]).
    pub fn activation_stored_as(
        &mut self,
        x: ValueId,
        function: Activation,
        store: DType,
    ) -> IrResult<ValueId> {
        let kind = OpKind::Activation {
            function,
            store: Some(store),
        };
        self.single(kind, &[x])
    }

    /// Broadcasting elementwise product.
    pub fn mul(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.single(OpKind::Mul, &[a, b])
    }

    /// Softmax over the last axis.
    pub fn softmax(&mut self, x: ValueId) -> IrResult<ValueId> {
        self.single(OpKind::Softmax, &[x])
    }

    /// Attention with the standard scale `1/sqrt(head_dim)` (head_dim = last dim of `q`).
    pub fn attention(&mut self, q: ValueId, k: ValueId, v: ValueId) -> IrResult<ValueId> {
        let head_dim = self.ty(q)?.shape.dims().last().copied().unwrap_or(0);
        let scale = 1.0 / libm::sqrtf(head_dim as f32);
        self.attention_scaled(q, k, v, scale)
    }

    /// Attention with an explicit score scale.
    pub fn attention_scaled(
        &mut self,
        q: ValueId,
        k: ValueId,
        v: ValueId,
        scale: f32,
    ) -> IrResult<ValueId> {
        self.single(OpKind::Attention { scale }, &[q, k, v])
    }

    /// `[..., S, H·Dh]` → `[..., H, S, Dh]`.
    pub fn split_heads(&mut self, x: ValueId, heads: usize) -> IrResult<ValueId> {
        self.single(OpKind::SplitHeads { heads }, &[x])
    }

    /// `[..., H, S, Dh]` → `[..., S, H·Dh]`.
    pub fn merge_heads(&mut self, x: ValueId) -> IrResult<ValueId> {
        self.single(OpKind::MergeHeads, &[x])
    }

    /// Reshape (same element count).
    pub fn reshape(&mut self, x: ValueId, shape: impl Into<Shape>) -> IrResult<ValueId> {
        self.single(
            OpKind::Reshape {
                shape: shape.into(),
            },
            &[x],
        )
    }

    /// Axis permutation.
    pub fn transpose(&mut self, x: ValueId, perm: &[usize]) -> IrResult<ValueId> {
        self.single(
            OpKind::Transpose {
                perm: perm.to_vec(),
            },
            &[x],
        )
    }

    /// `start..end` along `axis`.
    pub fn slice(
        &mut self,
        x: ValueId,
        axis: usize,
        start: usize,
        end: usize,
    ) -> IrResult<ValueId> {
        self.single(OpKind::Slice { axis, start, end }, &[x])
    }

    /// Concatenate along `axis`.
    pub fn concat(&mut self, xs: &[ValueId], axis: usize) -> IrResult<ValueId> {
        self.single(OpKind::Concat { axis }, xs)
    }

    /// im2col of a stride-`patch` `patch`×`patch` convolution.
    pub fn im2col_patches(&mut self, x: ValueId, patch: usize) -> IrResult<ValueId> {
        self.single(OpKind::Im2ColPatches { patch }, &[x])
    }

    /// Convert to `to`.
    pub fn cast(&mut self, x: ValueId, to: DType) -> IrResult<ValueId> {
        self.single(OpKind::Cast { to }, &[x])
    }

    /// Declare a named graph output (a top-level value).
    pub fn output(&mut self, name: &str, value: ValueId) -> IrResult<()> {
        if name.is_empty() {
            return Err(IrError::EmptyName { op: None });
        }
        if self.graph.output(name).is_some() {
            return Err(IrError::DuplicateOutput { name: name.into() });
        }
        if self.graph.home_region(value) != Some(Graph::TOP) || !self.open.is_empty() {
            return Err(IrError::OutputNotTopLevel {
                name: name.into(),
                value,
            });
        }
        self.graph.push_output(name, value);
        Ok(())
    }

    // ----- Repeat ---------------------------------------------------------

    /// Open a Repeat of `trip_count` iterations; ops built until
    /// [`end_repeat`](Self::end_repeat) go into its body.
    pub fn begin_repeat(&mut self, trip_count: u32) -> IrResult<RepeatHandle> {
        if trip_count == 0 {
            return Err(IrError::RepeatTripCount {
                op: OpId::new(self.graph.op_count() as u32),
            });
        }
        let region = self.graph.append_region();
        self.open.push(OpenRepeat {
            region,
            trip_count,
            carried: Vec::new(),
            invariants: Vec::new(),
            sequences: Vec::new(),
        });
        Ok(RepeatHandle { region })
    }

    fn innermost(&mut self, handle: &RepeatHandle) -> IrResult<&mut OpenRepeat> {
        match self.open.last_mut() {
            Some(r) if r.region == handle.region => Ok(r),
            _ => Err(IrError::RepeatNotInnermost {
                region: handle.region,
            }),
        }
    }

    fn outer_value(
        &self,
        handle: &RepeatHandle,
        kind: RepeatArgKind,
        value: ValueId,
    ) -> IrResult<TensorType> {
        let ty = self.ty(value)?.clone();
        if self.graph.home_region(value) != Some(self.enclosing_region()) {
            return Err(IrError::RepeatOperandNotVisible {
                region: handle.region,
                kind,
                value,
            });
        }
        Ok(ty)
    }

    fn argument(&mut self, handle: &RepeatHandle, ty: TensorType) -> IrResult<ValueId> {
        self.graph
            .append_argument(handle.region, ty)
            .ok_or(IrError::UnknownRegion {
                region: handle.region,
            })
    }

    /// A loop-carried value starting at `init`; returns the body argument.
    /// The matching yield is the same position in `end_repeat`'s list.
    pub fn carried(&mut self, handle: &RepeatHandle, init: ValueId) -> IrResult<ValueId> {
        self.innermost(handle)?;
        let ty = self.outer_value(handle, RepeatArgKind::Carried, init)?;
        let arg = self.argument(handle, ty)?;
        self.innermost(handle)?.carried.push((arg, init));
        Ok(arg)
    }

    /// An outer value every iteration reads; returns the body argument.
    pub fn invariant(&mut self, handle: &RepeatHandle, value: ValueId) -> IrResult<ValueId> {
        self.innermost(handle)?;
        let ty = self.outer_value(handle, RepeatArgKind::Invariant, value)?;
        let arg = self.argument(handle, ty)?;
        self.innermost(handle)?.invariants.push((arg, value));
        Ok(arg)
    }

    /// A sequence with one outer value per iteration (all of one type);
    /// returns the body argument that holds element i in iteration i.
    pub fn iterated(&mut self, handle: &RepeatHandle, values: &[ValueId]) -> IrResult<ValueId> {
        let open = self.innermost(handle)?;
        let (trip, sequence) = (open.trip_count as usize, open.sequences.len());
        if values.len() != trip {
            return Err(IrError::RepeatSequenceLength {
                op: None,
                sequence,
                expected: trip,
                found: values.len(),
            });
        }
        let first = self.outer_value(handle, RepeatArgKind::Iterated, values[0])?;
        for (iteration, &v) in values.iter().enumerate().skip(1) {
            let ty = self.outer_value(handle, RepeatArgKind::Iterated, v)?;
            if ty != first {
                return Err(IrError::RepeatSequenceType {
                    op: None,
                    sequence,
                    iteration,
                    value: v,
                    expected: first,
                    found: ty,
                });
            }
        }
        let arg = self.argument(handle, first)?;
        self.innermost(handle)?
            .sequences
            .push((arg, values.to_vec()));
        Ok(arg)
    }

    /// Close the body with one yield per carried value (in `carried` call
    /// order) and return the Repeat's results (the final carried values).
    pub fn end_repeat(
        &mut self,
        handle: &RepeatHandle,
        yields: &[ValueId],
    ) -> IrResult<Vec<ValueId>> {
        self.innermost(handle)?;
        let op = OpId::new(self.graph.op_count() as u32);
        let open = &self.open[self.open.len() - 1];
        if yields.len() != open.carried.len() {
            return Err(IrError::RepeatYieldCount {
                op,
                expected: open.carried.len(),
                found: yields.len(),
            });
        }
        for (index, (&y, &(arg, _))) in yields.iter().zip(&open.carried).enumerate() {
            let yty = self.ty(y)?;
            if self.graph.home_region(y) != Some(open.region) {
                return Err(IrError::RepeatYieldNotVisible {
                    op,
                    value: y,
                    region: open.region,
                });
            }
            let aty = self.ty(arg)?;
            if yty != aty {
                return Err(IrError::RepeatYieldType {
                    op,
                    index,
                    value: y,
                    expected: aty.clone(),
                    found: yty.clone(),
                });
            }
        }
        // Checked above: the handle is the innermost open Repeat.
        let Some(open) = self.open.pop() else {
            return Err(IrError::RepeatNotInnermost {
                region: handle.region,
            });
        };
        let args: Vec<ValueId> = open
            .carried
            .iter()
            .map(|c| c.0)
            .chain(open.invariants.iter().map(|c| c.0))
            .chain(open.sequences.iter().map(|c| c.0))
            .collect();
        let mut operands: Vec<ValueId> = open.carried.iter().map(|c| c.1).collect();
        operands.extend(open.invariants.iter().map(|c| c.1));
        for (_, seq) in &open.sequences {
            operands.extend_from_slice(seq);
        }
        let region = open.region;
        self.graph
            .reorder_arguments(region, args)
            .ok_or(IrError::UnknownRegion { region })?;
        self.graph
            .set_yields(region, yields.to_vec())
            .ok_or(IrError::UnknownRegion { region })?;
        let kind = OpKind::Repeat(Repeat {
            body: region,
            trip_count: open.trip_count,
            carried: open.carried.len() as u32,
            invariants: open.invariants.len() as u32,
            sequences: open.sequences.len() as u32,
        });
        let results = self.op(kind, &operands)?;
        self.graph
            .set_region_parent(region, Some(op))
            .ok_or(IrError::UnknownRegion { region })?;
        Ok(results)
    }

    /// Finish and verify.
    pub fn finish(self) -> IrResult<Graph> {
        if let Some(open) = self.open.last() {
            return Err(IrError::UnclosedRepeat {
                region: open.region,
            });
        }
        self.graph.verify()?;
        Ok(self.graph)
    }
}
