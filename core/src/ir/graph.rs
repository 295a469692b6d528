//! The graph: arenas of values, ops and regions, plus named outputs.
//!
//! Read access is through ids (`value`, `op`, `region`, `repeat`). The
//! `append_*`/`set_*` methods build graphs without checking anything; the
//! [`GraphBuilder`](super::GraphBuilder) checks as it goes, and
//! [`Graph::verify`] checks any graph however it was built.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use bitvec::slice::BitSlice;
use bitvec::vec::BitVec;

use super::id::{OpId, RegionId, ValueId};
use super::op::{OpKind, Repeat};
use super::types::TensorType;

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueDef {
    /// Result `index` of `op`.
    Result { op: OpId, index: u32 },
    /// Argument `index` of `region` (a Repeat body).
    Argument { region: RegionId, index: u32 },
}

/// An SSA value.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    ty: TensorType,
    def: ValueDef,
}

impl Value {
    /// Shape and dtype.
    pub fn ty(&self) -> &TensorType {
        &self.ty
    }

    /// Definition site.
    pub fn def(&self) -> ValueDef {
        self.def
    }
}

/// An operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    kind: OpKind,
    operands: Vec<ValueId>,
    results: Vec<ValueId>,
    region: RegionId,
}

impl Op {
    /// What it computes.
    pub fn kind(&self) -> &OpKind {
        &self.kind
    }

    /// Operands in order (for Repeat see [`Repeat`] for the layout).
    pub fn operands(&self) -> &[ValueId] {
        &self.operands
    }

    /// Results in order (one, except Repeat: one per carried value).
    pub fn results(&self) -> &[ValueId] {
        &self.results
    }

    /// The single result of a one-result op.
    pub fn result(&self) -> Option<ValueId> {
        match self.results.as_slice() {
            [v] => Some(*v),
            _ => None,
        }
    }

    /// The region holding this op.
    pub fn region(&self) -> RegionId {
        self.region
    }

    /// Mnemonic of the kind.
    pub fn mnemonic(&self) -> &'static str {
        self.kind.mnemonic()
    }
}

/// A straight-line list of ops. The top-level region has no arguments or
/// yields; a Repeat body has both.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Region {
    args: Vec<ValueId>,
    ops: Vec<OpId>,
    yields: Vec<ValueId>,
    parent: Option<OpId>,
}

impl Region {
    /// Arguments (Repeat body: carried, then invariants, then iterated).
    pub fn args(&self) -> &[ValueId] {
        &self.args
    }

    /// Ops in execution order.
    pub fn ops(&self) -> &[OpId] {
        &self.ops
    }

    /// Yielded values (Repeat body: one per carried argument).
    pub fn yields(&self) -> &[ValueId] {
        &self.yields
    }

    /// The Repeat owning this region (`None` for the top level).
    pub fn parent(&self) -> Option<OpId> {
        self.parent
    }
}

/// A named graph result.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphOutput {
    /// Host-visible name.
    pub name: String,
    /// The top-level value.
    pub value: ValueId,
}

/// A dataflow graph with structured Repeat regions.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    values: Vec<Value>,
    ops: Vec<Op>,
    regions: Vec<Region>,
    outputs: Vec<GraphOutput>,
    /// Optional human names of ops (e.g. `mlp.fc1`), for dumps and profiles.
    labels: BTreeMap<OpId, String>,
}

impl Default for Graph {
    fn default() -> Self {
        Self::new()
    }
}

/// The Repeat structure of one Repeat op, sliced into its parts.
#[derive(Clone, Copy, Debug)]
pub struct RepeatView<'g> {
    /// The Repeat op.
    pub op: OpId,
    /// Its attributes.
    pub attrs: Repeat,
    operands: &'g [ValueId],
    results: &'g [ValueId],
    body: &'g Region,
}

impl<'g> RepeatView<'g> {
    /// Iterations.
    pub fn trip_count(&self) -> usize {
        self.attrs.trip_count as usize
    }

    /// The body region.
    pub fn body(&self) -> RegionId {
        self.attrs.body
    }

    fn carried_len(&self) -> usize {
        self.attrs.carried as usize
    }

    fn invariant_len(&self) -> usize {
        self.attrs.invariants as usize
    }

    fn part(list: &[ValueId], start: usize, len: usize) -> &[ValueId] {
        list.get(start..start.saturating_add(len)).unwrap_or(&[])
    }

