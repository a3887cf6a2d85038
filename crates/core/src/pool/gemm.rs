//! The GEMM call path: argument checks, quick returns, the autotuner's decision (cached), the
//! plan (cached), the workspaces, the host operands made ready for DMA, execution.

use super::decisions::DecisionKey;
use super::options::{DeviceFault, GemmOptions, GemmReport};
use super::sym_tiles::sym_pieces;
use super::workspace::Workspaces;
use super::{host_regions, op_sub, to_usize, DevicePool};
use crate::autotune::{self, Decision, DecisionRequest};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::execute::{self, ExecRequest};
use crate::matrix::{MatIn, MatOut};
use crate::memory::{HostAccess, MemorySpace, RawTile};
use crate::operand::{MatMut, MatRef, Trans};
use crate::plan::cache::{PlanCache, PlanInputs};
use crate::plan::{CRegion, DeviceSpec, Plan};
use crate::problem::blas_flags::ArgCheck;
use crate::problem::{check_gemm_args, GemmProblem};
use crate::scalar::{DType, Scalar};
use crate::undo::{UndoLog, UndoScope};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

impl DevicePool {
    /// BLAS-style GEMM on host slices: arguments checked exactly as reference BLAS checks them
    /// (errors carry its parameter numbers), then `c = alpha*op(a)*op(b) + beta*c`.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list, as BLAS orders it
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
        self.gemm_blas_checked(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, opts)
    }

    /// GEMM on host slices whose BLAS arguments a routine's check passed: the slices as views,
    /// then [`DevicePool::gemm_with`] over `opts`'s region of C.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list, as BLAS orders it
    pub fn gemm_blas_checked<T: Scalar>(
        &self,
        transa: Trans,
        transb: Trans,
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
        let (m, n, k) = (to_usize(m)?, to_usize(n)?, to_usize(k)?);
        let (ar, ac) = transa.stored_shape(m, k);
        let (br, bc) = transb.stored_shape(k, n);
        let av = MatRef::new(a, ar, ac, to_usize(lda)?)?;
        let bv = MatRef::new(b, br, bc, to_usize(ldb)?)?;
        let cv = MatMut::new(c, m, n, to_usize(ldc)?)?;
        self.gemm_with(transa, transb, alpha, av, bv, beta, cv, opts)
    }

    /// `c = alpha * op(a) * op(b) + beta * c` with default options.
    #[allow(clippy::too_many_arguments)] // GEMM's operands and scalars, as BLAS orders them
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
        let opts = GemmOptions::default();
        self.gemm_with(transa, transb, alpha, a, b, beta, c, &opts)
    }

    /// GEMM with explicit options. Shapes come from the operands: C is m x n, op(A) m x k,
    /// op(B) k x n; a mismatch is reported as parameter 3 (m), 4 (n) or 5 (k).
    #[allow(clippy::too_many_arguments)] // GEMM's operands and scalars, as BLAS orders them
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
        let _thread = self.keep_thread_contexts();
        let (a, b, mut c) = (a.into(), b.into(), c.into());
        let (m, n, k) = gemm_shape(transa, transb, &a, &b, &c)?;
        opts.c_region.check_shape(m, n)?;
        let operands = [a.raw(), b.raw(), c.raw()];
        self.check_locations(&operands)?;
        // Options are checked on quick returns too: a bad device list is wrong at any size.
        self.check_options(opts)?;
        let mut report = GemmReport::default();
        if m == 0 || n == 0 || k == 0 || alpha == T::default() {
            if m > 0 && n > 0 {
                self.scale_c(&mut c, beta, opts.c_region.whole_mask())?;
            }
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }

        let problem = tiles_problem(transa, transb, operands, beta == T::default());
        let staging_before = self.staging_alloc_seconds();
        let plan_start = Instant::now();
        // Notes of this call's choices, kept ahead of those the run adds (on each attempt).
        let mut call_notes = Vec::new();
        let (fold_level, fold_observed) = self.sync_fold_level();
        let staged = self.stages_c(&operands[2]);
        let run = GemmRun::new(problem, opts, operands, alpha, beta, staged);
        let mut k_split_faults = Vec::new();
        let k_split_ran = match self.k_split_choice(&run) {
            None => false,
            Some(split) => {
                let failed_before = self.failed_devices();
                match self.run_k_split(&run, &split, &mut report) {
                    Ok(()) => true,
                    // C untouched and a device left: the call runs again as a C split, without
                    // the devices that failed (as a C split recovers from a failed device).
                    Err(f) if !f.c_written && self.can_compute(problem.dtype, opts, None) => {
                        tracing::warn!(
                            error = %f.error,
                            "the K split failed before writing C; the call runs as a C split on \
                             the devices left"
                        );
                        report = GemmReport::default();
                        call_notes.push(format!(
                            "K split failed ({}); ran as a C split on the devices left",
                            f.error
                        ));
                        k_split_faults = self
                            .failed_devices()
                            .into_iter()
                            .filter(|i| !failed_before.contains(i))
                            .map(|index| DeviceFault {
                                device: self.devices[index].info().label(),
                                index,
                                error: f.error.clone(),
                                tiles_rerun: 0,
                                tiles_in_part: 0,
                            })
                            .collect();
                        false
                    }
                    Err(f) => return Err(f.error),
                }
            }
        };
        if !k_split_ran {
            self.run_retrying(&run, &mut report, Some(plan_start), None)?;
            // Where the model weighed a host fold at that price: C in host memory and read, the
            // fold left to the model, one device (folds are planned for one device alone).
            if fold_level < 1.0
                && !problem.beta_zero
                && problem.locations[2].is_host()
                && opts.host_fold_mode().on.is_none()
                && report.devices.len() == 1
                && report.k_split.is_empty()
            {
                let calibrated = crate::autotune::fold_rate(self.profile().as_deref());
                call_notes.push(format!(
                    "host folds priced at {:.1} GB/s, not the calibrated {:.1}: recent folds \
                     reached {:.1} GB/s",
                    calibrated * fold_level / 1e9,
                    calibrated / 1e9,
                    fold_observed.unwrap_or(0.0) / 1e9
                ));
            }
        }
        report.notes.splice(0..0, call_notes);
        // After a failed K split every C tile ran again.
        let tiles: usize = report.stats.c_tiles.iter().sum();
        for mut f in k_split_faults {
            f.tiles_rerun = tiles;
            report.recovered.insert(0, f);
        }
        report.staging_seconds = self.staging_alloc_seconds() - staging_before;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Seconds the pool's links have spent allocating staging buffers
    /// ([`Link::staging_alloc_seconds`]).
    fn staging_alloc_seconds(&self) -> f64 {
        self.links.values().map(|l| l.staging_alloc_seconds()).sum()
    }

    /// Whether a device the call may use, other than `without`, computes `dtype`.
    fn can_compute(&self, dtype: DType, opts: &GemmOptions, without: Option<usize>) -> bool {
        self.working_devices(opts)
            .iter()
            .any(|&i| Some(i) != without && self.devices[i].kernel().supports(dtype))
    }

    /// `c = alpha op(a) op(b) + beta c` on raw operands the caller checked and borrows for the
    /// call: another routine's split or recovery. `stage`: C may be staged
    /// ([`DevicePool::stages_c`]).
    #[allow(clippy::too_many_arguments)] // GEMM's operands and scalars
    pub(super) fn gemm_raw<T: Scalar>(
        &self,
        transa: Trans,
        transb: Trans,
        alpha: T,
        a: RawTile,
        b: RawTile,
        beta: T,
        c: RawTile,
        opts: &GemmOptions,
        stage: bool,
    ) -> Result<GemmReport> {
        let problem = tiles_problem(transa, transb, [a, b, c], beta == T::default());
        let mut report = GemmReport::default();
        if problem.m == 0 || problem.n == 0 || problem.k == 0 {
            return Ok(report);
        }
        let run = GemmRun::new(
            problem,
            opts,
            [a, b, c],
            alpha,
            beta,
            stage && self.stages_c(&c),
        );
        self.run_retrying(&run, &mut report, None, None)?;
        Ok(report)
    }

    /// Runs `problem` through [`DevicePool::run_recovering`], retrying on running out of
    /// memory; when it still fails, C is put back from the call's undo log, if any.
    /// `plan_start`: `None` times each attempt's planning from its own start.
    pub(super) fn run_retrying<T: Scalar>(
        &self,
        run: &GemmRun<'_, T>,
        report: &mut GemmReport,
        plan_start: Option<Instant>,
        outer_undo: Option<&UndoLog>,
    ) -> Result<()> {
        let GemmRun { problem, opts, .. } = run;
        let mut decided_again = false;
        // A call of several plans keeps one log for all and puts C back itself.
        let own_undo =
            (outer_undo.is_none() && self.keeps_undo_log(opts, problem.dtype)).then(UndoLog::new);
        let undo = outer_undo.or(own_undo.as_ref());
        let result = loop {
            let epoch = self.workspaces.epoch();
            match self.run_recovering(run, report, plan_start.unwrap_or_else(Instant::now), undo) {
                // Other calls hold device memory: wait until one gives its buffers back.
                Err(Error::OutOfMemory { .. })
                    if report.recovered.is_empty() && {
                        let t = Instant::now();
                        let waited = self.workspaces.wait_for_release(epoch);
                        report.waited_seconds += t.elapsed().as_secs_f64();
                        waited
                    } => {}
                // A cached decision carries the memory budgets of its time: when the devices
                // have less free memory now, decide again with today's budgets, once.
                Err(Error::OutOfMemory { .. }) if report.recovered.is_empty() && !decided_again => {
                    decided_again = true;
                    self.decisions.forget(&run.key);
                }
                // Still out of memory with nothing to wait for: the device cannot take part, and
                // is left out as a failed device.
                Err(e @ Error::OutOfMemory { .. }) if decided_again => {
                    let ids = self.working_devices(opts);
                    match self.blamed_for_memory(&e, &ids) {
                        Some(index) if self.can_compute(problem.dtype, opts, Some(index)) => {
                            self.leave_out(&mut report.recovered, (index, e), "GEMM", (0, 0));
                        }
                        _ => break Err(e),
                    }
                }
                r => break r,
            }
        };
        result.map_err(|e| match &own_undo {
            Some(undo) => self.put_c_back(e, undo),
            None => e,
        })
    }

    /// Whether a call keeps the undo log of C ([`UndoLog`]). It costs a host copy of C per call
    /// (H200 DGEMM 8192^3: 35 to 9 TFLOP/s), so by default only when no working host CPU can
    /// finish a failed call's tiles.
    pub(super) fn keeps_undo_log(&self, opts: &GemmOptions, dtype: DType) -> bool {
        opts.preserve_c
            .unwrap_or_else(|| self.host_fallback(dtype).is_none())
    }

    /// A working device computing in host memory (the CPU) that supports `dtype`: the last
    /// resort of a call whose devices all failed.
    pub(super) fn host_fallback(&self, dtype: DType) -> Option<usize> {
        let failed = self.failed_devices();
        (0..self.devices.len()).find(|&i| {
            !failed.contains(&i)
                && self.devices[i].space() == MemorySpace::HOST
                && self.devices[i].kernel().supports(dtype)
        })
    }

    /// A call that fails leaves C as it was: the regions it overwrote are written back from
    /// the undo log. `error` is the call's error, or the restore's when C could not be put
    /// back (C in the memory of a device that is lost).
    pub(super) fn put_c_back(&self, error: Error, undo: &UndoLog) -> Error {
        if undo.is_empty() {
            return error;
        }
        match undo.restore(&self.links) {
            Ok(()) => error,
            Err(r) => {
                tracing::error!(error = %error, restore = %r, "C could not be put back");
                Error::DeviceLost {
                    device: match &r {
                        Error::DeviceLost { device, .. } | Error::OutOfMemory { device, .. } => {
                            device.clone()
                        }
                        _ => "pool".into(),
                    },
                    detail: format!(
                        "{error}; and C, overwritten in part, could not be put back: {r}"
                    ),
                }
            }
        }
    }

    /// Every device-resident operand belongs to a device of this pool.
    pub(super) fn check_locations(&self, operands: &[RawTile; 3]) -> Result<()> {
        for t in operands {
            if !t.space.is_host() && !self.devices.iter().any(|d| d.space() == t.space) {
                return Err(Error::InvalidInput(format!(
                    "operand lives in {:?}, which belongs to no device of this pool",
                    t.space
                )));
            }
        }
        Ok(())
    }

    /// The options name existing devices, each once, and positive tile sizes.
    pub(super) fn check_options(&self, opts: &GemmOptions) -> Result<()> {
        self.check_device_list(opts.devices.as_deref())?;
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
        Ok(())
    }

    /// [`DevicePool::run`]; devices that fail are left out and the C tiles not final run again
    /// on the devices left (recursively). With no device left, the last failure's error.
    pub(super) fn run_recovering<T: Scalar>(
        &self,
        run: &GemmRun<'_, T>,
        report: &mut GemmReport,
        plan_start: Instant,
        undo: Option<&UndoLog>,
    ) -> Result<()> {
        let Some(f) = self.run(run, report, plan_start, undo)? else {
            return Ok(());
        };
        let (problem, opts, operands, beta) = (&run.problem, run.opts, &run.operands, run.beta);
        let unfinished: Vec<(usize, usize)> = (0..f.grid.mt())
            .flat_map(|i| (0..f.grid.nt()).map(move |j| (i, j)))
            .filter(|&(i, j)| {
                !f.final_tiles.contains(&(i, j))
                    && crate::plan::symmetric::has_c_tile(problem, i, j)
                    && opts.c_region.has_tile(i, j)
            })
            .collect();
        let last = self.leave_out_all(
            &mut report.recovered,
            f.faults,
            &f.devices,
            "GEMM",
            (unfinished.len(), f.partial.len()),
        )?;
        if !f.lost.is_empty() {
            // C in a failed device's own memory, accumulated in place: its old values are gone.
            return Err(match last {
                Error::DeviceLost { device, detail } | Error::OutOfMemory { device, detail } => {
                    Error::DeviceLost {
                        device,
                        detail: format!(
                            "{detail}; {} tiles of C were accumulated in its own memory",
                            f.lost.len()
                        ),
                    }
                }
                e => e,
            });
        }
        let dtype = problem.dtype;
        let supports = |i: usize| self.devices[i].kernel().supports(dtype);
        let Some(left) = self.devices_left(opts.devices.as_deref(), operands, dtype, supports)
        else {
            return Err(last);
        };
        let sub_opts = GemmOptions {
            devices: opts.devices.as_ref().map(|_| left.clone()),
            trace: false,
            ..opts.clone()
        };
        // Each piece: (problem, operands, beta, region of C).
        let mut pieces = Vec::new();
        if problem.sym.is_some() {
            for &tile in &unfinished {
                for (sub, ops, beta) in sym_pieces(problem, operands, &f.grid, tile, beta)? {
                    pieces.push((sub, ops, beta, opts.c_region));
                }
            }
        } else {
            // A tile written back in part runs again on its other columns only; a tile the
            // region holds in part runs again alone over its part; the others as GEMMs.
            let half = |&(i, j): &(usize, usize)| !opts.c_region.mask(i, j).is_whole();
            let whole: Vec<(usize, usize)> = unfinished
                .iter()
                .copied()
                .filter(|t| !f.partial.contains_key(t) && !half(t))
                .collect();
            let mut blocks = unfinished_blocks(&f.grid, &whole);
            for (&(i, j), &done) in &f.partial {
                let ((r0, mr), (c0, nc)) = (f.grid.m_span(i), f.grid.n_span(j));
                if done < nc {
                    blocks.push((r0, mr, c0 + done, nc - done, CRegion::All));
                }
            }
            for &(i, j) in unfinished.iter().filter(|t| half(t)) {
                let ((r0, mr), (c0, nc)) = (f.grid.m_span(i), f.grid.n_span(j));
                blocks.push((r0, mr, c0, nc, opts.c_region.tile_region(i, j)));
            }
            let ([a, b, c], k) = (*operands, problem.k);
            for (r0, mr, c0, nc, region) in blocks {
                let ops = [
                    op_sub(a, problem.transa, r0, 0, mr, k),
                    op_sub(b, problem.transb, 0, c0, k, nc),
                    c.sub(r0, c0, mr, nc),
                ];
                let sub = GemmProblem {
                    m: mr,
                    n: nc,
                    ..*problem
                };
                pieces.push((sub, ops, beta, region));
            }
        }
        for (sub, ops, beta, region) in pieces {
            let sub_opts = GemmOptions {
                c_region: region,
                ..sub_opts.clone()
            };
            let sub_run = GemmRun::new(sub, &sub_opts, ops, run.alpha, beta, run.key.4.staged);
            let mut sub_report = GemmReport::default();
            self.run_recovering(&sub_run, &mut sub_report, Instant::now(), undo)?;
            super::sym::merge_rerun(report, sub_report);
        }
        Ok(())
    }

    /// Decision (cached), plan (cached), workspaces, host preparation, execution. `Some` when
    /// devices failed: what is needed to finish the call without them.
    fn run<T: Scalar>(
        &self,
        run: &GemmRun<'_, T>,
        report: &mut GemmReport,
        plan_start: Instant,
        undo: Option<&UndoLog>,
    ) -> Result<Option<Faulted>> {
        let GemmRun {
            problem,
            key,
            opts,
            operands,
            alpha,
            beta,
        } = run;
        let (decision, _) = self
            .decisions
            .get_or_decide(key, || self.decide(problem, opts, key.4.staged))?;
        debug_assert_eq!(
            (decision.grid.m, decision.grid.n, decision.grid.k),
            (problem.m, problem.n, problem.k)
        );
        let devs = self.devices_of(&decision.devices);
        let (plan, cached) = self.plan(&self.plans, problem, &decision, &devs, opts)?;
        report.planning_seconds = plan_start.elapsed().as_secs_f64();
        report.plan_cached = cached;
        report.tile = Some((decision.grid.tm, decision.grid.tn, decision.grid.tk));
        report.prices = decision.prices.clone();
        report.devices = devs.iter().map(|d| d.info().label()).collect();
        report.weights = decision.weights.clone();
        report.balancer_weights = decision.balancer_weights.clone();
        report.notes = idle_notes(&self.devices, &decision);

        let taking = Instant::now();
        let mut workspace = self
            .workspaces
            .acquire(&self.devices, &decision.devices, &plan)?;
        report.workspace_seconds = taking.elapsed().as_secs_f64();
        let ws_addrs = Workspaces::addresses(&workspace, &decision.devices);
        let accelerator_ids: Vec<usize> = decision
            .devices
            .iter()
            .copied()
            .filter(|&i| !self.devices[i].space().is_host())
            .collect();
        let [a, b, c] = *operands;
        let (read, write) = (HostAccess::Read, HostAccess::ReadWrite);
        let mut regions = host_regions(&[(a, read), (b, read), (c, write)]);
        if let Some((addr, bytes)) = workspace.host_region_to_prepare(&accelerator_ids) {
            regions.push((addr, bytes, HostAccess::ReadWrite));
        }
        let entering = Instant::now();
        let (_call, waited) = self.enter(
            &devs,
            &regions,
            !plan.host_folds && operands[2].is_contiguous(),
        )?;
        report.waited_seconds += waited;
        report.host_check_seconds = (entering.elapsed().as_secs_f64() - waited).max(0.0);
        workspace.host_ready_for(&accelerator_ids);
        super::share_host(&devs);
        report.host_fold = plan.host_folds;
        report.fold_tail = if plan.host_folds {
            decision.fold_tail
        } else {
            0
        };
        let folder = plan
            .host_folds
            .then(|| self.workspaces.folder())
            .transpose()?;
        let host_fold = folder.as_ref().map(|f| f.folder.clone());
        report.execute_start = plan_start.elapsed().as_secs_f64();
        let outcome = execute::execute(&ExecRequest {
            plan: &plan,
            devices: &devs,
            workspaces: &ws_addrs,
            links: &self.links,
            operands,
            host_workspace: workspace.host_addr(),
            host_fold,
            alpha: alpha.to_value(),
            beta: beta.to_value(),
            trace: opts.trace,
            epochs: Some(&self.trace_epochs),
            undo: undo.map(|u| (u, UndoScope::Every)),
            infos: &[],
        })
        .map_err(|e| name_device(e, &devs))?;
        report.stats = plan.stats();
        report.plan = Some(plan.clone());
        report.transfers = outcome.transfers;
        report.trace = outcome.trace;
        if outcome.faults.is_empty() {
            return Ok(None);
        }
        let tile = |k: &crate::tiling::TileKey| (k.r as usize, k.c as usize);
        Ok(Some(Faulted {
            devices: decision.devices.clone(),
            grid: plan.gemm().map_or(decision.grid, |(_, g)| *g),
            faults: outcome.faults,
            final_tiles: outcome.final_tiles.iter().map(tile).collect(),
            lost: outcome
                .in_place
                .iter()
                .filter(|k| !outcome.final_tiles.contains(k))
                .map(tile)
                .collect(),
            partial: outcome.partial.iter().map(|(k, &c)| (tile(k), c)).collect(),
        }))
    }

    /// The autotuner's decision for `problem` under `opts` (a symmetric routine's tiles:
    /// [`DevicePool::decide_sym`]). `staged`: C is a fresh host output the devices stage.
    pub(super) fn decide(
        &self,
        problem: &GemmProblem,
        opts: &GemmOptions,
        staged: bool,
    ) -> Result<Decision> {
        if problem.sym.is_some() {
            return Ok(self.decide_sym(problem, opts)?.0);
        }
        self.decide_with(problem, opts, opts.forced_blocking(), staged)
    }

    /// Whether every accelerator would stage its copies into `c` (a fresh host output, whole
    /// columns: the population of its pages runs beside the call only then).
    fn stages_c(&self, c: &RawTile) -> bool {
        let mut accelerators = self
            .devices
            .iter()
            .filter(|d| !d.space().is_host())
            .peekable();
        c.space.is_host()
            && c.is_contiguous()
            && !c.is_empty()
            && accelerators.peek().is_some()
            && accelerators.all(|d| d.stages_host_output(c.addr, c.extent_bytes()))
    }

    /// [`DevicePool::decide`] with the blocking `forced` (`None`: the model's).
    pub(super) fn decide_with(
        &self,
        problem: &GemmProblem,
        opts: &GemmOptions,
        forced: Option<crate::tiling::Blocking>,
        staged: bool,
    ) -> Result<Decision> {
        let profile = self.decision_profile();
        let excluded = self.failed_devices();
        // Devices asked for that failed are left out; none left is the caller's to hear.
        let only: Option<Vec<usize>> = opts.devices.as_ref().map(|l| {
            l.iter()
                .copied()
                .filter(|i| !excluded.contains(i))
                .collect()
        });
        let any_left = (0..self.devices.len())
            .any(|i| !excluded.contains(&i) && self.devices[i].kernel().supports(problem.dtype));
        if only.as_ref().is_some_and(|l| l.is_empty()) || !any_left {
            return Err(Error::Unavailable {
                backend: "pool",
                reason: format!(
                    "every device asked for ({:?}, all when none) failed earlier \
                     (failed: {excluded:?}); DevicePool::reprobe takes them back when they work",
                    opts.devices.as_deref().unwrap_or_default()
                ),
            });
        }
        let held: Vec<u64> = (0..self.devices.len())
            .map(|i| self.workspaces.held(i))
            .collect();
        autotune::decide(&DecisionRequest {
            problem,
            devices: &self.devices,
            held: &held,
            profile: profile.as_deref(),
            link_bandwidth: &|s: MemorySpace, d: MemorySpace| self.link_bandwidth(s, d),
            only: only.as_deref(),
            excluded: &excluded,
            forced,
            memory_limit: opts.memory_limit,
            host_fold: crate::autotune::FoldRequest {
                staged,
                ..opts.host_fold_mode()
            },
            objective: opts.objective,
        })
    }

    /// The plan for a decision, from `cache` or built into it (candidates that are only
    /// weighed use a cache of their own, so that the pool's keeps the plans that run).
    pub(super) fn plan(
        &self,
        cache: &PlanCache,
        problem: &GemmProblem,
        decision: &Decision,
        devs: &[Arc<dyn Device>],
        opts: &GemmOptions,
    ) -> Result<(Arc<Plan>, bool)> {
        // A region that needs square tiles takes the smaller of the decided sizes (its slots
        // then fit the budgets the decision made).
        let grid = &if opts.c_region.square_tiles() {
            let t = decision.grid.tm.min(decision.grid.tn);
            crate::tiling::Blocking {
                tm: t,
                tn: t,
                tk: decision.grid.tk,
                group: decision.group,
            }
            .grid(problem.m, problem.n, problem.k)
        } else {
            decision.grid
        };
        let specs: Vec<DeviceSpec> = devs
            .iter()
            .zip(&decision.budgets)
            .map(|(d, &budget)| DeviceSpec {
                label: d.info().label(),
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
                host_fold: decision.host_fold,
                fold_tail: decision.fold_tail,
                group: decision.group,
            })
            .collect();
        cache.get_or_build(&PlanInputs {
            problem: *problem,
            grid: *grid,
            device_ids: &decision.devices,
            devices: &specs,
            weights: &decision.weights,
            forward: !opts.no_peer_forwarding,
            host_fold: decision.host_fold,
            fold_tail: decision.fold_tail,
            // A strip of C's last rows cuts across any region but all of C.
            strip: decision.strip.filter(|_| opts.c_region.is_all()),
            links: &self.link_set,
            link_speed: &|s: MemorySpace, d: MemorySpace| self.link_bandwidth(s, d),
            region: opts.c_region,
            tail_pieces: self.tail_pieces(),
        })
    }

    /// C = beta * C (the k = 0 / alpha = 0 quick return), on the entries of `mask` only.
    /// beta == 0 writes zeros without reading C, so NaN in C does not survive.
    pub(super) fn scale_c<T: Scalar>(
        &self,
        c: &mut MatOut<'_, T>,
        beta: T,
        mask: crate::plan::TileMask,
    ) -> Result<()> {
        if beta == T::from_f64(1.0) {
            return Ok(());
        }
        let scale = |v: &mut MatMut<'_, T>| {
            for j in 0..v.cols() {
                let col = v.col_mut(j);
                let rows = mask.rows(j, col.len());
                for x in &mut col[rows] {
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
                // Zeros over all of C need none of its values.
                if beta != T::default() || !mask.is_whole() {
                    self.download(dm, MatMut::packed(&mut tmp, r, cc)?)?;
                }
                scale(&mut MatMut::packed(&mut tmp, r, cc)?);
                self.copy_blocking(MatIn::Host(MatRef::packed(&tmp, r, cc)?).raw(), dm.raw())
            }
        }
    }
}

