//! Removes the temporaries of unfinished atomic writes when the process is
//! interrupted (SIGINT, SIGTERM, SIGHUP), then dies of the same signal as
//! it would have. SIGKILL cannot be caught: it may leave one hidden
//! `.NAME.PID.*.tmp` beside the output (removed by the next write to that
//! path), never a partial output.

use std::ffi::{c_char, CString};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Writes in flight at once (the host writes a handful of files, one or a
/// few at a time); a write finding every slot taken is still atomic, only
/// its temporary is not removed on a signal.
const SLOTS: usize = 32;

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

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
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
