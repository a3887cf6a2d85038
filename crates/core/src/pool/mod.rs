//! `DevicePool`: the device registry (devices, the links between their memory spaces and the
//! host, the machine profile) and the GEMM call path over it (`gemm`: argument checks, quick
//! returns, the autotuner's decision and the plan, each cached, the workspaces, execution).

mod calibrate;
mod decisions;
mod factor;
mod gemm;
mod ksplit;
mod matrices;
mod options;
mod simulate;
mod sym;
mod sym_tiles;
mod tri;
mod workspace;

pub use factor::{FactorAlternative, FactorDecision, FactorOptions, FactorReport};
pub use options::{DeviceFault, GemmOptions, GemmReport};
pub use sym_tiles::{sym_pick, SYM_TIE};
pub use tri::{SolvePlacement, TriAlternative, TriCallOptions, TriDecision, TriReport};

use crate::device::{Device, ThreadContext};
use crate::error::{Error, Result};
use crate::link::Link;
use crate::memory::{HostAccess, MemorySpace, RawTile};
use crate::operand::Trans;
use crate::plan::cache::PlanCache;
use crate::problem::GemmProblem;
use crate::profile::MachineProfile;
use crate::scalar::DType;
use decisions::DecisionCache;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use workspace::Workspaces;

/// One simulated candidate of a decision: its summary, its pool devices and its plan.
type Candidate<A> = (A, Vec<usize>, crate::plan::Plan);

/// The model's choice for a routine planned as a tile DAG (TRSM/TRMM: [`TriDecision`], the
/// factorizations: [`FactorDecision`]): the fastest simulated candidate, whose summary `A`
/// says what it chose.
#[derive(Debug, Clone)]
pub struct DagDecision<A> {
    /// Pool indices of the plan's devices.
    pub devices: Vec<usize>,
    pub plan: Arc<crate::plan::Plan>,
    pub chosen: A,
    /// Every candidate, fastest first.
    pub alternatives: Vec<A>,
}

/// The fastest of the candidates that could be planned, by `seconds`; with none, the last
/// one's error (or that there was no `what` plan).
fn fastest<A: Clone>(
    results: Vec<Result<Candidate<A>>>,
    what: &str,
    seconds: impl Fn(&A) -> f64,
) -> Result<DagDecision<A>> {
    let mut last_err = None;
    let mut cands: Vec<Candidate<A>> = results
        .into_iter()
        .filter_map(|r| r.map_err(|e| last_err = Some(e)).ok())
        .collect();
    if cands.is_empty() {
        return Err(last_err.unwrap_or_else(|| Error::internal(format!("no {what} plan"))));
    }
    cands.sort_by(|x, y| seconds(&x.0).total_cmp(&seconds(&y.0)));
    let alternatives = cands.iter().map(|c| c.0.clone()).collect();
    let (chosen, devices, plan) = cands.swap_remove(0);
    Ok(DagDecision {
        chosen,
        devices,
        plan: Arc::new(plan),
        alternatives,
    })
}

/// The makespan of `plan` on the devices labelled `labels`, replayed against `profile`.
fn makespan(plan: &crate::plan::Plan, labels: &[String], profile: &MachineProfile) -> Result<f64> {
    let sim = crate::sim::simulate(&crate::sim::SimRequest {
        plan,
        profile,
        devices: labels,
        queue_names: None,
    })?;
    Ok(sim.makespan)
}

/// One run of a tile-DAG plan ([`DevicePool::run_dag`]).
struct DagRun<'a> {
    plan: &'a crate::plan::Plan,
    /// Pool indices of the plan's devices.
    devices: &'a [usize],
    /// The operands, and how the host ones are prepared for the accelerators' copies.
    operands: [(RawTile, HostAccess); 2],
    /// The executor's alpha and beta (TRSM/TRMM's alpha; 1 for the factorizations).
    alpha: crate::scalar::ScalarValue,
    trace: bool,
    undo: Option<(&'a crate::undo::UndoLog, crate::undo::UndoScope)>,
    infos: &'a [Arc<crate::factor_kernel::InfoCell>],
}

/// The block of op(`t`) at (`row`, `col`), `rows x cols`, as a tile of the stored `t`.
fn op_sub(t: RawTile, trans: Trans, row: usize, col: usize, rows: usize, cols: usize) -> RawTile {
    if trans.is_transposed() {
        t.sub(col, row, cols, rows)
    } else {
        t.sub(row, col, rows, cols)
    }
}

