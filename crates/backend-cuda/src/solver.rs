//! The factorization tiles on cuSOLVER (the dense `cusolverDn` API, loaded at run time by
//! cudarc: `libcusolver.so.12` beside cuBLAS 13): `?potrf` and `?getrf` with their
//! `_bufferSize` workspaces, and `?laswp` where our own row-interchange kernel cannot run.
//!
//! LASWP runs on the kernel of `laswp.rs` (one launch per tile) on the solver handle's stream;
//! cuSOLVER's `?laswp` interchanges one pivot at a time (about 0.4 ms per 512 pivots, most of a
//! tile LU's time on an H200), so it is only the fallback: for a context whose driver refused
//! the kernel's module, and for tiles misaligned for the kernel's moves.
//! `cusolverDn?laswp` is declared in `cusolverDn.h` and exported by the library, but not
//! described in the cuSOLVER guide: it is probed at load time, and without it LASWP is
//! reported unsupported (the planner then applies the interchanges elsewhere), so that the
//! fallback is always there when LASWP is offered.
//!
//! cuSOLVER's pivots and `info` follow LAPACK (1-based `devIpiv`, `devInfo = i > 0` at the
//! first non-positive pivot or zero `U(i, i)`); both live in device memory.

use crate::driver::Context;
use crate::laswp::LaswpFns;
use cudarc::cusolver::sys as cs;
use cudarc::driver::sys;
use hetblas_core::{Error, FactorOp, GetrfTile, LaswpTile, PotrfTile, Result, Uplo};
use hetblas_gpu::{per_dtype, Workspace};
use std::ffi::c_int;
use std::sync::OnceLock;

/// What loading cuSOLVER found.
#[derive(Debug, Clone, Copy)]
struct Probe {
    /// Whether the four `cusolverDn?laswp` are exported.
    laswp: bool,
}

/// cuSOLVER, probed once: `None` when the library cannot be loaded.
fn probe() -> Option<Probe> {
    static PROBE: OnceLock<Option<Probe>> = OnceLock::new();
    *PROBE.get_or_init(|| {
        crate::driver::preload();
        // SAFETY: opening the library runs its initialisers only.
        if !unsafe { cs::is_culib_present() } {
            tracing::info!("cuSOLVER not found: no factorization tiles on CUDA devices");
            return None;
        }
        // SAFETY: the library loads (probed above); only symbol addresses are looked up.
        let lib = unsafe { cs::culib() };
        let laswp = ["S", "D", "C", "Z"].iter().all(|t| {
            let name = format!("cusolverDn{t}laswp\0");
            // SAFETY: only the symbol's presence is checked.
            unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_ok()
        });
        Some(Probe { laswp })
    })
}

/// Whether cuSOLVER has `op` (every dtype, when it has it at all).
pub(crate) fn supports(op: FactorOp) -> bool {
    match (probe(), op) {
        (None, _) => false,
        (Some(p), FactorOp::Laswp) => p.laswp,
        (Some(_), _) => true,
    }
}

/// Maps a cuSOLVER status to a typed error with the call's name.
fn check(s: cs::cusolverStatus_t, call: &str) -> Result<()> {
    match s {
        cs::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS => Ok(()),
        cs::cusolverStatus_t::CUSOLVER_STATUS_ALLOC_FAILED => Err(Error::OutOfMemory {
            device: "cuda".into(),
            detail: format!("{call}: CUSOLVER_STATUS_ALLOC_FAILED"),
        }),
        cs::cusolverStatus_t::CUSOLVER_STATUS_EXECUTION_FAILED => Err(Error::DeviceLost {
            device: "cuda".into(),
            detail: format!("{call}: CUSOLVER_STATUS_EXECUTION_FAILED"),
        }),
        other => Err(Error::Backend {
            backend: "cusolver",
            call: call.into(),
            code: other as i64,
            name: format!("{other:?}"),
            message: "cuSOLVER call failed".into(),
        }),
    }
}

