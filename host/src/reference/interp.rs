//! The graph walker: binds parameters and inputs, executes ops in region
//! order, and runs a Repeat by iterating its body with the per-iteration
//! sequence elements and the carried values.

use std::collections::BTreeMap;
use std::sync::Arc;

use ipuc_core::ir::{DType, Graph, OpId, OpKind, RegionId, ValueId};

use super::device;
use super::{ops, Numerics, ReferenceError, Tensor};
use crate::weights::Weights;
use ipuc_core::description::KSplit;

/// A graph with its parameters bound to borrowed weights, ready to run on
/// inputs. The weights are never copied whole: each parameter becomes a
/// tensor (for device numerics rounded to its storage dtype) only when an
/// op (or a Repeat iteration) reads it, and is freed after its last use
/// like any other value: a run holds the caller's weights once, plus the
/// parameters of the op or layer at hand.
pub struct Reference<'a> {
    graph: &'a Graph,
    numerics: Numerics,
    params: BTreeMap<ValueId, Param<'a>>,
    progress: Option<Progress>,
    /// Matrix products the compiled program splits over K, and into how
    /// many parts (the package's [`KSplit`]s).
    k_parts: BTreeMap<OpId, u32>,
    /// Per region, per op position: operands whose last use is that op
    /// (freed right after it, so buffers are reused in place and the
    /// working set stays small).
    dying: BTreeMap<RegionId, Vec<Vec<ValueId>>>,
    /// The first op (in execution order) whose result held a NaN or an
    /// infinity, so a non-finite output can be traced to where it began.
    first_non_finite: std::sync::OnceLock<NonFinite>,
}

/// A bound parameter: the caller's data (shape checked) and the dtype it is
/// stored in.
struct Param<'a> {
    shape: &'a [usize],
    data: &'a [f32],
    dtype: DType,
}

/// Where a run first produced a non-finite value.
#[derive(Clone, Debug, PartialEq)]
pub struct NonFinite {
    /// The op's label (e.g. `encoder.layers.{i}.mlp.fc1`), else its kind.
    pub op: String,
    /// The first non-finite element of its result, and its value.
    pub element: usize,
    pub value: f32,
}

/// Called after each Repeat iteration with (iterations done, trip count).
pub type Progress = Box<dyn Fn(usize, usize) + Send + Sync>;

/// Values computed so far, by id.
struct Env {
    values: Vec<Option<Tensor>>,
}

impl Env {
    fn get(&self, id: ValueId) -> Result<&Tensor, ReferenceError> {
        self.values
            .get(id.index())
            .and_then(Option::as_ref)
            .ok_or(ReferenceError::Unavailable { value: id })
    }

    fn set(&mut self, id: ValueId, t: Tensor) {
        if let Some(slot) = self.values.get_mut(id.index()) {
            *slot = Some(t);
        }
    }

    fn clear(&mut self, id: ValueId) {
        if let Some(slot) = self.values.get_mut(id.index()) {
            *slot = None;
        }
    }
}

impl<'a> Reference<'a> {
    /// Verify `graph` and bind every parameter to `weights` by name (shape
    /// checked). The weights are borrowed, not copied (see [`Reference`]).
    pub fn new(
        graph: &'a Graph,
        weights: &'a Weights,
        numerics: Numerics,
    ) -> Result<Self, ReferenceError> {
        graph.verify()?;
        let mut params = BTreeMap::new();
        for (_, op) in graph.parameters() {
            let OpKind::Parameter { name, ty } = op.kind() else {
                continue;
            };
            let value = op
                .result()
                .ok_or(ReferenceError::MissingWeight { name: name.clone() })?;
            let w = weights
                .get(name)
                .ok_or_else(|| ReferenceError::MissingWeight { name: name.clone() })?;
            if w.shape != ty.shape.dims() || w.data.len() != w.shape.iter().product::<usize>() {
                return Err(ReferenceError::WeightShape {
                    name: name.clone(),
                    expected: ty.shape.dims().to_vec(),
                    found: w.shape.clone(),
                });
            }
            params.insert(
                value,
                Param {
                    shape: &w.shape,
                    data: &w.data,
                    dtype: ty.dtype,
                },
            );
        }
        Ok(Reference {
            graph,
            numerics,
            params,
            progress: None,
            k_parts: BTreeMap::new(),
            dying: last_uses(graph),
            first_non_finite: std::sync::OnceLock::new(),
        })
    }

