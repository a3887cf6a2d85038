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
//!   never loads it for this). A "not loaded" answer is trusted for `RECHECK_NS` of the
//!   coarse monotonic clock (at most one kernel tick, 1-10 ms, later): no device memory can
//!   exist sooner after the library loads, since initialising the driver and creating a
//!   context alone take far longer (tens to hundreds of milliseconds). So a program that loads
//!   libcuda after its first BLAS call is seen before it can pass a device pointer. The coarse
//!   clock is read from the vDSO's data page, never with a system call and never from the
//!   hardware counter: the precise clock cost about 24 ns of the check's 46 ns per call on a
//!   KVM guest with a TSC clock source, and a system call where the clock source has no vDSO
//!   support;
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

/// How long a "no GPU runtime loaded" answer is trusted (plus up to one kernel tick: the
/// coarse clock advances once per tick). Asking costs the loader about 35,000 instructions
/// (four `RTLD_NOLOAD` opens, callgrind, 2026-11-30): once a millisecond, that was 1% of a core
/// in a loop of small products; 10 ms is still well under a driver's start.
const RECHECK_NS: u64 = 10_000_000;

/// How many objects the loader has added to the process since it started (`dlpi_adds`), or 0
/// when it cannot say. One callback under the loader's lock: an `RTLD_NOLOAD` open of a name
/// that is not loaded searches the library path (failed `openat`s) and compares every loaded
/// object's name, which in a Python process with NumPy cost about 1% of a loop of small
/// products at one recheck per 10 ms (perf, 2026-11-30); with nothing loaded since the last
/// answer, that answer stands.
fn loader_adds() -> u64 {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        out: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid `info` for the call; `out` is the u64 below.
        unsafe { *(out as *mut u64) = (*info).dlpi_adds };
        1 // the first object is enough: the counters are the process's
    }
    let mut adds = 0u64;
    // SAFETY: `first` only reads `info` and writes `adds`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first), &mut adds as *mut u64 as *mut libc::c_void) };
    adds
}

/// Nanoseconds of `CLOCK_MONOTONIC_COARSE`: the time of the last kernel tick, read from the
/// vDSO without a system call; 0 if it cannot be read (the loader is then asked every call).
fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the current time into `ts`, a valid timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Whether any of a set of libraries is loaded in the process, asked of the loader at most
/// once per [`RECHECK_NS`] while the answer is "no", and never again once it is "yes" (the GPU
/// runtimes are never unloaded). The fast path is two relaxed loads and a vDSO clock read: no
/// system call, lock, allocation or thread-local.
struct LibraryWatch {
    names: &'static [&'static CStr],
    loaded: AtomicBool,
    next_check_ns: AtomicU64,
    /// The loader's count of added objects at the last "no" ([`loader_adds`]; 0: none yet).
    adds_at_no: AtomicU64,
    /// Loader queries made (tests check the fast path skips them).
    queries: AtomicU64,
    /// Whether the first "no" was announced.
    said_no: AtomicBool,
}

impl LibraryWatch {
    const fn new(names: &'static [&'static CStr]) -> LibraryWatch {
        LibraryWatch {
            names,
            loaded: AtomicBool::new(false),
            next_check_ns: AtomicU64::new(0),
            adds_at_no: AtomicU64::new(0),
            queries: AtomicU64::new(0),
            said_no: AtomicBool::new(false),
        }
    }

    /// Whether one of the libraries is loaded now (asking the loader, which runs nothing and
    /// loads nothing).
    fn ask_loader(&self) -> bool {
        self.queries.fetch_add(1, Ordering::Relaxed);
        self.names.iter().any(|name| {
            // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded; nothing
            // is run and nothing is loaded.
            let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            if h.is_null() {
                return false;
            }
            // SAFETY: drops the reference the NOLOAD open took; the library stays loaded
            // (whoever loaded it holds its own reference).
            unsafe { libc::dlclose(h) };
            true
        })
    }

    /// Whether one of the libraries is loaded, a "no" being at most [`RECHECK_NS`] (and a
    /// tick) old. `said_no` runs on the first "no".
    #[inline]
    fn present(&self, said_no: impl FnOnce()) -> bool {
        if self.loaded.load(Ordering::Relaxed) {
            return true;
        }
        let now = coarse_now_ns();
        if now != 0 && now < self.next_check_ns.load(Ordering::Relaxed) {
            return false;
        }
        // Nothing loaded since the last "no": it stands (without asking for each name).
        let adds = loader_adds();
        let unchanged = adds != 0 && adds == self.adds_at_no.load(Ordering::Relaxed);
        let loaded = !unchanged && self.ask_loader();
        if loaded {
            self.loaded.store(true, Ordering::Relaxed);
        } else {
            if !self.said_no.swap(true, Ordering::Relaxed) {
                said_no();
            }
            self.adds_at_no.store(adds, Ordering::Relaxed);
            self.next_check_ns
                .store(now.saturating_add(RECHECK_NS), Ordering::Relaxed);
        }
        loaded
    }
}

