//! cuBLAS: one handle per compute stream, and the Kernel implementation over it.

use crate::driver::Context;
use crate::stream::CudaStream;
use cudarc::cublas::sys as cb;
use cudarc::driver::sys;
use hetblas_core::{DType, Error, GemmTile, Kernel, Queue, RawTile, Result, ScalarValue, Trans};
use std::ffi::CStr;
use std::sync::Arc;

/// Maps a cuBLAS status to a typed error with the library's name and message.
pub fn check_blas(s: cb::cublasStatus_t, call: &str) -> Result<()> {
    if s == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: both return static NUL-terminated strings.
    let (name, msg) = unsafe {
        let n = cb::cublasGetStatusName(s);
        let m = cb::cublasGetStatusString(s);
        let f = |p: *const std::ffi::c_char| {
            if p.is_null() {
                format!("{s:?}")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        (f(n), f(m))
    };
    if s == cb::cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED {
        return Err(Error::OutOfMemory {
            device: "cuda".into(),
            detail: format!("{call}: {msg}"),
        });
    }
    Err(Error::Backend {
        backend: "cublas",
        call: call.into(),
        code: s as i64,
        name,
        message: msg,
    })
}

/// A cuBLAS handle bound to one stream.
#[derive(Debug)]
pub struct CublasHandle {
    ctx: Arc<Context>,
    raw: cb::cublasHandle_t,
}

// SAFETY: the handle is used by one thread at a time (it sits behind a Mutex in its stream).
unsafe impl Send for CublasHandle {}

impl CublasHandle {
    pub fn new(ctx: &Arc<Context>, stream: sys::CUstream) -> Result<CublasHandle> {
        ctx.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: writes one handle; destroyed in Drop.
        check_blas(unsafe { cb::cublasCreate_v2(&mut raw) }, "cublasCreate")?;
        let h = CublasHandle {
            ctx: ctx.clone(),
            raw,
        };
        check_blas(
            // SAFETY: valid handle and stream of the same context.
            unsafe { cb::cublasSetStream_v2(raw, stream as cb::cudaStream_t) },
            "cublasSetStream",
        )?;
        Ok(h)
    }

    /// Issues `op` on the handle's stream.
    pub fn gemm(&self, op: &GemmTile) -> Result<()> {
        self.ctx.bind()?;
        let t = |t: Trans| {
            if t.is_transposed() {
                cb::cublasOperation_t::CUBLAS_OP_T
            } else {
                cb::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let (ta, tb) = (t(op.transa), t(op.transb));
        let dims = [op.m, op.n, op.k, op.a.ld, op.b.ld, op.c.ld];
        let small = dims.iter().all(|&d| d <= i32::MAX as usize);
        let i = |x: usize| x as i32;
        let l = |x: usize| x as i64;
        // Every entry point takes the same arguments; `$n` converts the dimensions.
        macro_rules! gemm {
            ($f:expr, $n:expr, $al:expr, $be:expr, $t:ty) => {
                $f(
                    self.raw,
                    ta,
                    tb,
                    $n(op.m),
                    $n(op.n),
                    $n(op.k),
                    &$al,
                    op.a.addr as *const $t,
                    $n(op.a.ld),
                    op.b.addr as *const $t,
                    $n(op.b.ld),
                    &$be,
                    op.c.addr as *mut $t,
                    $n(op.c.ld),
                )
            };
        }
        // SAFETY: tiles were checked by GemmTile::check (shapes, lds); their device memory is
        // kept alive by the executor until the stream is synchronised. Scalars are read from
        // host memory (the default pointer mode) before the call returns.
        let status = unsafe {
            match (op.alpha, op.beta) {
                (ScalarValue::F64(al), ScalarValue::F64(be)) if small => {
                    gemm!(cb::cublasDgemm_v2, i, al, be, f64)
                }
                (ScalarValue::F64(al), ScalarValue::F64(be)) => {
                    gemm!(cb::cublasDgemm_v2_64, l, al, be, f64)
                }
                (ScalarValue::F32(al), ScalarValue::F32(be)) if small => {
                    gemm!(cb::cublasSgemm_v2, i, al, be, f32)
                }
                (ScalarValue::F32(al), ScalarValue::F32(be)) => {
                    gemm!(cb::cublasSgemm_v2_64, l, al, be, f32)
                }
                _ => return Err(Error::internal("mixed scalar types in a gemm tile")),
            }
        };
        check_blas(
            status,
            if op.dtype() == DType::F64 {
                "cublasDgemm"
            } else {
                "cublasSgemm"
            },
        )
    }
}

impl CublasHandle {
    /// `y += beta * x` (cublasDgeam/Sgeam in place on `y`).
    pub fn add(&self, beta: ScalarValue, x: &RawTile, y: &RawTile) -> Result<()> {
        self.ctx.bind()?;
        let n = cb::cublasOperation_t::CUBLAS_OP_N;
        let (m, c) = (x.rows as i32, x.cols as i32);
        let (ldx, ldy) = (x.ld as i32, y.ld as i32);
        // SAFETY: both tiles are device memory of their shapes (checked by check_add), kept
        // alive by the executor; geam allows C == A with the same leading dimension.
        let status = unsafe {
            match beta {
                ScalarValue::F64(b) => {
                    let one = 1.0f64;
                    let yp = y.addr as *mut f64;
                    cb::cublasDgeam(
                        self.raw,
                        n,
                        n,
                        m,
                        c,
                        &one,
                        yp,
                        ldy,
                        &b,
                        x.addr as *const f64,
                        ldx,
                        yp,
                        ldy,
                    )
                }
                ScalarValue::F32(b) => {
                    let one = 1.0f32;
                    let yp = y.addr as *mut f32;
                    cb::cublasSgeam(
                        self.raw,
                        n,
                        n,
                        m,
                        c,
                        &one,
                        yp,
                        ldy,
                        &b,
                        x.addr as *const f32,
                        ldx,
                        yp,
                        ldy,
                    )
                }
            }
        };
        check_blas(status, "cublasGeam")
    }
}

impl Drop for CublasHandle {
    fn drop(&mut self) {
        let _ = self.ctx.bind();
        // SAFETY: destroys the handle once.
        unsafe { cb::cublasDestroy_v2(self.raw) };
    }
}

/// The cuBLAS handle bound to a compute stream.
fn handle_of(queue: &Arc<dyn Queue>) -> Result<&std::sync::Mutex<CublasHandle>> {
    let s = queue
        .as_any()
        .downcast_ref::<CudaStream>()
        .ok_or_else(|| Error::internal("CUDA kernel given a queue that is not a CUDA stream"))?;
    s.blas
        .as_ref()
        .ok_or_else(|| Error::internal("CUDA kernel given a stream without a cuBLAS handle"))
}

/// GEMM tiles through cuBLAS on the device's compute streams.
#[derive(Debug, Default)]
pub struct CudaKernel;

impl Kernel for CudaKernel {
    fn supports(&self, dtype: DType) -> bool {
        matches!(dtype, DType::F32 | DType::F64)
    }

    fn supports_add(&self) -> bool {
        true
    }

    fn add(
        &self,
        queue: &Arc<dyn Queue>,
        beta: ScalarValue,
        x: &RawTile,
        y: &RawTile,
    ) -> Result<()> {
        if !hetblas_core::kernel::check_add_i32(beta, x, y, "cuda")? {
            return Ok(());
        }
        let h = handle_of(queue)?;
        let h = h.lock().unwrap_or_else(|p| p.into_inner());
        h.add(beta, x, y)
    }

    fn gemm(&self, queue: &Arc<dyn Queue>, op: &GemmTile) -> Result<()> {
        op.check()?;
        if op.m == 0 || op.n == 0 {
            return Ok(());
        }
        let h = handle_of(queue)?;
        let h = h.lock().unwrap_or_else(|p| p.into_inner());
        h.gemm(op)
    }
}
