//! Any [`Plan`] lowered to the simulator's task list: products, the routines' own tiles and
//! tile adds on the device's compute engine at its GEMM table's speed; copies on their link's
//! DMA engine at the link model's (2D copies at the host operand's pitch); folds on the host
//! fold at its measured rate. A task split in pieces is replayed as its pieces.

use super::costs::{Contention, Engine};
use super::engine::{SimTask, TaskList};
use crate::error::{Error, Result};
use crate::exec::execute::waits_piece_by_piece;
use crate::factor_kernel::FactorOp;
use crate::model::exec::ExecTable;
use crate::model::link::STRIDED_PITCH;
use crate::plan::{Op, Plan, QueueId, TaskId};
use crate::profile::MachineProfile;
use crate::scalar::DType;

/// `plan`'s tasks priced on `profile`, plan device `d` being the profile's device
/// `labels[d]`.
///
/// # Errors
/// `Profile` when the profile lacks what the plan uses (a device's GEMM table of the plan's
/// dtype, a link); `Internal` for a task on a queue it cannot run on.
pub fn lower(plan: &Plan, profile: &MachineProfile, labels: &[String]) -> Result<TaskList> {
    let spaces: Vec<_> = plan.devices.iter().map(|d| d.space).collect();
    let mut machine = Contention::new(profile, labels, &spaces, plan.dtype)?;
    let efficiency: Vec<f64> = labels
        .iter()
        .map(|l| profile.tri_efficiency_of(l))
        .collect();
    let fold_rate = crate::autotune::fold_rate(Some(profile));
    let es = plan.dtype.size();
    let mut tasks = Vec::with_capacity(plan.tasks.len());
    // A split task (`Task::pieces`) is replayed as its pieces: plan task `t` becomes list ids
    // `base[t]..base[t + 1]`, keeping the plan's order; `SimTask::task` maps back.
    let mut base: Vec<TaskId> = vec![0];
    for t in &plan.tasks {
        base.push(base[base.len() - 1] + TaskId::from(t.pieces.max(1)));
    }
    // The host fold queue takes its tasks by id, so the first fold listed runs first.
    let mut first_fold = true;
    for (id, t) in plan.tasks.iter().enumerate() {
        let pieces = usize::from(t.pieces.max(1));
        let written = t.op.written();
        // A piece's share of the tile's columns (the executor's split).
        let piece_cols = |p: usize| crate::plan::piece_columns(written.cols(), pieces, p).len();
        // Per piece, how much slower it runs beside its device's products (2D copies).
        let mut beside: Vec<f64> = vec![1.0; pieces];
        let (engine, alone): (Engine, Vec<f64>) = match (t.op, t.queue) {
            (op @ (Op::Gemm { .. } | Op::Sym { .. }), QueueId::Compute { device, .. }) => {
                // A routine's own product (a rank update's diagonal tile: its triangle) costs
                // its own flops, not the whole tile's.
                let table = &machine.tables[device as usize];
                let time = at_gemm_rate(table, &op, plan.dtype, op.product_shape());
                (Engine::Compute(device), vec![time])
            }
            (Op::Tri { a, b, .. }, QueueId::Compute { device, .. }) => {
                let d = device as usize;
                let time = machine.tables[d].time_mnk(b.rows(), b.cols(), a.rows());
                (Engine::Compute(device), vec![0.5 * time / efficiency[d]])
            }
            (
                op @ (Op::Potrf { a, .. } | Op::Getrf { a, .. } | Op::Laswp { a, .. }),
                QueueId::Compute { device, .. },
            ) => {
                let d = device as usize;
                let table = &machine.tables[d];
                let kind = match op {
                    Op::Potrf { .. } => FactorOp::Potrf,
                    Op::Getrf { .. } => FactorOp::Getrf,
                    _ => FactorOp::Laswp,
                };
                let efficiency = profile.panel_efficiency_of(&labels[d], kind);
                let time = match kind {
                    // A pass over the block, priced like a product of depth 1.
                    FactorOp::Laswp => table.time_mnk(a.rows(), a.cols(), 1),
                    _ => at_gemm_rate(table, &op, plan.dtype, (a.rows(), a.cols(), a.cols())),
                };
                (Engine::Compute(device), vec![time / efficiency])
            }
            (Op::Add { y, .. }, QueueId::Compute { device, .. }) => {
                // y += beta * x reads two tiles and writes one: a memory-bound pass that the
                // tables price like a product of depth 1.
                let table = &machine.tables[device as usize];
                let each = (0..pieces)
                    .map(|q| table.time_mnk(y.rows(), piece_cols(q), 1))
                    .collect();
                (Engine::Compute(device), each)
            }
            (Op::Fold { c, .. }, QueueId::HostFold) => {
                // As the pipeline model prices a fold: its bytes at the fold rate, its fixed
                // cost, and for the call's first the fold threads' wake.
                let wake = if std::mem::replace(&mut first_fold, false) {
                    crate::fold::FIRST_S
                } else {
                    0.0
                };
                let bytes = c.rows() * c.cols() * es;
                let time = crate::fold::seconds(bytes, fold_rate) + wake;
                (Engine::Fold, vec![time])
            }
            (Op::Copy { src, dst, .. }, QueueId::Link { src: from, dst: to }) => {
                let li = machine.link(profile, from, to)?;
                // A block of an operand in host memory moves as a 2D copy at the operand's
                // pitch, unless it spans whole columns; slots are packed.
                let operand = src.operand().or(dst.operand());
                let host_side = operand.is_some() && (from.is_host() || to.is_host());
                let stored_rows = operand.map_or(0, |(op, _)| plan.operand_rows(op));
                let contiguous = !host_side || dst.rows() == stored_rows;
                let pitch = if host_side {
                    stored_rows * es
                } else {
                    STRIDED_PITCH
                };
                // A 2D copy runs at its alone speed, and at its busy table's only while its
                // device computes (`Contention`).
                let tile = &machine.links[li].tile;
                let time = |q: usize, load: f64| {
                    tile.tile_time(dst.rows(), piece_cols(q), es, contiguous, pitch, load)
                };
                let each: Vec<f64> = (0..pieces).map(|q| time(q, 0.0)).collect();
                beside = each
                    .iter()
                    .enumerate()
                    .map(|(q, &a)| {
                        if a > 0.0 {
                            (time(q, 1.0) / a).max(1.0)
                        } else {
                            1.0
                        }
                    })
                    .collect();
                (Engine::Link(li), each)
            }
            (op, q) => {
                return Err(Error::internal(format!(
                    "simulator: task {op:?} on queue {q:?}"
                )))
            }
        };
        if alone.len() != pieces {
            return Err(Error::internal(format!(
                "simulator: {:?} split in {pieces} pieces",
                t.op
            )));
        }
        let (activity, label, bytes, flops) = plan.describe(t);
        let cols = written.cols().max(1);
        for (q, (alone, beside_products)) in alone.into_iter().zip(beside).enumerate() {
            // Each piece waits for the same piece of its tile's chain before it (the
            // executor's rule), for anything else whole: its last piece.
            let deps = t
                .deps
                .iter()
                .map(|&d| {
                    if waits_piece_by_piece(t, &plan.tasks[d as usize]) {
                        base[d as usize] + q as TaskId
                    } else {
                        base[d as usize + 1] - 1
                    }
                })
                .collect();
            let (bytes, flops) = if pieces > 1 {
                let own = piece_cols(q);
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
                beside_products,
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
                .flat_map(|&t| base[t as usize]..base[t as usize + 1])
                .collect()
        })
        .collect();
    Ok(TaskList {
        tasks,
        order,
        machine,
    })
}

/// `op`'s flops at the GEMM rate of an `m x n x k` product.
fn at_gemm_rate(table: &ExecTable, op: &Op, dtype: DType, (m, n, k): (usize, usize, usize)) -> f64 {
    let gemm_flops = dtype.flops_per_fma() * (m * n * k) as f64;
    if gemm_flops > 0.0 {
        table.time_mnk(m, n, k) * (op.flops(dtype) / gemm_flops)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;
    use crate::operand::Trans;
    use crate::plan::cache::{PlanCache, PlanInputs};
    use crate::plan::{DeviceSpec, Request, TriRequest};
    use crate::problem::triangular::{Diag, Side, TriOptions, TriProblem, TriRoutine, Uplo};
    use crate::problem::GemmProblem;
    use crate::scalar::DType;
    use crate::sim::{simulate, SimRequest, Simulation, Synthetic};
    use crate::tiling::Blocking;
    use crate::trace::Activity;
    use std::collections::HashSet;

    /// Whether a copy lands in a device slot (a fetch) rather than an operand or staging.
    fn is_fetch(op: &Op) -> bool {
        matches!(
            op,
            Op::Copy {
                dst: crate::plan::Loc::Slot { .. },
                ..
            }
        )
    }

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
                host_fold,
                ..PlanInputs::new(
                    p,
                    Blocking::square(tile).grid(p.m, p.n, p.k),
                    &[0],
                    &specs,
                    &[1.0],
                    &links,
                    &|_, _| None,
                )
            })
            .unwrap();
        plan
    }

    fn run(plan: &Plan, profile: &MachineProfile) -> Simulation {
        simulate(&SimRequest {
            plan,
            profile,
            devices: &labels(plan.devices.len()),
            queue_names: None,
        })
        .unwrap()
    }

    fn labels(n: usize) -> Vec<String> {
        (0..n).map(|d| format!("cuda:{d}")).collect()
    }

    /// A late C chain split in pieces is replayed as its pieces, each after the same piece
    /// of its chain and moving its share of the tile's columns, and shown whole in the trace;
    /// a tile's write-back then starts under its own fetch.
    #[test]
    fn split_chains_replay_piece_by_piece() {
        let profile = MachineProfile::recorded("nvidia-h200-x1.json");
        // One k step: each C tile's fetch, add and write-back follow its product.
        let mut p = GemmProblem::host_dgemm(8192, 8192, 2048);
        p.transb = Trans::N;
        let plan = one_device_plan(p, 4096, false);
        let list = lower(&plan, &profile, &labels(1)).unwrap();
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
            .find(|&t| matches!(plan.tasks[t].op, Op::Add { .. }))
            .unwrap();
        assert_eq!(plan.tasks[add].pieces, 8);
        let fetch = plan.tasks[add]
            .deps
            .iter()
            .map(|&d| d as usize)
            .find(|&d| is_fetch(&plan.tasks[d].op))
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
        let sim = run(&plan, &profile);
        assert_eq!(sim.trace.intervals.len(), plan.tasks.len());
        let (_, label, whole_bytes, _) = plan.describe(&plan.tasks[fetch]);
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
        let list = lower(&plan, &profile, &labels(1)).unwrap();
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

    /// C's write-backs of 17301x3969x3370 DGEMM (beta = 0) in 2048 tiles are 2D copies of 16
    /// KiB columns 135 KiB apart: priced at the link's alone speed, slowed to its busy table's
    /// while the device computes or the other direction copies, not otherwise. Replayed, the
    /// first write-back starts once the first C tile is done: after the group's first k step
    /// and the second step's first A and B tiles, six fetches.
    #[test]
    fn write_backs_take_the_busy_speed_only_beside_work_and_wait_for_the_first_tile() {
        let profile = MachineProfile::recorded("nvidia-h200-x1.json");
        let p = GemmProblem::host(17301, 3969, 3370, DType::F64, true);
        let plan = one_device_plan(p, 2048, false);
        let list = lower(&plan, &profile, &labels(1)).unwrap();
        let of = |a: Activity| -> Vec<&SimTask> {
            list.tasks.iter().filter(|t| t.activity == a).collect()
        };
        let (fetches, wbs) = (of(Activity::Fetch), of(Activity::WriteBack));
        assert_eq!((fetches.len(), wbs.len()), (22, 18));
        let wb = wbs[0];
        let Engine::Link(out) = wb.engine else {
            panic!("a write-back on {:?}", wb.engine)
        };
        let tile = &list.machine.links[out].tile;
        let time = |load| tile.tile_time(2048, 2048, 8, false, 17301 * 8, load);
        // On this profile 48.5 GB/s alone against 32.7 beside products.
        assert!(time(1.0) > 1.3 * time(0.0));
        assert!((wb.alone - time(0.0)).abs() < 1e-12);
        assert!((wb.alone * wb.beside_products - time(1.0)).abs() < 1e-12);
        let fetch_link = fetches[0].engine;
        let m = &list.machine;
        let bid = tile.model.bid_slowdown;
        assert!(bid < wb.beside_products);
        assert_eq!(m.slowdown(wb.engine, wb.beside_products, &[]), 1.0);
        for beside in [Engine::Compute(0), fetch_link] {
            let s = m.slowdown(wb.engine, wb.beside_products, &[beside]);
            assert!(
                (s - wb.beside_products).abs() < 1e-12,
                "beside {beside:?}: {s}"
            );
        }
        let s = run(&plan, &profile);
        let mut fetch_ends: Vec<f64> = s
            .trace
            .intervals
            .iter()
            .filter(|i| i.activity == Activity::Fetch)
            .map(|i| i.end)
            .collect();
        fetch_ends.sort_by(f64::total_cmp);
        let first_wb = s
            .trace
            .intervals
            .iter()
            .filter(|i| i.activity == Activity::WriteBack)
            .map(|i| i.start)
            .fold(f64::INFINITY, f64::min);
        assert!(
            first_wb >= fetch_ends[5],
            "{first_wb} before {fetch_ends:?}"
        );
        assert!(first_wb < fetch_ends[6], "{first_wb} after {fetch_ends:?}");
    }

    fn h200x2() -> MachineProfile {
        let text = include_str!("../../../../docs/profiles/nvidia-h200-x2-2026-11-22.json");
        MachineProfile::from_json(text, "nvidia-h200-x2-2026-11-22.json").unwrap()
    }

    /// A left, lower DTRSM (or DTRMM) of order `n` on `devices` GPUs of host operands, panels
    /// dealt round-robin, two compute queues each (look-ahead).
    fn tri_plan(routine: TriRoutine, n: usize, tile: usize, devices: usize) -> Plan {
        let specs: Vec<DeviceSpec> = (0..devices)
            .map(|d| DeviceSpec::new(format!("cuda:{d}"), MemorySpace::new_device(), 100 << 30, 2))
            .collect();
        let np = n.div_ceil(tile);
        let mut assignment = vec![Vec::new(); devices];
        for j in 0..np {
            assignment[j % devices].push(j);
        }
        crate::plan::build(&Request::Tri(TriRequest {
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
        }))
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
        let p = tri_plan(TriRoutine::Trsm, 8192, 2048, 2);
        let mut diag = [0.0; 2];
        let mut update = [0.0; 2];
        for t in &p.tasks {
            let d = t.device as usize;
            let table = profile
                .device(&labels(2)[d])
                .unwrap()
                .exec_table(DType::F64)
                .unwrap();
            match t.op {
                Op::Tri { .. } => diag[d] += 0.5 * table.time(2048),
                Op::Gemm { .. } => update[d] += table.time(2048),
                _ => {}
            }
        }
        let base = run(&p, &profile);
        let eff = crate::model::TRI_EFFICIENCY;
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

    /// The replay honours the graph and the queues, and its makespan lies between what no
    /// schedule beats (each device's compute alone, the longest chain of dependent tasks) and
    /// everything run one after another.
    #[test]
    fn makespan_lies_between_the_dag_bounds() {
        let profile = h200x2();
        for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
            for devices in [1, 2] {
                let p = tri_plan(routine, 16384, 2048, devices);
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

    /// Host links that slow each other down lengthen a link-bound graph on several GPUs (a
    /// 4096 DTRSM at tile 1024 on four H200s: each 8 MB tile takes longer to fetch than to
    /// use, so halving every host link's speed nearly doubles the makespan).
    #[test]
    fn contended_host_links_lengthen_a_link_bound_dag() {
        let base = h200x2();
        let p = tri_plan(TriRoutine::Trsm, 4096, 1024, 4);
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
