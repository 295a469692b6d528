//! Codelet errors: every one names the tile, the kernel and the address at fault.

use std::fmt;

use ipuc_core::kernel::AbiError;

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
    /// An operand's extent is not inside SRAM.
    OperandOutsideSram {
        /// Operand name (`a`, `b`, `out`, …).
        operand: &'static str,
        /// MRF register holding its address.
        register: u8,
        /// The address.
        addr: u32,
        /// Bytes the kernel would touch.
        bytes: u64,
    },
    /// An operand address is not a multiple of its element size.
    OperandMisaligned {
        /// Operand name.
        operand: &'static str,
        /// MRF register holding its address.
        register: u8,
        /// The address.
        addr: u32,
        /// Required alignment.
        align: u32,
    },
    /// An AMP operand is not 32-byte aligned (§2.10 rule 6).
    AmpOperandMisaligned {
        /// Operand name.
        operand: &'static str,
        /// The address.
        addr: u32,
    },
    /// An AMP kernel's output is in standard memory (§2.10 rule 6: output
    /// in interleaved memory).
    AmpOutputNotInterleaved {
        /// The output address.
        addr: u32,
    },
    /// The AMP's left stream and its output share an effective element
    /// (§2.10 rule 6).
    AmpStreamsShareElement {
        /// Left-stream address.
        left: u32,
        /// Output address.
        out: u32,
        /// The shared effective element.
        element: u32,
    },
    /// The argument block says the GEMM weights are in interleaved memory,
    /// but `b` is in standard memory.
    WeightsNotInterleaved {
        /// The weight address.
        addr: u32,
    },
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
            CodeletErrorKind::OperandOutsideSram {
                operand,
                register,
                addr,
                bytes,
            } => write!(
                f,
                "tile {tile}: kernel {kernel}: operand {operand} ($m{register} = {addr:#x}, {bytes} bytes) is outside SRAM"
            ),
            CodeletErrorKind::OperandMisaligned {
                operand,
                register,
                addr,
                align,
            } => write!(
                f,
                "tile {tile}: kernel {kernel}: operand {operand} ($m{register} = {addr:#x}) is not {align}-byte aligned"
            ),
            CodeletErrorKind::AmpOperandMisaligned { operand, addr } => write!(
                f,
                "tile {tile}: kernel {kernel}: AMP operand {operand} at {addr:#x} is not 32-byte aligned (facts §2.10 rule 6)"
            ),
            CodeletErrorKind::AmpOutputNotInterleaved { addr } => write!(
                f,
                "tile {tile}: kernel {kernel}: AMP output at {addr:#x} is in standard memory; the AMP writes interleaved memory (facts §2.10 rule 6)"
            ),
            CodeletErrorKind::AmpStreamsShareElement { left, out, element } => write!(
                f,
                "tile {tile}: kernel {kernel}: AMP left stream {left:#x} and output {out:#x} share effective element {element} (facts §2.10 rule 6)"
            ),
            CodeletErrorKind::WeightsNotInterleaved { addr } => write!(
                f,
                "tile {tile}: kernel {kernel}: argument block claims interleaved weights but b is at {addr:#x} in standard memory"
            ),
        }
    }
}

impl std::error::Error for CodeletError {}
