//! The executor of triangular plans ([`crate::plan::tri`]): one issuing thread per device walks
//! its tasks in plan order and issues each on its queue after making the queue wait for the
//! predecessors on other queues: on the device (an event wait) when the queue takes the
//! predecessor's event, else on the host, where a dependency across backends (or between the
//! CPU and a GPU) is resolved on purpose. An event is recorded after every task that another
//! queue waits for.
//!
//! A failure stops every worker (those waiting for a task that will never be issued too), all
//! queues are synchronised so nothing touches the caller's memory afterwards, and the first
//! error is returned. B may then be partly updated: TRSM and TRMM overwrite B in place.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::kernel::{GemmTile, TriTile};
use crate::link::Link;
use crate::memory::{MemorySpace, RawTile};
use crate::operand::Trans;
use crate::plan::tri::{TriKey, TriLoc, TriPlan, TriTaskId, TriTaskKind};
use crate::plan::QueueId;
use crate::problem::triangular::{Side, TriRoutine};
use crate::queue::{Event, Queue};
use crate::scalar::ScalarValue;
use crate::trace::{Interval, Trace};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

/// Everything the executor needs besides the plan.
pub struct TriExecRequest<'a> {
    pub plan: &'a TriPlan,
    /// Plan device index -> device.
    pub devices: &'a [Arc<dyn Device>],
    /// Plan device index -> address of its slot workspace (ignored when it has no slots).
    pub workspaces: &'a [u64],
    pub links: &'a HashMap<(MemorySpace, MemorySpace), Arc<dyn Link>>,
    /// The whole stored A and B, in their spaces.
    pub a: RawTile,
    pub b: RawTile,
    pub alpha: ScalarValue,
    pub trace: bool,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct TriOutcome {
    /// Bytes copied to and from the devices.
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub trace: Option<Trace>,
}

struct Shared<'a> {
    req: &'a TriExecRequest<'a>,
    issued: Vec<OnceLock<Option<Arc<dyn Event>>>>,
    stopped: AtomicBool,
    wake: (Mutex<()>, Condvar),
}

struct Timed {
    task: TriTaskId,
    queue: Arc<dyn Queue>,
    start: Arc<dyn Event>,
    end: Arc<dyn Event>,
}

#[derive(Default)]
struct WorkerOut {
    bytes: (u64, u64),
    timed: Vec<Timed>,
    epoch: Option<(Arc<dyn Event>, Instant)>,
}

/// Runs the plan to completion.
///
/// # Errors
/// The first error any device or link reported (B may be partly overwritten).
pub fn execute_tri(req: &TriExecRequest<'_>) -> Result<TriOutcome> {
    let plan = req.plan;
    if req.devices.len() != plan.devices.len() || req.workspaces.len() != plan.devices.len() {
        return Err(Error::internal(
            "tri executor: device lists do not match the plan",
        ));
    }
    let sh = Shared {
        req,
        issued: (0..plan.tasks.len()).map(|_| OnceLock::new()).collect(),
        stopped: AtomicBool::new(false),
        wake: (Mutex::new(()), Condvar::new()),
    };
    let t0 = Instant::now();
    let results: Vec<(WorkerOut, Option<Error>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..plan.devices.len())
            .map(|d| {
                let sh = &sh;
                s.spawn(move || {
                    let mut out = WorkerOut::default();
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        worker(sh, d, &mut out)
                    }));
                    let err = match r {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(e),
                        Err(p) => Some(Error::DeviceLost {
                            device: req.devices[d].info().label(),
                            detail: format!(
                                "backend panicked: {}",
                                crate::host_queue::panic_message(&p)
                            ),
                        }),
                    };
                    if err.is_some() {
                        sh.stopped.store(true, Ordering::SeqCst);
                        let _g = sh.wake.0.lock();
                        sh.wake.1.notify_all();
                    }
                    (out, err)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|p| {
                    (
                        WorkerOut::default(),
                        Some(Error::internal(format!(
                            "issue worker panicked: {}",
                            crate::host_queue::panic_message(&p)
                        ))),
                    )
                })
            })
            .collect()
    });
    // Nothing may still run on the caller's memory when we return.
    let mut first: Option<Error> = results.iter().find_map(|(_, e)| e.clone());
    let mut seen = HashSet::new();
    for t in &plan.tasks {
        if seen.insert((t.device, t.queue)) {
            if let Err(e) = queue_of(req, t.device as usize, t.queue).and_then(|q| q.synchronize())
            {
                first.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first {
        return Err(e);
    }
    let mut outcome = TriOutcome::default();
    let epochs: Vec<_> = results.iter().map(|(o, _)| o.epoch.clone()).collect();
    let mut trace = Trace::default();
    for (o, _) in &results {
        outcome.bytes_in += o.bytes.0;
        outcome.bytes_out += o.bytes.1;
        for t in &o.timed {
            trace.intervals.push(interval(req, &epochs, t0, t)?);
        }
    }
    if req.trace {
        trace.intervals.sort_by(|a, b| a.start.total_cmp(&b.start));
        outcome.trace = Some(trace);
    }
    Ok(outcome)
}

fn queue_of(req: &TriExecRequest<'_>, d: usize, q: QueueId) -> Result<Arc<dyn Queue>> {
    match q {
        QueueId::Compute { device, index } => {
            let qs = req.devices[device as usize].compute_queues();
            if qs.is_empty() {
                return Err(Error::internal(format!(
                    "{} has no compute queue",
                    req.devices[d].info().label()
                )));
            }
            Ok(qs[index as usize % qs.len()].clone())
        }
        QueueId::Link { src, dst } => Ok(link_of(req, src, dst)?.queue().clone()),
        QueueId::HostFold => Err(Error::internal("triangular plans fold nothing")),
    }
}

fn link_of<'r>(
    req: &'r TriExecRequest<'_>,
    src: MemorySpace,
    dst: MemorySpace,
) -> Result<&'r Arc<dyn Link>> {
    req.links
        .get(&(src, dst))
        .ok_or_else(|| Error::internal(format!("plan uses missing link {src:?}->{dst:?}")))
}

