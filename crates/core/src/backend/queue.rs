//! Queues and events: the only synchronisation vocabulary of hetblas.
//!
//! A queue runs its operations in order, asynchronously to the host (a CUDA/HIP stream, a host
//! worker thread). An event marks a point in a queue; another queue can wait for it. Waiting for an
//! event of another backend cannot happen on the device, so queues fall back to a host-side wait:
//! dependencies across backends are resolved on the host, as DESIGN.md says.

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
    fn as_any(&self) -> &dyn Any;
}

/// An in-order queue of asynchronous operations on one device.
pub trait Queue: Send + Sync + fmt::Debug {
    /// A short name for traces ("cuda0/h2d", "cpu/compute0").
    fn name(&self) -> &str;
    /// Records an event after everything issued so far.
    fn record(&self) -> Result<Arc<dyn Event>>;
    /// Records an event that carries a device-side timestamp (for traces). Backends whose plain
    /// events already carry one need not override it.
    fn record_timed(&self) -> Result<Arc<dyn Event>> {
        self.record()
    }
    /// Makes later work on this queue wait for `event`. Events of another backend are waited for
    /// on the host (correct, but it blocks the issuing thread).
    fn wait(&self, event: &Arc<dyn Event>) -> Result<()>;
    /// Blocks until everything issued so far is done; reports the first error an operation hit
    /// since the last synchronize.
    fn synchronize(&self) -> Result<()>;
    fn as_any(&self) -> &dyn Any;
}
