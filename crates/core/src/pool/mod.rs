//! `DevicePool`: a set of devices and the links between their memory spaces, with the plan cache
//! and the per-device tile workspaces. Its `gemm` is the whole pipeline: check the arguments,
//! take the quick returns, choose devices and tile, plan (or reuse the cached plan), execute.

use crate::autotune;
use crate::device::Device;
use crate::distribute;
use crate::error::{Error, Result};
use crate::execute::{self, ExecRequest, Transfer};
use crate::link::Link;
use crate::matrix::{DeviceMatrix, MatIn, MatOut};
use crate::memory::{Buffer, HostAccess, MemorySpace, RawTile};
use crate::operand::{MatMut, MatRef, Trans};
use crate::plan::{self, DeviceSpec, Plan, PlanRequest, PlanStats};
use crate::problem::{check_gemm_args, GemmProblem};
use crate::profile::MachineProfile;
use crate::scalar::Scalar;
use crate::tiling::{Blocking, TileGrid};
use crate::trace::Trace;
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Per-call choices; the defaults let hetblas decide.
#[derive(Debug, Clone, Default)]
pub struct GemmOptions {
    /// Force a square tile size.
    pub tile: Option<usize>,
    /// Force tile sizes and group (takes precedence over `tile`).
    pub blocking: Option<Blocking>,
    /// Use exactly these devices (indices into [`DevicePool::devices`]).
    pub devices: Option<Vec<usize>>,
    /// Record a timeline of every transfer and kernel.
    pub trace: bool,
    /// Use at most this many bytes of each device's memory for tiles (out-of-core below it).
    pub memory_limit: Option<u64>,
    /// Never forward a tile from a device that holds it (always fetch from the operand).
    pub no_peer_forwarding: bool,
    /// With C in host memory and beta != 0: `Some(true)` folds the products into C on the host
    /// ([`crate::fold`]), `Some(false)` sends C to the devices and adds it there, `None` lets the
    /// model decide (also set by `HETBLAS_HOST_FOLD=1` / `0`).
    pub host_fold: Option<bool>,
}

/// What a GEMM call did.
#[derive(Debug, Clone, Default)]
pub struct GemmReport {
    /// Devices that took part (labels).
    pub devices: Vec<String>,
    /// Tile sizes (tm, tn, tk); `None` for a quick return.
    pub tile: Option<(usize, usize, usize)>,
    /// The plan came from the cache.
    pub plan_cached: bool,
    pub planning_seconds: f64,
    /// Wall time of the whole call.
    pub seconds: f64,
    pub stats: PlanStats,
    /// Share of C each device was given (whole tiles or a strip; see `stats.c_share`).
    pub weights: Vec<f64>,
    /// The balancer's continuous shares, before rounding to whole tiles or a strip.
    pub balancer_weights: Vec<f64>,
    /// Products were folded into host C on the host ([`crate::fold`]).
    pub host_fold: bool,
    pub transfers: Vec<Transfer>,
    pub trace: Option<Trace>,
}

/// (problem, devices asked for, blocking asked for, memory limit, host fold mode asked for).
type DecisionKey = (
    GemmProblem,
    Option<Vec<usize>>,
    Option<Blocking>,
    Option<u64>,
    Option<bool>,
);

/// Devices, their shares, the tile and the memory budgets for one problem.
#[derive(Debug, Clone)]
struct Decision {
    devices: Vec<usize>,
    weights: Vec<f64>,
    grid: TileGrid,
    /// C tiles accumulated together.
    group: usize,
    budgets: Vec<u64>,
    /// Fold products into host C on the host (the model found it faster).
    host_fold: bool,
    /// The device (index into `devices`) that takes a strip of C's last rows.
    strip: Option<usize>,
    balancer_weights: Vec<f64>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct PlanKey {
    problem: GemmProblem,
    devices: Vec<usize>,
    tile: (usize, usize, usize),
    group: usize,
    budget_slots: Vec<u64>,
    forward: bool,
    host_fold: bool,
    strip: Option<usize>,
    /// Shares per device, in 1e-4.
    weights: Vec<u32>,
}

/// A set of devices that GEMM runs on together.
pub struct DevicePool {
    devices: Vec<Arc<dyn Device>>,
    links: HashMap<(MemorySpace, MemorySpace), Arc<dyn Link>>,
    link_set: HashSet<(MemorySpace, MemorySpace)>,
    workspaces: Vec<Mutex<Option<Box<dyn Buffer>>>>,
    plans: Mutex<HashMap<PlanKey, Arc<Plan>>>,
    /// One call at a time uses the workspaces.
    call: Mutex<()>,
    /// Host staging slots for two-hop routes and host folds (u64 for 8-byte alignment).
    host_workspace: Mutex<Option<Vec<u64>>>,
    /// What host folds run on, started on first use.
    folder: Mutex<Option<Arc<crate::fold::HostFolder>>>,
    /// What the autotuner decided per problem and options (a repeated call pays nothing).
    decisions: Mutex<HashMap<DecisionKey, Decision>>,
    /// The calibrated machine profile, when one matches these devices.
    profile: std::sync::RwLock<Option<Arc<MachineProfile>>>,
}

impl std::fmt::Debug for DevicePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevicePool")
            .field(
                "devices",
                &self
                    .devices
                    .iter()
                    .map(|d| d.info().label())
                    .collect::<Vec<_>>(),
            )
            .field("links", &self.links.len())
            .finish()
    }
}

