//! A machine known only by its profile (measured elsewhere, or synthetic), planned for as the
//! pool would plan on it, so that `hetblas simulate` answers for 4 or 8 GPUs with none present.

use super::engine::{simulate, SimRequest, Simulation};
use crate::balance::{tile_counts, DeviceRate};
use crate::energy::{choose_subset_for, Objective};
use crate::error::{Error, Result};
use crate::memory::MemorySpace;
use crate::model::exec::ExecTable;
use crate::plan::cache::{PlanCache, PlanInputs};
use crate::plan::{DeviceSpec, Plan, Request, TriRequest};
use crate::problem::triangular::TriProblem;
use crate::problem::GemmProblem;
use crate::profile::{DeviceProfile, MachineProfile, HOST_LABEL};
use crate::scalar::DType;
use crate::tiling::Blocking;
use std::collections::HashSet;

/// Device `label` of `profile`.
fn device<'p>(profile: &'p MachineProfile, label: &str) -> Result<&'p DeviceProfile> {
    profile
        .device(label)
        .ok_or_else(|| Error::InvalidInput(format!("the profile has no device {label}")))
}

/// The profile's devices, each given a memory space of its own.
pub struct ProfiledMachine {
    pub profile: MachineProfile,
    /// Candidate devices (profile labels).
    pub labels: Vec<String>,
    spaces: Vec<MemorySpace>,
}

/// A plan for a profiled machine and what it was built from.
#[derive(Debug, Clone)]
pub struct MachinePlan {
    pub plan: Plan,
    /// Per plan device: its label.
    pub labels: Vec<String>,
    /// Per plan device: its share of the output.
    pub weights: Vec<f64>,
    /// The tiles (a triangular plan's: square, of its tile).
    pub blocking: Blocking,
}

impl ProfiledMachine {
    /// The machine of `profile`, using `labels` (default: every device that is not the CPU).
    ///
    /// # Errors
    /// `InvalidInput` for a label the profile does not have, or no device at all.
    pub fn new(profile: MachineProfile, labels: Option<Vec<String>>) -> Result<ProfiledMachine> {
        let labels = labels.unwrap_or_else(|| {
            profile
                .devices
                .iter()
                .filter(|d| d.backend != "cpu")
                .map(|d| d.label.clone())
                .collect()
        });
        if labels.is_empty() {
            return Err(Error::InvalidInput("the profile has no accelerator".into()));
        }
        let spaces = labels
            .iter()
            .map(|l| {
                let cpu = device(&profile, l)?.backend == "cpu";
                Ok(if cpu {
                    MemorySpace::HOST
                } else {
                    MemorySpace::new_device()
                })
            })
            .collect::<Result<_>>()?;
        Ok(ProfiledMachine {
            profile,
            labels,
            spaces,
        })
    }

    /// The GEMM table of `dtype` of device `l`.
    fn table(&self, l: &str, dtype: DType) -> Result<ExecTable> {
        device(&self.profile, l)?
            .exec_table(dtype)
            .ok_or_else(|| Error::Profile(format!("no {dtype} gemm table for {l}")))
    }

    /// Candidate `i` for the planner, with what the pool leaves for tiles after the runtime's
    /// own use.
    fn spec(&self, i: usize, compute_queues: u16) -> DeviceSpec {
        let budget = self.profile.device(&self.labels[i]);
        let budget = budget.map_or(0, |d| d.memory_bytes / 10 * 9);
        DeviceSpec::new(
            self.labels[i].clone(),
            self.spaces[i],
            budget,
            compute_queues,
        )
    }

    fn rates(&self, p: &GemmProblem, tile: usize) -> Result<Vec<DeviceRate>> {
        self.labels
            .iter()
            .zip(&self.spaces)
            .map(|(l, s)| {
                let t = self.table(l, p.dtype)?;
                let flops = t.rate(tile.min(p.m.max(p.n).max(p.k)).max(1));
                if s.is_host() {
                    return Ok(DeviceRate {
                        flops_per_sec: flops,
                        host_bytes_per_sec: None,
                        overhead: 50e-6,
                    });
                }
                let bw = self
                    .profile
                    .link(HOST_LABEL, l)
                    .map_or(f64::INFINITY, |k| k.bytes_per_sec);
                Ok(DeviceRate {
                    flops_per_sec: flops,
                    host_bytes_per_sec: Some(bw),
                    overhead: crate::autotune::GPU_CALL_SETUP_S
                        + 2.0 * (tile * tile * p.dtype.size()) as f64 / bw,
                })
            })
            .collect()
    }

