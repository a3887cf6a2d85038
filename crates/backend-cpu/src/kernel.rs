//! The host kernels: the chosen host BLAS (and host LAPACK for the factorization tiles) on a
//! host queue, optionally throttled to an emulated rate (so emulated devices of unequal speed
//! behave deterministically).

use crate::blas::HostBlas;
use crate::lapack::{choose_lapack, HostLapack};
use hetblas_core::fault::{FaultInjector, FaultOp};
use hetblas_core::host_queue::HostQueue;
use hetblas_core::kernel::check_add;
use hetblas_core::problem::TriRoutine;
use hetblas_core::queue::own_queue;
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{
    DType, Error, FactorOp, GemmTile, GetrfTile, InfoCell, Kernel, LaswpTile, PotrfTile, Queue,
    RawTile, Result, ScalarValue, SymTile, TriTile,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tile kernels on host memory through a [`HostBlas`] and a [`HostLapack`], on the
/// device's own host queues.
pub struct HostKernel {
    blas: Arc<dyn HostBlas>,
    lapack: Arc<dyn HostLapack>,
    /// The device's compute queues, typed (tiles are enqueued on them) and as core queues (the
    /// same objects, what the executor hands back).
    queues: Vec<Arc<HostQueue>>,
    dyn_queues: Vec<Arc<dyn Queue>>,
    /// Emulated rate: the device is one server of this many flop/s; `clock` is when it is next
    /// free (shared by its queues, so two queues do not double the rate, and sleep overshoot
    /// does not accumulate).
    flops_per_sec: Option<f64>,
    clock: Arc<std::sync::Mutex<Option<Instant>>>,
    /// Fault injection (emulated devices): checked before each kernel is issued.
    faults: Option<Arc<FaultInjector>>,
}

impl HostKernel {
    /// The kernel of a device computing on `queues`, with the host LAPACK that goes with
    /// `blas` ([`choose_lapack`]).
    pub fn new(
        blas: Arc<dyn HostBlas>,
        flops_per_sec: Option<f64>,
        queues: Vec<Arc<HostQueue>>,
    ) -> HostKernel {
        let lapack = choose_lapack(blas.as_ref()).lapack;
        Self::with_libraries(blas, lapack, flops_per_sec, queues)
    }

    /// The kernel of a device computing on `queues` with the given host libraries.
    pub fn with_libraries(
        blas: Arc<dyn HostBlas>,
        lapack: Arc<dyn HostLapack>,
        flops_per_sec: Option<f64>,
        queues: Vec<Arc<HostQueue>>,
    ) -> HostKernel {
        HostKernel {
            lapack,
            blas,
            dyn_queues: queues.iter().map(|q| q.clone() as Arc<dyn Queue>).collect(),
            queues,
            flops_per_sec,
            clock: Arc::default(),
            faults: None,
        }
    }

    /// The same kernel, failing where `faults` says ([`hetblas_core::fault`]).
    pub fn with_faults(mut self, faults: Arc<FaultInjector>) -> HostKernel {
        self.faults = Some(faults);
        self
    }

    /// The injected fault of the next kernel: an error now, or one it returns when it runs.
    fn inject(&self) -> Result<Option<Error>> {
        match &self.faults {
            Some(f) => f.check_queued(FaultOp::Kernel),
            None => Ok(None),
        }
    }

    pub fn blas(&self) -> &Arc<dyn HostBlas> {
        &self.blas
    }

    pub fn lapack(&self) -> &Arc<dyn HostLapack> {
        &self.lapack
    }

    /// The device's compute queues.
    pub fn queues(&self) -> &[Arc<dyn Queue>] {
        &self.dyn_queues
    }

    /// The host queue behind `queue`, found by identity among the device's own.
    fn host_queue(&self, queue: &Arc<dyn Queue>) -> Result<&HostQueue> {
        own_queue(&self.queues, queue).ok_or_else(|| {
            Error::internal(format!(
                "host kernel given {}, not one of its device's queues",
                queue.name()
            ))
        })
    }
}

impl HostKernel {
    /// Enqueues `job` (a kernel of `flops`) on `queue`, one of the device's own: the injected
    /// fault first, then the job, throttled to the emulated rate.
    fn issue(
        &self,
        queue: &Arc<dyn Queue>,
        flops: f64,
        job: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> Result<()> {
        let hq = self.host_queue(queue)?;
        let deferred = self.inject()?;
        let min_time = self
            .flops_per_sec
            .map(|r| Duration::from_secs_f64(flops / r));
        let clock = self.clock.clone();
        hq.enqueue(move || {
            if let Some(e) = deferred {
                return Err(e);
            }
            let start = Instant::now();
            job()?;
            throttle(&clock, start, min_time);
            Ok(())
        })
    }

    /// Enqueues a TRSM or TRMM tile, throttled to the emulated rate like a GEMM of its flops.
    fn tri(&self, queue: &Arc<dyn Queue>, routine: TriRoutine, op: &TriTile) -> Result<()> {
        op.check()?;
        self.host_queue(queue)?;
        if op.m == 0 || op.n == 0 {
            return Ok(());
        }
        let blas = self.blas.clone();
        let op = *op;
        // Half of a GEMM of the tile's order: the triangle.
        let flops = op.dtype().gemm_flops(op.m, op.n, op.a_order()) / 2.0;
        self.issue(queue, flops, move || {
            // SAFETY: the executor keeps every tile's memory alive and unaliased until the queue
            // is synchronised, and built the tiles from checked operand views and slots.
            unsafe { blas.tri(routine, &op) }
        })
    }
}

/// Sleeps until an emulated device of the kernel's rate would have finished an operation of
/// `min_time` begun at `start` (the device is one server: its clock is shared by its queues).
fn throttle(clock: &std::sync::Mutex<Option<Instant>>, start: Instant, min_time: Option<Duration>) {
    if let Some(t) = min_time {
        let end = {
            let mut c = clock.lock().unwrap_or_else(|p| p.into_inner());
            let begin = c.map_or(start, |free| free.max(start));
            let end = begin + t;
            *c = Some(end);
            end
        };
        let now = Instant::now();
        if end > now {
            std::thread::sleep(end - now);
        }
    }
}

/// Runs one tile GEMM now, on the calling thread.
///
/// # Safety
/// The tiles of `op` are valid host memory of their shapes (checked by `GemmTile::check` for
/// consistency; their extent is guaranteed by the executor that built them from checked views).
pub unsafe fn run_gemm(blas: &dyn HostBlas, op: &GemmTile) -> Result<()> {
    // SAFETY: forwarded caller contract.
    unsafe { run_gemm_in(blas, op, PIECE) }
}

/// [`run_gemm`] with dimensions cut at `piece`.
///
/// # Safety
/// As [`run_gemm`].
unsafe fn run_gemm_in(blas: &dyn HostBlas, op: &GemmTile, piece: usize) -> Result<()> {
    // A 32-bit CBLAS takes no dimension above i32::MAX: such a product is cut into pieces that
    // fit (C in row and column blocks, K in steps accumulated with beta = 1). A leading
    // dimension that large cannot be cut: the embedded Rust GEMM (isize strides) takes it.
    if [op.a.ld, op.b.ld, op.c.ld]
        .iter()
        .any(|&ld| ld > i32::MAX as usize)
    {
        // SAFETY: forwarded caller contract.
        return unsafe { gemm_piece(&crate::blas::RustGemm::new(0), op) };
    }
    let (m, n, k) = (op.m, op.n, op.k);
    if m <= piece && n <= piece && k <= piece {
        // SAFETY: forwarded caller contract.
        return unsafe { gemm_piece(blas, op) };
    }
    let dt = op.dtype();
    for i0 in (0..m).step_by(piece) {
        let mi = piece.min(m - i0);
        for j0 in (0..n).step_by(piece) {
            let nj = piece.min(n - j0);
            for l0 in (0..k.max(1)).step_by(piece) {
                let kl = piece.min(k - l0.min(k));
                let a = if op.transa.is_transposed() {
                    sub(&op.a, l0, i0, kl, mi)
                } else {
                    sub(&op.a, i0, l0, mi, kl)
                };
                let b = if op.transb.is_transposed() {
                    sub(&op.b, j0, l0, nj, kl)
                } else {
                    sub(&op.b, l0, j0, kl, nj)
                };
                let piece = GemmTile {
                    m: mi,
                    n: nj,
                    k: kl,
                    a,
                    b,
                    c: sub(&op.c, i0, j0, mi, nj),
                    beta: if l0 == 0 {
                        op.beta
                    } else {
                        ScalarValue::one(dt)
                    },
                    ..*op
                };
                // SAFETY: every piece lies inside the caller's tiles.
                unsafe { gemm_piece(blas, &piece) }?;
            }
        }
    }
    Ok(())
}

/// The largest dimension given to the host BLAS in one call (a 32-bit CBLAS takes i32).
const PIECE: usize = 1 << 30;

/// The `rows x cols` block of `t` at (`r0`, `c0`).
fn sub(t: &RawTile, r0: usize, c0: usize, rows: usize, cols: usize) -> RawTile {
    RawTile {
        addr: t.addr + ((r0 + c0 * t.ld) * t.dtype.size()) as u64,
        rows,
        cols,
        ..*t
    }
}

/// One host BLAS call for `op` (its dimensions fit the library's integers).
///
/// # Safety
/// As [`run_gemm`].
unsafe fn gemm_piece(blas: &dyn HostBlas, op: &GemmTile) -> Result<()> {
    // One host BLAS routine per dtype, with the same argument list.
    macro_rules! call {
        ($routine:ident, $t:ty, $alpha:expr, $beta:expr) => {
            // SAFETY: forwarded caller contract.
            unsafe {
                blas.$routine(
                    op.transa,
                    op.transb,
                    op.m,
                    op.n,
                    op.k,
                    $alpha,
                    op.a.addr as *const $t,
                    op.a.ld,
                    op.b.addr as *const $t,
                    op.b.ld,
                    $beta,
                    op.c.addr as *mut $t,
                    op.c.ld,
                )
            }
        };
    }
    match (op.alpha, op.beta) {
        (ScalarValue::F64(alpha), ScalarValue::F64(beta)) => call!(dgemm, f64, alpha, beta),
        (ScalarValue::F32(alpha), ScalarValue::F32(beta)) => call!(sgemm, f32, alpha, beta),
        (ScalarValue::C32(alpha), ScalarValue::C32(beta)) => call!(cgemm, c32, alpha, beta),
        (ScalarValue::C64(alpha), ScalarValue::C64(beta)) => call!(zgemm, c64, alpha, beta),
        _ => Err(Error::internal("mixed scalar types in a gemm tile")),
    }
}

/// `y += beta * x` on host tiles.
///
/// # Safety
/// `x` and `y` are valid host memory of their shapes, `y` writable and not overlapping `x`.
unsafe fn add_tiles(beta: ScalarValue, x: &RawTile, y: &RawTile) {
    macro_rules! axpy {
        ($t:ty, $b:expr) => {
            for j in 0..x.cols {
                // SAFETY: column j of each tile lies inside it (caller contract).
                let (xs, ys) = unsafe {
                    (
                        std::slice::from_raw_parts((x.addr as *const $t).add(j * x.ld), x.rows),
                        std::slice::from_raw_parts_mut((y.addr as *mut $t).add(j * y.ld), y.rows),
                    )
                };
                for (yv, xv) in ys.iter_mut().zip(xs) {
                    *yv += $b * *xv;
                }
            }
        };
    }
    match beta {
        ScalarValue::F64(b) => axpy!(f64, b),
        ScalarValue::F32(b) => axpy!(f32, b),
        ScalarValue::C64(b) => axpy!(c64, b),
        ScalarValue::C32(b) => axpy!(c32, b),
    }
}

impl Kernel for HostKernel {
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
        check_add(beta, x, y)?;
        let hq = self.host_queue(queue)?;
        let deferred = self.inject()?;
        let (x, y) = (*x, *y);
        hq.enqueue(move || {
            if let Some(e) = deferred {
                return Err(e);
            }
            // SAFETY: the executor keeps both slots alive until the queue is synchronised; they
            // are distinct slots of the device's workspace.
            unsafe { add_tiles(beta, &x, &y) };
            Ok(())
        })
    }

    fn supports(&self, dtype: DType) -> bool {
        matches!(dtype, DType::F32 | DType::F64 | DType::C32 | DType::C64)
    }

    fn supports_tri(&self, dtype: DType) -> bool {
        self.supports(dtype)
    }

    fn trsm(&self, queue: &Arc<dyn Queue>, op: &TriTile) -> Result<()> {
        self.tri(queue, TriRoutine::Trsm, op)
    }

    fn trmm(&self, queue: &Arc<dyn Queue>, op: &TriTile) -> Result<()> {
        self.tri(queue, TriRoutine::Trmm, op)
    }

    fn supports_sym(&self, dtype: DType) -> bool {
        self.supports(dtype)
    }

    fn sym(&self, queue: &Arc<dyn Queue>, op: &SymTile) -> Result<()> {
        op.check()?;
        let blas = self.blas.clone();
        let op = *op;
        self.issue(queue, op.flops(), move || {
            // SAFETY: the caller keeps every tile's memory alive and unaliased until the queue
            // is synchronised.
            unsafe { crate::sym::run_sym(blas.as_ref(), &op) }
        })
    }

    fn gemm(&self, queue: &Arc<dyn Queue>, op: &GemmTile) -> Result<()> {
        op.check()?;
        self.host_queue(queue)?;
        if op.m == 0 || op.n == 0 {
            return Ok(());
        }
        let blas = self.blas.clone();
        let op = *op;
        let flops = op.dtype().gemm_flops(op.m, op.n, op.k);
        self.issue(queue, flops, move || {
            // SAFETY: the executor keeps every tile's memory alive and unaliased until the queue
            // is synchronised, and built the tiles from checked operand views and slots.
            unsafe { run_gemm(blas.as_ref(), &op) }
        })
    }

    // Factorizations: the host LAPACK on the device's queue.

    fn supports_factor(&self, _op: FactorOp, dtype: DType) -> bool {
        self.supports(dtype)
    }

    unsafe fn potrf(
        &self,
        queue: &Arc<dyn Queue>,
        op: &PotrfTile,
        info: &Arc<InfoCell>,
    ) -> Result<()> {
        op.check()?;
        self.host_queue(queue)?;
        if op.n() == 0 {
            info.set(0);
            return Ok(());
        }
        let (lapack, op, info) = (self.lapack.clone(), *op, info.clone());
        self.issue(queue, op.flops(), move || {
            // SAFETY: the caller's contract (Kernel::potrf): the tile is host memory of this
            // device's space, alive and unshared until the queue has run the op.
            info.set(unsafe { lapack.potrf(&op) }?);
            Ok(())
        })
    }

    unsafe fn getrf(
        &self,
        queue: &Arc<dyn Queue>,
        op: &GetrfTile,
        info: &Arc<InfoCell>,
    ) -> Result<()> {
        op.check()?;
        self.host_queue(queue)?;
        if op.ipiv.len == 0 {
            info.set(0);
            return Ok(());
        }
        let (lapack, op, info) = (self.lapack.clone(), *op, info.clone());
        self.issue(queue, op.flops(), move || {
            // SAFETY: the caller's contract (Kernel::getrf): panel and pivots are host memory
            // of this device's space, apart, alive and unshared until the queue has run the op.
            info.set(unsafe { lapack.getrf(&op) }?);
            Ok(())
        })
    }

    unsafe fn laswp(&self, queue: &Arc<dyn Queue>, op: &LaswpTile) -> Result<()> {
        op.check()?;
        self.host_queue(queue)?;
        if !op.has_work() {
            return Ok(());
        }
        let (lapack, op) = (self.lapack.clone(), *op);
        // Memory traffic, not flops: priced as a product of the same bytes.
        let flops = (op.a.cols * (op.k2 + 1 - op.k1)) as f64;
        self.issue(queue, flops, move || {
            // SAFETY: the caller's contract (Kernel::laswp); the host LAPACK checks the pivots
            // before it moves a row.
            unsafe { lapack.laswp(&op) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blas::RustGemm;
    use hetblas_core::{MemorySpace, Trans};

    fn tile(v: &[f64], rows: usize, cols: usize, ld: usize) -> RawTile {
        RawTile {
            space: MemorySpace::HOST,
            addr: v.as_ptr() as u64,
            rows,
            cols,
            ld,
            dtype: DType::F64,
        }
    }

    /// Cutting a product into pieces (as dimensions above a 32-bit CBLAS's limit are) gives
    /// the uncut result, for every transpose pair and with beta applied once.
    #[test]
    fn pieces_give_the_whole_product() {
        let blas = RustGemm::new(1);
        let (m, n, k) = (23, 17, 19);
        let val = |i: usize| ((i * 7919) % 101) as f64 / 50.0 - 1.0;
        for ta in [Trans::N, Trans::T] {
            for tb in [Trans::N, Trans::T] {
                let (ar, ac) = ta.stored_shape(m, k);
                let (br, bc) = tb.stored_shape(k, n);
                let (lda, ldb, ldc) = (ar + 2, br + 1, m + 3);
                let a: Vec<f64> = (0..lda * ac).map(val).collect();
                let b: Vec<f64> = (0..ldb * bc).map(|i| val(i + 5)).collect();
                let c0: Vec<f64> = (0..ldc * n).map(|i| val(i + 11)).collect();
                let run = |piece: usize| {
                    let mut c = c0.clone();
                    let c_tile = RawTile {
                        addr: c.as_mut_ptr() as u64,
                        ..tile(&c, m, n, ldc)
                    };
                    let op = GemmTile {
                        transa: ta,
                        transb: tb,
                        m,
                        n,
                        k,
                        alpha: ScalarValue::F64(1.5),
                        a: tile(&a, ar, ac, lda),
                        b: tile(&b, br, bc, ldb),
                        beta: ScalarValue::F64(-0.5),
                        c: c_tile,
                    };
                    // SAFETY: the tiles describe the vectors above, alive for the call.
                    unsafe { run_gemm_in(&blas, &op, piece) }.unwrap();
                    c
                };
                let whole = run(PIECE);
                for piece in [5, 7] {
                    let cut = run(piece);
                    for (x, y) in whole.iter().zip(&cut) {
                        assert!(
                            (x - y).abs() <= 1e-12 * (1.0 + x.abs()),
                            "{ta:?}{tb:?} {piece}"
                        );
                    }
                }
            }
        }
    }
}
