//! What each task of a plan costs on a profiled machine: the engine it occupies (a device's
//! compute engine, a link's DMA engine, the host fold), its time alone, and how much slower it
//! runs while other engines are busy (the slowdowns calibration measures).

use crate::error::{Error, Result};
use crate::link::LinkKind;
use crate::memory::MemorySpace;
use crate::model::exec::ExecTable;
use crate::model::link::{TileLink, STRIDED_PITCH};
use crate::plan::{Plan, QueueId, Task, TaskKind};
use crate::profile::{LinkProfile, MachineProfile, HOST_LABEL};
use crate::tiling::TileKey;
use crate::trace::Activity;

/// Contention factors never exceed this (PARALiA caps its link slowdowns at 2).
pub const MAX_SLOWDOWN: f64 = 2.0;

/// The engine a task occupies while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The compute engine of plan device `d` (its compute queues share it).
    Compute(u16),
    /// The DMA engine of link `i` (index into [`Costs::links`]).
    Link(usize),
    /// The host threads that fold products into C.
    Fold,
}

/// One link of the plan as the simulator sees it.
#[derive(Debug, Clone)]
pub struct SimLink {
    pub name: String,
    pub src: MemorySpace,
    pub dst: MemorySpace,
    pub kind: LinkKind,
    pub profile: LinkProfile,
    pub tile: TileLink,
    /// The plan device at the device end of a host link.
    pub device: Option<u16>,
}

/// A task's engine and time alone.
#[derive(Debug, Clone, Copy)]
pub struct TaskCost {
    pub engine: Engine,
    /// Seconds when nothing else runs.
    pub alone: f64,
}

/// Costs of every task of one plan, and what slows what.
#[derive(Debug, Clone)]
pub struct Costs {
    pub tasks: Vec<TaskCost>,
    pub links: Vec<SimLink>,
    /// Per plan device: its label in the profile.
    pub labels: Vec<String>,
    /// Per plan device: slowdown of a product while its host links copy.
    gemm_under_dma: Vec<f64>,
    /// Per plan device: slowdown of a host->device copy while it computes.
    copy_under_gemm: Vec<f64>,
}

