//! The raw HIP runtime and hipBLAS FFI: exactly the functions this backend calls, resolved at
//! run time with libloading. Nothing here is checked: `result` turns every status into a
//! `Result`, and the RAII types above it own the handles.
//!
//! The ABI (types, enum values, prototypes) follows the public headers, checked against:
//! - `hip/hip_runtime_api.h` and `hip/driver_types.h` of HIP 5.2.3 (Debian's `libamdhip64-dev`,
//!   compiled and printed with gcc) and of current ROCm (`projects/hip/include/hip/
//!   hip_runtime_api.h` in ROCm/rocm-systems): the error codes, `hipMemcpyKind`, the stream,
//!   event, host-register and host-malloc flags, and the device attribute numbers below are
//!   identical in both;
//! - `hipblas-common.h` (ROCm/hipBLAS-common) and `hipblas.h` (ROCm/hipBLAS): the status codes,
//!   `hipblasOperation_t`, and the `hipblas{S,D}gemm` / `_64` / `hipblas{S,D}geam` prototypes.
//!
//! `hipError_t`, `hipMemcpyKind`, `hipDeviceAttribute_t`, `hipblasStatus_t` and
//! `hipblasOperation_t` are C enums (a C `int` on every ABI HIP supports); handles are pointers.
//!
//! Loading never panics. The runtime is searched as `$HETBLAS_HIP_LIB_DIR/libamdhip64.so*`, then
//! by soname through the dynamic loader (`LD_LIBRARY_PATH`, the ld cache), then under
//! `$ROCM_PATH/lib`, `$HIP_PATH/lib` and `/opt/rocm/lib`; hipBLAS the same way.

use hetblas_core::scalar::{c32, c64};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `hipError_t`.
pub type HipError = c_int;
/// `hipStream_t` (`struct ihipStream_t*`).
pub type HipStream = *mut c_void;
/// `hipEvent_t` (`struct ihipEvent_t*`).
pub type HipEvent = *mut c_void;
/// `hipMemcpyKind`.
pub type HipMemcpyKind = c_int;
/// `hipDeviceAttribute_t`.
pub type HipDeviceAttribute = c_int;
/// `hipHostFn_t`: `void (*)(void* userData)`.
pub type HipHostFn = unsafe extern "C" fn(user: *mut c_void);
/// `hipStreamCallback_t`: `void (*)(hipStream_t, hipError_t, void* userData)`.
pub type HipStreamCallback =
    unsafe extern "C" fn(stream: HipStream, status: HipError, user: *mut c_void);
/// `hipblasHandle_t` (`void*`).
pub type HipblasHandle = *mut c_void;
/// `hipblasStatus_t`.
pub type HipblasStatus = c_int;
/// `hipblasOperation_t`.
pub type HipblasOperation = c_int;

/// `hipError_t` values (hip_runtime_api.h; identical in HIP 5.2 and current ROCm).
pub mod err {
    use super::HipError;
    pub const SUCCESS: HipError = 0;
    pub const INVALID_VALUE: HipError = 1;
    pub const OUT_OF_MEMORY: HipError = 2;
    pub const NOT_INITIALIZED: HipError = 3;
    pub const INSUFFICIENT_DRIVER: HipError = 35;
    pub const NO_DEVICE: HipError = 100;
    pub const INVALID_DEVICE: HipError = 101;
    pub const ALREADY_MAPPED: HipError = 208;
    pub const ECC_NOT_CORRECTABLE: HipError = 214;
    pub const NOT_READY: HipError = 600;
    pub const ILLEGAL_ADDRESS: HipError = 700;
    pub const LAUNCH_TIME_OUT: HipError = 702;
    pub const PEER_ACCESS_ALREADY_ENABLED: HipError = 704;
    pub const CONTEXT_IS_DESTROYED: HipError = 709;
    pub const HOST_MEMORY_ALREADY_REGISTERED: HipError = 712;
    pub const HOST_MEMORY_NOT_REGISTERED: HipError = 713;
    pub const LAUNCH_FAILURE: HipError = 719;
    pub const UNKNOWN: HipError = 999;
}

/// `hipMemcpyKind` values (driver_types.h).
pub mod memcpy {
    use super::HipMemcpyKind;
    pub const HOST_TO_HOST: HipMemcpyKind = 0;
    pub const HOST_TO_DEVICE: HipMemcpyKind = 1;
    pub const DEVICE_TO_HOST: HipMemcpyKind = 2;
    pub const DEVICE_TO_DEVICE: HipMemcpyKind = 3;
    pub const DEFAULT: HipMemcpyKind = 4;
}