/// A BLAS/LAPACK size or leading dimension as `usize`.
fn to_usize(x: i64) -> Result<usize> {
    usize::try_from(x).map_err(|_| Error::InvalidInput(format!("{x} does not fit usize")))
}

/// The host tiles among `tiles` as regions the accelerators' DMA engines read or write.
fn host_regions(tiles: &[(RawTile, HostAccess)]) -> Vec<(u64, usize, HostAccess)> {
    tiles
        .iter()
        .filter(|(t, _)| t.space.is_host() && !t.is_empty())
        .map(|&(t, access)| (t.addr, t.extent_bytes(), access))
        .collect()
}

/// Adds the bytes a run copied towards its devices and back to `fetched` and `written`.
fn add_transfer_bytes(out: &crate::execute::ExecOutcome, fetched: &mut u64, written: &mut u64) {
    for t in &out.transfers {
        if t.writeback {
            *written += t.bytes;
        } else {
            *fetched += t.bytes;
        }
    }
}

/// The profile's prediction for one GEMM ([`DevicePool::predict_gemm`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GemmPrediction {
    /// The devices the autotuner would use (pool indices).
    pub devices: Vec<usize>,
    /// The predicted time of the call on them, in seconds.
    pub seconds: f64,
}

/// A set of devices that GEMM runs on together.
pub struct DevicePool {
    devices: Vec<Arc<dyn Device>>,
    links: HashMap<(MemorySpace, MemorySpace), Arc<dyn Link>>,
    link_set: HashSet<(MemorySpace, MemorySpace)>,
    /// Calls run side by side under the read side; what must not run beside any call in flight
    /// (page-locking or unlocking host memory, calibration) takes the write side.
    calls: RwLock<()>,
    workspaces: Workspaces,
    plans: PlanCache,
    decisions: DecisionCache<decisions::DecisionKey, crate::autotune::Decision>,
    tri_decisions: DecisionCache<tri::DecisionKey, Arc<TriDecision>>,
    factor_decisions: DecisionCache<factor::DecisionKey, Arc<FactorDecision>>,
    /// The calibrated machine profile, when one matches these devices.
    profile: RwLock<Option<Arc<MachineProfile>>>,
    /// The price of host folds decisions use ([`crate::tuning::fold_speed`]).
    fold_level: Mutex<FoldLevel>,
    /// Devices that failed during a call: no call uses them until [`DevicePool::reprobe`].
    failed: Mutex<Vec<usize>>,
    /// The time origins of traced calls, per device (shared, so that concurrent traced calls
    /// do not wait for each other to take one).
    trace_epochs: crate::execute::TraceEpochs,
    /// One device per backend: each call keeps the calling thread's context of its runtime
    /// through it ([`DevicePool::keep_thread_contexts`]).
    context_keepers: Vec<usize>,
    /// [`DevicePool::set_tail_pieces`]; 0 for none.
    tail_pieces: std::sync::atomic::AtomicUsize,
}

/// The price of host folds decisions use ([`DevicePool::sync_fold_level`]).
struct FoldLevel {
    /// Share of the calibrated rate (1: the calibrated rate).
    level: f64,
    /// The profile the share was taken of.
    base: Option<Arc<MachineProfile>>,
    /// `base` with its fold rate scaled (`None` at 1).
    scaled: Option<Arc<MachineProfile>>,
}

impl Default for FoldLevel {
    fn default() -> Self {
        FoldLevel {
            level: 1.0,
            base: None,
            scaled: None,
        }
    }
}

