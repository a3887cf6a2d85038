//! Links of runtime `A`: host->device and device->host (2D copies on a dedicated stream of the
//! device, one per direction so both DMA engines work at once) and device->device peers (on a
//! stream of the destination device, which has peer access to the source).
//!
//! Host memory that is not registered goes through a ring of pinned staging buffers:
//! host->device packs the tile into a staging buffer on the issuing thread, then DMA;
//! device->host DMAs into a staging buffer on the link's stream, and a thread of the link copies
//! it out after the DMA (`copy_out.rs`): the next DMA does not wait behind the copy-out.
//! The link's queue ([`OutQueue`]) records its events after both, so an event still says that
//! the copies issued before it are in their destination.

use crate::copy_out::{CopyOuts, StagedEvent};
use crate::memory::PinnedBuffer;
use crate::registration::PinCache;
use crate::runtime::{Copy2D, GpuRuntime, HostJob};
use crate::stream::GpuStream;
use hetblas_core::fault::{FaultInjector, FaultOp};
use hetblas_core::link::check_copy;
use hetblas_core::{Buffer, Error, Event, Link, LinkKind, MemorySpace, Queue, RawTile, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// Staging buffers per link: enough for the copies of a few tiles to be in flight.
const STAGING_SLOTS: usize = 4;

struct StagingSlot<A: GpuRuntime> {
    buf: Option<PinnedBuffer<A>>,
    /// Recorded after the slot's last copy (its copy-out included); the slot is reused once it
    /// completes.
    done: Option<Arc<dyn Event>>,
}

struct Staging<A: GpuRuntime> {
    slots: Vec<StagingSlot<A>>,
    next: usize,
}

/// What a link connects: the host, or a device (its context).
pub enum End<A: GpuRuntime> {
    Host,
    Device(MemorySpace, Arc<A::Context>),
}

impl<A: GpuRuntime> End<A> {
    fn space(&self) -> MemorySpace {
        match self {
            End::Host => MemorySpace::HOST,
            End::Device(space, _) => *space,
        }
    }
}

/// The queue of a device->host link. Copies run on `stream`; the copy-outs of staged copies run
/// on a thread of the link (`copy_out::CopyOuts`, started by the first), each after its DMA, so the
/// next DMA does not wait behind a copy-out (NumPy's `a @ b` at 16384, a fresh C staged, spent
/// 6 ms per 128 MiB tile on the link's stream against 2.6 ms registered when the copy-out held
/// the stream). Events recorded while copy-outs are pending are `StagedEvent`s: complete when
/// every copy before them, copy-outs included, is done, as the executor expects of a
/// write-back's event.
pub struct OutQueue<A: GpuRuntime> {
    stream: Arc<GpuStream<A>>,
    outs: OnceLock<Arc<CopyOuts>>,
}

impl<A: GpuRuntime> std::fmt::Debug for OutQueue<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutQueue")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl<A: GpuRuntime> Drop for OutQueue<A> {
    fn drop(&mut self) {
        if let Some(outs) = self.outs.get() {
            // The copy-outs read staging buffers that go with the link.
            let _ = outs.wait(outs.last());
            outs.stop();
        }
    }
}

impl<A: GpuRuntime> OutQueue<A> {
    fn new(stream: Arc<GpuStream<A>>) -> Arc<Self> {
        Arc::new(OutQueue {
            stream,
            outs: OnceLock::new(),
        })
    }

    /// The copy-out thread, started on first use.
    fn outs(&self) -> Result<&Arc<CopyOuts>> {
        if let Some(o) = self.outs.get() {
            return Ok(o);
        }
        let started = CopyOuts::start(format!("hetblas-{}-out", self.stream.name()))?;
        Ok(self.outs.get_or_init(|| started))
    }

    /// Queues `job` after everything issued on the stream so far (a staged copy's DMA); returns
    /// the event of both.
    fn copy_out_after_stream(&self, job: HostJob) -> Result<Arc<dyn Event>> {
        let outs = self.outs()?;
        let dma = self.stream.record_typed(false)?;
        let n = outs.push(dma.clone(), job);
        Ok(Arc::new(StagedEvent::new(dma, n, outs.clone())))
    }

