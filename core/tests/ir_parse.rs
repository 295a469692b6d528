//! The text form: what `Graph::dump` prints, `Graph::parse` reads back, and
//! a malformed line is a located, typed error.

use ipuc_core::ir::{DType, Graph, ParseErrorKind, TensorType};

const LAYER: &str = "\
graph {
  %0 = input \"x\" : f16[1,4,8]
  %1 = parameter \"l0.w\" : f143<-4>[8,8]
  %2 = parameter \"l1.w\" : f143<-4>[8,8]
  %3 = parameter \"ln.g\" : f16[8]
  %4 = constant [0.5, -0.0, 1e-6, 3.0, 2.0, 2.0, 2.0, 2.0, 1.0] : f16[9]
  %14 = repeat x2 carried(%0) invariants(%3) sequences([%1 %2]) {
    ^r1 carried(%5: f16[1,4,8]) invariant(%6: f16[8]) iterated(%7: f143<-4>[8,8]):
      %8 = layer_norm %5, %6, %6 {eps=1e-6, store=f143<-4>} : f143<-4>[1,4,8]
      %9 = matmul %8, %7 {transpose_b} : f16[1,4,8]
      %10 = split_heads %9 {heads=2} : f16[1,2,4,4]
      %11 = attention %10, %10, %10 {scale=0.5} : f16[1,2,4,4]
      %12 = merge_heads %11 : f16[1,4,8]
      %13 = add %5, %12 : f16[1,4,8]  # residual
    yield %13
  } : f16[1,4,8]  # encoder
  %15 = slice %14 {axis=1, 0..1} : f16[1,1,8]
  %16 = transpose %15 {perm=[0, 2, 1]} : f16[1,8,1]
  %17 = reshape %16 : f16[8]
  %18 = gelu_erf %17 : f16[8]
  %19 = cast %18 : f32[8]
  output \"first\" = %19
}
";

#[test]
fn a_dump_reads_back_to_itself() {
    let graph = Graph::parse(LAYER).unwrap();
    assert_eq!(graph.dump(), LAYER);
    let repeat = graph
        .walk()
        .into_iter()
        .find_map(|op| graph.repeat(op))
        .unwrap();
    assert_eq!(repeat.trip_count(), 2);
    assert_eq!(repeat.iterated_args().len(), 1);
    assert_eq!(graph.outputs()[0].name, "first");
}

#[test]
fn comments_and_other_numbering_are_accepted() {
    let text = "\
; a comment, then values named out of order
graph {
  %7 = input \"x\" : f16[2,3]
  %2 = add %7, %7 : f16[2,3]
  output \"y\" = %2
}
";
    let graph = Graph::parse(text).unwrap();
    assert_eq!(
        graph.dump(),
        "graph {\n  %0 = input \"x\" : f16[2,3]\n  %1 = add %0, %0 : f16[2,3]\n  output \"y\" = %1\n}\n"
    );
}

fn error(text: &str) -> (usize, usize, ParseErrorKind, String) {
    let e = Graph::parse(text).unwrap_err();
    let message = e.to_string();
    (e.line, e.column, e.kind, message)
}

#[test]
fn errors_name_line_column_and_cause() {
    let (line, column, kind, message) =
        error("graph {\n  %0 = input \"x\" : f16[2]\n  %1 = frobnicate %0 : f16[2]\n}\n");
    assert_eq!((line, column), (3, 8));
    assert_eq!(kind, ParseErrorKind::UnknownOp("frobnicate".into()));
    assert_eq!(message, "line 3, column 8: unknown op `frobnicate`");

    let (line, _, kind, _) = error("graph {\n  %1 = add %0, %0 : f16[2]\n}\n");
    assert_eq!((line, kind), (2, ParseErrorKind::UnknownValue(0)));

    let (_, column, kind, message) =
        error("graph {\n  %0 = input \"x\" : f16[2]\n  %1 = add %0, %0 : f32[2]\n}\n");
    assert_eq!(column, 3);
    assert_eq!(
        kind,
        ParseErrorKind::TypeMismatch {
            declared: TensorType::new(DType::F32, [2]),
            inferred: TensorType::new(DType::F16, [2]),
        }
    );
    assert!(
        message.ends_with("declares f32[2] but the op produces f16[2]"),
        "{message}"
    );

    let (line, _, kind, _) = error("graph {\n  %0 = input \"x\" : f16[2]\n");
    assert_eq!((line, kind), (2, ParseErrorKind::UnexpectedEnd));

    let (_, _, kind, message) =
        error("graph {\n  %0 = input \"x\" : f16[2]\n  %0 = add %0, %0 : f16[2]\n}\n");
    assert_eq!(kind, ParseErrorKind::Redefined(0));
    assert!(message.contains("%0 is defined twice"), "{message}");

    // The builder's own rules: shapes that do not broadcast.
    let (line, _, kind, _) = error(
        "graph {\n  %0 = input \"x\" : f16[2]\n  %1 = input \"y\" : f16[3]\n  %2 = add %0, %1 : f16[2]\n}\n",
    );
    assert_eq!(line, 4);
    assert!(matches!(kind, ParseErrorKind::Ir(_)), "{kind:?}");

    let (_, _, kind, _) = error("graph {\n  %0 = input \"x\" : f16<3>[2]\n}\n");
    assert!(matches!(kind, ParseErrorKind::Expected(_)), "{kind:?}");

    let (line, _, _, _) = error("graph {\n}\n%0 = input \"x\" : f16[2]\n");
    assert_eq!(line, 3);
}

#[test]
fn a_repeat_without_yield_or_with_wrong_arguments_is_refused() {
    let no_yield = "\
graph {
  %0 = input \"x\" : f16[2]
  %3 = repeat x2 carried(%0) invariants() sequences() {
    ^r1 carried(%1: f16[2]) invariant() iterated():
      %2 = add %1, %1 : f16[2]
  } : f16[2]
}
";
    let (line, _, kind, _) = error(no_yield);
    assert_eq!(line, 6);
    assert!(matches!(kind, ParseErrorKind::Expected(_)));
    let extra_arg = no_yield.replace("carried(%1: f16[2])", "carried(%1: f16[2], %9: f16[2])");
    let (line, _, _, _) = error(&extra_arg);
    assert_eq!(line, 4);
}
