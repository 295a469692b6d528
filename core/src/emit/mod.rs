//! Emission: per-tile supervisor programs from a placed [`TileSchedule`].
//!
//! Lowering says *what* each tile does (kernel calls, exchange phases, one
//! structured Repeat); placement says *where* each buffer lives. Emission
//! turns both into IPU21 assembly for every tile — the generated supervisor
//! program plus its exchange rows, Repeat patch tables, row-sharing patch
//! lists and kernel argument blocks — which the linker joins with the static
//! runtime (`target-ipu21/device-asm/static_runtime.S`) into one image per tile.
//!
//! Generated code is assembly text on purpose: the same assembler that checks
//! the runtime checks it, and `ipuc compile --listing` can show it.
//!
//! Every address an instruction needs inside a Repeat comes from
//! [`Buffer::iteration_offset`]'s function `base + iteration × stride`
//! (architecture invariant 3): kernels read the iterated buffer's current
//! base from the Repeat frame, and exchange sends of iterated sources either
//! run with `$OUTGOING_BASE` loaded from that same frame slot (outgoing-base
//! relocation) or are rewritten per iteration by Repeat patch tables built
//! from the same stride.

mod error;
mod program;
mod tables;

pub use error::EmitError;
pub use program::{
    area_label, emit_program, emit_programs, kernel_stubs_source, kernel_symbol, program_tiles,
    step_label, Area, EmitInput, EmittedProgram,
};
pub use tables::{PatchAddresses, PatchData};
