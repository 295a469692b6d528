//! Source text → `Object`: labels, directives and instructions.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::build::{build, mnemonic_words, ROp, ROps, RVal};
use super::error::{AsmError, AsmErrorKind, Loc};
use super::expr::{Expr, ExprParser, SymbolEnv};
use super::lexer::{Lexer, Tok, Token};
use super::object::*;
use ipuc_target::ipu21::isa::{encode, AReg, Csr, IsaError, MReg, SyncZone, NOP_WORD};
use ipuc_target::ipu21::sram::TILE_MEMORY_SIZE;
use ipuc_target::lookup::LookupMap;

/// Largest `.p2align` exponent / `.align` byte count accepted (64 KiB).
const MAX_ALIGN_LOG2: i64 = 16;

type SResult<T> = Result<T, (Loc, AsmErrorKind)>;

/// Assembles one file into a relocatable object.
pub fn assemble(file: &str, src: &str) -> Result<Object, AsmError> {
    let mut lexer = Lexer::new(src);
    let mut asm = Assembler {
        obj: Object {
            file: file.into(),
            sections: Vec::new(),
            symbols: Vec::new(),
            relocations: Vec::new(),
        },
        index: LookupMap::default(),
        cur: 0,
        context: CodeContext::Supervisor,
    };
    asm.switch_section(".text", SectionKind::Code);
    // One statement's tokens at a time. A lexical error anywhere in the
    // text is reported before any statement's error (as when the whole text
    // is lexed first).
    let mut stmt = Vec::new();
    loop {
        match lexer.next_statement(&mut stmt) {
            Ok(true) => {}
            Ok(false) => break,
            Err((loc, kind)) => return Err(AsmError::new(file, loc, kind)),
        }
        if stmt.is_empty() {
            continue;
        }
        if let Err((loc, kind)) = asm.statement(&stmt) {
            loop {
                match lexer.next_token() {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err((loc, kind)) => return Err(AsmError::new(file, loc, kind)),
                }
            }
            return Err(AsmError::new(file, loc, kind));
        }
    }
    Ok(asm.obj)
}

struct Assembler {
    obj: Object,
    /// Symbol name → index in `obj.symbols` (lookup only: symbols keep
    /// their definition order in `obj.symbols`).
    index: LookupMap<String, usize>,
    cur: usize,
    context: CodeContext,
}

/// Splits operand tokens at top-level commas.
fn split_operands(toks: &[Token]) -> Vec<&[Token]> {
    if toks.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, t) in toks.iter().enumerate() {
        match t.tok {
            Tok::LParen => depth += 1,
            Tok::RParen => depth -= 1,
            Tok::Comma if depth == 0 => {
                out.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&toks[start..]);
    out
}

/// Resolves a `$name`: `$m0..$m15`, `$mzero`, `$a0..$a15`, or a CSR name.
fn dollar(name: &str) -> Result<Operand, AsmErrorKind> {
    if name == "$mzero" {
        return Ok(Operand::MReg(MReg::ZERO));
    }
    let number = |rest: &str| -> Option<u8> {
        if !rest.is_empty() && rest.len() <= 3 && rest.bytes().all(|b| b.is_ascii_digit()) {
            rest.parse().ok()
        } else {
            None
        }
    };
    if let Some(n) = name.strip_prefix("$m").and_then(number) {
        return MReg::new(n)
            .map(Operand::MReg)
            .map_err(AsmErrorKind::BadName);
    }
    if let Some(n) = name.strip_prefix("$a").and_then(number) {
        return AReg::new(n)
            .map(Operand::AReg)
            .map_err(AsmErrorKind::BadName);
    }
    match Csr::by_name(name) {
        Ok(c) => Ok(Operand::Csr(c)),
        Err(IsaError::UnknownCsrName) => Err(AsmErrorKind::UnknownDollarName(name.into())),
        Err(e) => Err(AsmErrorKind::BadName(e)),
    }
}

fn group_end(group: &[Token], fallback: Loc) -> Loc {
    group.last().map_or(fallback, |t| Loc {
        line: t.loc.line,
        col: t.loc.col + 1,
    })
}

fn group_text(group: &[Token]) -> String {
    group
        .first()
        .map_or_else(|| "end of line".into(), |t| t.tok.text())
}

/// Evaluation while assembling: constants only; labels wait for the linker.
struct ConstEnv<'a>(&'a Object, &'a LookupMap<String, usize>);

impl SymbolEnv for ConstEnv<'_> {
    fn symbol(&self, name: &str, loc: Loc, depth: usize) -> SResult<Option<i64>> {
        let sym = self.1.get(name).map(|&i| &self.0.symbols[i]);
        match sym.and_then(|s| s.value.as_ref()) {
            Some(SymbolValue::Set(e)) => e.eval_set(self, name, loc, depth),
            Some(SymbolValue::Label { .. }) => Ok(None),
            None => Ok(SyncZone::by_name(name).map(|z| z.index() as i64)),
        }
    }
    fn here(&self, _: usize, _: u32) -> Option<i64> {
        None
    }
}

