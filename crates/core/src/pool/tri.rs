//! The TRSM and TRMM call path: argument checks, quick returns (alpha == 0 zeroes B without
//! reading A), the choice of tile size, devices and solve placement by replaying each candidate
//! plan's DAG against the rates ([`crate::model::tri`]), cached per problem; then workspaces,
//! host preparation and the dependency-aware executor ([`crate::exec::tri`]).

use super::DevicePool;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::exec::trace::Trace;
use crate::exec::tri::{execute_tri, TriExecRequest};
use crate::matrix::{MatIn, MatOut};
use crate::memory::{HostAccess, MemorySpace, RawTile};
use crate::model::tri::{replay, TriRates};
use crate::operand::{MatMut, MatRef};
use crate::plan::tri::{build_tri, TriDeviceSpec, TriPlan, TriPlanRequest, TriPlanStats};
use crate::problem::triangular::{check_tri_args, Side, TriOptions, TriProblem, TriRoutine};
use crate::scalar::Scalar;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
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
    pub fn tile(mut self, tile: impl Into<Option<usize>>) -> Self {
        self.tile = tile.into();
        self
    }
    pub fn devices(mut self, devices: impl IntoIterator<Item = usize>) -> Self {
        self.devices = Some(devices.into_iter().collect());
        self
    }
    pub fn device_list(mut self, devices: Option<Vec<usize>>) -> Self {
        self.devices = devices;
        self
    }
    pub fn solve(mut self, solve: impl Into<Option<SolvePlacement>>) -> Self {
        self.solve = solve.into();
        self
    }
    pub fn trace(mut self, trace: bool) -> Self {
        self.trace = trace;
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
    /// Predicted seconds (list-schedule replay of the DAG).
    pub seconds: f64,
    /// Seconds of its longest dependency chain.
    pub critical_path: f64,
}

/// The model's choice for one triangular problem.
#[derive(Debug, Clone)]
pub struct TriDecision {
    /// Pool indices of the plan's devices.
    pub devices: Vec<usize>,
    pub plan: Arc<TriPlan>,
    pub chosen: TriAlternative,
    /// Every candidate, fastest first.
    pub alternatives: Vec<TriAlternative>,
}

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
    pub stats: TriPlanStats,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub trace: Option<Trace>,
    /// The plan that ran (for the simulator: [`DevicePool::simulate_tri_report`]); `None` for
    /// a quick return.
    pub plan: Option<Arc<TriPlan>>,
}

type DecisionKey = (
    TriProblem,
    [MemorySpace; 2],
    Option<Vec<usize>>,
    Option<usize>,
    Option<SolvePlacement>,
);

/// Decisions of triangular calls, per problem and options.
#[derive(Default)]
pub(super) struct TriDecisions(Mutex<HashMap<DecisionKey, Arc<TriDecision>>>);

