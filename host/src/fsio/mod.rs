//! Every file the host reads or writes goes through here, so that nothing is
//! lost and nothing hangs (#28):
//!
//! - [`write_atomic`]: a file is written to a temporary beside its final
//!   path, synced, and renamed into place only when complete (`tempfile`'s
//!   `persist`). An error, a full disk or a signal leaves the previous file
//!   intact; a symlink at the path is replaced, not followed. SIGINT, SIGTERM
//!   and SIGHUP remove the temporaries being written before the process dies
//!   ([`cleanup`]); only SIGKILL can leave one (a hidden `.NAME.PID.*.tmp`),
//!   which the next write to that path removes once PID is gone.
//! - [`begin_outputs`]/[`commit_outputs`]: a run's outputs are one set,
//!   staged as synced temporaries and renamed together as its last step
//!   (signals held back meanwhile), so no run leaves new files beside old.
//! - [`check_writable`]: output locations are tried before any long work.
//! - [`read_bounded`]: inputs must be regular files (a FIFO, device,
//!   directory or socket is an error naming what it is, never a hang), and
//!   their size is checked from metadata against a [`Limit`] before a byte
//!   is read.
//!
//! Errors are `io::Error`s whose inner error is a typed [`FsError`], so the
//! callers' own typed errors (which carry an `io::Error` and the path) keep
//! their shape.

pub mod cleanup;
mod error;
mod limits;
mod package;
mod read;
mod write;

pub use error::{file_kind as describe, FsError};
pub use limits::Limit;
pub use package::read_package;
pub use read::{open_regular, read_bounded, read_string_bounded};
pub use write::{
    begin_outputs, check_writable, check_writable_dir, commit_outputs, output_len,
    remove_with_outputs, temporary_stem, write_atomic, OutputKind, PAUSE_ENV,
};

#[cfg(test)]
mod tests;
