//! The executor of every plan: one worker per device (the calling thread when the plan has one
//! device) issues its tasks on their queues, making each queue wait for the events of
//! dependencies on other queues; nothing waits on the host except for another backend's event.
//! A task is a copy or a kernel on explicit tiles ([`Op`]).
//!
//! **Faults.** A device that fails (an error or panic while issuing, or an error its queues
//! report) stops its worker, and any worker that needs a task it never issued; the others run
//! on. Every queue is then synchronised and the outcome lists the faults and the output tiles
//! that are final ([`Task::finishes`]), for the caller to run the rest again. Each operand
//! region is saved in the [`UndoLog`] before its first write. An error that is no device's
//! fault (a plan bug) is returned as an error.

use crate::device::Device;
use crate::error::{lock, Error, Result};
use crate::factor_kernel::{GetrfTile, InfoCell, LaswpTile, PotrfTile, RawPivots};
use crate::kernel::{GemmTile, TriTile};
use crate::link::Link;
use crate::memory::{MemorySpace, RawTile};
use crate::plan::{slot_ld, Loc, Op, Plan, QueueId, Task, TaskId};
use crate::problem::Operand;
use crate::queue::{Event, Queue};
use crate::scalar::ScalarValue;
use crate::sym_kernel::SymTile;
use crate::tiling::TileKey;
use crate::trace::{Interval, Trace};
use crate::undo::{UndoLog, UndoScope};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

/// A transfer the executor issued (for accounting and tests).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Transfer {
    /// Plan device that fetched or wrote back.
    pub device: u16,
    pub key: TileKey,
    /// `true` for a write-back, `false` for a fetch.
    pub writeback: bool,
    pub link: String,
    pub bytes: u64,
}

/// Everything the executor needs besides the plan.
pub struct ExecRequest<'a> {
    pub plan: &'a Plan,
    /// Plan device index -> device.
    pub devices: &'a [Arc<dyn Device>],
    /// Plan device index -> address of its slot workspace (ignored when it has no slots).
    pub workspaces: &'a [u64],
    pub links: &'a HashMap<(MemorySpace, MemorySpace), Arc<dyn Link>>,
    /// The whole stored operands, in [`Operand`] order, in their spaces.
    pub operands: &'a [RawTile],
    /// Address of the host staging workspace (`plan.host_slots` slots), when the plan has any.
    pub host_workspace: u64,
    /// What host folds run on (plans with `Fold` tasks need it).
    pub host_fold: Option<Arc<crate::fold::HostFolder>>,
    pub alpha: ScalarValue,
    pub beta: ScalarValue,
    pub trace: bool,
    /// The time origins of traces, kept by the pool across calls; `None` takes a fresh one per
    /// call, which waits for the device's compute queue to drain.
    pub epochs: Option<&'a TraceEpochs>,
    /// Where the original of each operand region goes before its first write ([`UndoLog`]), and
    /// which writes it saves for.
    pub undo: Option<(&'a UndoLog, UndoScope)>,
    /// The cells the plan's factorization ops fill with LAPACK's `info` (`plan.infos` of them).
    pub infos: &'a [Arc<InfoCell>],
}

/// Per device, an event recorded on an idle compute queue and the host instant it completed
/// at: the origin of a traced call's device timestamps. Taking one waits for the queue to
/// drain (a call beside others would serialise behind them), so the pool keeps one per device,
/// renewed after [`TraceEpochs::MAX_AGE`] (timing events are `f32` milliseconds).
#[derive(Default, Debug)]
pub struct TraceEpochs {
    by_device: Mutex<HashMap<String, Epoch>>,
}

/// A timing event and the host instant it completed at.
type Epoch = (Arc<dyn Event>, Instant);

impl TraceEpochs {
    /// Age after which an epoch is taken again.
    pub const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(60);

    /// The epoch of `device` (its label), taken on `queue` when there is none or it is old.
    fn get(&self, device: &str, queue: &Arc<dyn Queue>) -> Result<Epoch> {
        let mut map = lock(&self.by_device);
        if let Some(fresh) = map.get(device).filter(|e| e.1.elapsed() < Self::MAX_AGE) {
            return Ok(fresh.clone());
        }
        let fresh = take_epoch(queue)?;
        map.insert(device.to_string(), fresh.clone());
        Ok(fresh)
    }
}

fn take_epoch(queue: &Arc<dyn Queue>) -> Result<Epoch> {
    queue.synchronize()?;
    let ev = queue.record_timed()?;
    ev.synchronize()?;
    Ok((ev, Instant::now()))
}

/// What a run did.
#[derive(Debug, Default)]
pub struct ExecOutcome {
    pub transfers: Vec<Transfer>,
    pub trace: Option<Trace>,
    /// Devices that failed (plan device index, the error), in the order seen.
    pub faults: Vec<(usize, Error)>,
    /// With faults: the output tiles whose final values are in the operand.
    pub final_tiles: HashSet<TileKey>,
    /// With faults: output tiles that a kernel wrote in the operand itself (the operand in the
    /// memory the device computes in). Those not final hold neither the old values nor the
    /// new, unless the undo log saved them.
    pub in_place: HashSet<TileKey>,
    /// With faults: tiles written back in pieces ([`Task::pieces`]) of which only the first
    /// ones completed, with the number of their first columns whose final values are in the
    /// operand; their other columns hold what they held before the call.
    pub partial: HashMap<TileKey, usize>,
}

