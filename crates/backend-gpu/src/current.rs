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
                tracing::warn!(
                    backend = A::NAME, error = %e,
                    "cannot read the calling thread's current context; it is not put back after \
                     the call"
                );
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
        // where it was current when the call entered. hetblas destroys no context it did not
        // create, and the caller's stays alive while it is current on a thread using the
        // runtime (destroying it then breaks the runtime's own rules).
        if let Err(e) = unsafe { A::make_current(saved) } {
            // The call's own result stands; the caller's context is what it cannot get back.
            tracing::warn!(
                backend = A::NAME, error = %e, ?saved,
                "cannot make the calling thread's context current again after the call"
            );
        }
    }
}
