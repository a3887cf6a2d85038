//! A queue served by one host thread, for the CPU device, the host-emulated devices and their
//! links; it behaves like a stream. After an operation fails, the queue runs nothing more until
//! it is synchronised (like a CUDA stream after a fault): its events complete as failed, and a
//! queue waiting for one fails too, so work depending on a failed operation never runs.

use crate::error::{lock, Error, Result};
use crate::queue::{Event, Queue};
use std::any::Any;
use std::fmt;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Stack of a host queue's thread (reserved, touched as used): a host LAPACK's recursive panel
/// code needs more than Rust's 2 MiB default (OpenBLAS 0.3.21's dgetrf overflowed it, 1600 rows).
const QUEUE_STACK_BYTES: usize = 64 << 20;

type Work = Box<dyn FnOnce() -> Result<()> + Send>;

enum Job {
    Work(Work),
    /// Completes the event (as failed when the queue is failed).
    Record(Arc<HostEvent>),
    /// As `Record`, then the queue runs operations again (a synchronize).
    Sync(Arc<HostEvent>),
}

/// An event completed by a host queue's thread.
#[derive(Default)]
pub struct HostEvent {
    done: Mutex<Option<Instant>>,
    cv: Condvar,
    /// The error of the operation that failed before the event, when one did.
    failure: Mutex<Option<Error>>,
}

impl fmt::Debug for HostEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostEvent")
            .field("done", &self.lock().is_some())
            .finish()
    }
}

impl HostEvent {
    pub fn new() -> Arc<HostEvent> {
        Arc::new(HostEvent::default())
    }

    /// An event that is already complete.
    pub fn completed() -> Arc<HostEvent> {
        let e = HostEvent::new();
        e.complete();
        e
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        lock(&self.done)
    }

    /// Marks the event complete now.
    pub fn complete(&self) {
        let mut g = self.lock();
        if g.is_none() {
            *g = Some(Instant::now());
        }
        self.cv.notify_all();
    }

    /// Marks the event complete now, after work that failed with `error`.
    pub fn fail(&self, error: Error) {
        lock(&self.failure).get_or_insert(error);
        self.complete();
    }