struct Shared<'a> {
    req: &'a ExecRequest<'a>,
    issued: Vec<OnceLock<Option<Arc<dyn Event>>>>,
    /// Per plan device: its worker stopped before the end.
    stopped: Vec<AtomicBool>,
    wake: (Mutex<()>, Condvar),
    /// Operand regions saved in the undo log (by operand and first row and column).
    saved: Mutex<HashSet<(Operand, usize, usize)>>,
}

/// Why a worker stopped early.
enum Stop {
    /// Its device failed (or, for a copy from a peer, the device that the error names).
    Fault(Error),
    /// A task it depends on belongs to a device that stopped and will never be issued.
    Halted,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Fault(e)
    }
}

/// A write that finishes a tile: its event completes once the tile is final.
struct FinalWrite {
    tile: TileKey,
    /// `None`: a write in pieces whose issue failed after some of them.
    event: Option<Arc<dyn Event>>,
    /// A write in pieces: the event after each piece issued, of `of` in all, over the tile's
    /// `cols` columns.
    pieces: Vec<Arc<dyn Event>>,
    of: usize,
    cols: usize,
}

struct TimedTask {
    task: TaskId,
    queue: Arc<dyn Queue>,
    start: Arc<dyn Event>,
    end: Arc<dyn Event>,
}

#[derive(Default)]
struct WorkerOut {
    transfers: Vec<Transfer>,
    timed: Vec<TimedTask>,
    epoch: Option<Epoch>,
    finals: Vec<FinalWrite>,
    /// Output tiles a kernel of this device wrote in the operand itself.
    touched_in_place: HashSet<TileKey>,
    stop: Option<Stop>,
}

/// Runs the plan to completion, or as far as the devices that did not fail can take it.
///
/// # Errors
/// Errors that are no device's fault (a plan that does not fit the request, a missing link).
/// A device's failure is not an error here: it is in [`ExecOutcome::faults`].
pub fn execute(req: &ExecRequest<'_>) -> Result<ExecOutcome> {
    let plan = req.plan;
    if req.devices.len() != plan.devices.len()
        || req.workspaces.len() != plan.devices.len()
        || req.operands.len() < plan.operands.len()
        || req.infos.len() < plan.infos as usize
    {
        return Err(Error::internal(
            "executor: device or operand lists do not match the plan",
        ));
    }
    let shared = Shared {
        req,
        issued: (0..plan.tasks.len()).map(|_| OnceLock::new()).collect(),
        stopped: (0..plan.devices.len())
            .map(|_| AtomicBool::new(false))
            .collect(),
        wake: (Mutex::new(()), Condvar::new()),
        saved: Mutex::new(HashSet::new()),
    };
    let t0 = Instant::now();
    // A panic in a backend while issuing is that device's fault; the record of what was issued
    // survives it.
    let run_worker = |d: usize| {
        let mut out = WorkerOut::default();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            worker(&shared, d, &mut out)
        }));
        let stop = match r {
            Ok(Ok(())) => None,
            Ok(Err(stop)) => Some(stop),
            Err(p) => Some(Stop::Fault(Error::DeviceLost {
                device: req.devices[d].info().label(),
                detail: format!("backend panicked: {}", crate::host_queue::panic_message(&p)),
            })),
        };
        if stop.is_some() {
            shared.stopped[d].store(true, Ordering::SeqCst);
            let _g = shared.wake.0.lock();
            shared.wake.1.notify_all();
        }
        out.stop = stop;
        out
    };
    // One device's plan is issued on the calling thread: an issue thread cost sub-millisecond
    // calls on H200 0.1-0.2 ms.
    let mut outs: Vec<WorkerOut> = if plan.devices.len() == 1 {
        vec![run_worker(0)]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..plan.devices.len())
                .map(|d| {
                    let run_worker = &run_worker;
                    std::thread::Builder::new()
                        .name(format!("hetblas-issue{d}"))
                        .spawn_scoped(s, move || run_worker(d))
                })
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(d, h)| {
                    let out = match h {
                        Ok(h) => h.join().map_err(|p| {
                            let p = crate::host_queue::panic_message(&p);
                            format!("issue worker panicked: {p}")
                        }),
                        Err(e) => Err(format!("cannot start issue worker {d}: {e}")),
                    };
                    out.unwrap_or_else(|msg| WorkerOut {
                        stop: Some(Stop::Fault(Error::internal(msg))),
                        ..WorkerOut::default()
                    })
                })
                .collect()
        })
    };

    // Whatever happened, nothing may still run on the caller's memory when we return.
    let mut faults: Vec<(usize, Error)> = Vec::new();
    let mut fatal: Option<Error> = None;
    for (d, o) in outs.iter_mut().enumerate() {
        match o.stop.take() {
            Some(Stop::Fault(e)) if is_device_fault(&e) => {
                let blamed = blamed_device(req, &e).unwrap_or(d);
                faults.push((blamed, e));
            }
            Some(Stop::Fault(e)) => {
                fatal.get_or_insert(e);
            }
            Some(Stop::Halted) | None => {}
        }
    }
    // A queue's error is the fault of the devices that issued on it (the host fold queue is
    // no device's).
    let mut seen: Vec<(QueueId, Vec<usize>)> = Vec::new();
    for t in &plan.tasks {
        let d = t.device as usize;
        match seen.iter_mut().find(|(q, _)| *q == t.queue) {
            Some((_, devs)) if !devs.contains(&d) => devs.push(d),
            Some(_) => {}
            None => seen.push((t.queue, vec![d])),
        }
    }
    for (q, devs) in seen {
        let r = queue_of(req, q).and_then(|q| q.synchronize());
        if let Err(e) = r {
            // The device the error names (a failure that reached this queue through an event
            // it waited for), else the devices that issued on the queue.
            match blamed_device(req, &e) {
                Some(d) if is_device_fault(&e) => faults.push((d, e)),
                None if is_device_fault(&e) && q != QueueId::HostFold => {
                    faults.extend(devs.into_iter().map(|d| (d, e.clone())));
                }
                _ => {
                    fatal.get_or_insert(e);
                }
            }
        }
    }
    if let Some(e) = fatal {
        return Err(e);
    }
    // One entry per device, its first error.
    let mut blamed = HashSet::new();
    faults.retain(|(d, _)| blamed.insert(*d));

    let mut outcome = ExecOutcome::default();
    let mut trace = Trace::default();
    let epochs: Vec<_> = outs.iter().map(|o| o.epoch.clone()).collect();
    for o in outs {
        outcome.transfers.extend(o.transfers);
        if faults.is_empty() {
            for tt in o.timed {
                trace.intervals.push(interval(req, &epochs, t0, &tt)?);
            }
            continue;
        }
        outcome.in_place.extend(o.touched_in_place);
        for f in &o.finals {
            if f.event.as_ref().is_some_and(|e| e.synchronize().is_ok()) {
                outcome.final_tiles.insert(f.tile);
            } else {
                // The pieces complete in order: the columns of those that did are final.
                let done = f
                    .pieces
                    .iter()
                    .take_while(|e| e.synchronize().is_ok())
                    .count();
                if done > 0 {
                    let cols = crate::plan::piece_columns(f.cols, f.of, done - 1).end;
                    outcome.partial.insert(f.tile, cols);
                }
            }
        }
    }
    if req.trace && faults.is_empty() {
        trace.intervals.sort_by(|a, b| a.start.total_cmp(&b.start));
        outcome.trace = Some(trace);
    }
    outcome.faults = faults;
    Ok(outcome)
}