    /// Value `id`: computed (from `env`) or a parameter, copied from the
    /// weights for this use (and for device numerics rounded to its
    /// storage dtype, as the device holds it).
    fn value(&self, env: &Env, id: ValueId) -> Result<Tensor, ReferenceError> {
        let Some(p) = self.params.get(&id) else {
            return env.get(id).cloned();
        };
        let mut data = p.data.to_vec();
        if self.numerics == Numerics::Device {
            device::round_in_place(p.dtype, &mut data);
        }
        Ok(Tensor::new(p.shape.to_vec(), data))
    }

    /// Follow the compiled program's K splits (`splits`, from its package):
    /// device numerics then sum each split product as the device does. A
    /// split names a matrix product with its K, or an attention with its
    /// key count.
    pub fn with_k_splits(mut self, splits: &[KSplit]) -> Result<Self, ReferenceError> {
        for split in splits {
            let op = OpId::new(split.op);
            let k = self.graph.op(op).and_then(|o| {
                let operand_dim = |i: usize, from_end: usize| {
                    let t = self.graph.ty(*o.operands().get(i)?)?;
                    let dims = t.shape.dims();
                    dims.get(dims.len().checked_sub(from_end)?).copied()
                };
                match o.kind() {
                    OpKind::MatMul(mm) if !mm.transpose_a => operand_dim(0, 1),
                    // Keys: the second-last axis of `k`.
                    OpKind::Attention { .. } => operand_dim(1, 2),
                    _ => None,
                }
            });
            if k != Some(split.k as usize) {
                return Err(ReferenceError::KSplit {
                    op: split.op,
                    k: split.k,
                    found: k,
                });
            }
            self.k_parts.insert(op, split.parts);
        }
        Ok(self)
    }

    /// Report Repeat progress through `f`.
    pub fn with_progress(mut self, f: Progress) -> Self {
        self.progress = Some(f);
        self
    }