/// Flag bits of `hipStreamCreateWithFlags`, `hipEventCreateWithFlags`, `hipHostRegister` and
/// `hipHostMalloc` (hip_runtime_api.h `#define`s).
pub mod flags {
    use std::ffi::c_uint;
    pub const STREAM_NON_BLOCKING: c_uint = 1;
    pub const EVENT_DEFAULT: c_uint = 0;
    pub const EVENT_DISABLE_TIMING: c_uint = 2;
    pub const HOST_REGISTER_PORTABLE: c_uint = 1;
    pub const HOST_REGISTER_MAPPED: c_uint = 2;
    pub const HOST_MALLOC_PORTABLE: c_uint = 1;
}

/// `hipDeviceAttribute_t` values used here (the CUDA-compatible block starting at 0; the
/// numbering is the same in HIP 5.2 and current ROCm).
pub mod attr {
    use super::HipDeviceAttribute;
    pub const COMPUTE_CAPABILITY_MAJOR: HipDeviceAttribute = 23;
    pub const COMPUTE_CAPABILITY_MINOR: HipDeviceAttribute = 61;
    pub const MULTIPROCESSOR_COUNT: HipDeviceAttribute = 63;
    pub const PCI_BUS_ID: HipDeviceAttribute = 67;
}

/// `hipPointerAttribute_t` (hip_runtime_api.h). The layout is the same in HIP 5.2 and current
/// ROCm (the first member became a union of `memoryType` and `type`); the *values* of its
/// memory type changed in HIP 6.0 (see [`memory_type`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HipPointerAttribute {
    pub memory_type: c_int,
    pub device: c_int,
    pub device_pointer: *mut c_void,
    pub host_pointer: *mut c_void,
    pub is_managed: c_int,
    pub allocation_flags: c_uint,
}

/// `hipMemoryType` values meaning device memory: HIP 5 numbered them after CUDA's first list
/// (`hipMemoryTypeHost` 0, `hipMemoryTypeDevice` 1), HIP 6 (`HIP_VERSION` from 60,000,000)
/// after the CUDA runtime's (`hipMemoryTypeUnregistered` 0, `Host` 1, `Device` 2).
pub mod memory_type {
    use std::ffi::c_int;
    pub const DEVICE_HIP5: c_int = 1;
    pub const DEVICE_HIP6: c_int = 2;
    /// The first `HIP_VERSION` with the HIP 6 numbering.
    pub const HIP6_VERSION: i32 = 60_000_000;
}

/// `hipblasStatus_t` values (hipblas-common.h).
pub mod blas_status {
    use super::HipblasStatus;
    pub const SUCCESS: HipblasStatus = 0;
    pub const NOT_INITIALIZED: HipblasStatus = 1;
    pub const ALLOC_FAILED: HipblasStatus = 2;
    pub const INVALID_VALUE: HipblasStatus = 3;
    pub const MAPPING_ERROR: HipblasStatus = 4;
    pub const EXECUTION_FAILED: HipblasStatus = 5;
    pub const INTERNAL_ERROR: HipblasStatus = 6;
    pub const NOT_SUPPORTED: HipblasStatus = 7;
    pub const ARCH_MISMATCH: HipblasStatus = 8;
    pub const HANDLE_IS_NULLPTR: HipblasStatus = 9;
    pub const INVALID_ENUM: HipblasStatus = 10;
    pub const UNKNOWN: HipblasStatus = 11;
}

/// `hipblasOperation_t` values (hipblas-common.h: the CBLAS numbers).
pub mod op {
    use super::HipblasOperation;
    pub const N: HipblasOperation = 111;
    pub const T: HipblasOperation = 112;
    pub const C: HipblasOperation = 113;
}

/// `hipblasSideMode_t`, `hipblasFillMode_t` and `hipblasDiagType_t` values (hipblas-common.h:
/// the CBLAS numbers).
pub mod tri {
    use std::ffi::c_int;
    pub const LEFT: c_int = 141;
    pub const RIGHT: c_int = 142;
    pub const UPPER: c_int = 121;
    pub const LOWER: c_int = 122;
    pub const NON_UNIT: c_int = 131;
    pub const UNIT: c_int = 132;
}

