//! The factorization tiles on rocSOLVER: `rocsolver_?potrf`, `rocsolver_?getrf` and
//! `rocsolver_?laswp`, issued through a rocBLAS handle (`librocblas`: create, destroy, set
//! stream) bound to the compute stream. Both libraries are loaded at run time on the first
//! factorization tile, searched like the runtime (`HETBLAS_HIP_LIB_DIR` first, where the
//! HIP-on-CUDA shim puts its own forwarding to cuSOLVER).
//!
//! rocSOLVER rather than hipSOLVER: hipSOLVER has no LASWP, and rocSOLVER has all three, each
//! one call with LAPACK's arguments (it manages its workspace through the rocBLAS handle, so
//! no workspace query). Pivots (`rocblas_int`, 32-bit in the default build) and `info` are
//! LAPACK's and live in device memory, as on CUDA.
//!
//! The ABI follows `rocblas-types.h` (`rocblas_status` and `rocblas_fill` are C enums, a C
//! `int`; `rocblas_fill_upper` = 121, `rocblas_fill_lower` = 122, the CBLAS numbers;
//! `rocblas_int` = `int32_t`; complex types are two floats or doubles, as `c32` / `c64`) and
//! `rocsolver-functions.h` for the prototypes.

use crate::sys::{open_first, user_lib_dir, HipStream, LoadError};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{Error, GetrfTile, LaswpTile, PotrfTile, Result, Uplo};
use hetblas_gpu::per_dtype;
use libloading::Library;
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// `rocblas_handle`.
pub type RocblasHandle = *mut c_void;
/// `rocblas_status`.
type Status = c_int;
/// `rocblas_fill`.
type Fill = c_int;

const SUCCESS: Status = 0;
/// `rocblas_status_memory_error`.
const MEMORY_ERROR: Status = 5;
const FILL_UPPER: Fill = 121;
const FILL_LOWER: Fill = 122;

type Potrf<T> =
    unsafe extern "C" fn(RocblasHandle, Fill, c_int, *mut T, c_int, *mut c_int) -> Status;
type Getrf<T> = unsafe extern "C" fn(
    RocblasHandle,
    c_int,
    c_int,
    *mut T,
    c_int,
    *mut c_int,
    *mut c_int,
) -> Status;
type Laswp<T> = unsafe extern "C" fn(
    RocblasHandle,
    c_int,
    *mut T,
    c_int,
    c_int,
    c_int,
    *const c_int,
    c_int,
) -> Status;

/// Declares `RocsolverApi` and its resolution from one list, so that a field and the symbol it
/// is looked up by cannot drift apart (each field is named after its C function).
macro_rules! rocsolver_api {
    ($($name:ident: $ty:ty,)*) => {
        /// The rocSOLVER entry points used (all required).
        #[allow(non_snake_case, reason = "fields are named after the C functions they hold")]
        pub struct RocsolverApi {
            $(pub $name: $ty,)*
            _lib: Library,
        }

        fn resolve_rocsolver(lib: Library, path: String) -> std::result::Result<RocsolverApi, String> {
            Ok(RocsolverApi {
                $(
                    // SAFETY: the field's type is the prototype of rocsolver-functions.h;
                    // the library stays loaded as long as the table (a process-wide static).
                    $name: match unsafe { lib.get::<$ty>(stringify!($name).as_bytes()) } {
                        Ok(s) => *s,
                        Err(_) => return Err(format!("{path} has no {}", stringify!($name))),
                    },
                )*
                _lib: lib,
            })
        }
    };
}

rocsolver_api! {
    rocsolver_spotrf: Potrf<f32>,
    rocsolver_dpotrf: Potrf<f64>,
    rocsolver_cpotrf: Potrf<c32>,
    rocsolver_zpotrf: Potrf<c64>,
    rocsolver_sgetrf: Getrf<f32>,
    rocsolver_dgetrf: Getrf<f64>,
    rocsolver_cgetrf: Getrf<c32>,
    rocsolver_zgetrf: Getrf<c64>,
    rocsolver_slaswp: Laswp<f32>,
    rocsolver_dlaswp: Laswp<f64>,
    rocsolver_claswp: Laswp<c32>,
    rocsolver_zlaswp: Laswp<c64>,
}