/// One line per device asked for that gets no tiles: left out by the model, or given none
/// when the whole tiles were rounded out (also logged).
fn idle_notes(pool: &[Arc<dyn Device>], decision: &Decision) -> Vec<String> {
    let idle = decision.left_out.iter().copied().chain(
        decision
            .devices
            .iter()
            .zip(&decision.weights)
            .filter(|(_, &w)| w <= 0.0)
            .map(|(&i, _)| i),
    );
    idle.map(|i| {
        let label = pool[i].info().label();
        tracing::info!(device = %label, "no tiles: predicted to slow the call");
        format!("{label}: no tiles, predicted to slow the call")
    })
    .collect()
}

/// What a run that devices failed in leaves to do.
struct Faulted {
    /// Plan device index -> pool index.
    devices: Vec<usize>,
    grid: crate::tiling::TileGrid,
    /// (plan device, error).
    faults: Vec<(usize, Error)>,
    final_tiles: HashSet<(usize, usize)>,
    lost: Vec<(usize, usize)>,
    /// Tiles written back in part: their first columns that are final.
    partial: std::collections::HashMap<(usize, usize), usize>,
}

/// The C tiles `tiles` (sorted by row, then column) as blocks of C: per tile row, each run of
/// adjacent tiles is one block (row, rows, col, cols, all of it), so a re-run is few calls.
fn unfinished_blocks(
    grid: &crate::tiling::TileGrid,
    tiles: &[(usize, usize)],
) -> Vec<(usize, usize, usize, usize, CRegion)> {
    let mut blocks: Vec<(usize, usize, usize, usize, CRegion)> = Vec::new();
    let mut prev: Option<(usize, usize)> = None;
    for &(i, j) in tiles {
        let (r0, mr) = grid.m_span(i);
        let (c0, nc) = grid.n_span(j);
        match (prev, blocks.last_mut()) {
            (Some((pi, pj)), Some(b)) if pi == i && pj + 1 == j => b.3 += nc,
            _ => blocks.push((r0, mr, c0, nc, CRegion::All)),
        }
        prev = Some((i, j));
    }
    blocks
}