/// `hipblas?trsm`: handle, side, uplo, transA, diag, m, n, alpha, A, lda, B, ldb.
type Trsm<T> = unsafe extern "C" fn(
    HipblasHandle,
    c_int,
    c_int,
    HipblasOperation,
    c_int,
    c_int,
    c_int,
    *const T,
    *const T,
    c_int,
    *mut T,
    c_int,
) -> HipblasStatus;

/// `hipblas?trmm` of hipBLAS 2 and newer: out of place into C (C == B computes in place).
type Trmm<T> = unsafe extern "C" fn(
    HipblasHandle,
    c_int,
    c_int,
    HipblasOperation,
    c_int,
    c_int,
    c_int,
    *const T,
    *const T,
    c_int,
    *const T,
    c_int,
    *mut T,
    c_int,
) -> HipblasStatus;

type Gemm32<T> = unsafe extern "C" fn(
    HipblasHandle,
    HipblasOperation,
    HipblasOperation,
    c_int,
    c_int,
    c_int,
    *const T,
    *const T,
    c_int,
    *const T,
    c_int,
    *const T,
    *mut T,
    c_int,
) -> HipblasStatus;

type Gemm64<T> = unsafe extern "C" fn(
    HipblasHandle,
    HipblasOperation,
    HipblasOperation,
    i64,
    i64,
    i64,
    *const T,
    *const T,
    i64,
    *const T,
    i64,
    *const T,
    *mut T,
    i64,
) -> HipblasStatus;

type Geam<T> = unsafe extern "C" fn(
    HipblasHandle,
    HipblasOperation,
    HipblasOperation,
    c_int,
    c_int,
    *const T,
    *const T,
    c_int,
    *const T,
    *const T,
    c_int,
    *mut T,
    c_int,
) -> HipblasStatus;

/// The HIP runtime entry points, resolved from one `libamdhip64` that stays loaded for the
/// life of the process.
#[allow(
    non_snake_case,
    reason = "fields are named after the C functions they hold"
)]
pub struct HipApi {
    /// Where the library was found.
    pub path: String,
    pub hipInit: unsafe extern "C" fn(c_uint) -> HipError,
    pub hipGetDeviceCount: unsafe extern "C" fn(*mut c_int) -> HipError,
    pub hipSetDevice: unsafe extern "C" fn(c_int) -> HipError,
    pub hipGetDevice: unsafe extern "C" fn(*mut c_int) -> HipError,
    pub hipDeviceGetAttribute:
        unsafe extern "C" fn(*mut c_int, HipDeviceAttribute, c_int) -> HipError,
    pub hipDeviceGetName: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipError,
    pub hipDeviceTotalMem: unsafe extern "C" fn(*mut usize, c_int) -> HipError,
    pub hipMemGetInfo: unsafe extern "C" fn(*mut usize, *mut usize) -> HipError,
    pub hipMalloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> HipError,
    pub hipFree: unsafe extern "C" fn(*mut c_void) -> HipError,
    pub hipHostMalloc: unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> HipError,
    pub hipHostFree: unsafe extern "C" fn(*mut c_void) -> HipError,
    pub hipHostRegister: unsafe extern "C" fn(*mut c_void, usize, c_uint) -> HipError,
    pub hipHostUnregister: unsafe extern "C" fn(*mut c_void) -> HipError,
    pub hipHostGetDevicePointer:
        unsafe extern "C" fn(*mut *mut c_void, *mut c_void, c_uint) -> HipError,
    pub hipStreamCreateWithFlags: unsafe extern "C" fn(*mut HipStream, c_uint) -> HipError,
    pub hipStreamDestroy: unsafe extern "C" fn(HipStream) -> HipError,
    pub hipStreamSynchronize: unsafe extern "C" fn(HipStream) -> HipError,
    pub hipStreamWaitEvent: unsafe extern "C" fn(HipStream, HipEvent, c_uint) -> HipError,
    pub hipEventCreateWithFlags: unsafe extern "C" fn(*mut HipEvent, c_uint) -> HipError,
    pub hipEventRecord: unsafe extern "C" fn(HipEvent, HipStream) -> HipError,
    pub hipEventSynchronize: unsafe extern "C" fn(HipEvent) -> HipError,
    pub hipEventQuery: unsafe extern "C" fn(HipEvent) -> HipError,
    pub hipEventElapsedTime: unsafe extern "C" fn(*mut f32, HipEvent, HipEvent) -> HipError,
    pub hipEventDestroy: unsafe extern "C" fn(HipEvent) -> HipError,
    /// `(dst, dpitch, src, spitch, width, height, kind, stream)`.
    pub hipMemcpy2DAsync: unsafe extern "C" fn(
        *mut c_void,
        usize,
        *const c_void,
        usize,
        usize,
        usize,
        HipMemcpyKind,
        HipStream,
    ) -> HipError,
    /// `(dst, dpitch, src, spitch, width, height, kind)`.
    pub hipMemcpy2D: unsafe extern "C" fn(
        *mut c_void,
        usize,
        *const c_void,
        usize,
        usize,
        usize,
        HipMemcpyKind,
    ) -> HipError,
    pub hipMemcpyAsync: unsafe extern "C" fn(
        *mut c_void,
        *const c_void,
        usize,
        HipMemcpyKind,
        HipStream,
    ) -> HipError,
    /// `(dst, dstDevice, src, srcDevice, bytes, stream)`.
    pub hipMemcpyPeerAsync: unsafe extern "C" fn(
        *mut c_void,
        c_int,
        *const c_void,
        c_int,
        usize,
        HipStream,
    ) -> HipError,
    pub hipDeviceCanAccessPeer: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> HipError,
    pub hipDeviceEnablePeerAccess: unsafe extern "C" fn(c_int, c_uint) -> HipError,
    /// Absent before HIP 5.4 or so (Debian's 5.2 lacks it); then `hipStreamAddCallback` is used.
    pub hipLaunchHostFunc:
        Option<unsafe extern "C" fn(HipStream, HipHostFn, *mut c_void) -> HipError>,
    pub hipStreamAddCallback:
        Option<unsafe extern "C" fn(HipStream, HipStreamCallback, *mut c_void, c_uint) -> HipError>,
    pub hipPointerGetAttributes:
        Option<unsafe extern "C" fn(*mut HipPointerAttribute, *const c_void) -> HipError>,
    pub hipGetErrorName: unsafe extern "C" fn(HipError) -> *const c_char,
    pub hipGetErrorString: unsafe extern "C" fn(HipError) -> *const c_char,
    pub hipDriverGetVersion: unsafe extern "C" fn(*mut c_int) -> HipError,
    pub hipRuntimeGetVersion: unsafe extern "C" fn(*mut c_int) -> HipError,
    _lib: Library,
}

