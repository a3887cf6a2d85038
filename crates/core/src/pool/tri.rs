//! The TRSM and TRMM call path: checks, quick returns, the tile size, devices and solve
//! placement chosen by simulating each candidate plan (cached per problem), then the executor.
//! A device that fails mid-call is left out and each panel of B goes on from the tiles that
//! were final ([`DevicePool::finish_panels`]).

use super::options::DeviceFault;
use super::{op_sub, to_usize, DevicePool};
use crate::error::{Error, Result};
use crate::exec::trace::Trace;
use crate::matrix::{MatIn, MatOut};
use crate::memory::{HostAccess, MemorySpace, RawTile};
use crate::operand::{MatMut, MatRef, Trans};
use crate::plan::{Plan, PlanStats, Request, Routine, TriRequest, TriTiling};
use crate::problem::blas_flags::ArgCheck;
use crate::problem::triangular::{check_tri_args, Side, TriOptions, TriProblem, TriRoutine};
use crate::scalar::Scalar;
use crate::undo::{UndoLog, UndoScope};
use std::sync::Arc;
use std::time::Instant;

/// Where the diagonal TRSM solves run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum SolvePlacement {
    /// Each device solves the diagonal tiles of its own panels.
    OnDevice,
    /// The device computing in host memory (the CPU) solves them all, in B itself.
    Host,
}

/// Per-call choices of a triangular call; the defaults let the model decide.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TriCallOptions {
    /// Force the tile size (A's blocks and B's panels).
    pub tile: Option<usize>,
    /// Use exactly these devices (indices into [`DevicePool::devices`]).
    pub devices: Option<Vec<usize>>,
    /// Force where the diagonal solves run (TRSM).
    pub solve: Option<SolvePlacement>,
    /// Record a timeline of every transfer and kernel.
    pub trace: bool,
}

impl TriCallOptions {
    super::options::setters! {
        tile: impl Into<Option<usize>>;
        solve: impl Into<Option<SolvePlacement>>;
        trace: bool;
    }
    pub fn devices(mut self, devices: impl IntoIterator<Item = usize>) -> Self {
        self.devices = Some(devices.into_iter().collect());
        self
    }
    pub fn device_list(mut self, devices: Option<Vec<usize>>) -> Self {
        self.devices = devices;
        self
    }
}

/// One candidate the model weighed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TriAlternative {
    /// Device labels.
    pub devices: Vec<String>,
    pub tile: usize,
    pub solve: SolvePlacement,
    /// Predicted seconds (the plan simulated).
    pub seconds: f64,
}

/// The model's choice for one triangular problem.
pub type TriDecision = super::DagDecision<TriAlternative>;

/// What a triangular call did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TriReport {
    pub seconds: f64,
    pub planning_seconds: f64,
    /// Whether the decision and plan came from the cache.
    pub plan_cached: bool,
    pub devices: Vec<String>,
    pub tile: Option<usize>,
    pub solve: Option<SolvePlacement>,
    pub predicted_seconds: Option<f64>,
    pub stats: PlanStats,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub trace: Option<Trace>,
    /// The plan that ran (for the simulator: [`DevicePool::simulate_tri_report`]); `None` for
    /// a quick return.
    pub plan: Option<Arc<Plan>>,
    /// Devices that failed during the call, left out of it and of later calls: the call
    /// finished on the devices left.
    pub recovered: Vec<DeviceFault>,
}

pub(super) type DecisionKey = (
    TriProblem,
    [MemorySpace; 2],
    Option<Vec<usize>>,
    Option<usize>,
    Option<SolvePlacement>,
);

/// Tile sizes the model considers.
const TILE_CANDIDATES: [usize; 6] = [256, 512, 1024, 2048, 4096, 8192];
/// At most this many diagonal blocks (the DAG has ~nt^2/2 tasks per panel).
const MAX_BLOCKS: usize = 32;

