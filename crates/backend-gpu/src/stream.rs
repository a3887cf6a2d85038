//! Streams as hetblas queues, events as hetblas events. A stream waits on the device for an
//! event of any device of its runtime; an event of another backend is a typed error: the
//! executor resolves such dependencies on the host, on purpose (`Queue::can_wait`).

use crate::current::CurrentGuard;
use crate::runtime::GpuRuntime;
use hetblas_core::{Error, Event, Queue, Result};
use std::any::Any;
use std::sync::{Arc, Mutex};

/// An event of runtime `A`. Its handle goes back to its stream's [`EventPool`] when dropped.
#[derive(Debug)]
pub struct GpuEvent<A: GpuRuntime> {
    pool: Arc<EventPool<A>>,
    raw: A::Event,
    timed: bool,
}

/// Idle event handles of one stream, reused by its next records. A call records an event for
/// most of its tasks; creating each one and destroying it at the call's end (with the caller's
/// context saved, bound and restored around it) cost driver calls per event that a reused
/// handle does not. Re-recording a handle no `GpuEvent` holds any more is safe: a stream that
/// waited for it captured the record it waited for (CUDA and HIP semantics).
pub struct EventPool<A: GpuRuntime> {
    ctx: Arc<A::Context>,
    /// Untimed and timed handles.
    idle: Mutex<[Vec<A::Event>; 2]>,
}

/// Handles kept per kind; beyond this (after a call of thousands of tasks) they are destroyed.
const POOLED_EVENTS: usize = 256;

// SAFETY: event handles may be used from any thread (the runtimes are thread-safe); the lists
// are behind a Mutex.
unsafe impl<A: GpuRuntime> Send for EventPool<A> {}
// SAFETY: as above.
unsafe impl<A: GpuRuntime> Sync for EventPool<A> {}

impl<A: GpuRuntime> std::fmt::Debug for EventPool<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventPool").finish_non_exhaustive()
    }
}

impl<A: GpuRuntime> EventPool<A> {
    fn new(ctx: &Arc<A::Context>) -> Arc<Self> {
        Arc::new(EventPool {
            ctx: ctx.clone(),
            idle: Mutex::new([Vec::new(), Vec::new()]),
        })
    }

    /// An idle handle of the kind, or a new one (the context bound by the caller).
    fn take(&self, timed: bool) -> Result<A::Event> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner())[usize::from(timed)].pop();
        match idle {
            Some(e) => Ok(e),
            None => A::event_create(timed),
        }
    }

    /// Back from a dropped `GpuEvent`: kept, or destroyed beyond [`POOLED_EVENTS`].
    fn give(&self, raw: A::Event, timed: bool) {
        {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let list = &mut idle[usize::from(timed)];
            if list.len() < POOLED_EVENTS {
                list.push(raw);
                return;
            }
        }
        let _caller = CurrentGuard::<A>::save();
        let _ = A::bind(&self.ctx);
        // SAFETY: a handle no GpuEvent holds and the pool did not keep: destroyed once.
        unsafe { A::event_destroy(raw) };
    }
}

impl<A: GpuRuntime> Drop for EventPool<A> {
    fn drop(&mut self) {
        // The last event of the stream is gone: nothing can record or wait on these any more.
        let idle = std::mem::take(self.idle.get_mut().unwrap_or_else(|p| p.into_inner()));
        let _caller = CurrentGuard::<A>::save();
        let _ = A::bind(&self.ctx);
        for raw in idle.into_iter().flatten() {
            // SAFETY: each pooled handle once; pending uses complete in the runtime.
            unsafe { A::event_destroy(raw) };
        }
    }
}

// SAFETY: event handles may be used from any thread (the runtimes are thread-safe).
unsafe impl<A: GpuRuntime> Send for GpuEvent<A> {}
// SAFETY: as above; the handle is never mutated.
unsafe impl<A: GpuRuntime> Sync for GpuEvent<A> {}

impl<A: GpuRuntime> GpuEvent<A> {
    /// The event behind `event` when it is one of runtime `A`: the one place the GPU layer
    /// recovers its own type from a core `Event`. A staged write-back's event gives its DMA's
    /// (what the device waits for).
    pub fn of(event: &dyn Event) -> Option<&GpuEvent<A>> {
        let any = event.as_any();
        any.downcast_ref::<GpuEvent<A>>().or_else(|| {
            any.downcast_ref::<crate::copy_out::StagedEvent<A>>()
                .map(|s| s.dma.as_ref())
        })
    }

    pub fn raw(&self) -> A::Event {
        self.raw
    }
}

