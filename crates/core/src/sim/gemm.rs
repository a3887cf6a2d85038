//! A GEMM [`Plan`] lowered to the simulator's task list: products and C additions on the
//! device's compute engine at its GEMM table's speed, copies on their link's DMA engine at the
//! link model's (2D copies at the operand's pitch), folds on the host fold at its measured
//! rate.

use super::costs::{Contention, Engine};
use super::engine::{Replay, SimTask, TaskList};
use crate::error::{Error, Result};
use crate::model::link::STRIDED_PITCH;
use crate::plan::{Plan, QueueId, Task, TaskKind};
use crate::profile::MachineProfile;
use crate::tiling::TileKey;
use crate::trace::Activity;

impl Replay for Plan {
    fn lower(&self, profile: &MachineProfile, labels: &[String]) -> Result<TaskList> {
        let plan = self;
        let spaces: Vec<_> = plan.devices.iter().map(|d| d.space).collect();
        let mut machine = Contention::new(profile, labels, &spaces, plan.problem.dtype)?;
        let fold_rate = crate::autotune::fold_rate(Some(profile));
        let p = &plan.problem;
        let es = p.dtype.size();
        let mut tasks = Vec::with_capacity(plan.tasks.len());
        // The host fold queue takes its tasks by id, so the first FoldC listed runs first.
        let mut first_fold = true;
        for t in &plan.tasks {
            let (engine, alone) = match (t.kind, t.queue) {
                (TaskKind::Gemm { i, j, l, .. }, QueueId::Compute { device, .. }) => {
                    let g = &plan.grid;
                    let (m, n, k) = (
                        g.m_span(i as usize).1,
                        g.n_span(j as usize).1,
                        g.k_span(l as usize).1,
                    );
                    // A routine's own product (a rank update's diagonal tile: its triangle)
                    // is priced by its flops at the GEMM rate of the tile: priced as the whole
                    // tile, DSYRK 16384 on H200 came out 14-31% slow in 4096-8192 tiles and
                    // 6% in 1024 tiles, and the model chose 1024 (7% off the best).
                    let gemm_flops = plan.problem.dtype.flops_per_fma() * (m * n * k) as f64;
                    let share = if gemm_flops > 0.0 {
                        plan.product_flops(i as usize, j as usize, l as usize) / gemm_flops
                    } else {
                        1.0
                    };
                    (
                        Engine::Compute(device),
                        machine.tables[device as usize].time_mnk(m, n, k) * share,
                    )
                }
                (TaskKind::AddC { i, j, .. }, QueueId::Compute { device, .. }) => {
                    // y += beta * x reads two tiles and writes one: a memory-bound pass that
                    // the tables price like a product of depth 1.
                    let (r, c) = plan.grid.op_shape(TileKey::c(i as usize, j as usize));
                    (
                        Engine::Compute(device),
                        machine.tables[device as usize].time_mnk(r, c, 1),
                    )
                }
                (TaskKind::FoldC { key, .. }, QueueId::HostFold) => {
                    // As the pipeline model prices a fold: its bytes at the fold rate, its
                    // fixed cost, and for the call's first the fold threads' wake.
                    let (r, c) = plan.grid.op_shape(key);
                    let wake = if std::mem::replace(&mut first_fold, false) {
                        crate::fold::FIRST_S
                    } else {
                        0.0
                    };
                    (
                        Engine::Fold,
                        crate::fold::seconds(r * c * es, fold_rate) + wake,
                    )
                }
                (kind, QueueId::Link { src, dst }) => {
                    let li = machine.link(profile, src, dst)?;
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
                    // Copies of a pipeline run beside products: the busy table's speed.
                    let alone = machine.links[li]
                        .tile
                        .tile_time(block.rows, block.cols, es, contiguous, pitch, 1.0);
                    (Engine::Link(li), alone)
                }
                (kind, q) => {
                    return Err(Error::internal(format!(
                        "simulator: task {kind:?} on queue {q:?}"
                    )))
                }
            };
            let (activity, label, bytes, flops) = describe(plan, t);
            tasks.push(SimTask {
                device: t.device,
                queue: t.queue,
                engine,
                alone,
                deps: t.deps.clone(),
                activity,
                label,
                bytes,
                flops,
            });
        }
        Ok(TaskList {
            tasks,
            order: plan.order.clone(),
            machine,
        })
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
            let f = plan.product_flops(i as usize, j as usize, l as usize);
            (Activity::Gemm, format!("gemm C({i},{j}) l={l}"), 0, f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;
    use crate::plan::cache::{PlanCache, PlanInputs};
    use crate::plan::DeviceSpec;
    use crate::problem::GemmProblem;
    use crate::tiling::Blocking;
    use std::collections::HashSet;

    /// A plan that folds C on the host: each fold costs what the pipeline model prices it at
    /// (its bytes at the fold rate and the fixed task cost), the first also the fold threads'
    /// wake.
    #[test]
    fn folds_cost_their_bytes_their_task_and_the_first_the_wake() {
        let profile = MachineProfile::recorded("nvidia-h200-x1.json");
        let dev = MemorySpace::new_device();
        let p = GemmProblem::host_dgemm(4096, 3072, 2048);
        let specs = [DeviceSpec {
            label: "cuda:0".into(),
            space: dev,
            budget: 64 << 30,
            compute_queues: 2,
            late_c: true,
            host_fold: true,
            fold_tail: 0,
            group: crate::tiling::DEFAULT_GROUP,
        }];
        let links: HashSet<_> = [(MemorySpace::HOST, dev), (dev, MemorySpace::HOST)].into();
        let (plan, _) = PlanCache::default()
            .get_or_build(&PlanInputs {
                problem: p,
                grid: Blocking::square(1024).grid(p.m, p.n, p.k),
                device_ids: &[0],
                devices: &specs,
                weights: &[1.0],
                forward: false,
                host_fold: true,
                fold_tail: 0,
                strip: None,
                links: &links,
                link_speed: &|_, _| None,
            })
            .unwrap();
        let list = plan.lower(&profile, &["cuda:0".to_string()]).unwrap();
        let folds: Vec<f64> = list
            .tasks
            .iter()
            .filter(|t| t.engine == Engine::Fold)
            .map(|t| t.alone)
            .collect();
        assert_eq!(folds.len(), 12, "one fold per C tile");
        let rate = crate::autotune::fold_rate(Some(&profile));
        let each = (1024 * 1024 * 8) as f64 / rate + crate::fold::TASK_S;
        assert!(
            (folds[0] - each - crate::fold::FIRST_S).abs() < 1e-12,
            "{folds:?}"
        );
        for f in &folds[1..] {
            assert!((f - each).abs() < 1e-12, "{folds:?}");
        }
    }
}
