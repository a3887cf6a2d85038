//! HIP links: host->device, device->host (hipMemcpy2DAsync on a dedicated stream of the device,
//! one per direction so both DMA engines work at once) and device->device peers
//! (hipMemcpyPeerAsync for contiguous tiles, hipMemcpy2DAsync device-to-device with peer access
//! enabled otherwise). Host memory that is not registered goes through pinned staging buffers:
//! host->device copies the tile into a staging buffer on the issuing thread, then DMA;
//! device->host DMAs into a staging buffer and a host function, run in stream order, copies it
//! out. Either way the copy stays ordered on the link's stream.

use crate::memory::PinnedHostBuffer;
use crate::pinning::PinCache;
use crate::result::{self, Context};
use crate::stream::{HipEvent, HipStream};
use crate::sys::memcpy;
use hetblas_core::link::check_copy;
use hetblas_core::{Error, Event, Link, LinkKind, MemorySpace, Queue, RawTile, Result};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

const STAGING_SLOTS: usize = 4;

struct StagingSlot {
    buf: Option<PinnedHostBuffer>,
    done: Option<Arc<HipEvent>>,
}

struct Staging {
    slots: Vec<StagingSlot>,
    next: usize,
}

/// A directed HIP copy channel.
pub struct HipLink {
    src: MemorySpace,
    dst: MemorySpace,
    kind: LinkKind,
    name: String,
    stream: Arc<HipStream>,
    queue: Arc<dyn Queue>,
    /// Devices of the source and destination (peer copies).
    src_ctx: Option<Arc<Context>>,
    dst_ctx: Option<Arc<Context>>,
    pins: Arc<PinCache>,
    staging: Mutex<Staging>,
}

impl std::fmt::Debug for HipLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipLink").field("name", &self.name).finish()
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

impl HipLink {
    #[allow(
        clippy::too_many_arguments,
        reason = "mirrors CudaLink::new; called from discovery only"
    )]
    pub fn new(
        src: MemorySpace,
        dst: MemorySpace,
        kind: LinkKind,
        name: String,
        stream: Arc<HipStream>,
        src_ctx: Option<Arc<Context>>,
        dst_ctx: Option<Arc<Context>>,
        pins: Arc<PinCache>,
    ) -> Arc<HipLink> {
        Arc::new(HipLink {
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

    /// A 2D copy between host and device (or device and device) on the link's stream.
    fn memcpy_2d(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let kind = match (src.space.is_host(), dst.space.is_host()) {
            (true, false) => memcpy::HOST_TO_DEVICE,
            (false, true) => memcpy::DEVICE_TO_HOST,
            (false, false) => memcpy::DEVICE_TO_DEVICE,
            (true, true) => memcpy::HOST_TO_HOST,
        };
        self.stream.context().bind()?;
        // SAFETY: the tiles are valid memory of their spaces (checked shapes, pitch >= column
        // bytes); the executor keeps them alive until the stream is synchronised.
        unsafe {
            result::memcpy_2d_async(
                dst.addr as *mut c_void,
                dst.pitch(),
                src.addr as *const c_void,
                src.pitch(),
                src.row_bytes(),
                src.cols,
                kind,
                self.stream.raw(),
            )
        }
    }

    fn memcpy_peer(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let (Some(sc), Some(dc)) = (&self.src_ctx, &self.dst_ctx) else {
            return Err(Error::internal("peer link without devices"));
        };
        self.stream.context().bind()?;
        if src.is_contiguous() && dst.is_contiguous() {
            // SAFETY: contiguous device ranges of `bytes` on their devices, alive until the
            // stream is synchronised.
            return unsafe {
                result::memcpy_peer_async(
                    dst.addr as *mut c_void,
                    dc.ordinal,
                    src.addr as *const c_void,
                    sc.ordinal,
                    src.bytes(),
                    self.stream.raw(),
                )
            };
        }
        // Strided: one 2D copy; the destination device has peer access to the source enabled
        // (discovery does it), so the source addresses are reachable from it.
        self.memcpy_2d(src, dst)
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
        // SAFETY: src is the caller's host tile; packed is a staging buffer of >= its bytes,
        // not in use (its previous copy finished).
        unsafe { host_copy_2d(src, &packed) };
        self.memcpy_2d(&packed, dst)?;
        st.slots[i].done = Some(self.stream.record_hip()?);
        Ok(())
    }

    fn copy_d2h_staged(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let (mut st, i) = self.staging_slot(src.bytes())?;
        let packed = Self::slot_tile(&st, i, src)?;
        self.memcpy_2d(src, &packed)?;
        let out = *dst;
        let job: result::HostJob = Box::new(move || {
            // SAFETY: runs after the DMA into the staging buffer, in stream order; the buffer
            // (kept by the link until the slot's event completes) and the destination (kept by
            // the executor until the stream is synchronised) outlive it; they do not overlap.
            unsafe { host_copy_2d(&packed, &out) }
        });
        // SAFETY: a live stream; the job calls no HIP API and touches only what is described
        // above.
        unsafe { result::launch_host_fn(self.stream.raw(), job) }?;
        st.slots[i].done = Some(self.stream.record_hip()?);
        Ok(())
    }
}

impl Link for HipLink {
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