/// The hipBLAS entry points.
#[allow(
    non_snake_case,
    reason = "fields are named after the C functions they hold"
)]
pub struct BlasApi {
    pub path: String,
    pub hipblasCreate: unsafe extern "C" fn(*mut HipblasHandle) -> HipblasStatus,
    pub hipblasDestroy: unsafe extern "C" fn(HipblasHandle) -> HipblasStatus,
    pub hipblasSetStream: unsafe extern "C" fn(HipblasHandle, HipStream) -> HipblasStatus,
    pub hipblasDgemm: Gemm32<f64>,
    pub hipblasSgemm: Gemm32<f32>,
    /// The ILP64 variants (hipBLAS 2.2 and newer), for tiles with a dimension over `i32::MAX`.
    pub hipblasDgemm_64: Option<Gemm64<f64>>,
    pub hipblasSgemm_64: Option<Gemm64<f32>>,
    pub hipblasStatusToString: Option<unsafe extern "C" fn(HipblasStatus) -> *const c_char>,
    /// `C = alpha * op(A) + beta * op(B)`, for the tile add of late C (in place on C == A).
    pub hipblasDgeam: Option<Geam<f64>>,
    pub hipblasSgeam: Option<Geam<f32>>,
    /// Complex GEMM and geam (`hipblasComplex` / `hipblasDoubleComplex`: two reals, real part
    /// first, the layout of `c32` / `c64`). Optional so that a library without them still
    /// serves the real types; the device then reports the complex ones unsupported.
    pub hipblasCgemm: Option<Gemm32<c32>>,
    pub hipblasZgemm: Option<Gemm32<c64>>,
    pub hipblasCgemm_64: Option<Gemm64<c32>>,
    pub hipblasZgemm_64: Option<Gemm64<c64>>,
    pub hipblasCgeam: Option<Geam<c32>>,
    pub hipblasZgeam: Option<Geam<c64>>,
    /// TRSM and TRMM (optional: without them the device runs no triangular tile).
    pub hipblasStrsm: Option<Trsm<f32>>,
    pub hipblasDtrsm: Option<Trsm<f64>>,
    pub hipblasCtrsm: Option<Trsm<c32>>,
    pub hipblasZtrsm: Option<Trsm<c64>>,
    pub hipblasStrmm: Option<Trmm<f32>>,
    pub hipblasDtrmm: Option<Trmm<f64>>,
    pub hipblasCtrmm: Option<Trmm<c32>>,
    pub hipblasZtrmm: Option<Trmm<c64>>,
    /// SYRK/HERK, SYR2K/HER2K, SYMM/HEMM.
    pub sym: crate::sym::SymApi,
    _lib: Library,
}

