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
//!   never loads it for this). A program without them pays one look at the loader's count of
//!   loaded objects per call: a "not loaded" answer stands until another library is loaded;
//! - when the Runtime is running with emulated devices, whose memory programs get from the
//!   Runtime itself (tests).

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The GPU runtimes' libraries, by soname (the HIP-on-CUDA test shim has HIP's).
const GPU_LIBRARIES: [&CStr; 4] = [
    c"libcuda.so.1",
    c"libamdhip64.so.6",
    c"libamdhip64.so.5",
    c"libamdhip64.so",
];

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

/// Objects the dynamic loader has loaded so far (glibc's `dlpi_adds`): it grows with every
/// library loaded, so an unchanged count means no GPU runtime can have arrived since the last
/// look. Reading it walks to the first loaded object only.
fn objects_loaded() -> u64 {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid `info`; `data` is the `u64` below.
        unsafe { *data.cast::<u64>() = (*info).dlpi_adds };
        1 // stop after the first object
    }
    let mut adds = 0u64;
    // SAFETY: `first` matches the callback type and writes only through `data`, a live u64.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut adds as *mut u64).cast()) };
    adds
}

/// Whether a GPU runtime is loaded, with a positive answer kept for good (the libraries are
/// never unloaded) and a negative one until the loader loads another object.
fn gpu_runtime_present() -> bool {
    static LOADED: AtomicBool = AtomicBool::new(false);
    /// The loader's object count at the last "not loaded" answer (0: never asked).
    static CHECKED_AT: AtomicU64 = AtomicU64::new(0);
    if LOADED.load(Ordering::Relaxed) {
        return true;
    }
    let adds = objects_loaded();
    if adds != 0 && CHECKED_AT.load(Ordering::Relaxed) == adds {
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
        CHECKED_AT.store(adds, Ordering::Relaxed);
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
        // a second call, with no library loaded in between, does not ask the loader again.
        if super::gpu_library_loaded() {
            eprintln!("a GPU runtime is loaded in this process; nothing to check");
            return;
        }
        assert!(
            super::objects_loaded() > 0,
            "the loader counts the objects it loaded"
        );
        assert!(!super::gpu_runtime_present());
        assert!(!super::gpu_runtime_present());
    }
}
