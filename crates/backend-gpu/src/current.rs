//! The calling thread's current context, kept across a call.
//!
//! The GPU layer binds its devices' contexts on whatever thread calls into it
//! ([`GpuRuntime::bind`]): a BLAS call's registration checks, uploads and downloads, and the
//! issue of a one-device plan run on the caller's thread. A drop-in BLAS inside a CUDA or HIP
//! program must not leave its context current there, or the program's next runtime calls (an
//! allocation, a kernel launch) would go to the device hetblas used last. A [`CurrentGuard`]
//! saves what is current when a call enters and, when it drops, makes it current again if the
//! call changed it: two reads of the thread's current context per call, and a set only when
//! they differ.

use crate::runtime::GpuRuntime;
use std::marker::PhantomData;

/// The backends whose current context a guard has already failed to read (warned once each).
static READ_FAILED: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

/// Whether this is `backend`'s first failure to read the current context.
fn first_read_failure(backend: &'static str) -> bool {
    let mut seen = READ_FAILED.lock().unwrap_or_else(|p| p.into_inner());
    if seen.contains(&backend) {
        false
    } else {
        seen.push(backend);
        true
    }
}

/// What runtime `A` had current on this thread when the guard was made; put back when the
/// guard drops (on every return path, unwinding included). Not `Send`: it restores the thread
/// that saved it.
#[must_use = "the context is put back when the guard drops"]
pub struct CurrentGuard<A: GpuRuntime> {
    /// `None` when the runtime could not say (then nothing is put back).
    saved: Option<A::Current>,
    _thread: PhantomData<*const ()>,
}

impl<A: GpuRuntime> CurrentGuard<A> {
    /// Saves what is current on the calling thread. The runtime must be initialised.
    pub fn save() -> Self {
        let saved = match A::current() {
            Ok(c) => Some(c),
            Err(e) => {
                // Once per process as a warning: guards are also taken when GPU objects drop,
                // and at exit (a runtime already shut down) every drop would say it again.
                if first_read_failure(A::NAME) {
                    tracing::warn!(
                        backend = A::NAME, error = %e,
                        "cannot read the calling thread's current context; it is not put back \
                         after the call (said once)"
                    );
                } else {
                    tracing::debug!(backend = A::NAME, error = %e, "current context unreadable");
                }
                None
            }
        };
        CurrentGuard {
            saved,
            _thread: PhantomData,
        }
    }
}

impl<A: GpuRuntime> std::fmt::Debug for CurrentGuard<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CurrentGuard")
            .field("backend", &A::NAME)
            .field("saved", &self.saved)
            .finish()
    }
}

impl<A: GpuRuntime> Drop for CurrentGuard<A> {
    fn drop(&mut self) {
        let Some(saved) = self.saved else { return };
        if matches!(A::current(), Ok(now) if now == saved) {
            return;
        }
        // SAFETY: `saved` came from `A::current()` on this thread (the guard is not Send),
        // where it was current when the call entered. The only contexts hetblas lets go of
        // are the primary contexts it retained, and releasing those destroys none the caller
        // has current: the caller's runtime holds its own retain on a context it made current
        // (and destroying a context that is current on a thread breaks the runtime's rules).
        if let Err(e) = unsafe { A::make_current(saved) } {
            // The call's own result stands; the caller's context is what it cannot get back.
            tracing::warn!(
                backend = A::NAME, error = %e, ?saved,
                "cannot make the calling thread's context current again after the call"
            );
        }
    }
}
