//! Reads the text form [`Graph::dump`] prints back into a verified graph,
//! so compiler tests can be written as text (the `filetests/` directory).
//!
//! The grammar is the dump's, line by line: `graph {`, one op per line
//! (`%r = mnemonic operands {attrs} : type  # label`), a Repeat as
//! `%r = repeat xN carried(…) invariants(…) sequences([…] …) {`, its body
//! header `^rN carried(%a: T) invariant(…) iterated(…):`, body ops,
//! `yield …` and `} : T`, then `output "name" = %v` lines and `}`. Lines
//! starting with `;` are comments. Value numbers are names: the parsed
//! graph numbers values in the order the builder creates them, so a dump
//! of a builder-made graph reads back to the same dump. Attributes that the
//! result type already states (a cast's target, a reshape's shape, a
//! matmul's output dtype, a constant's type) come from the result type.
//! Every op goes through [`GraphBuilder`], so a parsed graph is checked by
//! the same rules as a built one, and an error names its line and column.

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::builder::{GraphBuilder, RepeatHandle};
use super::error::IrError;
use super::graph::Graph;
use super::id::ValueId;
use super::op::{Activation, MatMul, OpKind};
use super::types::{DType, Shape, TensorType};

/// Where a parse failed and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What was wrong.
    pub kind: ParseErrorKind,
}

/// What was wrong with the text.
#[derive(Clone, Debug, PartialEq)]
pub enum ParseErrorKind {
    /// The text does not follow the grammar here.
    Expected(&'static str),
    /// An op mnemonic the IR does not have.
    UnknownOp(String),
    /// A value name used before any line defines it.
    UnknownValue(u32),
    /// A value name defined twice.
    Redefined(u32),
    /// The declared result type differs from the one the op produces.
    TypeMismatch {
        /// What the line says.
        declared: TensorType,
        /// What the op's shape rules give.
        inferred: TensorType,
    },
    /// The builder or the verifier rejected the op or the graph.
    Ir(IrError),
    /// The text ended inside the graph or a Repeat.
    UnexpectedEnd,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: ", self.line, self.column)?;
        match &self.kind {
            ParseErrorKind::Expected(what) => write!(f, "expected {what}"),
            ParseErrorKind::UnknownOp(m) => write!(f, "unknown op `{m}`"),
            ParseErrorKind::UnknownValue(v) => write!(f, "%{v} is not defined before this line"),
            ParseErrorKind::Redefined(v) => write!(f, "%{v} is defined twice"),
            ParseErrorKind::TypeMismatch { declared, inferred } => write!(
                f,
                "the line declares {declared} but the op produces {inferred}"
            ),
            ParseErrorKind::Ir(e) => write!(f, "{e}"),
            ParseErrorKind::UnexpectedEnd => f.write_str("the text ends before the graph's `}`"),
        }
    }
}

impl Graph {
    /// Parses the text form [`Graph::dump`] prints (see the module docs).
    pub fn parse(text: &str) -> Result<Graph, ParseError> {
        Parser::default().run(text)
    }
}

/// A Repeat whose body is being read.
struct OpenRepeat {
    handle: RepeatHandle,
    results: Vec<(u32, usize)>,
    inits: RepeatOperands,
    header_seen: bool,
    yields: Option<Vec<ValueId>>,
}

/// The outer values a Repeat line names, in its three groups.
#[derive(Default)]
struct RepeatOperands {
    carried: Vec<ValueId>,
    invariants: Vec<ValueId>,
    sequences: Vec<Vec<ValueId>>,
}

#[derive(Default)]
struct Parser {
    builder: GraphBuilder,
    names: BTreeMap<u32, ValueId>,
    open: Vec<OpenRepeat>,
    started: bool,
    finished: bool,
}

impl Parser {
    fn run(mut self, text: &str) -> Result<Graph, ParseError> {
        let mut last = 0;
        for (index, raw) in text.lines().enumerate() {
            last = index + 1;
            let mut line = Line::new(raw, last);
            line.skip_space();
            if line.at_end() || line.peek() == Some(';') {
                continue;
            }
            if self.finished {
                return Err(line.error(ParseErrorKind::Expected("nothing after the graph's `}`")));
            }
            self.line(&mut line)?;
        }
        if !self.finished {
            return Err(ParseError {
                line: last.max(1),
                column: 1,
                kind: ParseErrorKind::UnexpectedEnd,
            });
        }
        let graph = self.builder.finish().map_err(|e| ParseError {
            line: last,
            column: 1,
            kind: ParseErrorKind::Ir(e),
        })?;
        Ok(graph)
    }

