//! `Runtime`: the devices of this node, and the calls users make on them.
//!
//! The runtime owns a [`DevicePool`] (the pipeline) and exposes what users call, method by
//! method: GEMM and GEMMT, device matrices, host-buffer release, the devices and links found, the machine
//! profile, and calibration. The pool stays an implementation detail.

use hetblas_core::calibrate::{CalibrationOptions, Progress};
use hetblas_core::plan::FactorRoutine;
use hetblas_core::pool::{
    FactorDecision, FactorOptions, FactorReport, TriCallOptions, TriDecision, TriReport,
};
use hetblas_core::problem::triangular::{TriOptions, TriProblem, TriRoutine};
use hetblas_core::problem::{check_gemmt_args, GemmProblem, Uplo};
use hetblas_core::profile::MachineProfile;
use hetblas_core::{
    BackendStatus, DType, Device, DeviceMatrix, DevicePool, GemmOptions, GemmPrediction,
    GemmReport, HostAccess, Link, MatIn, MatMut, MatOut, MatRef, MemorySpace, Result, Scalar,
    Trans,
};
use std::sync::{Arc, RwLock};

use crate::builder::RuntimeBuilder;
use crate::settings::Settings;

/// The devices of this node, ready for BLAS calls.
#[derive(Debug)]
pub struct Runtime {
    pool: DevicePool,
    statuses: Vec<BackendStatus>,
    profile_status: RwLock<String>,
    settings: Settings,
}

impl Runtime {
    pub(crate) fn from_parts(
        pool: DevicePool,
        statuses: Vec<BackendStatus>,
        profile_status: String,
        settings: Settings,
    ) -> Runtime {
        Runtime {
            pool,
            statuses,
            profile_status: RwLock::new(profile_status),
            settings,
        }
    }

    /// The settings the runtime was built with ([`Settings`]: read from the environment once,
    /// unless [`RuntimeBuilder::settings`] gave them).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The pipeline, for the routines defined next to this file.
    pub(crate) fn pool(&self) -> &DevicePool {
        &self.pool
    }

    /// Discovers every backend's devices as the environment says ([`Settings::from_env`]; see
    /// [`RuntimeBuilder`]).
    ///
    /// # Errors
    /// As [`RuntimeBuilder::build`].
    pub fn discover() -> Result<Runtime> {
        RuntimeBuilder::default().build()
    }

    /// A builder to choose what discovery takes (backends, emulated devices, the profile).
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    // ---- what was found --------------------------------------------------------------------

    /// The devices, in the order of the indices every other method takes.
    pub fn devices(&self) -> &[Arc<dyn Device>] {
        self.pool.devices()
    }

    /// What the host registration caches did, each backend's counted once (its devices share
    /// one cache); `None` when no backend keeps one.
    pub fn host_pin_stats(&self) -> Option<hetblas_core::pin_stats::PinStats> {
        let mut seen: Vec<&str> = Vec::new();
        let mut total: Option<hetblas_core::pin_stats::PinStats> = None;
        for d in self.devices() {
            let backend = d.info().backend.as_str();
            if seen.contains(&backend) {
                continue;
            }
            if let Some(p) = d.host_pin_stats() {
                seen.push(backend);
                *total.get_or_insert_with(Default::default) += &p;
            }
        }
        total
    }

    /// The links between the devices' memory spaces and the host.
    pub fn links(&self) -> impl Iterator<Item = &Arc<dyn Link>> {
        self.pool.links()
    }

    /// The link `src -> dst`, if there is one.
    pub fn link(&self, src: MemorySpace, dst: MemorySpace) -> Option<&Arc<dyn Link>> {
        self.pool.link(src, dst)
    }

    /// The bandwidth of the link `src -> dst` (bytes/s): calibrated when the profile has it,
    /// else what the link knows of itself.
    pub fn link_bandwidth(&self, src: MemorySpace, dst: MemorySpace) -> Option<f64> {
        self.pool.link_bandwidth(src, dst)
    }

    /// What each backend contributed, or why it did not.
    pub fn backends(&self) -> &[BackendStatus] {
        &self.statuses
    }

