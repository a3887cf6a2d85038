//! CUDA links: host->device, device->host (cuMemcpy2DAsync on a dedicated stream of the
//! device, one per direction so both DMA engines work at once) and device->device peers
//! (cuMemcpy3DPeerAsync). Host memory that is not registered goes through pinned staging
//! buffers: host->device copies the tile into a staging buffer on the issuing thread, then DMA;
//! device->host DMAs into a staging buffer and a host function, run in stream order, copies it
//! out. Either way the copy stays ordered on the link's stream.

use crate::driver::{check, Context};
use crate::memory::PinnedHostBuffer;
use crate::pinning::PinCache;
use crate::stream::{CudaEvent, CudaStream};
use cudarc::driver::sys;
use hetblas_core::link::check_copy;
use hetblas_core::{Error, Event, Link, LinkKind, MemorySpace, Queue, RawTile, Result};
use std::sync::{Arc, Mutex};

const STAGING_SLOTS: usize = 4;

struct StagingSlot {
    buf: Option<PinnedHostBuffer>,
    done: Option<Arc<CudaEvent>>,
}

struct Staging {
    slots: Vec<StagingSlot>,
    next: usize,
}

/// A directed CUDA copy channel.
pub struct CudaLink {
    src: MemorySpace,
    dst: MemorySpace,
    kind: LinkKind,
    name: String,
    stream: Arc<CudaStream>,
    queue: Arc<dyn Queue>,
    /// Contexts of the source and destination devices (peer copies).
    src_ctx: Option<Arc<Context>>,
    dst_ctx: Option<Arc<Context>>,
    pins: Arc<PinCache>,
    staging: Mutex<Staging>,
}

impl std::fmt::Debug for CudaLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaLink")
            .field("name", &self.name)
            .finish()
    }
}

/// Column-by-column copy between host tiles (staging).
///
/// # Safety
/// Both tiles are valid, non-overlapping host memory of their shapes.
unsafe fn host_copy_2d(src: &RawTile, dst: &RawTile) {
    let col = src.row_bytes();
    for j in 0..src.cols {
        // SAFETY: column j lies inside both tiles (caller contract).
        unsafe {
            std::ptr::copy_nonoverlapping(
                (src.addr + (j * src.pitch()) as u64) as *const u8,
                (dst.addr + (j * dst.pitch()) as u64) as *mut u8,
                col,
            )
        };
    }
}

struct HostFnCopy {
    src: RawTile,
    dst: RawTile,
}

unsafe extern "C" fn run_host_copy(user: *mut std::ffi::c_void) {
    // SAFETY: `user` is the Box<HostFnCopy> leaked by `copy_d2h_staged`, consumed once here.
    let job = unsafe { Box::from_raw(user as *mut HostFnCopy) };
    // SAFETY: the staging buffer and the destination stay alive until the stream is
    // synchronised (the link keeps the buffer, the executor the operand).
    unsafe { host_copy_2d(&job.src, &job.dst) };
}