/// The GPU runtimes of the process.
static GPU_RUNTIMES: LibraryWatch = LibraryWatch::new(&GPU_LIBRARIES);

/// Whether a GPU runtime is loaded (see [`LibraryWatch`]).
#[inline]
fn gpu_runtime_present() -> bool {
    GPU_RUNTIMES.present(|| {
        if crate::offload::verbose() {
            eprintln!("hetblas: no CUDA or HIP runtime loaded: operand pointers are host memory");
        }
    })
}

/// Set when the Runtime starts with emulated devices.
static EMULATED: AtomicBool = AtomicBool::new(false);

/// Records that the Runtime runs emulated devices (their memory can be handed to BLAS).
pub fn note_emulated_devices() {
    EMULATED.store(true, Ordering::Relaxed);
}

/// Whether an operand pointer can be device memory, so that the Runtime must be asked.
#[inline]
pub fn worth_asking() -> bool {
    EMULATED.load(Ordering::Relaxed) || gpu_runtime_present()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_gpu_runtime_in_the_test_process() {
        // CI has no CUDA or HIP: nothing loads them here, so the answer is "not loaded".
        if GPU_RUNTIMES.ask_loader() {
            eprintln!("a GPU runtime is loaded in this process; nothing to check");
            return;
        }
        assert!(!gpu_runtime_present());
    }

    /// A recheck with nothing loaded since the last "no" does not ask for each name (the
    /// failed `RTLD_NOLOAD` opens search the library path).
    #[test]
    fn a_recheck_with_nothing_loaded_since_asks_no_name() {
        static NAMES: [&CStr; 1] = [c"libhetblas-no-such-library.so.1"];
        static WATCH: LibraryWatch = LibraryWatch::new(&NAMES);
        assert!(!WATCH.present(|| {}));
        assert_eq!(
            WATCH.queries.load(Ordering::Relaxed),
            1,
            "the first answer asks"
        );
        // The count the "no" stood on (read before its names were asked).
        let adds = WATCH.adds_at_no.load(Ordering::Relaxed);
        assert_ne!(adds, 0, "glibc counts the objects it loads");
        // Past the interval and a tick: a recheck is due.
        std::thread::sleep(std::time::Duration::from_millis(40));
        assert!(!WATCH.present(|| {}));
        // Another test's thread may load a library meanwhile; then asking again is right.
        if loader_adds() == adds {
            assert_eq!(
                WATCH.queries.load(Ordering::Relaxed),
                1,
                "nothing loaded: not asked"
            );
        }
    }

    /// A library loaded after a "not loaded" answer (as a program loads libcuda after its first
    /// BLAS call) is seen within the recheck interval and a tick, without asking the loader on
    /// every call meanwhile. glibc's libanl stands for the GPU runtime: always installed,
    /// loaded by nothing here.
    #[test]
    fn a_library_loaded_later_is_seen_within_the_interval() {
        static NAMES: [&CStr; 1] = [c"libanl.so.1"];
        static WATCH: LibraryWatch = LibraryWatch::new(&NAMES);
        if WATCH.ask_loader() {
            eprintln!("libanl.so.1 is already loaded in this process; nothing to check");
            return;
        }
        let mut said = 0;
        assert!(!WATCH.present(|| said += 1));
        let queries = WATCH.queries.load(Ordering::Relaxed);
        // Calls in a tight loop within the interval ask the loader a handful of times at
        // most, not once per call.
        for _ in 0..100_000 {
            assert!(!WATCH.present(|| said += 1));
        }
        let asked = WATCH.queries.load(Ordering::Relaxed) - queries;
        assert!(
            asked < 1_000,
            "asked the loader {asked} times in 100,000 calls"
        );
        assert!(said <= 1);
        // SAFETY: loads a glibc library with no constructors of consequence; kept loaded.
        let h = unsafe { libc::dlopen(NAMES[0].as_ptr(), libc::RTLD_NOW) };
        if h.is_null() {
            eprintln!("libanl.so.1 cannot be loaded here; nothing more to check");
            return;
        }
        // Seen once the interval and a tick (<= 10 ms) have passed; well before any device
        // memory could exist after a GPU runtime's load.
        std::thread::sleep(std::time::Duration::from_millis(40));
        assert!(WATCH.present(|| said += 1));
        let queries = WATCH.queries.load(Ordering::Relaxed);
        assert!(WATCH.present(|| said += 1));
        assert_eq!(
            WATCH.queries.load(Ordering::Relaxed),
            queries,
            "a yes is kept"
        );
    }
}