    /// Run on named inputs; returns every graph output by name.
    pub fn run(
        &self,
        inputs: &[(&str, Tensor)],
    ) -> Result<BTreeMap<String, Tensor>, ReferenceError> {
        let mut env = Env {
            values: vec![None; self.graph.value_count()],
        };
        for (_, op) in self.graph.inputs() {
            let OpKind::Input { name, ty } = op.kind() else {
                continue;
            };
            let supplied = inputs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t)
                .ok_or_else(|| ReferenceError::MissingInput { name: name.clone() })?;
            if supplied.shape != ty.shape.dims() || supplied.data.len() != supplied.element_count()
            {
                return Err(ReferenceError::InputShape {
                    name: name.clone(),
                    expected: ty.shape.dims().to_vec(),
                    found: supplied.shape.clone(),
                });
            }
            let mut t = supplied.clone();
            if self.numerics == Numerics::Device && ty.dtype != DType::F32 {
                let mut data = t.data.to_vec();
                device::round_in_place(ty.dtype, &mut data);
                t.data = Arc::new(data);
            }
            if let Some(id) = op.result() {
                env.set(id, t);
            }
        }
        self.exec_region(Graph::TOP, &mut env)?;
        let mut out = BTreeMap::new();
        for o in self.graph.outputs() {
            out.insert(o.name.clone(), self.value(&env, o.value)?);
        }
        Ok(out)
    }

    fn exec_region(&self, region: RegionId, env: &mut Env) -> Result<(), ReferenceError> {
        let ops = self
            .graph
            .region(region)
            .map(|r| r.ops().to_vec())
            .unwrap_or_default();
        for (position, op) in ops.into_iter().enumerate() {
            self.exec_op(op, self.dying_at(region, position), env)?;
            self.free_dying(region, position, env);
        }
        Ok(())
    }

    fn dying_at(&self, region: RegionId, position: usize) -> &[ValueId] {
        self.dying
            .get(&region)
            .and_then(|d| d.get(position))
            .map_or(&[], Vec::as_slice)
    }

    fn free_dying(&self, region: RegionId, position: usize, env: &mut Env) {
        for &v in self.dying_at(region, position) {
            env.clear(v);
        }
    }

    /// How a matmul accumulates: device numerics as the AMP mode its
    /// operand types select (FP8 × FP8 in FP16 partials, whatever the
    /// result type; the rest in F32 partials), in the compiled program's K
    /// parts; the FP32 reference in F32.
    fn matmul_product(&self, op: OpId, operands: &[ValueId]) -> ops::Product {
        let dtype = |i: usize| {
            operands
                .get(i)
                .and_then(|v| self.graph.ty(*v))
                .map(|t| t.dtype)
        };
        match (self.numerics, dtype(0), dtype(1)) {
            (Numerics::Device, Some(a), Some(b)) => ops::Product::Device {
                // The partials type depends on the operands only.
                how: device::Accumulation::of_matmul(a, b),
                k_parts: self.parts_of(op),
            },
            _ => ops::Product::Exact,
        }
    }

    /// How many parts the compiled program splits `op`'s K (a matmul's
    /// contraction, an attention's keys) into.
    fn parts_of(&self, op: OpId) -> u32 {
        self.k_parts.get(&op).copied().unwrap_or(1)
    }

    /// Execute one op. `dying` operands are removed from `env` before the
    /// computation so their buffers can be reused in place.
    fn exec_op(&self, id: OpId, dying: &[ValueId], env: &mut Env) -> Result<(), ReferenceError> {
        let Some(op) = self.graph.op(id) else {
            return Ok(());
        };
        match op.kind() {
            // Bound before execution starts.
            OpKind::Input { .. } | OpKind::Parameter { .. } => return Ok(()),
            OpKind::Repeat(_) => return self.exec_repeat(id, env),
            _ => {}
        }
        let Some(result) = op.result() else {
            return Ok(());
        };
        let out_ty = self
            .graph
            .ty(result)
            .ok_or(ReferenceError::Unavailable { value: result })?
            .clone();
        let dims = out_ty.shape.dims().to_vec();
        // An op that stores its result as FP8 (a fused cast) rounds it to
        // its arithmetic type first, as the separate cast would have read it.
        let arith = match op.kind() {
            OpKind::LayerNorm { store: Some(_), .. }
            | OpKind::GeluTanh { store: Some(_) }
            | OpKind::Activation { store: Some(_), .. } => op
                .operands()
                .first()
                .and_then(|v| self.graph.ty(*v))
                .map(|t| t.dtype),
            _ => None,
        };
        let mut owned: Vec<Tensor> = op
            .operands()
            .iter()
            .map(|&v| self.value(env, v))
            .collect::<Result<_, _>>()?;
        for &v in dying {
            env.clear(v);
        }
        let operands: Vec<&Tensor> = owned.iter().collect();
        let device = self.numerics == Numerics::Device;
        // `rounds`: whether the result must be rounded to its dtype (data
        // movement of already-rounded values needs no rounding).
        let (data, rounds): (Arc<Vec<f32>>, bool) = match op.kind() {
            OpKind::Constant { values, .. } => (Arc::new(values.clone()), true),
            OpKind::MatMul(mm) => {
                let product = self.matmul_product(id, op.operands());
                (
                    Arc::new(ops::matmul_with(
                        operands[0],
                        operands[1],
                        (mm.transpose_a, mm.transpose_b),
                        &dims,
                        product,
                    )),
                    true,
                )
            }
            OpKind::Add => {
                // Accumulate into whichever operand has the result's shape
                // and is not shared (the residual stream, a fresh matmul).
                let into = (0..2).find(|&i| {
                    operands[i].shape == dims && Arc::strong_count(&operands[i].data) == 1
                });
                drop(operands);
                match into {
                    Some(i) => {
                        let other = owned.swap_remove(1 - i);
                        let acc = owned.swap_remove(0);
                        let mut acc_data = take_vec(acc.data);
                        ops::add_assign(&mut acc_data, &dims, &other);
                        (Arc::new(acc_data), true)
                    }
                    None => (Arc::new(ops::add(&owned[0], &owned[1], &dims)), true),
                }
            }
            OpKind::LayerNorm { eps, .. } => {
                let eps = *eps;
                drop(operands);
                let mut it = owned.into_iter();
                let (Some(x), Some(g), Some(b)) = (it.next(), it.next(), it.next()) else {
                    return Err(ReferenceError::Unavailable { value: result });
                };
                let mut d = take_vec(x.data);
                if device {
                    // The device's own row arithmetic (a row lives on one
                    // tile), so FP16 and FP8 roundings after it agree bit
                    // for bit instead of flipping where two F32 orders
                    // differ in the last place.
                    let src = d.clone();
                    device::layer_norm(&src, &g.data, &b.data, eps, &mut d);
                } else {
                    super::kernels::layer_norm_in_place(&mut d, &g.data, &b.data, eps);
                }
                (Arc::new(d), true)
            }
            OpKind::Mul => (Arc::new(ops::mul(operands[0], operands[1], &dims)), true),
            OpKind::Activation { function, .. } => {
                let function = *function;
                drop(operands);
                let mut d = take_vec(owned.swap_remove(0).data);
                d.iter_mut().for_each(|v| *v = function.apply(*v));
                (Arc::new(d), true)
            }
            OpKind::GeluTanh { .. } => {
                drop(operands);
                let mut d = take_vec(owned.swap_remove(0).data);
                if device {
                    let input = op.operands().first().and_then(|&v| self.graph.ty(v));
                    let gelu = if input.is_some_and(|t| t.dtype == DType::F16) {
                        device::gelu_tanh_f16
                    } else {
                        device::gelu_tanh
                    };
                    d.iter_mut().for_each(|v| *v = gelu(*v));
                } else {
                    super::kernels::gelu_in_place(&mut d);
                }
                (Arc::new(d), true)
            }
            OpKind::Softmax => {
                drop(operands);
                let mut d = take_vec(owned.swap_remove(0).data);
                let width = dims.last().copied().unwrap_or(1);
                super::kernels::softmax_rows(&mut d, width);
                (Arc::new(d), true)
            }
            OpKind::Attention { scale } => {
                let q = op.operands().first().and_then(|&v| self.graph.ty(v));
                let dtype = q.map(|t| t.dtype);
                let device = dtype.filter(|_| device).map(|dtype| ops::DeviceAttention {
                    dtype,
                    key_parts: self.parts_of(id),
                });
                (
                    Arc::new(ops::attention(
                        operands[0],
                        operands[1],
                        operands[2],
                        *scale,
                        &dims,
                        device,
                    )),
                    true,
                )
            }
            OpKind::SplitHeads { heads } => {
                (Arc::new(ops::split_heads(operands[0], *heads)), false)
            }
            OpKind::MergeHeads => (Arc::new(ops::merge_heads(operands[0])), false),
            OpKind::Reshape { .. } => (operands[0].data.clone(), false),
            OpKind::Transpose { perm } => (Arc::new(ops::transpose(operands[0], perm)), false),
            OpKind::Slice { axis, start, end } => (
                Arc::new(ops::slice(operands[0], *axis, *start, *end)),
                false,
            ),
            OpKind::Concat { axis } => (Arc::new(ops::concat(&operands, *axis)), false),
            OpKind::Im2ColPatches { patch } => (Arc::new(ops::im2col(operands[0], *patch)), false),
            OpKind::Cast { .. } => (operands[0].data.clone(), true),
            OpKind::Input { .. } | OpKind::Parameter { .. } | OpKind::Repeat(_) => return Ok(()),
        };
        let data = if device && rounds && out_ty.dtype != DType::F32 {
            let mut owned = take_vec(data);
            if let Some(arith) = arith {
                device::round_in_place(arith, &mut owned);
            }
            device::round_in_place(out_ty.dtype, &mut owned);
            Arc::new(owned)
        } else {
            data
        };
        if self.first_non_finite.get().is_none() {
            if let Some((element, &value)) = data.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                let op_name = self
                    .graph
                    .label(id)
                    .map_or_else(|| format!("{} ({id:?})", op.mnemonic()), str::to_string);
                let _ = self.first_non_finite.set(NonFinite {
                    op: op_name,
                    element,
                    value,
                });
            }
        }
        env.set(result, Tensor { shape: dims, data });
        Ok(())
    }

    /// The first op whose result held a NaN or an infinity, if any did.
    pub fn first_non_finite(&self) -> Option<&NonFinite> {
        self.first_non_finite.get()
    }

    fn exec_repeat(&self, id: OpId, env: &mut Env) -> Result<(), ReferenceError> {
        let Some(view) = self.graph.repeat(id) else {
            return Ok(());
        };
        let body = view.body();
        let body_ops: Vec<OpId> = self
            .graph
            .region(body)
            .map(|r| r.ops().to_vec())
            .unwrap_or_default();
        let mut carried: Vec<Tensor> = view
            .carried_inits()
            .iter()
            .map(|&v| self.value(env, v))
            .collect::<Result<_, _>>()?;
        for iteration in 0..view.trip_count() {
            // Re-bound every iteration: a body argument is freed after its
            // last use inside the body.
            for (&arg, &outer) in view.invariant_args().iter().zip(view.invariants()) {
                let t = self.value(env, outer)?;
                env.set(arg, t);
            }
            for (&arg, t) in view.carried_args().iter().zip(carried.drain(..)) {
                env.set(arg, t);
            }
            for (s, &arg) in view.iterated_args().iter().enumerate() {
                let outer = view
                    .sequence(s)
                    .get(iteration)
                    .copied()
                    .ok_or(ReferenceError::Unavailable { value: arg })?;
                let t = self.value(env, outer)?;
                env.set(arg, t);
            }
            for (position, &op) in body_ops.iter().enumerate() {
                self.exec_op(op, self.dying_at(body, position), env)?;
                self.free_dying(body, position, env);
            }
            carried = view
                .yields()
                .iter()
                .map(|&v| self.value(env, v))
                .collect::<Result<_, _>>()?;
            // Drop this iteration's temporaries (they can be large).
            for &op in &body_ops {
                if let Some(o) = self.graph.op(op) {
                    for &r in o.results() {
                        env.clear(r);
                    }
                }
            }
            if let Some(p) = &self.progress {
                p(iteration + 1, view.trip_count());
            }
        }
        for (&r, t) in view.results().iter().zip(carried) {
            env.set(r, t);
        }
        Ok(())
    }
}