/// Errors that mean a device failed (the call can go on without it).
fn is_device_fault(e: &Error) -> bool {
    matches!(
        e,
        Error::Backend { .. } | Error::DeviceLost { .. } | Error::OutOfMemory { .. }
    )
}

/// The plan device an error names, when it names one (a copy from a lost peer fails on the
/// device that issued it, but the peer is the one lost).
fn blamed_device(req: &ExecRequest<'_>, e: &Error) -> Option<usize> {
    let named = match e {
        Error::DeviceLost { device, .. } | Error::OutOfMemory { device, .. } => device.as_str(),
        // A backend call that names its device ("copy 4 on emulated:0").
        Error::Backend { call, .. } => call.rsplit(" on ").next().unwrap_or_default(),
        _ => return None,
    };
    req.devices.iter().position(|d| {
        let label = d.info().label();
        named == label || named.starts_with(&format!("{label} "))
    })
}

fn queue_of(req: &ExecRequest<'_>, q: QueueId) -> Result<Arc<dyn Queue>> {
    match q {
        QueueId::Compute { device, index } => {
            let qs = req.devices[device as usize].compute_queues();
            if qs.is_empty() {
                return Err(Error::internal("device has no compute queue"));
            }
            Ok(qs[index as usize % qs.len()].clone())
        }
        QueueId::Link { src, dst } => Ok(link_of(req, src, dst)?.queue().clone()),
        QueueId::HostFold => req
            .host_fold
            .as_ref()
            .map(|f| f.queue.clone() as Arc<dyn Queue>)
            .ok_or_else(|| Error::internal("plan folds on the host but no fold queue was given")),
    }
}

fn link_of<'r>(
    req: &'r ExecRequest<'_>,
    src: MemorySpace,
    dst: MemorySpace,
) -> Result<&'r Arc<dyn Link>> {
    req.links
        .get(&(src, dst))
        .ok_or_else(|| Error::internal(format!("plan uses missing link {src:?}->{dst:?}")))
}

