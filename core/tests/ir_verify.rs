//! Verifier and builder error cases, each with its exact message, plus the
//! raw (unchecked) construction paths the builder cannot produce.

use ipuc_core::ir::{
    DType, Graph, GraphBuilder, IrError, MatMul, OpKind, Repeat, TensorType, ValueId,
};

fn t(dtype: DType, dims: &[usize]) -> TensorType {
    TensorType::new(dtype, dims.to_vec())
}

fn f16(dims: &[usize]) -> TensorType {
    t(DType::F16, dims)
}

fn msg(e: IrError) -> String {
    e.to_string()
}

#[test]
fn matmul_contraction_mismatch_names_op_and_operand() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2, 4, 8])).unwrap(); // op0 %0
    let w = b.parameter("w", f16(&[16, 9])).unwrap(); // op1 %1
    let e = b.matmul_transposed(x, w, DType::F16).unwrap_err();
    assert_eq!(msg(e), "op2 (matmul): operand %1 dim 1 must be 8, found 9");
}

#[test]
fn matmul_batch_dims_must_broadcast() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2, 4, 8])).unwrap();
    let y = b.input("y", f16(&[3, 8, 5])).unwrap();
    let e = b
        .matmul(
            x,
            y,
            MatMul {
                transpose_a: false,
                transpose_b: false,
                out: DType::F32,
            },
        )
        .unwrap_err();
    assert_eq!(
        msg(e),
        "op2 (matmul): shapes of %0 [2,4,8] and %1 [3,8,5] do not broadcast"
    );
}

#[test]
fn matmul_result_must_be_arithmetic() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[4, 8])).unwrap();
    let e = b
        .matmul(
            x,
            x,
            MatMul {
                transpose_a: false,
                transpose_b: true,
                out: DType::f143(0),
            },
        )
        .unwrap_err();
    assert_eq!(
        msg(e),
        "op1 (matmul): dtype attribute f143<0> not supported; accepts f32 or f16 results"
    );
}

#[test]
fn add_shapes_must_broadcast() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2, 4, 8])).unwrap();
    let y = b.input("y", f16(&[4, 7])).unwrap();
    let e = b.add(x, y).unwrap_err();
    assert_eq!(
        msg(e),
        "op2 (add): shapes of %0 [2,4,8] and %1 [4,7] do not broadcast"
    );
}

#[test]
fn add_dtypes_must_match() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[4, 8])).unwrap();
    let y = b.input("y", t(DType::F32, &[8])).unwrap();
    let e = b.add(x, y).unwrap_err();
    assert_eq!(msg(e), "op2 (add): operand %1 must be f16, found f32");
}

#[test]
fn fp8_is_rejected_by_arithmetic() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", t(DType::f152(-2), &[4, 8])).unwrap();
    let e = b.gelu_tanh(x).unwrap_err();
    assert_eq!(
        msg(e),
        "op1 (gelu_tanh): operand %0 has dtype f152<-2>; accepts f32 or f16"
    );
}

#[test]
fn layer_norm_parameters_must_match_width() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[4, 8])).unwrap();
    let g = b.parameter("g", f16(&[8])).unwrap();
    let beta = b.parameter("b", f16(&[6])).unwrap();
    let e = b.layer_norm(x, g, beta, 1e-6).unwrap_err();
    assert_eq!(
        msg(e),
        "op3 (layer_norm): operand %2 dim 0 must be 8, found 6"
    );
    let e = b.layer_norm(x, g, g, 0.0).unwrap_err();
    assert_eq!(
        msg(e),
        "op3 (layer_norm): eps must be finite and > 0, found 0.0"
    );
}

#[test]
fn reshape_keeps_element_count() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[4, 8])).unwrap();
    let e = b.reshape(x, [3, 10]).unwrap_err();
    assert_eq!(msg(e), "op1 (reshape): %0 needs 30 elements, found 32");
}