    /// Plans `p` (operands in host memory) with `blocking` on the subset chosen for
    /// `objective` (or on `only`, candidate indices, when given).
    ///
    /// # Errors
    /// What the profile lacks, and what the plan builder reports.
    pub fn plan(
        &self,
        p: &GemmProblem,
        blocking: Blocking,
        objective: Objective,
        only: Option<&[usize]>,
    ) -> Result<MachinePlan> {
        self.plan_folded(p, blocking, objective, only, (false, 0))
    }

    /// [`ProfiledMachine::plan`] with C folded on the host (`fold.0`, beta != 0 and C in host
    /// memory) but for `fold.1` tiles sent whole, as the pool plans a decision that folds.
    ///
    /// # Errors
    /// As [`ProfiledMachine::plan`].
    pub fn plan_folded(
        &self,
        p: &GemmProblem,
        blocking: Blocking,
        objective: Objective,
        only: Option<&[usize]>,
        (host_fold, fold_tail): (bool, usize),
    ) -> Result<MachinePlan> {
        let all = self.rates(p, blocking.tm)?;
        let devices: Vec<usize> = match only {
            Some(o) => o.to_vec(),
            None => {
                let power: Option<Vec<(f64, f64)>> = self
                    .labels
                    .iter()
                    .map(|l| self.profile.power_of(l))
                    .collect();
                choose_subset_for(p, &all, power.as_deref(), objective)
                    .0
                    .subset
                    .devices
            }
        };
        let sub: Vec<DeviceRate> = devices.iter().map(|&i| all[i]).collect();
        let grid = blocking.grid(p.m, p.n, p.k);
        let shares = crate::balance::balance(p, &sub).weights;
        let n = grid.mt() * grid.nt();
        let weights: Vec<f64> = if devices.len() > 1 {
            tile_counts(p, &sub, &shares, n)
                .iter()
                .map(|&c| c as f64 / n as f64)
                .collect()
        } else {
            vec![1.0]
        };
        let queues = if grid.tm.min(grid.tn).min(grid.tk) >= 2048 {
            1
        } else {
            2
        };
        let specs: Vec<DeviceSpec> = devices
            .iter()
            .map(|&i| DeviceSpec {
                late_c: true,
                host_fold,
                fold_tail,
                group: blocking.group,
                ..self.spec(i, queues)
            })
            .collect();
        // The host, then the candidates: (label, memory space).
        let ends: Vec<(&str, MemorySpace)> = std::iter::once((HOST_LABEL, MemorySpace::HOST))
            .chain(
                self.labels
                    .iter()
                    .map(String::as_str)
                    .zip(self.spaces.clone()),
            )
            .collect();
        let space_of = |label: &str| ends.iter().find(|e| e.0 == label).map(|e| e.1);
        let label_of = |x: MemorySpace| ends.iter().find(|e| e.1 == x).map(|e| e.0);
        let links: HashSet<_> = self
            .profile
            .links
            .iter()
            .filter_map(|l| Some((space_of(&l.src_label)?, space_of(&l.dst_label)?)))
            .collect();
        let speed = |s: MemorySpace, d: MemorySpace| {
            Some(self.profile.link(label_of(s)?, label_of(d)?)?.bytes_per_sec)
        };
        let (plan, _) = PlanCache::default().get_or_build(&PlanInputs {
            forward: true,
            host_fold,
            fold_tail,
            ..PlanInputs::new(*p, grid, &devices, &specs, &weights, &links, &speed)
        })?;
        Ok(MachinePlan {
            plan: (*plan).clone(),
            labels: devices.iter().map(|&i| self.labels[i].clone()).collect(),
            weights,
            blocking,
        })
    }

