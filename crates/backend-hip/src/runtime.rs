//! [`GpuRuntime`] for HIP: each method is the checked runtime or hipBLAS call of `result`.

use crate::result::{self, blas_api, check_blas, format_version, hip_error, Context, Libraries};
use crate::sys::{attr, err, memcpy, op as hop, HipEvent, HipStream, HipblasHandle};
use crate::Hip;
use hetblas_core::problem::triangular::{Diag, Side, TriRoutine, Uplo};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{DType, Error, GemmTile, RawTile, Result, ScalarValue, Trans, TriTile};
use hetblas_gpu::{Copy2D, CopyKind, DeviceDescription, GpuRuntime, HostJob, Registered};
use std::ffi::c_void;

fn kind(k: CopyKind) -> crate::sys::HipMemcpyKind {
    match k {
        CopyKind::HostToDevice => memcpy::HOST_TO_DEVICE,
        CopyKind::DeviceToHost => memcpy::DEVICE_TO_HOST,
        CopyKind::DeviceToDevice => memcpy::DEVICE_TO_DEVICE,
    }
}

/// The hipBLAS operation. `C` conjugates in the complex routines (the executor passes `T` for
/// real ones).
fn op(t: Trans) -> crate::sys::HipblasOperation {
    match t {
        Trans::N => hop::N,
        Trans::T => hop::T,
        Trans::C => hop::C,
    }
}

impl GpuRuntime for Hip {
    const NAME: &'static str = "hip";
    const DEVICES_VAR: &'static str = "HETBLAS_HIP_DEVICES";
    const ALREADY_MAPPED: i64 = err::ALREADY_MAPPED as i64;
    type Library = Libraries;
    type Context = Context;
    /// The thread's current device: HIP binds by `hipSetDevice`, and its per-context calls
    /// (`hipCtxGetCurrent`, `hipCtxSetCurrent`) are deprecated.
    type Current = std::ffi::c_int;
    type Stream = HipStream;
    type Event = HipEvent;
    type Blas = HipblasHandle;
    type Solver = crate::solver::RocblasHandle;

    fn init() -> Result<Libraries> {
        result::init()
    }
    fn device_count(lib: &Libraries) -> Result<i32> {
        Ok(lib.device_count)
    }
    fn open(ordinal: i32) -> Result<Context> {
        Ok(Context::new(ordinal))
    }
    fn ordinal(ctx: &Context) -> i32 {
        ctx.ordinal
    }
    fn describe(libs: &Libraries, ctx: &Context) -> Result<DeviceDescription> {
        let name = ctx.name()?;
        // Informational only: a runtime that does not answer one of these still works.
        let a = |x| ctx.attribute(x).unwrap_or(-1);
        let (major, minor) = (
            a(attr::COMPUTE_CAPABILITY_MAJOR),
            a(attr::COMPUTE_CAPABILITY_MINOR),
        );
        let (cus, bus) = (a(attr::MULTIPROCESSOR_COUNT), a(attr::PCI_BUS_ID));
        // HIP also runs on NVIDIA GPUs (and the test shim does); say whose GPU it is.
        let vendor = if name.to_ascii_uppercase().contains("NVIDIA") {
            "NVIDIA"
        } else {
            "AMD"
        };
        Ok(DeviceDescription {
            vendor: vendor.into(),
            memory_bytes: ctx.total_mem()? as u64,
            detail: format!(
                "ordinal {}, arch {major}.{minor}, {cus} CUs, PCI bus {bus:#04x}, \
                 HIP runtime {} (driver {}), {} + {}",
                ctx.ordinal,
                format_version(libs.runtime_version),
                format_version(libs.driver_version),
                libs.runtime_path,
                libs.blas_path,
            ),
            name,
        })
    }
    fn bind(ctx: &Context) -> Result<()> {
        ctx.bind()
    }
    fn current() -> Result<std::ffi::c_int> {
        result::current_device()
    }
    unsafe fn make_current(saved: std::ffi::c_int) -> Result<()> {
        result::set_device(saved)
    }
    fn mem_info(ctx: &Context) -> Result<(usize, usize)> {
        ctx.mem_info()
    }
    fn can_access_peer(dst: &Context, src: &Context) -> Result<bool> {
        dst.can_access_peer(src)
    }
    fn enable_peer_access(dst: &Context, src: &Context) -> Result<()> {
        dst.enable_peer_access(src)
    }