/// Where a tile is, as an address range the backends take.
fn view(req: &ExecRequest<'_>, loc: &Loc) -> RawTile {
    let plan = req.plan;
    let packed = |space, addr: u64, slot: u32, rows, cols| RawTile {
        space,
        addr: addr + u64::from(slot) * plan.slot_bytes as u64,
        rows,
        cols,
        ld: slot_ld(rows),
        dtype: plan.dtype,
    };
    match *loc {
        Loc::Operand { op, block } => {
            req.operands[op.index()].sub(block.row, block.col, block.rows, block.cols)
        }
        Loc::Slot {
            device,
            slot,
            rows,
            cols,
        } => packed(
            plan.devices[device as usize].space,
            req.workspaces[device as usize],
            slot,
            rows,
            cols,
        ),
        Loc::Staging { slot, rows, cols } => {
            packed(MemorySpace::HOST, req.host_workspace, slot, rows, cols)
        }
        Loc::Mirror { device, op, block } => {
            let d = device as usize;
            let pd = &plan.devices[d];
            // The device's copies follow its slots, in the order it lists them.
            let before: usize = pd
                .mirrors
                .iter()
                .take_while(|&&m| m != op)
                .map(|&m| plan.mirror_bytes(m))
                .sum();
            let base = req.workspaces[d] + (pd.slots as usize * plan.slot_bytes + before) as u64;
            let es = plan.element_size(op);
            let ld = slot_ld(plan.operand_rows(op));
            RawTile {
                space: pd.space,
                addr: base + ((block.row + block.col * ld) * es) as u64,
                rows: block.rows,
                cols: block.cols,
                ld,
                // Pivots (4-byte integers) move as 4-byte elements; no numeric kernel takes
                // them as such.
                dtype: if es == plan.dtype.size() {
                    plan.dtype
                } else {
                    crate::scalar::DType::F32
                },
            }
        }
    }
}

/// Pivots at `loc` (a `rows x 1` block of a factorization's pivots), as kernels take them.
fn pivots(req: &ExecRequest<'_>, loc: &Loc) -> RawPivots {
    let t = view(req, loc);
    RawPivots {
        space: t.space,
        addr: t.addr,
        len: t.rows,
    }
}

fn worker(sh: &Shared<'_>, d: usize, out: &mut WorkerOut) -> std::result::Result<(), Stop> {
    let req = sh.req;
    let plan = req.plan;
    if plan.order[d].is_empty() {
        return Ok(());
    }
    if req.trace {
        let compute0 = QueueId::Compute {
            device: d as u16,
            index: 0,
        };
        let q = queue_of(req, compute0)?;
        let epoch = match req.epochs {
            Some(epochs) => epochs.get(&req.devices[d].info().label(), &q),
            None => take_epoch(&q),
        };
        out.epoch = Some(epoch?);
    }
    // Per queue of this worker: the last task of each other queue it already waited for.
    let mut waited: HashMap<(QueueId, QueueId, u16), TaskId> = HashMap::new();
    let mut queues: HashMap<QueueId, Arc<dyn Queue>> = HashMap::new();
    // The events recorded after each piece of this worker's split tasks ([`Task::pieces`]).
    let mut piece_events: HashMap<TaskId, Vec<Arc<dyn Event>>> = HashMap::new();
    for &tid in &plan.order[d] {
        let task = &plan.tasks[tid as usize];
        let q = match queues.entry(task.queue) {
            Entry::Occupied(e) => e.get().clone(),
            Entry::Vacant(e) => e.insert(queue_of(req, task.queue)?).clone(),
        };
        // Wait for dependencies on other queues (or issued by other threads): of the tasks one
        // thread put on one queue, only the newest matters (they complete in order).
        let mut newest: HashMap<(QueueId, u16), TaskId> = HashMap::new();
        for &dep in &task.deps {
            let dt = &plan.tasks[dep as usize];
            if dt.queue == task.queue && dt.device == task.device {
                continue; // in-order queue, issued earlier by this thread
            }
            let e = newest.entry((dt.queue, dt.device)).or_insert(dep);
            *e = (*e).max(dep);
        }
        // The tile this copy was to take from a peer that stopped: copied from the operand.
        let mut from_origin = false;
        // A split dependency of a split task: each piece waits for its own piece instead.
        let mut piece_dep: Option<&[Arc<dyn Event>]> = None;
        for ((dq, dd), dep) in newest {
            if waited.get(&(task.queue, dq, dd)).is_some_and(|&w| w >= dep) {
                continue;
            }
            let dt = &plan.tasks[dep as usize];
            if piece_dep.is_none() && waits_piece_by_piece(task, dt) {
                if let Some(evs) = piece_events.get(&dep) {
                    piece_dep = Some(evs);
                    // Waiting for every piece covers the whole task: its event follows them.
                    waited.insert((task.queue, dq, dd), dep);
                    continue;
                }
            }
            let ev = match wait_issued(sh, dep) {
                Ok(ev) => ev,
                Err(Stop::Halted) => match after_stopped_peer(sh, task, dep) {
                    PeerGone::Source => {
                        from_origin = true;
                        continue;
                    }
                    // The stopped device never reads this slot: wait only for the reads it
                    // issued.
                    PeerGone::Reader => {
                        waited.insert((task.queue, dq, dd), dep);
                        match newest_issued(sh, task, dq, dd) {
                            Some(ev) => ev,
                            None => continue,
                        }
                    }
                    PeerGone::Needed => return Err(Stop::Halted),
                },
                Err(e) => return Err(e),
            };
            if q.can_wait(ev.as_ref()) {
                q.wait(&ev)?;
            } else {
                // Another backend's event (a mixed-vendor plan): no device can wait for it, so
                // this issuing thread does, here and on purpose.
                ev.synchronize()?;
            }
            waited.insert((task.queue, dq, dd), dep);
        }
        let start = if req.trace {
            // A split task starts with its first piece's dependency (issued again below).
            if let Some(first) = piece_dep.and_then(|evs| evs.first()) {
                q.wait(first)?;
            }
            Some(q.record_timed()?)
        } else {
            None
        };
        let key = task.op.key();
        let written = task.op.written();
        if let Some((op, block)) = written.operand() {
            let saves = match req.undo {
                Some((undo, UndoScope::Every)) => Some(undo),
                Some((undo, UndoScope::InPlace)) if task.op.computes() => Some(undo),
                _ => None,
            };
            if let Some(undo) = saves {
                let first = lock(&sh.saved).insert((op, block.row, block.col));
                if first {
                    undo.save(&view(req, &written), req.links)?;
                }
            }
            if task.op.computes() {
                out.touched_in_place.insert(key);
            }
        }
        let final_write = |event, pieces| FinalWrite {
            tile: key,
            event,
            pieces,
            of: task.pieces as usize,
            cols: written.cols(),
        };
        // The event recorded with the task itself (a host fold's).
        let mut own = None;
        if task.pieces > 1 && !from_origin {
            let mut evs = Vec::new();
            let issued = issue_pieces(req, d, task, &q, piece_dep, &mut evs, &mut out.transfers);
            if let Err(e) = issued {
                // The pieces written before the failure may have reached the operand.
                if task.finishes && !evs.is_empty() {
                    out.finals.push(final_write(None, evs));
                }
                return Err(Stop::Fault(e));
            }
            piece_events.insert(tid, evs);
        } else if from_origin {
            copy_from_origin(req, d, task.op, &q, &mut out.transfers)?;
        } else {
            match issue(req, d, task.op, &q, &mut out.transfers) {
                Ok(e) => own = e,
                // A copy from a peer that failed (lost with the tile) is done from the operand;
                // the peer's own worker reports its failure.
                Err(e) => match task.op {
                    Op::Copy {
                        src: Loc::Slot { device, .. },
                        origin: Some(_),
                        ..
                    } if blamed_device(req, &e) == Some(device as usize) => {
                        copy_from_origin(req, d, task.op, &q, &mut out.transfers)?;
                    }
                    _ => return Err(Stop::Fault(e)),
                },
            }
        }
        if let Some(start) = start {
            out.timed.push(TimedTask {
                task: tid,
                queue: q.clone(),
                start,
                end: q.record_timed()?,
            });
        }
        let ev = match (&own, task.signal) {
            (Some(e), _) => Some(e.clone()),
            (None, true) => Some(q.record()?),
            (None, false) => None,
        };
        // The write that makes a tile final: its event says, after a fault, whether it ran.
        if task.finishes {
            let event = match &ev {
                Some(e) => e.clone(),
                None => q.record()?,
            };
            let pieces = piece_events.get(&tid).cloned().unwrap_or_default();
            out.finals.push(final_write(Some(event), pieces));
        }
        if sh.issued[tid as usize].set(ev).is_err() {
            return Err(Stop::Fault(Error::internal("task issued twice")));
        }
        if task.signal {
            let _g = sh.wake.0.lock();
            sh.wake.1.notify_all();
        }
    }
    Ok(())
}