#[test]
fn split_heads_needs_divisible_width() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[1, 4, 10])).unwrap();
    let e = b.split_heads(x, 3).unwrap_err();
    assert_eq!(
        msg(e),
        "op1 (split_heads): 3 heads do not divide the last dim 10 of %0"
    );
    let e = b.merge_heads(x).unwrap();
    assert_eq!(b.ty(e).unwrap(), &f16(&[4, 10]));
}

#[test]
fn transpose_needs_a_permutation() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2, 3, 4])).unwrap();
    let e = b.transpose(x, &[0, 0, 1]).unwrap_err();
    assert_eq!(
        msg(e),
        "op1 (transpose): [0, 0, 1] is not a permutation of the 3 axes of %0"
    );
}

#[test]
fn slice_bounds_are_checked() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2, 12])).unwrap();
    let e = b.slice(x, 1, 8, 13).unwrap_err();
    assert_eq!(
        msg(e),
        "op1 (slice): slice 8..13 is empty or exceeds dim 1 = 12 of %0"
    );
    let e = b.slice(x, 2, 0, 1).unwrap_err();
    assert_eq!(msg(e), "op1 (slice): axis 2 out of range for rank 2 (%0)");
}

#[test]
fn concat_dims_must_agree() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2, 12])).unwrap();
    let y = b.input("y", f16(&[3, 12])).unwrap();
    let z = b.input("z", f16(&[3, 11])).unwrap();
    let ok = b.concat(&[x, y], 0).unwrap();
    assert_eq!(b.ty(ok).unwrap(), &f16(&[5, 12]));
    let e = b.concat(&[x, z], 0).unwrap_err();
    assert_eq!(
        msg(e),
        "op4 (concat): operand %2 dim 1 must be 12, found 11"
    );
}

#[test]
fn im2col_needs_rank_four_and_a_fitting_patch() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", t(DType::F32, &[1, 3, 10, 28])).unwrap();
    let e = b.im2col_patches(x, 14).unwrap_err();
    assert_eq!(
        msg(e),
        "op1 (im2col_patches): patch 14 does not fit the 10x28 image of %0"
    );
    let y = b.input("y", t(DType::F32, &[3, 28, 28])).unwrap();
    let e = b.im2col_patches(y, 14).unwrap_err();
    assert_eq!(
        msg(e),
        "op2 (im2col_patches): operand %1 must have rank 4, found rank 3"
    );
}

#[test]
fn attention_key_width_and_length_are_checked() {
    let mut b = GraphBuilder::new();
    let q = b.input("q", f16(&[1, 2, 4, 8])).unwrap();
    let k = b.input("k", f16(&[1, 2, 5, 6])).unwrap();
    let v = b.input("v", f16(&[1, 2, 4, 8])).unwrap();
    let e = b.attention(q, k, v).unwrap_err();
    assert_eq!(
        msg(e),
        "op3 (attention): operand %1 dim 3 must be 8, found 6"
    );
    let e = b.attention(q, v, k).unwrap_err();
    assert_eq!(
        msg(e),
        "op3 (attention): operand %1 dim 2 must be 4, found 5"
    );
    let e = b.attention_scaled(q, q, q, f32::NAN).unwrap_err();
    assert_eq!(
        msg(e),
        "op3 (attention): scale must be finite and > 0, found NaN"
    );
}

#[test]
fn fp8_scale_range_is_checked() {
    let mut b = GraphBuilder::new();
    let e = b.parameter("w", t(DType::f143(32), &[4])).unwrap_err();
    assert_eq!(
        msg(e),
        "value %0: FP8 dtype f143<32> has a scale outside [-32, 31]"
    );
    let x = b.input("x", f16(&[4])).unwrap();
    let e = b.cast(x, DType::f152(-33)).unwrap_err();
    assert_eq!(
        msg(e),
        "op1 (cast): dtype attribute f152<-33> not supported; accepts FP8 scales in [-32, 31]"
    );
}

