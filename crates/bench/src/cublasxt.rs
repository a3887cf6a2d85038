//! cuBLASXt, loaded from libcublas at run time: the baseline hetblas measures itself against
//! (NVIDIA's multi-GPU, host-operand BLAS-3, which NVBLAS is built on).

use libloading::Library;
use std::ffi::c_void;

type Handle = *mut c_void;
type Create = unsafe extern "C" fn(*mut Handle) -> i32;
type Destroy = unsafe extern "C" fn(Handle) -> i32;
type DeviceSelect = unsafe extern "C" fn(Handle, i32, *const i32) -> i32;
type SetBlockDim = unsafe extern "C" fn(Handle, i32) -> i32;
type Dgemm = unsafe extern "C" fn(
    Handle,
    i32,
    i32,
    usize,
    usize,
    usize,
    *const f64,
    *const f64,
    usize,
    *const f64,
    usize,
    *const f64,
    *mut f64,
    usize,
) -> i32;
type Sgemm = unsafe extern "C" fn(
    Handle,
    i32,
    i32,
    usize,
    usize,
    usize,
    *const f32,
    *const f32,
    usize,
    *const f32,
    usize,
    *const f32,
    *mut f32,
    usize,
) -> i32;

/// An open cuBLASXt handle on a set of GPUs.
pub struct CublasXt {
    _lib: Library,
    handle: Handle,
    destroy: Destroy,
    set_block: SetBlockDim,
    dgemm: Dgemm,
    sgemm: Sgemm,
}

fn status(s: i32, call: &str) -> Result<(), String> {
    if s == 0 {
        Ok(())
    } else {
        Err(format!("{call} returned cuBLAS status {s}"))
    }
}

impl CublasXt {
    /// Opens libcublas and creates a handle on GPUs `devices`.
    pub fn new(devices: &[i32]) -> Result<CublasXt, String> {
        let names = ["libcublas.so.13", "libcublas.so.12", "libcublas.so"];
        let lib = names
            .iter()
            // SAFETY: opening the CUDA BLAS library (runs its initialisers).
            .find_map(|n| unsafe { Library::new(*n) }.ok())
            .ok_or_else(|| format!("libcublas not found (tried {names:?})"))?;
        // SAFETY: the symbol types are cuBLASXt's prototypes (cublasXt.h).
        unsafe {
            let create: Create = *lib.get(b"cublasXtCreate\0").map_err(|e| e.to_string())?;
            let destroy: Destroy = *lib.get(b"cublasXtDestroy\0").map_err(|e| e.to_string())?;
            let select: DeviceSelect = *lib
                .get(b"cublasXtDeviceSelect\0")
                .map_err(|e| e.to_string())?;
            let set_block: SetBlockDim = *lib
                .get(b"cublasXtSetBlockDim\0")
                .map_err(|e| e.to_string())?;
            let dgemm: Dgemm = *lib.get(b"cublasXtDgemm\0").map_err(|e| e.to_string())?;
            let sgemm: Sgemm = *lib.get(b"cublasXtSgemm\0").map_err(|e| e.to_string())?;
            let mut handle = std::ptr::null_mut();
            status(create(&mut handle), "cublasXtCreate")?;
            let xt = CublasXt {
                _lib: lib,
                handle,
                destroy,
                set_block,
                dgemm,
                sgemm,
            };
            status(
                select(handle, devices.len() as i32, devices.as_ptr()),
                "cublasXtDeviceSelect",
            )?;
            Ok(xt)
        }
    }

    pub fn set_block_dim(&self, b: i32) -> Result<(), String> {
        // SAFETY: valid handle.
        status(
            unsafe { (self.set_block)(self.handle, b) },
            "cublasXtSetBlockDim",
        )
    }

    /// Column-major DGEMM/SGEMM on host memory (blocking until done).
    ///
    /// # Safety
    /// Pointers and leading dimensions describe valid host matrices for the given shapes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm<T: 'static>(
        &self,
        ta: bool,
        tb: bool,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: *const T,
        lda: usize,
        b: *const T,
        ldb: usize,
        beta: T,
        c: *mut T,
        ldc: usize,
    ) -> Result<(), String> {
        let (ta, tb) = (ta as i32, tb as i32);
        let any = |x: &T| x as *const T as *const c_void;
        // SAFETY: T is f64 or f32 (checked by TypeId), matching the function called.
        let s = unsafe {
            if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() {
                (self.dgemm)(
                    self.handle,
                    ta,
                    tb,
                    m,
                    n,
                    k,
                    any(&alpha) as *const f64,
                    a as *const f64,
                    lda,
                    b as *const f64,
                    ldb,
                    any(&beta) as *const f64,
                    c as *mut f64,
                    ldc,
                )
            } else if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
                (self.sgemm)(
                    self.handle,
                    ta,
                    tb,
                    m,
                    n,
                    k,
                    any(&alpha) as *const f32,
                    a as *const f32,
                    lda,
                    b as *const f32,
                    ldb,
                    any(&beta) as *const f32,
                    c as *mut f32,
                    ldc,
                )
            } else {
                return Err("cuBLASXt: only f32 and f64".into());
            }
        };
        status(s, "cublasXtGemm")
    }
}

impl Drop for CublasXt {
    fn drop(&mut self) {
        // SAFETY: destroys the handle once.
        unsafe { (self.destroy)(self.handle) };
    }
}