    fn line(&mut self, line: &mut Line<'_>) -> Result<(), ParseError> {
        if !self.started {
            line.keyword("graph")?;
            line.punct('{')?;
            self.started = true;
            return line.end();
        }
        if self.open.last().is_some_and(|r| !r.header_seen) {
            return self.body_header(line);
        }
        match line.peek() {
            Some('%') => self.op_line(line),
            Some('}') => self.close(line),
            _ if line.rest().starts_with("output") => self.output(line),
            _ if line.rest().starts_with("yield") => self.yield_line(line),
            _ => Err(line.error(ParseErrorKind::Expected("an op, `yield`, `output` or `}`"))),
        }
    }

    fn value(&self, line: &Line<'_>, name: u32) -> Result<ValueId, ParseError> {
        self.names
            .get(&name)
            .copied()
            .ok_or_else(|| line.error(ParseErrorKind::UnknownValue(name)))
    }

    fn define(&mut self, line: &Line<'_>, name: u32, value: ValueId) -> Result<(), ParseError> {
        if self.names.insert(name, value).is_some() {
            return Err(line.error(ParseErrorKind::Redefined(name)));
        }
        Ok(())
    }

    fn values(&self, line: &mut Line<'_>, sep: Option<char>) -> Result<Vec<ValueId>, ParseError> {
        let mut out = Vec::new();
        line.skip_space();
        while line.peek() == Some('%') {
            let name = line.value_name()?;
            out.push(self.value(line, name)?);
            line.skip_space();
            match sep {
                Some(c) if line.peek() == Some(c) => {
                    line.bump();
                    line.skip_space();
                }
                _ if sep.is_none() => {}
                _ => break,
            }
        }
        Ok(out)
    }

    fn op_line(&mut self, line: &mut Line<'_>) -> Result<(), ParseError> {
        let mut results = Vec::new();
        loop {
            let column = line.column();
            results.push((line.value_name()?, column));
            line.skip_space();
            if !line.eat(',') {
                break;
            }
            line.skip_space();
        }
        line.punct('=')?;
        line.skip_space();
        let mnemonic_at = line.column();
        let mnemonic = line.ident()?;
        if mnemonic == "repeat" {
            return self.repeat_line(line, results);
        }
        let operands = self.values(line, Some(','))?;
        let kind = self.attrs(line, mnemonic, mnemonic_at)?;
        line.skip_space();
        line.punct(':')?;
        let types = line.types()?;
        let kind = with_result_types(kind, &types);
        let built = self
            .builder
            .op(kind, &operands)
            .map_err(|e| line.error_at(mnemonic_at, ParseErrorKind::Ir(e)))?;
        self.bind_results(line, &results, &built, &types)?;
        self.label(line, built.first().copied())
    }

    fn bind_results(
        &mut self,
        line: &Line<'_>,
        names: &[(u32, usize)],
        built: &[ValueId],
        types: &[TensorType],
    ) -> Result<(), ParseError> {
        if names.len() != built.len() || types.len() != built.len() {
            return Err(line.error(ParseErrorKind::Expected(
                "one name and one type per result of the op",
            )));
        }
        for ((&(name, column), &value), declared) in names.iter().zip(built).zip(types) {
            let inferred = self
                .builder
                .ty(value)
                .map_err(|e| line.error(ParseErrorKind::Ir(e)))?;
            if inferred != declared {
                return Err(line.error_at(
                    column,
                    ParseErrorKind::TypeMismatch {
                        declared: declared.clone(),
                        inferred: inferred.clone(),
                    },
                ));
            }
            self.define(line, name, value)?;
        }
        Ok(())
    }

    fn label(&mut self, line: &mut Line<'_>, value: Option<ValueId>) -> Result<(), ParseError> {
        line.skip_space();
        if !line.eat('#') {
            return line.end();
        }
        let label = line.rest().trim();
        if let (Some(value), false) = (value, label.is_empty()) {
            self.builder
                .label(value, label)
                .map_err(|e| line.error(ParseErrorKind::Ir(e)))?;
        }
        Ok(())
    }

