//! [`GpuRuntime`] for CUDA: each method is the driver, cuBLAS or cuSOLVER call, checked.

use crate::driver::{check, check_blas, driver_error, Context, Libraries};
use crate::solver::CudaSolver;
use crate::Cuda;
use cudarc::cublas::sys as cb;
use cudarc::driver::sys;
use hetblas_core::problem::triangular::{Diag, Side, TriRoutine, Uplo};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{Error, GemmTile, RawTile, Result, ScalarValue, Trans, TriTile};
use hetblas_gpu::{
    run_host_job, Copy2D, CopyKind, DeviceDescription, GpuRuntime, HostJob, Registered,
};
use std::ffi::c_void;

/// The driver's descriptor of a 2D copy.
fn memcpy_2d(c: &Copy2D) -> sys::CUDA_MEMCPY2D {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE as DEV, CU_MEMORYTYPE_HOST as HOST};
    let (src_host, dst_host) = match c.kind {
        CopyKind::HostToDevice => (true, false),
        CopyKind::DeviceToHost => (false, true),
        CopyKind::DeviceToDevice => (false, false),
    };
    sys::CUDA_MEMCPY2D {
        srcMemoryType: if src_host { HOST } else { DEV },
        srcHost: if src_host {
            c.src as *const c_void
        } else {
            std::ptr::null()
        },
        srcDevice: if src_host { 0 } else { c.src },
        srcPitch: c.src_pitch,
        dstMemoryType: if dst_host { HOST } else { DEV },
        dstHost: if dst_host {
            c.dst as *mut c_void
        } else {
            std::ptr::null_mut()
        },
        dstDevice: if dst_host { 0 } else { c.dst },
        dstPitch: c.dst_pitch,
        WidthInBytes: c.width,
        Height: c.height,
        srcXInBytes: 0,
        srcY: 0,
        srcArray: std::ptr::null_mut(),
        dstXInBytes: 0,
        dstY: 0,
        dstArray: std::ptr::null_mut(),
    }
}

/// The cuBLAS operation. `C` conjugates in the complex routines (the executor passes `T` for
/// real ones; cuBLAS would read C as T there too).
pub(crate) fn op(t: Trans) -> cb::cublasOperation_t {
    match t {
        Trans::N => cb::cublasOperation_t::CUBLAS_OP_N,
        Trans::T => cb::cublasOperation_t::CUBLAS_OP_T,
        Trans::C => cb::cublasOperation_t::CUBLAS_OP_C,
    }
}

/// A `c32` as cuBLAS's `cuComplex` (float2: real part first, as num-complex lays it out).
pub(crate) fn cu_c(z: c32) -> cb::cuComplex {
    cb::cuComplex { x: z.re, y: z.im }
}

/// A `c64` as cuBLAS's `cuDoubleComplex`.
pub(crate) fn cu_z(z: c64) -> cb::cuDoubleComplex {
    cb::cuDoubleComplex { x: z.re, y: z.im }
}

/// Writes one value through `f` (the driver's getters), checked.
fn get<T: Default>(call: &str, f: impl FnOnce(&mut T) -> sys::CUresult) -> Result<T> {
    let mut v = T::default();
    check(f(&mut v), call)?;
    Ok(v)
}

impl GpuRuntime for Cuda {
    const NAME: &'static str = "cuda";
    const DEVICES_VAR: &'static str = "HETBLAS_CUDA_DEVICES";
    const ALREADY_MAPPED: i64 = sys::CUresult::CUDA_ERROR_ALREADY_MAPPED as i64;
    type Library = Libraries;
    type Context = Context;
    /// The thread's current context, null for none.
    type Current = sys::CUcontext;
    type Stream = sys::CUstream;
    type Event = sys::CUevent;
    type Blas = cb::cublasHandle_t;
    type Solver = crate::solver::CudaSolver;

