//! `DevicePool`: the device registry (devices, the links between their memory spaces and the
//! host, the machine profile) and the GEMM call path over it (`gemm`: argument checks, quick
//! returns, the autotuner's decision and the plan, each cached, the workspaces, execution).

mod calibrate;
mod decisions;
mod gemm;
mod matrices;
mod options;
mod workspace;

pub use options::{GemmOptions, GemmReport};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::link::Link;
use crate::memory::MemorySpace;
use crate::plan::cache::PlanCache;
use crate::problem::GemmProblem;
use crate::profile::MachineProfile;
use decisions::DecisionCache;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use workspace::Workspaces;

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
    /// One call at a time uses the workspaces.
    call: Mutex<()>,
    workspaces: Workspaces,
    plans: PlanCache,
    decisions: DecisionCache,
    /// The calibrated machine profile, when one matches these devices.
    profile: RwLock<Option<Arc<MachineProfile>>>,
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
            workspaces: Workspaces::new(devices.len()),
            devices,
            links: map,
            link_set,
            call: Mutex::new(()),
            plans: PlanCache::default(),
            decisions: DecisionCache::default(),
            profile: RwLock::new(None),
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
        self.plans.clear();
        self.decisions.clear();
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

    /// What the calibrated profile predicts for `problem` when the autotuner chooses the
    /// devices (every subset balanced, the fastest kept): the devices and the predicted
    /// seconds. `None` without a profile, or when it lacks some device's GEMM rate.
    pub fn predict_gemm(&self, problem: &GemmProblem) -> Option<GemmPrediction> {
        let profile = self.profile()?;
        let tile = crate::autotune::provisional_tile(problem, None);
        let bw = |s, d| self.link_bandwidth(s, d);
        let c = crate::autotune::choose_pool_devices(
            problem,
            &self.devices,
            tile,
            Some(&profile),
            &bw,
        )?;
        Some(GemmPrediction {
            devices: c.devices,
            seconds: c.predicted,
        })
    }

    fn device(&self, idx: usize) -> Result<&Arc<dyn Device>> {
        self.devices.get(idx).ok_or_else(|| {
            Error::InvalidInput(format!(
                "device index {idx} out of range (pool has {})",
                self.devices.len()
            ))
        })
    }
}

impl Drop for DevicePool {
    fn drop(&mut self) {
        // The staging workspace may be page-locked by the devices: release before freeing.
        self.workspaces.release_host(&self.devices);
    }
}