    /// Initial values of the carried arguments (outer values).
    pub fn carried_inits(&self) -> &'g [ValueId] {
        Self::part(self.operands, 0, self.carried_len())
    }

    /// Outer values read unchanged by every iteration.
    pub fn invariants(&self) -> &'g [ValueId] {
        Self::part(self.operands, self.carried_len(), self.invariant_len())
    }

    /// Number of iterated sequences.
    pub fn sequence_count(&self) -> usize {
        self.attrs.sequences as usize
    }

    /// Sequence `index`: one outer value per iteration (empty if out of range).
    pub fn sequence(&self, index: usize) -> &'g [ValueId] {
        if index >= self.sequence_count() {
            return &[];
        }
        let start = (self.carried_len() + self.invariant_len())
            .saturating_add(index.saturating_mul(self.trip_count()));
        Self::part(self.operands, start, self.trip_count())
    }

    /// All sequences in order.
    pub fn sequences(&self) -> impl Iterator<Item = &'g [ValueId]> + '_ {
        (0..self.sequence_count()).map(move |i| self.sequence(i))
    }

    /// Body arguments fed by `carried_inits` and then by the yields.
    pub fn carried_args(&self) -> &'g [ValueId] {
        Self::part(&self.body.args, 0, self.carried_len())
    }

    /// Body arguments bound to `invariants`.
    pub fn invariant_args(&self) -> &'g [ValueId] {
        Self::part(&self.body.args, self.carried_len(), self.invariant_len())
    }

    /// Body arguments bound to element i of each sequence in iteration i.
    pub fn iterated_args(&self) -> &'g [ValueId] {
        Self::part(
            &self.body.args,
            self.carried_len() + self.invariant_len(),
            self.sequence_count(),
        )
    }

    /// Body yields, one per carried argument.
    pub fn yields(&self) -> &'g [ValueId] {
        &self.body.yields
    }

    /// Repeat results (the last iteration's yields).
    pub fn results(&self) -> &'g [ValueId] {
        self.results
    }
}

impl Graph {
    /// The top-level region's id.
    pub const TOP: RegionId = RegionId::new(0);

    /// An empty graph with just the top-level region.
    pub fn new() -> Self {
        Graph {
            values: Vec::new(),
            ops: Vec::new(),
            regions: alloc::vec![Region::default()],
            outputs: Vec::new(),
            labels: BTreeMap::new(),
        }
    }

    /// The top-level region.
    pub fn top(&self) -> RegionId {
        Self::TOP
    }

    /// A value (`None` if the id is foreign).
    pub fn value(&self, id: ValueId) -> Option<&Value> {
        self.values.get(id.index())
    }

    /// Type of a value.
    pub fn ty(&self, id: ValueId) -> Option<&TensorType> {
        self.value(id).map(Value::ty)
    }

    /// An op.
    pub fn op(&self, id: OpId) -> Option<&Op> {
        self.ops.get(id.index())
    }

    /// A region.
    pub fn region(&self, id: RegionId) -> Option<&Region> {
        self.regions.get(id.index())
    }

