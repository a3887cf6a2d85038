//! Device memory and pinned host memory.

use crate::result::{self, Context};
use hetblas_core::{Buffer, MemorySpace, Result};
use std::ffi::c_void;
use std::sync::Arc;

/// A hipMalloc allocation.
#[derive(Debug)]
pub struct HipBuffer {
    ctx: Arc<Context>,
    ptr: *mut c_void,
    len: usize,
    space: MemorySpace,
}

// SAFETY: owns its allocation; the pointer is a device address handed to ordered queues.
unsafe impl Send for HipBuffer {}
// SAFETY: as above; the buffer itself is never mutated.
unsafe impl Sync for HipBuffer {}

impl HipBuffer {
    pub fn new(ctx: &Arc<Context>, space: MemorySpace, len: usize) -> Result<HipBuffer> {
        ctx.bind()?;
        let ptr = result::malloc(len.max(1))?;
        Ok(HipBuffer {
            ctx: ctx.clone(),
            ptr,
            len,
            space,
        })
    }

    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }
}

impl Buffer for HipBuffer {
    fn space(&self) -> MemorySpace {
        self.space
    }
    fn addr(&self) -> u64 {
        self.ptr as u64
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl Drop for HipBuffer {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: frees the allocation once; the executor guarantees no pending use.
            let _ = unsafe { result::free(self.ptr) };
        }
    }
}

/// Page-locked host memory from hipHostMalloc (portable: every device can DMA it).
#[derive(Debug)]
pub struct PinnedHostBuffer {
    ctx: Arc<Context>,
    ptr: *mut c_void,
    len: usize,
}

// SAFETY: owns its allocation; the pointer is an address handed to ordered queues.
unsafe impl Send for PinnedHostBuffer {}
// SAFETY: as above.
unsafe impl Sync for PinnedHostBuffer {}

impl PinnedHostBuffer {
    pub fn new(ctx: &Arc<Context>, len: usize) -> Result<PinnedHostBuffer> {
        ctx.bind()?;
        let ptr = result::host_malloc(len.max(1))?;
        Ok(PinnedHostBuffer {
            ctx: ctx.clone(),
            ptr,
            len,
        })
    }

    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr as *mut u8
    }
}

impl Buffer for PinnedHostBuffer {
    fn space(&self) -> MemorySpace {
        MemorySpace::HOST
    }
    fn addr(&self) -> u64 {
        self.ptr as u64
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl Drop for PinnedHostBuffer {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: frees the allocation once; no queued copy still uses it.
            let _ = unsafe { result::host_free(self.ptr) };
        }
    }
}