    fn attrs(&self, line: &mut Line<'_>, mnemonic: &str, at: usize) -> Result<OpKind, ParseError> {
        line.skip_space();
        let attrs = if line.peek() == Some('{') {
            line.braced()?
        } else {
            Attrs::default()
        };
        let kind = match mnemonic {
            "input" | "parameter" | "constant" => return leaf(line, mnemonic),
            "matmul" => OpKind::MatMul(MatMul {
                transpose_a: attrs.flag("transpose_a"),
                transpose_b: attrs.flag("transpose_b"),
                out: DType::F32,
            }),
            "add" => OpKind::Add,
            "mul" => OpKind::Mul,
            "softmax" => OpKind::Softmax,
            "merge_heads" => OpKind::MergeHeads,
            "layer_norm" => OpKind::LayerNorm {
                eps: attrs.float(line, "eps")?,
                store: attrs.dtype(line, "store")?,
            },
            "gelu_tanh" => OpKind::GeluTanh {
                store: attrs.dtype(line, "store")?,
            },
            "attention" => OpKind::Attention {
                scale: attrs.float(line, "scale")?,
            },
            "split_heads" => OpKind::SplitHeads {
                heads: attrs.count(line, "heads")?,
            },
            "transpose" => OpKind::Transpose {
                perm: attrs.list(line, "perm")?,
            },
            "slice" => {
                let (start, end) = attrs.range(line)?;
                OpKind::Slice {
                    axis: attrs.count(line, "axis")?,
                    start,
                    end,
                }
            }
            "concat" => OpKind::Concat {
                axis: attrs.count(line, "axis")?,
            },
            "im2col_patches" => OpKind::Im2ColPatches {
                patch: attrs.count(line, "patch")?,
            },
            "reshape" => OpKind::Reshape {
                shape: Shape::default(),
            },
            "cast" => OpKind::Cast { to: DType::F32 },
            other => match Activation::ALL.iter().find(|a| a.name() == other) {
                Some(&function) => OpKind::Activation {
                    function,
                    store: attrs.dtype(line, "store")?,
                },
                None => return Err(line.error_at(at, ParseErrorKind::UnknownOp(other.to_string()))),
            },
        };
        Ok(kind)
    }
}

/// `input "name"`, `parameter "name"`, `constant [v, …]`: the type comes
/// from the result (filled in by [`with_result_types`]).
fn leaf(line: &mut Line<'_>, mnemonic: &str) -> Result<OpKind, ParseError> {
    let ty = TensorType::new(DType::F32, Shape::default());
    Ok(match mnemonic {
        "input" => OpKind::Input {
            name: line.quoted()?,
            ty,
        },
        "parameter" => OpKind::Parameter {
            name: line.quoted()?,
            ty,
        },
        _ => OpKind::Constant {
            values: line.floats()?,
            ty,
        },
    })
}

impl Parser {
    fn repeat_line(
        &mut self,
        line: &mut Line<'_>,
        results: Vec<(u32, usize)>,
    ) -> Result<(), ParseError> {
        line.skip_space();
        line.punct('x')?;
        let trip = line.number::<u32>("a trip count")?;
        let mut inits = RepeatOperands::default();
        line.skip_space();
        line.keyword("carried")?;
        line.punct('(')?;
        inits.carried = self.values(line, Some(','))?;
        line.punct(')')?;
        line.skip_space();
        line.keyword("invariants")?;
        line.punct('(')?;
        inits.invariants = self.values(line, Some(','))?;
        line.punct(')')?;
        line.skip_space();
        line.keyword("sequences")?;
        line.punct('(')?;
        line.skip_space();
        while line.eat('[') {
            inits.sequences.push(self.values(line, None)?);
            line.punct(']')?;
            line.skip_space();
            if line.eat(',') {
                line.skip_space();
            }
        }
        line.punct(')')?;
        line.skip_space();
        line.punct('{')?;
        line.end()?;
        let handle = self
            .builder
            .begin_repeat(trip)
            .map_err(|e| line.error(ParseErrorKind::Ir(e)))?;
        self.open.push(OpenRepeat {
            handle,
            results,
            inits,
            header_seen: false,
            yields: None,
        });
        Ok(())
    }