    /// The Repeat structure of `op`, if it is a Repeat with a valid body id.
    pub fn repeat(&self, op: OpId) -> Option<RepeatView<'_>> {
        let o = self.op(op)?;
        let attrs = *o.kind.as_repeat()?;
        let body = self.region(attrs.body)?;
        Some(RepeatView {
            op,
            attrs,
            operands: &o.operands,
            results: &o.results,
            body,
        })
    }

    /// Number of values.
    pub fn value_count(&self) -> usize {
        self.values.len()
    }

    /// Number of ops (all regions).
    pub fn op_count(&self) -> usize {
        self.ops.len()
    }

    /// Number of regions.
    pub fn region_count(&self) -> usize {
        self.regions.len()
    }

    /// Named outputs in declaration order.
    pub fn outputs(&self) -> &[GraphOutput] {
        &self.outputs
    }

    /// The output called `name`.
    pub fn output(&self, name: &str) -> Option<ValueId> {
        self.outputs
            .iter()
            .find(|o| o.name == name)
            .map(|o| o.value)
    }

    /// The label of an op (a human name such as `self_attn.q_proj`), if set.
    pub fn label(&self, op: OpId) -> Option<&str> {
        self.labels.get(&op).map(String::as_str)
    }

    /// Label an op (replacing any previous label). Labels carry no meaning
    /// for verification or execution.
    pub fn set_label(&mut self, op: OpId, label: impl Into<String>) -> Option<()> {
        self.op(op)?;
        self.labels.insert(op, label.into());
        Some(())
    }

    /// The op defining `value`, if it is an op result.
    pub fn defining_op(&self, value: ValueId) -> Option<OpId> {
        match self.value(value)?.def {
            ValueDef::Result { op, .. } => Some(op),
            ValueDef::Argument { .. } => None,
        }
    }

    /// The region a value lives in.
    pub fn home_region(&self, id: ValueId) -> Option<RegionId> {
        match self.value(id)?.def {
            ValueDef::Result { op, .. } => self.op(op).map(|o| o.region),
            ValueDef::Argument { region, .. } => Some(region),
        }
    }

    /// Top-level ops of kind `Input`, in order.
    pub fn inputs(&self) -> impl Iterator<Item = (OpId, &Op)> {
        self.top_ops_where(|k| matches!(k, OpKind::Input { .. }))
    }

    /// Top-level ops of kind `Parameter`, in order.
    pub fn parameters(&self) -> impl Iterator<Item = (OpId, &Op)> {
        self.top_ops_where(|k| matches!(k, OpKind::Parameter { .. }))
    }

    fn top_ops_where(&self, pred: fn(&OpKind) -> bool) -> impl Iterator<Item = (OpId, &Op)> {
        self.regions[0]
            .ops
            .iter()
            .filter_map(move |&id| self.op(id).map(|o| (id, o)))
            .filter(move |(_, o)| pred(&o.kind))
    }

    /// The value of the input or parameter called `name`.
    pub fn external(&self, name: &str) -> Option<ValueId> {
        self.regions[0].ops.iter().find_map(|&id| {
            let op = self.op(id)?;
            (op.kind.external_name() == Some(name)).then(|| op.result())?
        })
    }

    /// For every value (indexed by `ValueId::index`), the ops reading it as
    /// an operand, in op-id order. Yields and graph outputs are not ops; see
    /// `Region::yields` and `outputs`.
    pub fn users(&self) -> Vec<Vec<OpId>> {
        let mut users = alloc::vec![Vec::new(); self.values.len()];
        for (i, op) in self.ops.iter().enumerate() {
            for &v in &op.operands {
                if let Some(list) = users.get_mut(v.index()) {
                    if list.last() != Some(&OpId::new(i as u32)) {
                        list.push(OpId::new(i as u32));
                    }
                }
            }
        }
        users
    }

    /// Every op in execution order, Repeat bodies visited right after
    /// their Repeat op is reached (pre-order), each body once.
    pub fn walk(&self) -> Vec<OpId> {
        let mut order = Vec::with_capacity(self.ops.len());
        // A bit per region: each body is walked once.
        let mut visited = BitVec::<usize>::repeat(false, self.regions.len());
        self.walk_region(Self::TOP, &mut order, &mut visited);
        order
    }

    fn walk_region(&self, region: RegionId, order: &mut Vec<OpId>, visited: &mut BitSlice) {
        match visited.get_mut(region.index()) {
            Some(mut seen) if !*seen => *seen = true,
            _ => return,
        }
        for &id in &self.regions[region.index()].ops {
            order.push(id);
            if let Some(r) = self.op(id).and_then(|o| o.kind.as_repeat()) {
                self.walk_region(r.body, order, visited);
            }
        }
    }

    // ----- unchecked construction -------------------------------------

    /// Add an empty region owned by nobody yet.
    pub fn append_region(&mut self) -> RegionId {
        self.regions.push(Region::default());
        RegionId::new((self.regions.len() - 1) as u32)
    }

    /// Append an argument of type `ty` to `region`.
    pub fn append_argument(&mut self, region: RegionId, ty: TensorType) -> Option<ValueId> {
        let index = self.region(region)?.args.len() as u32;
        let value = self.push_value(ty, ValueDef::Argument { region, index });
        self.regions[region.index()].args.push(value);
        Some(value)
    }

    /// Append an op at the end of `region` with results of the given types.
    /// Nothing is checked except that `region` exists.
    pub fn append_op(
        &mut self,
        region: RegionId,
        kind: OpKind,
        operands: Vec<ValueId>,
        result_types: Vec<TensorType>,
    ) -> Option<OpId> {
        self.region(region)?;
        let op = OpId::new(self.ops.len() as u32);
        let results = result_types
            .into_iter()
            .enumerate()
            .map(|(i, ty)| {
                self.push_value(
                    ty,
                    ValueDef::Result {
                        op,
                        index: i as u32,
                    },
                )
            })
            .collect();
        self.ops.push(Op {
            kind,
            operands,
            results,
            region,
        });
        self.regions[region.index()].ops.push(op);
        Some(op)
    }

    /// Set a region's yields.
    pub fn set_yields(&mut self, region: RegionId, yields: Vec<ValueId>) -> Option<()> {
        self.regions.get_mut(region.index())?.yields = yields;
        Some(())
    }

    /// Set the Repeat op owning a region.
    pub fn set_region_parent(&mut self, region: RegionId, parent: Option<OpId>) -> Option<()> {
        self.regions.get_mut(region.index())?.parent = parent;
        Some(())
    }

    /// Reorder a region's arguments (each must already be an argument of
    /// `region`); argument indices are renumbered.
    pub fn reorder_arguments(&mut self, region: RegionId, args: Vec<ValueId>) -> Option<()> {
        let current = &self.region(region)?.args;
        if current.len() != args.len() || !args.iter().all(|a| current.contains(a)) {
            return None;
        }
        for (i, &a) in args.iter().enumerate() {
            self.values[a.index()].def = ValueDef::Argument {
                region,
                index: i as u32,
            };
        }
        self.regions[region.index()].args = args;
        Some(())
    }

    /// Declare a named output.
    pub fn push_output(&mut self, name: impl Into<String>, value: ValueId) {
        self.outputs.push(GraphOutput {
            name: name.into(),
            value,
        });
    }

    fn push_value(&mut self, ty: TensorType, def: ValueDef) -> ValueId {
        self.values.push(Value { ty, def });
        ValueId::new((self.values.len() - 1) as u32)
    }
}