/// The event of task `dep`, blocking until its worker issued it; `None` when a worker failed.
fn wait_issued(sh: &Shared<'_>, dep: TriTaskId) -> Result<Option<Arc<dyn Event>>> {
    let cell = &sh.issued[dep as usize];
    let mut g = sh.wake.0.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(ev) = cell.get() {
            return ev
                .clone()
                .map(Some)
                .ok_or_else(|| Error::internal(format!("task {dep} has dependents but no event")));
        }
        if sh.stopped.load(Ordering::SeqCst) {
            return Ok(None);
        }
        g = sh.wake.1.wait(g).unwrap_or_else(|p| p.into_inner());
    }
}

fn operand_view(req: &TriExecRequest<'_>, key: TriKey) -> RawTile {
    let b = req.plan.block(key);
    let whole = match key {
        TriKey::A { .. } => &req.a,
        TriKey::B { .. } => &req.b,
    };
    whole.sub(b.row, b.col, b.rows, b.cols)
}

fn slot_view(req: &TriExecRequest<'_>, d: usize, slot: u32, key: TriKey) -> RawTile {
    let plan = req.plan;
    let b = plan.block(key);
    RawTile {
        space: plan.devices[d].space,
        addr: req.workspaces[d] + slot as u64 * plan.slot_bytes as u64,
        rows: b.rows,
        cols: b.cols,
        ld: b.rows.max(1),
        dtype: plan.problem.dtype,
    }
}

fn view(req: &TriExecRequest<'_>, d: usize, loc: TriLoc, key: TriKey) -> RawTile {
    match loc {
        TriLoc::InPlace => operand_view(req, key),
        TriLoc::Slot(s) => slot_view(req, d, s, key),
    }
}

fn worker(sh: &Shared<'_>, d: usize, out: &mut WorkerOut) -> Result<()> {
    let req = sh.req;
    let plan = req.plan;
    if plan.order[d].is_empty() {
        return Ok(());
    }
    if req.trace {
        let q = queue_of(
            req,
            d,
            QueueId::Compute {
                device: d as u16,
                index: 0,
            },
        )?;
        q.synchronize()?;
        let ev = q.record_timed()?;
        ev.synchronize()?;
        out.epoch = Some((ev, Instant::now()));
    }
    let mut queues: HashMap<QueueId, Arc<dyn Queue>> = HashMap::new();
    // Per (this queue, other device, other queue): the newest task already waited for.
    let mut waited: HashMap<(QueueId, u16, QueueId), TriTaskId> = HashMap::new();
    for &tid in &plan.order[d] {
        if sh.stopped.load(Ordering::SeqCst) {
            return Ok(());
        }
        let task = &plan.tasks[tid as usize];
        let q = match queues.get(&task.queue) {
            Some(q) => q.clone(),
            None => {
                let q = queue_of(req, d, task.queue)?;
                queues.insert(task.queue, q.clone());
                q
            }
        };
        // Of the predecessors one thread put on one queue, only the newest matters.
        let mut newest: HashMap<(u16, QueueId), TriTaskId> = HashMap::new();
        for &dep in &task.deps {
            let dt = &plan.tasks[dep as usize];
            if dt.queue == task.queue && dt.device == task.device {
                continue;
            }
            let e = newest.entry((dt.device, dt.queue)).or_insert(dep);
            *e = (*e).max(dep);
        }
        for ((dd, dq), dep) in newest {
            if waited.get(&(task.queue, dd, dq)).is_some_and(|&w| w >= dep) {
                continue;
            }
            let Some(ev) = wait_issued(sh, dep)? else {
                return Ok(());
            };
            if q.can_wait(ev.as_ref()) {
                q.wait(&ev)?;
            } else {
                // Another backend's event: no device can wait for it, so this issuing thread
                // does, on purpose.
                ev.synchronize()?;
            }
            waited.insert((task.queue, dd, dq), dep);
        }
        let start = if req.trace {
            Some(q.record_timed()?)
        } else {
            None
        };
        issue(req, d, task.kind, &q, &mut out.bytes)
            .map_err(|e| e.on_device(&req.devices[d].info().label()))?;
        if let Some(start) = start {
            out.timed.push(Timed {
                task: tid,
                queue: q.clone(),
                start,
                end: q.record_timed()?,
            });
        }
        let ev = if task.signal { Some(q.record()?) } else { None };
        if sh.issued[tid as usize].set(ev).is_err() {
            return Err(Error::internal("task issued twice"));
        }
        if task.signal {
            let _g = sh.wake.0.lock();
            sh.wake.1.notify_all();
        }
    }
    Ok(())
}

