//! Removes the temporaries of unfinished atomic writes when the process is
//! interrupted (SIGINT, SIGTERM, SIGHUP), then dies of the same signal as
//! it would have. SIGKILL cannot be caught: it may leave one hidden
//! `.NAME.PID.*.tmp` beside the output (removed by the next write to that
//! path), never a partial output.
//!
//! While an output set is committed (its staged temporaries renamed into
//! place one after another, `write::commit_outputs`), a signal is held
//! back until the last rename: the handler notes it and returns, and the
//! commit re-raises it when done, so an interrupted run leaves its
//! previous set or its new one, never a mix.

use std::ffi::{c_char, CString};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU8, Ordering};

/// Temporaries registered at once: every output of a run stays staged
/// until the run commits its set (a rejected compile writes two reports
/// per rejected candidate, plus its maps and summary); a write finding
/// every slot taken is still atomic, only its temporary is not removed on
/// a signal.
const SLOTS: usize = 1024;

/// No commit in progress: a signal removes the temporaries and ends the
/// process.
const IDLE: u8 = 0;
/// An output set is being renamed into place: a signal waits for it.
const COMMITTING: u8 = 1;
/// A signal is ending the process: no commit may start.
const DYING: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(IDLE);
/// The last signal received, re-raised when a commit ends.
static DEFERRED: AtomicI32 = AtomicI32::new(0);

static PENDING: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(null_mut()) }; SLOTS];

/// A registered temporary; dropping it (after the rename, or on error when
/// `tempfile` removes the file) unregisters it.
pub(super) struct Pending(Option<usize>);

/// Registers `path` for removal on a signal.
pub(super) fn pending(path: &Path) -> Pending {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            return Pending(None);
        };
        let raw = c.into_raw();
        for (i, slot) in PENDING.iter().enumerate() {
            if slot
                .compare_exchange(null_mut(), raw, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return Pending(Some(i));
            }
        }
        // SAFETY: `raw` came from `into_raw` above and was not published.
        drop(unsafe { CString::from_raw(raw) });
    }
    #[cfg(not(unix))]
    let _ = path;
    Pending(None)
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            // The path string is leaked on purpose: a handler running on
            // another thread may have loaded the pointer just before this
            // store. A few dozen bytes per written file.
            PENDING[i].store(null_mut(), Ordering::SeqCst);
        }
    }
}

/// Starts a commit: signals are held back until [`end_commit`]. False when
/// a signal is already ending the process (nothing may be renamed then).
pub(super) fn begin_commit() -> bool {
    STATE
        .compare_exchange(IDLE, COMMITTING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Ends a commit, then raises a signal that arrived during it (the handler
/// then finds no temporary and ends the process as the signal asked).
pub(super) fn end_commit() {
    STATE.store(IDLE, Ordering::SeqCst);
    let signal = DEFERRED.swap(0, Ordering::SeqCst);
    #[cfg(unix)]
    if signal != 0 {
        // SAFETY: raising a signal whose handler is installed (or default).
        unsafe {
            libc::raise(signal);
        }
    }
    #[cfg(not(unix))]
    let _ = signal;
}

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    // Noted before the state is read: a commit ending between the two
    // re-raises it, or this handler, finding the state idle, proceeds.
    DEFERRED.store(signal, Ordering::SeqCst);
    if STATE.compare_exchange(IDLE, DYING, Ordering::SeqCst, Ordering::SeqCst) == Err(COMMITTING) {
        return;
    }
    for slot in &PENDING {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: `p` is a NUL-terminated string never freed (see
            // `Drop`); unlink is async-signal-safe.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: restoring the default action and re-raising are
    // async-signal-safe; the signal is blocked until this handler returns,
    // then it ends the process as it would have without the handler.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP, except where the
/// signal is ignored (`nohup` keeps ignoring SIGHUP). Called once by `main`.
pub fn install() {
    #[cfg(unix)]
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: plain sigaction calls with a zeroed, then filled, struct;
        // the handler only does async-signal-safe work.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}
