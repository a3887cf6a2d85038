//! The discrete-event replay of the task list every plan lowers to ([`fn@super::lower`]).
//!
//! Every queue is in order, as a stream is: a task starts once the task before it on its queue
//! and its dependencies have completed and its engine is free (a device's compute queues share
//! its compute engine; each link has its own DMA engine). Running tasks progress at
//! `1 / slowdown`, set by which other engines run; rates are set again at every start and end,
//! so the replay is exact for piecewise-constant rates.

use super::costs::{Contention, Engine};
use crate::energy::joules;
use crate::error::{Error, Result};
use crate::plan::{Plan, QueueId, TaskId};
use crate::profile::MachineProfile;
use crate::trace::{Activity, Interval, Trace};
use std::collections::HashMap;

/// One task as the engine sees it.
#[derive(Debug, Clone)]
pub struct SimTask {
    /// The plan's task it is, or a piece of (a task split in pieces is replayed piece by
    /// piece, and shown whole in the trace, as the executor shows it).
    pub task: TaskId,
    /// The plan device that issues it (a copy's time counts to its `copy_s`).
    pub device: u16,
    pub queue: QueueId,
    pub engine: Engine,
    /// Seconds when nothing else runs.
    pub alone: f64,
    /// How much longer it takes while its device computes (a 2D copy: its link's busy table
    /// against its alone table, [`crate::model::link::TileLink::tile_time`]; 1 for others).
    pub beside_products: f64,
    /// Tasks that must complete first.
    pub deps: Vec<TaskId>,
    /// How the trace shows it (the executor's activity and label, bytes moved, flops).
    pub activity: Activity,
    pub label: String,
    pub bytes: u64,
    pub flops: f64,
}

/// A plan lowered for the engine: its tasks in the plan's order, a task replayed as several
/// pieces under consecutive ids ([`SimTask::task`] names the plan's task).
#[derive(Debug, Clone)]
pub struct TaskList {
    pub tasks: Vec<SimTask>,
    /// Per plan device, its task ids in issue order (one issuing thread per device, as the
    /// executors have); each queue's order follows from it.
    pub order: Vec<Vec<TaskId>>,
    /// The engines of the plan's devices and links, and what slows what.
    pub machine: Contention,
}

/// What to simulate: any routine's [`Plan`].
pub struct SimRequest<'a> {
    pub plan: &'a Plan,
    pub profile: &'a MachineProfile,
    /// Per plan device: its label in the profile ("cuda:0").
    pub devices: &'a [String],
    /// Names of the queues in the trace (the real queues' names, to set the two timelines
    /// side by side); `None`: "cuda:0/compute0", the link's name, "host fold".
    pub queue_names: Option<&'a dyn Fn(QueueId) -> String>,
}

/// One device's part of a simulated run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeviceBusy {
    pub label: String,
    /// Seconds its compute engine runs.
    pub compute_s: f64,
    /// Seconds any of its host links or incoming peer links copies.
    pub copy_s: f64,
    /// `compute_s / makespan`.
    pub share: f64,
}

/// A simulated run.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// Seconds from the first task's start to the last one's end.
    pub makespan: f64,
    pub devices: Vec<DeviceBusy>,
    /// The predicted timeline (same form as a real run's).
    pub trace: Trace,
    /// Per queue (by trace name), its tasks (the plan's) in the order they ran.
    pub order: Vec<(String, Vec<TaskId>)>,
}

impl Simulation {
    /// Predicted energy (J): per device, busy power over its compute time plus idle power over
    /// the rest of the makespan; `power(label)` gives (busy W, idle W), `None` counts nothing.
    pub fn energy(&self, power: impl Fn(&str) -> Option<(f64, f64)>) -> f64 {
        self.devices
            .iter()
            .filter_map(|d| Some(joules(power(&d.label)?, d.compute_s, self.makespan)))
            .sum()
    }
}

struct Running {
    task: TaskId,
    start: f64,
    /// Seconds of work left, at the alone speed.
    left: f64,
}