impl TriDecisions {
    pub(super) fn clear(&self) {
        super::workspace::lock(&self.0).clear();
    }
}

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
        let to = |x: i64| {
            usize::try_from(x).map_err(|_| Error::InvalidInput(format!("{x} does not fit usize")))
        };
        let (m, n) = (to(m)?, to(n)?);
        let k = if o.side == Side::Left { m } else { n };
        let av = MatRef::new(a, k, k, to(lda)?)?;
        let bv = MatMut::new(b, m, n, to(ldb)?)?;
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
        self.tri_with(
            TriRoutine::Trsm,
            opts,
            alpha,
            a,
            b,
            &TriCallOptions::default(),
        )
    }

    /// TRMM with default options: `B := alpha op(A) B` (or `alpha B op(A)`).
    pub fn trmm<'a, T: Scalar>(
        &self,
        opts: TriOptions,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatOut<'a, T>>,
    ) -> Result<TriReport> {
        self.tri_with(
            TriRoutine::Trmm,
            opts,
            alpha,
            a,
            b,
            &TriCallOptions::default(),
        )
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
            return Err(Error::InvalidArgument {
                routine: routine.name(),
                param,
                name,
                reason: format!("A is {}x{}, B is {m}x{n}", a.rows(), a.cols()),
            });
        }
        let (ar, br) = (a.raw(), b.raw());
        for t in [&ar, &br] {
            if !t.space.is_host() && !self.devices.iter().any(|d| d.space() == t.space) {
                return Err(Error::InvalidInput(format!(
                    "operand lives in {:?}, which belongs to no device of this pool",
                    t.space
                )));
            }
        }
        if let Some(list) = &call.devices {
            if list.is_empty() {
                return Err(Error::InvalidInput("empty device list".into()));
            }
            for &i in list {
                self.device(i)?;
            }
        }
        if call.tile == Some(0) {
            return Err(Error::InvalidInput("tile size 0".into()));
        }
        let mut report = TriReport::default();
        if m == 0 || n == 0 {
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
        if alpha == T::default() {
            // B := 0, A not read (reference BLAS).
            self.zero_out(&mut b)?;
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
        let problem = TriProblem {
            routine,
            opts,
            m,
            n,
            dtype: T::DTYPE,
        };
        let plan_start = Instant::now();
        let key: DecisionKey = (
            problem,
            [ar.space, br.space],
            call.devices.clone(),
            call.tile,
            call.solve,
        );
        let cached = super::workspace::lock(&self.tri_decisions.0)
            .get(&key)
            .cloned();
        report.plan_cached = cached.is_some();
        let decision = match cached {
            Some(d) => d,
            None => {
                let d = Arc::new(self.decide_tri(&problem, [ar.space, br.space], call)?);
                super::workspace::lock(&self.tri_decisions.0).insert(key, d.clone());
                d
            }
        };
        report.planning_seconds = plan_start.elapsed().as_secs_f64();
        let plan = &decision.plan;
        let devs: Vec<Arc<dyn Device>> = decision
            .devices
            .iter()
            .map(|&i| self.devices[i].clone())
            .collect();
        report.devices = devs.iter().map(|d| d.info().label()).collect();
        report.tile = Some(plan.tile);
        report.solve = Some(decision.chosen.solve);
        report.predicted_seconds = Some(decision.chosen.seconds);
        report.stats = plan.stats();
        report.plan = Some(plan.clone());
        let needs: Vec<usize> = plan
            .devices
            .iter()
            .map(|d| d.slots as usize * plan.slot_bytes)
            .collect();
        // Other calls hold device memory: wait until one gives its buffers back, as GEMM
        // calls do. Nothing is written before the buffers are held, so trying again is safe.
        let workspace = loop {
            let epoch = self.workspaces.epoch();
            match self
                .workspaces
                .acquire_bytes(&self.devices, &decision.devices, &needs)
            {
                Err(Error::OutOfMemory { .. }) if self.workspaces.wait_for_release(epoch) => {}
                r => break r?,
            }
        };
        let ws = super::workspace::Workspaces::addresses(&workspace, &decision.devices);
        let mut regions = Vec::new();
        if ar.space.is_host() {
            regions.push((ar.addr, ar.extent_bytes(), HostAccess::Read));
        }
        if br.space.is_host() {
            regions.push((br.addr, br.extent_bytes(), HostAccess::ReadWrite));
        }
        let _call = self.enter(&devs, &regions)?;
        let accelerators = devs.iter().filter(|d| !d.space().is_host()).count();
        for d in &devs {
            d.share_host(accelerators);
        }
        let out = execute_tri(&TriExecRequest {
            plan,
            devices: &devs,
            workspaces: &ws,
            links: &self.links,
            a: ar,
            b: br,
            alpha: alpha.to_value(),
            trace: call.trace,
        })?;
        report.bytes_in = out.bytes_in;
        report.bytes_out = out.bytes_out;
        report.trace = out.trace;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
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

    /// Every candidate (device set, tile, solve placement) planned and replayed; the fastest.
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
            sets.push(list.clone());
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
        for s in &sets {
            for &i in s {
                if !usable(i) {
                    return Err(Error::Unsupported {
                        device: self.devices[i].info().label(),
                        detail: format!("{} in {dt}", problem.routine.name()),
                    });
                }
            }
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
        let mut cands: Vec<(TriAlternative, Vec<usize>, TriPlan)> = Vec::new();
        let mut last_err = None;
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
                    match self.candidate(problem, locations, set, tile, solve, host_dev) {
                        Ok(c) => cands.push(c),
                        Err(e) => last_err = Some(e),
                    }
                }
            }
        }
        if cands.is_empty() {
            return Err(last_err.unwrap_or_else(|| Error::internal("no triangular plan")));
        }
        cands.sort_by(|x, y| x.0.seconds.total_cmp(&y.0.seconds));
        let alternatives = cands.iter().map(|c| c.0.clone()).collect();
        let (chosen, devices, plan) = cands.swap_remove(0);
        Ok(TriDecision {
            devices,
            plan: Arc::new(plan),
            chosen,
            alternatives,
        })
    }

    /// One candidate: its plan and predicted time.
    fn candidate(
        &self,
        problem: &TriProblem,
        locations: [MemorySpace; 2],
        set: &[usize],
        tile: usize,
        solve: SolvePlacement,
        host_dev: Option<usize>,
    ) -> Result<(TriAlternative, Vec<usize>, TriPlan)> {
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
        let specs: Vec<TriDeviceSpec> = devices
            .iter()
            .map(|&i| {
                let d = &self.devices[i];
                TriDeviceSpec {
                    label: d.info().label(),
                    space: d.space(),
                    budget: d.memory_budget(),
                    compute_queues: d.compute_queues().len().min(2) as u16,
                }
            })
            .collect();
        // Panels dealt by speed: each to the device that would finish its share first. The
        // solver added only to solve gets none.
        let np = problem.b_lines().div_ceil(tile);
        let computing = set.len();
        let mut load = vec![0.0f64; devices.len()];
        let mut assignment: Vec<Vec<usize>> = vec![Vec::new(); devices.len()];
        for j in 0..np {
            let best = (0..computing)
                .min_by(|&x, &y| {
                    ((load[x] + 1.0) / rates[x]).total_cmp(&((load[y] + 1.0) / rates[y]))
                })
                .unwrap_or(0);
            load[best] += 1.0;
            assignment[best].push(j);
        }
        let plan = build_tri(&TriPlanRequest {
            problem: *problem,
            locations,
            tile,
            panel: tile,
            devices: &specs,
            assignment: &assignment,
            solver,
            resident_panels: 2,
        })?;
        let link = |s: MemorySpace, d: MemorySpace, bytes: usize| -> f64 {
            if s == d {
                return 0.0;
            }
            let bw = self.link_bandwidth(s, d).unwrap_or(10e9);
            1e-5 + bytes as f64 / bw
        };
        let pred = replay(
            &plan,
            &TriRates {
                gemm: rates,
                link: &link,
            },
        );
        Ok((
            TriAlternative {
                // A device added only to solve is marked so.
                devices: specs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        if i >= computing {
                            format!("{}(solves)", s.label)
                        } else {
                            s.label.clone()
                        }
                    })
                    .collect(),
                tile,
                solve,
                seconds: pred.seconds,
                critical_path: pred.critical_path,
            },
            devices,
            plan,
        ))
    }

    /// B := 0 (alpha == 0), A never read.
    fn zero_out<T: Scalar>(&self, b: &mut MatOut<'_, T>) -> Result<()> {
        match b {
            MatOut::Host(h) => {
                for j in 0..h.cols() {
                    h.col_mut(j).fill(T::default());
                }
                Ok(())
            }
            MatOut::Device(dm) => {
                let (r, c) = (dm.rows(), dm.cols());
                let zeros = vec![T::default(); r * c];
                let src: RawTile = MatIn::Host(MatRef::packed(&zeros, r, c)?).raw();
                self.copy_blocking(src, dm.raw())
            }
        }
    }
}