#[test]
fn names_are_unique_and_non_empty() {
    let mut b = GraphBuilder::new();
    b.parameter("w", f16(&[4])).unwrap();
    let e = b.input("w", f16(&[4])).unwrap_err();
    assert_eq!(msg(e), "op1: name \"w\" already used by op0");
    let e = b.parameter("", f16(&[4])).unwrap_err();
    assert_eq!(msg(e), "op1: empty name");
    let c = b.constant(f16(&[2]), vec![1.0, 2.0]).unwrap();
    b.output("c", c).unwrap();
    let e = b.output("c", c).unwrap_err();
    assert_eq!(msg(e), "graph output \"c\" defined twice");
    let e = b.constant(f16(&[3]), vec![1.0]).unwrap_err();
    assert_eq!(
        msg(e),
        "op2 (constant): constant of type f16[3] needs 3 values, found 1"
    );
}

#[test]
fn body_cannot_read_outer_values_or_declare_parameters() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[4, 8])).unwrap(); // %0
    let y = b.input("y", f16(&[4, 8])).unwrap(); // %1
    let r = b.begin_repeat(2).unwrap(); // ^r1
    let h = b.carried(&r, x).unwrap(); // %2
    let e = b.add(h, y).unwrap_err();
    assert_eq!(
        msg(e),
        "op2 (add): operand %1 is not defined earlier in region ^r1 \
         (outer values reach a Repeat body only as invariants)"
    );
    let e = b.parameter("p", f16(&[8])).unwrap_err();
    assert_eq!(
        msg(e),
        "op2 (parameter): inputs and parameters must be at top level (pass them to a Repeat as invariants or sequences)"
    );
    let e = b.output("h", h).unwrap_err();
    assert_eq!(msg(e), "graph output \"h\": %2 is not a top-level value");
    // With the invariant the same add is fine.
    let yi = b.invariant(&r, y).unwrap();
    let s = b.add(h, yi).unwrap();
    let out = b.end_repeat(&r, &[s]).unwrap();
    b.output("out", out[0]).unwrap();
    b.finish().unwrap();
}

#[test]
fn repeat_sequence_rules() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[4, 8])).unwrap(); // %0
    let w0 = b.parameter("w0", f16(&[8, 8])).unwrap(); // %1
    let w1 = b.parameter("w1", f16(&[8, 8])).unwrap(); // %2
    let w2 = b.parameter("w2", f16(&[8, 9])).unwrap(); // %3
    let e = b.begin_repeat(0).unwrap_err();
    assert_eq!(msg(e), "op4 (repeat): trip count must be at least 1");
    let r = b.begin_repeat(3).unwrap();
    let e = b.iterated(&r, &[w0, w1]).unwrap_err();
    assert_eq!(
        msg(e),
        "repeat: sequence 0 has 2 values, the trip count is 3"
    );
    let e = b.iterated(&r, &[w0, w1, w2]).unwrap_err();
    assert_eq!(
        msg(e),
        "repeat: sequence 0 element 2 (%3) has type f16[8,9], expected f16[8,8]"
    );
    let h = b.carried(&r, x).unwrap();
    let w = b.iterated(&r, &[w0, w1, w0]).unwrap();
    let y = b.matmul_transposed(h, w, DType::F32).unwrap();
    let e = b.end_repeat(&r, &[]).unwrap_err();
    assert_eq!(
        msg(e),
        "op5 (repeat): body yields 0 values for 1 carried arguments"
    );
    let e = b.end_repeat(&r, &[y]).unwrap_err();
    assert_eq!(
        msg(e),
        "op5 (repeat): yield 0 (%6) has type f32[4,8], carried argument is f16[4,8]"
    );
    let e = b.end_repeat(&r, &[x]).unwrap_err();
    assert_eq!(msg(e), "op5 (repeat): yield %0 is not defined in body ^r1");
    let y16 = b.cast(y, DType::F16).unwrap();
    let out = b.end_repeat(&r, &[y16]).unwrap();
    assert_eq!(out.len(), 1);
    b.finish().unwrap();
}

#[test]
fn unclosed_repeat_fails_finish() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2])).unwrap();
    let r = b.begin_repeat(2).unwrap();
    b.carried(&r, x).unwrap();
    assert_eq!(
        msg(b.finish().unwrap_err()),
        "repeat body ^r1 was never closed"
    );
}