    /// `^rN carried(%a: T, …) invariant(…) iterated(…):` binds the body's
    /// arguments to the outer values the Repeat line named, group by group.
    fn body_header(&mut self, line: &mut Line<'_>) -> Result<(), ParseError> {
        line.punct('^')?;
        line.punct('r')?;
        line.number::<u32>("a region number")?;
        let Some(open) = self.open.pop() else {
            return Err(line.error(ParseErrorKind::Expected("a Repeat body")));
        };
        let mut bound = Vec::new();
        for (group, count) in [
            ("carried", open.inits.carried.len()),
            ("invariant", open.inits.invariants.len()),
            ("iterated", open.inits.sequences.len()),
        ] {
            line.skip_space();
            line.keyword(group)?;
            line.punct('(')?;
            let args = line.typed_args()?;
            if args.len() != count {
                return Err(line.error(ParseErrorKind::Expected(
                    "as many body arguments as the Repeat line names in that group",
                )));
            }
            line.punct(')')?;
            bound.extend(args);
        }
        line.punct(':')?;
        line.end()?;
        let (handle, inits) = (&open.handle, &open.inits);
        let mut args = Vec::with_capacity(bound.len());
        for &init in &inits.carried {
            args.push(self.builder.carried(handle, init));
        }
        for &value in &inits.invariants {
            args.push(self.builder.invariant(handle, value));
        }
        for seq in &inits.sequences {
            args.push(self.builder.iterated(handle, seq));
        }
        for ((name, declared), arg) in bound.into_iter().zip(args) {
            let arg = arg.map_err(|e| line.error(ParseErrorKind::Ir(e)))?;
            self.bind_results(line, &[(name, 1)], &[arg], &[declared])?;
        }
        self.open.push(OpenRepeat {
            header_seen: true,
            ..open
        });
        Ok(())
    }

    fn yield_line(&mut self, line: &mut Line<'_>) -> Result<(), ParseError> {
        line.keyword("yield")?;
        let yields = self.values(line, Some(','))?;
        line.end()?;
        match self.open.last_mut() {
            Some(open) if open.yields.is_none() => {
                open.yields = Some(yields);
                Ok(())
            }
            _ => Err(line.error(ParseErrorKind::Expected(
                "`yield` once, at the end of a Repeat body",
            ))),
        }
    }

    fn close(&mut self, line: &mut Line<'_>) -> Result<(), ParseError> {
        line.punct('}')?;
        let Some(open) = self.open.pop() else {
            self.finished = true;
            return line.end();
        };
        let Some(yields) = open.yields else {
            return Err(line.error(ParseErrorKind::Expected("`yield` before the Repeat's `}`")));
        };
        line.skip_space();
        line.punct(':')?;
        let types = line.types()?;
        let built = self
            .builder
            .end_repeat(&open.handle, &yields)
            .map_err(|e| line.error(ParseErrorKind::Ir(e)))?;
        self.bind_results(line, &open.results, &built, &types)?;
        self.label(line, built.first().copied())
    }

    fn output(&mut self, line: &mut Line<'_>) -> Result<(), ParseError> {
        line.keyword("output")?;
        line.skip_space();
        let name = line.quoted()?;
        line.skip_space();
        line.punct('=')?;
        line.skip_space();
        let value = line.value_name()?;
        let value = self.value(line, value)?;
        self.builder
            .output(&name, value)
            .map_err(|e| line.error(ParseErrorKind::Ir(e)))?;
        line.end()
    }
}

/// Fills in the attributes the dump leaves to the result type.
fn with_result_types(kind: OpKind, types: &[TensorType]) -> OpKind {
    let Some(ty) = types.first().cloned() else {
        return kind;
    };
    match kind {
        OpKind::Input { name, .. } => OpKind::Input { name, ty },
        OpKind::Parameter { name, .. } => OpKind::Parameter { name, ty },
        OpKind::Constant { values, .. } => OpKind::Constant { ty, values },
        OpKind::MatMul(mm) => OpKind::MatMul(MatMul {
            out: ty.dtype,
            ..mm
        }),
        OpKind::Reshape { .. } => OpKind::Reshape { shape: ty.shape },
        OpKind::Cast { .. } => OpKind::Cast { to: ty.dtype },
        other => other,
    }
}

/// The `{…}` attributes of one op: bare flags, `key=value` pairs and a
/// slice's `a..b` range, as text until asked for by type.
#[derive(Default)]
struct Attrs {
    entries: Vec<(String, Option<String>)>,
}

