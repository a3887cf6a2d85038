//! The runtime's side of the host registration cache ([`cache`](super::cache)): register,
//! unregister, and the one verification of cached registrations.
//!
//! A cached registration is trusted only when (1) the runtime still knows it (a registration
//! someone else dropped would leave the cache believing in pinned memory that is not), and
//! (2) words copied from the registered host addresses to a device scratch, with the same kind
//! of 2D host-typed copy the data takes, equal what the CPU reads there; for memory the call
//! will write, (3) a word other than the one there, copied from the device to the host
//! address, appears at the CPU address (the CPU then restores it). Reading through the mapped
//! device pointer instead is NOT equivalent: on H200 / driver 580 it saw the new pages of a
//! remapped buffer while host-pointer copies still used the stale ones.
//!
//! The CUDA and HIP backends had drifted apart here (32 probes without the runtime check, 16
//! probes with it); this is the union: the runtime check costs one call, and 32 probe words
//! cost the same single 2D copy as 16 while catching a partial remap of a buffer more often.

use super::cache::{PinPolicy, Registered, Registrar, PAGE};
use crate::current::CurrentGuard;
use crate::memory::{DeviceBuffer, PinnedBuffer};
use crate::runtime::{Copy2D, CopyKind, GpuRuntime};
use crate::stream::GpuStream;
use hetblas_core::{Buffer, HostAccess, MemorySpace, Result};
use std::sync::{Arc, Mutex};

/// Words compared per verification.
pub const PROBES: usize = 32;

/// The registration cache of one runtime (shared by all its devices).
pub type PinCache<A> = super::cache::PinCache<GpuRegistrar<A>>;

/// The runtime calls behind the cache.
pub struct GpuRegistrar<A: GpuRuntime> {
    ctx: Arc<A::Context>,
    /// Idle probe scratch, one per verification at a time, so that the checks of concurrent
    /// calls run side by side. Each has its own stream: the probes of A, B and C are issued
    /// together and waited for once (one after another, synchronous, they were most of the
    /// 61-68 us a small call spent before its first task on H200).
    scratch: Mutex<Vec<Scratch<A>>>,
}

/// An output's first word (where, its value, the value written over it) while a probe writes it.
type Flip = (*mut [u8; 8], [u8; 8], [u8; 8]);

/// The two words a probe writes over an output's first word, whichever differs from its value.
/// They sit in the device scratch from its creation on, so that the write is one device->host
/// copy (it was a host->device copy of the flipped value first, then that one).
const MARKS: [[u8; 8]; 2] = [[0xa5; 8], [0x5a; 8]];
/// Words of each scratch buffer: [`BATCH`] ranges' probes, then the [`MARKS`] (staged in the
/// pinned buffer once, kept in the device's).
const SCRATCH_WORDS: usize = BATCH * PROBES + MARKS.len();

/// Ranges verified together: a call's A, B and C, and a workspace.
pub const BATCH: usize = 4;

/// Pinned and device scratch for [`BATCH`] ranges' probes (the device's also holds the
/// [`MARKS`] after them), and the stream the probes run on.
struct Scratch<A: GpuRuntime> {
    pinned: PinnedBuffer<A>,
    device: DeviceBuffer<A>,
    stream: Arc<GpuStream<A>>,
}

impl<A: GpuRuntime> Scratch<A> {
    fn new(ctx: &Arc<A::Context>) -> Result<Self> {
        let bytes = SCRATCH_WORDS * 8;
        let s = Scratch {
            pinned: PinnedBuffer::new(ctx, bytes)?,
            device: DeviceBuffer::new(ctx, MemorySpace::HOST, bytes)?,
            stream: GpuStream::new(ctx, "registration probes".into(), false)?,
        };
        // The marks, staged in the pinned words after the probes and copied to the same place
        // on the device once.
        let (pinned, at) = (s.pinned.as_mut_ptr(), BATCH * PROBES * 8);
        for (i, mark) in MARKS.iter().enumerate() {
            // SAFETY: the pinned scratch holds MARKS.len() words after the probes; ours.
            unsafe { std::ptr::write_volatile(pinned.add(at + i * 8) as *mut [u8; 8], *mark) };
        }
        let copy = Copy2D {
            height: MARKS.len(),
            ..word(
                pinned as u64 + at as u64,
                s.device.addr() + at as u64,
                CopyKind::HostToDevice,
            )
        };
        // SAFETY: pinned -> device scratch, MARKS.len() words of both, ours; waited for below.
        unsafe { A::copy_2d_async(&copy, s.stream.raw()) }?;
        // SAFETY: the scratch's stream is live.
        unsafe { A::stream_synchronize(s.stream.raw()) }?;
        Ok(s)
    }
}

