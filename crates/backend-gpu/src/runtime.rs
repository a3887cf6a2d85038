//! The vendor trait: the raw runtime and BLAS calls a GPU vendor provides, with the handle types
//! as associated types. Everything else (device, memory, streams and events, links, host
//! registration, kernels, discovery) is written once, generically, over it.
//!
//! Contract shared by every method: the generic layer makes the device's context current
//! ([`GpuRuntime::bind`]) before a call that needs one, and puts back what the caller's thread
//! had current when the call returns ([`GpuRuntime::current`], [`crate::CurrentGuard`]);
//! methods that take raw addresses or handles are `unsafe fn`s whose callers keep them valid;
//! failures come back as `hetblas_core::Error` (the adapter maps its status codes in one
//! helper).

use crate::registration::Registered;
use hetblas_core::{
    FactorOp, GemmTile, GetrfTile, LaswpTile, PotrfTile, RawTile, Result, ScalarValue,
};
use std::fmt;

/// What a GPU device says about itself (for [`hetblas_core::DeviceInfo`]).
#[derive(Debug, Clone)]
pub struct DeviceDescription {
    pub name: String,
    pub vendor: String,
    pub memory_bytes: u64,
    /// Ordinal, architecture, library versions.
    pub detail: String,
}

/// The direction of a copy, as the runtimes' 2D copies want it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

impl CopyKind {
    /// The kind of a copy between two tiles (host -> host does not reach a GPU runtime).
    pub fn between(src: &RawTile, dst: &RawTile) -> CopyKind {
        match (src.space.is_host(), dst.space.is_host()) {
            (true, _) => CopyKind::HostToDevice,
            (false, true) => CopyKind::DeviceToHost,
            (false, false) => CopyKind::DeviceToDevice,
        }
    }
}

/// A 2D copy: `height` columns of `width` bytes, each `src_pitch` / `dst_pitch` bytes apart.
#[derive(Debug, Clone, Copy)]
pub struct Copy2D {
    pub src: u64,
    pub src_pitch: usize,
    pub dst: u64,
    pub dst_pitch: usize,
    pub width: usize,
    pub height: usize,
    pub kind: CopyKind,
}

impl Copy2D {
    /// The copy of tile `src` onto tile `dst` (same shape and dtype).
    pub fn tiles(src: &RawTile, dst: &RawTile) -> Copy2D {
        Copy2D {
            src: src.addr,
            src_pitch: src.pitch(),
            dst: dst.addr,
            dst_pitch: dst.pitch(),
            width: src.row_bytes(),
            height: src.cols,
            kind: CopyKind::between(src, dst),
        }
    }
}

/// Host work after GPU work: a host function run in stream order (a factorization's `info`),
/// or the copy-out of a staged device->host copy (run by its link's thread). It must not call
/// the GPU runtime.
pub type HostJob = Box<dyn FnOnce() + Send + 'static>;

/// The C trampoline of a [`HostJob`]: pass `Box::into_raw(Box::new(job))` as its user data.
///
/// # Safety
/// `user` is a `Box<HostJob>` leaked as described, and the trampoline runs once for it.
pub unsafe extern "C" fn run_host_job(user: *mut std::ffi::c_void) {
    // SAFETY: caller contract: a leaked Box<HostJob>, consumed once here.
    let job = unsafe { Box::from_raw(user as *mut HostJob) };
    job();
}