    fn malloc(bytes: usize) -> Result<u64> {
        result::malloc(bytes).map(|p| p as u64)
    }
    unsafe fn free(ptr: u64) {
        // SAFETY: caller contract.
        let _ = unsafe { result::free(ptr as *mut c_void) };
    }
    fn host_alloc(bytes: usize) -> Result<*mut u8> {
        result::host_malloc(bytes).map(|p| p as *mut u8)
    }
    unsafe fn host_free(ptr: *mut u8) {
        // SAFETY: caller contract.
        let _ = unsafe { result::host_free(ptr as *mut c_void) };
    }
    unsafe fn host_register(start: u64, len: usize) -> Result<Registered> {
        // SAFETY: caller contract.
        match unsafe { result::host_register(start as *mut c_void, len) }? {
            err::SUCCESS => Ok(Registered::Yes),
            err::HOST_MEMORY_ALREADY_REGISTERED => Ok(Registered::Foreign),
            r @ (err::OUT_OF_MEMORY | err::INVALID_VALUE) => {
                tracing::debug!("{}", hip_error(r, "hipHostRegister"));
                Ok(Registered::Refused)
            }
            other => Err(hip_error(other, "hipHostRegister")),
        }
    }
    unsafe fn host_unregister(start: u64) -> Result<()> {
        // SAFETY: caller contract.
        match unsafe { result::host_unregister(start as *mut c_void) } {
            Err(Error::Backend { code, .. }) if code == err::HOST_MEMORY_NOT_REGISTERED as i64 => {
                Ok(())
            }
            r => r,
        }
    }
    fn device_of_address(addr: u64) -> Option<i32> {
        result::device_of_address(addr)
    }
    fn host_registered(page: u64) -> bool {
        result::host_device_pointer(page).is_ok()
    }
    unsafe fn copy_2d(c: &Copy2D) -> Result<()> {
        let (dst, src) = (c.dst as *mut c_void, c.src as *const c_void);
        // SAFETY: caller contract.
        unsafe {
            result::memcpy_2d(
                dst,
                c.dst_pitch,
                src,
                c.src_pitch,
                c.width,
                c.height,
                kind(c.kind),
            )
        }
    }
    unsafe fn copy_2d_async(c: &Copy2D, s: HipStream) -> Result<()> {
        let (dst, src, k) = (c.dst as *mut c_void, c.src as *const c_void, kind(c.kind));
        // SAFETY: caller contract.
        unsafe {
            result::memcpy_2d_async(dst, c.dst_pitch, src, c.src_pitch, c.width, c.height, k, s)
        }
    }
    unsafe fn copy_peer_async(
        src: &RawTile,
        src_ctx: &Context,
        dst: &RawTile,
        dst_ctx: &Context,
        s: HipStream,
    ) -> Result<()> {
        if src.is_contiguous() && dst.is_contiguous() {
            let (d, sp) = (dst.addr as *mut c_void, src.addr as *const c_void);
            let (dd, sd) = (dst_ctx.ordinal, src_ctx.ordinal);
            // SAFETY: caller contract: contiguous device ranges of `bytes` on their devices.
            return unsafe { result::memcpy_peer_async(d, dd, sp, sd, src.bytes(), s) };
        }
        // Strided: one 2D copy; the destination device has peer access to the source enabled,
        // so the source addresses are reachable from it.
        // SAFETY: caller contract.
        unsafe { Self::copy_2d_async(&Copy2D::tiles(src, dst), s) }
    }