    /// Plans the TRSM or TRMM `p` (A and B in host memory) at square tile `tile` on the
    /// candidates `only` (indices; default: every candidate): B's panels dealt one by one to
    /// the device that would finish its share first at its GEMM rate, each device solving its
    /// own diagonal tiles, two compute queues (the look-ahead), two panels resident.
    ///
    /// # Errors
    /// `Profile` without a GEMM table of the dtype; what the triangular planner reports.
    pub fn plan_tri(
        &self,
        p: &TriProblem,
        tile: usize,
        only: Option<&[usize]>,
    ) -> Result<MachinePlan> {
        let devices: Vec<usize> = match only {
            Some(o) => o.to_vec(),
            None => (0..self.labels.len()).collect(),
        };
        if devices.is_empty() || tile == 0 {
            return Err(Error::InvalidInput(
                "a triangular plan needs a device and a positive tile".into(),
            ));
        }
        let mut rates = Vec::new();
        let mut specs = Vec::new();
        for &i in &devices {
            let l = self
                .labels
                .get(i)
                .ok_or_else(|| Error::InvalidInput(format!("no candidate device {i}")))?;
            rates.push(self.table(l, p.dtype)?.rate(tile));
            specs.push(self.spec(i, 2));
        }
        let np = p.b_lines().div_ceil(tile);
        let (load, assignment) = crate::plan::tri::deal_panels(np, &rates, devices.len());
        let plan = crate::plan::build(&Request::Tri(TriRequest {
            problem: *p,
            locations: [MemorySpace::HOST; 2],
            tile,
            panel: tile,
            devices: &specs,
            assignment: &assignment,
            solver: None,
            resident_panels: 2,
        }))?;
        Ok(MachinePlan {
            plan,
            labels: devices.iter().map(|&i| self.labels[i].clone()).collect(),
            weights: load.iter().map(|&l| l / np.max(1) as f64).collect(),
            blocking: Blocking::square(tile),
        })
    }

    /// The tile among `candidates` whose triangular plan simulates fastest, with its plan and
    /// simulation.
    ///
    /// # Errors
    /// When no candidate can be planned and simulated: the last error.
    pub fn best_tri_tile(
        &self,
        p: &TriProblem,
        candidates: &[usize],
        only: Option<&[usize]>,
    ) -> Result<(MachinePlan, Simulation)> {
        self.best_of(candidates, |t| self.plan_tri(p, t, only), |s| s.makespan)
    }

    /// Simulates a plan made by [`ProfiledMachine::plan`].
    ///
    /// # Errors
    /// What [`simulate`] reports.
    pub fn simulate(&self, mp: &MachinePlan) -> Result<Simulation> {
        simulate(&SimRequest {
            plan: &mp.plan,
            profile: &self.profile,
            devices: &mp.labels,
            queue_names: None,
        })
    }

    /// The square tile among `candidates` whose plan simulates fastest (or cheapest in
    /// energy, per `objective`), with its plan and simulation.
    ///
    /// # Errors
    /// When no candidate can be planned and simulated: the last error.
    pub fn best_tile(
        &self,
        p: &GemmProblem,
        candidates: &[usize],
        objective: Objective,
        only: Option<&[usize]>,
    ) -> Result<(MachinePlan, Simulation)> {
        let plan = |t| self.plan(p, Blocking::square(t), objective, only);
        self.best_of(candidates, plan, |s| {
            let joules = s.energy(|l| self.profile.power_of(l));
            crate::energy::score(objective, s.makespan, joules)
        })
    }

    /// The tile among `candidates` whose plan (by `plan`) simulates with the least `score`
    /// (the first of equal scores), with its plan and simulation; else the last error.
    fn best_of(
        &self,
        candidates: &[usize],
        plan: impl Fn(usize) -> Result<MachinePlan>,
        score: impl Fn(&Simulation) -> f64,
    ) -> Result<(MachinePlan, Simulation)> {
        let mut best: Option<(f64, MachinePlan, Simulation)> = None;
        let mut last = None;
        for &t in candidates {
            match plan(t).and_then(|mp| self.simulate(&mp).map(|s| (mp, s))) {
                Ok((mp, s)) => {
                    let x = score(&s);
                    if best.as_ref().is_none_or(|b| x < b.0) {
                        best = Some((x, mp, s));
                    }
                }
                Err(e) => last = Some(e),
            }
        }
        best.map(|(_, mp, s)| (mp, s))
            .ok_or_else(|| last.unwrap_or_else(|| Error::InvalidInput("no tile candidate".into())))
    }
}
