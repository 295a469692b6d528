//! Codelet errors: every one names the tile, the kernel and the address at fault.

use std::fmt;

use ipuc_core::kernel::AbiError;

use crate::sim::OperandFault;

/// Why a kernel call could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeletError {
    /// Physical tile of the call.
    pub tile: u16,
    /// Kernel symbol name.
    pub kernel: &'static str,
    /// What went wrong.
    pub kind: CodeletErrorKind,
}

/// The failure itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeletErrorKind {
    /// `$m8` is not word aligned.
    ArgBlockMisaligned {
        /// The address in `$m8`.
        addr: u32,
    },
    /// The argument block (header or body) is not inside SRAM.
    ArgBlockOutsideSram {
        /// Block address.
        addr: u32,
        /// Words that were to be read.
        words: u32,
    },
    /// The block's contents are malformed.
    ArgBlock {
        /// Block address.
        addr: u32,
        /// Decoding error.
        error: AbiError,
    },
    /// An operand breaks a kernel-ABI rule: its extent outside SRAM, not
    /// aligned to its element, or an AMP rule of
    /// `docs/facts/ipu21-target.md` §2.10 rule 6.
    Operand(OperandFault),
}

impl fmt::Display for CodeletError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (tile, kernel) = (self.tile, self.kernel);
        match &self.kind {
            CodeletErrorKind::ArgBlockMisaligned { addr } => {
                write!(f, "tile {tile}: kernel {kernel}: argument block address {addr:#x} ($m8) is not word aligned")
            }
            CodeletErrorKind::ArgBlockOutsideSram { addr, words } => write!(
                f,
                "tile {tile}: kernel {kernel}: argument block {addr:#x} ({words} words) is outside SRAM"
            ),
            CodeletErrorKind::ArgBlock { addr, error } => {
                write!(f, "tile {tile}: kernel {kernel}: argument block at {addr:#x}: {error}")
            }
            CodeletErrorKind::Operand(fault) => {
                write!(f, "tile {tile}: kernel {kernel}: {fault}")
            }
        }
    }
}

impl std::error::Error for CodeletError {}
