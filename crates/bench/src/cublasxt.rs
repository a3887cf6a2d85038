//! cuBLASXt, loaded from libcublas at run time: the baseline hetblas measures itself against
//! (NVIDIA's multi-GPU, host-operand BLAS-3, which NVBLAS is built on).

use hetblas_core::{DType, Scalar};
use libloading::Library;
use std::ffi::c_void;

type Handle = *mut c_void;
type Create = unsafe extern "C" fn(*mut Handle) -> i32;
type Destroy = unsafe extern "C" fn(Handle) -> i32;
type DeviceSelect = unsafe extern "C" fn(Handle, i32, *const i32) -> i32;
type SetBlockDim = unsafe extern "C" fn(Handle, i32) -> i32;
/// A cuBLASXt prototype: the handle, then the routine's arguments (`i32` enums, `usize`
/// dimensions, `P` read-only and `M` written pointers), returning the cuBLAS status. One line
/// per prototype, so the many alike extern signatures stay readable side by side.
macro_rules! xt_fn {
    (@arg P) => { *const std::ffi::c_void };
    (@arg M) => { *mut std::ffi::c_void };
    (@arg $t:ty) => { $t };
    ($($arg:tt),* $(,)?) => {
        unsafe extern "C" fn(*mut std::ffi::c_void, $(xt_fn!(@arg $arg)),*) -> i32
    };
}
pub(crate) use xt_fn;

/// `cublasXt{S,D,C,Z}gemm`: the same prototype for every type, the scalars and matrices by
/// pointer (`float`, `double`, `cuComplex`, `cuDoubleComplex`: the layouts of f32, f64, c32,
/// c64): transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc.
type XtGemm = xt_fn!(i32, i32, usize, usize, usize, P, P, usize, P, usize, P, M, usize);
/// `cublasXt{S,D,C,Z}trsm`: handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb.
type XtTrsm = xt_fn!(i32, i32, i32, i32, usize, usize, P, P, usize, M, usize);
/// `cublasXt{S,D,C,Z}trmm`: as TRSM, out of place into C.
type XtTrmm = xt_fn!(i32, i32, i32, i32, usize, usize, P, P, usize, P, usize, M, usize);

/// An open cuBLASXt handle on a set of GPUs.
pub struct CublasXt {
    _lib: Library,
    handle: Handle,
    destroy: Destroy,
    set_block: SetBlockDim,
    /// Per dtype: s, d, c, z.
    gemm: [XtGemm; 4],
    trsm: [Option<XtTrsm>; 4],
    trmm: [Option<XtTrmm>; 4],
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
            let get = |name: &[u8]| -> Result<XtGemm, String> {
                Ok(*lib.get::<XtGemm>(name).map_err(|e| e.to_string())?)
            };
            let gemm = [
                get(b"cublasXtSgemm\0")?,
                get(b"cublasXtDgemm\0")?,
                get(b"cublasXtCgemm\0")?,
                get(b"cublasXtZgemm\0")?,
            ];
            let trsm = [
                b"cublasXtStrsm\0".as_slice(),
                b"cublasXtDtrsm\0",
                b"cublasXtCtrsm\0",
                b"cublasXtZtrsm\0",
            ]
            .map(|n| lib.get::<XtTrsm>(n).ok().map(|s| *s));
            let trmm = [
                b"cublasXtStrmm\0".as_slice(),
                b"cublasXtDtrmm\0",
                b"cublasXtCtrmm\0",
                b"cublasXtZtrmm\0",
            ]
            .map(|n| lib.get::<XtTrmm>(n).ok().map(|s| *s));
            let mut handle = std::ptr::null_mut();
            status(create(&mut handle), "cublasXtCreate")?;
            let xt = CublasXt {
                _lib: lib,
                handle,
                destroy,
                set_block,
                gemm,
                trsm,
                trmm,
            };
            status(
                select(handle, devices.len() as i32, devices.as_ptr()),
                "cublasXtDeviceSelect",
            )?;
            Ok(xt)
        }
    }

    /// The loaded libcublas (for the other cuBLASXt routines, [`crate::cublasxt_sym`]).
    pub(crate) fn library(&self) -> &Library {
        &self._lib
    }

    /// The raw handle.
    pub(crate) fn raw_handle(&self) -> Handle {
        self.handle
    }

    pub fn set_block_dim(&self, b: i32) -> Result<(), String> {
        // SAFETY: valid handle.
        status(
            unsafe { (self.set_block)(self.handle, b) },
            "cublasXtSetBlockDim",
        )
    }

    /// Column-major GEMM on host memory in T's dtype (S, D, C or Z; blocking until done).
    /// A transposed operand is transposed, not conjugated (CUBLAS_OP_T).
    ///
    /// # Safety
    /// Pointers and leading dimensions describe valid host matrices for the given shapes.
    #[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
    pub unsafe fn gemm<T: Scalar>(
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
        let f = self.gemm[match T::DTYPE {
            DType::F32 => 0,
            DType::F64 => 1,
            DType::C32 => 2,
            DType::C64 => 3,
        }];
        // SAFETY: the routine of T's dtype, whose pointee types have T's layout; alpha and
        // beta are locals alive for the call; the caller vouches for the matrices.
        let s = unsafe {
            f(
                self.handle,
                ta,
                tb,
                m,
                n,
                k,
                std::ptr::from_ref(&alpha).cast(),
                a.cast(),
                lda,
                b.cast(),
                ldb,
                std::ptr::from_ref(&beta).cast(),
                c.cast(),
                ldc,
            )
        };
        status(s, "cublasXtGemm")
    }
}

