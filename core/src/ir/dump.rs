//! Compact, deterministic text form of a graph (for filetests and debugging).
//!
//! One line per op, `%result = mnemonic operands {attrs} : types`, Repeat
//! bodies indented under their Repeat with the argument kinds spelled out;
//! an op's label, if any, follows as `# label`.
//! Output depends only on the graph (ids are printed as they are), and
//! [`Graph::parse`](super::Graph::parse) reads it back: every attribute
//! is printed, in full, or stated by the result type.

use alloc::string::String;
use core::fmt::{self, Write};

use super::graph::Graph;
use super::id::{RegionId, ValueId};
use super::op::OpKind;

impl Graph {
    /// The text dump.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = self.write_dump(&mut out);
        out
    }

    /// Write the text dump.
    pub fn write_dump(&self, out: &mut impl Write) -> fmt::Result {
        out.write_str("graph {\n")?;
        self.dump_region(out, Graph::TOP, 1)?;
        for o in self.outputs() {
            writeln!(out, "  output \"{}\" = {}", o.name, o.value)?;
        }
        out.write_str("}\n")
    }

    fn dump_region(&self, out: &mut impl Write, region: RegionId, depth: usize) -> fmt::Result {
        let Some(r) = self.region(region) else {
            return writeln!(out, "{:w$}<missing region {region}>", "", w = 2 * depth);
        };
        for &id in r.ops() {
            let Some(op) = self.op(id) else {
                writeln!(out, "{:w$}<missing op {id}>", "", w = 2 * depth)?;
                continue;
            };
            write!(out, "{:w$}", "", w = 2 * depth)?;
            list(out, op.results(), ", ")?;
            write!(out, " = {}", op.mnemonic())?;
            if let Some(rep) = self.repeat(id) {
                write!(out, " x{}", rep.trip_count())?;
                out.write_str(" carried(")?;
                list(out, rep.carried_inits(), ", ")?;
                out.write_str(") invariants(")?;
                list(out, rep.invariants(), ", ")?;
                out.write_str(") sequences(")?;
                for (i, seq) in rep.sequences().enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    out.write_str("[")?;
                    list(out, seq, " ")?;
                    out.write_str("]")?;
                }
                writeln!(out, ") {{")?;
                let pad = 2 * depth + 2;
                write!(out, "{:pad$}{}", "", rep.body())?;
                for (label, args) in [
                    ("carried", rep.carried_args()),
                    ("invariant", rep.invariant_args()),
                    ("iterated", rep.iterated_args()),
                ] {
                    write!(out, " {label}(")?;
                    for (i, &a) in args.iter().enumerate() {
                        if i > 0 {
                            out.write_str(", ")?;
                        }
                        self.typed(out, a)?;
                    }
                    out.write_str(")")?;
                }
                out.write_str(":\n")?;
                self.dump_region(out, rep.body(), depth + 2)?;
                write!(out, "{:pad$}yield ", "")?;
                list(out, rep.yields(), ", ")?;
                write!(out, "\n{:w$}}}", "", w = 2 * depth)?;
            } else {
                if !op.operands().is_empty() {
                    out.write_str(" ")?;
                    list(out, op.operands(), ", ")?;
                }
                attrs(out, op.kind())?;
            }
            out.write_str(" : ")?;
            for (i, &v) in op.results().iter().enumerate() {
                if i > 0 {
                    out.write_str(", ")?;
                }
                match self.ty(v) {
                    Some(t) => write!(out, "{t}")?,
                    None => out.write_str("?")?,
                }
            }
            if let Some(label) = self.label(id) {
                write!(out, "  # {label}")?;
            }
            out.write_str("\n")?;
        }
        Ok(())
    }

    fn typed(&self, out: &mut impl Write, v: ValueId) -> fmt::Result {
        match self.ty(v) {
            Some(t) => write!(out, "{v}: {t}"),
            None => write!(out, "{v}: ?"),
        }
    }
}

fn list(out: &mut impl Write, values: &[ValueId], sep: &str) -> fmt::Result {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.write_str(sep)?;
        }
        write!(out, "{v}")?;
    }
    Ok(())
}

fn attrs(out: &mut impl Write, kind: &OpKind) -> fmt::Result {
    match kind {
        OpKind::Input { name, .. } | OpKind::Parameter { name, .. } => write!(out, " \"{name}\""),
        OpKind::Constant { values, .. } => write!(out, " {values:?}"),
        OpKind::MatMul(mm) => match (mm.transpose_a, mm.transpose_b) {
            (false, false) => Ok(()),
            (true, false) => out.write_str(" {transpose_a}"),
            (false, true) => out.write_str(" {transpose_b}"),
            (true, true) => out.write_str(" {transpose_a, transpose_b}"),
        },
        OpKind::LayerNorm { eps, store: None } => write!(out, " {{eps={eps:?}}}"),
        OpKind::LayerNorm {
            eps,
            store: Some(t),
        } => write!(out, " {{eps={eps:?}, store={t}}}"),
        OpKind::GeluTanh { store: Some(t) } | OpKind::Activation { store: Some(t), .. } => {
            write!(out, " {{store={t}}}")
        }
        OpKind::Attention { scale } => write!(out, " {{scale={scale:?}}}"),
        OpKind::SplitHeads { heads } => write!(out, " {{heads={heads}}}"),
        OpKind::Transpose { perm } => write!(out, " {{perm={perm:?}}}"),
        OpKind::Slice { axis, start, end } => write!(out, " {{axis={axis}, {start}..{end}}}"),
        OpKind::Concat { axis } => write!(out, " {{axis={axis}}}"),
        OpKind::Im2ColPatches { patch } => write!(out, " {{patch={patch}}}"),
        OpKind::Add
        | OpKind::Mul
        | OpKind::GeluTanh { store: None }
        | OpKind::Activation { store: None, .. }
        | OpKind::Softmax
        | OpKind::MergeHeads
        | OpKind::Reshape { .. }
        | OpKind::Cast { .. }
        | OpKind::Repeat(_) => Ok(()),
    }
}