/// What a task does without a dependency that a stopped device never issued.
enum PeerGone {
    /// It is the fill of the peer slot a copy takes from: copy from the operand instead.
    Source,
    /// It is the stopped device's read of this device's slot: nothing to wait for.
    Reader,
    /// Anything else: the task cannot run.
    Needed,
}

fn after_stopped_peer(sh: &Shared<'_>, task: &Task, dep: TaskId) -> PeerGone {
    let dt = &sh.req.plan.tasks[dep as usize];
    let Op::Copy { src, origin, .. } = task.op else {
        return PeerGone::Needed;
    };
    match (src, origin, dt.op) {
        (Loc::Slot { device, .. }, Some(_), _) if device == dt.device => PeerGone::Source,
        (
            _,
            _,
            Op::Copy {
                src: Loc::Slot { device, .. },
                origin: Some(_),
                ..
            },
        ) if device == task.device => PeerGone::Reader,
        _ => PeerGone::Needed,
    }
}

/// Of `task`'s dependencies on queue `dq` of device `dd`, the event of the newest one issued.
fn newest_issued(sh: &Shared<'_>, task: &Task, dq: QueueId, dd: u16) -> Option<Arc<dyn Event>> {
    let plan = sh.req.plan;
    task.deps
        .iter()
        .rev()
        .filter(|&&dep| {
            let t = &plan.tasks[dep as usize];
            t.queue == dq && t.device == dd
        })
        .find_map(|&dep| sh.issued[dep as usize].get().cloned().flatten())
}

/// A copy whose peer source stopped, done from the operand itself. On the fault path only, so
/// simply synchronous: after what its queue waits for, done before any later task there.
fn copy_from_origin(
    req: &ExecRequest<'_>,
    d: usize,
    op: Op,
    queue: &Arc<dyn Queue>,
    transfers: &mut Vec<Transfer>,
) -> Result<()> {
    let Op::Copy {
        key,
        dst,
        origin: Some(origin),
        ..
    } = op
    else {
        return Err(Error::internal("copy from origin of a task with none"));
    };
    queue.record()?.synchronize()?;
    let link = copy_recorded(req, d, key, &origin, &dst, transfers)?;
    link.queue().record()?.synchronize()
}