    fn stream_create() -> Result<HipStream> {
        result::stream_create()
    }
    unsafe fn stream_destroy(s: HipStream) {
        // SAFETY: caller contract.
        let _ = unsafe { result::stream_destroy(s) };
    }
    unsafe fn stream_synchronize(s: HipStream) -> Result<()> {
        // SAFETY: caller contract.
        unsafe { result::stream_synchronize(s) }
    }
    unsafe fn stream_wait_event(s: HipStream, e: HipEvent) -> Result<()> {
        // SAFETY: caller contract.
        unsafe { result::stream_wait_event(s, e) }
    }
    unsafe fn launch_host_fn(s: HipStream, job: HostJob) -> Result<()> {
        // SAFETY: caller contract.
        unsafe { result::launch_host_fn(s, job) }
    }
    fn event_create(timed: bool) -> Result<HipEvent> {
        result::event_create(timed)
    }
    unsafe fn event_record(e: HipEvent, s: HipStream) -> Result<()> {
        // SAFETY: caller contract.
        unsafe { result::event_record(e, s) }
    }
    unsafe fn event_synchronize(e: HipEvent) -> Result<()> {
        // SAFETY: caller contract.
        unsafe { result::event_synchronize(e) }
    }
    unsafe fn event_query(e: HipEvent) -> Result<bool> {
        // SAFETY: caller contract.
        unsafe { result::event_query(e) }
    }
    unsafe fn event_elapsed_ms(start: HipEvent, end: HipEvent) -> Result<f32> {
        // SAFETY: caller contract.
        unsafe { result::event_elapsed_ms(start, end) }
    }
    unsafe fn event_destroy(e: HipEvent) {
        // SAFETY: caller contract.
        let _ = unsafe { result::event_destroy(e) };
    }