    /// An event after everything issued so far, copy-outs included.
    fn record_after_all(&self, timed: bool) -> Result<Arc<dyn Event>> {
        let dma = self.stream.record_typed(timed)?;
        let Some(outs) = self.outs.get() else {
            return Ok(dma);
        };
        Ok(match outs.pending()? {
            Some(n) => Arc::new(StagedEvent::new(dma, n, outs.clone())),
            None => dma,
        })
    }
}

impl<A: GpuRuntime> Queue for OutQueue<A> {
    fn name(&self) -> &str {
        self.stream.name()
    }
    fn record(&self) -> Result<Arc<dyn Event>> {
        self.record_after_all(false)
    }
    fn record_timed(&self) -> Result<Arc<dyn Event>> {
        self.record_after_all(true)
    }
    fn can_wait(&self, event: &dyn Event) -> bool {
        self.stream.can_wait(event)
    }
    fn wait(&self, event: &Arc<dyn Event>) -> Result<()> {
        // Copy-outs follow their DMA, so waiting on the stream holds them too.
        self.stream.wait(event)
    }
    fn synchronize(&self) -> Result<()> {
        let outs = self.outs.get().map(|o| (o, o.last()));
        // A failed stream still has copy-outs writing the program's memory: the caller may
        // free or restore it once this returns, so they finish first (a failed DMA's own
        // copy-out is skipped, so this does not wait long).
        let synced = self.stream.synchronize();
        let drained = match outs {
            Some((o, n)) => o.drain(n),
            None => Ok(()),
        };
        synced.and(drained)
    }
}

/// A directed copy channel of runtime `A`.
pub struct GpuLink<A: GpuRuntime> {
    src: End<A>,
    dst: End<A>,
    kind: LinkKind,
    name: String,
    stream: Arc<GpuStream<A>>,
    queue: Arc<dyn Queue>,
    /// Device->host links: the same queue, typed (its copy-out thread).
    out: Option<Arc<OutQueue<A>>>,
    pins: Arc<PinCache<A>>,
    staging: Mutex<Staging<A>>,
    /// Nanoseconds spent allocating staging buffers ([`Link::staging_alloc_seconds`]).
    staging_alloc_ns: AtomicU64,
    /// Fault injectors of the devices at its ends (see [`GpuLink::set_faults`]).
    faults: std::sync::OnceLock<Vec<Arc<FaultInjector>>>,
}

impl<A: GpuRuntime> std::fmt::Debug for GpuLink<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuLink").field("name", &self.name).finish()
    }
}

/// Column-by-column copy between host tiles (staging). Tiles of [`STREAMING_MIN_BYTES`] and
/// more are written with non-temporal stores where the target has them.
///
/// # Safety
/// Both tiles are valid, non-overlapping host memory of their shapes.
unsafe fn host_copy_2d(src: &RawTile, dst: &RawTile) {
    let streaming = src.bytes() >= STREAMING_MIN_BYTES;
    for j in 0..src.cols {
        let (from, to) = (
            (src.addr + (j * src.pitch()) as u64) as *const u8,
            (dst.addr + (j * dst.pitch()) as u64) as *mut u8,
        );
        // SAFETY: column j lies inside both tiles (caller contract).
        unsafe {
            if streaming {
                copy_streaming(from, to, src.row_bytes())
            } else {
                std::ptr::copy_nonoverlapping(from, to, src.row_bytes())
            }
        };
    }
    if streaming {
        store_fence();
    }
}

/// Staged copies at least this large bypass the caches: their destination is not read again
/// soon (a write-back's C, or a staging buffer the DMA engine reads), and a plain store first
/// reads each destination line in. A copy of a whole tile is far larger than the caches.
const STREAMING_MIN_BYTES: usize = 2 << 20;

/// `copy_nonoverlapping` of `len` bytes with non-temporal stores (x86-64: 16-byte streaming
/// stores from the first 16-byte boundary of `dst`; plain copies of the ends). Callers end
/// with [`store_fence`] before anything else may read the bytes.
///
/// # Safety
/// As `copy_nonoverlapping`.
#[cfg(target_arch = "x86_64")]
unsafe fn copy_streaming(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let head = dst.align_offset(16).min(len);
    let body = (len - head) / 16 * 16;
    // SAFETY: every access below lies in [0, len) of both ranges (caller contract); the
    // streaming stores' addresses are 16-byte aligned (`head` puts them there); SSE2 is part of
    // x86-64.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut i = head;
        while i < head + body {
            let v = _mm_loadu_si128(src.add(i) as *const __m128i);
            _mm_stream_si128(dst.add(i) as *mut __m128i, v);
            i += 16;
        }
        std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i);
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn copy_streaming(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
}