/// Replays the plan in virtual time.
///
/// # Errors
/// What [`fn@super::lower`] reports (a profile that lacks what the plan uses), and `Internal`
/// for a plan whose dependencies can never be met.
pub fn simulate(req: &SimRequest<'_>) -> Result<Simulation> {
    let list = super::lower(req.plan, req.profile, req.devices)?;
    let (queue_ids, queues, intervals) = replay(&list)?;
    let machine = &list.machine;
    let names: Vec<String> = queue_ids
        .iter()
        .map(|&q| match req.queue_names {
            Some(f) => f(q),
            None => machine.default_queue_name(q),
        })
        .collect();
    let mut trace = Trace::default();
    let mut order: Vec<(String, Vec<TaskId>)> = names.iter().map(|s| (s.clone(), vec![])).collect();
    let devices = machine.labels.len();
    let mut compute = vec![0.0; devices];
    let mut copy = vec![0.0; devices];
    // A plan task replayed in pieces: one interval, from its first piece's start to its last
    // piece's end (the pieces run one after another on its queue).
    let mut shown: HashMap<TaskId, usize> = HashMap::new();
    for &(t, s, e) in &intervals {
        let task = &list.tasks[t as usize];
        let qi = queues[t as usize];
        match task.engine {
            Engine::Compute(d) => compute[d as usize] += e - s,
            Engine::Link(_) => copy[task.device as usize] += e - s,
            Engine::Fold => {}
        }
        if let Some(&at) = shown.get(&task.task) {
            let iv = &mut trace.intervals[at];
            iv.end = iv.end.max(e);
            iv.bytes += task.bytes;
            iv.flops += task.flops;
            continue;
        }
        shown.insert(task.task, trace.intervals.len());
        order[qi].1.push(task.task);
        trace.intervals.push(Interval {
            device: machine.labels[task.device as usize].clone(),
            queue: names[qi].clone(),
            activity: task.activity,
            label: task.label.clone(),
            start: s,
            end: e,
            bytes: task.bytes,
            flops: task.flops,
        });
    }
    let makespan = trace.span().1 - trace.span().0;
    let devices = (0..devices)
        .map(|d| DeviceBusy {
            label: machine.labels[d].clone(),
            compute_s: compute[d],
            copy_s: copy[d],
            share: if makespan > 0.0 {
                compute[d] / makespan
            } else {
                0.0
            },
        })
        .collect();
    Ok(Simulation {
        makespan,
        devices,
        trace,
        order,
    })
}

/// The queues of a task list (in order of first issue), each task's queue index, and every
/// task's (id, start, end) in start order.
type Replayed = (Vec<QueueId>, Vec<usize>, Vec<(TaskId, f64, f64)>);

