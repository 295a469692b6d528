//! The static runtime (`device-asm/static_runtime.S`), assembled by our own
//! assembler and linked in front of a tile's supervisor program.
//!
//! The source is embedded as text; nothing binary is committed. Layout
//! addresses the runtime needs come from [`crate::ipu21::sram::layout`] as
//! link-time symbols (and the bulk-patch threshold from
//! [`crate::ipu21::timing`]), so the `.S` file and the Rust constants cannot
//! drift.
//!
//! ```
//! use ipuc_target::runtime::{link_with_runtime, symbols};
//! use ipuc_target::ipu21::asm::assemble;
//! let program = assemble("main.S", "
//!         .globl ipuc_program
//! ipuc_program:
//!         setzi $m0, ipuc_static_complete
//!         br $m0").unwrap();
//! let image = link_with_runtime(&[program]).unwrap();
//! assert_eq!(image.base, 0x4C010);
//! assert_eq!(image.symbol(symbols::START), Some(0x4C010));
//! ```

use alloc::format;
use alloc::string::String;

use crate::ipu21::asm::{assemble, link, link_refs, AsmError, Image, LinkOptions, Object};
use crate::ipu21::sram::{layout, APPLICATION_LOAD_BASE};
use crate::ipu21::timing::PATCH_BULK_THRESHOLD_WORDS;

/// The runtime's assembly source.
pub const SOURCE: &str = include_str!("../../device-asm/static_runtime.S");

/// File name used in assembler error locations.
pub const SOURCE_NAME: &str = "device-asm/static_runtime.S";

/// Entry-point symbols (ABI documented at the top of the `.S` file).
pub mod symbols {
    /// Tile entry after loading: start-up, then `ipuc_program`.
    pub const START: &str = "ipuc_static_start";
    /// The supervisor program the start-up jumps to (defined by the caller).
    pub const PROGRAM: &str = "ipuc_program";
    /// Repeat word patcher: `$m2` word, `$m3` table, `$m4` remaining, `$m5` total; `br $m9`.
    pub const PATCH_WORD: &str = "ipuc_patch_word";
    /// Row-sharing patcher (dispatcher): `$m2` row, `$m3` offsets, `$m4` values, `$m5` count; `br $m9`.
    pub const PATCH_ROW: &str = "ipuc_patch_row";
    /// Row-sharing patcher, always the supervisor loop.
    pub const PATCH_ROW_SCALAR: &str = "ipuc_patch_row_scalar";
    /// Row-sharing patcher, always the six workers.
    pub const PATCH_ROW_WORKERS: &str = "ipuc_patch_row_workers";
    /// Worker 0 stores `$COUNT_L` at `$m2`; `br $m10`.
    pub const SAMPLE_CYCLE: &str = "ipuc_sample_cycle";
    /// All workers idle afterwards; `br $m7`.
    pub const WORKER_BARRIER: &str = "ipuc_worker_barrier";
    /// Completion word = 1, then halt.
    pub const COMPLETE: &str = "ipuc_static_complete";
}

/// The symbols the runtime links against: the layout addresses and the
/// row-patch dispatcher's bulk threshold (`ipuc_bulk_patch_min_words` =
/// [`PATCH_BULK_THRESHOLD_WORDS`], the one definition the planner's cost
/// and the sharing pass also read).
pub fn link_symbols() -> [(&'static str, u32); 4] {
    [
        ("ipuc_completion_word", layout::COMPLETION_WORD),
        ("ipuc_supervisor_stack_top", layout::SUPERVISOR_STACK_TOP),
        ("ipuc_worker_area", layout::WORKER_AREA),
        ("ipuc_bulk_patch_min_words", PATCH_BULK_THRESHOLD_WORDS),
    ]
}

/// Assembly text defining [`link_symbols`].
pub fn layout_source() -> String {
    let defs = link_symbols();
    let mut s = String::new();
    for (name, value) in defs {
        s.push_str(&format!(
            "        .globl {name}\n        .set {name}, {value:#x}\n"
        ));
    }
    s
}

/// A static runtime's assembly text: the built-in one, or a replacement
/// (`--runtime-source F.S`, the seeds' flag) that must define the same
/// entry symbols ([`symbols`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeSource {
    /// Name used in assembler error locations (the file path).
    pub name: String,
    /// The assembly text.
    pub text: String,
}