impl DevicePool {
    /// BLAS-style TRSM or TRMM on host slices: arguments checked as reference BLAS checks
    /// them, then B is overwritten by the solution X of `op(A) X = alpha B` (TRSM, side L) or
    /// `X op(A) = alpha B`, or by `alpha op(A) B` (TRMM, side L) or `alpha B op(A)`.
    #[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
    pub fn tri_blas<T: Scalar>(
        &self,
        routine: TriRoutine,
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
        opts: &TriCallOptions,
    ) -> Result<TriReport> {
        let o = check_tri_args(routine, side, uplo, transa, diag, m, n, lda, ldb)?;
        let (m, n) = (to_usize(m)?, to_usize(n)?);
        let k = if o.side == Side::Left { m } else { n };
        let av = MatRef::new(a, k, k, to_usize(lda)?)?;
        let bv = MatMut::new(b, m, n, to_usize(ldb)?)?;
        self.tri_with(routine, o, alpha, av, bv, opts)
    }

    /// TRSM with default options: B := the solution of `op(A) X = alpha B` (or `X op(A)`).
    pub fn trsm<'a, T: Scalar>(
        &self,
        opts: TriOptions,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
    ) -> Result<TriReport> {
        let call = TriCallOptions::default();
        self.tri_with(TriRoutine::Trsm, opts, alpha, a, b, &call)
    }

    /// TRMM with default options: `B := alpha op(A) B` (or `alpha B op(A)`).
    pub fn trmm<'a, T: Scalar>(
        &self,
        opts: TriOptions,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
    ) -> Result<TriReport> {
        let call = TriCallOptions::default();
        self.tri_with(TriRoutine::Trmm, opts, alpha, a, b, &call)
    }

    /// TRSM or TRMM with explicit options. A must be `k x k` with k = m (left) or n (right)
    /// for B `m x n`; a mismatch is reported as parameter 5 (m) or 6 (n).
    pub fn tri_with<'a, T: Scalar>(
        &self,
        routine: TriRoutine,
        opts: TriOptions,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
        call: &TriCallOptions,
    ) -> Result<TriReport> {
        let started = Instant::now();
        let _thread = self.keep_thread_contexts();
        let (a, mut b) = (a.into(), b.into());
        let (m, n) = (b.rows(), b.cols());
        let k = if opts.side == Side::Left { m } else { n };
        if a.rows() != k || a.cols() != k {
            let (param, name) = if opts.side == Side::Left {
                (5, "m")
            } else {
                (6, "n")
            };
            let reason = format!("A is {}x{}, B is {m}x{n}", a.rows(), a.cols());
            return Err(ArgCheck(routine.name()).err(param, name, reason));
        }
        let (ar, br) = (a.raw(), b.raw());
        // GEMM's check of its three operands, B standing for the third.
        self.check_locations(&[ar, br, br])?;
        self.check_device_list(call.devices.as_deref())?;
        if call.tile == Some(0) {
            return Err(Error::InvalidInput("tile size 0".into()));
        }
        let mut report = TriReport::default();
        if m > 0 && n > 0 && alpha == T::default() {
            // B := 0, A not read (reference BLAS).
            self.scale_c(&mut b, T::default(), crate::plan::TileMask::Whole)?;
        } else if m > 0 && n > 0 {
            self.tri_raw(routine, opts, alpha, ar, br, call, &mut report)?;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// TRSM or TRMM of B `br` (not empty) by A `ar`, operands that the caller checked and
    /// borrows for the whole call; a call that fails puts B back from its undo log.
    #[allow(clippy::too_many_arguments)] // the routine's operands and options
    pub(super) fn tri_raw<T: Scalar>(
        &self,
        routine: TriRoutine,
        opts: TriOptions,
        alpha: T,
        ar: RawTile,
        br: RawTile,
        call: &TriCallOptions,
        report: &mut TriReport,
    ) -> Result<()> {
        let problem = TriProblem {
            routine,
            opts,
            m: br.rows,
            n: br.cols,
            dtype: T::DTYPE,
        };
        let undo = UndoLog::new();
        self.run_tri(problem, ar, br, alpha, call, report, &undo)
            .map_err(|e| self.put_c_back(e, &undo))
    }

    /// Decision (cached), workspaces, execution, and the recovery of devices that fail.
    #[allow(clippy::too_many_arguments)] // one call's state, passed once from `tri_with`
    fn run_tri<T: Scalar>(
        &self,
        problem: TriProblem,
        ar: RawTile,
        br: RawTile,
        alpha: T,
        call: &TriCallOptions,
        report: &mut TriReport,
        undo: &UndoLog,
    ) -> Result<()> {
        let locations = [ar.space, br.space];
        let plan_start = Instant::now();
        let key: DecisionKey = (
            problem,
            locations,
            call.devices.clone(),
            call.tile,
            call.solve,
        );
        let decision;
        (decision, report.plan_cached) = self.tri_decisions.get_or_decide(&key, || {
            Ok(Arc::new(self.decide_tri(&problem, locations, call)?))
        })?;
        report.planning_seconds = plan_start.elapsed().as_secs_f64();
        let plan = &decision.plan;
        report.devices = decision
            .devices
            .iter()
            .map(|&i| self.devices[i].info().label())
            .collect();
        report.tile = Some(decision.chosen.tile);
        report.solve = Some(decision.chosen.solve);
        report.predicted_seconds = Some(decision.chosen.seconds);
        report.stats = plan.stats();
        report.plan = Some(plan.clone());
        // A failed call goes on from the final tiles ([`DevicePool::finish_panels`]): saved are
        // what a device writes in B's own memory, or all of B where no host CPU can finish or
        // solves on the host write a tile twice.
        let scope = if self.host_fallback(problem.dtype).is_none()
            || decision.chosen.solve == SolvePlacement::Host
        {
            Some(UndoScope::Every)
        } else if plan.devices.iter().any(|d| d.space == br.space) {
            Some(UndoScope::InPlace)
        } else {
            None
        };
        let run = super::DagRun {
            plan,
            devices: &decision.devices,
            operands: [(ar, HostAccess::Read), (br, HostAccess::ReadWrite)],
            alpha: alpha.to_value(),
            trace: call.trace,
            undo: scope.map(|s| (undo, s)),
            infos: &[],
        };
        let mut out = match self.run_dag(&run, &mut report.recovered, "TRSM/TRMM")? {
            Ok(out) => out,
            Err(_left_out) => {
                self.tri_decisions.forget(&key);
                return self.run_tri(problem, ar, br, alpha, call, report, undo);
            }
        };
        super::add_transfer_bytes(&out, &mut report.bytes_in, &mut report.bytes_out);
        report.trace = out.trace.take();
        if out.faults.is_empty() {
            return Ok(());
        }
        // Devices failed: they are left out, and the panels go on from their final tiles, or B
        // is put back and the call runs again whole.
        let Routine::Tri { tile, panel, .. } = decision.plan.routine else {
            return Err(Error::internal("a triangular call ran another plan"));
        };
        let tiling = TriTiling {
            problem,
            tile,
            panel,
        };
        let unfinished = tiling.nt() * tiling.np() - out.final_tiles.len();
        let last = self.leave_out_all(
            &mut report.recovered,
            out.faults,
            &decision.devices,
            "TRSM/TRMM",
            (unfinished, 0),
        )?;
        let dt = problem.dtype;
        let usable = |i: usize| {
            let k = self.devices[i].kernel();
            k.supports(dt) && k.supports_tri(dt)
        };
        let Some(left) = self.devices_left(call.devices.as_deref(), &[ar, br], dt, usable) else {
            return Err(last);
        };
        let sub = TriCallOptions {
            devices: call.devices.as_ref().map(|_| left),
            trace: false,
            ..call.clone()
        };
        let mut finals = out.final_tiles;
        match scope {
            Some(UndoScope::Every) => {
                undo.restore(&self.links)?;
                return self.run_tri(problem, ar, br, alpha, &sub, report, undo);
            }
            _ if !out.in_place.is_empty() => {
                if scope.is_none() {
                    return Err(last);
                }
                // The panels a device computed in B itself are put back whole.
                undo.restore(&self.links)?;
                let panels: std::collections::HashSet<u32> =
                    out.in_place.iter().map(|k| k.c).collect();
                finals.retain(|k| !panels.contains(&k.c));
            }
            _ => {}
        }
        self.finish_panels(&tiling, ar, br, alpha, &sub, &finals, report)
    }

    /// Finishes every panel of B whose tiles are not all final, on the devices left. A panel's
    /// final tiles `D` are the first of [`TriProblem::block_order`]; the rest `R` hold the
    /// caller's B. TRSM: `B_R := alpha B_R - op(A)(R,D) X_D`, then `X_R` solves with
    /// `op(A)(R,R)`; TRMM: `B_R := alpha op(A)(R,R) B_R`. Adjacent panels alike go together.
    #[allow(clippy::too_many_arguments)] // one call's state
    fn finish_panels<T: Scalar>(
        &self,
        tiling: &TriTiling,
        ar: RawTile,
        br: RawTile,
        alpha: T,
        call: &TriCallOptions,
        finals: &std::collections::HashSet<crate::tiling::TileKey>,
        report: &mut TriReport,
    ) -> Result<()> {
        let p = tiling.problem;
        let (nt, np) = (tiling.nt(), tiling.np());
        let order = p.block_order(nt);
        // Per panel, how many of its tiles (in block order) are final.
        let done: Vec<usize> = (0..np)
            .map(|j| {
                order
                    .iter()
                    .take_while(|&&k| finals.contains(&crate::tiling::TileKey::b(k, j)))
                    .count()
            })
            .collect();
        let mut j = 0;
        for alike in done.chunk_by(|x, y| x == y) {
            let (s, end) = (alike[0], j + alike.len());
            if s < nt {
                let first = tiling.panel_span(j).0;
                let (last, len) = tiling.panel_span(end - 1);
                let lines = (first, last + len - first);
                self.finish_lines(tiling, &order, s, lines, ar, br, alpha, call, report)?;
            }
            j = end;
        }
        Ok(())
    }

    /// [`DevicePool::finish_panels`] for B's lines `lines` (first, count) whose first `s`
    /// blocks in `order` are final.
    #[allow(clippy::too_many_arguments)] // one call's state
    fn finish_lines<T: Scalar>(
        &self,
        tiling: &TriTiling,
        order: &[usize],
        s: usize,
        (l0, nl): (usize, usize),
        a_raw: RawTile,
        b_raw: RawTile,
        alpha: T,
        call: &TriCallOptions,
        report: &mut TriReport,
    ) -> Result<()> {
        let p = tiling.problem;
        let span = |blocks: &[usize]| {
            let spans = blocks.iter().map(|&k| tiling.block_span(k));
            let lo = spans.clone().map(|(o, _)| o).min().unwrap_or(0);
            (lo, spans.map(|(o, l)| o + l).max().unwrap_or(0) - lo)
        };
        let (r0, nr) = span(&order[s..]);
        let (d0, nd) = span(&order[..s]);
        let left = p.opts.side == Side::Left;
        // The block of B made of A-order rows (left) or columns (right) `x0..x0+nx` of the
        // lines.
        let b_block = |x0: usize, nx: usize| {
            if left {
                (x0, l0, nx, nl)
            } else {
                (l0, x0, nl, nx)
            }
        };
        let sub_b = |(r, c, nr, nc): (usize, usize, usize, usize)| b_raw.sub(r, c, nr, nc);
        let transa = p.opts.transa;
        let mut alpha = alpha;
        if p.routine == TriRoutine::Trsm && s > 0 {
            // B_R := alpha B_R - op(A)(R,D) X_D (left) or alpha B_R - X_D op(A)(D,R) (right).
            let c = sub_b(b_block(r0, nr));
            let x = sub_b(b_block(d0, nd));
            let minus_one = T::from_f64(-1.0);
            let opts = super::options::GemmOptions::default().device_list(call.devices.clone());
            let g = if left {
                let a_rd = op_sub(a_raw, transa, r0, d0, nr, nd);
                self.gemm_raw(transa, Trans::N, minus_one, a_rd, x, alpha, c, &opts, true)?
            } else {
                let a_dr = op_sub(a_raw, transa, d0, r0, nd, nr);
                self.gemm_raw(Trans::N, transa, minus_one, x, a_dr, alpha, c, &opts, true)?
            };
            report.recovered.extend(g.recovered);
            alpha = T::from_f64(1.0);
        }
        let a_rr = a_raw.sub(r0, r0, nr, nr);
        let b_r = sub_b(b_block(r0, nr));
        self.tri_raw(p.routine, p.opts, alpha, a_rr, b_r, call, report)
    }

    /// What the model would choose for `problem` with A and B at `locations` (for `hetblas
    /// predict`): the devices, tile, solve placement and every alternative's predicted time.
    pub fn predict_tri(
        &self,
        problem: &TriProblem,
        locations: [MemorySpace; 2],
        call: &TriCallOptions,
    ) -> Result<TriDecision> {
        let _thread = self.keep_thread_contexts();
        self.decide_tri(problem, locations, call)
    }

    /// Every candidate (device set, tile, solve placement) planned and simulated; the fastest.
    fn decide_tri(
        &self,
        problem: &TriProblem,
        locations: [MemorySpace; 2],
        call: &TriCallOptions,
    ) -> Result<TriDecision> {
        let dt = problem.dtype;
        let failed = self.failed_devices();
        let usable = |i: usize| {
            let d = &self.devices[i];
            !failed.contains(&i) && d.kernel().supports(dt) && d.kernel().supports_tri(dt)
        };
        let host_dev =
            (0..self.devices.len()).find(|&i| self.devices[i].space().is_host() && usable(i));
        let [a_space, b_space] = locations;
        let owner =
            |s: MemorySpace| (0..self.devices.len()).find(|&i| self.devices[i].space() == s);
        let mut sets: Vec<Vec<usize>> = Vec::new();
        if let Some(list) = &call.devices {
            let left: Vec<usize> = list
                .iter()
                .copied()
                .filter(|i| !failed.contains(i))
                .collect();
            match (left.is_empty(), host_dev) {
                // The devices asked for are all gone: the host CPU finishes.
                (true, Some(h)) if !list.is_empty() => sets.push(vec![h]),
                _ => sets.push(left),
            }
        } else if !b_space.is_host() || !a_space.is_host() {
            // A device-resident operand: its device computes, in place.
            let home = if !b_space.is_host() { b_space } else { a_space };
            sets.push(owner(home).into_iter().collect());
        } else {
            let acc: Vec<usize> = (0..self.devices.len())
                .filter(|&i| usable(i) && !self.devices[i].space().is_host())
                .collect();
            if !acc.is_empty() {
                sets.push(acc.clone());
                if acc.len() > 1 {
                    // The fastest accelerator alone (fewer devices can win on small problems).
                    sets.extend(acc.iter().map(|&i| vec![i]));
                }
                if let Some(h) = host_dev {
                    let mut with = acc.clone();
                    with.push(h);
                    sets.push(with);
                }
            }
            if let Some(h) = host_dev {
                sets.push(vec![h]);
            }
        }
        if let Some(&i) = sets.iter().flatten().find(|&&i| !usable(i)) {
            return Err(Error::Unsupported {
                device: self.devices[i].info().label(),
                detail: format!("{} in {dt}", problem.routine.name()),
            });
        }
        sets.retain(|s| !s.is_empty());
        if sets.is_empty() {
            return Err(Error::Unsupported {
                device: "pool".into(),
                detail: format!("no device runs {} in {dt}", problem.routine.name()),
            });
        }
        let order = problem.a_order();
        let tiles: Vec<usize> = match call.tile {
            Some(t) => vec![t.min(order.max(1))],
            None => {
                let mut t: Vec<usize> = TILE_CANDIDATES
                    .iter()
                    .copied()
                    .filter(|&t| t < order && order.div_ceil(t) <= MAX_BLOCKS)
                    .collect();
                if order <= *TILE_CANDIDATES.last().unwrap_or(&order) {
                    t.push(order);
                }
                if t.is_empty() {
                    t.push(order.div_ceil(MAX_BLOCKS));
                }
                t
            }
        };
        let profile = self.evaluation_profile(dt);
        let mut cands = Vec::new();
        for set in &sets {
            let solves: Vec<SolvePlacement> = match (call.solve, problem.routine) {
                (_, TriRoutine::Trmm) => vec![SolvePlacement::OnDevice],
                (Some(s), _) => vec![s],
                (None, _) => {
                    let mut v = vec![SolvePlacement::OnDevice];
                    if host_dev.is_some() && a_space.is_host() && b_space.is_host() {
                        v.push(SolvePlacement::Host);
                    }
                    v
                }
            };
            for &tile in &tiles {
                for &solve in &solves {
                    cands.push(
                        self.candidate(problem, locations, set, tile, solve, host_dev, &profile),
                    );
                }
            }
        }
        super::fastest(cands, "triangular", |a| a.seconds)
    }

    /// One candidate: its plan and simulated time.
    #[allow(clippy::too_many_arguments)] // one candidate's choices
    fn candidate(
        &self,
        problem: &TriProblem,
        locations: [MemorySpace; 2],
        set: &[usize],
        tile: usize,
        solve: SolvePlacement,
        host_dev: Option<usize>,
        profile: &crate::profile::MachineProfile,
    ) -> Result<(TriAlternative, Vec<usize>, Plan)> {
        let mut devices = set.to_vec();
        let solver = match solve {
            SolvePlacement::OnDevice => None,
            SolvePlacement::Host => {
                let h = host_dev.ok_or_else(|| Error::Unsupported {
                    device: "pool".into(),
                    detail: "solves on the host need a host device".into(),
                })?;
                Some(match devices.iter().position(|&d| d == h) {
                    Some(p) => p,
                    None => {
                        devices.push(h);
                        devices.len() - 1
                    }
                })
            }
        };
        let dt = problem.dtype;
        let rates: Vec<f64> = devices
            .iter()
            .map(|&i| self.gemm_rate(i, dt, tile))
            .collect();
        let specs = self.dag_specs(&devices);
        // Panels dealt by speed: each to the device that would finish its share first. The
        // solver added only to solve gets none.
        let computing = set.len();
        let (_, assignment) =
            crate::plan::tri::deal_panels(problem.b_lines().div_ceil(tile), &rates, computing);
        let plan = crate::plan::build(&Request::Tri(TriRequest {
            problem: *problem,
            locations,
            tile,
            panel: tile,
            devices: &specs,
            assignment: &assignment,
            solver,
            resident_panels: 2,
        }))?;
        let mut labels: Vec<String> = specs.iter().map(|s| s.label.clone()).collect();
        let seconds = super::makespan(&plan, &labels, profile)?;
        // A device added only to solve is marked so.
        for l in &mut labels[computing..] {
            l.push_str("(solves)");
        }
        Ok((
            TriAlternative {
                devices: labels,
                tile,
                solve,
                seconds,
            },
            devices,
            plan,
        ))
    }
}
