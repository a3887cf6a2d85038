//! A GEMM [`Plan`] lowered to the simulator's task list: products and C additions on the
//! device's compute engine at its GEMM table's speed, copies on their link's DMA engine at the
//! link model's (2D copies at the operand's pitch), folds on the host fold at its measured
//! rate.

use super::costs::{Contention, Engine};
use super::engine::{Replay, SimTask, TaskList};
use crate::error::{Error, Result};
use crate::model::link::STRIDED_PITCH;
use crate::plan::{Plan, QueueId, Task, TaskId, TaskKind};
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
        // A task split in pieces (`Task::pieces`: a late C chain) is replayed as its pieces,
        // one after another on its queue, as the executor issues them: plan task `t` becomes
        // list ids `base[t]..base[t] + pieces`. The ids keep the plan's order (the host fold
        // queue takes its tasks by id), later ones shifted by the pieces before them;
        // `SimTask::task` maps back.
        let mut base = Vec::with_capacity(plan.tasks.len());
        let mut next: TaskId = 0;
        for t in &plan.tasks {
            base.push(next);
            next += TaskId::from(t.pieces.max(1));
        }
        let last_piece = |d: TaskId| {
            let n = TaskId::from(plan.tasks[d as usize].pieces.max(1));
            base[d as usize] + n - 1
        };
        // The host fold queue takes its tasks by id, so the first FoldC listed runs first.
        let mut first_fold = true;
        for (id, t) in plan.tasks.iter().enumerate() {
            let pieces = usize::from(t.pieces.max(1));
            // A piece's share of the C tile's columns (the executor's split).
            let piece_cols =
                |cols: usize, p: usize| crate::plan::piece_columns(cols, pieces, p).len();
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
                        vec![machine.tables[device as usize].time_mnk(m, n, k) * share],
                    )
                }
                (TaskKind::AddC { i, j, .. }, QueueId::Compute { device, .. }) => {
                    // y += beta * x reads two tiles and writes one: a memory-bound pass that
                    // the tables price like a product of depth 1.
                    let (r, c) = plan.grid.op_shape(TileKey::c(i as usize, j as usize));
                    let table = &machine.tables[device as usize];
                    let each: Vec<f64> = (0..pieces)
                        .map(|q| table.time_mnk(r, piece_cols(c, q), 1))
                        .collect();
                    (Engine::Compute(device), each)
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
                        vec![crate::fold::seconds(r * c * es, fold_rate) + wake],
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
                    let tile = &machine.links[li].tile;
                    let each: Vec<f64> = (0..pieces)
                        .map(|q| {
                            let cols = piece_cols(block.cols, q);
                            tile.tile_time(block.rows, cols, es, contiguous, pitch, 1.0)
                        })
                        .collect();
                    (Engine::Link(li), each)
                }
                (kind, q) => {
                    return Err(Error::internal(format!(
                        "simulator: task {kind:?} on queue {q:?}"
                    )))
                }
            };
            if alone.len() != pieces {
                return Err(Error::internal(format!(
                    "simulator: {:?} split in {pieces} pieces",
                    t.kind
                )));
            }
            let (activity, label, bytes, flops) = describe(plan, t);
            // The C tile's columns, which the pieces share (bytes: whole columns of it).
            let cols = chain_cols(plan, t.kind).max(1);
            debug_assert!(
                pieces == 1
                    || t.deps
                        .iter()
                        .filter(|&&d| {
                            crate::exec::execute::waits_piece_by_piece(t, &plan.tasks[d as usize])
                        })
                        .count()
                        <= 1,
                "a split task follows more than one chain piece by piece"
            );
            for (q, alone) in alone.into_iter().enumerate() {
                // Each piece waits for the same piece of its tile's chain before it (the
                // executor's rule), for anything else whole: its last piece.
                let deps = t
                    .deps
                    .iter()
                    .map(|&d| {
                        if crate::exec::execute::waits_piece_by_piece(t, &plan.tasks[d as usize]) {
                            base[d as usize] + q as TaskId
                        } else {
                            last_piece(d)
                        }
                    })
                    .collect();
                let (bytes, flops) = if pieces > 1 {
                    let own = piece_cols(cols, q);
                    (
                        bytes / cols as u64 * own as u64,
                        flops * own as f64 / cols as f64,
                    )
                } else {
                    (bytes, flops)
                };
                tasks.push(SimTask {
                    task: id as TaskId,
                    device: t.device,
                    queue: t.queue,
                    engine,
                    alone,
                    deps,
                    activity,
                    label: label.clone(),
                    bytes,
                    flops,
                });
            }
        }
        let order = plan
            .order
            .iter()
            .map(|o| {
                o.iter()
                    .flat_map(|&t| base[t as usize]..=last_piece(t))
                    .collect()
            })
            .collect();
        Ok(TaskList {
            tasks,
            order,
            machine,
        })
    }
}