#[test]
fn nested_repeat_handles_must_close_innermost_first() {
    let mut b = GraphBuilder::new();
    let x = b.input("x", f16(&[2])).unwrap();
    let outer = b.begin_repeat(2).unwrap();
    let h = b.carried(&outer, x).unwrap();
    let inner = b.begin_repeat(3).unwrap();
    let e = b.carried(&outer, x).unwrap_err();
    assert_eq!(msg(e), "repeat body ^r1 is not the innermost open repeat");
    let e = b.carried(&inner, x).unwrap_err();
    assert_eq!(
        msg(e),
        "repeat body ^r2: carried value %0 is not defined in the enclosing region"
    );
    let hi = b.carried(&inner, h).unwrap();
    let s = b.add(hi, hi).unwrap();
    let r_inner = b.end_repeat(&inner, &[s]).unwrap();
    let r_outer = b.end_repeat(&outer, &[r_inner[0]]).unwrap();
    b.output("y", r_outer[0]).unwrap();
    let g = b.finish().unwrap();
    assert_eq!(g.walk().len(), 4); // input, outer repeat, inner repeat, add
}

// ----- raw graphs: the verifier's own checks ----------------------------

fn raw_input(g: &mut Graph, name: &str, ty: TensorType) -> ValueId {
    let op = g
        .append_op(
            Graph::TOP,
            OpKind::Input {
                name: name.into(),
                ty: ty.clone(),
            },
            vec![],
            vec![ty],
        )
        .unwrap();
    g.op(op).unwrap().results()[0]
}

#[test]
fn verifier_rejects_wrong_result_type() {
    let mut g = Graph::new();
    let x = raw_input(&mut g, "x", f16(&[4, 8]));
    g.append_op(
        Graph::TOP,
        OpKind::GeluTanh { store: None },
        vec![x],
        vec![f16(&[4, 9])],
    )
    .unwrap();
    assert_eq!(
        msg(g.verify().unwrap_err()),
        "op1 (gelu_tanh): result %1 has type f16[4,9], inferred f16[4,8]"
    );
}

#[test]
fn verifier_rejects_use_before_definition() {
    let mut g = Graph::new();
    let future = ValueId::new(1);
    g.append_op(
        Graph::TOP,
        OpKind::GeluTanh { store: None },
        vec![future],
        vec![f16(&[4])],
    )
    .unwrap();
    assert_eq!(raw_input(&mut g, "x", f16(&[4])), future);
    assert_eq!(
        msg(g.verify().unwrap_err()),
        "op0 (gelu_tanh): operand %1 is not defined earlier in region ^r0 \
         (outer values reach a Repeat body only as invariants)"
    );
    let mut g = Graph::new();
    g.append_op(
        Graph::TOP,
        OpKind::GeluTanh { store: None },
        vec![ValueId::new(7)],
        vec![f16(&[4])],
    )
    .unwrap();
    assert_eq!(msg(g.verify().unwrap_err()), "op0: unknown value %7");
}

fn raw_repeat(
    g: &mut Graph,
    body: ipuc_core::ir::RegionId,
    trip_count: u32,
    carried: u32,
    sequences: u32,
    operands: Vec<ValueId>,
    result_types: Vec<TensorType>,
) -> ipuc_core::ir::OpId {
    let kind = OpKind::Repeat(Repeat {
        body,
        trip_count,
        carried,
        invariants: 0,
        sequences,
    });
    let op = g
        .append_op(Graph::TOP, kind, operands, result_types)
        .unwrap();
    g.set_region_parent(body, Some(op)).unwrap();
    op
}

