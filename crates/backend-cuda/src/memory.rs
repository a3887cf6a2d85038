//! Device memory and pinned host memory.

use crate::driver::{check, Context};
use cudarc::driver::sys;
use hetblas_core::{Buffer, MemorySpace, Result};
use std::sync::Arc;

/// A cuMemAlloc allocation.
#[derive(Debug)]
pub struct CudaBuffer {
    ctx: Arc<Context>,
    ptr: sys::CUdeviceptr,
    len: usize,
    space: MemorySpace,
}

impl CudaBuffer {
    pub fn new(ctx: &Arc<Context>, space: MemorySpace, len: usize) -> Result<CudaBuffer> {
        ctx.bind()?;
        let mut ptr = 0;
        check(
            // SAFETY: writes one device pointer; freed in Drop.
            unsafe { sys::cuMemAlloc_v2(&mut ptr, len.max(1)) },
            "cuMemAlloc",
        )?;
        Ok(CudaBuffer {
            ctx: ctx.clone(),
            ptr,
            len,
            space,
        })
    }
}

impl Buffer for CudaBuffer {
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

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: frees the allocation once; the executor guarantees no pending use.
            unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

/// Page-locked host memory from cuMemHostAlloc (portable: every context can DMA it).
#[derive(Debug)]
pub struct PinnedHostBuffer {
    ctx: Arc<Context>,
    ptr: *mut std::ffi::c_void,
    len: usize,
}

// SAFETY: owns its allocation; the pointer is an address handed to ordered queues.
unsafe impl Send for PinnedHostBuffer {}
// SAFETY: as above.
unsafe impl Sync for PinnedHostBuffer {}

impl PinnedHostBuffer {
    pub fn new(ctx: &Arc<Context>, len: usize) -> Result<PinnedHostBuffer> {
        ctx.bind()?;
        let mut ptr = std::ptr::null_mut();
        check(
            // SAFETY: writes one host pointer; freed in Drop.
            unsafe { sys::cuMemHostAlloc(&mut ptr, len.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) },
            "cuMemHostAlloc",
        )?;
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
            // SAFETY: frees the allocation once.
            unsafe { sys::cuMemFreeHost(self.ptr) };
        }
    }
}