impl DevicePool {
    /// A pool over `devices`, with `links` between their spaces and the host.
    ///
    /// # Errors
    /// `InvalidInput` when two devices share a memory space or two links the same direction.
    pub fn new(devices: Vec<Arc<dyn Device>>, links: Vec<Arc<dyn Link>>) -> Result<DevicePool> {
        let mut spaces = HashSet::new();
        for d in &devices {
            if !d.space().is_host() && !spaces.insert(d.space()) {
                return Err(Error::InvalidInput(format!(
                    "two devices share memory space {:?}",
                    d.space()
                )));
            }
        }
        let mut map = HashMap::new();
        for l in links {
            if map.insert((l.src(), l.dst()), l.clone()).is_some() {
                return Err(Error::InvalidInput(format!("duplicate link {}", l.name())));
            }
        }
        let link_set = map.keys().copied().collect();
        Ok(DevicePool {
            workspaces: devices.iter().map(|_| Mutex::new(None)).collect(),
            devices,
            links: map,
            link_set,
            plans: Mutex::new(HashMap::new()),
            call: Mutex::new(()),
            host_workspace: Mutex::new(None),
            folder: Mutex::new(None),
            profile: std::sync::RwLock::new(None),
            decisions: Mutex::new(HashMap::new()),
        })
    }

    pub fn devices(&self) -> &[Arc<dyn Device>] {
        &self.devices
    }

    pub fn links(&self) -> impl Iterator<Item = &Arc<dyn Link>> {
        self.links.values()
    }

    /// The link `src -> dst`, if there is one.
    pub fn link(&self, src: MemorySpace, dst: MemorySpace) -> Option<&Arc<dyn Link>> {
        self.links.get(&(src, dst))
    }

    /// Uses `profile` for model-driven decisions (tile size) from now on; `None` returns to the
    /// built-in rules. Cached plans are dropped, since their tiles may change.
    pub fn set_profile(&self, profile: Option<Arc<MachineProfile>>) {
        *self.profile.write().unwrap_or_else(|p| p.into_inner()) = profile;
        lock(&self.plans).clear();
        lock(&self.decisions).clear();
    }

