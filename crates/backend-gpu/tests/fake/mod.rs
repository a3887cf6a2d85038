//! A GPU runtime faked in host memory, so that every generic path of the GPU layer (discovery,
//! links with staging and registration, the registration probes, kernels on their streams,
//! events) runs on CI. "Device" memory is host memory; every stream operation runs at once on
//! the calling thread (a legal in-order stream); the BLAS is a naive loop. Two devices, with
//! peer access between them. Each thread has a current context, as in CUDA: none at first, a
//! device once `bind` or the caller's own code (`set_current`) makes one current; an
//! allocation needs one.

use hetblas_core::{Error, GemmTile, RawTile, Result, ScalarValue, Trans};
use hetblas_cpu::HostLapack;
use hetblas_gpu::{Copy2D, CopyKind, DeviceDescription, GpuRuntime, HostJob, Registered};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

#[derive(Debug, Default)]
pub struct Fake;

pub type FakeBackend = hetblas_gpu::GpuBackend<Fake>;

#[derive(Default)]
struct State {
    /// Live allocations (device and pinned): address -> words.
    allocs: HashMap<u64, usize>,
    /// The device ordinal of each device allocation (pinned host memory has none).
    owners: HashMap<u64, i32>,
    /// Registered host ranges: start -> length.
    registered: HashMap<u64, usize>,
    /// When each recorded event was recorded.
    events: HashMap<u64, Instant>,
    /// Events created and not destroyed.
    live_events: std::collections::HashSet<u64>,
    /// Destructions of handles that were not live.
    destroyed_twice: usize,
}

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Every stream synchronisation fails while set (a device error; tests of the error paths, in a
/// test binary of their own: the fake's state is the process's).
#[allow(
    dead_code,
    reason = "used by copy_out_errors.rs; other tests share the module"
)]
pub static FAIL_STREAM_SYNC: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Milliseconds a copy-out thread's wait for its DMA takes (a copy-out still running when the
/// caller synchronises), 0 for none.
#[allow(
    dead_code,
    reason = "used by copy_out_errors.rs; other tests share the module"
)]
pub static COPY_OUT_WAIT_MS: AtomicU64 = AtomicU64::new(0);

/// Whether event handle `e` was created and not destroyed yet.
#[allow(
    dead_code,
    reason = "used by layer.rs; conformance.rs shares the module"
)]
pub fn event_live(e: u64) -> bool {
    state().live_events.contains(&e)
}

/// How many times a handle that was not live was destroyed (0 in a correct layer).
#[allow(
    dead_code,
    reason = "used by layer.rs; conformance.rs shares the module"
)]
pub fn events_destroyed_twice() -> usize {
    state().destroyed_twice
}

/// Forgets the registration starting at `start` behind the cache's back (as another library
/// unregistering it would).
#[allow(
    dead_code,
    reason = "used by layer.rs; conformance.rs shares the module"
)]
pub fn forget_registration(start: u64) -> bool {
    state().registered.remove(&start).is_some()
}

thread_local! {
    /// The context current on this thread (`bind`, `make_current`): a device ordinal, or none,
    /// as a CUDA thread starts.
    static BOUND: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
    /// How many times `make_current` ran on this thread.
    static RESTORES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Makes `ctx` current on this thread, as the caller's own GPU code would (`None`: none).
#[allow(
    dead_code,
    reason = "used by thread_context.rs; the other tests share the module"
)]
pub fn set_current(ctx: Option<i32>) {
    BOUND.with(|b| b.set(ctx));
}

/// The context current on this thread.
#[allow(
    dead_code,
    reason = "used by thread_context.rs; the other tests share the module"
)]
pub fn current() -> Option<i32> {
    BOUND.with(|b| b.get())
}

/// How many times the GPU layer made a saved context current again on this thread.
#[allow(
    dead_code,
    reason = "used by thread_context.rs; the other tests share the module"
)]
pub fn restores() -> usize {
    RESTORES.with(|r| r.get())
}