/// One GPU vendor's runtime and BLAS, raw. Implemented by a unit type in each adapter crate
/// (`hetblas_cuda::Cuda`, `hetblas_hip::Hip`).
pub trait GpuRuntime: Sized + Send + Sync + fmt::Debug + 'static {
    /// Backend name ("cuda"): device labels, queue and link names, error messages.
    const NAME: &'static str;
    /// The setting that restricts the device ordinals taken ("HETBLAS_CUDA_DEVICES"; the
    /// `hetblas` crate reads it into [`crate::GpuBackend::devices`]), named in messages.
    const DEVICES_VAR: &'static str;
    /// The status code (as in `Error::Backend::code`) of a device allocation that collides
    /// with the registration of host memory the caller freed (`PinCache::retry_after_unmapped`).
    const ALREADY_MAPPED: i64;

    /// What loading the libraries found (versions, paths), for device descriptions.
    type Library: Send + Sync;
    /// One device, made current on a thread with [`bind`](Self::bind).
    type Context: Send + Sync + fmt::Debug;
    /// What [`bind`](Self::bind) changes on a thread: the context current there (CUDA: a
    /// `CUcontext`, null for none) or its device (HIP: an ordinal). A call saves it on entry
    /// and makes it current again on return ([`crate::CurrentGuard`]).
    type Current: Copy + PartialEq + fmt::Debug + 'static;
    type Stream: Copy + fmt::Debug;
    type Event: Copy + fmt::Debug;
    /// A BLAS handle, bound to one stream.
    type Blas: Copy + fmt::Debug;
    /// A solver (LAPACK) handle, bound to one stream: cuSOLVER's, or the rocBLAS handle
    /// rocSOLVER takes. Runtimes without a solver use `()`.
    type Solver: Copy + fmt::Debug;

    // Libraries and devices.

    /// Loads the runtime and BLAS libraries and initialises the runtime.
    ///
    /// # Errors
    /// `Unavailable` with the reason: library not found, no device, driver too old.
    fn init() -> Result<Self::Library>;
    /// How many devices the runtime sees (`Unavailable` "no ... device" when none).
    fn device_count(lib: &Self::Library) -> Result<i32>;
    fn open(ordinal: i32) -> Result<Self::Context>;
    fn ordinal(ctx: &Self::Context) -> i32;
    fn describe(lib: &Self::Library, ctx: &Self::Context) -> Result<DeviceDescription>;
    /// Makes `ctx` current on the calling thread.
    fn bind(ctx: &Self::Context) -> Result<()>;
    /// What is current on the calling thread (a thread-local read in the runtime).
    fn current() -> Result<Self::Current>;
    /// Makes `saved` current on the calling thread again.
    ///
    /// # Safety
    /// `saved` came from [`current`](Self::current) on this thread, and what it names (a
    /// context) has not been destroyed since.
    unsafe fn make_current(saved: Self::Current) -> Result<()>;
    /// (free, total) bytes of device memory; binds `ctx`.
    fn mem_info(ctx: &Self::Context) -> Result<(usize, usize)>;
    /// Whether `dst` can read `src`'s memory directly (NVLink, xGMI, PCIe P2P).
    fn can_access_peer(dst: &Self::Context, src: &Self::Context) -> Result<bool>;
    /// Lets `dst` (bound by the caller) access `src`'s memory; "already enabled" is success.
    fn enable_peer_access(dst: &Self::Context, src: &Self::Context) -> Result<()>;

    // Memory.

    fn malloc(bytes: usize) -> Result<u64>;
    /// # Safety
    /// `ptr` came from [`malloc`](Self::malloc), is freed once, and nothing queued uses it.
    unsafe fn free(ptr: u64);
    /// Page-locked host memory every device can DMA (portable).
    fn host_alloc(bytes: usize) -> Result<*mut u8>;
    /// # Safety
    /// `ptr` came from [`host_alloc`](Self::host_alloc), is freed once, and nothing queued uses it.
    unsafe fn host_free(ptr: *mut u8);
    /// Page-locks `[start, start + len)` for every device (portable, mapped).
    ///
    /// # Safety
    /// The range is mapped host memory that stays mapped while registered.
    unsafe fn host_register(start: u64, len: usize) -> Result<Registered>;
    /// Releases a registration; one the runtime no longer holds (dropped behind the cache's
    /// back, which verification then finds) is `Ok`.
    ///
    /// # Safety
    /// `start` begins a registration of ours and no copy through it is in flight.
    unsafe fn host_unregister(start: u64) -> Result<()>;
    /// Whether the runtime still holds a registration of the page at `page`.
    fn host_registered(page: u64) -> bool;
    /// The ordinal of the device whose own memory `addr` is (allocated by anyone in the
    /// process through this vendor's runtime), or `None`: host memory, registered or managed
    /// memory (the host can read both), or an address the runtime does not know. Asks the
    /// runtime about the address only: no context is made current.
    fn device_of_address(addr: u64) -> Option<i32>;
    /// A synchronous 2D copy (used by the registration probes).
    ///
    /// # Safety
    /// Both ranges are valid for the copy in the memory its kind names.
    unsafe fn copy_2d(copy: &Copy2D) -> Result<()>;
    /// A 2D copy, asynchronous on `stream`.
    ///
    /// # Safety
    /// As [`copy_2d`](Self::copy_2d), and the ranges stay valid until `stream` has run it.
    unsafe fn copy_2d_async(copy: &Copy2D, stream: Self::Stream) -> Result<()>;
    /// A copy of tile `src` (device memory of `src_ctx`) onto tile `dst` (of `dst_ctx`), on
    /// `stream` of the destination device.
    ///
    /// # Safety
    /// As [`copy_2d_async`](Self::copy_2d_async); peer access from `dst_ctx` to `src_ctx` is on.
    unsafe fn copy_peer_async(
        src: &RawTile,
        src_ctx: &Self::Context,
        dst: &RawTile,
        dst_ctx: &Self::Context,
        stream: Self::Stream,
    ) -> Result<()>;

    // Streams and events.

    /// A non-blocking stream on the current device.
    fn stream_create() -> Result<Self::Stream>;
    /// # Safety
    /// `s` is live and destroyed once, after its work finished.
    unsafe fn stream_destroy(s: Self::Stream);
    /// # Safety
    /// `s` is live.
    unsafe fn stream_synchronize(s: Self::Stream) -> Result<()>;
    /// Later work on `s` waits for `e` (an event of any device of this runtime): for the record
    /// of `e` most recent at this call; recording `e` again later does not change what `s`
    /// waits for (CUDA and HIP semantics; the streams' event pools rely on it).
    ///
    /// # Safety
    /// `s` and `e` are live.
    unsafe fn stream_wait_event(s: Self::Stream, e: Self::Event) -> Result<()>;
    /// Runs `job` on the host once the work issued to `s` before it is done.
    ///
    /// # Safety
    /// `s` is live; what `job` touches stays valid until it has run.
    unsafe fn launch_host_fn(s: Self::Stream, job: HostJob) -> Result<()>;
    /// An event on the current device; `timed` ones carry timestamps.
    fn event_create(timed: bool) -> Result<Self::Event>;
    /// # Safety
    /// `e` and `s` are live and belong to the current device.
    unsafe fn event_record(e: Self::Event, s: Self::Stream) -> Result<()>;
    /// # Safety
    /// `e` is live.
    unsafe fn event_synchronize(e: Self::Event) -> Result<()>;
    /// # Safety
    /// `e` is live.
    unsafe fn event_query(e: Self::Event) -> Result<bool>;
    /// Milliseconds from `start` to `end`.
    ///
    /// # Safety
    /// Both are live, completed timing events of one device.
    unsafe fn event_elapsed_ms(start: Self::Event, end: Self::Event) -> Result<f32>;
    /// # Safety
    /// `e` is live and destroyed once.
    unsafe fn event_destroy(e: Self::Event);

    // BLAS: one method per kernel. A new routine is one method here and one generic wrapper in
    // `kernel.rs`.

    /// A BLAS handle on the current device issuing on `s`.
    ///
    /// # Safety
    /// `s` is a live stream of the current device that outlives the handle.
    unsafe fn blas_create(s: Self::Stream) -> Result<Self::Blas>;
    /// # Safety
    /// `h` is live and destroyed once.
    unsafe fn blas_destroy(h: Self::Blas);
    /// Whether `add` (geam) is available, in every dtype `gemm` supports.
    fn supports_add() -> bool {
        true
    }
    /// Whether `gemm` (and `add`) take this dtype: f32, f64, c32 and c64 unless the vendor
    /// library lacks an entry point.
    fn supports_dtype(_dtype: hetblas_core::DType) -> bool {
        true
    }
    /// Issues the checked, non-empty tile GEMM `op` on `h`'s stream, in its dtype; `Trans::C`
    /// conjugates a complex operand (the executor passes `T` for real ones).
    ///
    /// # Safety
    /// The tiles are device memory of their shapes (checked by `GemmTile::check`) that stays
    /// valid until the stream has run the kernel.
    unsafe fn gemm(h: Self::Blas, op: &GemmTile) -> Result<()>;
    /// `y += beta * x` (geam in place on `y`) for checked, non-empty tiles within 32 bits.
    ///
    /// # Safety
    /// As [`gemm`](Self::gemm).
    unsafe fn add(h: Self::Blas, beta: ScalarValue, x: &RawTile, y: &RawTile) -> Result<()>;

    // Triangular routines

    /// Whether `tri` (TRSM and TRMM) takes this dtype.
    fn supports_tri(_dtype: hetblas_core::DType) -> bool {
        false
    }
    /// Issues the checked, non-empty tile TRSM or TRMM `op` (B in place) on `h`'s stream, with
    /// 32-bit dimensions (`TriTile::check_i32`).
    ///
    /// # Safety
    /// As [`gemm`](Self::gemm).
    unsafe fn tri(
        _h: Self::Blas,
        _routine: hetblas_core::problem::TriRoutine,
        _op: &hetblas_core::TriTile,
    ) -> Result<()> {
        Err(hetblas_core::Error::Unsupported {
            device: Self::NAME.into(),
            detail: "triangular tiles".into(),
        })
    }

    // Symmetric and Hermitian routines

    /// Whether `sym` takes this dtype (every symmetric routine BLAS defines for it).
    fn supports_sym(_dtype: hetblas_core::DType) -> bool {
        false
    }
    /// Issues the checked, non-empty symmetric tile `op` (SYRK/HERK, SYR2K/HER2K, SYMM/HEMM
    /// with its uplo, trans, side) on `h`'s stream, dimensions within 32 bits.
    ///
    /// # Safety
    /// As [`gemm`](Self::gemm).
    unsafe fn sym(_h: Self::Blas, op: &hetblas_core::SymTile) -> Result<()> {
        Err(hetblas_core::Error::Unsupported {
            device: Self::NAME.into(),
            detail: format!("tile {}", op.op.name()),
        })
    }

    // Factorizations (the solver library: LAPACK's tile ops). The generic layer
    // (`factor.rs`) keeps one solver handle per compute stream, the device workspace, and the
    // device `info` it copies back; a vendor only makes the calls.

    /// Whether the solver library is there and has `op` in this dtype (asked before every
    /// other solver method; loads the library on first use).
    fn supports_factor(_op: FactorOp, _dtype: hetblas_core::DType) -> bool {
        false
    }
    /// A solver handle on the current device (`ctx`, bound) issuing on `s`. The context is
    /// there for what a vendor keeps per device beside the library (CUDA: its own kernels).
    ///
    /// # Safety
    /// `s` is a live stream of `ctx`, the current device, that outlives the handle.
    unsafe fn solver_create(_ctx: &Self::Context, _s: Self::Stream) -> Result<Self::Solver> {
        Err(hetblas_core::Error::Unsupported {
            device: Self::NAME.into(),
            detail: "no solver library".into(),
        })
    }
    /// # Safety
    /// `h` is live, destroyed once, after the work issued with it finished.
    unsafe fn solver_destroy(_h: Self::Solver) {}
    /// Bytes of device workspace [`potrf`](Self::potrf) needs for `op` (0: the library
    /// manages its own).
    ///
    /// # Safety
    /// `h` is live; `op` is checked, non-empty, within 32 bits (its memory is not touched).
    unsafe fn potrf_workspace(_h: Self::Solver, _op: &PotrfTile) -> Result<usize> {
        Ok(0)
    }
    /// As [`potrf_workspace`](Self::potrf_workspace), for [`getrf`](Self::getrf).
    ///
    /// # Safety
    /// As [`potrf_workspace`](Self::potrf_workspace).
    unsafe fn getrf_workspace(_h: Self::Solver, _op: &GetrfTile) -> Result<usize> {
        Ok(0)
    }
    /// Issues `?potrf` of the checked, non-empty tile on `h`'s stream, with `work` (device
    /// memory of at least the bytes `potrf_workspace` asked, address 0 when it asked none),
    /// writing LAPACK's `info` into the device `i32` at `dev_info`.
    ///
    /// # Safety
    /// As [`gemm`](Self::gemm) for the tile; `work` and `dev_info` are device memory of this
    /// device that stays valid until the stream has run the call.
    unsafe fn potrf(
        _h: Self::Solver,
        _op: &PotrfTile,
        _work: Workspace,
        _dev_info: u64,
    ) -> Result<()> {
        Err(hetblas_core::Error::Unsupported {
            device: Self::NAME.into(),
            detail: "tile potrf".into(),
        })
    }
    /// Issues `?getrf` of the checked, non-empty panel on `h`'s stream, its pivots into
    /// `op.ipiv` (device memory), as [`potrf`](Self::potrf).
    ///
    /// # Safety
    /// As [`potrf`](Self::potrf), and `op.ipiv` is device memory of `len` `i32`s.
    unsafe fn getrf(
        _h: Self::Solver,
        _op: &GetrfTile,
        _work: Workspace,
        _dev_info: u64,
    ) -> Result<()> {
        Err(hetblas_core::Error::Unsupported {
            device: Self::NAME.into(),
            detail: "tile getrf".into(),
        })
    }
    /// Issues `?laswp` (`incx = 1`) of the checked tile with work (`k1 <= k2`, columns) on
    /// `h`'s stream.
    ///
    /// # Safety
    /// As [`gemm`](Self::gemm) for the tile; `op.ipiv` is device memory whose entries
    /// `k1 - 1 .. k2` name rows of the tile when the stream runs the call.
    unsafe fn laswp(_h: Self::Solver, _op: &LaswpTile) -> Result<()> {
        Err(hetblas_core::Error::Unsupported {
            device: Self::NAME.into(),
            detail: "tile laswp".into(),
        })
    }
}