/// The solver side of one compute stream: the cuSOLVER handle issuing on it, the stream, and
/// the row-interchange kernel of its context (`None`: cuSOLVER's `?laswp`).
#[derive(Debug, Clone, Copy)]
pub struct CudaSolver {
    pub(crate) handle: cs::cusolverDnHandle_t,
    stream: sys::CUstream,
    laswp: Option<LaswpFns>,
}

/// A cuSOLVER handle issuing on `stream`, with the context's row-interchange kernel (loaded
/// on the context's first call).
///
/// # Safety
/// `stream` is a live stream of `ctx`, which is current, and outlives the handle.
pub(crate) unsafe fn create(ctx: &Context, stream: sys::CUstream) -> Result<CudaSolver> {
    if probe().is_none() {
        return Err(Error::Unsupported {
            device: "cuda".into(),
            detail: "cuSOLVER (libcusolver.so.12) not found".into(),
        });
    }
    let mut h = std::ptr::null_mut();
    // SAFETY: writes one handle; destroyed by `destroy`.
    check(unsafe { cs::cusolverDnCreate(&mut h) }, "cusolverDnCreate")?;
    // SAFETY: a live handle and stream of the current context.
    let r = unsafe { cs::cusolverDnSetStream(h, stream as cs::cudaStream_t) };
    if let Err(e) = check(r, "cusolverDnSetStream") {
        // SAFETY: created above, not used again.
        unsafe { cs::cusolverDnDestroy(h) };
        return Err(e);
    }
    Ok(CudaSolver {
        handle: h,
        stream,
        laswp: ctx.laswp(),
    })
}

/// # Safety
/// `h` is live and destroyed once, its work finished.
pub(crate) unsafe fn destroy(h: cs::cusolverDnHandle_t) {
    // SAFETY: caller contract.
    unsafe { cs::cusolverDnDestroy(h) };
}

fn fill(uplo: Uplo) -> cs::cublasFillMode_t {
    match uplo {
        Uplo::Lower => cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
        Uplo::Upper => cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
    }
}

/// Dimensions as `int` (the generic layer checked they fit).
fn d(x: usize) -> c_int {
    x as c_int
}

/// An element count from a `_bufferSize` query, as bytes of `dtype`.
fn bytes(lwork: c_int, dtype: hetblas_core::DType, call: &str) -> Result<usize> {
    usize::try_from(lwork)
        .map(|l| l * dtype.size())
        .map_err(|_| Error::internal(format!("{call} asked for {lwork} elements")))
}

/// # Safety
/// `h` is live; `op` is checked, non-empty, within 32 bits.
pub(crate) unsafe fn potrf_workspace(h: cs::cusolverDnHandle_t, op: &PotrfTile) -> Result<usize> {
    let mut lwork: c_int = 0;
    let (n, lda, a) = (d(op.n()), d(op.a.ld), op.a.addr);
    // SAFETY: the query reads no matrix element; it writes one int.
    let s = unsafe {
        per_dtype!(op.dtype(), (f, T) => f(h, fill(op.uplo), n, a as *mut T, lda, &mut lwork),
            [cs::cusolverDnSpotrf_bufferSize, cs::cusolverDnDpotrf_bufferSize,
             cs::cusolverDnCpotrf_bufferSize, cs::cusolverDnZpotrf_bufferSize],
            [cs::cuComplex, cs::cuDoubleComplex])
    };
    check(s, "cusolverDnXpotrf_bufferSize")?;
    bytes(lwork, op.dtype(), "potrf_bufferSize")
}

/// # Safety
/// As [`potrf_workspace`].
pub(crate) unsafe fn getrf_workspace(h: cs::cusolverDnHandle_t, op: &GetrfTile) -> Result<usize> {
    let mut lwork: c_int = 0;
    let (m, n, lda, a) = (d(op.a.rows), d(op.a.cols), d(op.a.ld), op.a.addr);
    // SAFETY: as in potrf_workspace.
    let s = unsafe {
        per_dtype!(op.dtype(), (f, T) => f(h, m, n, a as *mut T, lda, &mut lwork),
            [cs::cusolverDnSgetrf_bufferSize, cs::cusolverDnDgetrf_bufferSize,
             cs::cusolverDnCgetrf_bufferSize, cs::cusolverDnZgetrf_bufferSize],
            [cs::cuComplex, cs::cuDoubleComplex])
    };
    check(s, "cusolverDnXgetrf_bufferSize")?;
    bytes(lwork, op.dtype(), "getrf_bufferSize")
}

