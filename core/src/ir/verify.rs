//! The verifier: SSA visibility, per-op shape/dtype rules (via `infer`),
//! names, outputs and the Repeat rules.

use alloc::vec;
use alloc::vec::Vec;

use bitvec::vec::BitVec;

use super::error::{IrError, IrResult, RepeatArgKind};
use super::graph::{Graph, ValueDef};
use super::id::{OpId, RegionId, ValueId};
use super::infer::{infer, Operand};
use super::op::{OpKind, Repeat};
use super::types::TensorType;
use ipuc_target::lookup::LookupMap;

impl Graph {
    /// Check every rule; the first violation is returned. A graph that
    /// verifies can be interpreted, planned and dumped without further checks.
    pub fn verify(&self) -> IrResult<()> {
        let mut v = Verifier {
            graph: self,
            defined: BitVec::repeat(false, self.value_count()),
            names: LookupMap::default(),
        };
        v.values()?;
        v.regions()?;
        v.region(Graph::TOP)?;
        v.outputs()
    }
}

struct Verifier<'g> {
    graph: &'g Graph,
    /// Values defined so far along the walk (SSA order within each region),
    /// a bit per value id.
    defined: BitVec,
    /// Input/parameter names → first op using it (lookup only).
    names: LookupMap<&'g str, OpId>,
}

impl<'g> Verifier<'g> {
    fn values(&self) -> IrResult<()> {
        for i in 0..self.graph.value_count() {
            let id = ValueId::new(i as u32);
            let Some(ty) = self.graph.ty(id) else {
                continue;
            };
            if !ty.dtype.is_valid() {
                return Err(IrError::InvalidDType {
                    value: id,
                    dtype: ty.dtype,
                });
            }
            if ty.size_bytes().is_none() {
                return Err(IrError::ShapeOverflow {
                    value: id,
                    shape: ty.shape.clone(),
                });
            }
        }
        Ok(())
    }

    /// Region ownership: the top level has no interface, every other region
    /// is the body of exactly one Repeat.
    fn regions(&self) -> IrResult<()> {
        let g = self.graph;
        let mut owners: Vec<Option<OpId>> = vec![None; g.region_count()];
        for i in 0..g.op_count() {
            let op = OpId::new(i as u32);
            let Some(r) = g.op(op).and_then(|o| o.kind().as_repeat()) else {
                continue;
            };
            let Some(slot) = owners.get_mut(r.body.index()) else {
                return Err(IrError::UnknownRegion { region: r.body });
            };
            if r.body == Graph::TOP
                || slot.is_some()
                || g.region(r.body).and_then(|b| b.parent()) != Some(op)
            {
                return Err(IrError::RepeatBody { op, region: r.body });
            }
            *slot = Some(op);
        }
        for (i, owner) in owners.iter().enumerate() {
            let id = RegionId::new(i as u32);
            let Some(region) = g.region(id) else { continue };
            let has_interface = !region.args().is_empty() || !region.yields().is_empty();
            let orphan_with_content =
                owner.is_none() && (has_interface || !region.ops().is_empty());
            if (id == Graph::TOP && (has_interface || region.parent().is_some()))
                || (id != Graph::TOP && orphan_with_content)
            {
                return Err(IrError::StrayRegionInterface { region: id });
            }
        }
        Ok(())
    }

