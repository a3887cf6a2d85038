//! A TRSM/TRMM [`TriPlan`] (a DAG of tile tasks) lowered to the simulator's task list, so the
//! same engine replays it with the predecessors the planner derived, its queues and link
//! contention: updates are GEMM tiles at the device's GEMM table's speed; a diagonal solve or
//! multiply is half a GEMM of its tile at that speed times the device's triangular efficiency
//! ([`MachineProfile::tri_efficiency_of`], [`crate::model::tri::TRI_EFFICIENCY`] unless the
//! profile says otherwise); fetches and write-backs of tiles use the link models, as 2D copies
//! at the operand's pitch when the tile does not span whole columns.

use super::costs::{Contention, Engine};
use super::engine::{Replay, SimTask, TaskList};
use crate::error::{Error, Result};
use crate::plan::tri::{TriKey, TriPlan, TriTaskKind};
use crate::plan::QueueId;
use crate::profile::MachineProfile;

impl Replay for TriPlan {
    fn lower(&self, profile: &MachineProfile, labels: &[String]) -> Result<TaskList> {
        let plan = self;
        let p = &plan.problem;
        let spaces: Vec<_> = plan.devices.iter().map(|d| d.space).collect();
        let mut machine = Contention::new(profile, labels, &spaces, p.dtype)?;
        let efficiency: Vec<f64> = labels
            .iter()
            .map(|l| profile.tri_efficiency_of(l))
            .collect();
        let es = p.dtype.size();
        let mut tasks = Vec::with_capacity(plan.tasks.len());
        for (id, t) in plan.tasks.iter().enumerate() {
            let (engine, alone) = match (t.kind, t.queue) {
                (TriTaskKind::Diag { k, j, .. }, QueueId::Compute { device, .. }) => {
                    let b = plan.block(TriKey::B { k, j });
                    let order = plan.block_span(k as usize).1;
                    let d = device as usize;
                    (
                        Engine::Compute(device),
                        0.5 * machine.tables[d].time_mnk(b.rows, b.cols, order) / efficiency[d],
                    )
                }
                (TriTaskKind::Update { i, k, j, .. }, QueueId::Compute { device, .. }) => {
                    let c = plan.block(TriKey::B { k: i, j });
                    let kk = plan.block_span(k as usize).1;
                    (
                        Engine::Compute(device),
                        machine.tables[device as usize].time_mnk(c.rows, c.cols, kk),
                    )
                }
                (
                    TriTaskKind::Fetch { key, .. } | TriTaskKind::WriteBack { key, .. },
                    QueueId::Link { src, dst },
                ) => {
                    let li = machine.link(profile, src, dst)?;
                    let block = plan.block(key);
                    // The operand's side of the copy is a block of the stored matrix (pitch:
                    // its rows, the plan knowing no larger leading dimension); slots are packed.
                    let stored_rows = match key {
                        TriKey::A { .. } => p.a_order(),
                        TriKey::B { .. } => p.m,
                    };
                    let host_side = src.is_host() || dst.is_host();
                    let contiguous = !host_side || block.rows == stored_rows;
                    let alone = machine.links[li].tile.tile_time(
                        block.rows,
                        block.cols,
                        es,
                        contiguous,
                        stored_rows * es,
                        1.0,
                    );
                    (Engine::Link(li), alone)
                }
                (kind, q) => {
                    return Err(Error::internal(format!(
                        "simulator: triangular task {kind:?} on queue {q:?}"
                    )))
                }
            };
            let (activity, label, bytes, flops) = plan.describe(t);
            tasks.push(SimTask {
                task: id as crate::plan::TaskId,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;
    use crate::operand::Trans;
    use crate::plan::tri::{build_tri, TriDeviceSpec, TriPlanRequest};
    use crate::problem::triangular::{Diag, Side, TriOptions, TriProblem, TriRoutine, Uplo};
    use crate::scalar::DType;
    use crate::sim::{simulate, SimRequest, Synthetic};

    fn h200x2() -> MachineProfile {
        let text = include_str!("../../../../docs/profiles/nvidia-h200-x2.json");
        MachineProfile::from_json(text, "nvidia-h200-x2.json").unwrap()
    }

    /// A left, lower DTRSM (or DTRMM) of order `n` on `devices` GPUs of host operands, panels
    /// dealt round-robin, two compute queues each (look-ahead).
    fn plan(routine: TriRoutine, n: usize, tile: usize, devices: usize) -> TriPlan {
        let specs: Vec<TriDeviceSpec> = (0..devices)
            .map(|d| TriDeviceSpec {
                label: format!("cuda:{d}"),
                space: MemorySpace::new_device(),
                budget: 100 << 30,
                compute_queues: 2,
            })
            .collect();
        let np = n.div_ceil(tile);
        let mut assignment = vec![Vec::new(); devices];
        for j in 0..np {
            assignment[j % devices].push(j);
        }
        build_tri(&TriPlanRequest {
            problem: TriProblem {
                routine,
                opts: TriOptions {
                    side: Side::Left,
                    uplo: Uplo::Lower,
                    transa: Trans::N,
                    diag: Diag::NonUnit,
                },
                m: n,
                n,
                dtype: DType::F64,
            },
            locations: [MemorySpace::HOST; 2],
            tile,
            panel: tile,
            devices: &specs,
            assignment: &assignment,
            solver: None,
            resident_panels: 2,
        })
        .unwrap()
    }

    fn labels(n: usize) -> Vec<String> {
        (0..n).map(|d| format!("cuda:{d}")).collect()
    }

    fn run(plan: &TriPlan, profile: &MachineProfile) -> crate::sim::Simulation {
        simulate(&SimRequest {
            plan,
            profile,
            devices: &labels(plan.devices.len()),
            queue_names: None,
        })
        .unwrap()
    }

    /// Without compute slowed by DMA, each device's compute time is exactly its updates at the
    /// GEMM table's speed plus its diagonal tiles at half a GEMM over the profile's efficiency;
    /// changing one device's efficiency moves its time by exactly its diagonal work.
    #[test]
    fn diagonal_tiles_cost_gemm_time_over_the_efficiency() {
        let mut profile = h200x2();
        for d in &mut profile.devices {
            d.gemm_under_dma.clear();
        }
        let p = plan(TriRoutine::Trsm, 8192, 2048, 2);
        let mut diag = [0.0; 2];
        let mut update = [0.0; 2];
        for t in &p.tasks {
            let d = t.device as usize;
            let table = profile
                .device(&labels(2)[d])
                .unwrap()
                .exec_table(DType::F64)
                .unwrap();
            match t.kind {
                TriTaskKind::Diag { .. } => diag[d] += 0.5 * table.time(2048),
                TriTaskKind::Update { .. } => update[d] += table.time(2048),
                _ => {}
            }
        }
        let base = run(&p, &profile);
        let eff = crate::model::tri::TRI_EFFICIENCY;
        for d in 0..2 {
            let want = update[d] + diag[d] / eff;
            let got = base.devices[d].compute_s;
            assert!(
                (got - want).abs() < 1e-9 * want,
                "device {d}: {got} against {want}"
            );
        }
        profile.tri_efficiency.push(("cuda:1".into(), 0.25));
        let slower = run(&p, &profile);
        let same = (slower.devices[0].compute_s - base.devices[0].compute_s).abs();
        assert!(same < 1e-12, "device 0 moved by {same}");
        let moved = slower.devices[1].compute_s - base.devices[1].compute_s;
        let want = diag[1] / 0.25 - diag[1] / eff;
        assert!((moved - want).abs() < 1e-9 * want, "{moved} against {want}");
        assert!(slower.makespan > base.makespan);
    }

    /// The replay honours the DAG and the queues, and its makespan lies between what no
    /// schedule beats (each device's compute alone, the longest chain of dependent tasks) and
    /// everything run one after another.
    #[test]
    fn makespan_lies_between_the_dag_bounds() {
        let profile = h200x2();
        for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
            for devices in [1, 2] {
                let p = plan(routine, 16384, 2048, devices);
                let s = run(&p, &profile);
                assert_eq!(s.trace.intervals.len(), p.tasks.len());
                let mut span = vec![(f64::NAN, f64::NAN); p.tasks.len()];
                let mut by_label = std::collections::HashMap::new();
                for iv in &s.trace.intervals {
                    by_label.insert((iv.device.clone(), iv.label.clone()), (iv.start, iv.end));
                }
                for (q, tasks) in &s.order {
                    let mut prev = 0.0f64;
                    for &t in tasks {
                        let task = &p.tasks[t as usize];
                        let (_, label, _, _) = p.describe(task);
                        let (st, en) =
                            by_label[&(labels(devices)[task.device as usize].clone(), label)];
                        assert!(st >= prev - 1e-12, "{q}: task {t} overlaps its predecessor");
                        prev = en;
                        span[t as usize] = (st, en);
                    }
                }
                let mut chain = vec![0.0f64; p.tasks.len()];
                for (t, task) in p.tasks.iter().enumerate() {
                    let own = span[t].1 - span[t].0;
                    for &d in &task.deps {
                        assert!(span[t].0 >= span[d as usize].1 - 1e-12, "{t} before {d}");
                    }
                    chain[t] = task
                        .deps
                        .iter()
                        .map(|&d| chain[d as usize])
                        .fold(0.0, f64::max)
                        + own;
                }
                let longest = chain.iter().copied().fold(0.0, f64::max);
                let total: f64 = span.iter().map(|(a, b)| b - a).sum();
                let busiest = s.devices.iter().map(|d| d.compute_s).fold(0.0, f64::max);
                assert!(
                    s.makespan >= longest * (1.0 - 1e-9),
                    "{routine:?} x{devices}"
                );
                assert!(
                    s.makespan >= busiest * (1.0 - 1e-9),
                    "{routine:?} x{devices}"
                );
                assert!(
                    s.makespan < total,
                    "{routine:?} x{devices}: nothing overlapped"
                );
                // 16384 at tile 2048 is compute-bound on an H200: the GPUs are busy most of
                // the time.
                assert!(
                    s.devices.iter().all(|d| d.share > 0.6),
                    "{routine:?} x{devices}: {:?}",
                    s.devices
                );
            }
        }
    }

    /// Host links that slow each other down lengthen a link-bound DAG on several GPUs (a 4096
    /// DTRSM at tile 1024 on four H200s: each 8 MB tile takes longer to fetch than to use,
    /// so halving every host link's speed nearly doubles the makespan).
    #[test]
    fn contended_host_links_lengthen_a_link_bound_dag() {
        let base = h200x2();
        let p = plan(TriRoutine::Trsm, 4096, 1024, 4);
        let mut times = Vec::new();
        for contention in [1.0, 2.0] {
            let s = Synthetic {
                host_contention: contention,
                ..Synthetic::all_to_all(base.clone(), "cuda:0", 4, 389e9)
            };
            times.push(run(&p, &s.profile().unwrap()).makespan);
        }
        assert!(times[1] > 1.5 * times[0], "{times:?}");
    }
}