    unsafe fn blas_create(s: HipStream) -> Result<HipblasHandle> {
        let api = blas_api()?;
        let mut h = std::ptr::null_mut();
        // SAFETY: writes one handle; destroyed by `blas_destroy`.
        check_blas(unsafe { (api.hipblasCreate)(&mut h) }, "hipblasCreate")?;
        // SAFETY: a live handle and stream of the current device.
        if let Err(e) = check_blas(unsafe { (api.hipblasSetStream)(h, s) }, "hipblasSetStream") {
            // SAFETY: the handle was created above and is not used again.
            unsafe { (api.hipblasDestroy)(h) };
            return Err(e);
        }
        Ok(h)
    }
    unsafe fn blas_destroy(h: HipblasHandle) {
        if let Ok(api) = blas_api() {
            // SAFETY: caller contract.
            unsafe { (api.hipblasDestroy)(h) };
        }
    }
    fn supports_add() -> bool {
        // Late C needs the add in every dtype the device computes in.
        blas_api().is_ok_and(|b| {
            b.hipblasDgeam.is_some()
                && b.hipblasSgeam.is_some()
                && (b.hipblasCgemm.is_none() || b.hipblasCgeam.is_some())
                && (b.hipblasZgemm.is_none() || b.hipblasZgeam.is_some())
        })
    }
    fn supports_dtype(dtype: DType) -> bool {
        match dtype {
            DType::F32 | DType::F64 => true,
            DType::C32 => blas_api().is_ok_and(|b| b.hipblasCgemm.is_some()),
            DType::C64 => blas_api().is_ok_and(|b| b.hipblasZgemm.is_some()),
        }
    }
    unsafe fn gemm(h: HipblasHandle, g: &GemmTile) -> Result<()> {
        let api = blas_api()?;
        let small = [g.m, g.n, g.k, g.a.ld, g.b.ld, g.c.ld]
            .iter()
            .all(|&d| d <= i32::MAX as usize);
        let too_large = || Error::Unsupported {
            device: "hip".into(),
            detail: format!(
                "a gemm tile with a dimension over 2^31 needs hipblas{}gemm_64 (hipBLAS 2.2+)",
                g.dtype().blas_prefix().to_ascii_uppercase()
            ),
        };
        use hetblas_gpu::gemm_args as call;
        use ScalarValue::{C32, C64, F32, F64};
        let missing = |name: &str| Error::Unsupported {
            device: "hip".into(),
            detail: format!("{} has no {name}", api.path),
        };
        // SAFETY: caller contract; scalars are read from host memory (the default pointer
        // mode) before the call returns; c32/c64 have the layout of hipBLAS's complex types.
        let (status, name) = unsafe {
            match (g.alpha, g.beta) {
                (C64(al), C64(be)) if small => {
                    let f = api.hipblasZgemm.ok_or_else(|| missing("hipblasZgemm"))?;
                    (call!(f, h, op, g, c64, i32, al, be), "hipblasZgemm")
                }
                (C64(al), C64(be)) => {
                    let f = api.hipblasZgemm_64.ok_or_else(too_large)?;
                    (call!(f, h, op, g, c64, i64, al, be), "hipblasZgemm_64")
                }
                (C32(al), C32(be)) if small => {
                    let f = api.hipblasCgemm.ok_or_else(|| missing("hipblasCgemm"))?;
                    (call!(f, h, op, g, c32, i32, al, be), "hipblasCgemm")
                }
                (C32(al), C32(be)) => {
                    let f = api.hipblasCgemm_64.ok_or_else(too_large)?;
                    (call!(f, h, op, g, c32, i64, al, be), "hipblasCgemm_64")
                }
                (F64(al), F64(be)) if small => (
                    call!(api.hipblasDgemm, h, op, g, f64, i32, al, be),
                    "hipblasDgemm",
                ),
                (F64(al), F64(be)) => {
                    let f = api.hipblasDgemm_64.ok_or_else(too_large)?;
                    (call!(f, h, op, g, f64, i64, al, be), "hipblasDgemm_64")
                }
                (F32(al), F32(be)) if small => (
                    call!(api.hipblasSgemm, h, op, g, f32, i32, al, be),
                    "hipblasSgemm",
                ),
                (F32(al), F32(be)) => {
                    let f = api.hipblasSgemm_64.ok_or_else(too_large)?;
                    (call!(f, h, op, g, f32, i64, al, be), "hipblasSgemm_64")
                }
                _ => return Err(Error::internal("mixed scalar types in a gemm tile")),
            }
        };
        check_blas(status, name)
    }
    unsafe fn add(h: HipblasHandle, beta: ScalarValue, x: &RawTile, y: &RawTile) -> Result<()> {
        let api = blas_api()?;
        let missing = || Error::Unsupported {
            device: "hip".into(),
            detail: format!("{} has no hipblas{{S,D,C,Z}}geam", api.path),
        };
        use hetblas_gpu::add_args as call;
        // SAFETY: caller contract; geam allows C == A with the same leading dimension.
        let status = unsafe {
            match beta {
                ScalarValue::F64(b) => call!(
                    api.hipblasDgeam.ok_or_else(missing)?,
                    h,
                    hop::N,
                    f64,
                    b,
                    x,
                    y
                ),
                ScalarValue::F32(b) => call!(
                    api.hipblasSgeam.ok_or_else(missing)?,
                    h,
                    hop::N,
                    f32,
                    b,
                    x,
                    y
                ),
                ScalarValue::C64(b) => call!(
                    api.hipblasZgeam.ok_or_else(missing)?,
                    h,
                    hop::N,
                    c64,
                    c64::new(1.0, 0.0),
                    b,
                    x,
                    y
                ),
                ScalarValue::C32(b) => call!(
                    api.hipblasCgeam.ok_or_else(missing)?,
                    h,
                    hop::N,
                    c32,
                    c32::new(1.0, 0.0),
                    b,
                    x,
                    y
                ),
            }
        };
        check_blas(status, "hipblasGeam")
    }

    // Triangular routines

