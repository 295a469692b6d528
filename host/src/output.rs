//! What the CLI prints where. Results go to stdout, diagnostics and progress
//! to stderr (through `tracing`, see [`init_logging`]). How much of the
//! result report is printed depends on `-q`/`-v`:
//!
//! - `-q`: only the `result:` line (and errors);
//! - default: a short report, every line at most [`LINE_LIMIT`] characters
//!   (the detail is in the artifacts: summary JSON, profile, memory map);
//! - `-v`: the full report (stage figures, kernel timing, per-output errors).
//!
//! When stdout carries data (`--summary-json -`), every report line goes to
//! stderr instead, so stdout is exactly the JSON.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Longest line the default report prints.
pub const LINE_LIMIT: usize = 120;

/// How much to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Verbosity {
    Quiet = 0,
    Normal = 1,
    Verbose = 2,
    Debug = 3,
}

static VERBOSITY: AtomicU8 = AtomicU8::new(Verbosity::Normal as u8);
static STDOUT_IS_DATA: AtomicBool = AtomicBool::new(false);

/// `-q` and `-v` counts → verbosity.
pub fn verbosity_of(quiet: bool, verbose: u8) -> Verbosity {
    match (quiet, verbose) {
        (true, _) => Verbosity::Quiet,
        (false, 0) => Verbosity::Normal,
        (false, 1) => Verbosity::Verbose,
        (false, _) => Verbosity::Debug,
    }
}

pub fn set_verbosity(v: Verbosity) {
    VERBOSITY.store(v as u8, Ordering::Relaxed);
}

pub fn verbosity() -> Verbosity {
    match VERBOSITY.load(Ordering::Relaxed) {
        0 => Verbosity::Quiet,
        1 => Verbosity::Normal,
        2 => Verbosity::Verbose,
        _ => Verbosity::Debug,
    }
}

/// Stdout carries a machine-readable document: report lines go to stderr.
pub fn reserve_stdout_for_data() {
    STDOUT_IS_DATA.store(true, Ordering::Relaxed);
}

/// Prints one report line at `level` or above: to stdout, or to stderr
/// when stdout carries data.
pub fn line(level: Verbosity, text: &str) {
    if verbosity() < level {
        return;
    }
    if STDOUT_IS_DATA.load(Ordering::Relaxed) {
        eprintln!("{text}");
    } else {
        println!("{text}");
    }
}

/// A short-report line (shown unless `-q`).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::line($crate::output::Verbosity::Normal, &format!($($arg)*))
    };
}

/// A full-report line (shown with `-v`).
#[macro_export]
macro_rules! detail {
    ($($arg:tt)*) => {
        $crate::output::line($crate::output::Verbosity::Verbose, &format!($($arg)*))
    };
}

/// The `result:` line: shown even with `-q`.
#[macro_export]
macro_rules! result_line {
    ($($arg:tt)*) => {
        $crate::output::line($crate::output::Verbosity::Quiet, &format!($($arg)*))
    };
}

/// Diagnostics through `tracing` to stderr, plain lines (no timestamps or
/// levels: they are messages for a person). The filter is `RUST_LOG` when
/// set, else `warn` (`-q`: `error`; `-v`: `info`; `-vv`: `debug`).
pub fn init_logging(v: Verbosity) {
    use tracing_subscriber::EnvFilter;
    let default = match v {
        Verbosity::Quiet => "error",
        Verbosity::Normal => "warn",
        Verbosity::Verbose => "info",
        Verbosity::Debug => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .with_level(false)
        .with_ansi(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_map_to_verbosity() {
        assert_eq!(verbosity_of(true, 3), Verbosity::Quiet);
        assert_eq!(verbosity_of(false, 0), Verbosity::Normal);
        assert_eq!(verbosity_of(false, 1), Verbosity::Verbose);
        assert_eq!(verbosity_of(false, 2), Verbosity::Debug);
    }
}