    fn ty(&self, op: Option<OpId>, value: ValueId) -> IrResult<&'g TensorType> {
        self.graph
            .ty(value)
            .ok_or(IrError::UnknownValue { op, value })
    }

    fn visible(&self, value: ValueId, region: RegionId) -> bool {
        self.graph.home_region(value) == Some(region) && self.defined[value.index()]
    }

    fn region(&mut self, region: RegionId) -> IrResult<()> {
        let g = self.graph;
        let r = g.region(region).ok_or(IrError::UnknownRegion { region })?;
        for &a in r.args() {
            self.ty(None, a)?;
            self.defined.set(a.index(), true);
        }
        for &op in r.ops() {
            self.op(region, op)?;
        }
        Ok(())
    }

    fn op(&mut self, region: RegionId, id: OpId) -> IrResult<()> {
        let g = self.graph;
        let op = g.op(id).ok_or(IrError::UnknownOp { op: id })?;
        let name = op.mnemonic();
        let mut operands: Vec<Operand<'g>> = Vec::with_capacity(op.operands().len());
        for &v in op.operands() {
            let ty = self.ty(Some(id), v)?;
            if !self.visible(v, region) {
                return Err(IrError::NotVisible {
                    op: id,
                    op_name: name,
                    value: v,
                    region,
                });
            }
            operands.push((v, ty));
        }
        match op.kind() {
            OpKind::Input { name: ext, .. } | OpKind::Parameter { name: ext, .. } => {
                if region != Graph::TOP {
                    return Err(IrError::NotTopLevel {
                        op: id,
                        op_name: name,
                    });
                }
                if ext.is_empty() {
                    return Err(IrError::EmptyName { op: Some(id) });
                }
                if let Some(&first) = self.names.get(ext.as_str()) {
                    return Err(IrError::DuplicateName {
                        op: id,
                        name: ext.clone(),
                        first,
                    });
                }
                self.names.insert(ext.as_str(), id);
            }
            OpKind::Repeat(r) => self.repeat(id, r, &operands)?,
            _ => {}
        }
        let expected = infer(id, op.kind(), &operands)?;
        if expected.len() != op.results().len() {
            return Err(IrError::ResultCount {
                op: id,
                op_name: name,
                expected: expected.len(),
                found: op.results().len(),
            });
        }
        for (want, &res) in expected.into_iter().zip(op.results()) {
            let found = self.ty(Some(id), res)?;
            if *found != want {
                return Err(IrError::ResultType {
                    op: id,
                    op_name: name,
                    value: res,
                    expected: want,
                    found: found.clone(),
                });
            }
            self.defined.set(res.index(), true);
        }
        Ok(())
    }

    fn repeat(&mut self, id: OpId, r: &Repeat, operands: &[Operand<'g>]) -> IrResult<()> {
        if r.trip_count == 0 {
            return Err(IrError::RepeatTripCount { op: id });
        }
        let (c, i, s, n) = (
            r.carried as usize,
            r.invariants as usize,
            r.sequences as usize,
            r.trip_count as usize,
        );
        // Saturating: the counts are u32 and this also runs on 32-bit targets.
        let interface = c.saturating_add(i).saturating_add(s);
        let expected_operands = c.saturating_add(i).saturating_add(s.saturating_mul(n));
        if operands.len() != expected_operands {
            return Err(IrError::RepeatOperandCount {
                op: id,
                expected: expected_operands,
                found: operands.len(),
            });
        }
        let body = self
            .graph
            .region(r.body)
            .ok_or(IrError::UnknownRegion { region: r.body })?;
        if body.args().len() != interface {
            return Err(IrError::RepeatArgumentCount {
                op: id,
                region: r.body,
                expected: interface,
                found: body.args().len(),
            });
        }
        let args = body.args();
        let pairs = args[..c + i].iter().zip(&operands[..c + i]).enumerate();
        for (index, (&arg, &(value, vty))) in pairs {
            let aty = self.ty(None, arg)?;
            if aty != vty {
                let (kind, index) = if index < c {
                    (RepeatArgKind::Carried, index)
                } else {
                    (RepeatArgKind::Invariant, index - c)
                };
                return Err(IrError::RepeatArgumentType {
                    op: id,
                    kind,
                    index,
                    argument: arg,
                    value,
                    expected: vty.clone(),
                    found: aty.clone(),
                });
            }
        }
        self.repeat_sequences(id, &args[c + i..], &operands[c + i..], n)?;
        self.region(r.body)?;
        self.repeat_yields(id, r.body, body.yields(), &args[..c])
    }

    /// Each sequence's `n` operands (one per iteration) have the type of
    /// its body argument (`args`, the sequence arguments).
    fn repeat_sequences(
        &mut self,
        id: OpId,
        args: &[ValueId],
        operands: &[Operand<'g>],
        n: usize,
    ) -> IrResult<()> {
        for (seq, &arg) in args.iter().enumerate() {
            let aty = self.ty(None, arg)?;
            let start = seq * n;
            for (iteration, &(value, vty)) in operands[start..start + n].iter().enumerate() {
                if vty != aty {
                    return Err(IrError::RepeatSequenceType {
                        op: Some(id),
                        sequence: seq,
                        iteration,
                        value,
                        expected: aty.clone(),
                        found: vty.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The body yields one value per carried argument (`args`), each
    /// visible in the body `region` and of its argument's type.
    fn repeat_yields(
        &mut self,
        id: OpId,
        region: RegionId,
        yields: &[ValueId],
        args: &[ValueId],
    ) -> IrResult<()> {
        if yields.len() != args.len() {
            return Err(IrError::RepeatYieldCount {
                op: id,
                expected: args.len(),
                found: yields.len(),
            });
        }
        for (index, (&y, &arg)) in yields.iter().zip(args).enumerate() {
            let yty = self.ty(Some(id), y)?;
            if !self.visible(y, region) {
                return Err(IrError::RepeatYieldNotVisible {
                    op: id,
                    value: y,
                    region,
                });
            }
            let aty = self.ty(None, arg)?;
            if yty != aty {
                return Err(IrError::RepeatYieldType {
                    op: id,
                    index,
                    value: y,
                    expected: aty.clone(),
                    found: yty.clone(),
                });
            }
        }
        Ok(())
    }

    fn outputs(&self) -> IrResult<()> {
        let mut seen: LookupMap<&str, ()> = LookupMap::default();
        for out in self.graph.outputs() {
            if out.name.is_empty() {
                return Err(IrError::EmptyName { op: None });
            }
            if seen.insert(out.name.as_str(), ()).is_some() {
                return Err(IrError::DuplicateOutput {
                    name: out.name.clone(),
                });
            }
            self.ty(None, out.value)?;
            let top_level = match self.graph.value(out.value).map(|v| v.def()) {
                Some(ValueDef::Result { .. }) => {
                    self.graph.home_region(out.value) == Some(Graph::TOP)
                }
                _ => false,
            };
            if !top_level {
                return Err(IrError::OutputNotTopLevel {
                    name: out.name.clone(),
                    value: out.value,
                });
            }
        }
        Ok(())
    }
}