/// A device workspace lent to a solver call: `bytes` at `addr` (0 and 0 when none was asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workspace {
    pub addr: u64,
    pub bytes: usize,
}

/// A host scalar passed to a vendor BLAS by address, at an address aligned for every type it
/// is read as: `cuDoubleComplex` and `hipDoubleComplex` are 16-byte aligned where a `c64` is 8.
/// cuBLAS reads a host scalar with aligned loads: through an 8-byte aligned `c64`, ZSYRK and
/// the other double-complex symmetric routines crashed the process (H200, 2026-11-30, the CUDA
/// conformance cases `sym_device_operands`, `sym_every_option_c64`, `sym_quick_returns`).
/// Every scalar the adapters' shared argument lists pass goes through it
/// ([`gemm_args!`](crate::gemm_args), [`add_args!`](crate::add_args),
/// [`sym_call!`](crate::sym_call)).
#[repr(C, align(16))]
pub struct Aligned<T>(pub T);

/// The arguments every BLAS GEMM entry point takes, in the reference order, with dimensions
/// converted by `$n` (`i32` or `i64`) and transposes by `$op`: adapters write each call once.
#[macro_export]
macro_rules! gemm_args {
    ($f:expr, $h:expr, $op:expr, $g:expr, $t:ty, $n:ty, $alpha:expr, $beta:expr) => {{
        let g: &hetblas_core::GemmTile = $g;
        let (alpha, beta) = (
            $crate::runtime::Aligned($alpha),
            $crate::runtime::Aligned($beta),
        );
        $f(
            $h,
            $op(g.transa),
            $op(g.transb),
            g.m as $n,
            g.n as $n,
            g.k as $n,
            &alpha.0,
            g.a.addr as *const $t,
            g.a.ld as $n,
            g.b.addr as *const $t,
            g.b.ld as $n,
            &beta.0,
            g.c.addr as *mut $t,
            g.c.ld as $n,
        )
    }};
}