/// Sonames of the HIP runtime, newest first.
pub const HIP_NAMES: &[&str] = &[
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
    "libamdhip64.so",
];
/// Sonames of hipBLAS, newest first.
pub const HIPBLAS_NAMES: &[&str] = &[
    "libhipblas.so.3",
    "libhipblas.so.2",
    "libhipblas.so.1",
    "libhipblas.so.0",
    "libhipblas.so",
];

/// Why a library could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// No file of that name anywhere we looked.
    NotFound,
    /// A file was found but could not be opened (a missing dependency, wrong architecture) or
    /// lacks a required symbol (too old); the text says which.
    Unusable(String),
}

/// Full paths to try in `dir` for the library `stem` ("libamdhip64.so"): the known sonames
/// first, then any other `stem*` file there (newest-looking name first).
fn in_dir(dir: &Path, names: &[&str], stem: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = names
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| p.exists())
        .collect();
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut extra: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| f.starts_with(stem))
                    && !out.contains(p)
            })
            .collect();
        extra.sort();
        extra.reverse();
        out.extend(extra);
    }
    out
}

/// libloading's message with its source (dlerror's text: "libX.so: cannot open shared
/// object file: No such file or directory").
fn error_text(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(src) => src.to_string(),
        None => e.to_string(),
    }
}

/// Opens `p` (a path, or a bare soname for the dynamic loader) and resolves its symbols.
/// Failures of a library that exists are kept in `unusable` (the first one wins).
fn attempt<T>(
    p: &Path,
    resolve: &impl Fn(Library, String) -> Result<T, String>,
    unusable: &mut Option<String>,
) -> Option<T> {
    // SAFETY: opening the vendor's library runs its initialisers, which is what every HIP
    // program does; nothing else is called until its symbols are resolved.
    match unsafe { Library::new(p) } {
        Ok(lib) => match resolve(lib, p.display().to_string()) {
            Ok(api) => Some(api),
            Err(why) => {
                unusable.get_or_insert(why);
                None
            }
        },
        Err(e) => {
            let msg = error_text(&e);
            let name = p.display().to_string();
            // A bare soname the loader cannot find fails with "NAME: cannot open shared object
            // file"; any other message means the library was found but is broken (a missing
            // dependency names the dependency instead).
            let absent = !p.is_absolute()
                && msg.contains(&format!("{name}: cannot open shared object file"));
            if !absent {
                unusable.get_or_insert(format!("{name}: {msg}"));
            }
            None
        }
    }
}

/// Opens the first usable library among the candidates and resolves its symbols with
/// `resolve`. A candidate that exists but fails is remembered: if nothing works, that failure
/// (not "not found") is the reason given.
pub(crate) fn open_first<T>(
    names: &[&str],
    stem: &str,
    user_dir: Option<PathBuf>,
    resolve: impl Fn(Library, String) -> Result<T, String>,
) -> Result<T, LoadError> {
    let mut unusable: Option<String> = None;
    // 1. The directory the user named (the HIP-on-CUDA shim, a private ROCm install).
    if let Some(dir) = user_dir {
        for p in in_dir(&dir, names, stem) {
            if let Some(api) = attempt(&p, &resolve, &mut unusable) {
                return Ok(api);
            }
        }
    }
    // 2. The dynamic loader's search (LD_LIBRARY_PATH, ld.so.cache, system directories).
    for n in names {
        if let Some(api) = attempt(Path::new(n), &resolve, &mut unusable) {
            return Ok(api);
        }
    }
    // 3. The usual ROCm install locations, for when they are not on the loader's path.
    let mut dirs = Vec::new();
    for var in ["ROCM_PATH", "HIP_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(&v).join("lib"));
            dirs.push(PathBuf::from(v).join("lib64"));
        }
    }
    dirs.push("/opt/rocm/lib".into());
    dirs.push("/opt/rocm/lib64".into());
    for d in dirs {
        for p in in_dir(&d, names, stem) {
            if let Some(api) = attempt(&p, &resolve, &mut unusable) {
                return Ok(api);
            }
        }
    }
    Err(match unusable {
        Some(why) => LoadError::Unusable(why),
        None => LoadError::NotFound,
    })
}

