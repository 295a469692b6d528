//! Assembler and linker for the IPU21 instruction subset of [`ipuc_target::ipu21::isa`],
//! enough for the static runtime: labels (local `.L…` too), `.text`,
//! `.data`, `.section`, `.globl`, `.type`, `.size`, `.p2align`/`.align`,
//! `.set`/`=`, `.long`, `.space`, `.supervisor`/`.worker`, integer
//! expressions with symbols and `.`, `$m`/`$a` registers, CSR and sync-zone
//! names, comments `#`, `//`, `/* */`; statements end at a newline or `;`.
//!
//! `sendpicp` is written with its inline payload as operands:
//! `sendpicp n, addr, sctl, psel, xpic, pic` (two words, 8-byte aligned).
//!
//! ```
//! use ipuc_core::asm::{assemble, link, LinkOptions};
//! let obj = assemble("demo.S", "start: setzi $m0, done\n br $m0\ndone: sync SYNCZONE_LOCAL").unwrap();
//! let image = link(&[obj], &LinkOptions::default()).unwrap();
//! assert_eq!(image.words, [0x1904C018, 0x43000000, 0x41800002]);
//! ```

mod assemble;
mod build;
mod error;
mod expr;
mod lexer;
mod link;
mod object;
mod syntax;

pub use assemble::assemble;
pub use error::{AsmError, AsmErrorKind, Loc};
pub use expr::{BinOp, Expr, MAX_EXPR_NODES, MAX_SET_DEPTH};
pub use link::{
    link, link_refs, Image, LinkOptions, LinkedSymbol, ListingLine, APPLICATION_LOAD_BASE,
};
pub use object::{
    CodeContext, ItemKind, LocOperand, Object, Operand, Operands, RelocKind, Relocation, Section,
    SectionKind, SourceItem, Symbol, SymbolType, SymbolValue, MAX_OPERANDS,
};

use alloc::vec::Vec;

/// Assembles and links one source file at `base`.
pub fn assemble_and_link(file: &str, src: &str, base: u32) -> Result<Image, AsmError> {
    let obj = assemble(file, src)?;
    link(&[obj], &LinkOptions::at(base))
}

/// Assembles text (instructions separated by `;` or newlines) placed at `at`
/// and returns its words — what `ipuc isa asm` prints.
pub fn assemble_words(text: &str, at: u32) -> Result<Vec<u32>, AsmError> {
    Ok(assemble_and_link("<text>", text, at)?.words)
}