    // ---- the machine profile ---------------------------------------------------------------

    /// Whether a calibrated profile is in use, and from where (or why not).
    pub fn profile_status(&self) -> String {
        self.profile_status
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The profile in use, if any.
    pub fn profile(&self) -> Option<Arc<MachineProfile>> {
        self.pool.profile()
    }

    /// The profile decisions are made with now: [`Runtime::profile`], with host folds priced
    /// at what this runtime's folds reached where that was well below calibrated.
    pub fn decision_profile(&self) -> Option<Arc<MachineProfile>> {
        self.pool.decision_profile()
    }

    /// What this runtime's host folds achieved ([`hetblas_core::tuning::fold_speed`]).
    pub fn fold_speed(&self) -> &hetblas_core::tuning::fold_speed::FoldSpeed {
        self.pool.fold_speed()
    }

    /// Uses `profile` for the model-driven decisions (tile sizes, device subsets, shares) from
    /// now on; `None` returns to the built-in rules. Cached plans are dropped.
    pub fn set_profile(&self, profile: Option<Arc<MachineProfile>>) {
        let status = match &profile {
            Some(p) => format!("profile set by the caller ({})", p.created),
            None => "no profile (set by the caller); built-in tile rule".to_string(),
        };
        self.pool.set_profile(profile);
        *self
            .profile_status
            .write()
            .unwrap_or_else(|p| p.into_inner()) = status;
    }

    /// Measures this runtime's links and every device's GEMM (see
    /// [`hetblas_core::calibrate`]) and returns the profile; `progress` is called after every
    /// point. The profile is not put in use: pass it to [`Runtime::set_profile`], and save it
    /// ([`MachineProfile::save`]) for later runs to load.
    ///
    /// Run it while no other call uses the runtime: it times the devices.
    ///
    /// ```
    /// use hetblas::{CalibrationOptions, DType, Runtime};
    /// use std::sync::Arc;
    /// let rt = Runtime::builder().only(&["cpu"]).without_profile().build()?;
    /// // A small calibration (the CLI's `--quick` is `CalibrationOptions::quick()`).
    /// let opts = CalibrationOptions {
    ///     gemm_tiles: vec![64, 128],
    ///     dtypes: vec![DType::F64],
    ///     ..CalibrationOptions::quick()
    /// };
    /// let profile = rt.calibrate(&opts, &mut |p| eprintln!("{}/{} {}", p.done, p.total, p.stage))?;
    /// assert!(profile.check_matches(rt.devices()).is_ok());
    /// // `profile.save(path)` keeps it for later runs; this one uses it from now on.
    /// rt.set_profile(Some(Arc::new(profile)));
    /// assert!(rt.profile().is_some());
    /// # Ok::<(), hetblas::Error>(())
    /// ```
    ///
    /// # Errors
    /// Allocation failures of the smallest sizes, backend errors, failed fits.
    pub fn calibrate(
        &self,
        opts: &CalibrationOptions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<MachineProfile> {
        self.pool.calibrate(opts, progress)
    }

    /// Re-checks a previous profile of this hardware in seconds (a few points measured
    /// again; see [`hetblas_core::calibrate::recheck`]). When the result `holds`, the profile
    /// can be used as it is instead of a new calibration.
    ///
    /// # Errors
    /// Allocation failures and backend errors.
    pub fn recheck(
        &self,
        previous: &MachineProfile,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<hetblas_core::calibrate::Recheck> {
        self.pool.recheck(previous, progress)
    }

    // ---- GEMM ------------------------------------------------------------------------------

    /// `c = alpha * op(a) * op(b) + beta * c` with default options. Operands are host views
    /// or device matrices, in any mix.
    ///
    /// # Errors
    /// Shape mismatches as BLAS parameters 3 (m), 4 (n) or 5 (k); device errors.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub fn gemm<'a, T: Scalar>(
        &self,
        transa: Trans,
        transb: Trans,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
    ) -> Result<GemmReport> {
        self.pool.gemm(transa, transb, alpha, a, b, beta, c)
    }

    /// GEMM with explicit options (devices, forced tiles, trace, memory limit, host fold).
    /// Shapes come from the operands: C is m x n, op(A) m x k, op(B) k x n.
    ///
    /// # Errors
    /// As [`Runtime::gemm`], and bad options (a device index out of range).
    #[allow(clippy::too_many_arguments)] // the BLAS argument list and the options
    pub fn gemm_with<'a, T: Scalar>(
        &self,
        transa: Trans,
        transb: Trans,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
        opts: &GemmOptions,
    ) -> Result<GemmReport> {
        self.pool
            .gemm_with(transa, transb, alpha, a, b, beta, c, opts)
    }

    /// BLAS-style GEMM on host slices: arguments checked exactly as reference BLAS checks them
    /// (errors carry its parameter numbers), then `c = alpha*op(a)*op(b) + beta*c`.
    ///
    /// # Errors
    /// A bad argument with its BLAS parameter number; device errors.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub fn gemm_blas<T: Scalar>(
        &self,
        transa: u8,
        transb: u8,
        m: i64,
        n: i64,
        k: i64,
        alpha: T,
        a: &[T],
        lda: i64,
        b: &[T],
        ldb: i64,
        beta: T,
        c: &mut [T],
        ldc: i64,
        opts: &GemmOptions,
    ) -> Result<GemmReport> {
        self.pool.gemm_blas(
            transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, opts,
        )
    }