/// Resolves one required symbol as a copied function pointer.
macro_rules! required {
    ($lib:expr, $path:expr, $name:literal) => {
        // SAFETY: the field's type is the C prototype of `$name` in the HIP headers (see the
        // module documentation); the library stays loaded as long as the pointer is used.
        match unsafe { $lib.get($name) } {
            Ok(s) => *s,
            Err(_) => return Err(format!("{} has no {} (too old?)", $path, $name)),
        }
    };
}

/// Resolves one optional symbol.
macro_rules! optional {
    ($lib:expr, $name:literal) => {
        // SAFETY: as for `required!`.
        unsafe { $lib.get($name) }.ok().map(|s| *s)
    };
}

fn resolve_hip(lib: Library, path: String) -> Result<HipApi, String> {
    let api = HipApi {
        hipInit: required!(lib, path, "hipInit"),
        hipGetDeviceCount: required!(lib, path, "hipGetDeviceCount"),
        hipSetDevice: required!(lib, path, "hipSetDevice"),
        hipGetDevice: required!(lib, path, "hipGetDevice"),
        hipDeviceGetAttribute: required!(lib, path, "hipDeviceGetAttribute"),
        hipDeviceGetName: required!(lib, path, "hipDeviceGetName"),
        hipDeviceTotalMem: required!(lib, path, "hipDeviceTotalMem"),
        hipMemGetInfo: required!(lib, path, "hipMemGetInfo"),
        hipMalloc: required!(lib, path, "hipMalloc"),
        hipFree: required!(lib, path, "hipFree"),
        hipHostMalloc: required!(lib, path, "hipHostMalloc"),
        hipHostFree: required!(lib, path, "hipHostFree"),
        hipHostRegister: required!(lib, path, "hipHostRegister"),
        hipHostUnregister: required!(lib, path, "hipHostUnregister"),
        hipHostGetDevicePointer: required!(lib, path, "hipHostGetDevicePointer"),
        hipStreamCreateWithFlags: required!(lib, path, "hipStreamCreateWithFlags"),
        hipStreamDestroy: required!(lib, path, "hipStreamDestroy"),
        hipStreamSynchronize: required!(lib, path, "hipStreamSynchronize"),
        hipStreamWaitEvent: required!(lib, path, "hipStreamWaitEvent"),
        hipEventCreateWithFlags: required!(lib, path, "hipEventCreateWithFlags"),
        hipEventRecord: required!(lib, path, "hipEventRecord"),
        hipEventSynchronize: required!(lib, path, "hipEventSynchronize"),
        hipEventQuery: required!(lib, path, "hipEventQuery"),
        hipEventElapsedTime: required!(lib, path, "hipEventElapsedTime"),
        hipEventDestroy: required!(lib, path, "hipEventDestroy"),
        hipMemcpy2DAsync: required!(lib, path, "hipMemcpy2DAsync"),
        hipMemcpy2D: required!(lib, path, "hipMemcpy2D"),
        hipMemcpyAsync: required!(lib, path, "hipMemcpyAsync"),
        hipMemcpyPeerAsync: required!(lib, path, "hipMemcpyPeerAsync"),
        hipDeviceCanAccessPeer: required!(lib, path, "hipDeviceCanAccessPeer"),
        hipDeviceEnablePeerAccess: required!(lib, path, "hipDeviceEnablePeerAccess"),
        hipLaunchHostFunc: optional!(lib, "hipLaunchHostFunc"),
        hipStreamAddCallback: optional!(lib, "hipStreamAddCallback"),
        hipPointerGetAttributes: optional!(lib, "hipPointerGetAttributes"),
        hipGetErrorName: required!(lib, path, "hipGetErrorName"),
        hipGetErrorString: required!(lib, path, "hipGetErrorString"),
        hipDriverGetVersion: required!(lib, path, "hipDriverGetVersion"),
        hipRuntimeGetVersion: required!(lib, path, "hipRuntimeGetVersion"),
        path,
        _lib: lib,
    };
    if api.hipLaunchHostFunc.is_none() && api.hipStreamAddCallback.is_none() {
        return Err(format!(
            "{} has neither hipLaunchHostFunc nor hipStreamAddCallback",
            api.path
        ));
    }
    Ok(api)
}