/// Floating-point operations of one run (2 per multiply-add; matmuls and
/// attention only), Repeat bodies counted once per iteration.
pub fn graph_flops(graph: &Graph) -> u64 {
    region_flops(graph, Graph::TOP)
}

fn region_flops(graph: &Graph, region: RegionId) -> u64 {
    let Some(r) = graph.region(region) else {
        return 0;
    };
    let dims = |v: ValueId| {
        graph
            .ty(v)
            .map(|t| t.shape.dims().to_vec())
            .unwrap_or_default()
    };
    let mut total = 0u64;
    for &id in r.ops() {
        let Some(op) = graph.op(id) else { continue };
        match op.kind() {
            OpKind::MatMul(mm) => {
                let (a, out) = (
                    dims(op.operands()[0]),
                    op.result().map(dims).unwrap_or_default(),
                );
                let k = if mm.transpose_a {
                    a[a.len() - 2]
                } else {
                    a[a.len() - 1]
                };
                let outputs: usize = out.iter().product();
                total += 2 * (outputs as u64) * k as u64;
            }
            OpKind::Attention { .. } => {
                let (q, v, out) = (
                    dims(op.operands()[0]),
                    dims(op.operands()[2]),
                    op.result().map(dims).unwrap_or_default(),
                );
                let heads: usize = out[..out.len() - 2].iter().product();
                let (sq, dk) = (q[q.len() - 2], q[q.len() - 1]);
                let (sk, dv) = (v[v.len() - 2], v[v.len() - 1]);
                total += 2 * (heads * sq * sk * (dk + dv)) as u64;
            }
            OpKind::Repeat(rep) => {
                total += u64::from(rep.trip_count) * region_flops(graph, rep.body);
            }
            _ => {}
        }
    }
    total
}

