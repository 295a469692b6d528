//! Relocatable objects: sections of words, symbols, relocations.

use alloc::string::String;
use alloc::vec::Vec;

use super::syntax::Expr;
pub use super::syntax::Loc;
use ipuc_target::ipu21::isa::{AReg, Csr, MReg};

/// Code runs as the supervisor or as a worker (`.supervisor` / `.worker`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CodeContext {
    #[default]
    Supervisor,
    Worker,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectionKind {
    /// Executable: alignment padding is `nop`.
    Code,
    /// Data: alignment padding is zero.
    Data,
}

/// What one run of words in a section came from (for listings and errors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceItem {
    /// Byte offset in the section.
    pub offset: u32,
    pub words: u32,
    pub loc: Loc,
    pub what: ItemKind,
    /// `.supervisor` / `.worker` in force (selects CSR names in listings).
    pub context: CodeContext,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Instruction,
    Data,
    Padding,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub kind: SectionKind,
    /// Alignment in bytes (power of two, at least 4).
    pub align: u32,
    pub words: Vec<u32>,
    pub items: Vec<SourceItem>,
}

impl Section {
    /// Current size in bytes.
    pub fn size(&self) -> u32 {
        (self.words.len() as u32).wrapping_mul(4)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymbolValue {
    /// A label: byte offset within a section.
    Label { section: usize, offset: u32 },
    /// `.set name, expr` (evaluated at link time).
    Set(Expr),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolType {
    Function,
    Object,
    NoType,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    /// `None` for a name only mentioned by `.globl`/`.type`/`.size`.
    pub value: Option<SymbolValue>,
    pub global: bool,
    pub ty: SymbolType,
    pub size: Option<Expr>,
    pub context: CodeContext,
    pub loc: Loc,
}

/// A parsed instruction operand, before expressions are evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    MReg(MReg),
    /// `$mI+=` (post-increment, `st32step`).
    MRegPostInc(MReg),
    AReg(AReg),
    /// `$NAME` from the CSR table.
    Csr(Csr),
    Expr(Expr),
}

/// Operands one instruction may have: the most any mnemonic takes (six), the
/// capacity of an instruction's fixed-capacity operand list ([`Operands`]).
pub const MAX_OPERANDS: usize = 6;

/// One instruction's operands. The capacity is an ISA fact (no mnemonic
/// takes more), so the list never allocates; one more operand is
/// `AsmErrorKind::TooManyOperands`, holding the operand.
pub type Operands = heapless::Vec<LocOperand, MAX_OPERANDS>;

/// An operand with where it was written and how it reads (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocOperand {
    pub operand: Operand,
    pub loc: Loc,
    pub text: String,
}

/// A use of a symbol value the linker fills in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelocKind {
    /// An instruction with symbolic operands (branch/call targets, `setzi`
    /// absolute 20-bit values, immediates, exchange addresses …): the linker
    /// evaluates the operands and re-encodes the whole instruction, so every
    /// field keeps the encoder's range checks.
    Instruction {
        mnemonic: String,
        /// Boxed: the fixed-capacity list is six operands wide, the other
        /// variant one expression.
        operands: alloc::boxed::Box<Operands>,
    },
    /// `.long expr`: the whole 32-bit word.
    Word32(Expr),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relocation {
    pub section: usize,
    /// Byte offset of the (first) word in the section.
    pub offset: u32,
    pub loc: Loc,
    pub kind: RelocKind,
}

/// One assembled file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub file: String,
    pub sections: Vec<Section>,
    pub symbols: Vec<Symbol>,
    pub relocations: Vec<Relocation>,
}

impl Object {
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| s.name == name)
    }
}