impl<A: GpuRuntime> GpuRegistrar<A> {
    /// A cache over the registrar of `ctx`'s device with `policy`.
    pub fn cache(ctx: Arc<A::Context>, policy: PinPolicy) -> PinCache<A> {
        let registrar = GpuRegistrar {
            ctx,
            scratch: Mutex::new(Vec::new()),
        };
        super::cache::PinCache::new(registrar, policy)
    }
}

/// One word copy between a host address and a device address, synchronous.
fn word(src: u64, dst: u64, kind: CopyKind) -> Copy2D {
    Copy2D {
        src,
        src_pitch: 8,
        dst,
        dst_pitch: 8,
        width: 8,
        height: 1,
        kind,
    }
}

impl<A: GpuRuntime> Registrar for GpuRegistrar<A> {
    fn register(&self, start: u64, len: usize) -> Result<Registered> {
        A::bind(&self.ctx)?;
        // SAFETY: [start, start + len) is page-aligned host memory of the caller's operand
        // (whole pages are what the OS locks anyway).
        let registered = unsafe { A::host_register(start, len) }?;
        // The next use of this range verifies it: its probe scratch (pinned and device words,
        // a stream) is made now, in the call that pays for page-locking anyway. Made at the
        // first verification, it cost the second call of a process about 1 ms (H200, DGEMM
        // 769x10609x1321: 0.92-1.19 ms before its tasks on the second call, 0.06 on later
        // ones; 2026-11-30). Should it fail here, the verification makes it (and reports).
        let mut idle = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        if registered == Registered::Yes && idle.is_empty() {
            if let Ok(scratch) = Scratch::new(&self.ctx) {
                idle.push(scratch);
            }
        }
        Ok(registered)
    }

    fn unregister(&self, start: u64) -> Result<()> {
        // The cache unregisters everything when dropped, on the thread that drops the last
        // device (the caller's, outside any call).
        let _caller = CurrentGuard::<A>::save();
        A::bind(&self.ctx)?;
        // SAFETY: `start` begins a registration of ours; no copy is in flight (cache contract).
        unsafe { A::host_unregister(start) }
    }

    fn verify(&self, addr: u64, len: usize, access: HostAccess) -> Result<bool> {
        Ok(self.verify_all(&[(addr, len, access)])?[0])
    }

    fn verify_all(&self, ranges: &[(u64, usize, HostAccess)]) -> Result<Vec<bool>> {
        A::bind(&self.ctx)?;
        let mut out = vec![false; ranges.len()];
        let mut live = Vec::new();
        for (i, &(addr, len, _)) in ranges.iter().enumerate() {
            if !A::host_registered(addr / PAGE * PAGE) {
                continue;
            }
            if len < 8 {
                out[i] = true; // nothing a word-sized probe can check; too small to matter
            } else {
                live.push(i);
            }
        }
        for chunk in live.chunks(BATCH) {
            let idle = self.scratch.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let scratch = match idle {
                Some(s) => s,
                None => Scratch::new(&self.ctx)?,
            };
            let probed: Vec<_> = chunk.iter().map(|&i| ranges[i]).collect();
            let verified = Self::probe(&scratch, &probed);
            self.scratch
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(scratch);
            for (&i, ok) in chunk.iter().zip(verified) {
                out[i] = ok;
            }
        }
        Ok(out)
    }
}