fn alloc(bytes: usize) -> u64 {
    let words = bytes.div_ceil(8).max(1);
    let p = Box::into_raw(vec![0u64; words].into_boxed_slice()) as *mut u64 as u64;
    state().allocs.insert(p, words);
    p
}

fn free(p: u64) {
    let mut st = state();
    st.owners.remove(&p);
    if let Some(words) = st.allocs.remove(&p) {
        let slice = std::ptr::slice_from_raw_parts_mut(p as *mut u64, words);
        // SAFETY: allocated by `alloc` as a boxed slice of `words` words, freed once.
        drop(unsafe { Box::from_raw(slice) });
    }
}

/// `c = alpha op(a) op(b) + beta c` (`C` conjugating), never reading C when beta is 0.
///
/// # Safety
/// The tiles are valid host memory of their shapes.
unsafe fn naive_gemm<T: hetblas_core::Scalar>(g: &GemmTile, alpha: T, beta: T) {
    let at = |t: &RawTile, tr: Trans, i: usize, j: usize| {
        let (r, c) = if tr.is_transposed() { (j, i) } else { (i, j) };
        // SAFETY: inside the tile (caller contract).
        let x = unsafe { *(t.addr as *const T).add(r + c * t.ld) };
        if tr.is_conjugated() {
            x.conj()
        } else {
            x
        }
    };
    for j in 0..g.n {
        for i in 0..g.m {
            let mut sum = T::default();
            for l in 0..g.k {
                sum = sum + at(&g.a, g.transa, i, l) * at(&g.b, g.transb, l, j);
            }
            // SAFETY: inside C (caller contract).
            let c = unsafe { &mut *(g.c.addr as *mut T).add(i + j * g.c.ld) };
            *c = if beta == T::default() {
                alpha * sum
            } else {
                alpha * sum + beta * *c
            };
        }
    }
}

impl GpuRuntime for Fake {
    const NAME: &'static str = "fake";
    const DEVICES_VAR: &'static str = "HETBLAS_FAKE_DEVICES";
    const ALREADY_MAPPED: i64 = 208;
    type Library = ();
    type Context = i32;
    type Current = Option<i32>;
    type Stream = u64;
    type Event = u64;
    type Blas = u64;
    type Solver = u64;