/// The rocBLAS handle functions rocSOLVER needs.
#[allow(
    non_snake_case,
    reason = "fields are named after the C functions they hold"
)]
pub struct RocblasApi {
    pub rocblas_create_handle: unsafe extern "C" fn(*mut RocblasHandle) -> Status,
    pub rocblas_destroy_handle: unsafe extern "C" fn(RocblasHandle) -> Status,
    pub rocblas_set_stream: unsafe extern "C" fn(RocblasHandle, HipStream) -> Status,
    pub rocblas_status_to_string: Option<unsafe extern "C" fn(Status) -> *const c_char>,
    _lib: Library,
}

fn resolve_rocblas(lib: Library, path: String) -> std::result::Result<RocblasApi, String> {
    macro_rules! get {
        ($name:literal) => {
            // SAFETY: the field's type is the prototype of rocblas-auxiliary.h; the library
            // stays loaded as long as the table.
            match unsafe { lib.get($name) } {
                Ok(s) => *s,
                Err(_) => return Err(format!("{path} has no {}", $name)),
            }
        };
    }
    Ok(RocblasApi {
        rocblas_create_handle: get!("rocblas_create_handle"),
        rocblas_destroy_handle: get!("rocblas_destroy_handle"),
        rocblas_set_stream: get!("rocblas_set_stream"),
        // SAFETY: as above.
        rocblas_status_to_string: unsafe { lib.get(b"rocblas_status_to_string") }
            .ok()
            .map(|s| *s),
        _lib: lib,
    })
}

pub const ROCBLAS_NAMES: &[&str] = &[
    "librocblas.so.5",
    "librocblas.so.4",
    "librocblas.so.3",
    "librocblas.so",
];
pub const ROCSOLVER_NAMES: &[&str] = &["librocsolver.so.1", "librocsolver.so.0", "librocsolver.so"];

/// Both libraries, loaded on first use (the outcome is kept): rocBLAS first, as rocSOLVER
/// needs it.
fn apis() -> std::result::Result<&'static (RocblasApi, RocsolverApi), String> {
    static APIS: OnceLock<std::result::Result<(RocblasApi, RocsolverApi), String>> =
        OnceLock::new();
    let why = |name: &str, e: LoadError| match e {
        LoadError::NotFound => format!("{name} not found"),
        LoadError::Unusable(why) => format!("{name} unusable: {why}"),
    };
    APIS.get_or_init(|| {
        let blas = open_first(
            ROCBLAS_NAMES,
            "librocblas.so",
            user_lib_dir(),
            resolve_rocblas,
        )
        .map_err(|e| why("rocBLAS (librocblas.so)", e))?;
        let solver = open_first(
            ROCSOLVER_NAMES,
            "librocsolver.so",
            user_lib_dir(),
            resolve_rocsolver,
        )
        .map_err(|e| why("rocSOLVER (librocsolver.so)", e))?;
        Ok((blas, solver))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Whether rocBLAS and rocSOLVER loaded (every op, every dtype, when they did).
pub(crate) fn available() -> bool {
    match apis() {
        Ok(_) => true,
        Err(why) => {
            static SAID: OnceLock<()> = OnceLock::new();
            SAID.get_or_init(|| tracing::info!("no factorization tiles on HIP devices: {why}"));
            false
        }
    }
}

fn loaded() -> Result<&'static (RocblasApi, RocsolverApi)> {
    apis().map_err(|why| Error::Unsupported {
        device: "hip".into(),
        detail: why,
    })
}

/// Maps a rocBLAS status to a typed error with the call's name and rocBLAS's message.
fn check(s: Status, call: &str) -> Result<()> {
    if s == SUCCESS {
        return Ok(());
    }
    let message = loaded()
        .ok()
        .and_then(|(b, _)| b.rocblas_status_to_string)
        .map(|f| {
            // SAFETY: takes any status, returns a static NUL-terminated string (or null).
            let p = unsafe { f(s) };
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: see above.
                unsafe { std::ffi::CStr::from_ptr(p) }
                    .to_string_lossy()
                    .into_owned()
            }
        })
        .unwrap_or_default();
    if s == MEMORY_ERROR {
        return Err(Error::OutOfMemory {
            device: "hip".into(),
            detail: format!("{call}: {message}"),
        });
    }
    Err(Error::Backend {
        backend: "rocsolver",
        call: call.into(),
        code: s as i64,
        name: format!("rocblas_status {s}"),
        message,
    })
}