impl Attrs {
    fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    fn flag(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, v)| k == key && v.is_none())
    }

    fn required<'a>(&'a self, line: &Line<'_>, key: &'static str) -> Result<&'a str, ParseError> {
        self.get(key)
            .ok_or_else(|| line.error(ParseErrorKind::Expected(key)))
    }

    fn float(&self, line: &Line<'_>, key: &'static str) -> Result<f32, ParseError> {
        self.required(line, key)?
            .parse()
            .map_err(|_| line.error(ParseErrorKind::Expected("a number")))
    }

    fn count(&self, line: &Line<'_>, key: &'static str) -> Result<usize, ParseError> {
        self.required(line, key)?
            .parse()
            .map_err(|_| line.error(ParseErrorKind::Expected("a count")))
    }

    fn dtype(&self, line: &Line<'_>, key: &'static str) -> Result<Option<DType>, ParseError> {
        let Some(text) = self.get(key) else {
            return Ok(None);
        };
        let mut inner = Line::new(text, line.line_no);
        let dtype = inner.dtype()?;
        inner.end()?;
        Ok(Some(dtype))
    }

    fn list(&self, line: &Line<'_>, key: &'static str) -> Result<Vec<usize>, ParseError> {
        let text = self.required(line, key)?;
        let inner = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .ok_or_else(|| line.error(ParseErrorKind::Expected("a `[…]` list")))?;
        inner
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                t.parse()
                    .map_err(|_| line.error(ParseErrorKind::Expected("a count")))
            })
            .collect()
    }

    fn range(&self, line: &Line<'_>) -> Result<(usize, usize), ParseError> {
        let (start, end) = self
            .entries
            .iter()
            .find_map(|(k, v)| v.is_none().then(|| k.split_once("..")).flatten())
            .ok_or_else(|| line.error(ParseErrorKind::Expected("a `start..end` range")))?;
        let parse = |t: &str| {
            t.trim()
                .parse()
                .map_err(|_| line.error(ParseErrorKind::Expected("a count")))
        };
        Ok((parse(start)?, parse(end)?))
    }
}

/// A cursor over one line.
struct Line<'a> {
    text: &'a str,
    pos: usize,
    line_no: usize,
}

