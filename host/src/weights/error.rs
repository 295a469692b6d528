//! Errors from loading or generating weights. Every variant names the file
//! and, where one is involved, the tensor.

use std::fmt;
use std::path::PathBuf;

/// What went wrong while loading a checkpoint or binding its tensors.
#[derive(Debug)]
pub enum WeightError {
    /// A file could not be read.
    Io {
        /// The file.
        file: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `config.json` is missing fields, malformed, or not a SigLIP config.
    Config {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The safetensors header is unreadable.
    Corrupt {
        /// The file.
        file: PathBuf,
        /// What the parser said.
        why: String,
    },
    /// The file ends before a tensor's data does.
    Truncated {
        /// The file.
        file: PathBuf,
        /// The first tensor whose bytes are missing.
        tensor: String,
        /// Bytes the data section must have for this tensor.
        needed: usize,
        /// Bytes the data section has.
        available: usize,
    },
    /// A parameter the model needs is not in the checkpoint.
    Missing {
        /// The file.
        file: PathBuf,
        /// The parameter (HF name without the `vision_model.` prefix).
        tensor: String,
        /// The shape the model expects.
        expected: Vec<usize>,
    },
    /// A tensor has a different shape than the model needs.
    Shape {
        /// The file.
        file: PathBuf,
        /// The tensor as stored.
        tensor: String,
        /// The shape the model expects.
        expected: Vec<usize>,
        /// The stored shape.
        found: Vec<usize>,
    },
    /// A tensor is stored in a dtype other than F32/F16/BF16.
    Dtype {
        /// The file.
        file: PathBuf,
        /// The tensor as stored.
        tensor: String,
        /// The stored dtype.
        dtype: String,
    },
    /// A vision-tower tensor the model does not use (a wrong name).
    Unexpected {
        /// The file.
        file: PathBuf,
        /// The tensor as stored.
        tensor: String,
    },
    /// The same parameter is stored both with and without `vision_model.`.
    Duplicate {
        /// The file.
        file: PathBuf,
        /// The parameter.
        tensor: String,
    },
    /// A tensor holds NaN or infinity.
    NonFinite {
        /// The file.
        file: PathBuf,
        /// The tensor.
        tensor: String,
        /// C-order element index of the first bad value.
        index: usize,
    },
}

impl fmt::Display for WeightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WeightError::Io { file, source } => write!(f, "{}: {source}", file.display()),
            WeightError::Config { file, why } => write!(f, "{}: {why}", file.display()),
            WeightError::Corrupt { file, why } => {
                write!(f, "{}: not a valid safetensors file: {why}", file.display())
            }
            WeightError::Truncated {
                file,
                tensor,
                needed,
                available,
            } => write!(
                f,
                "{}: truncated: tensor `{tensor}` needs data bytes up to {needed} but the file holds only {available}",
                file.display()
            ),
            WeightError::Missing {
                file,
                tensor,
                expected,
            } => write!(
                f,
                "{}: missing tensor `{tensor}` (expected shape {expected:?}, with or without the `vision_model.` prefix)",
                file.display()
            ),
            WeightError::Shape {
                file,
                tensor,
                expected,
                found,
            } => write!(
                f,
                "{}: tensor `{tensor}` has shape {found:?}, the model needs {expected:?}",
                file.display()
            ),
            WeightError::Dtype { file, tensor, dtype } => write!(
                f,
                "{}: tensor `{tensor}` has dtype {dtype}; only F32, F16 and BF16 are accepted",
                file.display()
            ),
            WeightError::Unexpected { file, tensor } => write!(
                f,
                "{}: unexpected vision tensor `{tensor}` (not a parameter of this SigLIP configuration)",
                file.display()
            ),
            WeightError::Duplicate { file, tensor } => write!(
                f,
                "{}: tensor `{tensor}` is stored both with and without the `vision_model.` prefix",
                file.display()
            ),
            WeightError::NonFinite {
                file,
                tensor,
                index,
            } => write!(
                f,
                "{}: tensor `{tensor}` holds a non-finite value at element {index}",
                file.display()
            ),
        }
    }
}

impl std::error::Error for WeightError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WeightError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
