//! CUDA streams as hetblas queues, CUDA events as hetblas events. A stream waits for another
//! CUDA event on the device (cuStreamWaitEvent, across devices too); for an event of another
//! backend it waits on the host first.

use crate::blas::CublasHandle;
use crate::driver::{check, Context};
use cudarc::driver::sys;
use hetblas_core::{Event, Queue, Result};
use std::any::Any;
use std::sync::{Arc, Mutex};

/// A CUDA event.
#[derive(Debug)]
pub struct CudaEvent {
    ctx: Arc<Context>,
    raw: sys::CUevent,
    timed: bool,
}

// SAFETY: event handles may be used from any thread.
unsafe impl Send for CudaEvent {}
// SAFETY: as above.
unsafe impl Sync for CudaEvent {}

impl CudaEvent {
    fn create(ctx: &Arc<Context>, timed: bool) -> Result<CudaEvent> {
        ctx.bind()?;
        let flags = if timed {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let mut raw = std::ptr::null_mut();
        check(
            // SAFETY: writes one event handle; destroyed in Drop.
            unsafe { sys::cuEventCreate(&mut raw, flags as u32) },
            "cuEventCreate",
        )?;
        Ok(CudaEvent {
            ctx: ctx.clone(),
            raw,
            timed,
        })
    }

    pub fn raw(&self) -> sys::CUevent {
        self.raw
    }
}

impl Event for CudaEvent {
    fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: valid event handle.
        check(
            unsafe { sys::cuEventSynchronize(self.raw) },
            "cuEventSynchronize",
        )
    }
    fn is_complete(&self) -> Result<bool> {
        self.ctx.bind()?;
        // SAFETY: valid event handle.
        let r = unsafe { sys::cuEventQuery(self.raw) };
        if r == sys::CUresult::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        check(r, "cuEventQuery")?;
        Ok(true)
    }
    fn elapsed_since(&self, earlier: &dyn Event) -> Option<f64> {
        let e = earlier.as_any().downcast_ref::<CudaEvent>()?;
        if !self.timed || !e.timed || e.ctx.raw() != self.ctx.raw() {
            return None;
        }
        self.ctx.bind().ok()?;
        let mut ms = 0f32;
        // SAFETY: both are completed timing events of the same context.
        let r = unsafe { sys::cuEventElapsedTime_v2(&mut ms, e.raw, self.raw) };
        (r == sys::CUresult::CUDA_SUCCESS).then_some(ms as f64 / 1e3)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        let _ = self.ctx.bind();
        // SAFETY: destroys the event once; pending uses complete in the driver.
        unsafe { sys::cuEventDestroy_v2(self.raw) };
    }
}

/// A non-blocking CUDA stream, optionally with a cuBLAS handle bound to it.
pub struct CudaStream {
    ctx: Arc<Context>,
    raw: sys::CUstream,
    name: String,
    pub(crate) blas: Option<Mutex<CublasHandle>>,
}

// SAFETY: stream handles may be used from any thread; the cuBLAS handle is behind a Mutex.
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

impl std::fmt::Debug for CudaStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaStream")
            .field("name", &self.name)
            .finish()
    }
}

impl CudaStream {
    /// A new stream; `with_blas` binds a cuBLAS handle to it (compute streams).
    pub fn new(ctx: &Arc<Context>, name: String, with_blas: bool) -> Result<Arc<CudaStream>> {
        ctx.bind()?;
        let mut raw = std::ptr::null_mut();
        check(
            // SAFETY: writes one stream handle; destroyed in Drop.
            unsafe {
                sys::cuStreamCreate(&mut raw, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
            },
            "cuStreamCreate",
        )?;
        let mut s = CudaStream {
            ctx: ctx.clone(),
            raw,
            name,
            blas: None,
        };
        if with_blas {
            s.blas = Some(Mutex::new(CublasHandle::new(ctx, raw)?));
        }
        Ok(Arc::new(s))
    }

    pub fn raw(&self) -> sys::CUstream {
        self.raw
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    fn record_with(&self, timed: bool) -> Result<Arc<CudaEvent>> {
        let ev = CudaEvent::create(&self.ctx, timed)?;
        check(
            // SAFETY: valid event and stream of the current context.
            unsafe { sys::cuEventRecord(ev.raw, self.raw) },
            "cuEventRecord",
        )?;
        Ok(Arc::new(ev))
    }

    /// Records a CUDA event (typed, for backend-internal use).
    pub fn record_cuda(&self) -> Result<Arc<CudaEvent>> {
        self.record_with(false)
    }
}

impl Queue for CudaStream {
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
        match event.as_any().downcast_ref::<CudaEvent>() {
            Some(e) => {
                self.ctx.bind()?;
                // SAFETY: valid stream and event (events of other devices are allowed).
                check(
                    unsafe { sys::cuStreamWaitEvent(self.raw, e.raw, 0) },
                    "cuStreamWaitEvent",
                )
            }
            // Another backend's event: resolved on the host.
            None => event.synchronize(),
        }
    }
    fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: valid stream.
        check(
            unsafe { sys::cuStreamSynchronize(self.raw) },
            "cuStreamSynchronize",
        )
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: finish pending work, then destroy the stream once. The cuBLAS handle
            // (dropped after this body) is destroyed after the stream, which cuBLAS allows.
            unsafe {
                sys::cuStreamSynchronize(self.raw);
                sys::cuStreamDestroy_v2(self.raw);
            }
        }
    }
}
