//! ipuc's kernel register ABI: how a supervisor `call` hands a compute
//! kernel its operands. Our convention, modelled on ipu-stack's kernel ABI
//! (`docs/facts/ipu21-target.md` §1.5: `$m2` output, `$m3..` inputs, return
//! via `br $m10`), with one change: shapes, types and scales travel in an
//! argument block in SRAM instead of registers, so kernels with many
//! parameters (GEMM: 3 dims, 3 types, flags, bias type) fit.
//!
//! | Register | Holds |
//! |---|---|
//! | `$m2` | output address (byte) |
//! | `$m3..=$m7` | input addresses, in the kernel's documented operand order |
//! | `$m8` | address of the argument block (word aligned) |
//! | `$m10` | link: the kernel returns with `br $m10` |
//!
//! `$m9` (the runtime's patch/repeat link) and `$m11` (supervisor stack
//! pointer) are left alone, so a kernel call inside a Repeat body does not
//! disturb the Repeat's own linkage.
//!
//! Argument block: little-endian 32-bit words.
//!
//! | Word | Contents |
//! |---|---|
//! | 0 | [`ARG_BLOCK_MAGIC`] `|` kernel code (low byte, see `crate::kernel::KernelSymbol`) |
//! | 1 | total words in the block, header included |
//! | 2.. | the kernel's fields (`crate::kernel` documents each layout) |
//!
//! Element types are one word: low byte = [`DTYPE_F32`], [`DTYPE_F16`],
//! [`DTYPE_F143`] or [`DTYPE_F152`]; bits 15:8 = the FP8 scale as a
//! two's-complement byte (zero for F32/F16). Floats are IEEE binary32 bits.

/// Register holding the output address (`docs/facts/ipu21-target.md` §1.5).
pub const OUTPUT_REGISTER: u8 = 2;
/// Register holding the first input address (§1.5, `FIRST_INPUT_REGISTER = 3`).
pub const FIRST_INPUT_REGISTER: u8 = 3;
/// Largest number of input operands (`$m3..=$m7`); our choice, leaving `$m8` for the block.
pub const MAX_INPUTS: usize = 5;
/// Register holding the argument-block address (our choice: ipu-stack treats `$m8` as scratch, §1.5).
pub const ARG_BLOCK_REGISTER: u8 = 8;
/// Link register of a kernel call (§1.5: `call $m10, target` / `br $m10`).
pub const LINK_REGISTER: u8 = 10;
/// High half of argument-block word 0 ("KA"): catches a register pointing at
/// something that is not an argument block.
pub const ARG_BLOCK_MAGIC: u32 = 0x4B41_0000;
/// Mask selecting the magic in word 0.
pub const ARG_BLOCK_MAGIC_MASK: u32 = 0xFFFF_FF00;
/// Header words (magic + kernel code, length).
pub const ARG_BLOCK_HEADER_WORDS: u32 = 2;
/// Largest argument block accepted, in words (the GEMM block is 11).
pub const ARG_BLOCK_MAX_WORDS: u32 = 32;
/// Required alignment of the argument block (32-bit loads).
pub const ARG_BLOCK_ALIGN: u32 = 4;

/// Element-type tag: IEEE binary32.
pub const DTYPE_F32: u32 = 0;
/// Element-type tag: IEEE binary16.
pub const DTYPE_F16: u32 = 1;
/// Element-type tag: IPU FP8 F143 (scale in bits 15:8).
pub const DTYPE_F143: u32 = 2;
/// Element-type tag: IPU FP8 F152 (scale in bits 15:8).
pub const DTYPE_F152: u32 = 3;