#[test]
fn verifier_checks_repeat_argument_count_and_types() {
    let mut g = Graph::new();
    let x = raw_input(&mut g, "x", f16(&[4])); // %0
    let w0 = raw_input(&mut g, "w0", f16(&[4])); // %1
    let w1 = raw_input(&mut g, "w1", t(DType::F32, &[4])); // %2
    let body = g.append_region();
    let a = g.append_argument(body, f16(&[4])).unwrap(); // %3
    g.set_yields(body, vec![a]).unwrap();
    raw_repeat(&mut g, body, 2, 1, 1, vec![x, w0, w1], vec![f16(&[4])]);
    assert_eq!(
        msg(g.verify().unwrap_err()),
        "op3 (repeat): body ^r1 must have 2 arguments (carried + invariants + sequences), found 1"
    );

    let mut g2 = g.clone();
    let s = g2.append_argument(body, f16(&[4])).unwrap(); // %5 (the result %4 exists)
    assert_eq!(s, ValueId::new(5));
    assert_eq!(
        msg(g2.verify().unwrap_err()),
        "op3 (repeat): sequence 0 element 1 (%2) has type f32[4], expected f16[4]"
    );

    let mut g3 = Graph::new();
    let x = raw_input(&mut g3, "x", f16(&[4]));
    let body = g3.append_region();
    let a = g3.append_argument(body, t(DType::F32, &[4])).unwrap();
    g3.set_yields(body, vec![a]).unwrap();
    raw_repeat(&mut g3, body, 2, 1, 0, vec![x], vec![f16(&[4])]);
    assert_eq!(
        msg(g3.verify().unwrap_err()),
        "op1 (repeat): carried argument 0 (%1) has type f32[4] but %0 is f16[4]"
    );
}

#[test]
fn verifier_checks_repeat_operand_count_and_body_ownership() {
    let mut g = Graph::new();
    let x = raw_input(&mut g, "x", f16(&[4]));
    let body = g.append_region();
    let a = g.append_argument(body, f16(&[4])).unwrap();
    g.set_yields(body, vec![a]).unwrap();
    // One sequence of trip count 3 needs 1 + 3 operands.
    raw_repeat(&mut g, body, 3, 1, 1, vec![x, x], vec![f16(&[4])]);
    assert_eq!(
        msg(g.verify().unwrap_err()),
        "op1 (repeat): expected 4 operands (carried + invariants + sequences x trip count), found 2"
    );

    let mut g = Graph::new();
    let x = raw_input(&mut g, "x", f16(&[4]));
    let body = g.append_region();
    let a = g.append_argument(body, f16(&[4])).unwrap();
    g.set_yields(body, vec![a]).unwrap();
    raw_repeat(&mut g, body, 1, 1, 0, vec![x], vec![f16(&[4])]);
    g.set_region_parent(body, None).unwrap();
    assert_eq!(
        msg(g.verify().unwrap_err()),
        "op1 (repeat): body region ^r1 is not owned by this repeat"
    );

    let mut g = Graph::new();
    raw_input(&mut g, "x", f16(&[4]));
    let stray = g.append_region();
    g.append_argument(stray, f16(&[4])).unwrap();
    assert_eq!(
        msg(g.verify().unwrap_err()),
        "region ^r1 has arguments or yields but is not a Repeat body"
    );
}

#[test]
fn verifier_checks_trip_count_and_outputs() {
    let mut g = Graph::new();
    let x = raw_input(&mut g, "x", f16(&[4]));
    let body = g.append_region();
    let a = g.append_argument(body, f16(&[4])).unwrap();
    g.set_yields(body, vec![a]).unwrap();
    raw_repeat(&mut g, body, 0, 1, 0, vec![x], vec![f16(&[4])]);
    assert_eq!(
        msg(g.verify().unwrap_err()),
        "op1 (repeat): trip count must be at least 1"
    );

    let mut g = Graph::new();
    let x = raw_input(&mut g, "x", f16(&[4]));
    let body = g.append_region();
    let a = g.append_argument(body, f16(&[4])).unwrap();
    g.set_yields(body, vec![a]).unwrap();
    raw_repeat(&mut g, body, 2, 1, 0, vec![x], vec![f16(&[4])]);
    g.push_output("inner", a);
    assert_eq!(
        msg(g.verify().unwrap_err()),
        "graph output \"inner\": %1 is not a top-level value"
    );
}
