//! The CUDA driver layer: library presence, error mapping (one helper, as wgpu-hal does), the
//! primary context of a device, and the calling thread's current context. Everything above
//! this file speaks `hetblas_core::Error`.

use crate::laswp::{LaswpFns, LaswpModule};
use cudarc::driver::sys;
use hetblas_core::{Error, Result};
use std::ffi::CStr;
use std::sync::OnceLock;

/// Maps a driver status to `Ok` or a typed error carrying the driver's code, name and message.
pub fn check(r: sys::CUresult, call: &str) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(driver_error(r, call))
}

/// The typed error for a failed driver call. Out-of-memory and device loss get their own
/// variants (what a caller can act on); the rest are `Backend` errors.
pub fn driver_error(r: sys::CUresult, call: &str) -> Error {
    let (name, message) = describe(r);
    match r {
        sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory {
            device: "cuda".into(),
            detail: format!("{call}: {message}"),
        },
        sys::CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
        | sys::CUresult::CUDA_ERROR_LAUNCH_FAILED
        | sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
        | sys::CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
        | sys::CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
        | sys::CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE => Error::DeviceLost {
            device: "cuda".into(),
            detail: format!("{call}: {name}: {message}"),
        },
        _ => Error::Backend {
            backend: "cuda",
            call: call.into(),
            code: r as i64,
            name,
            message,
        },
    }
}