impl<A: GpuRuntime> GpuRegistrar<A> {
    /// The probes of [`Registrar::verify_all`] for at most [`BATCH`] ranges (each registered
    /// and at least a word long), issued on the scratch's stream and waited for once.
    fn probe(scratch: &Scratch<A>, ranges: &[(u64, usize, HostAccess)]) -> Vec<bool> {
        let (probe, dev, q) = (
            scratch.pinned.as_mut_ptr(),
            scratch.device.addr(),
            scratch.stream.raw(),
        );
        let n = ranges.len();
        let mut ok = vec![true; n];
        // Per range: probed words and their stride.
        let mut geometry = Vec::with_capacity(n);
        for (j, &(addr, len, _)) in ranges.iter().enumerate() {
            let words = (len / 8).clamp(1, PROBES);
            let stride = if words > 1 {
                (len - 8) / (words - 1)
            } else {
                8
            };
            geometry.push((words, stride));
            // Registered host words -> device scratch, as the links copy tiles: one 2D copy,
            // or one per word when the pitch is beyond what a 2D copy takes.
            let per_copy = if stride <= 1 << 30 { words } else { 1 };
            for first in (0..words).step_by(per_copy) {
                let copy = Copy2D {
                    src: addr + (first * stride) as u64,
                    src_pitch: if per_copy > 1 { stride } else { 8 },
                    dst: dev + ((j * PROBES + first) * 8) as u64,
                    dst_pitch: 8,
                    width: 8,
                    height: per_copy,
                    kind: CopyKind::HostToDevice,
                };
                // SAFETY: the probed words lie in the caller's registered region; the scratch
                // holds BATCH * PROBES words first. A copy that cannot be issued means the
                // range is not (or no longer) usable.
                if unsafe { A::copy_2d_async(&copy, q) }.is_err() {
                    ok[j] = false;
                    break;
                }
            }
        }
        let back = Copy2D {
            height: n * PROBES,
            ..word(dev, probe as u64, CopyKind::DeviceToHost)
        };
        // SAFETY: device scratch -> pinned probe, n * PROBES words of both, ours.
        let mut issued = unsafe { A::copy_2d_async(&back, q) }.is_ok();
        // Outputs: a mark other than the output's first word, written there by DMA (the
        // write-back path), must appear at the CPU address; the old value is put back once the
        // stream is done. In stream order the read probes above see the old value.
        let mut flips: Vec<Option<Flip>> = vec![None; n];
        for (j, &(addr, _, access)) in ranges.iter().enumerate() {
            if access != HostAccess::ReadWrite || !ok[j] || !issued {
                continue;
            }
            let target = addr as *mut [u8; 8];
            // Two outputs that start at one word: the first one's mark checks it (read here
            // again, the word could already be that mark, and would be "restored" to it).
            if flips[..j].iter().flatten().any(|f| f.0 == target) {
                continue;
            }
            // SAFETY: the caller holds the output exclusively for this call; its first word is
            // read here and put back below, after the stream is done, before anything else can
            // look at it.
            let old = unsafe { std::ptr::read_volatile(target) };
            let m = usize::from(old == MARKS[0]);
            flips[j] = Some((target, old, MARKS[m]));
            let mark = dev + ((BATCH * PROBES + m) * 8) as u64;
            // SAFETY: device mark word (written at the scratch's creation) -> the output's first
            // word, which the caller's registered region holds.
            issued =
                unsafe { A::copy_2d_async(&word(mark, addr, CopyKind::DeviceToHost), q) }.is_ok();
        }
        // Waited for whatever was issued: nothing may still run when the scratch is used again.
        // SAFETY: the scratch's stream is live.
        let synced = unsafe { A::stream_synchronize(q) }.is_ok();
        let done = issued && synced;
        for (j, &(addr, _, _)) in ranges.iter().enumerate() {
            let old_first = flips[j].map(|(target, old, flipped)| {
                // SAFETY: the output's first word, read above; the stream is done with it.
                let seen = unsafe {
                    let seen = std::ptr::read_volatile(target);
                    std::ptr::write_volatile(target, old);
                    seen
                };
                if seen != flipped {
                    ok[j] = false;
                }
                old
            });
            if !done {
                ok[j] = false;
            }
            if !ok[j] {
                continue;
            }
            let (words, stride) = geometry[j];
            for w in 0..words {
                // SAFETY: [addr + w * stride, + 8) lies inside the caller's region; the probe
                // buffer holds BATCH * PROBES words first.
                let (cpu, dma) = unsafe {
                    (
                        match old_first {
                            Some(old) if w == 0 => old,
                            _ => std::ptr::read_volatile(
                                (addr as usize + w * stride) as *const [u8; 8],
                            ),
                        },
                        std::ptr::read_volatile(probe.add((j * PROBES + w) * 8) as *const [u8; 8]),
                    )
                };
                if cpu != dma {
                    ok[j] = false;
                    break;
                }
            }
        }
        ok
    }
}