impl Assembler {
    fn section(&mut self) -> &mut Section {
        &mut self.obj.sections[self.cur]
    }

    fn offset(&self) -> u32 {
        self.obj.sections[self.cur].size()
    }

    fn switch_section(&mut self, name: &str, kind: SectionKind) {
        if let Some(i) = self.obj.sections.iter().position(|s| s.name == name) {
            self.cur = i;
        } else {
            self.obj.sections.push(Section {
                name: name.into(),
                kind,
                align: 4,
                words: Vec::new(),
                items: Vec::new(),
            });
            self.cur = self.obj.sections.len() - 1;
        }
    }

    fn push_words(&mut self, words: &[u32], loc: Loc, what: ItemKind) -> SResult<()> {
        if words.is_empty() {
            return Ok(());
        }
        let context = self.context;
        let offset = self.offset();
        // Every section of an object lands in one tile's SRAM.
        let total: u64 = self
            .obj
            .sections
            .iter()
            .map(|s| s.words.len() as u64 * 4)
            .sum::<u64>()
            + words.len() as u64 * 4;
        if total > u64::from(TILE_MEMORY_SIZE) {
            return Err((
                loc,
                AsmErrorKind::ImageTooLarge {
                    bytes: total,
                    limit: TILE_MEMORY_SIZE,
                },
            ));
        }
        let sec = self.section();
        sec.words.extend_from_slice(words);
        sec.items.push(SourceItem {
            offset,
            words: words.len() as u32,
            loc,
            what,
            context,
        });
        Ok(())
    }

    fn symbol_mut(&mut self, name: &str, loc: Loc) -> &mut Symbol {
        let idx = match self.index.get(name) {
            Some(&i) => i,
            None => {
                self.index.insert(name.into(), self.obj.symbols.len());
                self.obj.symbols.push(Symbol {
                    name: name.into(),
                    value: None,
                    global: false,
                    ty: SymbolType::NoType,
                    size: None,
                    context: self.context,
                    loc,
                });
                self.obj.symbols.len() - 1
            }
        };
        &mut self.obj.symbols[idx]
    }

    fn define(&mut self, name: &str, value: SymbolValue, loc: Loc) -> SResult<()> {
        if SyncZone::by_name(name).is_some() {
            return Err((loc, AsmErrorKind::DuplicateSymbol(name.into())));
        }
        let context = self.context;
        let sym = self.symbol_mut(name, loc);
        if sym.value.is_some() {
            return Err((loc, AsmErrorKind::DuplicateSymbol(name.into())));
        }
        sym.value = Some(value);
        sym.loc = loc;
        sym.context = context;
        Ok(())
    }

