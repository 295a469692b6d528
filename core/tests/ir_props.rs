//! Properties: whatever the builder accepts verifies; the verifier and the
//! dump never panic on arbitrary raw graphs.

use ipuc_core::ir::{
    DType, Graph, GraphBuilder, MatMul, OpKind, Repeat, Shape, TensorType, ValueId,
};
use proptest::prelude::*;

fn dtype() -> impl Strategy<Value = DType> {
    prop_oneof![
        Just(DType::F32),
        Just(DType::F16),
        (-40i8..40).prop_map(DType::f143),
        (-40i8..40).prop_map(DType::f152),
    ]
}

fn small_type() -> impl Strategy<Value = TensorType> {
    (dtype(), prop::collection::vec(1usize..5, 0..5)).prop_map(|(d, dims)| TensorType::new(d, dims))
}

fn kind() -> impl Strategy<Value = OpKind> {
    prop_oneof![
        Just(OpKind::Add),
        Just(OpKind::GeluTanh { store: None }),
        Just(OpKind::Softmax),
        Just(OpKind::MergeHeads),
        (0usize..4).prop_map(|heads| OpKind::SplitHeads { heads }),
        (-1.0f32..2.0).prop_map(|eps| OpKind::LayerNorm { eps, store: None }),
        (-1.0f32..2.0).prop_map(|scale| OpKind::Attention { scale }),
        (any::<bool>(), any::<bool>(), dtype()).prop_map(|(a, b, out)| OpKind::MatMul(MatMul {
            transpose_a: a,
            transpose_b: b,
            out
        })),
        prop::collection::vec(0usize..5, 0..4).prop_map(|perm| OpKind::Transpose { perm }),
        prop::collection::vec(0usize..6, 0..4).prop_map(|d| OpKind::Reshape {
            shape: Shape::new(d)
        }),
        (0usize..4, 0usize..4, 0usize..5).prop_map(|(axis, start, end)| OpKind::Slice {
            axis,
            start,
            end
        }),
        (0usize..4).prop_map(|axis| OpKind::Concat { axis }),
        (0usize..4).prop_map(|patch| OpKind::Im2ColPatches { patch }),
        dtype().prop_map(|to| OpKind::Cast { to }),
    ]
}