    fn init() -> Result<()> {
        Ok(())
    }
    fn device_count(_: &()) -> Result<i32> {
        Ok(2)
    }
    fn open(ordinal: i32) -> Result<i32> {
        Ok(ordinal)
    }
    fn ordinal(ctx: &i32) -> i32 {
        *ctx
    }
    fn describe(_: &(), ctx: &i32) -> Result<DeviceDescription> {
        Ok(DeviceDescription {
            name: format!("fake GPU {ctx}"),
            vendor: "hetblas".into(),
            memory_bytes: 1 << 30,
            detail: "host memory".into(),
        })
    }
    fn bind(ctx: &i32) -> Result<()> {
        BOUND.with(|b| b.set(Some(*ctx)));
        Ok(())
    }
    fn current() -> Result<Option<i32>> {
        Ok(BOUND.with(|b| b.get()))
    }
    unsafe fn make_current(saved: Option<i32>) -> Result<()> {
        RESTORES.with(|r| r.set(r.get() + 1));
        BOUND.with(|b| b.set(saved));
        Ok(())
    }
    fn mem_info(_: &i32) -> Result<(usize, usize)> {
        Ok((3 << 30, 4 << 30))
    }
    fn can_access_peer(dst: &i32, src: &i32) -> Result<bool> {
        Ok(dst != src)
    }
    fn enable_peer_access(_: &i32, _: &i32) -> Result<()> {
        Ok(())
    }
    fn malloc(bytes: usize) -> Result<u64> {
        // As in CUDA, an allocation needs a current context: the layer binds one first.
        let owner = BOUND
            .with(|b| b.get())
            .ok_or_else(|| Error::internal("fake malloc with no context current"))?;
        let p = alloc(bytes);
        state().owners.insert(p, owner);
        Ok(p)
    }
    unsafe fn free(ptr: u64) {
        free(ptr)
    }
    fn host_alloc(bytes: usize) -> Result<*mut u8> {
        Ok(alloc(bytes) as *mut u8)
    }
    unsafe fn host_free(ptr: *mut u8) {
        free(ptr as u64)
    }
    unsafe fn host_register(start: u64, len: usize) -> Result<Registered> {
        let mut st = state();
        if st
            .registered
            .iter()
            .any(|(&s, &l)| start < s + l as u64 && s < start + len as u64)
        {
            return Ok(Registered::Foreign);
        }
        st.registered.insert(start, len);
        Ok(Registered::Yes)
    }
    unsafe fn host_unregister(start: u64) -> Result<()> {
        state().registered.remove(&start);
        Ok(())
    }
    fn host_registered(page: u64) -> bool {
        state()
            .registered
            .iter()
            .any(|(&s, &l)| (s..s + l as u64).contains(&page))
    }
    fn device_of_address(addr: u64) -> Option<i32> {
        let st = state();
        st.owners.iter().find_map(|(&start, &ordinal)| {
            let words = st.allocs.get(&start)?;
            (start..start + 8 * *words as u64)
                .contains(&addr)
                .then_some(ordinal)
        })
    }
    unsafe fn copy_2d(c: &Copy2D) -> Result<()> {
        // As CUDA: a host range that meets a registration must lie wholly inside it (a copy
        // over pages only partly registered, or over two registrations, is refused). Pinned
        // allocations are exempt: here they come from the same heap as the registered
        // buffers, in CUDA never.
        let host = match c.kind {
            CopyKind::HostToDevice => Some((c.src, c.src_pitch)),
            CopyKind::DeviceToHost => Some((c.dst, c.dst_pitch)),
            CopyKind::DeviceToDevice => None,
        };
        if let Some((at, pitch)) = host.filter(|_| c.height > 0 && c.width > 0) {
            let end = at + ((c.height - 1) * pitch + c.width) as u64;
            let st = state();
            let pinned = st
                .allocs
                .iter()
                .any(|(&p, &words)| p <= at && end <= p + 8 * words as u64);
            let met: Vec<(u64, u64)> = st
                .registered
                .iter()
                .map(|(&s, &l)| (s, s + l as u64))
                .filter(|&(s, e)| s < end && at < e)
                .collect();
            if !pinned && !met.is_empty() && !matches!(met[..], [(s, e)] if s <= at && end <= e) {
                return Err(Error::internal(format!(
                    "fake copy: host range [{at:#x}, {end:#x}) partly registered \
                     (CUDA_ERROR_INVALID_VALUE)"
                )));
            }
        }
        for j in 0..c.height {
            // SAFETY: caller contract (all fake memory is host memory).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (c.src + (j * c.src_pitch) as u64) as *const u8,
                    (c.dst + (j * c.dst_pitch) as u64) as *mut u8,
                    c.width,
                )
            };
        }
        Ok(())
    }
    unsafe fn copy_2d_async(c: &Copy2D, _: u64) -> Result<()> {
        // SAFETY: caller contract.
        unsafe { Self::copy_2d(c) }
    }
    unsafe fn copy_peer_async(
        src: &RawTile,
        _: &i32,
        dst: &RawTile,
        _: &i32,
        s: u64,
    ) -> Result<()> {
        // SAFETY: caller contract.
        unsafe { Self::copy_2d_async(&Copy2D::tiles(src, dst), s) }
    }
    fn stream_create() -> Result<u64> {
        Ok(next_id())
    }
    unsafe fn stream_destroy(_: u64) {}
    unsafe fn stream_synchronize(_: u64) -> Result<()> {
        if FAIL_STREAM_SYNC.load(Ordering::SeqCst) {
            return Err(Error::internal("the fake stream failed"));
        }
        Ok(())
    }
    unsafe fn stream_wait_event(_: u64, _: u64) -> Result<()> {
        Ok(())
    }
    unsafe fn launch_host_fn(_: u64, job: HostJob) -> Result<()> {
        job();
        Ok(())
    }
    fn event_create(_: bool) -> Result<u64> {
        let e = next_id();
        state().live_events.insert(e);
        Ok(e)
    }
    unsafe fn event_record(e: u64, _: u64) -> Result<()> {
        let mut st = state();
        if !st.live_events.contains(&e) {
            return Err(Error::internal(format!(
                "event {e} recorded after its destruction"
            )));
        }
        st.events.insert(e, Instant::now());
        Ok(())
    }
    unsafe fn event_synchronize(_: u64) -> Result<()> {
        let slow = COPY_OUT_WAIT_MS.load(Ordering::SeqCst);
        if slow > 0
            && std::thread::current()
                .name()
                .is_some_and(|n| n.ends_with("-out"))
        {
            std::thread::sleep(std::time::Duration::from_millis(slow));
        }
        Ok(())
    }
    unsafe fn event_query(_: u64) -> Result<bool> {
        Ok(true)
    }
    unsafe fn event_elapsed_ms(start: u64, end: u64) -> Result<f32> {
        let st = state();
        match (st.events.get(&start), st.events.get(&end)) {
            (Some(s), Some(e)) => Ok(e.duration_since(*s).as_secs_f32() * 1e3),
            _ => Err(Error::internal("event not recorded")),
        }
    }
    unsafe fn event_destroy(e: u64) {
        let mut st = state();
        st.events.remove(&e);
        // A handle destroyed twice is counted, not panicked on (this runs in drops).
        if !st.live_events.remove(&e) {
            st.destroyed_twice += 1;
        }
    }
    unsafe fn blas_create(_: u64) -> Result<u64> {
        Ok(next_id())
    }
    unsafe fn blas_destroy(_: u64) {}
    unsafe fn gemm(_: u64, g: &GemmTile) -> Result<()> {
        match (g.alpha, g.beta) {
            // SAFETY: caller contract.
            (ScalarValue::F64(a), ScalarValue::F64(b)) => unsafe { naive_gemm(g, a, b) },
            // SAFETY: caller contract.
            (ScalarValue::F32(a), ScalarValue::F32(b)) => unsafe { naive_gemm(g, a, b) },
            // SAFETY: caller contract.
            (ScalarValue::C64(a), ScalarValue::C64(b)) => unsafe { naive_gemm(g, a, b) },
            // SAFETY: caller contract.
            (ScalarValue::C32(a), ScalarValue::C32(b)) => unsafe { naive_gemm(g, a, b) },
            _ => return Err(Error::internal("mixed scalar types")),
        }
        Ok(())
    }
    unsafe fn add(_: u64, beta: ScalarValue, x: &RawTile, y: &RawTile) -> Result<()> {
        /// `y += b * x`, column by column.
        ///
        /// # Safety
        /// Both tiles are valid host memory of their shapes.
        unsafe fn axpy<T: Copy + std::ops::AddAssign + std::ops::Mul<Output = T>>(
            b: T,
            x: &RawTile,
            y: &RawTile,
        ) {
            for j in 0..x.cols {
                for i in 0..x.rows {
                    // SAFETY: inside both tiles (caller contract).
                    unsafe {
                        *(y.addr as *mut T).add(i + j * y.ld) +=
                            b * *(x.addr as *const T).add(i + j * x.ld)
                    };
                }
            }
        }
        match beta {
            // SAFETY: caller contract.
            ScalarValue::F64(b) => unsafe { axpy(b, x, y) },
            // SAFETY: caller contract.
            ScalarValue::F32(b) => unsafe { axpy(b, x, y) },
            // SAFETY: caller contract.
            ScalarValue::C64(b) => unsafe { axpy(b, x, y) },
            // SAFETY: caller contract.
            ScalarValue::C32(b) => unsafe { axpy(b, x, y) },
        }
        Ok(())
    }
    fn supports_tri(_dtype: hetblas_core::DType) -> bool {
        true
    }
    unsafe fn tri(
        _: u64,
        routine: hetblas_core::problem::TriRoutine,
        op: &hetblas_core::TriTile,
    ) -> Result<()> {
        // The fake's device memory is host memory: the host's reference kernel runs on it.
        // SAFETY: caller contract.
        unsafe { hetblas_cpu::tri::rust_tri(routine, op) }
    }

    // The solver: the host's pure-Rust LAPACK on the fake's (host) memory, with a workspace
    // asked for (and written) as cuSOLVER asks for one, so that the layer's workspace and
    // `info` paths run.
    fn supports_factor(_op: hetblas_core::FactorOp, _dtype: hetblas_core::DType) -> bool {
        true
    }
    unsafe fn solver_create(_: &Self::Context, _: u64) -> Result<u64> {
        Ok(next_id())
    }
    unsafe fn solver_destroy(_: u64) {}
    unsafe fn potrf_workspace(_: u64, op: &hetblas_core::PotrfTile) -> Result<usize> {
        Ok(8 * op.n())
    }
    unsafe fn getrf_workspace(_: u64, op: &hetblas_core::GetrfTile) -> Result<usize> {
        Ok(8 * op.a.rows)
    }
    unsafe fn potrf(
        _: u64,
        op: &hetblas_core::PotrfTile,
        work: hetblas_gpu::Workspace,
        dev_info: u64,
    ) -> Result<()> {
        // SAFETY: caller contract: the workspace has the bytes asked, the info slot an i32.
        unsafe { use_workspace(work, 8 * op.n())? };
        // SAFETY: caller contract.
        let mut info = unsafe { fake_lapack().potrf(op) }?;
        // Like OpenBLAS, the fake misses NaN pivots (reports 0 and carries the NaN on), so
        // that the layer's own check of the factor's diagonal is what finds them.
        // SAFETY: the diagonal lies in the tile (fake memory is host memory).
        let nan =
            unsafe { hetblas_core::first_nan_pivot(op.a.addr, op.a.ld + 1, op.n(), op.dtype()) };
        if nan == Some(info) {
            info = 0;
        }
        // SAFETY: the device info slot is fake (host) memory of an i32.
        unsafe { (dev_info as *mut i32).write(info as i32) };
        Ok(())
    }
    unsafe fn getrf(
        _: u64,
        op: &hetblas_core::GetrfTile,
        work: hetblas_gpu::Workspace,
        dev_info: u64,
    ) -> Result<()> {
        // SAFETY: as in potrf.
        unsafe { use_workspace(work, 8 * op.a.rows)? };
        // SAFETY: caller contract.
        let info = unsafe { fake_lapack().getrf(op) }?;
        // SAFETY: as in potrf.
        unsafe { (dev_info as *mut i32).write(info as i32) };
        Ok(())
    }
    unsafe fn laswp(_: u64, op: &hetblas_core::LaswpTile) -> Result<()> {
        // SAFETY: caller contract.
        unsafe { fake_lapack().laswp(op) }
    }
}

fn fake_lapack() -> &'static hetblas_cpu::RustLapack {
    static LAPACK: OnceLock<hetblas_cpu::RustLapack> = OnceLock::new();
    LAPACK.get_or_init(|| hetblas_cpu::RustLapack::new(1))
}

/// Fails unless `work` is at least `bytes` of live fake memory, and writes all of it (a
/// workspace too small or freed early is caught here).
///
/// # Safety
/// `work` is what the layer lent: fake device memory of `work.bytes`.
unsafe fn use_workspace(work: hetblas_gpu::Workspace, bytes: usize) -> Result<()> {
    if work.bytes < bytes || (bytes > 0 && work.addr == 0) {
        return Err(Error::internal(format!(
            "workspace of {} B at {:#x}, {bytes} B asked",
            work.bytes, work.addr
        )));
    }
    if bytes > 0 && Fake::device_of_address(work.addr + bytes as u64 - 1).is_none() {
        return Err(Error::internal("workspace is not live device memory"));
    }
    // SAFETY: caller contract.
    unsafe { std::ptr::write_bytes(work.addr as *mut u8, 0xA5, work.bytes) };
    Ok(())
}
