//! The static runtime (`device-asm/static_runtime.S`), assembled by our own
//! assembler and linked in front of a tile's supervisor program.
//!
//! The source is embedded as text; nothing binary is committed. Layout
//! addresses the runtime needs come from [`ipuc_target::ipu21::sram::layout`] as
//! link-time symbols (and the bulk-patch threshold from
//! [`ipuc_target::ipu21::timing`]), so the `.S` file and the Rust constants cannot
//! drift.
//!
//! ```
//! use ipuc_core::runtime::{link_with_runtime, symbols};
//! use ipuc_core::asm::assemble;
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

use crate::asm::{
    assemble, link, link_refs, AsmError, AsmErrorKind, Image, LinkOptions, Loc, Object,
};
use ipuc_target::ipu21::sram::{layout, APPLICATION_LOAD_BASE};

/// The runtime's assembly source.
pub const SOURCE: &str = ipuc_device_asm::STATIC_RUNTIME;

/// File name used in assembler error locations and recorded in a package
/// built with the built-in runtime (the description's `runtime_name`).
pub const SOURCE_NAME: &str = "device-asm/static_runtime.S";
/// Patch lists of at least this many words go to the six-worker bulk
/// patcher, shorter ones to the supervisor's loop (seed report, "lists of
/// at least 24 words"). Linked into the runtime as
/// `ipuc_bulk_patch_min_words`, so the dispatcher and the planner's charge
/// read one definition.
pub const PATCH_BULK_THRESHOLD_WORDS: u32 = 24;

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

    /// Every entry point a runtime defines and exports (all but
    /// [`PROGRAM`], which each tile program defines): what a replacement
    /// runtime is checked for before anything links against it.
    pub const RUNTIME_ENTRIES: [&str; 8] = [
        START,
        PATCH_WORD,
        PATCH_ROW,
        PATCH_ROW_SCALAR,
        PATCH_ROW_WORKERS,
        SAMPLE_CYCLE,
        WORKER_BARRIER,
        COMPLETE,
    ];
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
    /// `target-ipu21/device-asm/static_runtime.S` as embedded in this build.
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

/// [`runtime_objects`] for any runtime text, checked against the entry
/// points programs use ([`check_entries`]).
pub fn runtime_objects_from(runtime: &RuntimeSource) -> Result<[Object; 2], AsmError> {
    let object = assemble(&runtime.name, &runtime.text)?;
    check_entries(&object)?;
    Ok([object, assemble("<runtime layout>", &layout_source())?])
}

/// A runtime object defines and exports every [`symbols::RUNTIME_ENTRIES`]
/// and does not define [`symbols::PROGRAM`]. Checked here, at the runtime's
/// own source, so a replacement runtime (`--runtime-source`) that misses
/// one is an error at its file and line, not a link error inside a
/// generated tile program. A missing name is reported where the source
/// mentions it (e.g. a `.globl` without a label), else at line 1.
pub fn check_entries(object: &Object) -> Result<(), AsmError> {
    for name in symbols::RUNTIME_ENTRIES {
        let (loc, defined) = match object.symbol(name) {
            Some(s) if s.value.is_some() && s.global => continue,
            Some(s) => (s.loc, s.value.is_some()),
            None => (Loc { line: 1, col: 1 }, false),
        };
        let symbol = name.into();
        let kind = AsmErrorKind::RuntimeEntry {
            symbol,
            defined,
            entries: &symbols::RUNTIME_ENTRIES,
        };
        return Err(AsmError::new(&object.file, loc, kind));
    }
    if let Some(s) = object
        .symbol(symbols::PROGRAM)
        .filter(|s| s.value.is_some())
    {
        let symbol = symbols::PROGRAM.into();
        let kind = AsmErrorKind::RuntimeReserved { symbol };
        return Err(AsmError::new(&object.file, s.loc, kind));
    }
    Ok(())
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
    use alloc::string::ToString;
    use ipuc_target::ipu21::isa::{decode, Imm16Op, Instruction};

    fn runtime_error(text: &str) -> AsmError {
        runtime_objects_from(&RuntimeSource {
            name: "my.S".into(),
            text: text.into(),
        })
        .unwrap_err()
    }

    /// 1-based line of the first line of `text` starting with `prefix`.
    fn line_of(text: &str, prefix: &str) -> u32 {
        text.lines().position(|l| l.starts_with(prefix)).unwrap() as u32 + 1
    }

    /// A replacement runtime is checked for the entry points programs call
    /// at its own source: the error names its file and the line.
    #[test]
    fn a_runtime_without_an_entry_point_is_an_error_at_its_line() {
        assert!(runtime_objects_from(&RuntimeSource::builtin()).is_ok());

        let hidden = SOURCE.replacen("        .globl ipuc_worker_barrier\n", "", 1);
        let e = runtime_error(&hidden);
        assert_eq!(e.file, "my.S");
        assert_eq!(e.loc.line, line_of(&hidden, "ipuc_worker_barrier:"));
        assert_eq!(
            e.kind,
            AsmErrorKind::RuntimeEntry {
                symbol: "ipuc_worker_barrier".into(),
                defined: true,
                entries: &symbols::RUNTIME_ENTRIES,
            }
        );
        assert!(e.to_string().contains("is defined but not exported"), "{e}");

        // Declared but never defined: at the `.globl`.
        let gone = SOURCE.replacen("ipuc_patch_word:", "ipuc_patch_word_gone:", 1);
        let e = runtime_error(&gone);
        assert_eq!(e.loc.line, line_of(&gone, "        .globl ipuc_patch_word"));
        assert!(
            e.to_string()
                .contains("the runtime does not define 'ipuc_patch_word'"),
            "{e}"
        );

        // Not mentioned at all: at line 1.
        let e = runtime_error("nop\n");
        assert_eq!((e.loc.line, e.loc.col), (1, 1));
        assert!(e
            .to_string()
            .starts_with("my.S:1:1: the runtime does not define 'ipuc_static_start'"));

        // The program's own entry is not the runtime's to define.
        let clash =
            alloc::format!("{SOURCE}\n        .globl ipuc_program\nipuc_program:\n        nop\n");
        let e = runtime_error(&clash);
        assert_eq!(e.loc.line, line_of(&clash, "ipuc_program:"));
        assert_eq!(
            e.kind,
            AsmErrorKind::RuntimeReserved {
                symbol: "ipuc_program".into()
            }
        );
    }

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