/// The event of an issued task, blocking until its worker has issued it; `Halted` when that
/// worker stopped without issuing it.
fn wait_issued(sh: &Shared<'_>, dep: TaskId) -> std::result::Result<Arc<dyn Event>, Stop> {
    let cell = &sh.issued[dep as usize];
    let owner = sh.req.plan.tasks[dep as usize].device as usize;
    let mut g = lock(&sh.wake.0);
    loop {
        if let Some(ev) = cell.get() {
            return ev.clone().ok_or_else(|| {
                Stop::Fault(Error::internal(format!(
                    "task {dep} has dependents but no event"
                )))
            });
        }
        if sh.stopped[owner].load(Ordering::SeqCst) {
            return Err(Stop::Halted);
        }
        g = sh.wake.1.wait(g).unwrap_or_else(|p| p.into_inner());
    }
}

/// Issues one operation on `queue`; a host fold returns the event recorded with it.
fn issue(
    req: &ExecRequest<'_>,
    d: usize,
    op: Op,
    queue: &Arc<dyn Queue>,
    transfers: &mut Vec<Transfer>,
) -> Result<Option<Arc<dyn Event>>> {
    let value = |c: crate::plan::Coef| c.value(req.alpha, req.beta);
    let kernel = req.devices[d].kernel();
    match op {
        Op::Copy { key, src, dst, .. } => {
            copy_recorded(req, d, key, &src, &dst, transfers)?;
        }
        Op::Gemm {
            transa,
            transb,
            alpha,
            beta,
            a,
            b,
            c,
            ..
        } => {
            let k = op.product_shape().2;
            let (a, b, c) = (view(req, &a), view(req, &b), view(req, &c));
            kernel.gemm(
                queue,
                &GemmTile {
                    transa,
                    transb,
                    m: c.rows,
                    n: c.cols,
                    k,
                    alpha: value(alpha),
                    a,
                    b,
                    beta: value(beta),
                    c,
                },
            )?;
        }
        Op::Sym {
            op,
            k,
            alpha,
            beta,
            a,
            b,
            c,
            ..
        } => {
            let c = view(req, &c);
            kernel.sym(
                queue,
                &SymTile {
                    op,
                    m: c.rows,
                    n: c.cols,
                    k,
                    alpha: value(alpha),
                    a: view(req, &a),
                    b: view(req, &b),
                    beta: value(beta),
                    c,
                },
            )?;
        }
        Op::Tri {
            routine,
            mut opts,
            alpha,
            a,
            b,
            ..
        } => {
            let b = view(req, &b);
            opts.transa = opts.transa.for_dtype(b.dtype);
            let tile = TriTile {
                opts,
                m: b.rows,
                n: b.cols,
                alpha: value(alpha),
                a: view(req, &a),
                b,
            };
            match routine {
                crate::problem::triangular::TriRoutine::Trsm => kernel.trsm(queue, &tile)?,
                crate::problem::triangular::TriRoutine::Trmm => kernel.trmm(queue, &tile)?,
            }
        }
        Op::Add { beta, x, y, .. } => {
            kernel.add(queue, value(beta), &view(req, &x), &view(req, &y))?;
        }
        Op::Potrf { uplo, a, info, .. } => {
            let tile = PotrfTile {
                uplo,
                a: view(req, &a),
            };
            // SAFETY: the tile is a block of this device's copy of the operand (or the operand
            // in its own space), allocated for the whole call; the plan orders every other
            // access to it after this op (dependencies from reads and writes), and the executor
            // synchronises every queue before the call returns.
            unsafe { kernel.potrf(queue, &tile, info_cell(req, info)?)? };
        }
        Op::Getrf { a, ipiv, info, .. } => {
            let tile = GetrfTile {
                a: view(req, &a),
                ipiv: pivots(req, &ipiv),
            };
            // SAFETY: as for POTRF; the pivots are a block of the pivots' operand (or its copy)
            // in the same space, apart from the panel, ordered by the plan like any tile.
            unsafe { kernel.getrf(queue, &tile, info_cell(req, info)?)? };
        }
        Op::Laswp { a, ipiv, .. } => {
            let ipiv = pivots(req, &ipiv);
            let tile = LaswpTile {
                a: view(req, &a),
                k1: 1,
                k2: ipiv.len,
                ipiv,
            };
            // SAFETY: as for GETRF; the pivots were written by the panel's GETRF (or copied
            // from it), which the plan orders before this op, and hold row numbers of the panel
            // this block's rows start with.
            unsafe { kernel.laswp(queue, &tile)? };
        }
        Op::Fold {
            key,
            c,
            staged,
            mask,
        } => {
            let (c, staged) = (view(req, &c), view(req, &staged));
            // `queue` is this folder's queue (see `queue_of`): the waits went there.
            let folder = req
                .host_fold
                .as_ref()
                .ok_or_else(|| Error::internal("plan folds on the host but no folder was given"))?;
            let (beta, workers, speed) = (req.beta, folder.workers.clone(), folder.speed.clone());
            let fold = move || {
                let alone = speed.alone_since();
                let t = std::time::Instant::now();
                // SAFETY: C is the caller's host matrix, borrowed for the whole call (the
                // executor synchronises every queue before returning); the planner gives each C
                // tile to one fold and the staging slot is not refilled before this fold is done.
                let r = unsafe { crate::fold::fold_into(&c, &staged, beta, mask, &workers) };
                if r.is_ok() {
                    speed.record_alone(alone, c.bytes() as u64, t.elapsed().as_secs_f64());
                }
                r
            };
            // The folder's queue takes every device's folds: the fold's event is recorded
            // with it, or another device's failed wait could come between them and make a fold
            // that ran look undone (its tile would run again, beta applied twice).
            let done = folder.queue.enqueue_recorded(fold)?;
            // The product crossed from a device (a device in host memory folds its own slot).
            let space = req.plan.devices[d].space;
            if !space.is_host() {
                let link = link_of(req, space, MemorySpace::HOST)?;
                transfers.push(transfer(d, key, true, link.name(), staged.bytes()));
            }
            return Ok(Some(done));
        }
    }
    Ok(None)
}