/// The buffer of a tensor: moved out if unshared, copied otherwise.
fn take_vec(data: Arc<Vec<f32>>) -> Vec<f32> {
    Arc::try_unwrap(data).unwrap_or_else(|shared| shared.as_ref().clone())
}

/// For every region, the operands whose last use is each op. Region yields
/// and graph outputs never die inside their region.
fn last_uses(graph: &Graph) -> BTreeMap<RegionId, Vec<Vec<ValueId>>> {
    let mut out = BTreeMap::new();
    for index in 0..graph.region_count() {
        let region_id = RegionId::new(index as u32);
        let Some(region) = graph.region(region_id) else {
            continue;
        };
        let mut keep: std::collections::BTreeSet<ValueId> =
            region.yields().iter().copied().collect();
        if region_id == Graph::TOP {
            keep.extend(graph.outputs().iter().map(|o| o.value));
        }
        let mut last: BTreeMap<ValueId, usize> = BTreeMap::new();
        for (position, &op) in region.ops().iter().enumerate() {
            if let Some(o) = graph.op(op) {
                for &v in o.operands() {
                    last.insert(v, position);
                }
            }
        }
        let mut dying = vec![Vec::new(); region.ops().len()];
        for (v, position) in last {
            if !keep.contains(&v) {
                dying[position].push(v);
            }
        }
        out.insert(region_id, dying);
    }
    out
}
