//! hipBLAS: one handle per compute stream, and the Kernel implementation over it (GEMM through
//! hipblasDgemm/Sgemm, the tile add `y += beta * x` through hipblasDgeam/Sgeam).

use crate::result::{blas_api, Context};
use crate::stream::HipStream;
use crate::sys::{self, blas_status as st, HipblasStatus};
use hetblas_core::{DType, Error, GemmTile, Kernel, Queue, RawTile, Result, ScalarValue, Trans};
use std::ffi::CStr;
use std::sync::Arc;

/// The status's name and a short description (hipBLAS's own `hipblasStatusToString` gives the
/// name when the library has it).
fn describe(s: HipblasStatus) -> (String, String) {
    let (name, msg) = match s {
        st::SUCCESS => ("HIPBLAS_STATUS_SUCCESS", "success"),
        st::NOT_INITIALIZED => ("HIPBLAS_STATUS_NOT_INITIALIZED", "library not initialized"),
        st::ALLOC_FAILED => ("HIPBLAS_STATUS_ALLOC_FAILED", "resource allocation failed"),
        st::INVALID_VALUE => ("HIPBLAS_STATUS_INVALID_VALUE", "unsupported value passed"),
        st::MAPPING_ERROR => (
            "HIPBLAS_STATUS_MAPPING_ERROR",
            "access to GPU memory failed",
        ),
        st::EXECUTION_FAILED => ("HIPBLAS_STATUS_EXECUTION_FAILED", "GPU program failed"),
        st::INTERNAL_ERROR => ("HIPBLAS_STATUS_INTERNAL_ERROR", "internal operation failed"),
        st::NOT_SUPPORTED => ("HIPBLAS_STATUS_NOT_SUPPORTED", "function not implemented"),
        st::ARCH_MISMATCH => ("HIPBLAS_STATUS_ARCH_MISMATCH", "architecture mismatch"),
        st::HANDLE_IS_NULLPTR => ("HIPBLAS_STATUS_HANDLE_IS_NULLPTR", "handle is null"),
        st::INVALID_ENUM => ("HIPBLAS_STATUS_INVALID_ENUM", "unsupported enum value"),
        st::UNKNOWN => (
            "HIPBLAS_STATUS_UNKNOWN",
            "back-end returned an unknown status",
        ),
        _ => ("", "unknown status"),
    };
    let mut name = name.to_string();
    if let Some(f) = blas_api().ok().and_then(|b| b.hipblasStatusToString) {
        // SAFETY: takes any status value and returns a static string (or null).
        let p = unsafe { f(s) };
        if !p.is_null() {
            // SAFETY: NUL-terminated static string.
            name = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        }
    }
    if name.is_empty() {
        name = format!("hipblasStatus {s}");
    }
    (name, msg.to_string())
}

/// Maps a hipBLAS status to a typed error with the library's name and message.
pub fn check_blas(s: HipblasStatus, call: &str) -> Result<()> {
    if s == st::SUCCESS {
        return Ok(());
    }
    let (name, message) = describe(s);
    if s == st::ALLOC_FAILED {
        return Err(Error::OutOfMemory {
            device: "hip".into(),
            detail: format!("{call}: {message}"),
        });
    }
    Err(Error::Backend {
        backend: "hipblas",
        call: call.into(),
        code: s as i64,
        name,
        message,
    })
}

/// A hipBLAS handle bound to one stream.
#[derive(Debug)]
pub struct HipblasHandle {
    ctx: Arc<Context>,
    raw: sys::HipblasHandle,
}

// SAFETY: the handle is used by one thread at a time (it sits behind a Mutex in its stream).
unsafe impl Send for HipblasHandle {}

impl HipblasHandle {
    /// A handle on `ctx`'s device issuing on `stream` (a stream of the same device).
    pub(crate) fn new(ctx: &Arc<Context>, stream: sys::HipStream) -> Result<HipblasHandle> {
        let api = blas_api()?;
        ctx.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: writes one handle; destroyed in Drop.
        check_blas(unsafe { (api.hipblasCreate)(&mut raw) }, "hipblasCreate")?;
        let h = HipblasHandle {
            ctx: ctx.clone(),
            raw,
        };
        check_blas(
            // SAFETY: a live handle and stream of the current device.
            unsafe { (api.hipblasSetStream)(raw, stream) },
            "hipblasSetStream",
        )?;
        Ok(h)
    }

