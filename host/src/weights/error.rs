//! Errors from loading or generating weights. Every variant names the file
//! and, where one is involved, the tensor.

use std::path::PathBuf;

/// What went wrong while loading a checkpoint or binding its tensors.
#[derive(Debug, thiserror::Error)]
pub enum WeightError {
    /// A file could not be read.
    #[error("{}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `config.json` is missing fields, malformed, or not a SigLIP config.
    #[error("{}: {why}", file.display())]
    Config {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The safetensors header is unreadable.
    #[error("{}: not a valid safetensors file: {why}", file.display())]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// What the parser said.
        why: String,
    },
    /// The file ends before a tensor's data does.
    #[error("{}: truncated: tensor `{tensor}` needs data bytes up to {needed} but the file holds only {available}", file.display())]
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
    #[error("{}: missing tensor `{tensor}` (expected shape {expected:?}, with or without the `vision_model.` prefix)", file.display())]
    Missing {
        /// The file.
        file: PathBuf,
        /// The parameter (HF name without the `vision_model.` prefix).
        tensor: String,
        /// The shape the model expects.
        expected: Vec<usize>,
    },
    /// A tensor has a different shape than the model needs.
    #[error("{}: tensor `{tensor}` has shape {found:?}, the model needs {expected:?}", file.display())]
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
    #[error("{}: tensor `{tensor}` has dtype {dtype}; only F32, F16 and BF16 are accepted", file.display())]
    Dtype {
        /// The file.
        file: PathBuf,
        /// The tensor as stored.
        tensor: String,
        /// The stored dtype.
        dtype: String,
    },
    /// A vision-tower tensor the model does not use (a wrong name).
    #[error("{}: unexpected vision tensor `{tensor}` (not a parameter of the {config} in config.json)", file.display())]
    Unexpected {
        /// The file.
        file: PathBuf,
        /// The tensor as stored.
        tensor: String,
        /// The config class the parameters were built from (e.g.
        /// `ViTConfig`; "config" when the binder was not told).
        config: &'static str,
    },
    /// The same parameter is stored both with and without `vision_model.`.
    #[error("{}: tensor `{tensor}` is stored both with and without the `vision_model.` prefix", file.display())]
    Duplicate {
        /// The file.
        file: PathBuf,
        /// The parameter.
        tensor: String,
    },
    /// A tensor holds NaN or infinity.
    #[error("{}: tensor `{tensor}` holds a non-finite value at element {index}", file.display())]
    NonFinite {
        /// The file.
        file: PathBuf,
        /// The tensor.
        tensor: String,
        /// C-order element index of the first bad value.
        index: usize,
    },
}

impl WeightError {
    /// The error with `family`'s config classes in its message (the binder
    /// sees parameter names, not the config they came from).
    pub fn for_family(self, family: crate::model::Family) -> Self {
        match self {
            WeightError::Unexpected { file, tensor, .. } => WeightError::Unexpected {
                file,
                tensor,
                config: family.config_classes(),
            },
            other => other,
        }
    }
}