    /// The profile in use, if any.
    pub fn profile(&self) -> Option<Arc<MachineProfile>> {
        self.profile
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Releases what the devices keep for a host buffer between calls (page-locked
    /// registrations). Call it before freeing a large buffer that was passed to hetblas: a
    /// registration left behind on freed memory occupies address space in the GPU driver
    /// (hetblas verifies and redoes such registrations itself, but other CUDA code in the
    /// process may trip over them).
    pub fn release_host<T>(&self, buffer: &[T]) -> Result<()> {
        let _call = lock(&self.call);
        for d in &self.devices {
            d.release_host(buffer.as_ptr() as u64, std::mem::size_of_val(buffer))?;
        }
        Ok(())
    }

    /// Number of plans in the cache.
    pub fn cached_plans(&self) -> usize {
        lock(&self.plans).len()
    }

    fn device(&self, idx: usize) -> Result<&Arc<dyn Device>> {
        self.devices.get(idx).ok_or_else(|| {
            Error::InvalidInput(format!(
                "device index {idx} out of range (pool has {})",
                self.devices.len()
            ))
        })
    }

    // ---- device matrices -------------------------------------------------------------------

    /// An uninitialised `rows x cols` matrix on device `idx` (packed, `ld = rows`).
    pub fn alloc_matrix<T: Scalar>(
        &self,
        idx: usize,
        rows: usize,
        cols: usize,
    ) -> Result<DeviceMatrix<T>> {
        let device = self.device(idx)?.clone();
        let bytes = rows
            .checked_mul(cols)
            .and_then(|e| e.checked_mul(T::DTYPE.size()))
            .ok_or_else(|| Error::InvalidInput(format!("matrix {rows}x{cols} too large")))?;
        let buffer = device.allocate(bytes.max(T::DTYPE.size()))?;
        Ok(DeviceMatrix {
            device,
            buffer,
            rows,
            cols,
            ld: rows.max(1),
            _t: PhantomData,
        })
    }

    /// Copies a host matrix to device `idx`.
    pub fn upload<T: Scalar>(&self, idx: usize, host: MatRef<'_, T>) -> Result<DeviceMatrix<T>> {
        let m = self.alloc_matrix::<T>(idx, host.rows(), host.cols())?;
        self.copy_blocking(MatIn::Host(host).raw(), m.raw())?;
        Ok(m)
    }

    /// Copies a device matrix back into a host view of the same shape.
    pub fn download<T: Scalar>(&self, m: &DeviceMatrix<T>, mut host: MatMut<'_, T>) -> Result<()> {
        if (host.rows(), host.cols()) != (m.rows(), m.cols()) {
            return Err(Error::InvalidInput(format!(
                "download of a {}x{} matrix into a {}x{} view",
                m.rows(),
                m.cols(),
                host.rows(),
                host.cols()
            )));
        }
        self.copy_blocking(m.raw(), MatOut::Host(host.rb_mut()).raw())
    }

    /// A copy between any two spaces of the pool, waiting for completion.
    fn copy_blocking(&self, src: RawTile, dst: RawTile) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        if src.space == dst.space {
            return Err(Error::Unsupported {
                device: format!("{:?}", src.space),
                detail: "copy within one space".into(),
            });
        }
        for (t, access) in [(&src, HostAccess::Read), (&dst, HostAccess::ReadWrite)] {
            if t.space.is_host() {
                for d in &self.devices {
                    if d.space() == src.space || d.space() == dst.space {
                        d.prepare_host(t.addr, t.extent_bytes(), access)?;
                    }
                }
            }
        }
        let link = self
            .link(src.space, dst.space)
            .ok_or_else(|| Error::Unsupported {
                device: format!("{:?}", dst.space),
                detail: format!("no link {:?}->{:?}", src.space, dst.space),
            })?;
        link.copy(&src, &dst)?;
        link.queue().synchronize()
    }

    // ---- GEMM ------------------------------------------------------------------------------

    /// BLAS-style GEMM on host slices: arguments checked exactly as reference BLAS checks them
    /// (errors carry its parameter numbers), then `c = alpha*op(a)*op(b) + beta*c`.
    #[allow(clippy::too_many_arguments)]
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
        let (ta, tb) = check_gemm_args(transa, transb, m, n, k, lda, ldb, ldc)?;
        let to = |x: i64| {
            usize::try_from(x).map_err(|_| Error::InvalidInput(format!("{x} does not fit usize")))
        };
        let (m, n, k) = (to(m)?, to(n)?, to(k)?);
        let (ar, ac) = ta.stored_shape(m, k);
        let (br, bc) = tb.stored_shape(k, n);
        let av = MatRef::new(a, ar, ac, to(lda)?)?;
        let bv = MatRef::new(b, br, bc, to(ldb)?)?;
        let cv = MatMut::new(c, m, n, to(ldc)?)?;
        self.gemm_with(ta, tb, alpha, av, bv, beta, cv, opts)
    }

