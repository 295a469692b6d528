//! Integer expressions over symbols: `+ - * / % << >> & | ^ ~`, unary `-`,
//! parentheses, numbers, symbols and `.` (current location). Precedence is C's.
//! Arithmetic is 64-bit signed and checked: a result that does not fit 64
//! bits (and a `<<` that shifts set bits out) is an error at the operator's
//! `file:line:col`, never a wrapped value; fields check ranges when encoding.

use alloc::boxed::Box;

use super::error::{AsmErrorKind, Loc};
use super::lexer::{Tok, Token};
pub use super::syntax::{BinOp, Expr};

/// Largest number of nodes in one expression. Bounds recursion when
/// evaluating and dropping, so hostile input cannot exhaust the stack.
pub const MAX_EXPR_NODES: usize = 256;

/// Longest `.set` chain followed when evaluating (guards against cycles):
/// as deep as the expression nesting the parser accepts, so a long chain
/// written on purpose is followed (#28: 32 refused real chains).
pub const MAX_SET_DEPTH: usize = 256;

/// Where symbol values come from while evaluating.
pub(crate) trait SymbolEnv {
    /// `Ok(None)`: not known yet (deferred to link time).
    fn symbol(
        &self,
        name: &str,
        loc: Loc,
        depth: usize,
    ) -> Result<Option<i64>, (Loc, AsmErrorKind)>;
    /// Address of `offset` in `section`, if placed.
    fn here(&self, section: usize, offset: u32) -> Option<i64>;
}

impl Expr {
    /// The value of the `.set` symbol `name` (at `loc`) whose expression
    /// this is, reached `depth` `.set`s down a chain: evaluated one level
    /// deeper, and a chain longer than [`MAX_SET_DEPTH`] is an error naming
    /// the symbol. The assembler (constants) and the linker (labels too)
    /// both resolve `.set` symbols through this.
    pub(crate) fn eval_set(
        &self,
        env: &dyn SymbolEnv,
        name: &str,
        loc: Loc,
        depth: usize,
    ) -> Result<Option<i64>, (Loc, AsmErrorKind)> {
        if depth >= MAX_SET_DEPTH {
            return Err((
                loc,
                AsmErrorKind::SetChainTooDeep {
                    name: name.into(),
                    limit: MAX_SET_DEPTH,
                },
            ));
        }
        self.eval(env, depth + 1)
    }

    /// Evaluates; `Ok(None)` when some symbol is not known yet.
    pub(crate) fn eval(
        &self,
        env: &dyn SymbolEnv,
        depth: usize,
    ) -> Result<Option<i64>, (Loc, AsmErrorKind)> {
        Ok(match self {
            Expr::Num(n) => Some(*n),
            Expr::Sym { name, loc } => env.symbol(name, *loc, depth)?,
            Expr::Here { section, offset } => env.here(*section, *offset),
            Expr::Neg(e, loc) => match e.eval(env, depth)? {
                Some(v) => Some(v.checked_neg().ok_or((
                    *loc,
                    AsmErrorKind::Overflow {
                        op: "unary -",
                        lhs: 0,
                        rhs: v,
                    },
                ))?),
                None => None,
            },
            Expr::Not(e) => e.eval(env, depth)?.map(|v| !v),
            Expr::Bin(op, a, b, loc) => {
                let (Some(x), Some(y)) = (a.eval(env, depth)?, b.eval(env, depth)?) else {
                    return Ok(None);
                };
                Some(apply(*op, x, y).map_err(|k| (*loc, k))?)
            }
        })
    }

    /// True when the expression mentions no symbol and no `.`.
    pub fn is_constant(&self) -> bool {
        match self {
            Expr::Num(_) => true,
            Expr::Sym { .. } | Expr::Here { .. } => false,
            Expr::Neg(e, _) | Expr::Not(e) => e.is_constant(),
            Expr::Bin(_, a, b, _) => a.is_constant() && b.is_constant(),
        }
    }
}

fn apply(op: BinOp, x: i64, y: i64) -> Result<i64, AsmErrorKind> {
    let shift = |y: i64| {
        if (0..64).contains(&y) {
            Ok(y as u32)
        } else {
            Err(AsmErrorKind::ValueRange {
                what: "shift amount",
                value: y,
                min: 0,
                max: 63,
            })
        }
    };
    let overflow = |op: &'static str| AsmErrorKind::Overflow { op, lhs: x, rhs: y };
    Ok(match op {
        BinOp::Add => x.checked_add(y).ok_or_else(|| overflow("+"))?,
        BinOp::Sub => x.checked_sub(y).ok_or_else(|| overflow("-"))?,
        BinOp::Mul => x.checked_mul(y).ok_or_else(|| overflow("*"))?,
        BinOp::Div | BinOp::Rem if y == 0 => return Err(AsmErrorKind::DivisionByZero),
        BinOp::Div => x.checked_div(y).ok_or_else(|| overflow("/"))?,
        BinOp::Rem => x.checked_rem(y).ok_or_else(|| overflow("%"))?,
        // A bit pattern shift: an error only when set bits leave the 64.
        BinOp::Shl => {
            let s = shift(y)?;
            let v = (x as u64) << s;
            if v >> s != x as u64 {
                return Err(overflow("<<"));
            }
            v as i64
        }
        // Logical shift: values are addresses and bit patterns, not signed numbers.
        BinOp::Shr => ((x as u64) >> shift(y)?) as i64,
        BinOp::And => x & y,
        BinOp::Or => x | y,
        BinOp::Xor => x ^ y,
    })
}