fn info_cell<'r>(req: &'r ExecRequest<'_>, i: u32) -> Result<&'r Arc<InfoCell>> {
    req.infos
        .get(i as usize)
        .ok_or_else(|| Error::internal(format!("plan uses info cell {i} of {}", req.infos.len())))
}

/// Whether split `task` waits for `dep` piece by piece rather than whole: only within one
/// tile's chain (a late C tile's fetch, add and write-back), split alike. (A slot released by
/// another tile's chain held other columns, which any piece of this tile may overwrite.)
pub(crate) fn waits_piece_by_piece(task: &Task, dep: &Task) -> bool {
    task.pieces > 1
        && dep.pieces == task.pieces
        && chain_tile(&dep.op).is_some()
        && chain_tile(&dep.op) == chain_tile(&task.op)
}

/// The tile of a task that may go in pieces: a copy or an add.
fn chain_tile(op: &Op) -> Option<TileKey> {
    match *op {
        Op::Copy { key, .. } | Op::Add { key, .. } => Some(key),
        _ => None,
    }
}

/// A split task ([`Task::pieces`]) issued piece by piece over its tile's columns, each piece
/// after the same piece of `after`; each piece's event goes into `events` as it is issued (a
/// failure leaves those issued before it). One transfer is counted for the whole tile.
fn issue_pieces(
    req: &ExecRequest<'_>,
    d: usize,
    task: &Task,
    queue: &Arc<dyn Queue>,
    after: Option<&[Arc<dyn Event>]>,
    events: &mut Vec<Arc<dyn Event>>,
    transfers: &mut Vec<Transfer>,
) -> Result<()> {
    let pieces = task.pieces as usize;
    if after.is_some_and(|a| a.len() != pieces) {
        return Err(Error::internal("split task after a task of other pieces"));
    }
    // `Some(beta)`: an add; `None`: a copy.
    let (key, x, y, add) = match task.op {
        Op::Copy {
            key,
            src,
            dst,
            origin: None,
        } => (key, src, dst, None),
        Op::Add { key, x, y, beta } => (key, x, y, Some(beta.value(req.alpha, req.beta))),
        _ => return Err(Error::internal("only copies and adds are issued in pieces")),
    };
    let (x, y) = (view(req, &x), view(req, &y));
    let (rows, cols) = (y.rows, y.cols);
    for p in 0..pieces {
        let own = crate::plan::piece_columns(cols, pieces, p);
        if let Some(after) = after {
            queue.wait(&after[p])?;
        }
        let part = |t: RawTile| t.sub(0, own.start, rows, own.len());
        match add {
            None => link_of(req, x.space, y.space)?.copy(&part(x), &part(y))?,
            Some(beta) => req.devices[d]
                .kernel()
                .add(queue, beta, &part(x), &part(y))?,
        }
        events.push(queue.record()?);
    }
    if let Op::Copy { dst, .. } = task.op {
        if let Some(writeback) = recorded_direction(&dst) {
            let link = link_of(req, x.space, y.space)?;
            transfers.push(transfer(d, key, writeback, link.name(), y.bytes()));
        }
    }
    Ok(())
}

/// Whether a copy into `dst` is counted as a transfer, and then whether as a write-back (into
/// an operand) or a fetch (into a slot); staging hops are not counted.
fn recorded_direction(dst: &Loc) -> Option<bool> {
    match dst {
        Loc::Slot { .. } | Loc::Mirror { .. } => Some(false),
        Loc::Operand { .. } => Some(true),
        Loc::Staging { .. } => None,
    }
}

/// The record of a copy of `bytes` of tile `key` over the link named `link` by plan device `d`.
fn transfer(d: usize, key: TileKey, writeback: bool, link: &str, bytes: usize) -> Transfer {
    Transfer {
        device: d as u16,
        key,
        writeback,
        link: link.to_string(),
        bytes: bytes as u64,
    }
}