/// Columns of the C tile a late C chain's task (fetch, add, write-back) works on.
fn chain_cols(plan: &Plan, kind: TaskKind) -> usize {
    match kind {
        TaskKind::AddC { i, j, .. } => plan.grid.op_shape(TileKey::c(i as usize, j as usize)).1,
        k => moved_key(k).map_or(1, |key| plan.grid.op_shape(key).1),
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

    /// The plan of `p` in `tile` tiles on one device that adds tiles (C may arrive late),
    /// folding C on the host or not.
    fn one_device_plan(p: GemmProblem, tile: usize, host_fold: bool) -> std::sync::Arc<Plan> {
        let dev = MemorySpace::new_device();
        let specs = [DeviceSpec {
            label: "cuda:0".into(),
            space: dev,
            budget: 64 << 30,
            compute_queues: 2,
            late_c: true,
            host_fold,
            fold_tail: 0,
            group: crate::tiling::DEFAULT_GROUP,
        }];
        let links: HashSet<_> = [(MemorySpace::HOST, dev), (dev, MemorySpace::HOST)].into();
        let (plan, _) = PlanCache::default()
            .get_or_build(&PlanInputs {
                problem: p,
                grid: Blocking::square(tile).grid(p.m, p.n, p.k),
                device_ids: &[0],
                devices: &specs,
                weights: &[1.0],
                forward: false,
                host_fold,
                fold_tail: 0,
                strip: None,
                links: &links,
                link_speed: &|_, _| None,
                tail_pieces: None,
            })
            .unwrap();
        plan
    }

    /// A late C chain split in pieces is replayed as its pieces, each after the same piece
    /// of its chain and moving its share of the tile's columns, and shown whole in the trace;
    /// a tile's write-back then starts under its own fetch.
    #[test]
    fn split_chains_replay_piece_by_piece() {
        let profile = MachineProfile::recorded("nvidia-h200-x1.json");
        // One k step: each C tile's fetch, add and write-back follow its product.
        let mut p = GemmProblem::host_dgemm(8192, 8192, 2048);
        p.transb = crate::operand::Trans::N;
        let plan = one_device_plan(p, 4096, false);
        let labels = ["cuda:0".to_string()];
        let list = plan.lower(&profile, &labels).unwrap();
        let pieces_of = |t: usize| -> Vec<usize> {
            (0..list.tasks.len())
                .filter(|&x| list.tasks[x].task as usize == t)
                .collect()
        };
        let extra: usize = plan.tasks.iter().map(|t| t.pieces as usize - 1).sum();
        assert!(extra > 0, "the plan splits no chain");
        assert_eq!(list.tasks.len(), plan.tasks.len() + extra);
        assert_eq!(list.order[0].len(), list.tasks.len());
        // An add in 8 pieces and the fetch of its C: each piece of the add waits for the same
        // piece of the fetch, not the whole fetch.
        let add = (0..plan.tasks.len())
            .find(|&t| matches!(plan.tasks[t].kind, TaskKind::AddC { .. }))
            .unwrap();
        assert_eq!(plan.tasks[add].pieces, 8);
        let fetch = plan.tasks[add]
            .deps
            .iter()
            .map(|&d| d as usize)
            .find(|&d| matches!(plan.tasks[d].kind, TaskKind::Fetch { .. }))
            .unwrap();
        let (adds, fetches) = (pieces_of(add), pieces_of(fetch));
        assert_eq!((adds.len(), fetches.len()), (8, 8));
        for q in 0..8 {
            let deps = &list.tasks[adds[q]].deps;
            assert!(
                deps.contains(&(fetches[q] as TaskId)),
                "piece {q}: {deps:?}"
            );
            assert!(
                !deps.contains(&(fetches[7] as TaskId)) || q == 7,
                "piece {q}"
            );
        }
        // The pieces of the fetch move the tile's bytes between them.
        let bytes: u64 = fetches.iter().map(|&x| list.tasks[x].bytes).sum();
        assert_eq!(bytes, 4096 * 4096 * 8);
        // The trace shows each plan task once; the tile's write-back starts before its
        // fetch ends.
        let sim = crate::sim::simulate(&crate::sim::SimRequest {
            plan: &*plan,
            profile: &profile,
            devices: &labels,
            queue_names: None,
        })
        .unwrap();
        assert_eq!(sim.trace.intervals.len(), plan.tasks.len());
        let (_, label, whole_bytes, _) = describe(&plan, &plan.tasks[fetch]);
        let at = |label: &str| {
            let i = sim.trace.intervals.iter().find(|i| i.label == label);
            i.unwrap_or_else(|| panic!("{label} not in the trace"))
        };
        let fetched = at(&label);
        assert_eq!(fetched.bytes, whole_bytes);
        let written = at(&label.replace("fetch", "writeback"));
        assert!(written.start < fetched.end, "{written:?} after {fetched:?}");
    }

    /// A plan that folds C on the host: each fold costs what the pipeline model prices it at
    /// (its bytes at the fold rate and the fixed task cost), the first also the fold threads'
    /// wake.
    #[test]
    fn folds_cost_their_bytes_their_task_and_the_first_the_wake() {
        let profile = MachineProfile::recorded("nvidia-h200-x1.json");
        let p = GemmProblem::host_dgemm(4096, 3072, 2048);
        let plan = one_device_plan(p, 1024, true);
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
