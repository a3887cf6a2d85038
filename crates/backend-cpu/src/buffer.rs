//! Host memory owned on behalf of a device: the CPU device's slots, and the "device memory" of
//! host-emulated devices (a separate space that lives in host RAM).

use hetblas_core::{Buffer, Error, MemorySpace, Result};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const ALIGN: usize = 4096;

/// A zeroed, page-aligned host allocation tagged with the space it stands for.
#[derive(Debug)]
pub struct HostBuffer {
    ptr: *mut u8,
    layout: Layout,
    len: usize,
    space: MemorySpace,
    /// Bytes in use in the owning space, decremented on drop.
    accounting: Option<Arc<AtomicU64>>,
}

// SAFETY: the buffer owns its allocation; the raw pointer is only an address handed to queues,
// whose accesses the executor orders.
unsafe impl Send for HostBuffer {}
// SAFETY: as above; &HostBuffer exposes only the address and length.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// Allocates `len` bytes (at least one page-aligned byte).
    pub fn new(len: usize, space: MemorySpace, accounting: Option<Arc<AtomicU64>>) -> Result<Self> {
        let layout =
            Layout::from_size_align(len.max(1), ALIGN).map_err(|e| Error::OutOfMemory {
                device: format!("{space:?}"),
                detail: format!("{len} bytes: {e}"),
            })?;
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::OutOfMemory {
                device: format!("{space:?}"),
                detail: format!("host allocation of {len} bytes failed"),
            });
        }
        if let Some(a) = &accounting {
            a.fetch_add(len as u64, Ordering::SeqCst);
        }
        Ok(HostBuffer {
            ptr,
            layout,
            len,
            space,
            accounting,
        })
    }
}

impl Buffer for HostBuffer {
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

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: ptr came from alloc_zeroed with this layout and is freed once.
        unsafe { dealloc(self.ptr, self.layout) };
        if let Some(a) = &self.accounting {
            a.fetch_sub(self.len as u64, Ordering::SeqCst);
        }
    }
}

/// Copies a 2D tile between host addresses, column by column.
///
/// # Safety
/// `src` and `dst` describe valid, non-overlapping host memory of the given shapes (the
/// executor only issues copies between an operand and a slot, or between two slots).
pub unsafe fn copy_2d_host(src: &hetblas_core::RawTile, dst: &hetblas_core::RawTile) {
    let col = src.row_bytes();
    if col == 0 {
        return;
    }
    if src.is_contiguous() && dst.is_contiguous() {
        // SAFETY: both tiles are contiguous runs of rows*cols elements (caller contract).
        unsafe {
            std::ptr::copy_nonoverlapping(src.addr as *const u8, dst.addr as *mut u8, src.bytes())
        };
        return;
    }
    for j in 0..src.cols {
        // SAFETY: column j of each tile lies inside it (caller contract).
        unsafe {
            std::ptr::copy_nonoverlapping(
                (src.addr + (j * src.pitch()) as u64) as *const u8,
                (dst.addr + (j * dst.pitch()) as u64) as *mut u8,
                col,
            )
        };
    }
}