fn describe(r: sys::CUresult) -> (String, String) {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    let mut msg: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: both calls only write a pointer to a static string (or leave it null).
    unsafe {
        sys::cuGetErrorName(r, &mut name);
        sys::cuGetErrorString(r, &mut msg);
    }
    let s = |p: *const std::ffi::c_char| {
        if p.is_null() {
            format!("{r:?}")
        } else {
            // SAFETY: the driver returns static NUL-terminated strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    (s(name), s(msg))
}

/// Where the driver and cuBLAS libraries were found, or why not.
#[derive(Debug, Clone)]
pub struct Libraries {
    pub driver_version: i32,
}

static PRELOADED: OnceLock<Vec<libloading::Library>> = OnceLock::new();

/// Directories where CUDA libraries often live but the dynamic loader may not look.
fn candidate_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    for var in [
        "HETBLAS_CUDA_LIB_DIR",
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDA_ROOT",
    ] {
        if let Ok(v) = std::env::var(var) {
            let p = std::path::PathBuf::from(v);
            dirs.push(p.join("lib64"));
            dirs.push(p.join("lib"));
            dirs.push(p);
        }
    }
    for d in [
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/local/nvidia/lib64",
        "/usr/local/nvidia/lib",
    ] {
        dirs.push(d.into());
    }
    // pip wheels (nvidia-cublas) put libcublas under site-packages/nvidia/cublas/lib.
    for base in ["/usr/lib", "/usr/local/lib", "/opt"] {
        if let Ok(rd) = std::fs::read_dir(base) {
            for e in rd.flatten() {
                let p = e.path();
                for sub in [
                    "site-packages/nvidia/cublas/lib",
                    "dist-packages/nvidia/cublas/lib",
                    "site-packages/nvidia/cusolver/lib",
                    "dist-packages/nvidia/cusolver/lib",
                ] {
                    dirs.push(p.join(sub));
                }
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/opt") {
        for e in rd.flatten() {
            for py in ["lib/python3.12", "lib/python3.11", "lib/python3.10"] {
                for lib in ["cublas", "cusolver"] {
                    dirs.push(
                        e.path()
                            .join(".venv")
                            .join(py)
                            .join(format!("site-packages/nvidia/{lib}/lib")),
                    );
                }
            }
        }
    }
    dirs
}

/// Makes libcuda, libcublas and libcusolver loadable by name: when the loader cannot find one
/// by name, it is opened by full path from the usual install locations (its soname then
/// resolves).
pub(crate) fn preload() -> &'static Vec<libloading::Library> {
    PRELOADED.get_or_init(|| {
        let mut held = Vec::new();
        // SAFETY: presence probes only open the libraries (running their initialisers).
        let (cuda, cublas, cusolver) = unsafe {
            (
                sys::is_culib_present(),
                cudarc::cublas::sys::is_culib_present(),
                cudarc::cusolver::sys::is_culib_present(),
            )
        };
        for (present, names) in [
            (cuda, &["libcuda.so.1", "libcuda.so"][..]),
            (
                cublas,
                &["libcublas.so.13", "libcublasLt.so.13", "libcublas.so"][..],
            ),
            // cuSOLVER 12 ships with CUDA 13; it needs cuSPARSE and nvJitLink beside it.
            (
                cusolver,
                &[
                    "libnvJitLink.so.13",
                    "libcusparse.so.12",
                    "libcusolver.so.12",
                    "libcusolver.so",
                ][..],
            ),
        ] {
            if present {
                continue;
            }
            'names: for n in names {
                for d in candidate_dirs() {
                    let p = d.join(n);
                    if p.exists() {
                        // SAFETY: opening a CUDA library found at a known install location.
                        if let Ok(l) = unsafe { libloading::Library::new(&p) } {
                            held.push(l);
                            continue 'names;
                        }
                    }
                }
            }
        }
        held
    })
}

/// Checks that the driver and cuBLAS can be loaded and initialises the driver.
///
/// # Errors
/// `Unavailable` with the reason (library not found, driver init failure).
pub fn init() -> Result<Libraries> {
    preload();
    // SAFETY: probing opens the libraries without resolving any symbol.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::Unavailable {
            backend: "cuda",
            reason: "CUDA driver library (libcuda.so.1) not found".into(),
        });
    }
    // SAFETY: as above.
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err(Error::Unavailable {
            backend: "cuda",
            reason:
                "cuBLAS (libcublas.so.13) not found; set HETBLAS_CUDA_LIB_DIR or LD_LIBRARY_PATH"
                    .into(),
        });
    }
    // SAFETY: cuInit may be called any number of times.
    let r = unsafe { sys::cuInit(0) };
    if r == sys::CUresult::CUDA_ERROR_NO_DEVICE {
        return Err(Error::Unavailable {
            backend: "cuda",
            reason: "no CUDA device".into(),
        });
    }
    if r != sys::CUresult::CUDA_SUCCESS {
        let (name, msg) = describe(r);
        return Err(Error::Unavailable {
            backend: "cuda",
            reason: format!("cuInit failed: {name}: {msg}"),
        });
    }
    let mut v = 0;
    check(
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut v) },
        "cuDriverGetVersion",
    )?;
    if v < 12000 {
        return Err(Error::Unavailable {
            backend: "cuda",
            reason: format!(
                "driver supports CUDA {}.{}; 12.0 or newer needed",
                v / 1000,
                v % 1000 / 10
            ),
        });
    }
    Ok(Libraries { driver_version: v })
}

/// The primary context of one device, retained for as long as anything uses it, with the
/// row-interchange kernel once a factorization has asked for it there.
#[derive(Debug)]
pub struct Context {
    pub ordinal: i32,
    pub device: sys::CUdevice,
    raw: sys::CUcontext,
    /// The kernel's module, or `None` when the driver refused it (cuSOLVER's `?laswp` then).
    laswp: OnceLock<Option<LaswpModule>>,
}

// SAFETY: a CUcontext handle may be used from any thread (made current with cuCtxSetCurrent).
unsafe impl Send for Context {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for Context {}

impl Context {
    /// Retains the primary context of device `ordinal`.
    pub fn retain(ordinal: i32) -> Result<Context> {
        let mut device = 0;
        check(
            // SAFETY: writes one CUdevice.
            unsafe { sys::cuDeviceGet(&mut device, ordinal) },
            "cuDeviceGet",
        )?;
        let mut raw = std::ptr::null_mut();
        check(
            // SAFETY: writes one context handle; released in Drop.
            unsafe { sys::cuDevicePrimaryCtxRetain(&mut raw, device) },
            "cuDevicePrimaryCtxRetain",
        )?;
        Ok(Context {
            ordinal,
            device,
            raw,
            laswp: OnceLock::new(),
        })
    }