/// (m, n, k) from the operands: C is m x n, op(A) m x k, op(B) k x n; a mismatch is reported
/// as parameter 3 (m), 4 (n) or 5 (k).
fn gemm_shape<T: Scalar>(
    transa: Trans,
    transb: Trans,
    a: &MatIn<'_, T>,
    b: &MatIn<'_, T>,
    c: &MatOut<'_, T>,
) -> Result<(usize, usize, usize)> {
    let (m, n) = (c.rows(), c.cols());
    // The shape of op(X) is X's, swapped when transposed, as `stored_shape` swaps.
    let (am, ak) = transa.stored_shape(a.rows(), a.cols());
    let (bk, bn) = transb.stored_shape(b.rows(), b.cols());
    let check = ArgCheck("GEMM");
    if am != m {
        return Err(check.err(3, "m", format!("op(A) has {am} rows but C has {m}")));
    }
    if bn != n {
        return Err(check.err(4, "n", format!("op(B) has {bn} columns but C has {n}")));
    }
    if ak != bk {
        return Err(check.err(
            5,
            "k",
            format!("op(A) has {ak} columns but op(B) has {bk} rows"),
        ));
    }
    Ok((m, n, ak))
}

/// An out-of-memory or device-lost error from execution names the device when the backend
/// named only itself and one device of that backend took part.
fn name_device(e: Error, devs: &[Arc<dyn Device>]) -> Error {
    let backend = match &e {
        Error::OutOfMemory { device, .. } | Error::DeviceLost { device, .. } => device.clone(),
        _ => return e,
    };
    let mut same = devs.iter().filter(|d| d.info().backend == backend);
    match (same.next(), same.next()) {
        (Some(d), None) => e.on_device(&d.info().label()),
        _ => e,
    }
}

