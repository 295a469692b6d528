//! The IR builder and verifier on byte-driven programs. The first part of
//! the input drives `GraphBuilder` (every op kind, Repeats with carried,
//! invariant and iterated arguments, outputs): every call returns a value
//! or a typed error, and a graph `finish` accepts verifies again. The rest
//! appends raw ops to that graph with arbitrary operands, regions and
//! result types (no checks at all): the verifier returns Ok or a typed
//! error, never panics, and anything it accepts dumps.
#![no_main]

use ipuc_core::ir::{DType, Graph, GraphBuilder, MatMul, OpKind, RegionId, Shape, TensorType, ValueId};
use libfuzzer_sys::fuzz_target;

mod bytes;
use bytes::Bytes;

impl Bytes<'_> {
    fn small(&mut self, n: u8) -> usize {
        usize::from(self.u8() % n)
    }
    fn dims(&mut self) -> Vec<usize> {
        let rank = 1 + self.small(4);
        (0..rank).map(|_| 1 + self.small(6)).collect()
    }
    fn dtype(&mut self) -> DType {
        match self.small(4) {
            0 => DType::F32,
            1 => DType::F16,
            2 => DType::f143(self.u8() as i8 % 40),
            _ => DType::f152(self.u8() as i8 % 40),
        }
    }
    fn ty(&mut self) -> TensorType {
        let dtype = self.dtype();
        TensorType::new(dtype, self.dims())
    }
    fn pick(&mut self, values: &[ValueId]) -> Option<ValueId> {
        if values.is_empty() {
            None
        } else {
            Some(values[usize::from(self.u8()) % values.len()])
        }
    }
}

/// One op kind with byte-chosen attributes (shared by both phases).
fn kind(b: &mut Bytes<'_>, i: usize) -> OpKind {
    match b.small(16) {
        0 => OpKind::Input { name: format!("in{}", b.small(8)), ty: b.ty() },
        1 => OpKind::Parameter { name: format!("p{}", b.small(8)), ty: b.ty() },
        2 => {
            let ty = b.ty();
            let n = ty.shape.element_count().unwrap_or(0).min(64);
            OpKind::Constant { ty, values: (0..n + b.small(2)).map(|k| k as f32).collect() }
        }
        3 => OpKind::MatMul(MatMul {
            transpose_a: b.u8() & 1 == 1,
            transpose_b: b.u8() & 1 == 1,
            out: b.dtype(),
        }),
        4 => OpKind::Add,
        5 => OpKind::LayerNorm { eps: [1e-6, 0.0, -1.0, f32::NAN, f32::INFINITY][b.small(5)], store: None },
        6 => OpKind::GeluTanh { store: None },
        7 => OpKind::Softmax,
        8 => OpKind::Attention { scale: [0.125, 0.0, f32::NAN][b.small(3)] },
        9 => OpKind::SplitHeads { heads: b.small(5) },
        10 => OpKind::MergeHeads,
        11 => OpKind::Reshape { shape: Shape::new(b.dims()) },
        12 => {
            let n = 1 + b.small(4);
            OpKind::Transpose { perm: (0..n).map(|_| b.small(5)).collect() }
        }
        13 => OpKind::Slice { axis: b.small(4), start: b.small(6), end: b.small(8) },
        14 => OpKind::Concat { axis: b.small(4) },
        _ => {
            if i % 2 == 0 {
                OpKind::Im2ColPatches { patch: b.small(5) }
            } else {
                OpKind::Cast { to: b.dtype() }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let split = usize::from(data.first().copied().unwrap_or(0)) * data.len() / 256;
    let (build, raw) = data.split_at(split.min(data.len()));
    let mut b = Bytes(build);
    let mut g = GraphBuilder::new();
    let mut values: Vec<ValueId> = Vec::new();
    let mut repeats = Vec::new();
    let mut i = 0;
    while !b.0.is_empty() && i < 96 {
        i += 1;
        match b.small(8) {
            0..=4 => {
                let k = kind(&mut b, i);
                let n = b.small(4);
                let operands: Vec<ValueId> = (0..n).filter_map(|_| b.pick(&values)).collect();
                if let Ok(results) = g.op(k, &operands) {
                    values.extend(results);
                }
            }
            5 => {
                if let Ok(h) = g.begin_repeat(b.small(4) as u32) {
                    repeats.push(h);
                }
            }
            6 => {
                let Some(h) = repeats.last() else { continue };
                let arg = match b.small(3) {
                    0 => b.pick(&values).map(|v| g.carried(h, v)),
                    1 => b.pick(&values).map(|v| g.invariant(h, v)),
                    _ => {
                        let n = b.small(4);
                        let vs: Vec<ValueId> = (0..n).filter_map(|_| b.pick(&values)).collect();
                        Some(g.iterated(h, &vs))
                    }
                };
                if let Some(Ok(v)) = arg {
                    values.push(v);
                }
            }
            _ => {
                if b.u8() & 1 == 0 {
                    if let Some(v) = b.pick(&values) {
                        let _ = g.output(&format!("out{}", b.small(4)), v);
                    }
                } else if let Some(h) = repeats.pop() {
                    let n = b.small(3);
                    let yields: Vec<ValueId> = (0..n).filter_map(|_| b.pick(&values)).collect();
                    match g.end_repeat(&h, &yields) {
                        Ok(results) => values.extend(results),
                        Err(e) => {
                            let _ = e.to_string();
                        }
                    }
                }
            }
        }
    }
    let mut graph: Graph = if repeats.is_empty() {
        match g.finish() {
            Ok(graph) => {
                graph.verify().expect("a finished graph verifies");
                let _ = graph.dump();
                graph
            }
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        }
    } else {
        g.graph().clone()
    };
    // Raw ops: anything goes; only the verifier stands between them and use.
    let mut r = Bytes(raw);
    let mut values: Vec<ValueId> = (0..graph.value_count() as u32).map(ValueId::new).collect();
    let mut j = 0;
    while !r.0.is_empty() && j < 32 {
        j += 1;
        let k = kind(&mut r, j);
        let n = r.small(4);
        let mut operands: Vec<ValueId> = (0..n).filter_map(|_| r.pick(&values)).collect();
        if r.u8() == 0xFF {
            operands.push(ValueId::new(u32::from(r.u8()) * 1000));
        }
        let results: Vec<TensorType> = (0..r.small(3)).map(|_| r.ty()).collect();
        let region = RegionId::new(r.small(3) as u32);
        if graph.append_op(region, k, operands, results).is_some() {
            values = (0..graph.value_count() as u32).map(ValueId::new).collect();
        }
    }
    match graph.verify() {
        Ok(()) => {
            let _ = graph.dump();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
