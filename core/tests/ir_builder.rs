//! Shape inference of every op, Repeat structure read-back and the dump.

use ipuc_core::ir::{DType, GraphBuilder, MatMul, OpKind, TensorType, ValueDef};

fn f16(dims: &[usize]) -> TensorType {
    TensorType::new(DType::F16, dims.to_vec())
}

#[test]
fn op_shapes() {
    let mut b = GraphBuilder::new();
    let px = b
        .input(
            "pixel_values",
            TensorType::new(DType::F32, [2, 3, 384, 384]),
        )
        .unwrap();
    let cols = b.im2col_patches(px, 14).unwrap();
    // 384 // 14 = 27 patches per side: the last 6 rows/columns are dropped.
    assert_eq!(
        b.ty(cols).unwrap(),
        &TensorType::new(DType::F32, [2, 729, 588])
    );
    let w = b
        .parameter("w", TensorType::new(DType::f143(-4), [1152, 3, 14, 14]))
        .unwrap();
    let w2 = b.reshape(w, [1152, 588]).unwrap();
    let h = b.cast(cols, DType::F16).unwrap();
    let e = b.matmul_transposed(h, w2, DType::F16).unwrap();
    assert_eq!(b.ty(e).unwrap(), &f16(&[2, 729, 1152]));
    let heads = b.split_heads(e, 16).unwrap();
    assert_eq!(b.ty(heads).unwrap(), &f16(&[2, 16, 729, 72]));
    // A batch-1 query broadcasts against batch-2 keys (the MAP head's probe).
    let probe = b.parameter("probe", f16(&[1, 16, 1, 72])).unwrap();
    let a = b.attention(probe, heads, heads).unwrap();
    assert_eq!(b.ty(a).unwrap(), &f16(&[2, 16, 1, 72]));
    let m = b.merge_heads(a).unwrap();
    assert_eq!(b.ty(m).unwrap(), &f16(&[2, 1, 1152]));
    let tr = b.transpose(heads, &[0, 2, 1, 3]).unwrap();
    assert_eq!(b.ty(tr).unwrap(), &f16(&[2, 729, 16, 72]));
    let mm = b
        .matmul(
            heads,
            heads,
            MatMul {
                transpose_a: false,
                transpose_b: true,
                out: DType::F32,
            },
        )
        .unwrap();
    assert_eq!(
        b.ty(mm).unwrap(),
        &TensorType::new(DType::F32, [2, 16, 729, 729])
    );
    let at = b
        .matmul(
            heads,
            heads,
            MatMul {
                transpose_a: true,
                transpose_b: false,
                out: DType::F16,
            },
        )
        .unwrap();
    assert_eq!(b.ty(at).unwrap(), &f16(&[2, 16, 72, 72]));
    let sm = b.softmax(mm).unwrap();
    assert_eq!(b.ty(sm).unwrap().shape.dims(), &[2, 16, 729, 729]);
    let s = b.slice(e, 2, 1152 - 72, 1152).unwrap();
    assert_eq!(b.ty(s).unwrap(), &f16(&[2, 729, 72]));
    let bias = b.parameter("bias", f16(&[1152])).unwrap();
    let sum = b.add(bias, e).unwrap();
    assert_eq!(b.ty(sum).unwrap(), &f16(&[2, 729, 1152]));
    let ln = b.layer_norm(sum, bias, bias, 1e-6).unwrap();
    let g = b.gelu_tanh(ln).unwrap();
    b.output("g", g).unwrap();
    let graph = b.finish().unwrap();
    assert_eq!(graph.external("w"), Some(w));
    assert_eq!(graph.parameters().count(), 3);
    assert_eq!(graph.inputs().count(), 1);
    match graph.op(graph.walk()[0]).unwrap().kind() {
        OpKind::Input { name, .. } => assert_eq!(name, "pixel_values"),
        k => panic!("first op is {k:?}"),
    }
}

#[test]
fn repeat_view_orders_carried_invariant_iterated() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[4, 8])).unwrap();
    let scale = b.parameter("shared", f16(&[8])).unwrap();
    let ws: Vec<_> = (0..2)
        .map(|i| b.parameter(&format!("w{i}"), f16(&[8, 8])).unwrap())
        .collect();
    let c0 = b.constant(f16(&[4, 8]), vec![0.5; 32]).unwrap();
    let r = b.begin_repeat(2).unwrap();
    // Declared out of order on purpose: the body arguments are reordered.
    let w = b.iterated(&r, &ws).unwrap();
    let inv = b.invariant(&r, scale).unwrap();
    let h = b.carried(&r, x).unwrap();
    let acc = b.carried(&r, c0).unwrap();
    let y = b.matmul_transposed(h, w, DType::F16).unwrap();
    let y = b.add(y, inv).unwrap();
    let acc2 = b.add(acc, y).unwrap();
    let results = b.end_repeat(&r, &[y, acc2]).unwrap();
    assert_eq!(results.len(), 2);
    b.output("y", results[0]).unwrap();
    b.output("acc", results[1]).unwrap();
    let g = b.finish().unwrap();
    let op = g
        .walk()
        .into_iter()
        .find(|&o| g.repeat(o).is_some())
        .unwrap();
    let view = g.repeat(op).unwrap();
    assert_eq!(view.carried_inits(), &[x, c0]);
    assert_eq!(view.invariants(), &[scale]);
    assert_eq!(view.sequence_count(), 1);
    assert_eq!(view.sequence(0), ws.as_slice());
    assert_eq!(view.sequence(1), &[]);
    assert_eq!(view.carried_args(), &[h, acc]);
    assert_eq!(view.invariant_args(), &[inv]);
    assert_eq!(view.iterated_args(), &[w]);
    assert_eq!(view.yields(), &[y, acc2]);
    assert_eq!(view.results(), results.as_slice());
    assert_eq!(
        g.value(h).unwrap().def(),
        ValueDef::Argument {
            region: view.body(),
            index: 0
        }
    );
    assert_eq!(
        g.value(w).unwrap().def(),
        ValueDef::Argument {
            region: view.body(),
            index: 3
        }
    );
    assert_eq!(g.region(view.body()).unwrap().parent(), Some(op));
    assert_eq!(g.output("acc"), Some(results[1]));
}