    fn init() -> Result<Libraries> {
        crate::driver::init()
    }
    fn device_count(_: &Libraries) -> Result<i32> {
        // SAFETY: writes one int.
        let count = get("cuDeviceGetCount", |c| unsafe { sys::cuDeviceGetCount(c) })?;
        if count == 0 {
            return Err(Error::Unavailable {
                backend: "cuda",
                reason: "no CUDA device".into(),
            });
        }
        Ok(count)
    }
    fn open(ordinal: i32) -> Result<Context> {
        Context::retain(ordinal)
    }
    fn ordinal(ctx: &Context) -> i32 {
        ctx.ordinal
    }
    fn describe(lib: &Libraries, ctx: &Context) -> Result<DeviceDescription> {
        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: writes at most 256 bytes, NUL-terminated.
        let r = unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), 256, ctx.device) };
        check(r, "cuDeviceGetName")?;
        // SAFETY: NUL-terminated by the driver.
        let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
        // SAFETY: writes one size.
        let total = get("cuDeviceTotalMem", |t| unsafe {
            sys::cuDeviceTotalMem_v2(t, ctx.device)
        })?;
        use sys::CUdevice_attribute as A;
        let major = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sms = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let bus = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
        let v = lib.driver_version;
        Ok(DeviceDescription {
            name: name.into_owned(),
            vendor: "NVIDIA".into(),
            memory_bytes: total as u64,
            detail: format!(
                "ordinal {}, cc {major}.{minor}, {sms} SMs, PCI bus {bus:#04x}, driver CUDA {}.{}",
                ctx.ordinal,
                v / 1000,
                v % 1000 / 10
            ),
        })
    }
    fn bind(ctx: &Context) -> Result<()> {
        ctx.bind()
    }
    fn current() -> Result<sys::CUcontext> {
        crate::driver::current_context()
    }
    unsafe fn make_current(saved: sys::CUcontext) -> Result<()> {
        // SAFETY: caller contract (a context current on this thread before, not destroyed).
        unsafe { crate::driver::set_current_context(saved) }
    }
    fn mem_info(ctx: &Context) -> Result<(usize, usize)> {
        ctx.mem_info()
    }
    fn can_access_peer(dst: &Context, src: &Context) -> Result<bool> {
        // SAFETY: writes one int.
        let can = get("cuDeviceCanAccessPeer", |c| unsafe {
            sys::cuDeviceCanAccessPeer(c, dst.device, src.device)
        })?;
        Ok(can != 0)
    }
    fn enable_peer_access(_dst: &Context, src: &Context) -> Result<()> {
        // SAFETY: enables access from the current context (dst) to src's.
        let r = unsafe { sys::cuCtxEnablePeerAccess(src.raw(), 0) };
        if r == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            return Ok(());
        }
        check(r, "cuCtxEnablePeerAccess")
    }

    fn malloc(bytes: usize) -> Result<u64> {
        // SAFETY: writes one device pointer; freed by `free`.
        get("cuMemAlloc", |p| unsafe { sys::cuMemAlloc_v2(p, bytes) })
    }
    unsafe fn free(ptr: u64) {
        // SAFETY: caller contract.
        unsafe { sys::cuMemFree_v2(ptr) };
    }
    fn host_alloc(bytes: usize) -> Result<*mut u8> {
        let mut p = std::ptr::null_mut();
        // SAFETY: writes one host pointer; freed by `host_free`.
        let r = unsafe { sys::cuMemHostAlloc(&mut p, bytes, sys::CU_MEMHOSTALLOC_PORTABLE) };
        check(r, "cuMemHostAlloc")?;
        Ok(p as *mut u8)
    }
    unsafe fn host_free(ptr: *mut u8) {
        // SAFETY: caller contract.
        unsafe { sys::cuMemFreeHost(ptr as *mut c_void) };
    }
    unsafe fn host_register(start: u64, len: usize) -> Result<Registered> {
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        // SAFETY: caller contract.
        let r = unsafe { sys::cuMemHostRegister_v2(start as *mut c_void, len, flags) };
        use sys::CUresult as R;
        match r {
            R::CUDA_SUCCESS => Ok(Registered::Yes),
            R::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => Ok(Registered::Foreign),
            R::CUDA_ERROR_OUT_OF_MEMORY | R::CUDA_ERROR_INVALID_VALUE => {
                tracing::debug!("{}", driver_error(r, "cuMemHostRegister"));
                Ok(Registered::Refused)
            }
            other => Err(driver_error(other, "cuMemHostRegister")),
        }
    }
    unsafe fn host_unregister(start: u64) -> Result<()> {
        // SAFETY: caller contract.
        let r = unsafe { sys::cuMemHostUnregister(start as *mut c_void) };
        if r == sys::CUresult::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED {
            return Ok(());
        }
        check(r, "cuMemHostUnregister")
    }
    fn host_registered(page: u64) -> bool {
        let mut dev = 0;
        // SAFETY: only asks the driver about the address; writes one device pointer.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, page as *mut c_void, 0) };
        r == sys::CUresult::CUDA_SUCCESS
    }
    fn device_of_address(addr: u64) -> Option<i32> {
        use sys::CUpointer_attribute as attr;
        // Each query writes one value of the attribute's type (an unsigned int or an int) and
        // only looks the address up in the driver's unified address space; host memory the
        // driver does not know fails (CUDA_ERROR_INVALID_VALUE) and is no device's.
        let query = |a: attr, out: *mut c_void| {
            // SAFETY: `out` points to a live value of the size the attribute writes.
            unsafe { sys::cuPointerGetAttribute(out, a, addr) == sys::CUresult::CUDA_SUCCESS }
        };
        let mut kind: u32 = 0;
        if !query(
            attr::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            (&mut kind as *mut u32).cast(),
        ) || kind != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
        {
            return None;
        }
        let mut managed: i32 = 0;
        if query(
            attr::CU_POINTER_ATTRIBUTE_IS_MANAGED,
            (&mut managed as *mut i32).cast(),
        ) && managed != 0
        {
            return None;
        }
        let mut ordinal: i32 = -1;
        query(
            attr::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            (&mut ordinal as *mut i32).cast(),
        )
        .then_some(ordinal)
        .filter(|&o| o >= 0)
    }
    unsafe fn copy_2d(copy: &Copy2D) -> Result<()> {
        // SAFETY: caller contract.
        check(
            unsafe { sys::cuMemcpy2D_v2(&memcpy_2d(copy)) },
            "cuMemcpy2D",
        )
    }
    unsafe fn copy_2d_async(copy: &Copy2D, s: sys::CUstream) -> Result<()> {
        // SAFETY: caller contract.
        let r = unsafe { sys::cuMemcpy2DAsync_v2(&memcpy_2d(copy), s) };
        check(r, "cuMemcpy2DAsync")
    }
    unsafe fn copy_peer_async(
        src: &RawTile,
        src_ctx: &Context,
        dst: &RawTile,
        dst_ctx: &Context,
        s: sys::CUstream,
    ) -> Result<()> {
        let (sc, dc) = (src_ctx.raw(), dst_ctx.raw());
        if src.is_contiguous() && dst.is_contiguous() {
            // SAFETY: caller contract: contiguous device ranges of `bytes` in their contexts.
            let r = unsafe { sys::cuMemcpyPeerAsync(dst.addr, dc, src.addr, sc, src.bytes(), s) };
            return check(r, "cuMemcpyPeerAsync");
        }
        let dev = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        let p = sys::CUDA_MEMCPY3D_PEER {
            srcMemoryType: dev,
            srcDevice: src.addr,
            srcContext: sc,
            srcPitch: src.pitch(),
            // Height of a slice in memcpy rows (our columns): must be at least `Height`, or
            // the driver rejects copies of tiles with fewer rows than columns.
            srcHeight: src.cols.max(1),
            dstMemoryType: dev,
            dstDevice: dst.addr,
            dstContext: dc,
            dstPitch: dst.pitch(),
            dstHeight: dst.cols.max(1),
            WidthInBytes: src.row_bytes(),
            Height: src.cols,
            Depth: 1,
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcHost: std::ptr::null(),
            srcArray: std::ptr::null_mut(),
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstHost: std::ptr::null_mut(),
            dstArray: std::ptr::null_mut(),
        };
        // SAFETY: caller contract.
        check(
            unsafe { sys::cuMemcpy3DPeerAsync(&p, s) },
            "cuMemcpy3DPeerAsync",
        )
    }

    fn stream_create() -> Result<sys::CUstream> {
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: writes one stream handle; destroyed by `stream_destroy`.
        get("cuStreamCreate", |s| unsafe {
            sys::cuStreamCreate(s, flags)
        })
    }
    unsafe fn stream_destroy(s: sys::CUstream) {
        // SAFETY: caller contract.
        unsafe { sys::cuStreamDestroy_v2(s) };
    }
    unsafe fn stream_synchronize(s: sys::CUstream) -> Result<()> {
        // SAFETY: caller contract.
        check(
            unsafe { sys::cuStreamSynchronize(s) },
            "cuStreamSynchronize",
        )
    }
    unsafe fn stream_wait_event(s: sys::CUstream, e: sys::CUevent) -> Result<()> {
        // SAFETY: caller contract.
        check(
            unsafe { sys::cuStreamWaitEvent(s, e, 0) },
            "cuStreamWaitEvent",
        )
    }
    unsafe fn launch_host_fn(s: sys::CUstream, job: HostJob) -> Result<()> {
        let user = Box::into_raw(Box::new(job)) as *mut c_void;
        // SAFETY: the trampoline consumes the box exactly once, in stream order.
        let r = unsafe { sys::cuLaunchHostFunc(s, Some(run_host_job), user) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: the callback was not enqueued, so the box is still ours.
            drop(unsafe { Box::from_raw(user as *mut HostJob) });
        }
        check(r, "cuLaunchHostFunc")
    }
    fn event_create(timed: bool) -> Result<sys::CUevent> {
        let flags = if timed {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        // SAFETY: writes one event handle; destroyed by `event_destroy`.
        get("cuEventCreate", |e| unsafe {
            sys::cuEventCreate(e, flags as u32)
        })
    }
    unsafe fn event_record(e: sys::CUevent, s: sys::CUstream) -> Result<()> {
        // SAFETY: caller contract.
        check(unsafe { sys::cuEventRecord(e, s) }, "cuEventRecord")
    }
    unsafe fn event_synchronize(e: sys::CUevent) -> Result<()> {
        // SAFETY: caller contract.
        check(unsafe { sys::cuEventSynchronize(e) }, "cuEventSynchronize")
    }
    unsafe fn event_query(e: sys::CUevent) -> Result<bool> {
        // SAFETY: caller contract.
        let r = unsafe { sys::cuEventQuery(e) };
        if r == sys::CUresult::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        check(r, "cuEventQuery").map(|()| true)
    }
    unsafe fn event_elapsed_ms(start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
        // SAFETY: caller contract.
        get("cuEventElapsedTime", |ms| unsafe {
            sys::cuEventElapsedTime_v2(ms, start, end)
        })
    }
    unsafe fn event_destroy(e: sys::CUevent) {
        // SAFETY: caller contract.
        unsafe { sys::cuEventDestroy_v2(e) };
    }

    unsafe fn blas_create(s: sys::CUstream) -> Result<cb::cublasHandle_t> {
        let mut h = std::ptr::null_mut();
        // SAFETY: writes one handle; destroyed by `blas_destroy`.
        check_blas(unsafe { cb::cublasCreate_v2(&mut h) }, "cublasCreate")?;
        // SAFETY: a live handle and stream of the current context.
        let r = unsafe { cb::cublasSetStream_v2(h, s as cb::cudaStream_t) };
        if let Err(e) = check_blas(r, "cublasSetStream") {
            // SAFETY: the handle was created above and is not used again.
            unsafe { cb::cublasDestroy_v2(h) };
            return Err(e);
        }
        Ok(h)
    }
    unsafe fn blas_destroy(h: cb::cublasHandle_t) {
        // SAFETY: caller contract.
        unsafe { cb::cublasDestroy_v2(h) };
    }
    unsafe fn gemm(h: cb::cublasHandle_t, g: &GemmTile) -> Result<()> {
        let small = [g.m, g.n, g.k, g.a.ld, g.b.ld, g.c.ld]
            .iter()
            .all(|&d| d <= i32::MAX as usize);
        use hetblas_gpu::gemm_args as call;
        use ScalarValue::{C32, C64, F32, F64};
        // SAFETY: caller contract; scalars are read from host memory (the default pointer
        // mode) before the call returns; c32/c64 tiles have the layout of cuComplex /
        // cuDoubleComplex.
        let (status, name) = unsafe {
            match (g.alpha, g.beta) {
                (C64(al), C64(be)) if small => {
                    let (al, be) = (cu_z(al), cu_z(be));
                    (
                        call!(
                            cb::cublasZgemm_v2,
                            h,
                            op,
                            g,
                            cb::cuDoubleComplex,
                            i32,
                            al,
                            be
                        ),
                        "cublasZgemm",
                    )
                }
                (C64(al), C64(be)) => {
                    let (al, be) = (cu_z(al), cu_z(be));
                    (
                        call!(
                            cb::cublasZgemm_v2_64,
                            h,
                            op,
                            g,
                            cb::cuDoubleComplex,
                            i64,
                            al,
                            be
                        ),
                        "cublasZgemm_64",
                    )
                }
                (C32(al), C32(be)) if small => {
                    let (al, be) = (cu_c(al), cu_c(be));
                    (
                        call!(cb::cublasCgemm_v2, h, op, g, cb::cuComplex, i32, al, be),
                        "cublasCgemm",
                    )
                }
                (C32(al), C32(be)) => {
                    let (al, be) = (cu_c(al), cu_c(be));
                    (
                        call!(cb::cublasCgemm_v2_64, h, op, g, cb::cuComplex, i64, al, be),
                        "cublasCgemm_64",
                    )
                }
                (F64(al), F64(be)) if small => (
                    call!(cb::cublasDgemm_v2, h, op, g, f64, i32, al, be),
                    "cublasDgemm",
                ),
                (F64(al), F64(be)) => (
                    call!(cb::cublasDgemm_v2_64, h, op, g, f64, i64, al, be),
                    "cublasDgemm_64",
                ),
                (F32(al), F32(be)) if small => (
                    call!(cb::cublasSgemm_v2, h, op, g, f32, i32, al, be),
                    "cublasSgemm",
                ),
                (F32(al), F32(be)) => (
                    call!(cb::cublasSgemm_v2_64, h, op, g, f32, i64, al, be),
                    "cublasSgemm_64",
                ),
                _ => return Err(Error::internal("mixed scalar types in a gemm tile")),
            }
        };
        check_blas(status, name)
    }
    unsafe fn add(
        h: cb::cublasHandle_t,
        beta: ScalarValue,
        x: &RawTile,
        y: &RawTile,
    ) -> Result<()> {
        use hetblas_gpu::add_args as call;
        let n = cb::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: caller contract; geam allows C == A with the same leading dimension.
        let status = unsafe {
            match beta {
                ScalarValue::F64(b) => call!(cb::cublasDgeam, h, n, f64, b, x, y),
                ScalarValue::F32(b) => call!(cb::cublasSgeam, h, n, f32, b, x, y),
                ScalarValue::C64(b) => {
                    let (one, b) = (cu_z(c64::new(1.0, 0.0)), cu_z(b));
                    call!(cb::cublasZgeam, h, n, cb::cuDoubleComplex, one, b, x, y)
                }
                ScalarValue::C32(b) => {
                    let (one, b) = (cu_c(c32::new(1.0, 0.0)), cu_c(b));
                    call!(cb::cublasCgeam, h, n, cb::cuComplex, one, b, x, y)
                }
            }
        };
        check_blas(status, "cublasGeam")
    }

    // Triangular routines

    fn supports_tri(_dtype: hetblas_core::DType) -> bool {
        true
    }
    unsafe fn tri(h: cb::cublasHandle_t, routine: TriRoutine, t: &TriTile) -> Result<()> {
        let o = t.opts;
        let side = match o.side {
            Side::Left => cb::cublasSideMode_t::CUBLAS_SIDE_LEFT,
            Side::Right => cb::cublasSideMode_t::CUBLAS_SIDE_RIGHT,
        };
        let uplo = match o.uplo {
            Uplo::Lower => cb::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
            Uplo::Upper => cb::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
        };
        let diag = match o.diag {
            Diag::Unit => cb::cublasDiagType_t::CUBLAS_DIAG_UNIT,
            Diag::NonUnit => cb::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
        };
        let (m, n, lda, ldb) = (t.m as i32, t.n as i32, t.a.ld as i32, t.b.ld as i32);
        let ta = op(o.transa);
        // cuBLAS TRMM writes C out of place; B given as C computes in place (documented).
        macro_rules! call {
            ($trsm:path, $trmm:path, $t:ty, $alpha:expr) => {{
                let alpha = $alpha;
                let (a, b) = (t.a.addr as *const $t, t.b.addr as *mut $t);
                match routine {
                    TriRoutine::Trsm => (
                        $trsm(h, side, uplo, ta, diag, m, n, &alpha, a, lda, b, ldb),
                        stringify!($trsm),
                    ),
                    TriRoutine::Trmm => (
                        $trmm(
                            h, side, uplo, ta, diag, m, n, &alpha, a, lda, b, ldb, b, ldb,
                        ),
                        stringify!($trmm),
                    ),
                }
            }};
        }
        // SAFETY: caller contract (checked tiles within 32 bits); alpha is read from host
        // memory before the call returns; c32/c64 tiles have cuComplex's layout.
        let (status, name) = unsafe {
            match t.alpha {
                ScalarValue::F64(x) => call!(cb::cublasDtrsm_v2, cb::cublasDtrmm_v2, f64, x),
                ScalarValue::F32(x) => call!(cb::cublasStrsm_v2, cb::cublasStrmm_v2, f32, x),
                ScalarValue::C64(x) => call!(
                    cb::cublasZtrsm_v2,
                    cb::cublasZtrmm_v2,
                    cb::cuDoubleComplex,
                    cu_z(x)
                ),
                ScalarValue::C32(x) => call!(
                    cb::cublasCtrsm_v2,
                    cb::cublasCtrmm_v2,
                    cb::cuComplex,
                    cu_c(x)
                ),
            }
        };
        check_blas(status, name)
    }

    // Symmetric and Hermitian routines

    fn supports_sym(dtype: hetblas_core::DType) -> bool {
        hetblas_core::SYM_DTYPES.contains(&dtype)
    }
    unsafe fn sym(h: cb::cublasHandle_t, t: &hetblas_core::SymTile) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::sym::issue(h, t) }
    }

    // Factorizations: cuSOLVER (`solver.rs`), LASWP on our kernel (`laswp.rs`).

    fn supports_factor(op: hetblas_core::FactorOp, _dtype: hetblas_core::DType) -> bool {
        crate::solver::supports(op)
    }
    unsafe fn solver_create(ctx: &Context, s: sys::CUstream) -> Result<CudaSolver> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::create(ctx, s) }
    }
    unsafe fn solver_destroy(h: CudaSolver) {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::destroy(h.handle) }
    }
    unsafe fn potrf_workspace(h: CudaSolver, op: &hetblas_core::PotrfTile) -> Result<usize> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::potrf_workspace(h.handle, op) }
    }
    unsafe fn getrf_workspace(h: CudaSolver, op: &hetblas_core::GetrfTile) -> Result<usize> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::getrf_workspace(h.handle, op) }
    }
    unsafe fn potrf(
        h: CudaSolver,
        op: &hetblas_core::PotrfTile,
        work: hetblas_gpu::Workspace,
        dev_info: u64,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::potrf(h.handle, op, work, dev_info) }
    }
    unsafe fn getrf(
        h: CudaSolver,
        op: &hetblas_core::GetrfTile,
        work: hetblas_gpu::Workspace,
        dev_info: u64,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::getrf(h.handle, op, work, dev_info) }
    }
    unsafe fn laswp(h: CudaSolver, op: &hetblas_core::LaswpTile) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::laswp(h, op) }
    }
}
