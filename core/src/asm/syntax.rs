//! The data every stage of the assembler and its errors share: source
//! positions ([`Loc`]) and expression trees ([`Expr`]). Parsing and
//! evaluating expressions (which can fail) is `expr`'s; keeping the types
//! here lets errors hold operands without an import loop.

use alloc::boxed::Box;
use alloc::string::String;

/// A source position (1-based line and column, in characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    pub line: u32,
    pub col: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    And,
    Or,
    Xor,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Num(i64),
    Sym {
        name: String,
        loc: Loc,
    },
    /// `.`: a location inside section `section` of the object being assembled.
    Here {
        section: usize,
        offset: u32,
    },
    /// Unary minus; `loc` is the `-`'s position.
    Neg(Box<Expr>, Loc),
    Not(Box<Expr>),
    /// A binary operation; `loc` is the operator's position.
    Bin(BinOp, Box<Expr>, Box<Expr>, Loc),
}