    fn wait_done(&self) -> Instant {
        let mut g = self.lock();
        loop {
            if let Some(t) = *g {
                return t;
            }
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Event for HostEvent {
    /// # Errors
    /// The error of the operation that failed before the event.
    fn synchronize(&self) -> Result<()> {
        self.wait_done();
        lock(&self.failure).clone().map_or(Ok(()), Err)
    }
    fn is_complete(&self) -> Result<bool> {
        Ok(self.lock().is_some())
    }
    fn elapsed_since(&self, earlier: &dyn Event) -> Option<f64> {
        Some(
            self.host_instant()?
                .duration_since(earlier.host_instant()?)
                .as_secs_f64(),
        )
    }
    fn backend(&self) -> &'static str {
        "host"
    }
    fn host_instant(&self) -> Option<Instant> {
        *self.lock()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An in-order queue run by a dedicated host thread, started by its first operation (a node
/// of n emulated devices has n^2 links, most of them never used by a call).
pub struct HostQueue {
    name: String,
    tx: Mutex<Option<Sender<Job>>>,
    error: Arc<Mutex<Option<Error>>>,
    /// The receiving end until the thread starts and takes it.
    rx: Mutex<Option<Receiver<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for HostQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostQueue")
            .field("name", &self.name)
            .finish()
    }
}

impl HostQueue {
    /// A queue; its thread starts with its first operation (which fails if it cannot start).
    pub fn new(name: impl Into<String>) -> Result<Arc<HostQueue>> {
        let (tx, rx) = channel::<Job>();
        Ok(Arc::new(HostQueue {
            name: name.into(),
            tx: Mutex::new(Some(tx)),
            error: Arc::default(),
            rx: Mutex::new(Some(rx)),
            thread: Mutex::new(None),
        }))
    }

    fn start(&self) -> Result<()> {
        let mut thread = lock(&self.thread);
        if thread.is_some() {
            return Ok(());
        }
        let Some(rx) = lock(&self.rx).take() else {
            return Err(lost(&self.name, "queue thread is gone"));
        };
        let (err2, qname) = (self.error.clone(), self.name.clone());
        let handle = std::thread::Builder::new()
            .name(format!("hetblas-{}", self.name))
            .stack_size(QUEUE_STACK_BYTES)
            .spawn(move || run_queue(rx, &err2, &qname))
            .map_err(|e| lost(&self.name, format!("cannot start queue thread: {e}")))?;
        *thread = Some(handle);
        Ok(())
    }

    /// Appends an operation (skipped after a failure until the next `synchronize`, which
    /// reports its error).
    pub fn enqueue(&self, job: impl FnOnce() -> Result<()> + Send + 'static) -> Result<()> {
        self.send([Job::Work(Box::new(job))])
    }

    /// Sends `jobs` in order, no other sender's job in between.
    fn send(&self, jobs: impl IntoIterator<Item = Job>) -> Result<()> {
        self.start()?;
        let g = lock(&self.tx);
        let tx = g
            .as_ref()
            .ok_or_else(|| lost(&self.name, "queue is shut down"))?;
        for job in jobs {
            tx.send(job)
                .map_err(|_| lost(&self.name, "queue thread is gone"))?;
        }
        Ok(())
    }

    /// Enqueues `job` and records an event right behind it: recorded separately, the event
    /// could follow another thread's failed job and report failure for work that ran.
    pub fn enqueue_recorded(
        &self,
        job: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> Result<Arc<HostEvent>> {
        let ev = HostEvent::new();
        self.send([Job::Work(Box::new(job)), Job::Record(ev.clone())])?;
        Ok(ev)
    }
}

/// The queue's thread: runs the jobs in order; after a failure skips work until the next
/// synchronize, and keeps the first error for it.
fn run_queue(rx: Receiver<Job>, err2: &Mutex<Option<Error>>, qname: &str) {
    // The error that stopped the queue, until the next synchronize.
    let mut failed: Option<Error> = None;
    for job in rx {
        let work = match job {
            Job::Record(ev) => {
                failed.clone().map_or_else(|| ev.complete(), |e| ev.fail(e));
                continue;
            }
            Job::Sync(ev) => {
                // The synchronize reports the error; the queue runs again.
                failed = None;
                ev.complete();
                continue;
            }
            Job::Work(_) if failed.is_some() => continue,
            Job::Work(w) => w,
        };
        let e = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(p) => lost(
                qname,
                format!("queue operation panicked: {}", panic_message(&p)),
            ),
        };
        failed = Some(e.clone());
        lock(err2).get_or_insert(e);
    }
}

/// The queue `name` is lost, for the reason `detail`.
fn lost(name: &str, detail: impl Into<String>) -> Error {
    Error::DeviceLost {
        device: name.to_string(),
        detail: detail.into(),
    }
}

/// The message a panic was raised with (`&str` or `String` payloads).
pub(crate) fn panic_message(p: &Box<dyn Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

impl Queue for HostQueue {
    fn name(&self) -> &str {
        &self.name
    }
    fn record(&self) -> Result<Arc<dyn Event>> {
        let ev = HostEvent::new();
        self.send([Job::Record(ev.clone())])?;
        Ok(ev)
    }
    /// Every event: the queue's own thread waits for it, so the issuing thread never blocks.
    fn can_wait(&self, _event: &dyn Event) -> bool {
        true
    }
    fn wait(&self, event: &Arc<dyn Event>) -> Result<()> {
        let ev = event.clone();
        self.enqueue(move || ev.synchronize())
    }
    fn synchronize(&self) -> Result<()> {
        let ev = HostEvent::new();
        self.send([Job::Sync(ev.clone())])?;
        ev.wait_done();
        lock(&self.error).take().map_or(Ok(()), Err)
    }
}

impl Drop for HostQueue {
    fn drop(&mut self) {
        // Closing the channel lets the thread drain what is queued and exit.
        lock(&self.tx).take();
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn runs_in_order_and_events_order_queues() {
        let q1 = HostQueue::new("q1").unwrap();
        let q2 = HostQueue::new("q2").unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        q1.enqueue(move || {
            std::thread::sleep(std::time::Duration::from_millis(30));
            l.lock().unwrap().push(1);
            Ok(())
        })
        .unwrap();
        let ev = q1.record().unwrap();
        q2.wait(&ev).unwrap();
        let l = log.clone();
        q2.enqueue(move || {
            l.lock().unwrap().push(2);
            Ok(())
        })
        .unwrap();
        q2.synchronize().unwrap();
        assert_eq!(*log.lock().unwrap(), vec![1, 2]);
    }

    #[test]
    fn errors_and_panics_are_reported_once() {
        let q = HostQueue::new("q").unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        q.enqueue(|| Err(Error::internal("boom"))).unwrap();
        let n2 = n.clone();
        q.enqueue(move || {
            n2.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        let after = q.record().unwrap();
        assert!(q.synchronize().is_err());
        // Skipped after the failure, and the event after it failed with the error.
        assert_eq!(n.load(Ordering::SeqCst), 0);
        assert!(matches!(after.synchronize(), Err(Error::Internal(m)) if m == "boom"));
        assert!(q.synchronize().is_ok());
        // A queue that waits for a failed event fails too; synchronize starts it again.
        let q2 = HostQueue::new("q2").unwrap();
        q.enqueue(|| Err(Error::internal("first"))).unwrap();
        let ev = q.record().unwrap();
        q2.wait(&ev).unwrap();
        let n2 = n.clone();
        q2.enqueue(move || {
            n2.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        assert!(matches!(q2.synchronize(), Err(Error::Internal(m)) if m == "first"));
        assert_eq!(n.load(Ordering::SeqCst), 0);
        assert!(q.synchronize().is_err());
        let n2 = n.clone();
        q2.enqueue(move || {
            n2.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        assert!(q2.synchronize().is_ok());
        assert_eq!(n.load(Ordering::SeqCst), 1);
        q.enqueue(|| panic!("kaboom")).unwrap();
        match q.synchronize() {
            Err(Error::DeviceLost { detail, .. }) => assert!(detail.contains("kaboom")),
            other => panic!("expected DeviceLost, got {other:?}"),
        }
    }
}