    /// Defines a `.set` symbol. An expression already constant here (its
    /// symbols are earlier constants) is stored as its value, so a chain
    /// written in order (`.set s1, s0 + 1`, …) of any length is never
    /// followed at use; only chains through later or label symbols are
    /// (up to [`super::expr::MAX_SET_DEPTH`]). Symbols are never redefined,
    /// so the value is the one every later use would compute; an error
    /// (e.g. overflow) is left to the use, where it was reported before.
    fn define_set(&mut self, name: &str, e: Expr, loc: Loc) -> SResult<()> {
        let value = match e.eval(&ConstEnv(&self.obj, &self.index), 0) {
            Ok(Some(v)) => Expr::Num(v),
            _ => e,
        };
        self.define(name, SymbolValue::Set(value), loc)
    }

    fn expr(&self, group: &[Token], fallback: Loc) -> SResult<Expr> {
        if group.is_empty() {
            return Err((
                fallback,
                AsmErrorKind::Expected {
                    what: "expression",
                    found: "end of operand".into(),
                },
            ));
        }
        ExprParser::new(group, group_end(group, fallback), (self.cur, self.offset())).parse_all()
    }

    fn const_value(&self, group: &[Token], fallback: Loc) -> SResult<i64> {
        let e = self.expr(group, fallback)?;
        let loc = group.first().map_or(fallback, |t| t.loc);
        e.eval(&ConstEnv(&self.obj, &self.index), 0)?.ok_or((
            loc,
            AsmErrorKind::Expected {
                what: "constant expression",
                found: group_text(group),
            },
        ))
    }

    fn name_operand(group: &[Token], fallback: Loc) -> SResult<(String, Loc)> {
        match group {
            [Token {
                tok: Tok::Ident(n),
                loc,
            }] => Ok((n.clone(), *loc)),
            _ => Err((
                group.first().map_or(fallback, |t| t.loc),
                AsmErrorKind::Expected {
                    what: "symbol name",
                    found: group_text(group),
                },
            )),
        }
    }

    fn statement(&mut self, toks: &[Token]) -> SResult<()> {
        let mut i = 0;
        // Labels: `name:` (any number of them).
        while let (Some(Tok::Ident(name)), Some(Tok::Colon)) =
            (toks.get(i).map(|t| &t.tok), toks.get(i + 1).map(|t| &t.tok))
        {
            let value = SymbolValue::Label {
                section: self.cur,
                offset: self.offset(),
            };
            self.define(&name.clone(), value, toks[i].loc)?;
            i += 2;
        }
        let rest = &toks[i..];
        let Some(head) = rest.first() else {
            return Ok(());
        };
        let end = group_end(rest, head.loc);
        match &head.tok {
            Tok::Ident(name) if matches!(rest.get(1).map(|t| &t.tok), Some(Tok::Equals)) => {
                let e = self.expr(&rest[2..], end)?;
                self.define_set(name, e, head.loc)
            }
            Tok::Ident(name) if name.starts_with('.') => {
                self.directive(name, &rest[1..], head.loc, end)
            }
            Tok::Ident(name) => {
                self.instruction(&name.to_ascii_lowercase(), &rest[1..], head.loc, end)
            }
            other => Err((
                head.loc,
                AsmErrorKind::Expected {
                    what: "instruction, directive or label",
                    found: other.text(),
                },
            )),
        }
    }

    fn operand(&self, group: &[Token], fallback: Loc) -> SResult<LocOperand> {
        let Some(first) = group.first() else {
            return Err((
                fallback,
                AsmErrorKind::Expected {
                    what: "operand",
                    found: "','".into(),
                },
            ));
        };
        let mut text = first.tok.text();
        let operand = match (&first.tok, group.get(1).map(|t| &t.tok)) {
            (Tok::Dollar(name), next) => {
                let op = dollar(name).map_err(|k| (first.loc, k))?;
                match (op, next, group.get(2)) {
                    (op, None, _) => op,
                    (Operand::MReg(r), Some(Tok::PlusEq), None) => {
                        text.push_str("+=");
                        Operand::MRegPostInc(r)
                    }
                    (_, Some(_), _) => {
                        let bad = if group.len() > 2 && next == Some(&Tok::PlusEq) {
                            &group[2]
                        } else {
                            &group[1]
                        };
                        return Err((
                            bad.loc,
                            AsmErrorKind::Expected {
                                what: "',' or end of line",
                                found: bad.tok.text(),
                            },
                        ));
                    }
                }
            }
            _ => Operand::Expr(self.expr(group, fallback)?),
        };
        Ok(LocOperand {
            operand,
            loc: first.loc,
            text,
        })
    }