/// `default_cases` from a fixed seed (CI); `cargo xtask proptest --cases N`
/// sets `IPUC_PROPTEST_CASES` (and `IPUC_PROPTEST_SEED` another seed).
fn proptest_config(default_cases: u32) -> ProptestConfig {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    ProptestConfig {
        cases: env("IPUC_PROPTEST_CASES").map_or(default_cases, |c| c as u32),
        rng_seed: proptest::test_runner::RngSeed::Fixed(
            env("IPUC_PROPTEST_SEED").unwrap_or(0x1BC0_2026),
        ),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(proptest_config(256))]

    /// Random builder programs: every accepted op keeps the graph valid.
    #[test]
    fn builder_output_always_verifies(
        inputs in prop::collection::vec(small_type(), 1..4),
        steps in prop::collection::vec((kind(), prop::collection::vec(0usize..8, 0..4)), 0..24),
        repeat_at in 0usize..24,
    ) {
        let mut b = GraphBuilder::new();
        let mut pool: Vec<ValueId> = Vec::new();
        for (i, ty) in inputs.into_iter().enumerate() {
            if let Ok(v) = b.input(&format!("in{i}"), ty) {
                pool.push(v);
            }
        }
        let mut open = None;
        let mut outer_pool = Vec::new();
        for (step, (kind, picks)) in steps.into_iter().enumerate() {
            if step == repeat_at && !pool.is_empty() {
                let r = b.begin_repeat(2).unwrap();
                let arg = b.carried(&r, pool[0]).unwrap();
                outer_pool = pool.clone();
                pool = vec![arg];
                open = Some(r);
            }
            let operands: Vec<ValueId> = picks.iter().filter_map(|&p| pool.get(p % pool.len().max(1)).copied()).collect();
            if let Ok(results) = b.op(kind, &operands) {
                pool.extend(results);
            }
        }
        if let Some(r) = open {
            let arg = pool[0];
            // Yield the last value of the carried type, or the argument itself.
            let ty = b.ty(arg).unwrap().clone();
            let y = pool.iter().rev().copied().find(|&v| b.ty(v).unwrap() == &ty).unwrap_or(arg);
            let results = b.end_repeat(&r, &[y]).unwrap();
            pool = outer_pool;
            pool.extend(results);
        }
        if let Some(&last) = pool.last() {
            b.output("out", last).unwrap();
        }
        let graph = b.finish().unwrap();
        prop_assert!(graph.verify().is_ok());
        prop_assert_eq!(graph.dump(), graph.clone().dump());
        // The text form reads back to the same graph (the filetests' premise).
        let reparsed = Graph::parse(&graph.dump());
        prop_assert!(reparsed.is_ok(), "{}\n{:?}", graph.dump(), reparsed.err());
        prop_assert_eq!(reparsed.unwrap().dump(), graph.dump());
    }

    /// Any text, and a valid dump with one character removed or replaced:
    /// the parser answers with a graph or a located error, never a panic.
    #[test]
    fn parser_never_panics(text in "\\PC{0,200}", cut in 0usize..400, with in "\\PC?") {
        let _ = Graph::parse(&text);
        let dump = SAMPLE_DUMP;
        let mut at = cut % dump.len();
        while !dump.is_char_boundary(at) { at -= 1; }
        let mut end = at + dump[at..].chars().next().map_or(0, char::len_utf8);
        if end > dump.len() { end = dump.len(); }
        let mutated = format!("{}{}{}", &dump[..at], with, &dump[end..]);
        if let Err(e) = Graph::parse(&mutated) {
            prop_assert!(e.line >= 1 && e.column >= 1);
        }
    }

    /// Arbitrary raw graphs (dangling ids, bad types, bogus Repeats): the
    /// verifier returns a result and the dump renders, without panicking.
    #[test]
    fn verifier_never_panics_on_raw_graphs(
        ops in prop::collection::vec(
            (kind(), prop::collection::vec(0u32..20, 0..4), prop::collection::vec(small_type(), 0..3), 0u32..3),
            0..16),
        repeats in prop::collection::vec((0u32..4, 0u32..3, 0u32..3, 0u32..3, prop::collection::vec(0u32..20, 0..8)), 0..3),
        outputs in prop::collection::vec(0u32..24, 0..3),
    ) {
        let mut g = Graph::new();
        let body = g.append_region();
        g.append_argument(body, TensorType::new(DType::F16, [2])).unwrap();
        for (kind, operands, results, region) in ops {
            let region = if region == 2 { body } else { Graph::TOP };
            let operands = operands.into_iter().map(ValueId::new).collect();
            g.append_op(region, kind, operands, results).unwrap();
        }
        for (trip_count, carried, invariants, sequences, operands) in repeats {
            let kind = OpKind::Repeat(Repeat { body, trip_count, carried, invariants, sequences });
            let operands: Vec<ValueId> = operands.into_iter().map(ValueId::new).collect();
            let results = vec![TensorType::new(DType::F16, [2]); carried as usize];
            let op = g.append_op(Graph::TOP, kind, operands, results).unwrap();
            g.set_region_parent(body, Some(op)).unwrap();
            g.set_yields(body, vec![ValueId::new(0)]).unwrap();
        }
        for (i, v) in outputs.into_iter().enumerate() {
            g.push_output(format!("o{i}"), ValueId::new(v));
        }
        let _ = g.verify();
        let _ = g.dump();
        let _ = g.walk();
    }
}

/// A dump with every kind of line (Repeat, labels, attributes, outputs).
const SAMPLE_DUMP: &str = "\
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
      %12 = add %4, %11 : f16[1,4,8]  # residual
    yield %12
  } : f16[1,4,8]
  %14 = slice %13 {axis=1, 0..1} : f16[1,1,8]
  %15 = cast %14 : f32[1,1,8]
  output \"first\" = %15
}
";