/// A rocBLAS handle issuing on `stream`.
///
/// # Safety
/// `stream` is a live stream of the current device that outlives the handle.
pub(crate) unsafe fn create(stream: HipStream) -> Result<RocblasHandle> {
    let (blas, _) = loaded()?;
    let mut h = std::ptr::null_mut();
    // SAFETY: writes one handle; destroyed by `destroy`.
    let created = unsafe { (blas.rocblas_create_handle)(&mut h) };
    check(created, "rocblas_create_handle")?;
    // SAFETY: a live handle and stream of the current device.
    let bound = unsafe { (blas.rocblas_set_stream)(h, stream) };
    if let Err(e) = check(bound, "rocblas_set_stream") {
        // SAFETY: created above, not used again.
        unsafe { (blas.rocblas_destroy_handle)(h) };
        return Err(e);
    }
    Ok(h)
}

/// # Safety
/// `h` is live and destroyed once, its work finished.
pub(crate) unsafe fn destroy(h: RocblasHandle) {
    if let Ok((blas, _)) = loaded() {
        // SAFETY: caller contract.
        unsafe { (blas.rocblas_destroy_handle)(h) };
    }
}

fn fill(uplo: Uplo) -> Fill {
    match uplo {
        Uplo::Upper => FILL_UPPER,
        Uplo::Lower => FILL_LOWER,
    }
}

/// Dimensions as `rocblas_int` (the generic layer checked they fit).
fn d(x: usize) -> c_int {
    x as c_int
}

/// # Safety
/// The GPU layer's contract for `GpuRuntime::potrf`.
pub(crate) unsafe fn potrf(h: RocblasHandle, op: &PotrfTile, dev_info: u64) -> Result<()> {
    let (_, api) = loaded()?;
    let (n, lda, a, info) = (d(op.n()), d(op.a.ld), op.a.addr, dev_info as *mut c_int);
    // SAFETY: caller contract.
    let s = unsafe {
        per_dtype!(op.dtype(), (f, T) => f(h, fill(op.uplo), n, a as *mut T, lda, info),
            [api.rocsolver_spotrf, api.rocsolver_dpotrf, api.rocsolver_cpotrf, api.rocsolver_zpotrf],
            [c32, c64])
    };
    check(s, "rocsolver_Xpotrf")
}

/// # Safety
/// The GPU layer's contract for `GpuRuntime::getrf`.
pub(crate) unsafe fn getrf(h: RocblasHandle, op: &GetrfTile, dev_info: u64) -> Result<()> {
    let (_, api) = loaded()?;
    let (m, n, lda, a) = (d(op.a.rows), d(op.a.cols), d(op.a.ld), op.a.addr);
    let (ipiv, info) = (op.ipiv.addr as *mut c_int, dev_info as *mut c_int);
    // SAFETY: caller contract.
    let s = unsafe {
        per_dtype!(op.dtype(), (f, T) => f(h, m, n, a as *mut T, lda, ipiv, info),
            [api.rocsolver_sgetrf, api.rocsolver_dgetrf, api.rocsolver_cgetrf, api.rocsolver_zgetrf],
            [c32, c64])
    };
    check(s, "rocsolver_Xgetrf")
}

/// # Safety
/// The GPU layer's contract for `GpuRuntime::laswp`.
pub(crate) unsafe fn laswp(h: RocblasHandle, op: &LaswpTile) -> Result<()> {
    let (_, api) = loaded()?;
    let (n, lda, a) = (d(op.a.cols), d(op.a.ld), op.a.addr);
    let (k1, k2, ipiv) = (d(op.k1), d(op.k2), op.ipiv.addr as *const c_int);
    // SAFETY: caller contract (incx = 1: the pivots k1..=k2 in order).
    let s = unsafe {
        per_dtype!(op.dtype(), (f, T) => f(h, n, a as *mut T, lda, k1, k2, ipiv, 1),
            [api.rocsolver_slaswp, api.rocsolver_dlaswp, api.rocsolver_claswp, api.rocsolver_zlaswp],
            [c32, c64])
    };
    check(s, "rocsolver_Xlaswp")
}
