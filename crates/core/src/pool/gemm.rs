//! The GEMM call path: argument checks, quick returns, the autotuner's decision (cached), the
//! plan (cached), the workspaces, the host operands made ready for DMA, execution.

use super::decisions::DecisionKey;
use super::options::{GemmOptions, GemmReport};
use super::workspace::Workspaces;
use super::DevicePool;
use crate::autotune::{self, Decision, DecisionRequest};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::execute::{self, ExecRequest};
use crate::matrix::{MatIn, MatOut};
use crate::memory::{HostAccess, MemorySpace, RawTile};
use crate::operand::{MatMut, MatRef, Trans};
use crate::plan::cache::PlanInputs;
use crate::plan::{DeviceSpec, Plan};
use crate::problem::{check_gemm_args, GemmProblem};
use crate::scalar::Scalar;
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
        let (a, b, mut c) = (a.into(), b.into(), c.into());
        let (m, n, k) = gemm_shape(transa, transb, &a, &b, &c)?;
        let operands = [a.raw(), b.raw(), c.raw()];
        self.check_locations(&operands)?;
        // Options are checked on quick returns too: a bad device list is wrong at any size.
        self.check_options(opts)?;
        let mut report = GemmReport::default();
        if m == 0 || n == 0 {
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
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
        let plan_start = Instant::now();
        let key = (
            problem,
            opts.devices.clone(),
            opts.forced_blocking(),
            opts.memory_limit,
            opts.host_fold_mode(),
        );
        let mut decided_again = false;
        loop {
            match self.run(
                &problem,
                &key,
                opts,
                &operands,
                alpha,
                beta,
                &mut report,
                plan_start,
            ) {
                // Other calls hold device memory: wait until one gives its buffers back.
                Err(Error::OutOfMemory { .. }) if self.workspaces.wait_for_release() => {}
                // A cached decision carries the memory budgets of its time: when the devices
                // have less free memory now, decide again with today's budgets, once.
                Err(Error::OutOfMemory { .. }) if !decided_again => {
                    decided_again = true;
                    self.decisions.forget(&key);
                }
                r => break r?,
            }
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Every device-resident operand belongs to a device of this pool.
    fn check_locations(&self, operands: &[RawTile; 3]) -> Result<()> {
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
    fn check_options(&self, opts: &GemmOptions) -> Result<()> {
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
        Ok(())
    }

    /// Decision (cached), plan (cached), workspaces, host preparation, execution.
    #[allow(clippy::too_many_arguments)] // one call's state, passed once from `gemm_with`
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
        let decision = self
            .decisions
            .get_or_decide(key, || self.decide(problem, opts))?;
        debug_assert_eq!(
            (decision.grid.m, decision.grid.n, decision.grid.k),
            (problem.m, problem.n, problem.k)
        );
        let devs: Vec<Arc<dyn Device>> = decision
            .devices
            .iter()
            .map(|&i| self.devices[i].clone())
            .collect();
        let (plan, cached) = self.plan(problem, &decision, &devs, !opts.no_peer_forwarding)?;
        report.planning_seconds = plan_start.elapsed().as_secs_f64();
        report.plan_cached = cached;
        report.tile = Some((decision.grid.tm, decision.grid.tn, decision.grid.tk));
        report.devices = devs.iter().map(|d| d.info().label()).collect();
        report.weights = decision.weights.clone();
        report.balancer_weights = decision.balancer_weights.clone();

        let workspace = self
            .workspaces
            .acquire(&self.devices, &decision.devices, &plan)?;
        let ws_addrs = Workspaces::addresses(&workspace, &decision.devices);
        let mut regions = host_regions(operands);
        if let Some((addr, bytes)) = workspace.host_region() {
            regions.push((addr, bytes, HostAccess::ReadWrite));
        }
        let _call = self.enter(&devs, &regions)?;
        let accelerators = devs.iter().filter(|d| !d.space().is_host()).count();
        for d in &devs {
            d.share_host(accelerators);
        }
        report.host_fold = plan.host_folds;
        let host_fold = if plan.host_folds {
            Some(self.workspaces.folder()?)
        } else {
            None
        };
        let outcome = execute::execute(&ExecRequest {
            plan: &plan,
            devices: &devs,
            workspaces: &ws_addrs,
            links: &self.links,
            operands: *operands,
            host_workspace: workspace.host_addr(),
            host_fold,
            alpha: alpha.to_value(),
            beta: beta.to_value(),
            trace: opts.trace,
        })
        .map_err(|e| name_device(e, &devs))?;
        report.stats = plan.stats();
        report.transfers = outcome.transfers;
        report.trace = outcome.trace;
        Ok(())
    }

    /// The autotuner's decision for `problem` under `opts`, on this pool's devices.
    fn decide(&self, problem: &GemmProblem, opts: &GemmOptions) -> Result<Decision> {
        let profile = self.profile();
        let held: Vec<u64> = (0..self.devices.len())
            .map(|i| self.workspaces.held(i))
            .collect();
        autotune::decide(&DecisionRequest {
            problem,
            devices: &self.devices,
            held: &held,
            profile: profile.as_deref(),
            link_bandwidth: &|s: MemorySpace, d: MemorySpace| self.link_bandwidth(s, d),
            only: opts.devices.as_deref(),
            forced: opts.forced_blocking(),
            memory_limit: opts.memory_limit,
            host_fold: opts.host_fold_mode(),
        })
    }

    /// The plan for a decision, from the cache or built.
    fn plan(
        &self,
        problem: &GemmProblem,
        decision: &Decision,
        devs: &[Arc<dyn Device>],
        forward: bool,
    ) -> Result<(Arc<Plan>, bool)> {
        let grid = &decision.grid;
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
                group: decision.group,
            })
            .collect();
        self.plans.get_or_build(&PlanInputs {
            problem: *problem,
            grid: *grid,
            device_ids: &decision.devices,
            devices: &specs,
            weights: &decision.weights,
            forward,
            host_fold: decision.host_fold,
            strip: decision.strip,
            links: &self.link_set,
            link_speed: &|s: MemorySpace, d: MemorySpace| self.link_bandwidth(s, d),
        })
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
    Ok((m, n, ak))
}

/// The host operands as regions the accelerators' DMA engines read (A, B) or write (C).
fn host_regions(operands: &[RawTile; 3]) -> Vec<(u64, usize, HostAccess)> {
    operands
        .iter()
        .enumerate()
        .filter(|(_, t)| t.space.is_host() && !t.is_empty())
        .map(|(i, t)| {
            let access = if i == 2 {
                HostAccess::ReadWrite
            } else {
                HostAccess::Read
            };
            (t.addr, t.extent_bytes(), access)
        })
        .collect()
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
