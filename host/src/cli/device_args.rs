//! The seeds' device flags: `--sdk DIR` (the Poplar SDK of the hardware
//! backend) and `--device-lock F` (an exclusive lock on `F` held while the
//! device is open, so runs that share a device — or a machine — are
//! serialised; it works with the simulator too).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Device flags shared by `ipuc run` and `ipuc hw-check`.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = super::headings::DEVICE)]
pub struct DeviceArgs {
    /// Poplar SDK directory: always refused, with the reason: ipuc has no
    /// hardware backend (no public Poplar API loads raw tile images, and
    /// its kernels are simulator codelets); the simulator needs no SDK.
    #[arg(long, value_name = "DIR")]
    pub sdk: Option<PathBuf>,
    /// Take an exclusive lock on this file while the device is open (waits
    /// while another run holds it). Works with the simulator too.
    #[arg(long, value_name = "F")]
    pub device_lock: Option<PathBuf>,
}

impl DeviceArgs {
    /// Checks made before any work: `--sdk` is refused (no hardware backend).
    pub fn check(&self) -> Result<()> {
        if let Some(dir) = &self.sdk {
            hardware_backend(dir)?;
        }
        if let Some(lock) = &self.device_lock {
            super::checks::output_file("--device-lock", lock)?;
        }
        Ok(())
    }

    /// Opens the device's lock (if `--device-lock` was given); hold the
    /// result for as long as the device is in use.
    pub fn lock(&self) -> Result<Option<DeviceLock>> {
        self.device_lock
            .as_deref()
            .map(DeviceLock::acquire)
            .transpose()
    }
}

/// Why `--sdk` (and `hw-check --target ipu`) cannot run anything: ipuc has
/// no hardware backend, and none stands behind a cargo feature.
pub const NO_HARDWARE_BACKEND: &str = "ipuc has no hardware backend: no public Poplar API \
loads raw tile images (an ipuc package is linked tile images, not a Poplar graph), and ipuc's \
kernels are native codelets of the simulator, not IPU code (that needs the float-instruction \
encodings, which the public material does not give); the embedded simulator needs no SDK";

fn hardware_backend(dir: &Path) -> Result<()> {
    crate::usage_bail!("--sdk {}: {NO_HARDWARE_BACKEND}; drop --sdk", dir.display())
}

/// An exclusive advisory lock on a file, released when dropped (or when the
/// process ends).
#[derive(Debug)]
pub struct DeviceLock {
    _file: File,
    path: PathBuf,
}

impl DeviceLock {
    /// Locks `path` (created if missing), waiting while another process
    /// holds it; says so on stderr when it has to wait.
    pub fn acquire(path: &Path) -> Result<Self> {
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true);
        // Non-blocking open: a FIFO at the path is refused below instead of
        // waiting forever for a reader.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
        let file = options
            .open(path)
            .map_err(|e| match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => anyhow::anyhow!(
                    "--device-lock {}: is {}, not a regular file",
                    path.display(),
                    crate::fsio::describe(m.file_type())
                ),
                _ => anyhow::Error::new(e).context(format!("--device-lock {}", path.display())),
            })?;
        let kind = file.metadata()?.file_type();
        if !kind.is_file() {
            anyhow::bail!(
                "--device-lock {}: is {}, not a regular file",
                path.display(),
                crate::fsio::describe(kind)
            );
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                tracing::warn!(
                    "device: waiting for the lock on {} (another run holds it)…",
                    path.display()
                );
                file.lock()
                    .with_context(|| format!("--device-lock {}: locking", path.display()))?;
            }
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("--device-lock {}: locking", path.display()))
            }
        }
        tracing::info!("device: holding the lock on {}", path.display());
        Ok(DeviceLock {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