    // ---- GEMMT -----------------------------------------------------------------------------

    /// GEMMT (`?gemmtr` of reference BLAS 3.12, `?gemmt` of OpenBLAS and MKL): the `uplo`
    /// triangle, diagonal included, of `c = alpha * op(a) * op(b) + beta * c` for a square
    /// `n x n` C; the other triangle is neither read nor written. Operands are host views or
    /// device matrices, in any mix. It runs as GEMM's plan over the triangle's C tiles (the
    /// diagonal tiles computed whole into a workspace and folded over the triangle on the
    /// host), with GEMM's recovery from a failed device. For options (devices, tiles, trace),
    /// give the triangle as [`GemmOptions::c_region()`] to [`Runtime::gemm_with`].
    ///
    /// ```
    /// use hetblas::{MatMut, MatRef, Runtime, Trans, Uplo};
    /// let rt = Runtime::builder().only(&[]).emulated(2).without_profile().build()?;
    /// let a = [1.0, 2.0, 3.0, 4.0]; // 2x2, column-major
    /// let mut c = [1.0, 1.0, f64::NAN, 1.0]; // C(0, 1), in the upper triangle, is NaN
    /// rt.gemmt(Uplo::Lower, Trans::N, Trans::T, 1.0, MatRef::packed(&a, 2, 2)?,
    ///          MatRef::packed(&a, 2, 2)?, 0.5, MatMut::packed(&mut c, 2, 2)?)?;
    /// // A A^T = [[10, 14], [14, 20]]: the lower triangle computed, C(0, 1) neither read nor
    /// // written.
    /// assert_eq!((c[0], c[1], c[3]), (10.5, 14.5, 20.5));
    /// assert!(c[2].is_nan());
    /// # Ok::<(), hetblas::Error>(())
    /// ```
    ///
    /// # Errors
    /// A C that is not square as BLAS parameter 4 (n), other shape mismatches as
    /// [`Runtime::gemm`]; device errors.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub fn gemmt<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        transa: Trans,
        transb: Trans,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
    ) -> Result<GemmReport> {
        let opts = GemmOptions::default().c_region(uplo);
        self.pool
            .gemm_with(transa, transb, alpha, a, b, beta, c, &opts)
    }

    /// BLAS-style GEMMT on host slices: arguments checked as reference BLAS 3.12's `?gemmtr`
    /// checks them (uplo 1, transa 2, transb 3, n 4, k 5, lda 8, ldb 10, ldc 13; the errors
    /// name the routine GEMMTR), then [`Runtime::gemmt`] with `opts` (whose `c_region` is
    /// replaced by `uplo`'s triangle).
    ///
    /// # Errors
    /// A bad argument with its BLAS parameter number; device errors.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub fn gemmt_blas<T: Scalar>(
        &self,
        uplo: u8,
        transa: u8,
        transb: u8,
        n: i64,
        k: i64,
        alpha: T,
        a: &[T],
        lda: i64,
        b: &[T],
        ldb: i64,
        beta: T,
        c: &mut [T],
        ldc: i64,
        opts: &GemmOptions,
    ) -> Result<GemmReport> {
        let (uplo, transa, transb) = check_gemmt_args(uplo, transa, transb, n, k, lda, ldb, ldc)?;
        let opts = opts.clone().c_region(uplo);
        self.pool.gemm_blas_checked(
            transa, transb, n, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &opts,
        )
    }

    /// Devices that failed during a call: calls leave them out until [`Runtime::reprobe`]
    /// finds them working (indices into [`Runtime::devices`]).
    pub fn failed_devices(&self) -> Vec<usize> {
        self.pool.failed_devices()
    }

    /// Probes the failed devices again and takes those that work back into calls; returns
    /// the devices still failed.
    pub fn reprobe(&self) -> Vec<usize> {
        self.pool.reprobe()
    }

    /// What the calibrated profile predicts for `problem` (the devices the autotuner would
    /// choose and the seconds they take); `None` without a profile or with a device it lacks.
    pub fn predict_gemm(&self, problem: &GemmProblem) -> Option<GemmPrediction> {
        self.pool.predict_gemm(problem)
    }

    /// The plan of a finished call replayed by the simulator against `profile` (this
    /// runtime's own when `None`), queues named as in the call's trace
    /// ([`hetblas_core::DevicePool::simulate_report`]).
    ///
    /// # Errors
    /// As [`hetblas_core::DevicePool::simulate_report`].
    pub fn simulate_report(
        &self,
        report: &GemmReport,
        profile: Option<&MachineProfile>,
    ) -> Result<hetblas_core::sim::Simulation> {
        self.pool.simulate_report(report, profile)
    }

    /// The tile DAG of a finished TRSM or TRMM call replayed by the simulator against
    /// `profile` (this runtime's own when `None`), queues named as in the call's trace
    /// ([`hetblas_core::DevicePool::simulate_tri_report`]).
    ///
    /// # Errors
    /// As [`hetblas_core::DevicePool::simulate_tri_report`].
    pub fn simulate_tri_report(
        &self,
        report: &TriReport,
        profile: Option<&MachineProfile>,
    ) -> Result<hetblas_core::sim::Simulation> {
        self.pool.simulate_tri_report(report, profile)
    }

    /// Number of plans in the plan cache (a repeated call reuses its plan).
    pub fn cached_plans(&self) -> usize {
        self.pool.cached_plans()
    }

    // ---- device matrices and host buffers --------------------------------------------------

    /// An uninitialised `rows x cols` matrix on device `idx` (packed, `ld = rows`).
    ///
    /// # Errors
    /// `InvalidInput` for an index out of range or a size that overflows; `OutOfMemory`.
    pub fn alloc_matrix<T: Scalar>(
        &self,
        idx: usize,
        rows: usize,
        cols: usize,
    ) -> Result<DeviceMatrix<T>> {
        self.pool.alloc_matrix(idx, rows, cols)
    }

    /// The index of the device whose own memory `addr` is, if any (a CUDA or HIP device
    /// pointer, from whatever allocated it; an emulated device's allocation). Host memory
    /// gives `None`.
    pub fn device_owning(&self, addr: u64) -> Option<usize> {
        self.pool.device_owning(addr)
    }

    /// The caller's `rows x cols` matrix (leading dimension `ld`) at `addr` in device `idx`'s
    /// memory, to pass to [`Runtime::gemm`] as an operand computed where it lives. Dropping it
    /// frees nothing: the memory stays the caller's.
    ///
    /// ```
    /// use hetblas::{MatRef, Runtime, Trans};
    /// let rt = Runtime::builder().only(&[]).emulated(1).without_profile().build()?;
    /// let a = [1.0, 2.0, 3.0, 4.0];
    /// let owned = rt.upload(0, MatRef::new(&a, 2, 2, 2)?)?; // memory "someone else" allocated
    /// let addr = owned.raw().addr;
    /// assert_eq!(rt.device_owning(addr), Some(0));
    /// // SAFETY: `addr` is 2x2 f64 of device 0, alive until `owned` drops after the call.
    /// let lent = unsafe { rt.borrow_matrix::<f64>(0, addr, 2, 2, 2)? };
    /// let mut c = [0.0; 4];
    /// rt.gemm(Trans::N, Trans::N, 1.0, &lent, &lent, 0.0, hetblas::MatMut::new(&mut c, 2, 2, 2)?)?;
    /// assert_eq!(c, [7.0, 10.0, 15.0, 22.0]);
    /// # Ok::<(), hetblas::Error>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidInput` for an index out of range, `ld < rows`, or a size that overflows.
    ///
    /// # Safety
    /// - `addr` is memory of device `idx` (as [`Runtime::device_owning`] says), aligned for
    ///   `T`;
    /// - the `(cols - 1) * ld + rows` elements from `addr` are allocated and initialised where
    ///   the matrix is read;
    /// - the memory is not freed, and nothing else writes it (or, for an output, reads it)
    ///   until the calls given the matrix have returned.
    pub unsafe fn borrow_matrix<T: Scalar>(
        &self,
        idx: usize,
        addr: u64,
        rows: usize,
        cols: usize,
        ld: usize,
    ) -> Result<DeviceMatrix<T>> {
        // SAFETY: the caller's contract is this function's.
        unsafe { self.pool.borrow_matrix(idx, addr, rows, cols, ld) }
    }

    /// Copies a host matrix to a new matrix on device `idx`.
    ///
    /// # Errors
    /// As [`Runtime::alloc_matrix`], and copy failures.
    pub fn upload<T: Scalar>(&self, idx: usize, host: MatRef<'_, T>) -> Result<DeviceMatrix<T>> {
        self.pool.upload(idx, host)
    }

    /// Copies a device matrix back into a host view of the same shape.
    ///
    /// # Errors
    /// `InvalidInput` when the shapes differ; copy failures.
    pub fn download<T: Scalar>(&self, m: &DeviceMatrix<T>, host: MatMut<'_, T>) -> Result<()> {
        self.pool.download(m, host)
    }

    /// Page-locks a host buffer for the accelerators now, once, instead of on the first call
    /// that meets each view of it (see [`DevicePool::prepare_host`]); `access` says whether
    /// calls will write it. Calls on the buffer or views inside it then find it registered.
    /// Undo with [`Runtime::release_host`] before freeing the buffer.
    ///
    /// # Errors
    /// The backend's error registering the memory. Memory the OS refuses to lock is not an
    /// error: calls copy it through staging buffers.
    pub fn prepare_host<T>(&self, buffer: &[T], access: HostAccess) -> Result<()> {
        self.pool.prepare_host(buffer, access)
    }

    /// Releases what the devices keep for a host buffer between calls (page-locked
    /// registrations). Call it before freeing a large buffer that was passed to hetblas.
    ///
    /// # Errors
    /// The backend's error when a registration cannot be undone.
    pub fn release_host<T>(&self, buffer: &[T]) -> Result<()> {
        self.pool.release_host(buffer)
    }

    /// Frees the tile workspaces and staging buffers kept between calls (kept because
    /// allocating them costs more than a small GEMM). Waits for the calls in flight; the next
    /// call allocates again.
    ///
    /// # Errors
    /// The backend's error when a staging buffer's registration cannot be undone.
    pub fn release_workspaces(&self) -> Result<()> {
        self.pool.release_workspaces()
    }
}