impl RuntimeSource {
    /// `device-asm/static_runtime.S` as embedded in this build.
    pub fn builtin() -> Self {
        RuntimeSource {
            name: SOURCE_NAME.into(),
            text: SOURCE.into(),
        }
    }

    /// Whether this is the built-in text.
    pub fn is_builtin(&self) -> bool {
        self.text == SOURCE
    }
}

impl Default for RuntimeSource {
    fn default() -> Self {
        Self::builtin()
    }
}

/// Assemble the runtime source and the layout symbols into two objects.
pub fn runtime_objects() -> Result<[Object; 2], AsmError> {
    runtime_objects_from(&RuntimeSource::builtin())
}

/// [`runtime_objects`] for any runtime text.
pub fn runtime_objects_from(runtime: &RuntimeSource) -> Result<[Object; 2], AsmError> {
    Ok([
        assemble(&runtime.name, &runtime.text)?,
        assemble("<runtime layout>", &layout_source())?,
    ])
}

/// Link the runtime at the application entry (`0x4C010`, so
/// [`symbols::START`] is the tile entry point) followed by `program`
/// objects, one of which must define the global [`symbols::PROGRAM`].
pub fn link_with_runtime(program: &[Object]) -> Result<Image, AsmError> {
    link_with_runtime_source(&RuntimeSource::builtin(), program)
}

/// [`link_with_runtime`] with the given runtime text.
pub fn link_with_runtime_source(
    runtime: &RuntimeSource,
    program: &[Object],
) -> Result<Image, AsmError> {
    let [rt, lay] = runtime_objects_from(runtime)?;
    let mut objects = alloc::vec::Vec::with_capacity(program.len() + 2);
    objects.push(rt);
    objects.push(lay);
    objects.extend(program.iter().cloned());
    link(&objects, &LinkOptions::at(APPLICATION_LOAD_BASE))
}

/// [`link_with_runtime_source`] with the runtime already assembled
/// ([`runtime_objects_from`], once per compile) and without a listing: the
/// same image words and symbols, [`Image::listing`] empty.
pub fn link_with_runtime_objects(
    runtime: &[Object; 2],
    program: &[&Object],
) -> Result<Image, AsmError> {
    let mut objects: alloc::vec::Vec<&Object> = alloc::vec::Vec::with_capacity(program.len() + 2);
    objects.extend(runtime.iter());
    objects.extend(program.iter().copied());
    link_refs(
        &objects,
        &LinkOptions::at(APPLICATION_LOAD_BASE).without_listing(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipu21::isa::{decode, Imm16Op, Instruction};

    /// The dispatcher's first instruction compares the entry count with the
    /// one threshold constant (linked as a symbol, not written in the `.S`).
    #[test]
    fn patch_dispatcher_compares_with_the_linked_threshold() {
        let program = assemble(
            "main.S",
            "        .globl ipuc_program\nipuc_program:\n        setzi $m0, ipuc_static_complete\n        br $m0",
        )
        .unwrap();
        let image = link_with_runtime(&[program]).unwrap();
        let at = image.symbol(symbols::PATCH_ROW).unwrap();
        let index = ((at - image.base) / 4) as usize;
        let (instruction, _) = decode(&image.words[index..]).unwrap();
        let Instruction::AluImm16 { op, imm, .. } = instruction else {
            panic!("dispatcher starts with {instruction:?}");
        };
        assert_eq!(op, Imm16Op::Cmpult);
        assert_eq!(u32::try_from(imm), Ok(PATCH_BULK_THRESHOLD_WORDS));
    }
}
