//! The factorizations' call path (`?potrf`, `?getrf` and the solvers on them): LAPACK's
//! checks, the updating device, block width and panel placement chosen by simulating each
//! candidate plan (cached per problem), the executor, and LAPACK's `info` and pivots.
//!
//! **Faults.** A Cholesky whose panels run on the updating device writes each block column of
//! A once, when final: a device lost mid-call is left out and the factorization goes on, on
//! the devices left, from the first column that was not final. An LU's columns are final only
//! after later panels' interchanges, and a Cholesky's panels on the CPU write A's diagonal
//! blocks before they are final: such a call fails with the device's error, and A is as it was
//! when [`FactorOptions::preserve`] kept an undo log of it (a host copy of what the call
//! overwrites), else it holds partial results (the error says so).

use super::options::DeviceFault;
use super::{to_usize, DevicePool};
use crate::error::{Error, Result};
use crate::exec::trace::Trace;
use crate::factor_kernel::{FactorOp, InfoCell};
use crate::matrix::MatOut;
use crate::memory::{HostAccess, MemorySpace, RawTile};
use crate::operand::{MatMut, Trans};
use crate::plan::{FactorRequest, FactorRoutine, Plan, Request, Routine};
use crate::problem::blas_flags::ArgCheck;
use crate::problem::triangular::{Diag, Side, TriOptions, TriRoutine};
use crate::problem::Uplo;
use crate::scalar::{DType, Scalar};
use crate::undo::{UndoLog, UndoScope};
use std::sync::Arc;
use std::time::Instant;

/// Per-call choices of a factorization; the defaults let the model decide.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct FactorOptions {
    /// Use these devices (indices into [`DevicePool::devices`]): the first that can update.
    pub devices: Option<Vec<usize>>,
    /// Force the block column width.
    pub nb: Option<usize>,
    /// Force where panels run: `Some(true)` on the CPU (the host LAPACK), `Some(false)` on the
    /// updating device.
    pub panels_on_host: Option<bool>,
    /// Keep an undo log of A so that a call that fails leaves A bit-identical (a host copy of
    /// what the call overwrites).
    pub preserve: bool,
    /// Record a timeline of every transfer and kernel.
    pub trace: bool,
}

impl FactorOptions {
    super::options::setters! {
        nb: impl Into<Option<usize>>;
        panels_on_host: impl Into<Option<bool>>;
        preserve: bool;
        trace: bool;
    }
    pub fn devices(mut self, devices: impl IntoIterator<Item = usize>) -> Self {
        self.devices = Some(devices.into_iter().collect());
        self
    }
}

/// What a factorization did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct FactorReport {
    /// LAPACK's `info`: 0, or `k > 0` (POTRF: the leading minor of order `k` is not positive
    /// definite, the factorization stopped; GETRF: `U(k, k)` is exactly zero).
    pub info: i64,
    pub seconds: f64,
    pub planning_seconds: f64,
    pub plan_cached: bool,
    /// The devices that took part: the updating one first.
    pub devices: Vec<String>,
    /// The block column width.
    pub nb: Option<usize>,
    /// The device that ran the panels.
    pub panels: Option<String>,
    pub predicted_seconds: Option<f64>,
    /// Every candidate the model weighed: (updating device, panel device, nb, seconds).
    pub alternatives: Vec<FactorAlternative>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub trace: Option<Trace>,
    pub plan: Option<Arc<Plan>>,
    /// Devices that failed during the call, left out of it and of later calls.
    pub recovered: Vec<DeviceFault>,
}

/// One candidate the model weighed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FactorAlternative {
    pub devices: Vec<String>,
    pub panels: String,
    pub nb: usize,
    pub seconds: f64,
}

/// The model's choice for one factorization.
pub type FactorDecision = super::DagDecision<FactorAlternative>;

pub(super) type DecisionKey = (
    FactorRoutine,
    usize,
    usize,
    DType,
    MemorySpace,
    Option<Vec<usize>>,
    Option<usize>,
    Option<bool>,
    usize,
);

/// Block column widths the model considers (and the whole matrix, one panel).
const NB_CANDIDATES: [usize; 4] = [256, 512, 1024, 2048];