/// The triangular routines: TRSM and TRMM on host or device operands, over a tile DAG with
/// dependencies across devices ([`hetblas_core::plan::tri`]).
impl Runtime {
    /// TRSM: B is overwritten by X solving `op(A) X = alpha B` (side L) or `X op(A) = alpha B`
    /// (side R); A is triangular (`opts.uplo`), unit-diagonal when `opts.diag` says.
    ///
    /// # Errors
    /// Shape mismatches as BLAS parameters 5 (m) or 6 (n); device errors (B may then be
    /// partly overwritten).
    pub fn trsm<'a, T: Scalar>(
        &self,
        opts: TriOptions,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
    ) -> Result<TriReport> {
        self.pool.trsm(opts, alpha, a, b)
    }

    /// TRMM: `B := alpha op(A) B` (side L) or `alpha B op(A)` (side R).
    ///
    /// # Errors
    /// As [`Runtime::trsm`].
    pub fn trmm<'a, T: Scalar>(
        &self,
        opts: TriOptions,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
    ) -> Result<TriReport> {
        self.pool.trmm(opts, alpha, a, b)
    }

    /// TRSM or TRMM with explicit options (devices, tile, where the solves run, trace).
    ///
    /// # Errors
    /// As [`Runtime::trsm`], and bad options.
    pub fn tri_with<'a, T: Scalar>(
        &self,
        routine: TriRoutine,
        opts: TriOptions,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
        call: &TriCallOptions,
    ) -> Result<TriReport> {
        self.pool.tri_with(routine, opts, alpha, a, b, call)
    }

    /// BLAS-style TRSM on host slices, arguments checked as reference BLAS does (SIDE 1, UPLO
    /// 2, TRANSA 3, DIAG 4, M 5, N 6, LDA 9, LDB 11).
    ///
    /// # Errors
    /// A bad argument with its BLAS parameter number; device errors.
    #[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
    pub fn trsm_blas<T: Scalar>(
        &self,
        side: u8,
        uplo: u8,
        transa: u8,
        diag: u8,
        m: i64,
        n: i64,
        alpha: T,
        a: &[T],
        lda: i64,
        b: &mut [T],
        ldb: i64,
        call: &TriCallOptions,
    ) -> Result<TriReport> {
        self.pool.tri_blas(
            TriRoutine::Trsm,
            side,
            uplo,
            transa,
            diag,
            m,
            n,
            alpha,
            a,
            lda,
            b,
            ldb,
            call,
        )
    }

    /// BLAS-style TRMM on host slices, checked as [`Runtime::trsm_blas`].
    ///
    /// # Errors
    /// As [`Runtime::trsm_blas`].
    #[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
    pub fn trmm_blas<T: Scalar>(
        &self,
        side: u8,
        uplo: u8,
        transa: u8,
        diag: u8,
        m: i64,
        n: i64,
        alpha: T,
        a: &[T],
        lda: i64,
        b: &mut [T],
        ldb: i64,
        call: &TriCallOptions,
    ) -> Result<TriReport> {
        self.pool.tri_blas(
            TriRoutine::Trmm,
            side,
            uplo,
            transa,
            diag,
            m,
            n,
            alpha,
            a,
            lda,
            b,
            ldb,
            call,
        )
    }

    /// What the model chooses for a triangular problem with A and B at `locations`: devices,
    /// tile, solve placement, and every alternative's predicted time.
    ///
    /// # Errors
    /// No device can run the routine in the dtype.
    pub fn predict_tri(
        &self,
        problem: &TriProblem,
        locations: [MemorySpace; 2],
        call: &TriCallOptions,
    ) -> Result<TriDecision> {
        self.pool.predict_tri(problem, locations, call)
    }
}

