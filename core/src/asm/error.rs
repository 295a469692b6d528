//! Assembler and linker errors: every error carries `file:line:column` and
//! says what was expected.

use alloc::string::String;
use core::fmt;

use ipuc_target::ipu21::isa::IsaError;

pub use super::syntax::Loc;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AsmErrorKind {
    /// `expected <what>, found '<found>'`.
    Expected {
        what: &'static str,
        found: String,
    },
    UnexpectedChar(char),
    UnterminatedComment,
    UnterminatedString,
    /// An integer literal that does not fit 64 bits or has no digits.
    BadNumber(String),
    UnknownMnemonic(String),
    UnknownDirective(String),
    /// A `$name` that is neither a register nor a CSR in the table.
    UnknownDollarName(String),
    /// A register or CSR name the ISA rejects (e.g. `$m16`, an upper-space CSR).
    BadName(IsaError),
    UndefinedSymbol(String),
    DuplicateSymbol(String),
    /// Parentheses or `.set` chains nested deeper than the assembler allows.
    TooDeep {
        limit: usize,
    },
    /// A `.set` chain longer than the limit (a cycle, or a chain longer
    /// than [`super::MAX_SET_DEPTH`]).
    SetChainTooDeep {
        name: String,
        limit: usize,
    },
    DivisionByZero,
    /// The link base address is not word (4-byte) aligned.
    MisalignedBase {
        base: u32,
    },
    /// The object's sections together exceed one tile's SRAM.
    ImageTooLarge {
        bytes: u64,
        limit: u32,
    },
    /// 64-bit expression arithmetic overflowed (`op` is the operator).
    Overflow {
        op: &'static str,
        lhs: i64,
        rhs: i64,
    },
    /// More operands than any instruction takes (`limit` =
    /// [`super::MAX_OPERANDS`]); `extra` is the first operand that did not
    /// fit, handed back from the fixed-capacity operand list.
    TooManyOperands {
        mnemonic: String,
        limit: usize,
        extra: alloc::boxed::Box<super::object::LocOperand>,
    },
    /// Wrong operand count for a mnemonic or directive.
    OperandCount {
        name: String,
        expected: &'static str,
        found: usize,
    },
    /// A form the ISA facts give no encoding for (e.g. register-register `max`).
    NoEncoding {
        mnemonic: String,
        detail: &'static str,
    },
    /// The instruction encoder rejected an operand.
    Isa {
        mnemonic: &'static str,
        error: IsaError,
    },
    /// A value outside what a directive or operand accepts.
    ValueRange {
        what: &'static str,
        value: i64,
        min: i64,
        max: i64,
    },
    /// `sendpicp` placed at an address that is not 8-byte aligned.
    MisalignedSendpicp {
        address: u32,
    },
    /// A section does not fit the 32-bit address space.
    AddressOverflow,
    /// The linker met a second definition of a global; `first` is where
    /// the one it met before is (`file:line:col`), so both places show.
    DuplicateGlobal {
        name: String,
        first: String,
    },
    /// A replacement runtime lacks one of `entries`, the entry points tile
    /// programs call (`defined`: it defines the label but does not export
    /// it).
    RuntimeEntry {
        symbol: String,
        defined: bool,
        entries: &'static [&'static str],
    },
    /// A replacement runtime defines a symbol each tile program defines.
    RuntimeReserved {
        symbol: String,
    },
}

/// An error at `file:line:column`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    pub file: String,
    pub loc: Loc,
    pub kind: AsmErrorKind,
}

impl AsmErrorKind {
    /// `extra` did not fit `mnemonic`'s fixed-capacity operand list: the
    /// error at the operand, handing it back.
    pub(crate) fn too_many_operands(
        mnemonic: &str,
        extra: super::object::LocOperand,
    ) -> (Loc, Self) {
        (
            extra.loc,
            Self::TooManyOperands {
                mnemonic: mnemonic.into(),
                limit: super::object::MAX_OPERANDS,
                extra: alloc::boxed::Box::new(extra),
            },
        )
    }
}

