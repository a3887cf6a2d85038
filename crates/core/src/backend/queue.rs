//! Queues and events: the only synchronisation vocabulary of hetblas. A queue refuses another
//! backend's event ([`Queue::can_wait`]); the executor then waits for it on the host.

use crate::error::Result;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// A point in a queue's stream of work.
pub trait Event: Send + Sync + fmt::Debug {
    /// Blocks the calling thread until the work before the event is done.
    fn synchronize(&self) -> Result<()>;
    /// Whether the work before the event is done.
    fn is_complete(&self) -> Result<bool>;
    /// Seconds from `earlier` to `self`, when both are timing events the backend can compare
    /// (same device). `None` otherwise.
    fn elapsed_since(&self, earlier: &dyn Event) -> Option<f64>;
    /// The backend whose queues can wait for the event on their device ("cuda", "host").
    fn backend(&self) -> &'static str;
    /// When the event completed, for events completed by a host thread (traces of host queues).
    fn host_instant(&self) -> Option<std::time::Instant> {
        None
    }
    /// The concrete event, for the backend that made it.
    fn as_any(&self) -> &dyn Any;
}

/// An in-order queue of asynchronous operations on one device.
pub trait Queue: Send + Sync + fmt::Debug {
    /// A short name for traces ("cuda0/h2d", "cpu/compute0").
    fn name(&self) -> &str;
    /// Records an event after everything issued so far.
    fn record(&self) -> Result<Arc<dyn Event>>;
    /// Records an event that carries a device-side timestamp (for traces).
    fn record_timed(&self) -> Result<Arc<dyn Event>> {
        self.record()
    }
    /// Whether [`wait`](Queue::wait) takes `event`: events of its own backend (a queue run by a
    /// host thread takes every event). The executor waits on the host for the others.
    fn can_wait(&self, event: &dyn Event) -> bool;
    /// Makes later work on this queue wait for `event`, without blocking the calling thread;
    /// `Unsupported` for an event `can_wait` refuses (a silent host wait would stall the issuer).
    fn wait(&self, event: &Arc<dyn Event>) -> Result<()>;
    /// Blocks until everything issued so far is done; reports the first error an operation hit
    /// since the last synchronize.
    fn synchronize(&self) -> Result<()>;
}

/// The queue of `own` (a device's typed queues) that `queue` is, by identity; `None` for a
/// queue of another device.
pub fn own_queue<'a, Q: Queue>(own: &'a [Arc<Q>], queue: &Arc<dyn Queue>) -> Option<&'a Q> {
    own.iter()
        .find(|q| std::ptr::addr_eq(Arc::as_ptr(q), Arc::as_ptr(queue)))
        .map(|q| q.as_ref())
}
