//! Operands that are device memory, passed by pointer (a program using CUDA or HIP may hand
//! device pointers to BLAS, as cuBLAS users do). They are computed where they live, by the
//! Runtime, and never read on the host.
//!
//! Which device owns an address is the Runtime's question ([`hetblas::Runtime::device_owning`]:
//! every device asks its own runtime, `cuPointerGetAttribute` for CUDA and
//! `hipPointerGetAttributes` for HIP; emulated devices know their live allocations). Asking
//! costs a driver call per operand and device, so it is asked only when a pointer can be
//! device memory at all ([`worth_asking`]):
//! - when the process has loaded the CUDA or HIP runtime (found with `RTLD_NOLOAD`: hetblas
//!   never loads it for this). A program without them pays one `clock_gettime` per call: a
//!   "not loaded" answer is trusted for a millisecond, since no device memory can exist sooner
//!   after the library loads (creating a context alone takes far longer);
//! - when the Runtime is running with emulated devices, whose memory programs get from the
//!   Runtime itself (tests).

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// The GPU runtimes' libraries, by soname (the HIP-on-CUDA test shim has HIP's).
const GPU_LIBRARIES: [&CStr; 4] = [
    c"libcuda.so.1",
    c"libamdhip64.so.6",
    c"libamdhip64.so.5",
    c"libamdhip64.so",
];

/// How long a "no GPU runtime loaded" answer is trusted.
const RECHECK_NS: u64 = 1_000_000;

/// Whether some GPU runtime library is loaded in the process now.
fn gpu_library_loaded() -> bool {
    GPU_LIBRARIES.iter().any(|name| {
        // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded; nothing is
        // run and nothing is loaded.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if h.is_null() {
            return false;
        }
        // SAFETY: drops the reference the NOLOAD open took; the library stays loaded (whoever
        // loaded it holds its own reference).
        unsafe { libc::dlclose(h) };
        true
    })
}

/// Whether a GPU runtime is loaded, with a positive answer kept for good (the libraries are
/// never unloaded) and a negative one for [`RECHECK_NS`].
fn gpu_runtime_present() -> bool {
    static LOADED: AtomicBool = AtomicBool::new(false);
    static NEXT_CHECK_NS: AtomicU64 = AtomicU64::new(0);
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    if LOADED.load(Ordering::Relaxed) {
        return true;
    }
    let now = EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64;
    if now < NEXT_CHECK_NS.load(Ordering::Relaxed) {
        return false;
    }
    let loaded = gpu_library_loaded();
    if loaded {
        LOADED.store(true, Ordering::Relaxed);
    } else {
        static SAID: AtomicBool = AtomicBool::new(false);
        if crate::offload::verbose() && !SAID.swap(true, Ordering::Relaxed) {
            eprintln!("hetblas: no CUDA or HIP runtime loaded: operand pointers are host memory");
        }
        NEXT_CHECK_NS.store(now + RECHECK_NS, Ordering::Relaxed);
    }
    loaded
}

/// Set when the Runtime starts with emulated devices.
static EMULATED: AtomicBool = AtomicBool::new(false);

/// Records that the Runtime runs emulated devices (their memory can be handed to BLAS).
pub fn note_emulated_devices() {
    EMULATED.store(true, Ordering::Relaxed);
}

/// Whether an operand pointer can be device memory, so that the Runtime must be asked.
pub fn worth_asking() -> bool {
    EMULATED.load(Ordering::Relaxed) || gpu_runtime_present()
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_gpu_runtime_in_the_test_process() {
        // CI has no CUDA or HIP: nothing loads them here, so the answer is "not loaded", and
        // a second call inside the millisecond does not ask the loader again.
        if super::gpu_library_loaded() {
            eprintln!("a GPU runtime is loaded in this process; nothing to check");
            return;
        }
        assert!(!super::gpu_runtime_present());
        assert!(!super::gpu_runtime_present());
    }
}