    pub fn raw(&self) -> sys::CUcontext {
        self.raw
    }

    /// The row-interchange kernel in this context, loaded on the first call (the context is
    /// current on this thread); `None` when the driver refuses the module, said once.
    pub(crate) fn laswp(&self) -> Option<LaswpFns> {
        let module = self
            .laswp
            .get_or_init(|| match LaswpModule::load(self.raw) {
                Ok(m) => {
                    tracing::debug!(
                        "CUDA device {}: row-interchange kernel loaded",
                        self.ordinal
                    );
                    Some(m)
                }
                Err(e) => {
                    crate::laswp::warn_fallback(self.ordinal, &e);
                    None
                }
            });
        module.as_ref().map(|m| m.fns)
    }

    /// Makes the context current on this thread. The driver is asked what is current (not a
    /// cache of ours): other code in the process (the CUDA runtime, a HIP-on-CUDA layer) may
    /// switch contexts behind our back.
    pub fn bind(&self) -> Result<()> {
        let mut cur: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: writes one context handle.
        let r = unsafe { sys::cuCtxGetCurrent(&mut cur) };
        if r == sys::CUresult::CUDA_SUCCESS && cur == self.raw {
            return Ok(());
        }
        // SAFETY: the context is retained for self's lifetime.
        check(unsafe { sys::cuCtxSetCurrent(self.raw) }, "cuCtxSetCurrent")
    }

    /// (free, total) bytes of device memory.
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        self.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        check(
            // SAFETY: writes two sizes; context is current.
            unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) },
            "cuMemGetInfo",
        )?;
        Ok((free, total))
    }

    pub fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32> {
        let mut v = 0;
        check(
            // SAFETY: writes one int.
            unsafe { sys::cuDeviceGetAttribute(&mut v, attr, self.device) },
            "cuDeviceGetAttribute",
        )?;
        Ok(v)
    }
}

/// The context current on the calling thread (null when none is).
pub fn current_context() -> Result<sys::CUcontext> {
    let mut cur: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: writes one context handle.
    check(unsafe { sys::cuCtxGetCurrent(&mut cur) }, "cuCtxGetCurrent")?;
    Ok(cur)
}

/// Makes `ctx` current on the calling thread (null: none).
///
/// # Safety
/// `ctx` is null or a context that has not been destroyed.
pub unsafe fn set_current_context(ctx: sys::CUcontext) -> Result<()> {
    // SAFETY: caller contract.
    check(unsafe { sys::cuCtxSetCurrent(ctx) }, "cuCtxSetCurrent")
}

impl Drop for Context {
    fn drop(&mut self) {
        // The module goes while the context is still retained.
        drop(self.laswp.take());
        // SAFETY: balances the retain in `Context::retain`.
        unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.device) };
    }
}

/// Maps a cuBLAS status to a typed error with the library's name and message.
pub fn check_blas(s: cudarc::cublas::sys::cublasStatus_t, call: &str) -> Result<()> {
    use cudarc::cublas::sys as cb;
    if s == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Ok(());
    }
    let text = |p: *const std::ffi::c_char| {
        if p.is_null() {
            format!("{s:?}")
        } else {
            // SAFETY: cuBLAS returns static NUL-terminated strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    // SAFETY: both take any status and return a static string (or null).
    let (name, message) = unsafe {
        (
            text(cb::cublasGetStatusName(s)),
            text(cb::cublasGetStatusString(s)),
        )
    };
    if s == cb::cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED {
        return Err(Error::OutOfMemory {
            device: "cuda".into(),
            detail: format!("{call}: {message}"),
        });
    }
    Err(Error::Backend {
        backend: "cublas",
        call: call.into(),
        code: s as i64,
        name,
        message,
    })
}