/// The index of a dtype in the per-dtype tables.
fn slot(dt: DType) -> usize {
    match dt {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::C32 => 2,
        DType::C64 => 3,
    }
}

impl CublasXt {
    /// Column-major TRSM (`trmm == false`) or TRMM on host memory in T's dtype, side L, lower,
    /// no transpose, non-unit (the cuBLAS enum value 0 of each), blocking until done. TRMM writes
    /// `c` (out of place, as cuBLASXt's TRMM does); TRSM overwrites `b`.
    ///
    /// # Safety
    /// Pointers and leading dimensions describe valid host matrices: A `m x m`, B and C `m x n`.
    #[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
    pub unsafe fn tri_left_lower<T: Scalar>(
        &self,
        trmm: bool,
        m: usize,
        n: usize,
        alpha: T,
        a: *const T,
        lda: usize,
        b: *mut T,
        ldb: usize,
        c: *mut T,
        ldc: usize,
    ) -> Result<(), String> {
        let i = slot(T::DTYPE);
        let alpha = std::ptr::from_ref(&alpha).cast();
        // SAFETY: the routine of T's dtype, whose pointee types have T's layout; alpha is a
        // local alive for the call; the caller vouches for the matrices.
        let s = unsafe {
            if trmm {
                let f = self.trmm[i].ok_or("libcublas has no cublasXt?trmm")?;
                f(
                    self.handle,
                    0,
                    0,
                    0,
                    0,
                    m,
                    n,
                    alpha,
                    a.cast(),
                    lda,
                    b.cast_const().cast(),
                    ldb,
                    c.cast(),
                    ldc,
                )
            } else {
                let f = self.trsm[i].ok_or("libcublas has no cublasXt?trsm")?;
                f(
                    self.handle,
                    0,
                    0,
                    0,
                    0,
                    m,
                    n,
                    alpha,
                    a.cast(),
                    lda,
                    b.cast(),
                    ldb,
                )
            }
        };
        status(s, if trmm { "cublasXtTrmm" } else { "cublasXtTrsm" })
    }
}

impl Drop for CublasXt {
    fn drop(&mut self) {
        // SAFETY: destroys the handle once.
        unsafe { (self.destroy)(self.handle) };
    }
}