/// The arguments of a BLAS geam computing `y = 1 * y + beta * x` in place, as [`gemm_args!`](crate::gemm_args).
/// A real `$t` writes its one as `1.0`; a complex one passes `$one` (its 1 + 0i) first.
#[macro_export]
macro_rules! add_args {
    ($f:expr, $h:expr, $n_op:expr, $t:ty, $beta:expr, $x:expr, $y:expr) => {{
        let one: $t = 1.0;
        $crate::add_args!($f, $h, $n_op, $t, one, $beta, $x, $y)
    }};
    ($f:expr, $h:expr, $n_op:expr, $t:ty, $one:expr, $beta:expr, $x:expr, $y:expr) => {{
        let (x, y): (&hetblas_core::RawTile, &hetblas_core::RawTile) = ($x, $y);
        let one: $crate::runtime::Aligned<$t> = $crate::runtime::Aligned($one);
        let beta = $crate::runtime::Aligned($beta);
        $f(
            $h,
            $n_op,
            $n_op,
            x.rows as i32,
            x.cols as i32,
            &one.0,
            y.addr as *const $t,
            y.ld as i32,
            &beta.0,
            x.addr as *const $t,
            x.ld as i32,
            y.addr as *mut $t,
            y.ld as i32,
        )
    }};
}