impl std::fmt::Debug for DevicePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let labels: Vec<String> = self.devices.iter().map(|d| d.info().label()).collect();
        f.debug_struct("DevicePool")
            .field("devices", &labels)
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
        let mut backends = HashSet::new();
        let context_keepers = (0..devices.len())
            .filter(|&i| backends.insert(devices[i].info().backend.clone()))
            .collect();
        Ok(DevicePool {
            context_keepers,
            workspaces: Workspaces::new(devices.len()),
            devices,
            links: map,
            link_set,
            calls: RwLock::new(()),
            plans: PlanCache::default(),
            decisions: DecisionCache::default(),
            tri_decisions: DecisionCache::default(),
            factor_decisions: DecisionCache::default(),
            profile: RwLock::new(None),
            fold_level: Mutex::new(FoldLevel::default()),
            failed: Mutex::new(Vec::new()),
            trace_epochs: Default::default(),
            tail_pieces: Default::default(),
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
        *workspace::lock(&self.fold_level) = FoldLevel::default();
        self.plans.clear();
        self.clear_decisions();
    }

    /// Forgets every routine's decisions (they name devices and rest on the profile and the
    /// fold price).
    fn clear_decisions(&self) {
        self.decisions.clear();
        self.tri_decisions.clear();
        self.factor_decisions.clear();
    }

    /// Splits the late-C chain of each plan's last C tiles into `pieces` column pieces at any
    /// tile size ([`crate::plan::Task::pieces`]; `None`: 32 MiB tiles and up). For tests.
    pub fn set_tail_pieces(&self, pieces: Option<usize>) {
        let n = pieces.map_or(0, |p| p.max(1));
        self.tail_pieces
            .store(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// What [`DevicePool::set_tail_pieces`] set.
    pub fn tail_pieces(&self) -> Option<usize> {
        let n = self.tail_pieces.load(std::sync::atomic::Ordering::Relaxed);
        Some(n).filter(|&n| n > 0)
    }

    /// Number of plans in the plan cache (a repeated call reuses its plan).
    pub fn cached_plans(&self) -> usize {
        self.plans.len()
    }

    /// The profile in use, if any.
    pub fn profile(&self) -> Option<Arc<MachineProfile>> {
        self.profile
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// What the pool's host folds achieved: the rate decisions price folds at follows it where
    /// it is slower than calibrated ([`crate::tuning::fold_speed`]).
    pub fn fold_speed(&self) -> &crate::tuning::fold_speed::FoldSpeed {
        self.workspaces.fold_speed()
    }

    /// The profile decisions are made with: the calibrated one, but with host folds priced at
    /// the rate recent folds reached when that was well below it
    /// ([`crate::tuning::fold_speed`]).
    pub fn decision_profile(&self) -> Option<Arc<MachineProfile>> {
        let profile = self.profile()?;
        let level = workspace::lock(&self.fold_level);
        match (&level.base, &level.scaled) {
            // Scaled from the profile in use (not from one `set_profile` has since replaced).
            (Some(base), Some(scaled)) if Arc::ptr_eq(base, &profile) => Some(scaled.clone()),
            _ => Some(profile),
        }
    }

    /// The share of the calibrated host fold rate that decisions price folds at now (1 without
    /// a profile), and the rate folds reached when it is below 1. One-step moves under 1 are
    /// not taken (no flapping); a change drops the cached decisions.
    pub(super) fn sync_fold_level(&self) -> (f64, Option<f64>) {
        use crate::tuning::fold_speed;
        let Some(profile) = self.profile() else {
            *workspace::lock(&self.fold_level) = FoldLevel::default();
            return (1.0, None);
        };
        let now = std::time::Instant::now();
        let calibrated = crate::autotune::fold_rate(Some(&profile));
        let speed = self.workspaces.fold_speed();
        let mut level = speed.level(calibrated, now);
        let mut current = workspace::lock(&self.fold_level);
        let same_base = current
            .base
            .as_ref()
            .is_some_and(|b| Arc::ptr_eq(b, &profile));
        let was = if same_base { current.level } else { 1.0 };
        if level < 1.0 && was < 1.0 && (level - was).abs() < 1.5 / fold_speed::STEPS as f64 {
            level = was;
        }
        let observed = (level < 1.0).then(|| speed.observed(now)).flatten();
        if level == was && same_base {
            return (level, observed);
        }
        let scaled = (level < 1.0).then(|| {
            let mut p = (*profile).clone();
            p.host_fold_bytes_per_sec = Some(calibrated * level);
            Arc::new(p)
        });
        *current = FoldLevel {
            level,
            base: Some(profile),
            scaled,
        };
        if level != was {
            tracing::info!(
                observed_gb_s = observed.map(|r| r / 1e9),
                calibrated_gb_s = calibrated / 1e9,
                level,
                "host folds now priced at {:.1} GB/s",
                calibrated * level / 1e9
            );
            self.clear_decisions();
        }
        (level, observed)
    }

    /// The bandwidth of the link `src -> dst`: calibrated when the profile has it, else what the
    /// link knows of itself.
    pub fn link_bandwidth(&self, src: MemorySpace, dst: MemorySpace) -> Option<f64> {
        let link = self.link(src, dst)?;
        let calibrated = self
            .profile()
            .and_then(|p| Some(p.link_named(link.name())?.bytes_per_sec));
        calibrated.or_else(|| link.nominal_bandwidth())
    }

    /// Devices that failed during a call and are left out of calls until
    /// [`DevicePool::reprobe`] finds them working (indices into [`DevicePool::devices`]).
    pub fn failed_devices(&self) -> Vec<usize> {
        workspace::lock(&self.failed).clone()
    }

    /// The devices a call may use: those it asked for (all when none), less those that
    /// failed earlier.
    pub(super) fn working_devices(&self, opts: &GemmOptions) -> Vec<usize> {
        self.working_of(opts.devices.as_deref())
    }

    /// [`DevicePool::working_devices`] of a call that asked for `asked` (all when `None`).
    fn working_of(&self, asked: Option<&[usize]>) -> Vec<usize> {
        let failed = self.failed_devices();
        match asked {
            Some(list) => list.to_vec(),
            None => (0..self.devices.len()).collect(),
        }
        .into_iter()
        .filter(|i| !failed.contains(i))
        .collect()
    }

    /// The devices a call that lost some goes on with: those it asked for (all when `None`),
    /// less the failed ones, that pass `usable`; else the host CPU, the last resort. `None`: no
    /// device left, or one of `operands` lives in a failed device's memory.
    pub(super) fn devices_left(
        &self,
        asked: Option<&[usize]>,
        operands: &[RawTile],
        dtype: DType,
        usable: impl Fn(usize) -> bool,
    ) -> Option<Vec<usize>> {
        let failed = self.failed_devices();
        let space_failed = |t: &RawTile| failed.iter().any(|&i| self.devices[i].space() == t.space);
        if operands.iter().any(space_failed) {
            return None;
        }
        let left: Vec<usize> = self
            .working_of(asked)
            .into_iter()
            .filter(|&i| usable(i))
            .collect();
        if !left.is_empty() {
            return Some(left);
        }
        let cpu = asked
            .and(self.host_fallback(dtype))
            .filter(|&cpu| usable(cpu))?;
        tracing::warn!(
            device = %self.devices[cpu].info().label(),
            "no device asked for is left; the host CPU finishes the call"
        );
        Some(vec![cpu])
    }

    /// Leaves pool device `index` out of this and later calls (until [`DevicePool::reprobe`])
    /// for `error`, met during a `routine` call, and records it in the call's `recovered`:
    /// `tiles_rerun` of its output tiles ran again on the devices left, `tiles_in_part` of
    /// them as parts. Returns the error, named after the device.
    pub(super) fn leave_out(
        &self,
        recovered: &mut Vec<DeviceFault>,
        (index, error): (usize, Error),
        routine: &str,
        (tiles_rerun, tiles_in_part): (usize, usize),
    ) -> Error {
        let label = self.devices[index].info().label();
        let error = error.on_device(&label);
        tracing::warn!(
            device = %label, error = %error, routine, tiles_rerun,
            "device failed; it is left out until re-probed, and the call finishes on the \
             devices left"
        );
        let mut failed = workspace::lock(&self.failed);
        if !failed.contains(&index) {
            failed.push(index);
            // Decisions name devices; they are made again without this one.
            self.clear_decisions();
        }
        drop(failed);
        recovered.push(DeviceFault {
            device: label,
            index,
            error: error.clone(),
            tiles_rerun,
            tiles_in_part,
        });
        error
    }

    /// Leaves out every device of `faults` (plan device index, error; `devices` maps plan
    /// devices to the pool's) as [`DevicePool::leave_out`] does. Returns the last one's error.
    pub(super) fn leave_out_all(
        &self,
        recovered: &mut Vec<DeviceFault>,
        faults: Vec<(usize, Error)>,
        devices: &[usize],
        routine: &str,
        tiles: (usize, usize),
    ) -> Result<Error> {
        let mut last = None;
        for (d, e) in faults {
            last = Some(self.leave_out(recovered, (devices[d], e), routine, tiles));
        }
        last.ok_or_else(|| Error::internal("faulted run without a fault"))
    }

    /// Runs a tile-DAG plan (TRSM/TRMM, the factorizations): its workspaces (waiting for other
    /// calls' memory), the host regions prepared, the executor. `Ok(Err(e))`: a device cannot
    /// allocate with nothing to wait for; it was left out and the call must be decided again.
    fn run_dag(
        &self,
        run: &DagRun<'_>,
        recovered: &mut Vec<DeviceFault>,
        routine: &str,
    ) -> Result<std::result::Result<crate::execute::ExecOutcome, Error>> {
        let plan = run.plan;
        let workspace = loop {
            let epoch = self.workspaces.epoch();
            match self.workspaces.acquire(&self.devices, run.devices, plan) {
                Err(Error::OutOfMemory { .. }) if self.workspaces.wait_for_release(epoch) => {}
                Err(e @ Error::OutOfMemory { .. }) => {
                    let Some(index) = self.blamed_for_memory(&e, run.devices) else {
                        return Err(e);
                    };
                    return Ok(Err(self.leave_out(recovered, (index, e), routine, (0, 0))));
                }
                r => break r?,
            }
        };
        let ws = Workspaces::addresses(&workspace, run.devices);
        let devs = self.devices_of(run.devices);
        // No population of the operands beside the call: host kernels (solves, panels) write
        // them in place.
        let call_guard = self.enter(&devs, &host_regions(&run.operands), false)?;
        share_host(&devs);
        let out = crate::execute::execute(&crate::execute::ExecRequest {
            plan,
            devices: &devs,
            workspaces: &ws,
            links: &self.links,
            operands: &run.operands.map(|(t, _)| t),
            host_workspace: 0,
            host_fold: None,
            alpha: run.alpha,
            beta: run.alpha,
            trace: run.trace,
            epochs: Some(&self.trace_epochs),
            undo: run.undo,
            infos: run.infos,
        })?;
        drop(call_guard);
        drop(workspace);
        Ok(Ok(out))
    }

    /// Probes every failed device again (a small allocation, its compute queues synchronised)
    /// and takes those that answer back into calls. Returns the devices still failed.
    pub fn reprobe(&self) -> Vec<usize> {
        let _thread = self.keep_thread_contexts();
        let mut f = workspace::lock(&self.failed);
        f.retain(|&i| {
            let d = &self.devices[i];
            let works = d.allocate(4096).is_ok()
                && d.compute_queues().iter().all(|q| q.synchronize().is_ok());
            if works {
                tracing::info!(device = %d.info().label(), "device re-probed: back in use");
            }
            !works
        });
        // Made without the devices now back.
        self.clear_decisions();
        f.clone()
    }

    /// What the calibrated profile predicts for `problem` when the autotuner chooses the
    /// devices (every subset balanced, the fastest kept): the devices and the predicted
    /// seconds. `None` without a profile, or when it lacks some device's GEMM rate.
    pub fn predict_gemm(&self, problem: &GemmProblem) -> Option<GemmPrediction> {
        let profile = self.profile()?;
        let _thread = self.keep_thread_contexts();
        let tile = crate::autotune::provisional_tile(problem, None);
        let bw = |s, d| self.link_bandwidth(s, d);
        let c = crate::autotune::choose_pool_devices(
            problem,
            &self.devices,
            &self.failed_devices(),
            tile,
            Some(&profile),
            &bw,
            crate::energy::Objective::Time,
            &crate::autotune::PlanHints::default(),
        )?;
        Some(GemmPrediction {
            devices: c.devices,
            seconds: c.predicted,
        })
    }

    /// A device's GEMM rate at tile `tile`: calibrated, else what the device knows of itself,
    /// else a labelled guess by kind (accelerator / host). The triangular routines' model and
    /// the symmetric routines' choice of device for a diagonal tile use it.
    pub(super) fn gemm_rate(&self, i: usize, dt: DType, tile: usize) -> f64 {
        let d = &self.devices[i];
        let calibrated = self
            .profile()
            .and_then(|p| p.device(&d.info().label())?.exec_table(dt));
        if let Some(t) = calibrated {
            return t.rate(tile);
        }
        d.nominal_flops(dt).unwrap_or_else(|| {
            // Uncalibrated: a guess by kind, lower for small tiles (GEMM rates grow with the
            // tile until the device is full; half rate at 512 here).
            let peak = if d.space().is_host() { 1e11 } else { 1e13 };
            peak * tile as f64 / (tile as f64 + 512.0)
        })
    }

    /// The planner's view of pool devices `indices` for a tile DAG (TRSM/TRMM, the
    /// factorizations): at most two compute queues each, for the look-ahead.
    pub(super) fn dag_specs(&self, indices: &[usize]) -> Vec<crate::plan::DeviceSpec> {
        indices
            .iter()
            .map(|&i| {
                let d = &self.devices[i];
                crate::plan::DeviceSpec::new(
                    d.info().label(),
                    d.space(),
                    d.memory_budget(),
                    d.compute_queues().len().min(2) as u16,
                )
            })
            .collect()
    }

    /// A device list a caller gave (every routine's options): not empty, each index a device
    /// of the pool, each once.
    pub(super) fn check_device_list(&self, list: Option<&[usize]>) -> Result<()> {
        let Some(list) = list else {
            return Ok(());
        };
        if list.is_empty() {
            return Err(Error::InvalidInput("empty device list".into()));
        }
        for (n, &i) in list.iter().enumerate() {
            self.device(i)?;
            if list[..n].contains(&i) {
                return Err(Error::InvalidInput(format!("device {i} listed twice")));
            }
        }
        Ok(())
    }

    /// Pool devices `indices`.
    fn devices_of(&self, indices: &[usize]) -> Vec<Arc<dyn Device>> {
        indices.iter().map(|&i| self.devices[i].clone()).collect()
    }

    fn device(&self, idx: usize) -> Result<&Arc<dyn Device>> {
        self.devices.get(idx).ok_or_else(|| {
            Error::InvalidInput(format!(
                "device index {idx} out of range (pool has {})",
                self.devices.len()
            ))
        })
    }

    /// Frees the tile workspaces and host staging buffers kept between calls. Waits for the
    /// calls in flight; the next call allocates again.
    ///
    /// # Errors
    /// A backend's error unregistering a staging buffer (the buffer is freed anyway).
    pub fn release_workspaces(&self) -> Result<()> {
        let _thread = self.keep_thread_contexts();
        let _alone = self.alone();
        self.workspaces.release_idle(&self.devices)
    }

    /// Enters a call whose host `regions` the accelerators among `devs` copy from or to: beside
    /// the calls in flight when every region is ready for their DMA, else alone after
    /// preparing them (page-locking may evict a registration another call uses). Also returns
    /// the seconds spent waiting for the lock.
    ///
    /// With `populate` (only where the host writes the regions through the accelerators'
    /// copies alone and the written operand is contiguous), the accelerators may run work
    /// beside the call on its regions ([`Device::begin_host_call`]).
    fn enter(
        &self,
        devs: &[Arc<dyn Device>],
        regions: &[(u64, usize, HostAccess)],
        populate: bool,
    ) -> Result<(CallGuard<'_>, f64)> {
        let populate = populate && !devs.iter().any(|d| d.space().is_host());
        let accelerators = || devs.iter().filter(|d| !d.space().is_host());
        let t = std::time::Instant::now();
        let beside = self.beside_others();
        let mut waited = t.elapsed().as_secs_f64();
        let mut ready = true;
        for d in accelerators() {
            ready = d
                .hosts_prepared(regions)
                .map_err(|e| e.on_device(&d.info().label()))?;
            if !ready {
                break;
            }
        }
        if ready {
            return Ok((
                CallGuard {
                    _populations: begin_host_call(devs, regions, populate),
                    _lock: CallLock::Beside(beside),
                    _in_flight: self.fold_speed().call(),
                },
                waited,
            ));
        }
        drop(beside);
        let t = std::time::Instant::now();
        let alone = self.alone();
        waited += t.elapsed().as_secs_f64();
        let in_flight = self.fold_speed().call();
        for &(addr, bytes, access) in regions {
            for d in accelerators() {
                d.prepare_host(addr, bytes, access)
                    .map_err(|e| e.on_device(&d.info().label()))?;
            }
        }
        Ok((
            CallGuard {
                _populations: begin_host_call(devs, regions, populate),
                _lock: CallLock::Alone(alone),
                _in_flight: in_flight,
            },
            waited,
        ))
    }

    /// Saves what the calling thread has current in each backend's runtime, put back when the
    /// returned guards drop ([`Device::keep_thread_context`]). Every public entry that may
    /// reach a device holds them first, so the caller's GPU code finds its context as it was.
    pub(super) fn keep_thread_contexts(&self) -> Vec<ThreadContext> {
        self.context_keepers
            .iter()
            .filter_map(|&i| self.devices[i].keep_thread_context())
            .collect()
    }

    /// The read side of `calls`: a call that runs beside others.
    fn beside_others(&self) -> RwLockReadGuard<'_, ()> {
        // A poisoned lock only means a panic in another call; it guards no data.
        self.calls.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The write side of `calls`: no call in flight until dropped.
    fn alone(&self) -> RwLockWriteGuard<'_, ()> {
        self.calls.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The profile the simulator prices candidate plans with: the calibrated one where it
    /// covers every device (its `dtype` GEMM table) and link, else one made of what the pool
    /// knows ([`DevicePool::gemm_rate`], [`DevicePool::link_bandwidth`]; 10 us per copy).
    pub(super) fn evaluation_profile(&self, dtype: DType) -> Arc<MachineProfile> {
        let calibrated = self.profile();
        if let Some(p) = &calibrated {
            let devices = self.devices.iter().all(|d| {
                p.device(&d.info().label())
                    .and_then(|x| x.exec_table(dtype))
                    .is_some()
            });
            if devices
                && self
                    .links
                    .values()
                    .all(|l| p.link_named(l.name()).is_some())
            {
                return p.clone();
            }
        }
        let links: Vec<Arc<dyn Link>> = self.links.values().cloned().collect();
        let mut p = crate::sim::synthetic::profile_of(
            &self.devices,
            &links,
            &[dtype],
            1e-5,
            &|i, dt, t| Some(self.gemm_rate(i, dt, t)),
            &|l| self.link_bandwidth(l.src(), l.dst()).unwrap_or(10e9),
        );
        p.host = "pool".into();
        if let Some(c) = calibrated {
            p.tri_efficiency = c.tri_efficiency.clone();
        }
        Arc::new(p)
    }

    /// The pool index, among `devices`, of the device an out-of-memory error names (asked
    /// when no other call holds memory it could give back: the device cannot take part).
    pub(super) fn blamed_for_memory(&self, e: &Error, devices: &[usize]) -> Option<usize> {
        let Error::OutOfMemory { device, .. } = e else {
            return None;
        };
        devices.iter().copied().find(|&i| {
            let label = self.devices[i].info().label();
            *device == label || device.starts_with(&format!("{label} "))
        })
    }
}

/// Tells each of `devs` how many accelerators among them share the host.
fn share_host(devs: &[Arc<dyn Device>]) {
    let accelerators = devs.iter().filter(|d| !d.space().is_host()).count();
    for d in devs {
        d.share_host(accelerators);
    }
}

/// What the accelerators run beside a call on its host `regions`
/// ([`Device::begin_host_call`]), ended when the call's guard drops.
fn begin_host_call(
    devs: &[Arc<dyn Device>],
    regions: &[(u64, usize, HostAccess)],
    populate: bool,
) -> Vec<Box<dyn std::any::Any + Send>> {
    if !populate {
        return Vec::new();
    }
    // `populate` holds only where every device is an accelerator.
    devs.iter()
        // SAFETY: `regions` are the call's host operands (the caller's slices, which outlive
        // the call); the guard holding what this returns is dropped when the call has ended,
        // its copies done.
        .filter_map(|d| unsafe { d.begin_host_call(regions) })
        .collect()
}

/// Held while a call runs: what runs beside it on its host operands (ended first), its place
/// beside other calls or alone, and its count among the calls in flight (folds are counted
/// only for calls that ran alone, [`crate::tuning::fold_speed`]).
struct CallGuard<'a> {
    _populations: Vec<Box<dyn std::any::Any + Send>>,
    _lock: CallLock<'a>,
    _in_flight: crate::tuning::fold_speed::CallInFlight<'a>,
}

/// A call's place: beside other calls, or alone.
#[allow(dead_code)] // held for its drop only
enum CallLock<'a> {
    Beside(RwLockReadGuard<'a, ()>),
    Alone(RwLockWriteGuard<'a, ()>),
}

impl Drop for DevicePool {
    fn drop(&mut self) {
        let _thread = self.keep_thread_contexts();
        // The staging buffers may be page-locked by the devices: release before freeing.
        let _ = self.workspaces.release_idle(&self.devices);
    }
}
