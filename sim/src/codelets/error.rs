//! Codelet errors: every one names the tile, the kernel and the address at fault.

use ipuc_target::ipu21::topology::PhysicalTile;
use ipuc_target::kernel::AbiError;

use crate::OperandFault;

/// Why a kernel call could not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tile {}: kernel {kernel}: {kind}", .tile.get())]
pub struct CodeletError {
    /// Physical tile of the call.
    pub tile: PhysicalTile,
    /// Kernel symbol name.
    pub kernel: &'static str,
    /// What went wrong.
    pub kind: CodeletErrorKind,
}

/// The failure itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodeletErrorKind {
    /// `$m8` is not word aligned.
    #[error("argument block address {addr:#x} ($m8) is not word aligned")]
    ArgBlockMisaligned {
        /// The address in `$m8`.
        addr: u32,
    },
    /// The argument block (header or body) is not inside SRAM.
    #[error("argument block {addr:#x} ({words} words) is outside SRAM")]
    ArgBlockOutsideSram {
        /// Block address.
        addr: u32,
        /// Words that were to be read.
        words: u32,
    },
    /// The block's contents are malformed.
    #[error("argument block at {addr:#x}: {error}")]
    ArgBlock {
        /// Block address.
        addr: u32,
        /// Decoding error.
        error: AbiError,
    },
    /// An operand breaks a kernel-ABI rule: its extent outside SRAM, not
    /// aligned to its element, or an AMP rule of
    /// `docs/facts/ipu21-target.md` §2.10 rule 6.
    #[error("{0}")]
    Operand(OperandFault),
}
