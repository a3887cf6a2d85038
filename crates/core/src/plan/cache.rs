//! The plan cache: plans carry no addresses, so a plan built for one call serves every later call
//! with the same problem signature, devices, tile, shares and budgets. Bounded, so that a code
//! with many shapes does not grow it forever.

use super::region::CRegion;
use super::task::{DeviceSpec, Plan};
use super::{build, distribute, symmetric};
use super::{PlanRequest, Request};
use crate::error::{lock, Result};
use crate::memory::MemorySpace;
use crate::problem::GemmProblem;
use crate::tiling::TileGrid;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// The most plans kept; the cache is emptied when it is full.
const CAPACITY: usize = 256;

/// What a plan is looked up and built from.
pub struct PlanInputs<'a> {
    pub problem: GemmProblem,
    pub grid: TileGrid,
    /// The pool's indices of the devices taking part (part of the key).
    pub device_ids: &'a [usize],
    /// Those devices as the planner sees them.
    pub devices: &'a [DeviceSpec],
    /// Each device's share of C.
    pub weights: &'a [f64],
    /// Forward tiles between devices over peer links.
    pub forward: bool,
    pub host_fold: bool,
    /// With `host_fold`: each device's last C tiles not folded ([`DeviceSpec::fold_tail`]).
    pub fold_tail: usize,
    /// The device that takes a strip of C's last rows instead of whole tiles.
    pub strip: Option<usize>,
    /// Directed links that exist.
    pub links: &'a HashSet<(MemorySpace, MemorySpace)>,
    /// Bandwidth of each link, for peer forwarding.
    pub link_speed: &'a dyn Fn(MemorySpace, MemorySpace) -> Option<f64>,
    /// The part of C computed ([`PlanRequest::region`]).
    pub region: CRegion,
    /// [`PlanRequest::tail_pieces`] (part of the key).
    pub tail_pieces: Option<usize>,
}

impl<'a> PlanInputs<'a> {
    /// The inputs of a plan over all of C with no forwarding, no host folds, no strip and
    /// late-C chains split by size; a caller sets the others by name over these.
    pub fn new(
        problem: GemmProblem,
        grid: TileGrid,
        device_ids: &'a [usize],
        devices: &'a [DeviceSpec],
        weights: &'a [f64],
        links: &'a HashSet<(MemorySpace, MemorySpace)>,
        link_speed: &'a dyn Fn(MemorySpace, MemorySpace) -> Option<f64>,
    ) -> Self {
        PlanInputs {
            problem,
            grid,
            device_ids,
            devices,
            weights,
            forward: false,
            host_fold: false,
            fold_tail: 0,
            strip: None,
            links,
            link_speed,
            region: CRegion::All,
            tail_pieces: None,
        }
    }
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
    fold_tail: usize,
    strip: Option<usize>,
    /// Shares per device, in 1e-4.
    weights: Vec<u32>,
    region: CRegion,
    /// [`PlanInputs::tail_pieces`].
    pieces: Option<usize>,
}

/// Plans by signature.
#[derive(Default)]
pub struct PlanCache {
    plans: Mutex<HashMap<PlanKey, Arc<Plan>>>,
}

impl PlanCache {
    /// The cached plan for `inputs` (and `true`), or a new one, built and cached (and `false`).
    ///
    /// # Errors
    /// What [`build`] reports.
    pub fn get_or_build(&self, inputs: &PlanInputs<'_>) -> Result<(Arc<Plan>, bool)> {
        let grid = &inputs.grid;
        let problem = &inputs.problem;
        let slot_bytes = grid.slot_bytes(problem.dtype.size()) as u64;
        let group = inputs.devices.first().map_or(1, |s| s.group);
        // Budgets enter the key only up to what the plan could use (every tile resident), so
        // ample memory that fluctuates between calls does not defeat the cache.
        let all_tiles =
            (grid.mt() * grid.kt() + grid.kt() * grid.nt() + grid.mt() * grid.nt()) as u64;
        let key = PlanKey {
            problem: *problem,
            devices: inputs.device_ids.to_vec(),
            tile: (grid.tm, grid.tn, grid.tk),
            group,
            budget_slots: inputs
                .devices
                .iter()
                .map(|s| (s.budget / slot_bytes).min(all_tiles))
                .collect(),
            forward: inputs.forward,
            host_fold: inputs.host_fold,
            fold_tail: inputs.fold_tail,
            strip: inputs.strip,
            weights: inputs
                .weights
                .iter()
                .map(|w| (w * 1e4).round() as u32)
                .collect(),
            region: inputs.region,
            pieces: inputs.tail_pieces,
        };
        if let Some(p) = lock(&self.plans).get(&key) {
            return Ok((p.clone(), true));
        }
        let assignment = match inputs.strip {
            Some(c) => distribute::with_strip(grid, c, inputs.weights),
            None => distribute::weighted_where(grid.mt(), grid.nt(), inputs.weights, &|i, j| {
                symmetric::has_c_tile(problem, i, j) && inputs.region.has_tile(i, j)
            }),
        };
        let plan = Arc::new(build(&Request::Gemm(PlanRequest {
            problem: *problem,
            grid: *grid,
            devices: inputs.devices,
            assignment: &assignment,
            links: inputs.links,
            link_speed: (inputs.forward && inputs.device_ids.len() > 1)
                .then_some(inputs.link_speed),
            region: inputs.region,
            tail_pieces: inputs.tail_pieces,
        }))?);
        let mut cache = lock(&self.plans);
        if cache.len() >= CAPACITY {
            cache.clear();
        }
        cache.insert(key, plan.clone());
        Ok((plan, false))
    }

    /// Drops every plan (their tiles or shares may no longer be what the autotuner decides).
    pub fn clear(&self) {
        lock(&self.plans).clear();
    }

    /// Number of plans held.
    pub(crate) fn len(&self) -> usize {
        lock(&self.plans).len()
    }
}