fn resolve_blas(lib: Library, path: String) -> Result<BlasApi, String> {
    Ok(BlasApi {
        hipblasCreate: required!(lib, path, "hipblasCreate"),
        hipblasDestroy: required!(lib, path, "hipblasDestroy"),
        hipblasSetStream: required!(lib, path, "hipblasSetStream"),
        hipblasDgemm: required!(lib, path, "hipblasDgemm"),
        hipblasSgemm: required!(lib, path, "hipblasSgemm"),
        hipblasDgemm_64: optional!(lib, "hipblasDgemm_64"),
        hipblasSgemm_64: optional!(lib, "hipblasSgemm_64"),
        hipblasStatusToString: optional!(lib, "hipblasStatusToString"),
        hipblasDgeam: optional!(lib, "hipblasDgeam"),
        hipblasSgeam: optional!(lib, "hipblasSgeam"),
        hipblasCgemm: optional!(lib, "hipblasCgemm"),
        hipblasZgemm: optional!(lib, "hipblasZgemm"),
        hipblasCgemm_64: optional!(lib, "hipblasCgemm_64"),
        hipblasZgemm_64: optional!(lib, "hipblasZgemm_64"),
        hipblasCgeam: optional!(lib, "hipblasCgeam"),
        hipblasZgeam: optional!(lib, "hipblasZgeam"),
        hipblasStrsm: optional!(lib, "hipblasStrsm"),
        hipblasDtrsm: optional!(lib, "hipblasDtrsm"),
        hipblasCtrsm: optional!(lib, "hipblasCtrsm"),
        hipblasZtrsm: optional!(lib, "hipblasZtrsm"),
        hipblasStrmm: optional!(lib, "hipblasStrmm"),
        hipblasDtrmm: optional!(lib, "hipblasDtrmm"),
        hipblasCtrmm: optional!(lib, "hipblasCtrmm"),
        hipblasZtrmm: optional!(lib, "hipblasZtrmm"),
        sym: crate::sym::SymApi::resolve(&lib),
        path,
        _lib: lib,
    })
}

static HIP: OnceLock<Result<HipApi, LoadError>> = OnceLock::new();
static BLAS: OnceLock<Result<BlasApi, LoadError>> = OnceLock::new();

/// `$HETBLAS_HIP_LIB_DIR`, searched before everything else.
pub fn user_lib_dir() -> Option<PathBuf> {
    std::env::var_os("HETBLAS_HIP_LIB_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The HIP runtime, loaded on first use (once per process; the outcome is kept).
pub fn hip() -> Result<&'static HipApi, LoadError> {
    HIP.get_or_init(|| open_first(HIP_NAMES, "libamdhip64.so", user_lib_dir(), resolve_hip))
        .as_ref()
        .map_err(Clone::clone)
}

/// hipBLAS, loaded on first use.
pub fn hipblas() -> Result<&'static BlasApi, LoadError> {
    BLAS.get_or_init(|| open_first(HIPBLAS_NAMES, "libhipblas.so", user_lib_dir(), resolve_blas))
        .as_ref()
        .map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_symbols(_: Library, path: String) -> Result<(), String> {
        Err(format!("{path} resolved"))
    }

    #[test]
    fn absent_library_is_not_found() {
        let dir = std::env::temp_dir().join(format!("hetblas-hip-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names = ["libhetblas-test-absent.so.1"];
        let r = open_first(
            &names,
            "libhetblas-test-absent.so",
            Some(dir.clone()),
            no_symbols,
        );
        assert_eq!(r, Err(LoadError::NotFound));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn broken_library_is_reported_with_its_path() {
        let dir = std::env::temp_dir().join(format!("hetblas-hip-broken-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libhetblas-test-broken.so.1");
        std::fs::write(&lib, b"not an ELF file").unwrap();
        let names = ["libhetblas-test-broken.so.1"];
        let r = open_first(
            &names,
            "libhetblas-test-broken.so",
            Some(dir.clone()),
            no_symbols,
        );
        match r {
            Err(LoadError::Unusable(why)) => {
                assert!(why.contains(&*lib.to_string_lossy()), "{why}")
            }
            other => panic!("expected Unusable, got {other:?}"),
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