/// The factorizations: Cholesky and LU with partial pivoting, and the solvers on them, on
/// host or device matrices, as task graphs over every device of the node
/// ([`hetblas_core::plan::factor`]). `report.info` is LAPACK's `info`.
impl Runtime {
    /// Cholesky factorization (`?potrf`) of the Hermitian positive definite `a` in place: its
    /// `uplo` triangle becomes the factor, the other triangle is neither read nor written.
    ///
    /// # Errors
    /// A matrix that is not square as LAPACK's parameter 2; device errors (see
    /// [`hetblas_core::FactorOptions::preserve`]).
    pub fn potrf<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        a: impl Into<MatOut<'a, T>>,
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        self.pool.potrf(uplo, a, opts)
    }

    /// LU factorization with partial pivoting (`?getrf`) of `a` in place, LAPACK's pivots
    /// (1-based) into `ipiv` (`min(m, n)` entries).
    ///
    /// # Errors
    /// As [`Runtime::potrf`], and an `ipiv` too short.
    pub fn getrf<'a, T: Scalar>(
        &self,
        a: impl Into<MatOut<'a, T>>,
        ipiv: &mut [i32],
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        self.pool.getrf(a, ipiv, opts)
    }

    /// `?potrf` on a host slice with LAPACK's arguments, checked as LAPACK checks them.
    ///
    /// # Errors
    /// A bad argument with its LAPACK parameter number; as [`Runtime::potrf`].
    pub fn potrf_lapack<T: Scalar>(
        &self,
        uplo: u8,
        n: i64,
        a: &mut [T],
        lda: i64,
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        self.pool.potrf_lapack(uplo, n, a, lda, opts)
    }

    /// `?getrf` on a host slice with LAPACK's arguments, checked as LAPACK checks them.
    ///
    /// # Errors
    /// A bad argument with its LAPACK parameter number; as [`Runtime::getrf`].
    pub fn getrf_lapack<T: Scalar>(
        &self,
        m: i64,
        n: i64,
        a: &mut [T],
        lda: i64,
        ipiv: &mut [i32],
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        self.pool.getrf_lapack(m, n, a, lda, ipiv, opts)
    }

    /// What the model would choose for a factorization of an `m x n` matrix of `dtype` at
    /// `location`: devices, where panels run, block width, with every alternative weighed.
    ///
    /// # Errors
    /// No device can run the routine in the dtype.
    pub fn predict_factor(
        &self,
        routine: FactorRoutine,
        shape: (usize, usize),
        dtype: DType,
        location: MemorySpace,
        opts: &FactorOptions,
    ) -> Result<FactorDecision> {
        self.pool
            .predict_factor(routine, shape, dtype, location, opts)
    }

    /// `?potrs`: solves `A X = B` with `potrf`'s factor, B overwritten by X.
    ///
    /// # Errors
    /// Shapes that do not agree; device errors.
    pub fn potrs<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
    ) -> Result<()> {
        self.pool.potrs(uplo, a, b)
    }

    /// `?getrs` (`trans` N): solves `A X = B` with `getrf`'s factors and pivots.
    ///
    /// # Errors
    /// As [`Runtime::potrs`], and pivots out of range.
    pub fn getrs<'a, T: Scalar>(
        &self,
        a: impl Into<MatIn<'a, T>>,
        ipiv: &[i32],
        b: MatMut<'a, T>,
    ) -> Result<()> {
        self.pool.getrs(a, ipiv, b)
    }

    /// `?posv`: factors A (`potrf`) and solves `A X = B`; `report.info > 0` leaves B as it was.
    ///
    /// # Errors
    /// As [`Runtime::potrf`] and [`Runtime::potrs`].
    pub fn posv<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        mut a: MatMut<'a, T>,
        b: impl Into<MatOut<'a, T>>,
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        let b: MatOut<'a, T> = b.into();
        let report = self.pool.potrf(uplo, a.rb_mut(), opts)?;
        if report.info == 0 {
            self.pool.potrs(uplo, a.as_ref(), b)?;
        }
        Ok(report)
    }

    /// `?gesv`: factors A (`getrf`) and solves `A X = B`; `report.info > 0` leaves B as it was.
    ///
    /// # Errors
    /// As [`Runtime::getrf`] and [`Runtime::getrs`].
    pub fn gesv<'a, T: Scalar>(
        &self,
        mut a: MatMut<'a, T>,
        ipiv: &mut [i32],
        b: MatMut<'a, T>,
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        let report = self.pool.getrf(a.rb_mut(), ipiv, opts)?;
        if report.info == 0 {
            self.pool.getrs(a.as_ref(), ipiv, b)?;
        }
        Ok(report)
    }
}
