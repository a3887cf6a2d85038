//! HIP streams as hetblas queues, HIP events as hetblas events. A stream waits for another
//! HIP event on the device (hipStreamWaitEvent, across devices too); for an event of another
//! backend it waits on the host first.

use crate::blas::HipblasHandle;
use crate::result::{self, Context};
use crate::sys;
use hetblas_core::{Event, Queue, Result};
use std::any::Any;
use std::sync::{Arc, Mutex};

/// A HIP event.
#[derive(Debug)]
pub struct HipEvent {
    ctx: Arc<Context>,
    raw: sys::HipEvent,
    timed: bool,
}

// SAFETY: event handles may be used from any thread.
unsafe impl Send for HipEvent {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for HipEvent {}

impl HipEvent {
    fn create(ctx: &Arc<Context>, timed: bool) -> Result<HipEvent> {
        ctx.bind()?;
        let raw = result::event_create(timed)?;
        Ok(HipEvent {
            ctx: ctx.clone(),
            raw,
            timed,
        })
    }

    pub fn raw(&self) -> sys::HipEvent {
        self.raw
    }
}

impl Event for HipEvent {
    fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: the event is live for self's lifetime.
        unsafe { result::event_synchronize(self.raw) }
    }
    fn is_complete(&self) -> Result<bool> {
        self.ctx.bind()?;
        // SAFETY: as above.
        unsafe { result::event_query(self.raw) }
    }
    fn elapsed_since(&self, earlier: &dyn Event) -> Option<f64> {
        let e = earlier.as_any().downcast_ref::<HipEvent>()?;
        if !self.timed || !e.timed || e.ctx.ordinal != self.ctx.ordinal {
            return None;
        }
        self.ctx.bind().ok()?;
        // SAFETY: both are live timing events of the same device.
        let ms = unsafe { result::event_elapsed_ms(e.raw, self.raw) }.ok()?;
        Some(ms as f64 / 1e3)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for HipEvent {
    fn drop(&mut self) {
        let _ = self.ctx.bind();
        // SAFETY: destroys the event once; pending uses complete in the runtime.
        let _ = unsafe { result::event_destroy(self.raw) };
    }
}

/// A non-blocking HIP stream, optionally with a hipBLAS handle bound to it.
pub struct HipStream {
    ctx: Arc<Context>,
    raw: sys::HipStream,
    name: String,
    pub(crate) blas: Option<Mutex<HipblasHandle>>,
}

// SAFETY: stream handles may be used from any thread; the hipBLAS handle is behind a Mutex.
unsafe impl Send for HipStream {}
// SAFETY: as above.
unsafe impl Sync for HipStream {}

impl std::fmt::Debug for HipStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipStream")
            .field("name", &self.name)
            .field("device", &self.ctx.ordinal)
            .finish()
    }
}

impl HipStream {
    /// A new stream on `ctx`'s device; `with_blas` binds a hipBLAS handle to it (compute
    /// streams).
    pub fn new(ctx: &Arc<Context>, name: String, with_blas: bool) -> Result<Arc<HipStream>> {
        ctx.bind()?;
        let raw = result::stream_create()?;
        let mut s = HipStream {
            ctx: ctx.clone(),
            raw,
            name,
            blas: None,
        };
        if with_blas {
            s.blas = Some(Mutex::new(HipblasHandle::new(ctx, raw)?));
        }
        Ok(Arc::new(s))
    }

    pub fn raw(&self) -> sys::HipStream {
        self.raw
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    fn record_with(&self, timed: bool) -> Result<Arc<HipEvent>> {
        let ev = HipEvent::create(&self.ctx, timed)?;
        // SAFETY: a live event and stream of the current device.
        unsafe { result::event_record(ev.raw, self.raw) }?;
        Ok(Arc::new(ev))
    }

    /// Records a HIP event (typed, for backend-internal use).
    pub fn record_hip(&self) -> Result<Arc<HipEvent>> {
        self.record_with(false)
    }
}

impl Queue for HipStream {
    fn name(&self) -> &str {
        &self.name
    }
    fn record(&self) -> Result<Arc<dyn Event>> {
        Ok(self.record_with(false)?)
    }
    fn record_timed(&self) -> Result<Arc<dyn Event>> {
        Ok(self.record_with(true)?)
    }
    fn wait(&self, event: &Arc<dyn Event>) -> Result<()> {
        match event.as_any().downcast_ref::<HipEvent>() {
            Some(e) => {
                self.ctx.bind()?;
                // SAFETY: a live stream and event (events of other devices are allowed).
                unsafe { result::stream_wait_event(self.raw, e.raw) }
            }
            // Another backend's event: resolved on the host.
            None => event.synchronize(),
        }
    }
    fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: a live stream.
        unsafe { result::stream_synchronize(self.raw) }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: finishes pending work; the stream is live.
            let _ = unsafe { result::stream_synchronize(self.raw) };
            // The hipBLAS handle goes first: it refers to the stream.
            drop(self.blas.take());
            // SAFETY: destroys the stream once, after everything on it finished.
            let _ = unsafe { result::stream_destroy(self.raw) };
        }
    }
}
