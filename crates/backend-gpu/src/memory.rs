//! Device memory and page-locked host memory of runtime `A`.

use crate::current::CurrentGuard;
use crate::runtime::GpuRuntime;
use hetblas_core::{Buffer, MemorySpace, Result};
use std::sync::Arc;

/// A device allocation.
#[derive(Debug)]
pub struct DeviceBuffer<A: GpuRuntime> {
    ctx: Arc<A::Context>,
    ptr: u64,
    len: usize,
    space: MemorySpace,
}

impl<A: GpuRuntime> DeviceBuffer<A> {
    pub fn new(ctx: &Arc<A::Context>, space: MemorySpace, len: usize) -> Result<Self> {
        A::bind(ctx)?;
        Ok(DeviceBuffer {
            ctx: ctx.clone(),
            ptr: A::malloc(len.max(1))?,
            len,
            space,
        })
    }
}

impl<A: GpuRuntime> Buffer for DeviceBuffer<A> {
    fn space(&self) -> MemorySpace {
        self.space
    }
    fn addr(&self) -> u64 {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl<A: GpuRuntime> Drop for DeviceBuffer<A> {
    fn drop(&mut self) {
        // Dropped on the caller's thread too (a `DeviceMatrix` it lets go of).
        let _caller = CurrentGuard::<A>::save();
        if A::bind(&self.ctx).is_ok() {
            // SAFETY: frees the allocation once; the executor guarantees no pending use.
            unsafe { A::free(self.ptr) };
        }
    }
}

/// Page-locked host memory (portable: every device of the runtime can DMA it).
#[derive(Debug)]
pub struct PinnedBuffer<A: GpuRuntime> {
    ctx: Arc<A::Context>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: owns its allocation; the pointer is an address handed to ordered queues.
unsafe impl<A: GpuRuntime> Send for PinnedBuffer<A> {}
// SAFETY: as above; the buffer itself is never mutated.
unsafe impl<A: GpuRuntime> Sync for PinnedBuffer<A> {}

impl<A: GpuRuntime> PinnedBuffer<A> {
    pub fn new(ctx: &Arc<A::Context>, len: usize) -> Result<Self> {
        A::bind(ctx)?;
        Ok(PinnedBuffer {
            ctx: ctx.clone(),
            ptr: A::host_alloc(len.max(1))?,
            len,
        })
    }

    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl<A: GpuRuntime> Buffer for PinnedBuffer<A> {
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

impl<A: GpuRuntime> Drop for PinnedBuffer<A> {
    fn drop(&mut self) {
        let _caller = CurrentGuard::<A>::save();
        if A::bind(&self.ctx).is_ok() {
            // SAFETY: frees the allocation once; no queued copy still uses it.
            unsafe { A::host_free(self.ptr) };
        }
    }
}