#[test]
fn dump_is_compact_and_stable() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[1, 4, 8])).unwrap();
    let ws: Vec<_> = (0..2)
        .map(|i| {
            b.parameter(&format!("l{i}.w"), TensorType::new(DType::f143(-4), [8, 8]))
                .unwrap()
        })
        .collect();
    let g0 = b.parameter("ln.g", f16(&[8])).unwrap();
    let r = b.begin_repeat(2).unwrap();
    let h = b.carried(&r, x).unwrap();
    let g = b.invariant(&r, g0).unwrap();
    let w = b.iterated(&r, &ws).unwrap();
    let n = b.layer_norm(h, g, g, 1e-6).unwrap();
    let y = b.matmul_transposed(n, w, DType::F16).unwrap();
    let q = b.split_heads(y, 2).unwrap();
    let a = b.attention(q, q, q).unwrap();
    let m = b.merge_heads(a).unwrap();
    let s = b.add(h, m).unwrap();
    let out = b.end_repeat(&r, &[s]).unwrap();
    let sl = b.slice(out[0], 1, 0, 1).unwrap();
    let f = b.cast(sl, DType::F32).unwrap();
    b.output("first", f).unwrap();
    let graph = b.finish().unwrap();
    let expected = "\
graph {
  %0 = input \"x\" : f16[1,4,8]
  %1 = parameter \"l0.w\" : f143<-4>[8,8]
  %2 = parameter \"l1.w\" : f143<-4>[8,8]
  %3 = parameter \"ln.g\" : f16[8]
  %13 = repeat x2 carried(%0) invariants(%3) sequences([%1 %2]) {
    ^r1 carried(%4: f16[1,4,8]) invariant(%5: f16[8]) iterated(%6: f143<-4>[8,8]):
      %7 = layer_norm %4, %5, %5 {eps=1e-6} : f16[1,4,8]
      %8 = matmul %7, %6 {transpose_b} : f16[1,4,8]
      %9 = split_heads %8 {heads=2} : f16[1,2,4,4]
      %10 = attention %9, %9, %9 {scale=0.5} : f16[1,2,4,4]
      %11 = merge_heads %10 : f16[1,4,8]
      %12 = add %4, %11 : f16[1,4,8]
    yield %12
  } : f16[1,4,8]
  %14 = slice %13 {axis=1, 0..1} : f16[1,1,8]
  %15 = cast %14 : f32[1,1,8]
  output \"first\" = %15
}
";
    assert_eq!(graph.dump(), expected);
    assert_eq!(graph.clone().dump(), expected);
}

#[test]
fn users_and_flops() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2, 4, 8])).unwrap();
    let w = b.parameter("w", f16(&[6, 8])).unwrap();
    let y = b.matmul_transposed(x, w, DType::F16).unwrap(); // 2·4·6·8·2 = 768
    let s = b.add(y, y).unwrap();
    let q = b.split_heads(s, 2).unwrap(); // [2,2,4,3]
    let a = b.attention(q, q, q).unwrap(); // 2·2·4 rows · 2·4·(3+3) = 768
    let r = b.begin_repeat(3).unwrap();
    let h = b.carried(&r, x).unwrap();
    let m = b
        .matmul(
            h,
            h,
            MatMul {
                transpose_a: true,
                transpose_b: false,
                out: DType::F16,
            },
        )
        .unwrap(); // [2,8,8]: 2·8·8·4·2 = 1024
    let m = b.slice(m, 1, 0, 4).unwrap();
    let out = b.end_repeat(&r, &[m]).unwrap();
    b.output("a", a).unwrap();
    b.output("o", out[0]).unwrap();
    let g = b.finish().unwrap();
    assert_eq!(g.flops(), 768 + 768 + 3 * 1024);
    let users = g.users();
    assert_eq!(
        users[y.index()].len(),
        1,
        "add reads y twice but is one user"
    );
    assert_eq!(users[x.index()].len(), 2, "the matmul and the Repeat");
    assert_eq!(users[h.index()].len(), 1);
    assert!(users[a.index()].is_empty());
}

#[test]
fn labels_name_ops_in_the_dump() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2])).unwrap();
    let c = b.constant_named("two", f16(&[2]), vec![2.0, 2.0]).unwrap();
    let y = b.add(x, c).unwrap();
    b.label(y, "scale").unwrap();
    let r = b.begin_repeat(1).unwrap();
    let h = b.carried(&r, y).unwrap();
    let e = b.label(h, "arg").unwrap_err();
    assert_eq!(
        e.to_string(),
        "%3 is a region argument, not an op result, and cannot be labelled"
    );
    let out = b.end_repeat(&r, &[h]).unwrap();
    b.output("y", out[0]).unwrap();
    let g = b.finish().unwrap();
    assert_eq!(g.label(g.defining_op(y).unwrap()), Some("scale"));
    assert_eq!(g.label(g.defining_op(x).unwrap()), None);
    let dump = g.dump();
    assert!(
        dump.contains("  %1 = constant [2.0, 2.0] : f16[2]  # two\n"),
        "{dump}"
    );
    assert!(
        dump.contains("  %2 = add %0, %1 : f16[2]  # scale\n"),
        "{dump}"
    );
}