/// The discrete-event core.
fn replay(list: &TaskList) -> Result<Replayed> {
    let n = list.tasks.len();
    let tasks = &list.tasks;
    // Queues in the order their tasks are issued: one issuing thread per device walks its
    // order; a queue two devices issue on (the host fold) takes their tasks by id.
    let mut queue_ids: Vec<QueueId> = Vec::new();
    let mut queues: Vec<Vec<TaskId>> = Vec::new();
    let mut issuers: Vec<Vec<u16>> = Vec::new();
    let mut index: HashMap<QueueId, usize> = HashMap::new();
    let mut queue_of = vec![usize::MAX; n];
    for (d, order) in list.order.iter().enumerate() {
        for &t in order {
            let task = tasks.get(t as usize).ok_or_else(|| {
                Error::internal(format!(
                    "simulator: task {t} in an order is not in the plan"
                ))
            })?;
            let qi = *index.entry(task.queue).or_insert_with(|| {
                queue_ids.push(task.queue);
                queues.push(Vec::new());
                issuers.push(Vec::new());
                queue_ids.len() - 1
            });
            queues[qi].push(t);
            queue_of[t as usize] = qi;
            if !issuers[qi].contains(&(d as u16)) {
                issuers[qi].push(d as u16);
            }
        }
    }
    for (q, who) in queues.iter_mut().zip(&issuers) {
        if who.len() > 1 {
            q.sort_unstable();
        }
    }
    let mut head = vec![0usize; queues.len()];
    let mut done: Vec<Option<f64>> = vec![None; n];
    let mut started: Vec<Option<f64>> = vec![None; n];
    let mut running: Vec<Running> = Vec::new();
    let mut now = 0.0f64;
    let mut finished = 0usize;
    let mut intervals: Vec<(TaskId, f64, f64)> = Vec::with_capacity(n);

    while finished < n {
        // Start every queue head that is ready and whose engine is free, the earliest ready
        // first (a device's compute queues compete for its engine).
        loop {
            let mut best: Option<(f64, TaskId, usize)> = None;
            for (qi, q) in queues.iter().enumerate() {
                let Some(&t) = q.get(head[qi]) else { continue };
                if started[t as usize].is_some() {
                    continue;
                }
                let prev_done = if head[qi] == 0 {
                    Some(0.0)
                } else {
                    done[q[head[qi] - 1] as usize]
                };
                let Some(prev_done) = prev_done else { continue };
                // When every dependency is done, the latest of their ends.
                let ready = tasks[t as usize].deps.iter().try_fold(prev_done, |r, &d| {
                    Some(r.max(done.get(d as usize).copied().flatten()?))
                });
                let Some(ready) = ready else { continue };
                let engine = tasks[t as usize].engine;
                if running
                    .iter()
                    .any(|r| tasks[r.task as usize].engine == engine)
                {
                    continue;
                }
                if best.is_none_or(|(r, id, _)| (ready, t) < (r, id)) {
                    best = Some((ready, t, qi));
                }
            }
            let Some((_, t, _)) = best else { break };
            started[t as usize] = Some(now);
            running.push(Running {
                task: t,
                start: now,
                left: tasks[t as usize].alone,
            });
        }
        if running.is_empty() {
            return Err(Error::internal(format!(
                "simulator: {} tasks can never start (a dependency cycle or a task missing \
                 from every device's order)",
                n - finished
            )));
        }
        // Rates at this instant, and the next completion.
        let busy: Vec<Engine> = running
            .iter()
            .map(|r| tasks[r.task as usize].engine)
            .collect();
        let rates: Vec<f64> = running
            .iter()
            .map(|r| {
                let t = &tasks[r.task as usize];
                1.0 / list.machine.slowdown(t.engine, t.beside_products, &busy)
            })
            .collect();
        let dt = running
            .iter()
            .zip(&rates)
            .map(|(r, &v)| r.left.max(0.0) / v)
            .fold(f64::INFINITY, f64::min);
        now += dt;
        let mut still = Vec::with_capacity(running.len());
        for (mut r, v) in running.into_iter().zip(rates) {
            r.left -= v * dt;
            // Relative tolerance: a task whose work is done up to rounding is done.
            if r.left <= 1e-12 * (1.0 + tasks[r.task as usize].alone) {
                done[r.task as usize] = Some(now);
                intervals.push((r.task, r.start, now));
                finished += 1;
                head[queue_of[r.task as usize]] += 1;
            } else {
                still.push(r);
            }
        }
        running = still;
    }
    intervals.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    Ok((queue_ids, queue_of, intervals))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::Objective;
    use crate::operand::Trans;
    use crate::scalar::DType;
    use crate::sim::{ProfiledMachine, Synthetic};
    use crate::tiling::Blocking;

    fn dgemm(n: usize) -> crate::problem::GemmProblem {
        crate::problem::GemmProblem::host_dgemm(n, n, n)
    }

    #[test]
    fn replay_keeps_queues_in_order_and_dependencies() {
        let m = ProfiledMachine::new(
            MachineProfile::recorded("nvidia-h200-x2-2026-11-22.json"),
            None,
        )
        .unwrap();
        let p = dgemm(8192);
        let mp = m
            .plan(&p, Blocking::square(2048), Objective::Time, None)
            .unwrap();
        let s = m.simulate(&mp).unwrap();
        assert_eq!(s.trace.intervals.len(), mp.plan.tasks.len());
        // Every task starts after its predecessors end and after the task before it on its
        // queue.
        let mut span = vec![(0.0, 0.0); mp.plan.tasks.len()];
        let mut by_label: HashMap<(String, String, String), (f64, f64)> = HashMap::new();
        for iv in &s.trace.intervals {
            by_label.insert(
                (iv.device.clone(), iv.queue.clone(), iv.label.clone()),
                (iv.start, iv.end),
            );
        }
        for (qname, tasks) in &s.order {
            let mut prev_end = 0.0f64;
            for &t in tasks {
                let task = &mp.plan.tasks[t as usize];
                let (_, label, _, _) = mp.plan.describe(task);
                let (st, en) = by_label[&(
                    mp.labels[task.device as usize].clone(),
                    qname.clone(),
                    label,
                )];
                assert!(st >= prev_end - 1e-12, "queue {qname} overlaps");
                prev_end = en;
                span[t as usize] = (st, en);
            }
        }
        // (A task split in pieces that follows its dependency piece by piece starts no earlier
        // than the dependency starts and ends no earlier than it ends; that each piece follows
        // the same piece is checked on the task list, in `sim::lower`'s tests.)
        let mut piecewise = 0;
        for (t, task) in mp.plan.tasks.iter().enumerate() {
            for &d in &task.deps {
                let dep = &mp.plan.tasks[d as usize];
                let (s, e) = (span[t], span[d as usize]);
                if crate::exec::execute::waits_piece_by_piece(task, dep) {
                    piecewise += 1;
                    assert!(
                        s.0 >= e.0 - 1e-12 && s.1 >= e.1 - 1e-12,
                        "task {t}, dep {d}"
                    );
                } else {
                    assert!(s.0 >= e.1 - 1e-12, "task {t} before dep {d}");
                }
            }
        }
        assert!(
            piecewise > 0,
            "no chain in pieces: the plan's last C tiles are 32 MiB"
        );
        // Two H200s from host memory: no faster than their peak or their host links allow
        // (each device's bytes in over its host->device link), and within 40% of the larger
        // bound (8192^3 on a 1 x 2 grid: each GPU reads all of A, half of B and C: link-bound).
        // The bound leaves out the first tiles' wait, the last write-back and the links'
        // slowdown when both directions run: 1.35x since the devices' host fetches are even
        // (19.8 ms against 14.7; 21.8 ms before, against a bound of 17 for the busier link).
        let stats = mp.plan.stats();
        let mut bound: f64 = 0.0;
        for (d, l) in mp.labels.iter().enumerate() {
            let dp = m.profile.device(l).unwrap();
            let compute = p.flops() * mp.weights[d] / dp.exec_table(DType::F64).unwrap().rate(2048);
            let h2d = m
                .profile
                .link(crate::profile::HOST_LABEL, l)
                .unwrap()
                .bytes_per_sec;
            let d2h = m
                .profile
                .link(l, crate::profile::HOST_LABEL)
                .unwrap()
                .bytes_per_sec;
            bound = bound
                .max(compute)
                .max(stats.bytes_in[d] as f64 / h2d)
                .max(stats.bytes_out[d] as f64 / d2h);
        }
        assert!(
            s.makespan >= bound * (1.0 - 1e-9),
            "{} < {bound}",
            s.makespan
        );
        assert!(s.makespan < 1.4 * bound, "{} against {bound}", s.makespan);
        assert!(s.devices.iter().all(|d| d.share > 0.3 && d.share <= 1.0));
    }

    /// A rank update's diagonal products cost their triangle's flops: the compute engine of
    /// a SYRK plan is busy for the routine's flops at the GEMM rate, not for whole tiles.
    #[test]
    fn a_rank_updates_diagonal_products_cost_their_triangle() {
        use crate::sym::{SymOp, SymTiles, Uplo};
        let m =
            ProfiledMachine::new(MachineProfile::recorded("nvidia-h200-x1.json"), None).unwrap();
        let p = crate::problem::GemmProblem {
            transb: Trans::T,
            sym: Some(SymTiles {
                op: SymOp::Rank {
                    uplo: Uplo::Lower,
                    trans: Trans::N,
                    two: false,
                    herm: false,
                },
                diagonal: true,
            }),
            ..dgemm(8192)
        };
        let mp = m
            .plan(&p, Blocking::square(4096), Objective::Time, None)
            .unwrap();
        let s = m.simulate(&mp).unwrap();
        let busy: f64 = s
            .trace
            .intervals
            .iter()
            .filter(|iv| iv.queue.contains("compute"))
            .map(|iv| iv.end - iv.start)
            .sum();
        let table = m.profile.device("cuda:0").unwrap();
        let tile = table.exec_table(DType::F64).unwrap();
        // Three tiles of the lower triangle, two k steps each: the off-diagonal one whole, the
        // two diagonal ones at about half.
        let whole = tile.time_mnk(4096, 4096, 4096);
        let want = 2.0 * whole + 4.0 * whole * (4096.0 * 4097.0 / 2.0) / (4096.0 * 4096.0);
        assert!(
            (busy - want).abs() < 0.05 * want,
            "compute busy {busy} s, want about {want} s (whole tiles: {})",
            6.0 * whole
        );
    }

    #[test]
    fn contended_host_links_lengthen_a_transfer_bound_call() {
        // Thin-by-fat on 8 GPUs: C is tiny, A and B cross the host links once each.
        let base = MachineProfile::recorded("nvidia-h200-x1.json");
        let p = crate::problem::GemmProblem {
            m: 2048,
            n: 2048,
            k: 65536,
            ..dgemm(0)
        };
        let mut times = Vec::new();
        for contention in [1.0, 2.0] {
            let s = Synthetic {
                host_contention: contention,
                ..Synthetic::all_to_all(base.clone(), "cuda:0", 8, 389e9)
            };
            let m = ProfiledMachine::new(s.profile().unwrap(), None).unwrap();
            let mp = m
                .plan(&p, Blocking::square(1024), Objective::Time, None)
                .unwrap();
            assert_eq!(mp.labels.len(), 8);
            times.push(m.simulate(&mp).unwrap().makespan);
        }
        assert!(times[1] > 1.3 * times[0], "{times:?}");
    }
}