impl Costs {
    /// Costs of `plan`'s tasks on `profile`, plan device `d` being the profile's device
    /// `labels[d]`.
    ///
    /// # Errors
    /// `Profile` when the profile lacks a device's GEMM table of the plan's dtype or a link the
    /// plan uses; `InvalidInput` when the labels do not match the plan.
    pub fn new(plan: &Plan, profile: &MachineProfile, labels: &[String]) -> Result<Costs> {
        if labels.len() != plan.devices.len() {
            return Err(Error::InvalidInput(format!(
                "simulator: {} device labels for a plan of {} devices",
                labels.len(),
                plan.devices.len()
            )));
        }
        let dtype = plan.problem.dtype;
        let mut tables: Vec<ExecTable> = Vec::new();
        let mut gemm_under_dma = Vec::new();
        let mut copy_under_gemm = Vec::new();
        for l in labels {
            let dp = profile
                .device(l)
                .ok_or_else(|| Error::Profile(format!("the profile has no device {l}")))?;
            tables.push(dp.exec_table(dtype).ok_or_else(|| {
                Error::Profile(format!("the profile has no {dtype} gemm table for {l}"))
            })?);
            gemm_under_dma.push(dp.gemm_slowdown_under_dma(dtype));
            copy_under_gemm.push(dp.copy_slowdown_under_gemm(dtype));
        }
        let label_of = |s: MemorySpace| -> Result<String> {
            if s.is_host() {
                return Ok(HOST_LABEL.to_string());
            }
            plan.devices
                .iter()
                .position(|d| d.space == s)
                .map(|d| labels[d].clone())
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "simulator: memory space {s:?} belongs to no device of the plan"
                    ))
                })
        };
        let device_of = |s: MemorySpace| plan.devices.iter().position(|d| d.space == s);
        let mut links: Vec<SimLink> = Vec::new();
        let mut link_index = |src: MemorySpace, dst: MemorySpace| -> Result<(usize, TileLink)> {
            if let Some(i) = links.iter().position(|l| l.src == src && l.dst == dst) {
                return Ok((i, links[i].tile.clone()));
            }
            let (sl, dl) = (label_of(src)?, label_of(dst)?);
            let lp = profile
                .link(&sl, &dl)
                .ok_or_else(|| Error::Profile(format!("the profile has no link {sl} -> {dl}")))?;
            let device = match lp.kind {
                LinkKind::HostToDevice => device_of(dst),
                LinkKind::DeviceToHost => device_of(src),
                LinkKind::Peer => None,
            }
            .map(|d| d as u16);
            links.push(SimLink {
                name: lp.name.clone(),
                src,
                dst,
                kind: lp.kind,
                tile: lp.tile_link(),
                profile: lp.clone(),
                device,
            });
            let i = links.len() - 1;
            Ok((i, links[i].tile.clone()))
        };
        let fold_rate = crate::autotune::fold_rate(Some(profile));
        let p = &plan.problem;
        let es = dtype.size();
        let mut tasks = Vec::with_capacity(plan.tasks.len());
        for t in &plan.tasks {
            let cost = match (t.kind, t.queue) {
                (TaskKind::Gemm { i, j, l, .. }, QueueId::Compute { device, .. }) => {
                    let g = &plan.grid;
                    let (m, n, k) = (
                        g.m_span(i as usize).1,
                        g.n_span(j as usize).1,
                        g.k_span(l as usize).1,
                    );
                    TaskCost {
                        engine: Engine::Compute(device),
                        alone: tables[device as usize].time_mnk(m, n, k),
                    }
                }
                (TaskKind::AddC { i, j, .. }, QueueId::Compute { device, .. }) => {
                    // y += beta * x reads two tiles and writes one: a memory-bound pass that
                    // the tables price like a product of depth 1.
                    let (r, c) = plan.grid.op_shape(TileKey::c(i as usize, j as usize));
                    TaskCost {
                        engine: Engine::Compute(device),
                        alone: tables[device as usize].time_mnk(r, c, 1),
                    }
                }
                (TaskKind::FoldC { key, .. }, QueueId::HostFold) => {
                    let (r, c) = plan.grid.op_shape(key);
                    TaskCost {
                        engine: Engine::Fold,
                        alone: (r * c * es) as f64 / fold_rate,
                    }
                }
                (kind, QueueId::Link { src, dst }) => {
                    let (li, tile) = link_index(src, dst)?;
                    let key = moved_key(kind).ok_or_else(|| {
                        Error::internal(format!("simulator: {kind:?} on a link queue"))
                    })?;
                    let block = plan.grid.stored_block(p, key);
                    // A tile of an operand in host memory moves as a 2D copy at the operand's
                    // pitch, unless it spans whole columns; slots are packed.
                    let host_side = touches_operand(kind) && (src.is_host() || dst.is_host());
                    let stored_rows = stored_rows(plan, key);
                    let contiguous = !host_side || block.rows == stored_rows;
                    let pitch = if host_side {
                        stored_rows * es
                    } else {
                        STRIDED_PITCH
                    };
                    TaskCost {
                        engine: Engine::Link(li),
                        // Copies of a pipeline run beside products: the busy table's speed.
                        alone: tile.tile_time(block.rows, block.cols, es, contiguous, pitch, 1.0),
                    }
                }
                (kind, q) => {
                    return Err(Error::internal(format!(
                        "simulator: task {kind:?} on queue {q:?}"
                    )))
                }
            };
            tasks.push(cost);
        }
        Ok(Costs {
            tasks,
            links,
            labels: labels.to_vec(),
            gemm_under_dma,
            copy_under_gemm,
        })
    }

    /// How many times slower than alone the task on `engine` runs while `busy` engines run.
    pub fn slowdown(&self, engine: Engine, busy: &[Engine]) -> f64 {
        match engine {
            Engine::Fold => 1.0,
            Engine::Compute(d) => {
                let dma = busy.iter().any(|e| match *e {
                    Engine::Link(i) => self.links[i].device == Some(d),
                    _ => false,
                });
                if dma {
                    self.gemm_under_dma[d as usize].min(MAX_SLOWDOWN)
                } else {
                    1.0
                }
            }
            Engine::Link(i) => {
                let me = &self.links[i];
                let mut f: f64 = 1.0;
                for e in busy {
                    match *e {
                        Engine::Link(j) if j != i => {
                            let other = &self.links[j];
                            let s = if other.src == me.dst && other.dst == me.src {
                                me.tile.model.bid_slowdown
                            } else {
                                me.profile.slowdown_under(&other.name)
                            };
                            f = f.max(s);
                        }
                        Engine::Compute(d)
                            if me.kind == LinkKind::HostToDevice && me.device == Some(d) =>
                        {
                            f = f.max(self.copy_under_gemm[d as usize]);
                        }
                        _ => {}
                    }
                }
                f.clamp(1.0, MAX_SLOWDOWN)
            }
        }
    }
}