    fn instruction(&mut self, mnemonic: &str, toks: &[Token], loc: Loc, end: Loc) -> SResult<()> {
        let Some(size) = mnemonic_words(mnemonic) else {
            return Err((loc, AsmErrorKind::UnknownMnemonic(mnemonic.into())));
        };
        // Fixed capacity: no mnemonic takes more than `MAX_OPERANDS`; one
        // more is a typed error that hands the operand back.
        let mut operands = Operands::new();
        for group in split_operands(toks) {
            let op = self.operand(group, end)?;
            operands
                .push(op)
                .map_err(|extra| AsmErrorKind::too_many_operands(mnemonic, extra))?;
        }
        // Evaluate what is constant now; anything else becomes a relocation,
        // checked here with placeholder zeros so shape errors surface early.
        let env = ConstEnv(&self.obj, &self.index);
        let mut resolved = ROps::new();
        let mut pending = false;
        for op in &operands {
            let val = match &op.operand {
                Operand::MReg(r) => RVal::MReg(*r),
                Operand::MRegPostInc(r) => RVal::MRegPostInc(*r),
                Operand::AReg(r) => RVal::AReg(*r),
                Operand::Csr(c) => RVal::Csr(*c),
                Operand::Expr(e) => match e.eval(&env, 0)? {
                    Some(v) => RVal::Value(v),
                    None => {
                        pending = true;
                        RVal::Value(0)
                    }
                },
            };
            // As many as `operands`: cannot overflow, but stays typed.
            resolved
                .push(ROp {
                    val,
                    loc: op.loc,
                    text: &op.text,
                })
                .map_err(|_| AsmErrorKind::too_many_operands(mnemonic, op.clone()))?;
        }
        let instr = build(mnemonic, &resolved, loc)?;
        // Ends `resolved`'s borrow of `operands` (a relocation keeps them).
        drop(resolved);
        let encoded = encode(&instr).map_err(|error| {
            (
                loc,
                AsmErrorKind::Isa {
                    mnemonic: instr.mnemonic(),
                    error,
                },
            )
        })?;
        debug_assert_eq!(encoded.words().len() as u32, size);
        if pending {
            let offset = self.offset();
            self.obj.relocations.push(Relocation {
                section: self.cur,
                offset,
                loc,
                kind: RelocKind::Instruction {
                    mnemonic: mnemonic.into(),
                    operands: alloc::boxed::Box::new(operands),
                },
            });
        }
        self.push_words(encoded.words(), loc, ItemKind::Instruction)
    }

    fn align_to(&mut self, align: u32, fill: Option<u32>, loc: Loc) -> SResult<()> {
        let align = align.max(4);
        let sec = self.section();
        sec.align = sec.align.max(align);
        let pad = (align - sec.size() % align) % align / 4;
        if pad == 0 {
            return Ok(());
        }
        let word = fill.unwrap_or(if sec.kind == SectionKind::Code {
            NOP_WORD
        } else {
            0
        });
        let words: Vec<u32> = core::iter::repeat_n(word, pad as usize).collect();
        self.push_words(&words, loc, ItemKind::Padding)
    }