fn issue(
    req: &TriExecRequest<'_>,
    d: usize,
    kind: TriTaskKind,
    queue: &Arc<dyn Queue>,
    bytes: &mut (u64, u64),
) -> Result<()> {
    let plan = req.plan;
    let p = &plan.problem;
    let dt = p.dtype;
    let one = ScalarValue::one(dt);
    match kind {
        TriTaskKind::Fetch { key, slot } => {
            let src = operand_view(req, key);
            let dst = slot_view(req, d, slot, key);
            link_of(req, src.space, dst.space)?.copy(&src, &dst)?;
            bytes.0 += src.bytes() as u64;
        }
        TriTaskKind::WriteBack { key, slot } => {
            let src = slot_view(req, d, slot, key);
            let dst = operand_view(req, key);
            link_of(req, src.space, dst.space)?.copy(&src, &dst)?;
            bytes.1 += src.bytes() as u64;
        }
        TriTaskKind::Diag { k, j, a, b, first } => {
            let bt = view(req, d, b, TriKey::B { k, j });
            let mut opts = p.opts;
            opts.transa = opts.transa.for_dtype(dt);
            let op = TriTile {
                opts,
                m: bt.rows,
                n: bt.cols,
                alpha: if first { req.alpha } else { one },
                a: view(req, d, a, TriKey::A { r: k, c: k }),
                b: bt,
            };
            let kernel = req.devices[d].kernel();
            match p.routine {
                TriRoutine::Trsm => kernel.trsm(queue, &op)?,
                TriRoutine::Trmm => kernel.trmm(queue, &op)?,
            }
        }
        TriTaskKind::Update {
            i,
            k,
            j,
            a,
            src,
            dst,
            first,
        } => {
            let akey = plan.coupling(i, k);
            let at = view(req, d, a, akey);
            let st = view(req, d, src, TriKey::B { k, j });
            let ct = view(req, d, dst, TriKey::B { k: i, j });
            // The stored coupling tile is op(A)(i,k) (left) or op(A)(k,i) (right) as stored,
            // or its transpose: `transa` applies to it either way.
            let ta = p.opts.transa.for_dtype(dt);
            let (alpha, beta) = match p.routine {
                TriRoutine::Trsm => (
                    ScalarValue::of(dt, -1.0),
                    if first { req.alpha } else { one },
                ),
                TriRoutine::Trmm => (req.alpha, one),
            };
            let op = match p.opts.side {
                Side::Left => GemmTile {
                    transa: ta,
                    transb: Trans::N,
                    m: ct.rows,
                    n: ct.cols,
                    k: st.rows,
                    alpha,
                    a: at,
                    b: st,
                    beta,
                    c: ct,
                },
                Side::Right => GemmTile {
                    transa: Trans::N,
                    transb: ta,
                    m: ct.rows,
                    n: ct.cols,
                    k: st.cols,
                    alpha,
                    a: st,
                    b: at,
                    beta,
                    c: ct,
                },
            };
            req.devices[d].kernel().gemm(queue, &op)?;
        }
    }
    Ok(())
}

fn interval(
    req: &TriExecRequest<'_>,
    epochs: &[Option<(Arc<dyn Event>, Instant)>],
    t0: Instant,
    tt: &Timed,
) -> Result<Interval> {
    let plan = req.plan;
    let task = &plan.tasks[tt.task as usize];
    let d = task.device as usize;
    let mut times = None;
    for e in std::iter::once(d).chain((0..epochs.len()).filter(|&x| x != d)) {
        if let Some((ev, host)) = &epochs[e] {
            if let (Some(s), Some(en)) = (
                tt.start.elapsed_since(ev.as_ref()),
                tt.end.elapsed_since(ev.as_ref()),
            ) {
                let base = host.duration_since(t0).as_secs_f64();
                times = Some((base + s, base + en));
                break;
            }
        }
    }
    if times.is_none() {
        let hi = |e: &Arc<dyn Event>| {
            e.host_instant()
                .map(|t| t.saturating_duration_since(t0).as_secs_f64())
        };
        if let (Some(s), Some(e)) = (hi(&tt.start), hi(&tt.end)) {
            times = Some((s, e));
        }
    }
    let (start, end) = times.ok_or_else(|| Error::internal("trace events not comparable"))?;
    let (activity, label, bytes, flops) = plan.describe(task);
    Ok(Interval {
        device: req.devices[d].info().label(),
        queue: tt.queue.name().to_string(),
        activity,
        label,
        start,
        end,
        bytes,
        flops,
    })
}