/// The tile a copy task moves.
fn moved_key(kind: TaskKind) -> Option<TileKey> {
    match kind {
        TaskKind::Fetch { key, .. }
        | TaskKind::WriteBack { key, .. }
        | TaskKind::StageIn { key, .. }
        | TaskKind::StageOut { key, .. }
        | TaskKind::Unstage { key, .. } => Some(key),
        TaskKind::Gemm { .. } | TaskKind::AddC { .. } | TaskKind::FoldC { .. } => None,
    }
}

/// Whether one side of the copy is the operand itself (not a slot).
fn touches_operand(kind: TaskKind) -> bool {
    matches!(
        kind,
        TaskKind::Fetch {
            source: crate::plan::Source::Origin,
            ..
        } | TaskKind::WriteBack { .. }
            | TaskKind::StageIn { .. }
            | TaskKind::Unstage { .. }
    )
}

/// Rows of the stored operand a tile belongs to.
fn stored_rows(plan: &Plan, key: TileKey) -> usize {
    let p = &plan.problem;
    match key.op {
        crate::problem::Operand::A => p.transa.stored_shape(p.m, p.k).0,
        crate::problem::Operand::B => p.transb.stored_shape(p.k, p.n).0,
        crate::problem::Operand::C => p.m,
    }
}

/// What a task does, as the trace shows it: activity, label, bytes moved, flops. The labels
/// are the executor's, so that real and simulated timelines can be compared task by task.
pub fn describe(plan: &Plan, task: &Task) -> (Activity, String, u64, f64) {
    let es = plan.problem.dtype.size() as u64;
    let moved = |activity: Activity, verb: &str, key: TileKey| {
        let (r, c) = plan.grid.op_shape(key);
        (
            activity,
            format!("{verb} {:?}({},{})", key.op, key.r, key.c),
            (r * c) as u64 * es,
            0.0,
        )
    };
    match task.kind {
        TaskKind::Fetch { key, .. } => moved(Activity::Fetch, "fetch", key),
        TaskKind::WriteBack { key, .. } => moved(Activity::WriteBack, "writeback", key),
        TaskKind::StageIn { key, .. }
        | TaskKind::StageOut { key, .. }
        | TaskKind::Unstage { key, .. } => moved(Activity::Fetch, "stage", key),
        TaskKind::FoldC { key, .. } => moved(Activity::WriteBack, "fold", key),
        TaskKind::AddC { i, j, .. } => {
            let (r, c) = plan.grid.op_shape(TileKey::c(i as usize, j as usize));
            (
                Activity::Gemm,
                format!("add C({i},{j})"),
                0,
                plan.problem.dtype.flops_per_fma() * (r * c) as f64,
            )
        }
        TaskKind::Gemm { i, j, l, .. } => {
            let g = &plan.grid;
            let f = plan.problem.dtype.flops_per_fma()
                * g.m_span(i as usize).1 as f64
                * g.n_span(j as usize).1 as f64
                * g.k_span(l as usize).1 as f64;
            (Activity::Gemm, format!("gemm C({i},{j}) l={l}"), 0, f)
        }
    }
}