impl<'a> Line<'a> {
    fn new(text: &'a str, number: usize) -> Self {
        Line {
            text,
            pos: 0,
            line_no: number,
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn column(&self) -> usize {
        self.text[..self.pos].chars().count() + 1
    }

    fn error(&self, kind: ParseErrorKind) -> ParseError {
        self.error_at(self.column(), kind)
    }

    fn error_at(&self, column: usize, kind: ParseErrorKind) -> ParseError {
        ParseError {
            line: self.line_no,
            column,
            kind,
        }
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn punct(&mut self, c: char) -> Result<(), ParseError> {
        self.skip_space();
        if self.eat(c) {
            return Ok(());
        }
        Err(self.error(ParseErrorKind::Expected(match c {
            '{' => "`{`",
            '}' => "`}`",
            '(' => "`(`",
            ')' => "`)`",
            '[' => "`[`",
            ']' => "`]`",
            '=' => "`=`",
            ':' => "`:`",
            '^' => "`^` (a region)",
            'x' => "`x` and a trip count",
            _ => "punctuation",
        })))
    }

    fn keyword(&mut self, word: &'static str) -> Result<(), ParseError> {
        self.skip_space();
        if self.rest().starts_with(word) {
            self.pos += word.len();
            return Ok(());
        }
        Err(self.error(ParseErrorKind::Expected(word)))
    }

    fn end(&mut self) -> Result<(), ParseError> {
        self.skip_space();
        if self.at_end() {
            Ok(())
        } else {
            Err(self.error(ParseErrorKind::Expected("the end of the line")))
        }
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&keep) {
            self.bump();
        }
        &self.text[start..self.pos]
    }

    fn ident(&mut self) -> Result<&'a str, ParseError> {
        let word = self.take_while(|c| c.is_ascii_alphanumeric() || c == '_');
        if word.is_empty() {
            return Err(self.error(ParseErrorKind::Expected("an op name")));
        }
        Ok(word)
    }

    fn number<T: core::str::FromStr>(&mut self, what: &'static str) -> Result<T, ParseError> {
        let at = self.column();
        let digits = self.take_while(|c| c.is_ascii_digit() || c == '-');
        digits
            .parse()
            .map_err(|_| self.error_at(at, ParseErrorKind::Expected(what)))
    }

    fn value_name(&mut self) -> Result<u32, ParseError> {
        self.punct_value()?;
        self.number("a value number after `%`")
    }

    fn punct_value(&mut self) -> Result<(), ParseError> {
        if self.eat('%') {
            Ok(())
        } else {
            Err(self.error(ParseErrorKind::Expected("a value (`%N`)")))
        }
    }

    fn quoted(&mut self) -> Result<String, ParseError> {
        self.skip_space();
        if !self.eat('"') {
            return Err(self.error(ParseErrorKind::Expected("a quoted name")));
        }
        let name = self.take_while(|c| c != '"');
        if !self.eat('"') {
            return Err(self.error(ParseErrorKind::Expected("the closing `\"`")));
        }
        Ok(name.to_string())
    }

    fn floats(&mut self) -> Result<Vec<f32>, ParseError> {
        self.skip_space();
        self.punct('[')?;
        let body = self.take_while(|c| c != ']');
        self.punct(']')?;
        body.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                t.parse()
                    .map_err(|_| self.error(ParseErrorKind::Expected("a number")))
            })
            .collect()
    }

    /// `{flag, key=value, a..b}`: commas inside `[…]` or `<…>` do not split.
    fn braced(&mut self) -> Result<Attrs, ParseError> {
        self.punct('{')?;
        let mut attrs = Attrs::default();
        let mut depth = 0usize;
        let mut current = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error(ParseErrorKind::Expected("`}`")));
            };
            self.bump();
            match c {
                '[' | '<' => depth += 1,
                ']' | '>' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth == 0 && (c == ',' || c == '}') {
                let entry = current.trim();
                if !entry.is_empty() {
                    attrs.entries.push(match entry.split_once('=') {
                        Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
                        None => (entry.to_string(), None),
                    });
                }
                current.clear();
                if c == '}' {
                    return Ok(attrs);
                }
            } else {
                current.push(c);
            }
        }
    }

    /// `f32`, `f16`, `f143<-4>`, `f152<s>`.
    fn dtype(&mut self) -> Result<DType, ParseError> {
        let at = self.column();
        let name = self.take_while(|c| c.is_ascii_alphanumeric());
        let fp8 = match name {
            "f32" => return Ok(DType::F32),
            "f16" => return Ok(DType::F16),
            "f143" => DType::f143,
            "f152" => DType::f152,
            _ => {
                return Err(self.error_at(
                    at,
                    ParseErrorKind::Expected("a dtype (f32, f16, f143<s>, f152<s>)"),
                ))
            }
        };
        if !self.eat('<') {
            return Err(self.error(ParseErrorKind::Expected("`<` and an FP8 scale")));
        }
        let scale = self.number::<i8>("an FP8 scale")?;
        if !self.eat('>') {
            return Err(self.error(ParseErrorKind::Expected("`>`")));
        }
        Ok(fp8(scale))
    }

    fn tensor_type(&mut self) -> Result<TensorType, ParseError> {
        let dtype = self.dtype()?;
        self.punct('[')?;
        let mut dims = Vec::new();
        while self.peek() != Some(']') {
            dims.push(self.number::<usize>("a dimension")?);
            if !self.eat(',') {
                break;
            }
        }
        self.punct(']')?;
        Ok(TensorType::new(dtype, dims))
    }

    /// `: T, T` after an op.
    fn types(&mut self) -> Result<Vec<TensorType>, ParseError> {
        let mut out = Vec::new();
        loop {
            self.skip_space();
            out.push(self.tensor_type()?);
            self.skip_space();
            if !self.eat(',') {
                return Ok(out);
            }
        }
    }

    /// `%a: T, %b: T` inside a body header group.
    fn typed_args(&mut self) -> Result<Vec<(u32, TensorType)>, ParseError> {
        let mut out = Vec::new();
        self.skip_space();
        while self.peek() == Some('%') {
            let name = self.value_name()?;
            self.skip_space();
            self.punct(':')?;
            self.skip_space();
            out.push((name, self.tensor_type()?));
            self.skip_space();
            if !self.eat(',') {
                break;
            }
            self.skip_space();
        }
        Ok(out)
    }
}