impl DevicePool {
    /// LAPACK-style `?potrf` on a host slice: arguments checked as LAPACK checks them (uplo 1,
    /// n 2, lda 4), then A's `uplo` triangle is overwritten by its Cholesky factor; the other
    /// triangle is neither read nor written. `report.info` is LAPACK's `info`.
    pub fn potrf_lapack<T: Scalar>(
        &self,
        uplo: u8,
        n: i64,
        a: &mut [T],
        lda: i64,
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        let check = ArgCheck("POTRF");
        let ul = check.flag(1, "uplo", uplo, Uplo::from_blas_char, "U or L")?;
        check.dim(2, "n", n)?;
        check.ld(4, "lda", lda, n)?;
        let n = to_usize(n)?;
        self.potrf(ul, MatMut::new(a, n, n, to_usize(lda)?)?, opts)
    }

    /// Cholesky factorization (`?potrf`) of the Hermitian positive definite `a` (its `uplo`
    /// triangle) in place, on host or device memory.
    pub fn potrf<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        a: impl Into<MatOut<'a, T>>,
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        let mut a = a.into();
        if a.rows() != a.cols() {
            return Err(ArgCheck("POTRF").err(
                2,
                "n",
                format!("A is {}x{}, not square", a.rows(), a.cols()),
            ));
        }
        self.factor::<T>(FactorRoutine::Potrf(uplo), a.raw(), None, opts)
    }

    /// LAPACK-style `?getrf` on host slices: arguments checked as LAPACK checks them (m 1, n 2,
    /// lda 4), then A is overwritten by its LU factors with partial pivoting and `ipiv`
    /// (`min(m, n)` entries, 1-based) by LAPACK's pivots.
    pub fn getrf_lapack<T: Scalar>(
        &self,
        m: i64,
        n: i64,
        a: &mut [T],
        lda: i64,
        ipiv: &mut [i32],
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        let check = ArgCheck("GETRF");
        check.dim(1, "m", m)?;
        check.dim(2, "n", n)?;
        check.ld(4, "lda", lda, m)?;
        let (m, n) = (to_usize(m)?, to_usize(n)?);
        self.getrf(MatMut::new(a, m, n, to_usize(lda)?)?, ipiv, opts)
    }

    /// LU factorization with partial pivoting (`?getrf`) of `a` in place, its pivots into
    /// `ipiv` (`min(m, n)` entries, 1-based, LAPACK's convention).
    pub fn getrf<'a, T: Scalar>(
        &self,
        a: impl Into<MatOut<'a, T>>,
        ipiv: &mut [i32],
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        let mut a = a.into();
        let mn = a.rows().min(a.cols());
        if ipiv.len() < mn {
            return Err(Error::InvalidInput(format!(
                "ipiv has {} entries, GETRF of a {}x{} matrix needs {mn}",
                ipiv.len(),
                a.rows(),
                a.cols()
            )));
        }
        self.factor::<T>(FactorRoutine::Getrf, a.raw(), Some(&mut ipiv[..mn]), opts)
    }

    /// The factorization of `ar` (the caller borrows it, and `ipiv`, for the whole call).
    fn factor<T: Scalar>(
        &self,
        routine: FactorRoutine,
        ar: RawTile,
        ipiv: Option<&mut [i32]>,
        opts: &FactorOptions,
    ) -> Result<FactorReport> {
        let started = Instant::now();
        let _thread = self.keep_thread_contexts();
        self.check_device_list(opts.devices.as_deref())?;
        if opts.nb == Some(0) {
            return Err(Error::InvalidInput("block width 0".into()));
        }
        if !ar.space.is_host() && !self.devices.iter().any(|d| d.space() == ar.space) {
            return Err(Error::InvalidInput(format!(
                "A lives in {:?}, which belongs to no device of this pool",
                ar.space
            )));
        }
        let mut report = FactorReport::default();
        if ar.rows == 0 || ar.cols == 0 {
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
        // Pivots come back relative to their panel, as 4-byte integers, into a host buffer.
        let mut rel: Vec<i32> = vec![0; ipiv.as_ref().map_or(0, |_| ar.rows.min(ar.cols))];
        let pivots = RawTile {
            space: MemorySpace::HOST,
            addr: rel.as_mut_ptr() as u64,
            rows: rel.len(),
            cols: 1,
            ld: rel.len().max(1),
            dtype: DType::F32,
        };
        let undo = UndoLog::new();
        self.run_factor::<T>(routine, ar, pivots, 0, opts, &mut report, &undo)
            .map_err(|e| self.put_c_back(e, &undo))?;
        if let (Some(ipiv), Some(nb)) = (ipiv, report.nb) {
            for (i, (p, &r)) in ipiv.iter_mut().zip(&rel).enumerate() {
                *p = r + (i / nb * nb) as i32;
            }
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Decision, workspaces, execution from step `start`, `info`, and the recovery of devices
    /// that fail.
    #[allow(clippy::too_many_arguments)] // one call's state
    fn run_factor<T: Scalar>(
        &self,
        routine: FactorRoutine,
        ar: RawTile,
        pivots: RawTile,
        start: usize,
        opts: &FactorOptions,
        report: &mut FactorReport,
        undo: &UndoLog,
    ) -> Result<()> {
        let plan_start = Instant::now();
        let key: DecisionKey = (
            routine,
            ar.rows,
            ar.cols,
            T::DTYPE,
            ar.space,
            opts.devices.clone(),
            opts.nb,
            opts.panels_on_host,
            start,
        );
        let decision;
        (decision, report.plan_cached) = self.factor_decisions.get_or_decide(&key, || {
            Ok(Arc::new(self.decide_factor(routine, &ar, start, opts)?))
        })?;
        report.planning_seconds += plan_start.elapsed().as_secs_f64();
        let plan = decision.plan.clone();
        let Routine::Factor { nb, panels, .. } = plan.routine else {
            return Err(Error::internal("a factorization ran another plan"));
        };
        let label = |i: usize| self.devices[i].info().label();
        report.devices = decision.devices.iter().map(|&i| label(i)).collect();
        report.nb = Some(nb);
        report.panels = Some(label(decision.devices[panels.unwrap_or(0)]));
        report.predicted_seconds = Some(decision.chosen.seconds);
        report.alternatives = decision.alternatives.clone();
        report.plan = Some(plan.clone());
        let infos: Vec<Arc<InfoCell>> = (0..plan.infos).map(|_| InfoCell::new()).collect();
        let run = super::DagRun {
            plan: &plan,
            devices: &decision.devices,
            operands: [(ar, HostAccess::ReadWrite), (pivots, HostAccess::ReadWrite)],
            alpha: T::from_f64(1.0).to_value(),
            trace: opts.trace,
            undo: opts.preserve.then_some((undo, UndoScope::Every)),
            infos: &infos,
        };
        let mut out = match self.run_dag(&run, &mut report.recovered, "a factorization")? {
            Ok(out) => out,
            // With no device left to decide on, the device's own error.
            Err(left_out) => {
                self.factor_decisions.forget(&key);
                return self
                    .run_factor::<T>(routine, ar, pivots, start, opts, report, undo)
                    .map_err(|e| match e {
                        Error::Unsupported { .. } => left_out,
                        e => e,
                    });
            }
        };
        super::add_transfer_bytes(&out, &mut report.bytes_in, &mut report.bytes_out);
        report.trace = out.trace.take();
        if out.faults.is_empty() {
            // LAPACK's info: the first panel that reported one, offset by its first column.
            report.info = infos
                .iter()
                .enumerate()
                .find_map(|(j, c)| {
                    c.get()
                        .filter(|&i| i > 0)
                        .map(|i| ((start + j) * nb) as i64 + i)
                })
                .unwrap_or(0);
            return Ok(());
        }
        // A device failed: left out, and a Cholesky with its panels on the updating device goes
        // on from its first column that was not final.
        let last = self.leave_out_all(
            &mut report.recovered,
            out.faults,
            &decision.devices,
            "a factorization",
            (0, 0),
        )?;
        let resumable = matches!(routine, FactorRoutine::Potrf(_))
            && panels.is_none()
            && ar.space.is_host()
            && !opts.preserve;
        if !resumable {
            return Err(match last {
                e if opts.preserve => e,
                Error::DeviceLost { device, detail } => Error::DeviceLost {
                    device,
                    detail: format!("{detail}; A holds partial results"),
                },
                e => e,
            });
        }
        // Steps whose every final write completed, in order.
        let nt = ar.cols.div_ceil(nb);
        let done = (start..nt)
            .take_while(|&j| {
                let (o, w) = (j * nb, nb.min(ar.cols - j * nb));
                let below = ar.cols > o + w;
                // The planner keys the panel's off-diagonal part (below the diagonal block,
                // or right of it for upper) as (j + 1, j) for either uplo.
                let rest = crate::tiling::TileKey::a(j + 1, j);
                out.final_tiles.contains(&crate::tiling::TileKey::a(j, j))
                    && (!below || out.final_tiles.contains(&rest))
            })
            .count();
        let sub = FactorOptions {
            devices: None,
            trace: false,
            ..opts.clone()
        };
        self.run_factor::<T>(routine, ar, pivots, start + done, &sub, report, undo)
            .map_err(|e| match e {
                Error::Unsupported { .. } => last,
                e => e,
            })
    }

    /// Whether device `i` can be a factorization's updating device for `op` (POTRF or GETRF)
    /// in `dt`: the panel op, GEMM and TRSM, and SYRK (POTRF) or LASWP (GETRF); whether it has
    /// failed is not asked.
    pub fn updates_factor(&self, i: usize, op: FactorOp, dt: DType) -> bool {
        let Some(d) = self.devices.get(i) else {
            return false;
        };
        let k = d.kernel();
        k.supports(dt)
            && k.supports_tri(dt)
            && k.supports_factor(op, dt)
            && (op == FactorOp::Potrf && k.supports_sym(dt)
                || op == FactorOp::Getrf && k.supports_factor(FactorOp::Laswp, dt))
    }

    /// Every candidate (updating device, panel device, block width) planned and simulated;
    /// the fastest.
    fn decide_factor(
        &self,
        routine: FactorRoutine,
        ar: &RawTile,
        start: usize,
        opts: &FactorOptions,
    ) -> Result<FactorDecision> {
        let dt = ar.dtype;
        let failed = self.failed_devices();
        let op = match routine {
            FactorRoutine::Potrf(_) => FactorOp::Potrf,
            FactorRoutine::Getrf => FactorOp::Getrf,
        };
        let updates = |i: usize| !failed.contains(&i) && self.updates_factor(i, op, dt);
        let all = 0..self.devices.len();
        let host_dev = all
            .clone()
            .find(|&i| self.devices[i].space() == ar.space && ar.space.is_host() && updates(i));
        // The updating device: the one holding A when it is on a device, else each that can.
        let updaters: Vec<usize> = match &opts.devices {
            _ if !ar.space.is_host() => all
                .filter(|&i| self.devices[i].space() == ar.space && updates(i))
                .collect(),
            Some(l) => l.iter().copied().filter(|&i| updates(i)).collect(),
            None => all.filter(|&i| updates(i)).collect(),
        };
        if updaters.is_empty() {
            return Err(Error::Unsupported {
                device: "pool".into(),
                detail: format!("no device left runs {} in {dt}", op.name()),
            });
        }
        let (m, n) = (ar.rows, ar.cols);
        let order = m.min(n);
        let mut nbs: Vec<usize> = match opts.nb {
            Some(nb) => vec![nb.clamp(1, n.max(1))],
            None => NB_CANDIDATES
                .iter()
                .copied()
                .filter(|&nb| nb < order && order.div_ceil(nb) <= 128)
                .collect(),
        };
        if nbs.is_empty() || (opts.nb.is_none() && start == 0) {
            nbs.push(n.max(1));
        }
        let profile = self.evaluation_profile(dt);
        let mut cands = Vec::new();
        for &u in &updaters {
            let panel_choices: Vec<Option<usize>> = match (opts.panels_on_host, host_dev) {
                (Some(false), _) => vec![None],
                (Some(true), Some(h)) if h != u => vec![Some(h)],
                (None, Some(h)) if h != u && !self.devices[u].space().is_host() => {
                    vec![None, Some(h)]
                }
                _ => vec![None],
            };
            for &nb in &nbs {
                for &p in &panel_choices {
                    cands.push(self.factor_candidate(routine, ar, nb, u, p, start, &profile));
                }
            }
        }
        super::fastest(cands, "factorization", |a| a.seconds)
    }

    /// One candidate: its plan and simulated time.
    #[allow(clippy::too_many_arguments)] // one candidate's choices
    fn factor_candidate(
        &self,
        routine: FactorRoutine,
        ar: &RawTile,
        nb: usize,
        updater: usize,
        panels: Option<usize>,
        start: usize,
        profile: &crate::profile::MachineProfile,
    ) -> Result<(FactorAlternative, Vec<usize>, Plan)> {
        let mut devices = vec![updater];
        devices.extend(panels);
        let specs = self.dag_specs(&devices);
        let plan = crate::plan::build(&Request::Factor(FactorRequest {
            routine,
            m: ar.rows,
            n: ar.cols,
            dtype: ar.dtype,
            location: ar.space,
            nb,
            devices: &specs,
            panels: panels.map(|_| 1),
            start,
        }))?;
        let labels: Vec<String> = specs.iter().map(|s| s.label.clone()).collect();
        let seconds = super::makespan(&plan, &labels, profile)?;
        Ok((
            FactorAlternative {
                panels: labels[if panels.is_some() { 1 } else { 0 }].clone(),
                devices: labels,
                nb,
                seconds,
            },
            devices,
            plan,
        ))
    }

    /// What the model would choose for a factorization of an `m x n` matrix of `dtype` at
    /// `location` (for `hetblas predict`).
    pub fn predict_factor(
        &self,
        routine: FactorRoutine,
        (m, n): (usize, usize),
        dtype: DType,
        location: MemorySpace,
        opts: &FactorOptions,
    ) -> Result<FactorDecision> {
        let _thread = self.keep_thread_contexts();
        let ar = RawTile {
            space: location,
            addr: 0,
            rows: m,
            cols: n,
            ld: m.max(1),
            dtype,
        };
        self.decide_factor(routine, &ar, 0, opts)
    }

    /// `?potrs`: solves `A X = B` with the Cholesky factor of `potrf` (its `uplo` triangle),
    /// `B` (`n x nrhs`) overwritten by `X`: two triangular solves.
    pub fn potrs<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        a: impl Into<crate::matrix::MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
    ) -> Result<()> {
        let (a, mut b) = (a.into(), b.into());
        let (ar, br) = (a.raw(), b.raw());
        if ar.rows != ar.cols || ar.rows != br.rows {
            return Err(ArgCheck("POTRS").err(
                2,
                "n",
                format!("A is {}x{}, B has {} rows", ar.rows, ar.cols, br.rows),
            ));
        }
        let ct = Trans::C.for_dtype(T::DTYPE);
        // L L^H X = B: L Y = B, then L^H X = Y (upper: U^H Y = B, U X = Y).
        let (first, second) = match uplo {
            Uplo::Lower => (Trans::N, ct),
            Uplo::Upper => (ct, Trans::N),
        };
        let unit = Diag::NonUnit;
        self.solve_twice::<T>(ar, br, [(uplo, first, unit), (uplo, second, unit)])
    }

    /// `?getrs` (`trans` N): solves `A X = B` with the LU factors and pivots of `getrf`, `B`
    /// overwritten by `X`: the interchanges on B (on the host), then two triangular solves.
    pub fn getrs<'a, T: Scalar>(
        &self,
        a: impl Into<crate::matrix::MatIn<'a, T>>,
        ipiv: &[i32],
        mut b: MatMut<'a, T>,
    ) -> Result<()> {
        let a = a.into();
        let ar = a.raw();
        let n = ar.rows;
        if ar.rows != ar.cols || b.rows() != n || ipiv.len() < n {
            return Err(ArgCheck("GETRS").err(
                2,
                "n",
                format!(
                    "A is {}x{}, B has {} rows, {} pivots",
                    ar.rows,
                    ar.cols,
                    b.rows(),
                    ipiv.len()
                ),
            ));
        }
        for (i, &p) in ipiv.iter().take(n).enumerate() {
            let p = usize::try_from(p - 1)
                .ok()
                .filter(|&p| p < n)
                .ok_or_else(|| Error::InvalidInput(format!("pivot {i} is {p}, not in 1..={n}")))?;
            for j in 0..b.cols() {
                b.col_mut(j).swap(i, p);
            }
        }
        let br = MatOut::from(b).raw();
        let (l, u) = (
            (Uplo::Lower, Trans::N, Diag::Unit),
            (Uplo::Upper, Trans::N, Diag::NonUnit),
        );
        self.solve_twice::<T>(ar, br, [l, u])
    }

    /// B := the solution of `op(A) X = B` for each (uplo, transa, diag) of `solves` in turn.
    fn solve_twice<T: Scalar>(
        &self,
        ar: RawTile,
        br: RawTile,
        solves: [(Uplo, Trans, Diag); 2],
    ) -> Result<()> {
        let (call, one) = (super::tri::TriCallOptions::default(), T::from_f64(1.0));
        for (uplo, transa, diag) in solves {
            let opts = TriOptions {
                side: Side::Left,
                uplo,
                transa,
                diag,
            };
            let mut report = super::tri::TriReport::default();
            self.tri_raw(TriRoutine::Trsm, opts, one, ar, br, &call, &mut report)?;
        }
        Ok(())
    }
}
