//! Exit codes: what happened, the same for every subcommand. The table is
//! printed by `--help` and in the README ([`TABLE`]); `main` maps each
//! error to its code with [`code_of`], looking through the error's causes
//! for the typed errors below.

use std::fmt;

use ipuc_core::asm::{AsmError, AsmErrorKind};
use ipuc_core::pipeline::{CompileError, LinkError};

use crate::compile::PlanOverBudget;
use crate::model::{ModelError, SpecError};
use crate::report::placement_rejection::PlacementRejected;

/// Everything worked (and validated, when validation was asked for).
pub const SUCCESS: u8 = 0;
/// The run finished but an output failed its validation (numeric FAIL).
pub const VALIDATION_FAILED: u8 = 1;
/// A flag or argument is not acceptable: clap's own parse errors and the
/// value checks made after parsing (an unknown preset, a layer count the
/// config does not have, a flag that contradicts the package).
pub const USAGE: u8 = 2;
/// The model does not fit the device: a memory rejection by the planner or
/// by placement (with its reports), or a model too large for the C600.
pub const DOES_NOT_FIT: u8 = 3;
/// Bad input: a file that cannot be read or written, a malformed package,
/// checkpoint, config, image, `.npy` or assembly source.
pub const BAD_INPUT: u8 = 4;
/// The compiler failed on valid input (a bug; please report it with the
/// command line).
pub const INTERNAL: u8 = 5;

/// The table `--help` ends with (and the README repeats).
pub const TABLE: &str = "\
Exit status:
  0  success (and PASS, when validation was asked for)
  1  validation FAIL: the run finished but an output is outside the tolerance
  2  usage error: a bad flag or value (also value checks made after parsing)
  3  does not fit: memory rejection by the planner or placement (reports written)
  4  bad input: an unreadable/unwritable file, a malformed package, checkpoint,
     config, image, .npy or assembly source
  5  internal error: the compiler failed on valid input (a bug)";

/// The run finished, but a check of its results failed (an inference
/// outside the tolerance, a hw-check case): the message says which.
#[derive(Debug)]
pub struct ValidationFailed(pub String);

impl fmt::Display for ValidationFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ValidationFailed {}

/// A flag value rejected after parsing (exits like clap's usage errors).
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `anyhow::bail!` for a usage error.
#[macro_export]
macro_rules! usage_bail {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::exit::UsageError(format!($($arg)*))))
    };
}

/// Whether `err` is the planner's or placement's memory rejection (not a
/// size limit found before compiling).
pub fn is_memory_rejection(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|c| c.is::<PlanOverBudget>() || c.is::<PlacementRejected>())
}

/// The exit code for `err`: the first cause with a known meaning decides;
/// anything unrecognised is bad input (the usual reason a command stops).
pub fn code_of(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<ValidationFailed>() {
            return VALIDATION_FAILED;
        }
        if cause.is::<UsageError>() {
            return USAGE;
        }
        if cause.is::<PlanOverBudget>() || cause.is::<PlacementRejected>() {
            return DOES_NOT_FIT;
        }
        if let Some(e) = cause.downcast_ref::<ModelError>() {
            return model_error_code(e);
        }
        if let Some(e) = cause.downcast_ref::<SpecError>() {
            return if e.is_usage() { USAGE } else { BAD_INPUT };
        }
        if let Some(e) = cause.downcast_ref::<CompileError>() {
            return match e {
                CompileError::Tiles { .. } => USAGE,
                // The runtime source (`--runtime-source`) did not assemble.
                CompileError::FixedCode(_) => BAD_INPUT,
                // A tile program clashed with a symbol of a replacement
                // runtime: the error names the user's file and line.
                CompileError::Link(LinkError::Link { error, .. }) if names_user_source(error) => {
                    BAD_INPUT
                }
                _ => INTERNAL,
            };
        }
        if cause.is::<std::io::Error>()
            || cause.is::<ipuc_target::package::PackageError>()
            || cause.is::<ipuc_core::description::DescriptionError>()
        {
            return BAD_INPUT;
        }
    }
    BAD_INPUT
}

/// Whether a link error points into a source the user gave: generated
/// sources are named `<…>` and the built-in runtime by its repository path.
fn names_user_source(e: &AsmError) -> bool {
    let user = |file: &str| !file.starts_with('<') && file != ipuc_core::runtime::SOURCE_NAME;
    match &e.kind {
        AsmErrorKind::DuplicateGlobal { first, .. } => user(&e.file) || user(first),
        _ => user(&e.file),
    }
}

fn model_error_code(e: &ModelError) -> u8 {
    match e {
        ModelError::UnknownPreset { .. }
        | ModelError::LayerCount { .. }
        | ModelError::BatchSize
        | ModelError::Fp8Scale { .. }
        | ModelError::ModelChoice => USAGE,
        ModelError::TooLarge { .. } | ModelError::AttentionPairs { .. } => DOES_NOT_FIT,
        // A config file too large for the device does not fit; any other
        // rejected config is bad input.
        ModelError::ConfigFile { error, .. } if matches!(**error, ModelError::TooLarge { .. }) => {
            DOES_NOT_FIT
        }
        ModelError::Precision { .. } | ModelError::Ir(_) => INTERNAL,
        _ => BAD_INPUT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_decide_the_code_wherever_they_are_in_the_chain() {
        let fail = anyhow::Error::new(ValidationFailed("1 of 2".into())).context("exec");
        assert_eq!(code_of(&fail), VALIDATION_FAILED);
        let usage = anyhow::Error::new(UsageError("--seed 3".into())).context("model");
        assert_eq!(code_of(&usage), USAGE);
        let preset = anyhow::Error::new(ModelError::UnknownPreset {
            name: "foo".into(),
            suggestion: None,
        });
        assert_eq!(code_of(&preset), USAGE);
        let io = anyhow::Error::new(std::io::Error::other("gone")).context("reading x");
        assert_eq!(code_of(&io), BAD_INPUT);
        assert_eq!(code_of(&anyhow::anyhow!("anything else")), BAD_INPUT);
        let tiles = anyhow::Error::new(CompileError::Tiles { tiles: 0 });
        assert_eq!(code_of(&tiles), USAGE);
        let internal = anyhow::Error::new(CompileError::NoTiles);
        assert_eq!(code_of(&internal), INTERNAL);
    }
}
