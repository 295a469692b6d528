//! Argument-block decoding errors.

use core::fmt;

/// Why an argument block was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiError {
    /// Word 0 does not carry the argument-block magic.
    BadMagic {
        /// Word 0 as found.
        word: u32,
    },
    /// Word 0 names no known kernel.
    UnknownKernel {
        /// The code found.
        code: u8,
    },
    /// The block names a different kernel than the symbol that was called.
    WrongKernel {
        /// Code expected from the call target.
        expected: u8,
        /// Code found in the block.
        found: u8,
    },
    /// The length word disagrees with the kernel's layout, or the block is
    /// shorter than its length word or the header.
    BadLength {
        /// Words the layout needs.
        expected: u32,
        /// Words given (length word or slice length).
        found: u32,
    },
    /// An element-type word is not a valid type (unknown tag, FP8 scale
    /// outside [−32, 31], or stray bits).
    BadDType {
        /// Field index (word number in the block).
        word_index: u32,
        /// The word.
        word: u32,
    },
    /// A field holds a value the kernel cannot run with (unknown flag bits,
    /// a type the kernel does not accept, a non-finite float, an epilogue
    /// on a non-GEMM kernel).
    BadField {
        /// Word number in the block.
        word_index: u32,
        /// The word.
        word: u32,
    },
}

impl fmt::Display for AbiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbiError::BadMagic { word } => {
                write!(
                    f,
                    "argument block word 0 is {word:#010x}, not an argument-block header"
                )
            }
            AbiError::UnknownKernel { code } => {
                write!(f, "argument block names unknown kernel code {code}")
            }
            AbiError::WrongKernel { expected, found } => write!(
                f,
                "argument block is for kernel code {found} but kernel code {expected} was called"
            ),
            AbiError::BadLength { expected, found } => {
                write!(
                    f,
                    "argument block has {found} words, the layout needs {expected}"
                )
            }
            AbiError::BadDType { word_index, word } => {
                write!(
                    f,
                    "argument block word {word_index} ({word:#010x}) is not an element type"
                )
            }
            AbiError::BadField { word_index, word } => {
                write!(
                    f,
                    "argument block word {word_index} ({word:#010x}) is not valid for this kernel"
                )
            }
        }
    }
}

impl core::error::Error for AbiError {}