/// Picks a vendor routine by the tile's dtype and runs `$body` with it: `$f` bound to the S,
/// D, C or Z entry point given (a function, or a function pointer the vendor loaded), `$t` to
/// the element type (`f32`, `f64`, then the vendor's complex types `$c_ty` and `$z_ty`, which
/// have the layout of `c32` and `c64`). Adapters write each call once for the four types:
///
/// ```ignore
/// per_dtype!(op.dtype(), (f, T) => f(h, n, a as *mut T, lda),
///     [cs::cusolverDnSlaswp, cs::cusolverDnDlaswp, cs::cusolverDnClaswp, cs::cusolverDnZlaswp],
///     [cs::cuComplex, cs::cuDoubleComplex])
/// ```
#[macro_export]
macro_rules! per_dtype {
    ($dtype:expr, ($f:ident, $t:ident) => $body:expr,
     [$s:expr, $d:expr, $c:expr, $z:expr], [$c_ty:ty, $z_ty:ty]) => {
        match $dtype {
            hetblas_core::DType::F32 => {
                let $f = $s;
                #[allow(dead_code, reason = "not every call names the element type")]
                type $t = f32;
                $body
            }
            hetblas_core::DType::F64 => {
                let $f = $d;
                #[allow(dead_code, reason = "not every call names the element type")]
                type $t = f64;
                $body
            }
            hetblas_core::DType::C32 => {
                let $f = $c;
                #[allow(dead_code, reason = "not every call names the element type")]
                type $t = $c_ty;
                $body
            }
            hetblas_core::DType::C64 => {
                let $f = $z;
                #[allow(dead_code, reason = "not every call names the element type")]
                type $t = $z_ty;
                $body
            }
        }
    };
}