impl CudaLink {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        src: MemorySpace,
        dst: MemorySpace,
        kind: LinkKind,
        name: String,
        stream: Arc<CudaStream>,
        src_ctx: Option<Arc<Context>>,
        dst_ctx: Option<Arc<Context>>,
        pins: Arc<PinCache>,
    ) -> Arc<CudaLink> {
        Arc::new(CudaLink {
            src,
            dst,
            kind,
            name,
            queue: stream.clone(),
            stream,
            src_ctx,
            dst_ctx,
            pins,
            staging: Mutex::new(Staging {
                slots: (0..STAGING_SLOTS)
                    .map(|_| StagingSlot {
                        buf: None,
                        done: None,
                    })
                    .collect(),
                next: 0,
            }),
        })
    }

    fn memcpy_2d(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let host_or_dev = |t: &RawTile| {
            if t.space.is_host() {
                sys::CUmemorytype::CU_MEMORYTYPE_HOST
            } else {
                sys::CUmemorytype::CU_MEMORYTYPE_DEVICE
            }
        };
        let p = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: host_or_dev(src),
            srcHost: if src.space.is_host() {
                src.addr as *const std::ffi::c_void
            } else {
                std::ptr::null()
            },
            srcDevice: if src.space.is_host() { 0 } else { src.addr },
            srcArray: std::ptr::null_mut(),
            srcPitch: src.pitch(),
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: host_or_dev(dst),
            dstHost: if dst.space.is_host() {
                dst.addr as *mut std::ffi::c_void
            } else {
                std::ptr::null_mut()
            },
            dstDevice: if dst.space.is_host() { 0 } else { dst.addr },
            dstArray: std::ptr::null_mut(),
            dstPitch: dst.pitch(),
            WidthInBytes: src.row_bytes(),
            Height: src.cols,
        };
        self.stream.context().bind()?;
        // SAFETY: the tiles are valid memory of their spaces (checked shapes); the executor
        // keeps them alive until the stream is synchronised.
        check(
            unsafe { sys::cuMemcpy2DAsync_v2(&p, self.stream.raw()) },
            "cuMemcpy2DAsync",
        )
    }

    fn memcpy_peer(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let (Some(sc), Some(dc)) = (&self.src_ctx, &self.dst_ctx) else {
            return Err(hetblas_core::Error::internal("peer link without contexts"));
        };
        self.stream.context().bind()?;
        if src.is_contiguous() && dst.is_contiguous() {
            // SAFETY: contiguous device ranges of `bytes` in their contexts.
            return check(
                unsafe {
                    sys::cuMemcpyPeerAsync(
                        dst.addr,
                        dc.raw(),
                        src.addr,
                        sc.raw(),
                        src.bytes(),
                        self.stream.raw(),
                    )
                },
                "cuMemcpyPeerAsync",
            );
        }
        let dev = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        let p = sys::CUDA_MEMCPY3D_PEER {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: dev,
            srcHost: std::ptr::null(),
            srcDevice: src.addr,
            srcArray: std::ptr::null_mut(),
            srcContext: sc.raw(),
            srcPitch: src.pitch(),
            // Height of a slice in memcpy rows (our columns): must be at least `Height`, or
            // the driver rejects copies of tiles with fewer rows than columns.
            srcHeight: src.cols.max(1),
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: dev,
            dstHost: std::ptr::null_mut(),
            dstDevice: dst.addr,
            dstArray: std::ptr::null_mut(),
            dstContext: dc.raw(),
            dstPitch: dst.pitch(),
            dstHeight: dst.cols.max(1),
            WidthInBytes: src.row_bytes(),
            Height: src.cols,
            Depth: 1,
        };
        // SAFETY: as for memcpy_2d.
        check(
            unsafe { sys::cuMemcpy3DPeerAsync(&p, self.stream.raw()) },
            "cuMemcpy3DPeerAsync",
        )
    }

    /// A staging slot large enough for `bytes`, free of earlier use.
    fn staging_slot(&self, bytes: usize) -> Result<(std::sync::MutexGuard<'_, Staging>, usize)> {
        let mut st = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        let i = st.next;
        st.next = (i + 1) % STAGING_SLOTS;
        if let Some(ev) = st.slots[i].done.take() {
            ev.synchronize()?;
        }
        if st.slots[i]
            .buf
            .as_ref()
            .is_none_or(|b| hetblas_core::Buffer::len(b) < bytes)
        {
            st.slots[i].buf = None;
            st.slots[i].buf = Some(PinnedHostBuffer::new(self.stream.context(), bytes)?);
        }
        Ok((st, i))
    }

    /// The packed host tile of staging slot `i` shaped like `like`.
    fn slot_tile(st: &Staging, i: usize, like: &RawTile) -> Result<RawTile> {
        let buf = st.slots[i]
            .buf
            .as_ref()
            .ok_or_else(|| Error::internal("staging slot not allocated"))?;
        Ok(RawTile {
            space: MemorySpace::HOST,
            addr: buf.as_mut_ptr() as u64,
            ld: like.rows.max(1),
            ..*like
        })
    }

    fn copy_h2d_staged(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let (mut st, i) = self.staging_slot(src.bytes())?;
        let packed = Self::slot_tile(&st, i, src)?;
        // SAFETY: src is the caller's host tile; packed is a staging buffer of >= its bytes.
        unsafe { host_copy_2d(src, &packed) };
        self.memcpy_2d(&packed, dst)?;
        st.slots[i].done = Some(self.stream.record_cuda()?);
        Ok(())
    }

    fn copy_d2h_staged(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let (mut st, i) = self.staging_slot(src.bytes())?;
        let packed = Self::slot_tile(&st, i, src)?;
        self.memcpy_2d(src, &packed)?;
        let job = Box::into_raw(Box::new(HostFnCopy {
            src: packed,
            dst: *dst,
        }));
        // SAFETY: the callback consumes the box exactly once, in stream order after the DMA.
        let r = unsafe {
            sys::cuLaunchHostFunc(
                self.stream.raw(),
                Some(run_host_copy),
                job as *mut std::ffi::c_void,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: the callback was not enqueued, so the box is still ours.
            drop(unsafe { Box::from_raw(job) });
        }
        check(r, "cuLaunchHostFunc")?;
        st.slots[i].done = Some(self.stream.record_cuda()?);
        Ok(())
    }
}

impl Link for CudaLink {
    fn src(&self) -> MemorySpace {
        self.src
    }
    fn dst(&self) -> MemorySpace {
        self.dst
    }
    fn kind(&self) -> LinkKind {
        self.kind
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn queue(&self) -> &Arc<dyn Queue> {
        &self.queue
    }
    fn copy(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        check_copy(self, src, dst)?;
        if src.is_empty() {
            return Ok(());
        }
        match self.kind {
            LinkKind::Peer => self.memcpy_peer(src, dst),
            LinkKind::HostToDevice => {
                if self.pins.is_pinned(src.addr, src.extent_bytes()) {
                    self.memcpy_2d(src, dst)
                } else {
                    self.copy_h2d_staged(src, dst)
                }
            }
            LinkKind::DeviceToHost => {
                if self.pins.is_pinned(dst.addr, dst.extent_bytes()) {
                    self.memcpy_2d(src, dst)
                } else {
                    self.copy_d2h_staged(src, dst)
                }
            }
        }
    }
}