    fn supports_tri(dtype: DType) -> bool {
        blas_api().is_ok_and(|b| match dtype {
            DType::F32 => b.hipblasStrsm.is_some() && b.hipblasStrmm.is_some(),
            DType::F64 => b.hipblasDtrsm.is_some() && b.hipblasDtrmm.is_some(),
            DType::C32 => b.hipblasCtrsm.is_some() && b.hipblasCtrmm.is_some(),
            DType::C64 => b.hipblasZtrsm.is_some() && b.hipblasZtrmm.is_some(),
        })
    }
    unsafe fn tri(h: HipblasHandle, routine: TriRoutine, t: &TriTile) -> Result<()> {
        use crate::sys::tri as e;
        let api = blas_api()?;
        let o = t.opts;
        let side = match o.side {
            Side::Left => e::LEFT,
            Side::Right => e::RIGHT,
        };
        let uplo = match o.uplo {
            Uplo::Lower => e::LOWER,
            Uplo::Upper => e::UPPER,
        };
        let diag = match o.diag {
            Diag::Unit => e::UNIT,
            Diag::NonUnit => e::NON_UNIT,
        };
        let (m, n, lda, ldb) = (t.m as i32, t.n as i32, t.a.ld as i32, t.b.ld as i32);
        let ta = op(o.transa);
        let missing = |name: &str| Error::Unsupported {
            device: "hip".into(),
            detail: format!("{} has no {name}", api.path),
        };
        macro_rules! call {
            ($trsm:ident, $trmm:ident, $t:ty, $alpha:expr) => {{
                let alpha: $t = $alpha;
                let (a, b) = (t.a.addr as *const $t, t.b.addr as *mut $t);
                match routine {
                    TriRoutine::Trsm => {
                        let f = api.$trsm.ok_or_else(|| missing(stringify!($trsm)))?;
                        (
                            f(h, side, uplo, ta, diag, m, n, &alpha, a, lda, b, ldb),
                            stringify!($trsm),
                        )
                    }
                    TriRoutine::Trmm => {
                        let f = api.$trmm.ok_or_else(|| missing(stringify!($trmm)))?;
                        (
                            f(
                                h, side, uplo, ta, diag, m, n, &alpha, a, lda, b, ldb, b, ldb,
                            ),
                            stringify!($trmm),
                        )
                    }
                }
            }};
        }
        // SAFETY: caller contract (checked tiles within 32 bits); alpha is read from host
        // memory before the call returns; c32/c64 have the layout of hipBLAS's complex types.
        let (status, name) = unsafe {
            match t.alpha {
                ScalarValue::F64(x) => call!(hipblasDtrsm, hipblasDtrmm, f64, x),
                ScalarValue::F32(x) => call!(hipblasStrsm, hipblasStrmm, f32, x),
                ScalarValue::C64(x) => call!(hipblasZtrsm, hipblasZtrmm, c64, x),
                ScalarValue::C32(x) => call!(hipblasCtrsm, hipblasCtrmm, c32, x),
            }
        };
        check_blas(status, name)
    }

    // Symmetric and Hermitian routines

    fn supports_sym(dtype: DType) -> bool {
        blas_api().is_ok_and(|b| b.sym.complete(dtype))
    }
    unsafe fn sym(h: HipblasHandle, t: &hetblas_core::SymTile) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::sym::issue(h, t, op) }
    }

    // Factorizations: rocSOLVER over a rocBLAS handle (`solver.rs`); it keeps its own
    // workspace, so the workspace queries keep their default (none).

    fn supports_factor(_op: hetblas_core::FactorOp, _dtype: DType) -> bool {
        crate::solver::available()
    }
    unsafe fn solver_create(_ctx: &Context, s: HipStream) -> Result<crate::solver::RocblasHandle> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::create(s) }
    }
    unsafe fn solver_destroy(h: crate::solver::RocblasHandle) {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::destroy(h) }
    }
    unsafe fn potrf(
        h: crate::solver::RocblasHandle,
        op: &hetblas_core::PotrfTile,
        _work: hetblas_gpu::Workspace,
        dev_info: u64,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::potrf(h, op, dev_info) }
    }
    unsafe fn getrf(
        h: crate::solver::RocblasHandle,
        op: &hetblas_core::GetrfTile,
        _work: hetblas_gpu::Workspace,
        dev_info: u64,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::getrf(h, op, dev_info) }
    }
    unsafe fn laswp(h: crate::solver::RocblasHandle, op: &hetblas_core::LaswpTile) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::solver::laswp(h, op) }
    }
}