/// Recursive-descent parser over one operand's tokens.
pub(crate) struct ExprParser<'a> {
    toks: &'a [Token],
    pos: usize,
    nodes: usize,
    end_loc: Loc,
    /// What `.` means here.
    here: (usize, u32),
}

type PResult<T> = Result<T, (Loc, AsmErrorKind)>;

impl<'a> ExprParser<'a> {
    pub fn new(toks: &'a [Token], end_loc: Loc, here: (usize, u32)) -> ExprParser<'a> {
        ExprParser {
            toks,
            pos: 0,
            nodes: 0,
            end_loc,
            here,
        }
    }

    /// Parses the whole token slice as one expression.
    pub fn parse_all(mut self) -> PResult<Expr> {
        let e = self.parse_bin(0)?;
        if let Some(t) = self.toks.get(self.pos) {
            return Err((
                t.loc,
                AsmErrorKind::Expected {
                    what: "operator or ','",
                    found: t.tok.text(),
                },
            ));
        }
        Ok(e)
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn loc(&self) -> Loc {
        self.toks.get(self.pos).map_or(self.end_loc, |t| t.loc)
    }

    fn bump_node(&mut self) -> PResult<()> {
        self.nodes += 1;
        if self.nodes > MAX_EXPR_NODES {
            Err((
                self.loc(),
                AsmErrorKind::TooDeep {
                    limit: MAX_EXPR_NODES,
                },
            ))
        } else {
            Ok(())
        }
    }

    fn binop(tok: &Tok) -> Option<(BinOp, u8)> {
        // C precedence, loosest first: | ^ & << >> + - * / %.
        Some(match tok {
            Tok::Pipe => (BinOp::Or, 0),
            Tok::Caret => (BinOp::Xor, 1),
            Tok::Amp => (BinOp::And, 2),
            Tok::Shl => (BinOp::Shl, 3),
            Tok::Shr => (BinOp::Shr, 3),
            Tok::Plus => (BinOp::Add, 4),
            Tok::Minus => (BinOp::Sub, 4),
            Tok::Star => (BinOp::Mul, 5),
            Tok::Slash => (BinOp::Div, 5),
            Tok::Percent => (BinOp::Rem, 5),
            _ => return None,
        })
    }

    fn parse_bin(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.parse_unary()?;
        while let Some((op, prec)) = self.peek().and_then(Self::binop) {
            if prec < min_prec {
                break;
            }
            let loc = self.loc();
            self.pos += 1;
            self.bump_node()?;
            let rhs = self.parse_bin(prec + 1)?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs), loc);
        }
        Ok(lhs)
    }

    fn parse_unary(&mut self) -> PResult<Expr> {
        self.bump_node()?;
        let loc = self.loc();
        let Some(tok) = self.peek().cloned() else {
            return Err((
                loc,
                AsmErrorKind::Expected {
                    what: "expression",
                    found: "end of operand".into(),
                },
            ));
        };
        self.pos += 1;
        Ok(match tok {
            Tok::Num(n) => Expr::Num(n),
            Tok::Ident(name) => Expr::Sym { name, loc },
            Tok::Dot => Expr::Here {
                section: self.here.0,
                offset: self.here.1,
            },
            Tok::Minus => Expr::Neg(Box::new(self.parse_unary()?), loc),
            Tok::Tilde => Expr::Not(Box::new(self.parse_unary()?)),
            Tok::Plus => self.parse_unary()?,
            Tok::LParen => {
                let e = self.parse_bin(0)?;
                match self.peek() {
                    Some(Tok::RParen) => self.pos += 1,
                    _ => {
                        let found = self.peek().map_or("end of operand".into(), Tok::text);
                        return Err((self.loc(), AsmErrorKind::Expected { what: "')'", found }));
                    }
                }
                e
            }
            other => {
                return Err((
                    loc,
                    AsmErrorKind::Expected {
                        what: "expression",
                        found: other.text(),
                    },
                ))
            }
        })
    }
}