/// Orders this thread's streaming stores before its later stores (the copy's completion).
fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SFENCE has no operands and is part of x86-64 (SSE).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// Bytes a staging copy thread takes at least: below this, one thread copies the tile. On the
/// H200 host (16 cores, pip NumPy's `a @ b`, fresh output, staged; 2026-11-29) 1 MiB against
/// the earlier 8 MiB took n = 4096 from 0.165 to 0.124 s and 8192 from 0.230 to 0.200 s (its
/// 8 MiB tiles had been packed and copied out by one thread); 16384 (128 MiB tiles) unchanged.
const STAGING_BYTES_PER_THREAD: usize = 1 << 20;

/// [`host_copy_2d`] on several threads for large tiles: a staged copy into fresh memory (a
/// program's new output array) first-touches every page, and faults scale with threads.
///
/// # Safety
/// As [`host_copy_2d`].
unsafe fn host_copy_2d_parallel(src: &RawTile, dst: &RawTile) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(src.bytes() / STAGING_BYTES_PER_THREAD)
        .min(src.cols);
    if threads <= 1 {
        // SAFETY: forwarded contract.
        unsafe { host_copy_2d(src, dst) };
        return;
    }
    let per = src.cols.div_ceil(threads);
    let part = |first: usize| {
        let cols = per.min(src.cols - first);
        let (s, d) = (
            src.sub(0, first, src.rows, cols),
            dst.sub(0, first, dst.rows, cols),
        );
        // SAFETY: columns [first, first + cols) of both tiles, disjoint from the other parts'
        // columns; the tiles outlive the copy (caller contract), which returns once every
        // part is done.
        unsafe { host_copy_2d(&s, &d) }
    };
    match copy_threads() {
        Some(pool) => pool.scope(|scope| {
            for first in (0..src.cols).step_by(per) {
                scope.spawn(move |_| part(first));
            }
        }),
        None => std::thread::scope(|scope| {
            for first in (0..src.cols).step_by(per) {
                scope.spawn(move || part(first));
            }
        }),
    }
}