    /// `c = alpha * op(a) * op(b) + beta * c` with default options.
    #[allow(clippy::too_many_arguments)]
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
        self.gemm_with(
            transa,
            transb,
            alpha,
            a,
            b,
            beta,
            c,
            &GemmOptions::default(),
        )
    }

    /// GEMM with explicit options. Shapes come from the operands: C is m x n, op(A) m x k,
    /// op(B) k x n; a mismatch is reported as parameter 3 (m), 4 (n) or 5 (k).
    #[allow(clippy::too_many_arguments)]
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
        let started = Instant::now();
        let (a, b, mut c) = (a.into(), b.into(), c.into());
        let (m, n) = (c.rows(), c.cols());
        let (am, ak) = if transa.is_transposed() {
            (a.cols(), a.rows())
        } else {
            (a.rows(), a.cols())
        };
        let (bk, bn) = if transb.is_transposed() {
            (b.cols(), b.rows())
        } else {
            (b.rows(), b.cols())
        };
        if am != m {
            return Err(Error::gemm_arg(
                3,
                "m",
                format!("op(A) has {am} rows but C has {m}"),
            ));
        }
        if bn != n {
            return Err(Error::gemm_arg(
                4,
                "n",
                format!("op(B) has {bn} columns but C has {n}"),
            ));
        }
        if ak != bk {
            return Err(Error::gemm_arg(
                5,
                "k",
                format!("op(A) has {ak} columns but op(B) has {bk} rows"),
            ));
        }
        let k = ak;
        let operands = [a.raw(), b.raw(), c.raw()];
        for t in &operands {
            if !t.space.is_host() && !self.devices.iter().any(|d| d.space() == t.space) {
                return Err(Error::InvalidInput(format!(
                    "operand lives in {:?}, which belongs to no device of this pool",
                    t.space
                )));
            }
        }
        let mut report = GemmReport::default();
        if m == 0 || n == 0 {
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
        let _call = lock(&self.call);
        if k == 0 || alpha == T::default() {
            self.scale_c(&mut c, beta)?;
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }

        let problem = GemmProblem {
            transa,
            transb,
            m,
            n,
            k,
            dtype: T::DTYPE,
            beta_zero: beta == T::default(),
            locations: [operands[0].space, operands[1].space, operands[2].space],
        };
        if let Some(list) = &opts.devices {
            if list.is_empty() {
                return Err(Error::InvalidInput("empty device list".into()));
            }
            let mut seen = HashSet::new();
            for &i in list {
                self.device(i)?;
                if !seen.insert(i) {
                    return Err(Error::InvalidInput(format!("device {i} listed twice")));
                }
            }
        }
        if opts.tile == Some(0) {
            return Err(Error::InvalidInput("tile size 0".into()));
        }
        if let Some(b) = opts.blocking {
            if b.tm == 0 || b.tn == 0 || b.tk == 0 || b.group == 0 {
                return Err(Error::InvalidInput(format!(
                    "blocking {b}: tile sizes and group must be positive"
                )));
            }
        }
        let plan_start = Instant::now();
        let key = (
            problem,
            opts.devices.clone(),
            opts.blocking.or(opts.tile.map(Blocking::square)),
            opts.memory_limit,
            host_fold_mode(opts),
        );
        let attempt = |report: &mut GemmReport| {
            self.run(
                &problem, &key, opts, &operands, alpha, beta, report, plan_start,
            )
        };
        match attempt(&mut report) {
            // A cached decision carries the memory budgets of its time: when the devices have
            // less free memory now, decide again with today's budgets, once.
            Err(Error::OutOfMemory { .. }) => {
                lock(&self.decisions).remove(&key);
                attempt(&mut report)?;
            }
            r => r?,
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Decision (cached), plan (cached), workspaces, host preparation, execution.
    #[allow(clippy::too_many_arguments)]
    fn run<T: Scalar>(
        &self,
        problem: &GemmProblem,
        key: &DecisionKey,
        opts: &GemmOptions,
        operands: &[RawTile; 3],
        alpha: T,
        beta: T,
        report: &mut GemmReport,
        plan_start: Instant,
    ) -> Result<()> {
        let (m, n, k) = (problem.m, problem.n, problem.k);
        let problem = *problem;
        let operands = *operands;
        let cached = lock(&self.decisions).get(key).cloned();
        let decision = match cached {
            Some(d) => d,
            None => {
                let d = self.decide(&problem, opts)?;
                let mut c = lock(&self.decisions);
                if c.len() >= 1024 {
                    c.clear(); // bounded, like the plan cache
                }
                c.insert(key.clone(), d.clone());
                d
            }
        };
        let (dev_idx, weights, grid, budgets, host_fold, strip) = (
            decision.devices,
            decision.weights,
            decision.grid,
            decision.budgets,
            decision.host_fold,
            decision.strip,
        );
        let devs: Vec<&Arc<dyn Device>> = dev_idx.iter().map(|&i| &self.devices[i]).collect();
        debug_assert_eq!((grid.m, grid.n, grid.k), (m, n, k));
        let (plan, cached) = self.plan(
            &problem,
            &grid,
            decision.group,
            &dev_idx,
            &weights,
            &budgets,
            !opts.no_peer_forwarding,
            host_fold,
            strip,
        )?;
        report.planning_seconds = plan_start.elapsed().as_secs_f64();
        report.plan_cached = cached;
        report.tile = Some((grid.tm, grid.tn, grid.tk));
        report.devices = devs.iter().map(|d| d.info().label()).collect();
        report.weights = weights.clone();
        report.balancer_weights = decision.balancer_weights.clone();

        // Workspaces: one buffer of `slots` tile slots per device, kept between calls.
        let mut guards = Vec::with_capacity(dev_idx.len());
        let mut ws_addrs = Vec::with_capacity(dev_idx.len());
        for (pd, &di) in plan.devices.iter().zip(&dev_idx) {
            let need = pd.slots as usize * plan.slot_bytes;
            let mut g = lock(&self.workspaces[di]);
            if need > 0 && g.as_ref().is_none_or(|b| b.len() < need) {
                *g = None; // free the old one first: device memory is precious
                *g = Some(self.devices[di].allocate(need)?);
            }
            ws_addrs.push(g.as_ref().map_or(0, |b| b.addr()));
            guards.push(g);
        }
        // Host operands must be ready for every device's DMA engine. C is written (read too,
        // unless beta == 0).
        for (i, t) in operands.iter().enumerate() {
            if t.space.is_host() && !t.is_empty() {
                let bytes = t.extent_bytes();
                let access = if i == 2 {
                    HostAccess::ReadWrite
                } else {
                    HostAccess::Read
                };
                for d in &devs {
                    if !d.space().is_host() {
                        d.prepare_host(t.addr, bytes, access)?;
                    }
                }
            }
        }
        // Host staging slots for routes through host memory (devices of two backends), kept
        // between calls and page-locked for the devices that copy through them.
        let mut host_guard = lock(&self.host_workspace);
        let need = plan.host_slots as usize * plan.slot_bytes;
        if need > 0 && host_guard.as_ref().is_none_or(|v| v.len() * 8 < need) {
            if let Some(old) = host_guard.take() {
                for d in &self.devices {
                    d.release_host(old.as_ptr() as u64, old.len() * 8)?;
                }
            }
            *host_guard = Some(vec![0u64; need.div_ceil(8)]);
        }
        let host_ws = host_guard.as_ref().map_or(0, |v| v.as_ptr() as u64);
        if let Some(v) = host_guard.as_ref().filter(|_| need > 0) {
            for d in devs.iter().filter(|d| !d.space().is_host()) {
                d.prepare_host(v.as_ptr() as u64, v.len() * 8, HostAccess::ReadWrite)?;
            }
        }
        let accelerators = devs.iter().filter(|d| !d.space().is_host()).count();
        for d in &devs {
            d.share_host(accelerators);
        }
        let exec_devices: Vec<Arc<dyn Device>> = devs.iter().map(|d| (*d).clone()).collect();
        report.host_fold = plan.host_folds;
        let host_fold = if plan.host_folds {
            let mut f = lock(&self.folder);
            if f.is_none() {
                *f = Some(Arc::new(crate::fold::HostFolder::new()?));
            }
            f.clone()
        } else {
            None
        };
        let outcome = execute::execute(&ExecRequest {
            plan: &plan,
            devices: &exec_devices,
            workspaces: &ws_addrs,
            links: &self.links,
            operands,
            host_workspace: host_ws,
            host_fold,
            alpha: alpha.to_value(),
            beta: beta.to_value(),
            trace: opts.trace,
        })?;
        drop(guards);
        drop(host_guard);
        report.stats = plan.stats();
        report.transfers = outcome.transfers;
        report.trace = outcome.trace;
        Ok(())
    }

    /// The autotuner: device subset and shares (balancer, when rates are known), tile size
    /// (model, when a profile describes the device), memory budgets.
    fn decide(&self, problem: &GemmProblem, opts: &GemmOptions) -> Result<Decision> {
        let dtype = problem.dtype;
        let profile = self.profile();
        let link_bw = |s: MemorySpace, d: MemorySpace| self.link_bandwidth(s, d);
        // A provisional tile for the rates (the balancer's inputs).
        let maxdim = problem.m.max(problem.n).max(problem.k);
        let forced = opts.blocking.or(opts.tile.map(Blocking::square));
        let t0 = forced.map_or(4096, |b| b.tm).min(maxdim).max(1);
        let (devices, weights) = match &opts.devices {
            Some(list) => {
                let devs: Vec<&Arc<dyn Device>> = list.iter().map(|&i| &self.devices[i]).collect();
                let w = autotune::device_rates(problem, &devs, t0, profile.as_deref(), &link_bw)
                    .map(|r| crate::balance::balance(problem, &r).weights)
                    .unwrap_or_else(|| vec![1.0 / list.len() as f64; list.len()]);
                (list.clone(), w)
            }
            None => {
                let cands: Vec<usize> = (0..self.devices.len())
                    .filter(|&i| self.devices[i].kernel().supports(dtype))
                    .collect();
                let devs: Vec<&Arc<dyn Device>> = cands.iter().map(|&i| &self.devices[i]).collect();
                match autotune::choose_devices(problem, &devs, t0, profile.as_deref(), &link_bw) {
                    Some(c) => (c.devices.iter().map(|&i| cands[i]).collect(), c.weights),
                    None => {
                        let d = autotune::default_devices(&self.devices, dtype);
                        let n = d.len().max(1);
                        (d, vec![1.0 / n as f64; n])
                    }
                }
            }
        };
        if devices.is_empty() {
            return Err(Error::Unsupported {
                device: "pool".into(),
                detail: format!("no device supports {dtype}"),
            });
        }
        for &i in &devices {
            let d = &self.devices[i];
            if !d.kernel().supports(dtype) {
                return Err(Error::Unsupported {
                    device: d.info().label(),
                    detail: format!("no {dtype} gemm kernel"),
                });
            }
        }
        let budgets: Vec<u64> = devices
            .iter()
            .map(|&i| {
                // The workspace we already hold is ours to reuse.
                let held = lock(&self.workspaces[i])
                    .as_ref()
                    .map_or(0, |b| b.len() as u64);
                let b = self.devices[i].memory_budget().saturating_add(held);
                opts.memory_limit.map_or(b, |l| b.min(l))
            })
            .collect();
        let devs: Vec<&Arc<dyn Device>> = devices.iter().map(|&i| &self.devices[i]).collect();
        let (blocking, host_fold) = autotune::choose_tile(
            problem,
            &devs,
            &budgets,
            profile.as_deref(),
            forced,
            host_fold_mode(opts),
        );
        // Whole tiles: the continuous shares rounded so that no device finishes late; a device
        // computing in host memory whose share is under two tiles gets a strip of rows instead.
        let balancer_weights = weights.clone();
        let mut weights = weights;
        let mut grid = blocking.grid(problem.m, problem.n, problem.k);
        let tile = blocking.tm;
        let mut strip = None;
        if devices.len() > 1 && blocking.is_square() {
            if let Some(rates) =
                autotune::device_rates(problem, &devs, tile, profile.as_deref(), &link_bw)
            {
                let host_dev = devs.iter().position(|d| d.space().is_host());
                match host_dev.and_then(|c| {
                    distribute::host_strip(problem.m, problem.n, problem.k, tile, &weights, c)
                }) {
                    Some(s) => {
                        grid = s.grid;
                        weights = s.weights;
                        strip = Some(s.device);
                    }
                    None => {
                        let n = grid.mt() * grid.nt();
                        let counts = crate::balance::tile_counts(problem, &rates, &weights, n);
                        weights = counts.iter().map(|&c| c as f64 / n as f64).collect();
                    }
                }
            }
        }
        Ok(Decision {
            devices,
            weights,
            grid,
            group: blocking.group,
            budgets,
            host_fold,
            strip,
            balancer_weights,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        problem: &GemmProblem,
        grid: &TileGrid,
        group: usize,
        dev_idx: &[usize],
        weights: &[f64],
        budgets: &[u64],
        forward: bool,
        host_fold: bool,
        strip: Option<usize>,
    ) -> Result<(Arc<Plan>, bool)> {
        let slot_bytes = grid.slot_bytes(problem.dtype.size()) as u64;
        let specs: Vec<DeviceSpec> = dev_idx
            .iter()
            .zip(budgets)
            .map(|(&i, &budget)| {
                let d = &self.devices[i];
                DeviceSpec {
                    space: d.space(),
                    budget,
                    // Two large GEMMs side by side run slower than one after the other (measured
                    // on H200: 2 x 4096^3 together take 14% longer); small tiles gain from it.
                    compute_queues: if grid.tm.min(grid.tn).min(grid.tk) >= 2048 {
                        1
                    } else {
                        d.compute_queues().len().max(1) as u16
                    },
                    late_c: d.kernel().supports_add(),
                    host_fold,
                    group,
                }
            })
            .collect();
        // Budgets enter the key only up to what the plan could use (every tile resident), so
        // ample memory that fluctuates between calls does not defeat the cache.
        let all_tiles =
            (grid.mt() * grid.kt() + grid.kt() * grid.nt() + grid.mt() * grid.nt()) as u64;
        let key = PlanKey {
            problem: *problem,
            devices: dev_idx.to_vec(),
            tile: (grid.tm, grid.tn, grid.tk),
            group,
            budget_slots: specs
                .iter()
                .map(|s| (s.budget / slot_bytes).min(all_tiles))
                .collect(),
            forward,
            host_fold,
            strip,
            weights: weights.iter().map(|w| (w * 1e4).round() as u32).collect(),
        };
        if let Some(p) = lock(&self.plans).get(&key) {
            return Ok((p.clone(), true));
        }
        let assignment = match strip {
            Some(c) => distribute::with_strip(grid, c, weights),
            None => distribute::weighted(grid.mt(), grid.nt(), weights),
        };
        let speed = |src: MemorySpace, dst: MemorySpace| self.link_bandwidth(src, dst);
        let plan = Arc::new(plan::build(&PlanRequest {
            problem: *problem,
            grid: *grid,
            devices: &specs,
            assignment: &assignment,
            links: &self.link_set,
            link_speed: if forward && dev_idx.len() > 1 {
                Some(&speed)
            } else {
                None
            },
        })?);
        let mut cache = lock(&self.plans);
        if cache.len() >= 256 {
            cache.clear(); // bounded: a long-running code with many shapes must not grow forever
        }
        cache.insert(key, plan.clone());
        Ok((plan, false))
    }

    /// The bandwidth of the link `src -> dst`: calibrated when the profile has it, else what the
    /// link knows of itself.
    pub fn link_bandwidth(&self, src: MemorySpace, dst: MemorySpace) -> Option<f64> {
        let link = self.link(src, dst)?;
        if let Some(p) = self.profile() {
            if let Some(lp) = p.link_named(link.name()) {
                return Some(lp.bytes_per_sec);
            }
        }
        link.nominal_bandwidth()
    }

    /// C = beta * C (the k = 0 / alpha = 0 quick return). beta == 0 writes zeros without
    /// reading C, so NaN in C does not survive.
    fn scale_c<T: Scalar>(&self, c: &mut MatOut<'_, T>, beta: T) -> Result<()> {
        if beta == T::from_f64(1.0) {
            return Ok(());
        }
        let scale = |v: &mut MatMut<'_, T>| {
            for j in 0..v.cols() {
                for x in v.col_mut(j) {
                    *x = if beta == T::default() {
                        T::default()
                    } else {
                        beta * *x
                    };
                }
            }
        };
        match c {
            MatOut::Host(h) => {
                scale(h);
                Ok(())
            }
            MatOut::Device(dm) => {
                let (r, cc) = (dm.rows(), dm.cols());
                let mut tmp = vec![T::default(); r * cc];
                self.download(dm, MatMut::packed(&mut tmp, r, cc)?)?;
                scale(&mut MatMut::packed(&mut tmp, r, cc)?);
                self.copy_blocking(MatIn::Host(MatRef::packed(&tmp, r, cc)?).raw(), dm.raw())
            }
        }
    }
}

impl Drop for DevicePool {
    fn drop(&mut self) {
        // The staging workspace may be page-locked by the devices: release before freeing.
        if let Some(v) = lock(&self.host_workspace).take() {
            for d in &self.devices {
                let _ = d.release_host(v.as_ptr() as u64, v.len() * 8);
            }
        }
    }
}

/// The host fold mode asked for: the call's, else the environment's, else `None` (the model).
fn host_fold_mode(opts: &GemmOptions) -> Option<bool> {
    opts.host_fold.or_else(crate::fold::mode_from_env)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data (caches, workspaces) stays valid.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