    fn directive(&mut self, name: &str, toks: &[Token], loc: Loc, end: Loc) -> SResult<()> {
        let args = split_operands(toks);
        let count = |expected: &'static str, ok: bool| -> SResult<()> {
            if ok {
                Ok(())
            } else {
                Err((
                    loc,
                    AsmErrorKind::OperandCount {
                        name: name.into(),
                        expected,
                        found: args.len(),
                    },
                ))
            }
        };
        match name {
            ".text" | ".data" => {
                count("0", args.is_empty())?;
                let kind = if name == ".text" {
                    SectionKind::Code
                } else {
                    SectionKind::Data
                };
                self.switch_section(name, kind);
            }
            ".section" => {
                count("1 to 3", (1..=3).contains(&args.len()))?;
                self.section_directive(&args, loc)?;
            }
            ".globl" | ".global" => {
                count("1 or more", !args.is_empty())?;
                for g in &args {
                    let (n, l) = Self::name_operand(g, end)?;
                    self.symbol_mut(&n, l).global = true;
                }
            }
            ".type" => {
                count("2", args.len() == 2)?;
                self.type_directive(&args, end)?;
            }
            ".size" => {
                count("2", args.len() == 2)?;
                let (n, l) = Self::name_operand(args[0], end)?;
                let e = self.expr(args[1], end)?;
                self.symbol_mut(&n, l).size = Some(e);
            }
            ".set" | ".equ" => {
                count("2", args.len() == 2)?;
                let (n, l) = Self::name_operand(args[0], end)?;
                let e = self.expr(args[1], end)?;
                self.define_set(&n, e, l)?;
            }
            ".p2align" | ".align" | ".balign" => {
                count("1 or 2", (1..=2).contains(&args.len()))?;
                self.align_directive(name, &args, loc, end)?;
            }
            ".long" | ".int" => {
                count("1 or more", !args.is_empty())?;
                self.long_directive(&args, loc, end)?;
            }
            ".space" | ".zero" | ".skip" => {
                count("1 or 2", (1..=2).contains(&args.len()))?;
                self.space_directive(&args, loc, end)?;
            }
            ".supervisor" | ".worker" => {
                count("0", args.is_empty())?;
                self.context = if name == ".worker" {
                    CodeContext::Worker
                } else {
                    CodeContext::Supervisor
                };
            }
            _ => return Err((loc, AsmErrorKind::UnknownDirective(name.into()))),
        }
        Ok(())
    }

    /// `.section NAME[, "FLAGS"[, @TYPE]]`: code when the name is `.text*` or the flags hold `x`.
    fn section_directive(&mut self, args: &[&[Token]], loc: Loc) -> SResult<()> {
        let sec_name = match args[0] {
            [Token {
                tok: Tok::Ident(n), ..
            }]
            | [Token {
                tok: Tok::Str(n), ..
            }] => n.clone(),
            g => {
                return Err((
                    g.first().map_or(loc, |t| t.loc),
                    AsmErrorKind::Expected {
                        what: "section name",
                        found: group_text(g),
                    },
                ))
            }
        };
        let flags = match args.get(1) {
            Some(
                [Token {
                    tok: Tok::Str(f), ..
                }],
            ) => f.clone(),
            Some(g) => {
                return Err((
                    g.first().map_or(loc, |t| t.loc),
                    AsmErrorKind::Expected {
                        what: "section flags string",
                        found: group_text(g),
                    },
                ))
            }
            None => String::new(),
        };
        let code = sec_name.starts_with(".text") || flags.contains('x');
        self.switch_section(
            &sec_name,
            if code {
                SectionKind::Code
            } else {
                SectionKind::Data
            },
        );
        Ok(())
    }

    /// `.type NAME, @function|@object|@notype`.
    fn type_directive(&mut self, args: &[&[Token]], end: Loc) -> SResult<()> {
        let (n, l) = Self::name_operand(args[0], end)?;
        let ty = match args[1] {
            [Token {
                tok: Tok::At | Tok::Percent,
                ..
            }, Token {
                tok: Tok::Ident(t), ..
            }] => match t.as_str() {
                "function" => SymbolType::Function,
                "object" => SymbolType::Object,
                "notype" => SymbolType::NoType,
                _ => {
                    return Err((
                        args[1][1].loc,
                        AsmErrorKind::Expected {
                            what: "@function, @object or @notype",
                            found: t.clone(),
                        },
                    ))
                }
            },
            g => {
                return Err((
                    g.first().map_or(end, |t| t.loc),
                    AsmErrorKind::Expected {
                        what: "@function, @object or @notype",
                        found: group_text(g),
                    },
                ))
            }
        };
        self.symbol_mut(&n, l).ty = ty;
        Ok(())
    }

    /// `.p2align LOG2` or `.align`/`.balign BYTES`, with an optional fill byte.
    fn align_directive(
        &mut self,
        name: &str,
        args: &[&[Token]],
        loc: Loc,
        end: Loc,
    ) -> SResult<()> {
        let v = self.const_value(args[0], end)?;
        let log2 = if name == ".p2align" {
            if !(0..=MAX_ALIGN_LOG2).contains(&v) {
                return Err((
                    loc,
                    AsmErrorKind::ValueRange {
                        what: ".p2align exponent",
                        value: v,
                        min: 0,
                        max: MAX_ALIGN_LOG2,
                    },
                ));
            }
            v
        } else {
            // `.align`/`.balign` take a byte count (ELF convention).
            if v <= 0 || v > 1 << MAX_ALIGN_LOG2 || v & (v - 1) != 0 {
                return Err((
                    loc,
                    AsmErrorKind::Expected {
                        what: "power-of-two byte alignment up to 65536",
                        found: v.to_string(),
                    },
                ));
            }
            v.trailing_zeros() as i64
        };
        let fill = match args.get(1) {
            Some(g) => Some(self.fill_byte(g, end, loc)?),
            None => None,
        };
        self.align_to(1 << log2, fill, loc)?;
        Ok(())
    }

    /// `.long EXPR, ...`: a word each, relocated when its value is not known yet.
    fn long_directive(&mut self, args: &[&[Token]], loc: Loc, end: Loc) -> SResult<()> {
        for g in args {
            let e = self.expr(g, end)?;
            let gl = g.first().map_or(loc, |t| t.loc);
            let word = match e.eval(&ConstEnv(&self.obj, &self.index), 0)? {
                Some(v) => self.word_value(v, gl)?,
                None => {
                    let offset = self.offset();
                    self.obj.relocations.push(Relocation {
                        section: self.cur,
                        offset,
                        loc: gl,
                        kind: RelocKind::Word32(e),
                    });
                    0
                }
            };
            self.push_words(&[word], gl, ItemKind::Data)?;
        }
        Ok(())
    }

    /// `.space BYTES[, FILL]`: whole words of a fill byte.
    fn space_directive(&mut self, args: &[&[Token]], loc: Loc, end: Loc) -> SResult<()> {
        let bytes = self.const_value(args[0], end)?;
        if !(0..=i64::from(TILE_MEMORY_SIZE)).contains(&bytes) || bytes % 4 != 0 {
            return Err((
                loc,
                AsmErrorKind::Expected {
                    what: "a byte count that is a multiple of 4 (at most a tile's 638976 bytes)",
                    found: bytes.to_string(),
                },
            ));
        }
        let fill = match args.get(1) {
            Some(g) => self.fill_byte(g, end, loc)?,
            None => 0,
        };
        let words: Vec<u32> = core::iter::repeat_n(fill, (bytes / 4) as usize).collect();
        self.push_words(&words, loc, ItemKind::Data)?;
        Ok(())
    }

    /// A fill byte operand, replicated into a word.
    fn fill_byte(&self, g: &[Token], end: Loc, loc: Loc) -> SResult<u32> {
        let b = self.const_value(g, end)?;
        let b = u8::try_from(b).map_err(|_| {
            (
                loc,
                AsmErrorKind::ValueRange {
                    what: "fill byte",
                    value: b,
                    min: 0,
                    max: 255,
                },
            )
        })?;
        Ok(u32::from_ne_bytes([b; 4]))
    }

    /// A `.long`-style value: must fit 32 bits, signed or unsigned.
    fn word_value(&self, v: i64, loc: Loc) -> SResult<u32> {
        if (i32::MIN as i64..=u32::MAX as i64).contains(&v) {
            Ok(v as u32)
        } else {
            Err((
                loc,
                AsmErrorKind::ValueRange {
                    what: "32-bit word",
                    value: v,
                    min: i32::MIN as i64,
                    max: u32::MAX as i64,
                },
            ))
        }
    }
}