    /// Issues `op` on the handle's stream.
    pub fn gemm(&self, op: &GemmTile) -> Result<()> {
        let api = blas_api()?;
        self.ctx.bind()?;
        let t = |t: Trans| {
            if t.is_transposed() {
                sys::op::T
            } else {
                sys::op::N
            }
        };
        let (ta, tb) = (t(op.transa), t(op.transb));
        let dims = [op.m, op.n, op.k, op.a.ld, op.b.ld, op.c.ld];
        let small = dims.iter().all(|&d| d <= i32::MAX as usize);
        let too_large = || Error::Unsupported {
            device: "hip".into(),
            detail: format!(
                "a gemm tile with a dimension over 2^31 needs hipblas{}gemm_64 (hipBLAS 2.2+)",
                if op.dtype() == DType::F64 { 'D' } else { 'S' }
            ),
        };
        let i = |x: usize| x as i32;
        let l = |x: usize| x as i64;
        let (a, b, c) = (op.a.addr, op.b.addr, op.c.addr);
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
                    a as *const $t,
                    $n(op.a.ld),
                    b as *const $t,
                    $n(op.b.ld),
                    &$be,
                    c as *mut $t,
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
                    gemm!((api.hipblasDgemm), i, al, be, f64)
                }
                (ScalarValue::F64(al), ScalarValue::F64(be)) => {
                    gemm!(api.hipblasDgemm_64.ok_or_else(too_large)?, l, al, be, f64)
                }
                (ScalarValue::F32(al), ScalarValue::F32(be)) if small => {
                    gemm!((api.hipblasSgemm), i, al, be, f32)
                }
                (ScalarValue::F32(al), ScalarValue::F32(be)) => {
                    gemm!(api.hipblasSgemm_64.ok_or_else(too_large)?, l, al, be, f32)
                }
                _ => return Err(Error::internal("mixed scalar types in a gemm tile")),
            }
        };
        check_blas(
            status,
            if op.dtype() == DType::F64 {
                "hipblasDgemm"
            } else {
                "hipblasSgemm"
            },
        )
    }
}

impl HipblasHandle {
    /// `y += beta * x` (hipblasDgeam/Sgeam in place on `y`: `y = 1 * y + beta * x`).
    pub fn add(&self, beta: ScalarValue, x: &RawTile, y: &RawTile) -> Result<()> {
        let api = blas_api()?;
        self.ctx.bind()?;
        let n = sys::op::N;
        let (m, c) = (x.rows as i32, x.cols as i32);
        let (ldx, ldy) = (x.ld as i32, y.ld as i32);
        let missing = || Error::Unsupported {
            device: "hip".into(),
            detail: format!("{} has no hipblasDgeam/Sgeam", api.path),
        };
        // SAFETY: both tiles are device memory of their shapes (checked by check_add), kept
        // alive by the executor; geam allows C == A with the same leading dimension.
        let status = unsafe {
            match beta {
                ScalarValue::F64(b) => {
                    let f = api.hipblasDgeam.ok_or_else(missing)?;
                    let (one, yp) = (1.0f64, y.addr as *mut f64);
                    f(
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
                    let f = api.hipblasSgeam.ok_or_else(missing)?;
                    let (one, yp) = (1.0f32, y.addr as *mut f32);
                    f(
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
        check_blas(status, "hipblasGeam")
    }
}

impl Drop for HipblasHandle {
    fn drop(&mut self) {
        let _ = self.ctx.bind();
        if let Ok(api) = blas_api() {
            // SAFETY: destroys the handle once.
            unsafe { (api.hipblasDestroy)(self.raw) };
        }
    }
}

/// The hipBLAS handle bound to a compute stream.
fn handle_of(queue: &Arc<dyn Queue>) -> Result<&std::sync::Mutex<HipblasHandle>> {
    let s = queue
        .as_any()
        .downcast_ref::<HipStream>()
        .ok_or_else(|| Error::internal("HIP kernel given a queue that is not a HIP stream"))?;
    s.blas
        .as_ref()
        .ok_or_else(|| Error::internal("HIP kernel given a stream without a hipBLAS handle"))
}

/// GEMM tiles (and the tile add of late C) through hipBLAS on the device's compute streams.
#[derive(Debug, Default)]
pub struct HipKernel;

impl Kernel for HipKernel {
    fn supports(&self, dtype: DType) -> bool {
        matches!(dtype, DType::F32 | DType::F64)
    }

    fn supports_add(&self) -> bool {
        blas_api().is_ok_and(|b| b.hipblasDgeam.is_some() && b.hipblasSgeam.is_some())
    }

    fn add(
        &self,
        queue: &Arc<dyn Queue>,
        beta: ScalarValue,
        x: &RawTile,
        y: &RawTile,
    ) -> Result<()> {
        if !hetblas_core::kernel::check_add_i32(beta, x, y, "hip")? {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_have_names() {
        // Without the library the built-in table answers.
        if blas_api().is_err() {
            assert_eq!(describe(st::ALLOC_FAILED).0, "HIPBLAS_STATUS_ALLOC_FAILED");
            assert_eq!(describe(42).0, "hipblasStatus 42");
        }
        assert!(matches!(
            check_blas(st::ALLOC_FAILED, "hipblasDgemm"),
            Err(Error::OutOfMemory { .. })
        ));
        assert!(matches!(
            check_blas(st::INVALID_VALUE, "hipblasDgemm"),
            Err(Error::Backend { code: 3, .. })
        ));
        assert!(check_blas(st::SUCCESS, "hipblasDgemm").is_ok());
    }
}