/// One GEMM on tiles the caller checked and borrows for the call:
/// `c = alpha op(a) op(b) + beta c` over `opts.c_region`, and its decision's key.
pub(super) struct GemmRun<'o, T> {
    pub problem: GemmProblem,
    pub key: DecisionKey,
    pub opts: &'o GemmOptions,
    pub operands: [RawTile; 3],
    pub alpha: T,
    pub beta: T,
}

impl<'o, T> GemmRun<'o, T> {
    /// `staged`: C is a fresh host output the devices stage
    /// ([`crate::autotune::FoldRequest::staged`]).
    pub(super) fn new(
        problem: GemmProblem,
        opts: &'o GemmOptions,
        operands: [RawTile; 3],
        alpha: T,
        beta: T,
        staged: bool,
    ) -> Self {
        let fold = crate::autotune::FoldRequest {
            staged,
            ..opts.host_fold_mode()
        };
        let key = (
            problem,
            opts.devices.clone(),
            opts.forced_blocking(),
            opts.memory_limit,
            fold,
            opts.objective,
        );
        GemmRun {
            problem,
            key,
            opts,
            operands,
            alpha,
            beta,
        }
    }
}

/// The GEMM `c = alpha op(a) op(b) + beta c` on tiles, its shape taken from them.
pub(super) fn tiles_problem(
    transa: Trans,
    transb: Trans,
    [a, b, c]: [RawTile; 3],
    beta_zero: bool,
) -> GemmProblem {
    GemmProblem {
        transa,
        transb,
        m: c.rows,
        n: c.cols,
        k: transa.stored_shape(a.rows, a.cols).1,
        dtype: c.dtype,
        beta_zero,
        locations: [a.space, b.space, c.space],
        sym: None,
    }
}