/// The threads staged copies run on, kept for the process: a copy-out of a 8 MiB tile that
/// started its own threads spent about as long starting them as copying (H200 host, NumPy's
/// `a @ b` 4096 with a fresh output: 16 copy-outs of 0.4-1.1 ms each, 2026-11-30). `None`
/// when the threads cannot be started: each copy then starts its own.
fn copy_threads() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(std::thread::available_parallelism().map_or(1, |n| n.get()))
            .thread_name(|i| format!("hetblas-copy-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

impl<A: GpuRuntime> GpuLink<A> {
    /// A link `src -> dst` named `name` ("host->cuda0"), copying on `stream` (of the device
    /// that is not the host; for peers, of the destination).
    pub fn new(
        name: String,
        src: End<A>,
        dst: End<A>,
        stream: Arc<GpuStream<A>>,
        pins: Arc<PinCache<A>>,
    ) -> Arc<Self> {
        let kind = match (&src, &dst) {
            (End::Host, _) => LinkKind::HostToDevice,
            (_, End::Host) => LinkKind::DeviceToHost,
            _ => LinkKind::Peer,
        };
        let out = (kind == LinkKind::DeviceToHost).then(|| OutQueue::new(stream.clone()));
        let queue: Arc<dyn Queue> = match &out {
            Some(o) => o.clone(),
            None => stream.clone(),
        };
        Arc::new(GpuLink {
            name,
            src,
            dst,
            kind,
            queue,
            out,
            stream,
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
            staging_alloc_ns: AtomicU64::new(0),
            faults: std::sync::OnceLock::new(),
        })
    }

    /// Fails copies where the injectors of its end devices say ([`hetblas_core::fault`]):
    /// `faults[0]` (the device that issues on it) counts its copies, any lost end fails them.
    /// Set once, at discovery.
    pub fn set_faults(&self, faults: Vec<Arc<FaultInjector>>) {
        let _ = self.faults.set(faults);
    }

    /// The link's stream, typed.
    pub fn stream(&self) -> &Arc<GpuStream<A>> {
        &self.stream
    }

    fn copy_2d(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        A::bind(self.stream.context())?;
        // SAFETY: the tiles are valid memory of their spaces (checked shapes, pitch >= column
        // bytes); the executor keeps them alive until the stream is synchronised.
        unsafe { A::copy_2d_async(&Copy2D::tiles(src, dst), self.stream.raw()) }
    }

    fn copy_peer(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let (End::Device(_, sc), End::Device(_, dc)) = (&self.src, &self.dst) else {
            return Err(Error::internal("peer link without devices"));
        };
        A::bind(self.stream.context())?;
        // SAFETY: as for copy_2d; discovery enabled peer access from dst's device to src's.
        unsafe { A::copy_peer_async(src, sc, dst, dc, self.stream.raw()) }
    }

    /// The next staging slot, free of its earlier copy and large enough for `bytes`, with the
    /// packed host tile shaped like `like` in it.
    fn staging_slot(&self, like: &RawTile) -> Result<(MutexGuard<'_, Staging<A>>, usize, RawTile)> {
        let mut st = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        let i = st.next;
        st.next = (i + 1) % STAGING_SLOTS;
        if let Some(ev) = st.slots[i].done.take() {
            ev.synchronize()?;
        }
        let small =
            |slot: &StagingSlot<A>| slot.buf.as_ref().is_none_or(|b| b.len() < like.bytes());
        if small(&st.slots[i]) {
            // The ring grows as a whole: its idle slots too, now (best effort: only this slot
            // must be had). Grown one slot at a time as the ring came round, a call of one tile
            // per link paid a page-locked allocation in each of its first four calls (19-23 ms
            // each for 2048^2 f64 C tiles on the H200 host, 2026-12-01), and the drop-in's
            // learned route leaves one-time costs out of a shape's first call only.
            let allocating = Instant::now();
            st.slots[i].buf = None;
            st.slots[i].buf = Some(PinnedBuffer::new(self.stream.context(), like.bytes())?);
            for k in (1..STAGING_SLOTS).map(|k| (i + k) % STAGING_SLOTS) {
                let slot = &mut st.slots[k];
                let idle = slot
                    .done
                    .as_ref()
                    .is_none_or(|ev| ev.is_complete().unwrap_or(false));
                if idle && small(slot) {
                    slot.done = None;
                    slot.buf = None;
                    slot.buf = PinnedBuffer::new(self.stream.context(), like.bytes()).ok();
                }
            }
            let ns = allocating
                .elapsed()
                .as_nanos()
                .try_into()
                .unwrap_or(u64::MAX);
            self.staging_alloc_ns.fetch_add(ns, Ordering::Relaxed);
        }
        let addr = st.slots[i]
            .buf
            .as_ref()
            .map_or(0, |b| b.as_mut_ptr() as u64);
        let packed = RawTile {
            space: MemorySpace::HOST,
            addr,
            ld: like.rows.max(1),
            ..*like
        };
        Ok((st, i, packed))
    }

    fn copy_h2d_staged(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let (mut st, i, packed) = self.staging_slot(src)?;
        if let Some(b) = self.pins.background_of(src.addr, src.extent_bytes()) {
            b.claim(src.addr, src.extent_bytes());
        }
        // SAFETY: src is the caller's host tile; packed is a staging buffer of >= its bytes,
        // not in use (its previous copy finished).
        unsafe { host_copy_2d_parallel(src, &packed) };
        self.copy_2d(&packed, dst)?;
        st.slots[i].done = Some(self.stream.record_typed(false)? as Arc<dyn Event>);
        Ok(())
    }

    fn copy_d2h_staged(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        let (mut st, i, packed) = self.staging_slot(src)?;
        self.copy_2d(src, &packed)?;
        let to = *dst;
        // A fresh output populated during the call: the copy-out takes its range first.
        let background = self.pins.background_of(dst.addr, dst.extent_bytes());
        let job: HostJob = Box::new(move || {
            if let Some(b) = &background {
                b.claim(to.addr, to.extent_bytes());
            }
            // SAFETY: runs once the copy-out thread has seen the DMA into the staging buffer
            // complete; the buffer (kept by the link until the slot's event completes) and the
            // destination (kept by the executor until the link's queue is synchronised) outlive
            // it; they do not overlap.
            unsafe { host_copy_2d_parallel(&packed, &to) }
        });
        // Only device->host links stage these copies, and each has its queue.
        let q = self
            .out
            .as_ref()
            .ok_or_else(|| Error::internal("a staged device->host copy on a link without one"))?;
        st.slots[i].done = Some(q.copy_out_after_stream(job)?);
        Ok(())
    }
}

impl<A: GpuRuntime> Link for GpuLink<A> {
    fn src(&self) -> MemorySpace {
        self.src.space()
    }
    fn dst(&self) -> MemorySpace {
        self.dst.space()
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
    fn staging_alloc_seconds(&self) -> f64 {
        self.staging_alloc_ns.load(Ordering::Relaxed) as f64 * 1e-9
    }
    fn copy(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        check_copy(self, src, dst)?;
        if src.is_empty() {
            return Ok(());
        }
        for (i, f) in self.faults.get().into_iter().flatten().enumerate() {
            if i == 0 {
                f.check(FaultOp::Copy)?;
            } else {
                f.alive()?;
            }
        }
        match self.kind {
            LinkKind::Peer => self.copy_peer(src, dst),
            LinkKind::HostToDevice if !self.pins.is_pinned(src.addr, src.extent_bytes()) => {
                self.copy_h2d_staged(src, dst)
            }
            LinkKind::DeviceToHost if !self.pins.is_pinned(dst.addr, dst.extent_bytes()) => {
                self.copy_d2h_staged(src, dst)
            }
            LinkKind::HostToDevice | LinkKind::DeviceToHost => self.copy_2d(src, dst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetblas_core::DType;

    fn tile(buf: &mut [f64], rows: usize, cols: usize, ld: usize) -> RawTile {
        assert!(buf.len() >= ld * (cols - 1) + rows);
        RawTile {
            space: MemorySpace::HOST,
            addr: buf.as_mut_ptr() as u64,
            rows,
            cols,
            ld,
            dtype: DType::F64,
        }
    }

    #[test]
    fn streaming_copies_move_exactly_their_bytes_at_any_alignment() {
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        for (from, to, len) in [
            (0, 0, 4000),
            (1, 5, 3001),
            (3, 16, 17),
            (9, 2, 15),
            (0, 0, 0),
        ] {
            let mut dst = vec![0xAAu8; 4200];
            // SAFETY: both ranges lie inside their vectors, which do not overlap.
            unsafe { copy_streaming(src.as_ptr().add(from), dst.as_mut_ptr().add(to), len) };
            store_fence();
            assert_eq!(&dst[to..to + len], &src[from..from + len]);
            assert!(dst[..to].iter().chain(&dst[to + len..]).all(|&b| b == 0xAA));
        }
    }

    #[test]
    fn parallel_staging_copy_moves_exactly_the_tile() {
        // 2.5 threads' worth of bytes, padded leading dimensions on both sides, an odd column
        // count so that the last part is shorter.
        let (rows, cols) = (1000, (5 * STAGING_BYTES_PER_THREAD / 2 / 8000) | 1);
        let (lds, ldd) = (rows + 3, rows + 11);
        let mut src: Vec<f64> = (0..lds * cols).map(|i| i as f64 * 0.5 + 1.0).collect();
        let mut dst = vec![-7.0f64; ldd * cols];
        let (s, d) = (
            tile(&mut src, rows, cols, lds),
            tile(&mut dst, rows, cols, ldd),
        );
        // SAFETY: both tiles lie inside their vectors, which do not overlap.
        unsafe { host_copy_2d_parallel(&s, &d) };
        for j in 0..cols {
            for i in 0..ldd {
                let want = if i < rows { src[i + j * lds] } else { -7.0 };
                assert_eq!(dst[i + j * ldd], want, "({i}, {j})");
            }
        }
    }
}