impl<A: GpuRuntime> Event for GpuEvent<A> {
    fn synchronize(&self) -> Result<()> {
        A::bind(&self.pool.ctx)?;
        // SAFETY: the event is live for self's lifetime.
        unsafe { A::event_synchronize(self.raw) }
    }
    fn is_complete(&self) -> Result<bool> {
        A::bind(&self.pool.ctx)?;
        // SAFETY: as above.
        unsafe { A::event_query(self.raw) }
    }
    fn elapsed_since(&self, earlier: &dyn Event) -> Option<f64> {
        let e = GpuEvent::<A>::of(earlier)?;
        if !self.timed || !e.timed || A::ordinal(&e.pool.ctx) != A::ordinal(&self.pool.ctx) {
            return None;
        }
        A::bind(&self.pool.ctx).ok()?;
        // SAFETY: both are live timing events of the same device.
        let ms = unsafe { A::event_elapsed_ms(e.raw, self.raw) }.ok()?;
        Some(ms as f64 / 1e3)
    }
    fn backend(&self) -> &'static str {
        A::NAME
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl<A: GpuRuntime> Drop for GpuEvent<A> {
    fn drop(&mut self) {
        self.pool.give(self.raw, self.timed);
    }
}

/// A BLAS handle bound to one stream; used by one thread at a time (behind its stream's Mutex).
#[derive(Debug)]
pub struct BlasHandle<A: GpuRuntime> {
    pub(crate) raw: A::Blas,
}

// SAFETY: the handle is used by one thread at a time (it sits behind a Mutex in its stream).
unsafe impl<A: GpuRuntime> Send for BlasHandle<A> {}

/// A non-blocking stream of runtime `A`, with a BLAS handle when it is a compute stream.
pub struct GpuStream<A: GpuRuntime> {
    ctx: Arc<A::Context>,
    raw: A::Stream,
    name: String,
    pub(crate) blas: Option<Mutex<BlasHandle<A>>>,
    events: Arc<EventPool<A>>,
}

// SAFETY: stream handles may be used from any thread; the BLAS handle is behind a Mutex.
unsafe impl<A: GpuRuntime> Send for GpuStream<A> {}
// SAFETY: as above.
unsafe impl<A: GpuRuntime> Sync for GpuStream<A> {}

impl<A: GpuRuntime> std::fmt::Debug for GpuStream<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuStream")
            .field("name", &self.name)
            .finish()
    }
}

impl<A: GpuRuntime> GpuStream<A> {
    /// A new stream on `ctx`'s device; `with_blas` binds a BLAS handle to it (compute streams).
    pub fn new(ctx: &Arc<A::Context>, name: String, with_blas: bool) -> Result<Arc<Self>> {
        A::bind(ctx)?;
        let mut s = GpuStream {
            ctx: ctx.clone(),
            raw: A::stream_create()?,
            name,
            blas: None,
            events: EventPool::new(ctx),
        };
        if with_blas {
            // SAFETY: the stream is live and outlives the handle (destroyed first in Drop).
            let raw = unsafe { A::blas_create(s.raw) }?;
            s.blas = Some(Mutex::new(BlasHandle { raw }));
        }
        Ok(Arc::new(s))
    }

    pub fn raw(&self) -> A::Stream {
        self.raw
    }

    pub fn context(&self) -> &Arc<A::Context> {
        &self.ctx
    }

    /// Records an event of this runtime (typed, for the layer's own use: staging slots).
    pub fn record_typed(&self, timed: bool) -> Result<Arc<GpuEvent<A>>> {
        A::bind(&self.ctx)?;
        let ev = GpuEvent {
            pool: self.events.clone(),
            raw: self.events.take(timed)?,
            timed,
        };
        // SAFETY: a live event and stream of the current device.
        unsafe { A::event_record(ev.raw, self.raw) }?;
        Ok(Arc::new(ev))
    }
}

impl<A: GpuRuntime> Queue for GpuStream<A> {
    fn name(&self) -> &str {
        &self.name
    }
    fn record(&self) -> Result<Arc<dyn Event>> {
        Ok(self.record_typed(false)?)
    }
    fn record_timed(&self) -> Result<Arc<dyn Event>> {
        Ok(self.record_typed(true)?)
    }
    fn can_wait(&self, event: &dyn Event) -> bool {
        event.backend() == A::NAME
    }
    fn wait(&self, event: &Arc<dyn Event>) -> Result<()> {
        let e = GpuEvent::<A>::of(event.as_ref()).ok_or_else(|| Error::Unsupported {
            device: self.name.clone(),
            detail: format!(
                "a {} stream cannot wait for a {} event on the device",
                A::NAME,
                event.backend()
            ),
        })?;
        A::bind(&self.ctx)?;
        // SAFETY: a live stream and event (events of other devices of the runtime are allowed).
        unsafe { A::stream_wait_event(self.raw, e.raw) }
    }
    fn synchronize(&self) -> Result<()> {
        A::bind(&self.ctx)?;
        // SAFETY: a live stream.
        unsafe { A::stream_synchronize(self.raw) }
    }
}

impl<A: GpuRuntime> Drop for GpuStream<A> {
    fn drop(&mut self) {
        // Dropped on the caller's thread with the last handle on its device.
        let _caller = CurrentGuard::<A>::save();
        if A::bind(&self.ctx).is_ok() {
            // SAFETY: finishes pending work; the stream is live.
            let _ = unsafe { A::stream_synchronize(self.raw) };
            if let Some(h) = self.blas.take() {
                let h = h.into_inner().unwrap_or_else(|p| p.into_inner());
                // SAFETY: the handle goes first (it refers to the stream), once.
                unsafe { A::blas_destroy(h.raw) };
            }
            // SAFETY: destroys the stream once, after everything on it finished.
            unsafe { A::stream_destroy(self.raw) };
        }
    }
}