impl AsmError {
    pub(crate) fn new(file: &str, loc: Loc, kind: AsmErrorKind) -> AsmError {
        AsmError {
            file: file.into(),
            loc,
            kind,
        }
    }
}

impl fmt::Display for AsmErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use AsmErrorKind as K;
        match self {
            K::Expected { what, found } => write!(f, "expected {what}, found '{found}'"),
            K::UnexpectedChar(c) => write!(f, "unexpected character '{c}'"),
            K::UnterminatedComment => f.write_str("unterminated /* comment"),
            K::UnterminatedString => f.write_str("unterminated string"),
            K::BadNumber(s) => write!(f, "bad integer literal '{s}' (must fit 64 bits)"),
            K::UnknownMnemonic(m) => write!(f, "unknown instruction '{m}'"),
            K::UnknownDirective(d) => write!(f, "unknown or unsupported directive '{d}'"),
            K::UnknownDollarName(n) => write!(f, "unknown register or CSR name '{n}'"),
            K::BadName(e) => write!(f, "{e}"),
            K::UndefinedSymbol(s) => write!(f, "undefined symbol '{s}'"),
            K::DuplicateSymbol(s) => write!(f, "symbol '{s}' is already defined"),
            K::TooDeep { limit } => write!(f, "expression nested deeper than {limit} levels"),
            K::SetChainTooDeep { name, limit } => {
                write!(
                    f,
                    "'.set' chain through '{name}' does not end within {limit} steps: the symbols refer to each other in a cycle, or the chain is longer than the assembler follows"
                )
            }
            K::DivisionByZero => f.write_str("division by zero in expression"),
            K::MisalignedBase { base } => write!(
                f,
                "link address {base:#x} is not 4-byte aligned (instructions and words sit at word addresses)"
            ),
            K::ImageTooLarge { bytes, limit } => write!(
                f,
                "the image grows to {bytes} bytes here, more than a tile's {limit} bytes of SRAM"
            ),
            K::Overflow { op, lhs, rhs } => {
                if *op == "unary -" {
                    write!(f, "arithmetic overflow in expression: -({rhs}) does not fit 64 bits")
                } else {
                    write!(
                        f,
                        "arithmetic overflow in expression: {lhs} {op} {rhs} does not fit 64 bits"
                    )
                }
            }
            K::TooManyOperands {
                mnemonic,
                limit,
                extra,
            } => write!(
                f,
                "'{mnemonic}': operand '{}' is one too many (no instruction takes more than {limit})",
                extra.text
            ),
            K::OperandCount {
                name,
                expected,
                found,
            } => {
                write!(f, "'{name}' takes {expected} operand(s), found {found}")
            }
            K::NoEncoding { mnemonic, detail } => write!(f, "'{mnemonic}': {detail}"),
            K::Isa { mnemonic, error } => write!(f, "'{mnemonic}': {error}"),
            K::ValueRange {
                what,
                value,
                min,
                max,
            } => {
                write!(f, "{what} value {value} out of range {min}..={max}")
            }
            K::MisalignedSendpicp { address } => {
                write!(
                    f,
                    "sendpicp at {address:#x} must be 8-byte aligned (add `.p2align 3` before it)"
                )
            }
            K::AddressOverflow => f.write_str("section placement exceeds the 32-bit address space"),
            K::DuplicateGlobal { name, first } => {
                write!(f, "symbol '{name}' is already defined at {first}")
            }
            K::RuntimeEntry {
                symbol,
                defined: true,
                ..
            } => write!(
                f,
                "'{symbol}' is defined but not exported: a runtime must `.globl` it (tile programs call it)"
            ),
            K::RuntimeEntry {
                symbol,
                defined: false,
                entries,
            } => write!(
                f,
                "the runtime does not define '{symbol}': a runtime must define and `.globl` every entry point tile programs call ({})",
                entries.join(", ")
            ),
            K::RuntimeReserved { symbol } => write!(
                f,
                "'{symbol}' is defined by every tile program; a runtime must not define it"
            ),
        }
    }
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.loc.line, self.loc.col, self.kind
        )
    }
}

impl core::error::Error for AsmError {}