/// # Safety
/// The GPU layer's contract for `GpuRuntime::potrf`.
pub(crate) unsafe fn potrf(
    h: cs::cusolverDnHandle_t,
    op: &PotrfTile,
    work: Workspace,
    dev_info: u64,
) -> Result<()> {
    let (n, lda, a) = (d(op.n()), d(op.a.ld), op.a.addr);
    let lwork = d(work.bytes / op.dtype().size());
    let info = dev_info as *mut c_int;
    // SAFETY: caller contract; the workspace holds `lwork` elements.
    let s = unsafe {
        per_dtype!(op.dtype(),
            (f, T) => f(h, fill(op.uplo), n, a as *mut T, lda, work.addr as *mut T, lwork, info),
            [cs::cusolverDnSpotrf, cs::cusolverDnDpotrf, cs::cusolverDnCpotrf, cs::cusolverDnZpotrf],
            [cs::cuComplex, cs::cuDoubleComplex])
    };
    check(s, "cusolverDnXpotrf")
}

/// # Safety
/// The GPU layer's contract for `GpuRuntime::getrf`.
pub(crate) unsafe fn getrf(
    h: cs::cusolverDnHandle_t,
    op: &GetrfTile,
    work: Workspace,
    dev_info: u64,
) -> Result<()> {
    let (m, n, lda, a) = (d(op.a.rows), d(op.a.cols), d(op.a.ld), op.a.addr);
    let (ipiv, info) = (op.ipiv.addr as *mut c_int, dev_info as *mut c_int);
    // SAFETY: caller contract; the workspace has the size getrf_bufferSize asked.
    let s = unsafe {
        per_dtype!(op.dtype(),
            (f, T) => f(h, m, n, a as *mut T, lda, work.addr as *mut T, ipiv, info),
            [cs::cusolverDnSgetrf, cs::cusolverDnDgetrf, cs::cusolverDnCgetrf, cs::cusolverDnZgetrf],
            [cs::cuComplex, cs::cuDoubleComplex])
    };
    check(s, "cusolverDnXgetrf")
}

/// The interchanges of `op` on `h`'s stream: the kernel when the context has it and the tile
/// suits it, cuSOLVER's `?laswp` otherwise.
///
/// # Safety
/// The GPU layer's contract for `GpuRuntime::laswp`; the symbols were probed present.
pub(crate) unsafe fn laswp(h: CudaSolver, op: &LaswpTile) -> Result<()> {
    if let Some(fns) = h.laswp {
        // SAFETY: caller contract; the functions are those of the stream's context.
        if unsafe { crate::laswp::launch(fns, h.stream, op) }? {
            return Ok(());
        }
    }
    // SAFETY: as above.
    unsafe { cusolver_laswp(h.handle, op) }
}

/// # Safety
/// As [`laswp`].
unsafe fn cusolver_laswp(h: cs::cusolverDnHandle_t, op: &LaswpTile) -> Result<()> {
    let (n, lda, a) = (d(op.a.cols), d(op.a.ld), op.a.addr);
    let (k1, k2, ipiv) = (d(op.k1), d(op.k2), op.ipiv.addr as *const c_int);
    // SAFETY: caller contract (incx = 1: the pivots k1..=k2 in order).
    let s = unsafe {
        per_dtype!(op.dtype(), (f, T) => f(h, n, a as *mut T, lda, k1, k2, ipiv, 1),
            [cs::cusolverDnSlaswp, cs::cusolverDnDlaswp, cs::cusolverDnClaswp, cs::cusolverDnZlaswp],
            [cs::cuComplex, cs::cuDoubleComplex])
    };
    check(s, "cusolverDnXlaswp")
}