/// Copies tile `key` from `src` to `dst` over the link between their spaces and records the
/// transfer ([`recorded_direction`]).
fn copy_recorded<'r>(
    req: &'r ExecRequest<'_>,
    d: usize,
    key: TileKey,
    src: &Loc,
    dst: &Loc,
    transfers: &mut Vec<Transfer>,
) -> Result<&'r Arc<dyn Link>> {
    let (from, to) = (view(req, src), view(req, dst));
    let link = link_of(req, from.space, to.space)?;
    link.copy(&from, &to)?;
    if let Some(writeback) = recorded_direction(dst) {
        transfers.push(transfer(d, key, writeback, link.name(), from.bytes()));
    }
    Ok(link)
}

fn interval(
    req: &ExecRequest<'_>,
    epochs: &[Option<Epoch>],
    t0: Instant,
    tt: &TimedTask,
) -> Result<Interval> {
    let plan = req.plan;
    let task = &plan.tasks[tt.task as usize];
    let d = task.device as usize;
    // Prefer the task's own device epoch, then any comparable one.
    let order = std::iter::once(d).chain((0..epochs.len()).filter(|&x| x != d));
    let on_device = order
        .filter_map(|e| epochs[e].as_ref())
        .find_map(|(ev, host)| {
            let s = tt.start.elapsed_since(ev.as_ref())?;
            let en = tt.end.elapsed_since(ev.as_ref())?;
            // The epoch may predate the run (kept by the pool): a signed offset.
            let base = if *host >= t0 {
                host.duration_since(t0).as_secs_f64()
            } else {
                -t0.duration_since(*host).as_secs_f64()
            };
            Some((base + s, base + en))
        });
    // Host queues (folds) report host instants.
    let host_instant = |e: &Arc<dyn Event>| {
        e.host_instant()
            .map(|t| t.saturating_duration_since(t0).as_secs_f64())
    };
    let (start, end) = on_device
        .or_else(|| Some((host_instant(&tt.start)?, host_instant(&tt.end)?)))
        .ok_or_else(|| Error::internal("trace events not comparable"))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Coef;
    use crate::tiling::Block;

    fn task(op: Op, pieces: u16) -> Task {
        Task {
            device: 0,
            op,
            queue: QueueId::HostFold,
            deps: vec![],
            signal: true,
            pieces,
            finishes: false,
        }
    }

    fn slot(slot: u32) -> Loc {
        Loc::Slot {
            device: 0,
            slot,
            rows: 4,
            cols: 4,
        }
    }

    fn c_block() -> Loc {
        Loc::Operand {
            op: Operand::C,
            block: Block {
                row: 0,
                col: 0,
                rows: 4,
                cols: 4,
            },
        }
    }

    fn fetch_c(i: usize, j: usize, s: u32, pieces: u16) -> Task {
        let op = Op::Copy {
            key: TileKey::c(i, j),
            src: c_block(),
            dst: slot(s),
            origin: None,
        };
        task(op, pieces)
    }

    fn add_c(i: usize, j: usize, pieces: u16) -> Task {
        let op = Op::Add {
            key: TileKey::c(i, j),
            beta: Coef::Beta,
            x: slot(1),
            y: slot(0),
        };
        task(op, pieces)
    }

    fn write_back(i: usize, j: usize, s: u32, pieces: u16) -> Task {
        let op = Op::Copy {
            key: TileKey::c(i, j),
            src: slot(s),
            dst: c_block(),
            origin: None,
        };
        task(op, pieces)
    }

    /// Pieces wait piece by piece only for the same piece of their own tile's chain, split
    /// alike; a slot's previous tile (another chain's write-back), a chain split otherwise
    /// or a task that is not split is waited for whole.
    #[test]
    fn pieces_wait_piece_by_piece_only_within_their_own_tiles_chain() {
        // The tile's own chain: fetch -> add -> write-back.
        assert!(waits_piece_by_piece(&add_c(1, 2, 3), &fetch_c(1, 2, 1, 3)));
        assert!(waits_piece_by_piece(
            &write_back(1, 2, 0, 3),
            &add_c(1, 2, 3)
        ));
        // A fetch into a slot that another tile's split write-back released.
        assert!(!waits_piece_by_piece(
            &fetch_c(1, 2, 5, 3),
            &write_back(0, 2, 5, 3)
        ));
        assert!(!waits_piece_by_piece(&add_c(1, 2, 3), &fetch_c(2, 1, 1, 3)));
        // Split otherwise, or not split.
        assert!(!waits_piece_by_piece(&add_c(1, 2, 3), &fetch_c(1, 2, 1, 4)));
        assert!(!waits_piece_by_piece(&add_c(1, 2, 1), &fetch_c(1, 2, 1, 1)));
        // A product is no part of the chain that pieces follow.
        let gemm = Op::Gemm {
            key: TileKey::c(1, 2),
            l: 0,
            transa: crate::operand::Trans::N,
            transb: crate::operand::Trans::N,
            alpha: Coef::Alpha,
            beta: Coef::Zero,
            a: slot(0),
            b: slot(1),
            c: slot(2),
        };
        assert!(!waits_piece_by_piece(&add_c(1, 2, 3), &task(gemm, 3)));
    }
}
