//! The discrete-event replay. Every queue of the plan is in order, as a stream is: a task starts
//! once the task before it on its queue and every task it depends on (`Task::deps`, which hold
//! the executor's cross-queue events and, for DAG routines, the predecessors the planner adds)
//! have completed, and its engine is free. A device's compute queues share its compute engine;
//! each link has its own DMA engine. Running tasks progress at `1 / slowdown`, the slowdown set
//! by which other engines run at the moment (opposite directions of a link, other links, DMA
//! under compute and compute under DMA, as calibration measured them); every start and end is
//! an event at which all rates are set again, so the replay is exact for piecewise-constant
//! rates.

use super::costs::{describe, Costs, Engine};
use crate::error::{Error, Result};
use crate::plan::{Plan, QueueId, TaskId};
use crate::profile::MachineProfile;
use crate::trace::{Interval, Trace};
use std::collections::HashMap;

/// What to simulate.
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
    /// Per queue (by trace name), its tasks in the order they ran.
    pub order: Vec<(String, Vec<TaskId>)>,
}

impl Simulation {
    /// Predicted energy (J): per device, busy power over its compute time plus idle power over
    /// the rest of the makespan; `power(label)` gives (busy W, idle W), `None` counts nothing.
    pub fn energy(&self, power: impl Fn(&str) -> Option<(f64, f64)>) -> f64 {
        self.devices
            .iter()
            .filter_map(|d| {
                let (busy, idle) = power(&d.label)?;
                Some(busy * d.compute_s + idle * (self.makespan - d.compute_s).max(0.0))
            })
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
/// What [`Costs::new`] reports (a profile that lacks what the plan uses), and `Internal` for a
/// plan whose dependencies can never be met.
pub fn simulate(req: &SimRequest<'_>) -> Result<Simulation> {
    let plan = req.plan;
    let costs = Costs::new(plan, req.profile, req.devices)?;
    let n = plan.tasks.len();

    // Queues in the order their tasks are issued: one issuing thread per device walks its
    // order; a queue two devices issue on (the host fold) takes their tasks by id.
    let mut queue_ids: Vec<QueueId> = Vec::new();
    let mut queues: Vec<Vec<TaskId>> = Vec::new();
    let mut issuers: Vec<Vec<u16>> = Vec::new();
    let mut index: HashMap<QueueId, usize> = HashMap::new();
    for (d, order) in plan.order.iter().enumerate() {
        for &t in order {
            let q = plan.tasks[t as usize].queue;
            let qi = *index.entry(q).or_insert_with(|| {
                queue_ids.push(q);
                queues.push(Vec::new());
                issuers.push(Vec::new());
                queue_ids.len() - 1
            });
            queues[qi].push(t);
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
                let Some(mut ready) = prev_done else { continue };
                let mut ok = true;
                for &d in &plan.tasks[t as usize].deps {
                    match done[d as usize] {
                        Some(x) => ready = ready.max(x),
                        None => {
                            ok = false;
                            break;
                        }
                    }
                }
                if !ok {
                    continue;
                }
                let engine = costs.tasks[t as usize].engine;
                if running
                    .iter()
                    .any(|r| costs.tasks[r.task as usize].engine == engine)
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
                left: costs.tasks[t as usize].alone,
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
            .map(|r| costs.tasks[r.task as usize].engine)
            .collect();
        let rates: Vec<f64> = running
            .iter()
            .map(|r| 1.0 / costs.slowdown(costs.tasks[r.task as usize].engine, &busy))
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
            if r.left <= 1e-12 * (1.0 + costs.tasks[r.task as usize].alone) {
                done[r.task as usize] = Some(now);
                intervals.push((r.task, r.start, now));
                finished += 1;
                let q = index[&plan.tasks[r.task as usize].queue];
                head[q] += 1;
            } else {
                still.push(r);
            }
        }
        running = still;
    }

    let default_name = |q: QueueId| match q {
        QueueId::Compute { device, index } => {
            format!("{}/compute{index}", costs.labels[device as usize])
        }
        QueueId::Link { src, dst } => costs
            .links
            .iter()
            .find(|l| l.src == src && l.dst == dst)
            .map_or_else(|| format!("{src:?}->{dst:?}"), |l| l.name.clone()),
        QueueId::HostFold => "host fold".to_string(),
    };
    let name_of = |q: QueueId| match req.queue_names {
        Some(f) => f(q),
        None => default_name(q),
    };
    let names: Vec<String> = queue_ids.iter().map(|&q| name_of(q)).collect();
    intervals.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut trace = Trace::default();
    let mut order: Vec<(String, Vec<TaskId>)> = names.iter().map(|s| (s.clone(), vec![])).collect();
    let mut compute = vec![0.0; plan.devices.len()];
    let mut copy = vec![0.0; plan.devices.len()];
    for &(t, s, e) in &intervals {
        let task = &plan.tasks[t as usize];
        let qi = index[&task.queue];
        order[qi].1.push(t);
        match costs.tasks[t as usize].engine {
            Engine::Compute(d) => compute[d as usize] += e - s,
            Engine::Link(_) => copy[task.device as usize] += e - s,
            Engine::Fold => {}
        }
        let (activity, label, bytes, flops) = describe(plan, task);
        trace.intervals.push(Interval {
            device: costs.labels[task.device as usize].clone(),
            queue: names[qi].clone(),
            activity,
            label,
            start: s,
            end: e,
            bytes,
            flops,
        });
    }
    let makespan = trace.span().1 - trace.span().0;
    let devices = (0..plan.devices.len())
        .map(|d| DeviceBusy {
            label: costs.labels[d].clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::Objective;
    use crate::memory::MemorySpace;
    use crate::operand::Trans;
    use crate::scalar::DType;
    use crate::sim::{ProfiledMachine, Synthetic};
    use crate::tiling::Blocking;

    fn profile(name: &str) -> MachineProfile {
        let path = format!("{}/../../docs/profiles/{name}", env!("CARGO_MANIFEST_DIR"));
        MachineProfile::load(std::path::Path::new(&path)).unwrap()
    }

    fn dgemm(n: usize) -> crate::problem::GemmProblem {
        crate::problem::GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m: n,
            n,
            k: n,
            dtype: DType::F64,
            beta_zero: false,
            locations: [MemorySpace::HOST; 3],
        }
    }

    #[test]
    fn replay_keeps_queues_in_order_and_dependencies() {
        let m = ProfiledMachine::new(profile("nvidia-h200-x2.json"), None).unwrap();
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
                let (_, label, _, _) = describe(&mp.plan, task);
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
        for (t, task) in mp.plan.tasks.iter().enumerate() {
            for &d in &task.deps {
                assert!(
                    span[t].0 >= span[d as usize].1 - 1e-12,
                    "task {t} before dep {d}"
                );
            }
        }
        // Two H200s from host memory: no faster than their peak or their host links allow
        // (each device's bytes in over its host->device link), and within 30% of the larger
        // bound (8192^3 on a 1 x 2 grid: each GPU reads all of A, half of B and C: link-bound).
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
        assert!(s.makespan < 1.3 * bound, "{} against {bound}", s.makespan);
        assert!(s.devices.iter().all(|d| d.share > 0.3 && d.share <= 1.0));
    }

    #[test]
    fn contended_host_links_lengthen_a_transfer_bound_call() {
        // Thin-by-fat on 8 GPUs: C is tiny, A and B cross the host links once each.
        let base = profile("nvidia-h200-x1.json");
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
