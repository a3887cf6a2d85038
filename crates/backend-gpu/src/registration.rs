//! The runtime's side of the host registration cache (`hetblas_core::pin`): register,
//! unregister, and the one verification of cached registrations.
//!
//! A cached registration is trusted only when (1) the runtime still knows it (a registration
//! someone else dropped would leave the cache believing in pinned memory that is not), and
//! (2) words copied from the registered host addresses to a device scratch, with the same kind
//! of 2D host-typed copy the data takes, equal what the CPU reads there; for memory the call
//! will write, (3) a word with flipped bits copied from the device to the host address appears
//! at the CPU address (the CPU then restores it). Reading through the mapped device pointer
//! instead is NOT equivalent: on H200 / driver 580 it saw the new pages of a remapped buffer
//! while host-pointer copies still used the stale ones.
//!
//! The CUDA and HIP backends had drifted apart here (32 probes without the runtime check, 16
//! probes with it); this is the union: the runtime check costs one call, and 32 probe words
//! cost the same single 2D copy as 16 while catching a partial remap of a buffer more often.

use crate::memory::{DeviceBuffer, PinnedBuffer};
use crate::runtime::{Copy2D, CopyKind, GpuRuntime};
use hetblas_core::pin::{PinPolicy, Registered, Registrar, PAGE};
use hetblas_core::{Buffer, HostAccess, MemorySpace, Result};
use std::sync::{Arc, Mutex};

/// Words compared per verification.
pub const PROBES: usize = 32;

/// The registration cache of one runtime (shared by all its devices).
pub type PinCache<A> = hetblas_core::pin::PinCache<GpuRegistrar<A>>;

/// The runtime calls behind the cache.
pub struct GpuRegistrar<A: GpuRuntime> {
    ctx: Arc<A::Context>,
    /// Idle pairs of pinned scratch the probes read back into and device scratch they copy
    /// through: one per verification at a time, so that the checks of concurrent calls, whose
    /// synchronous copies each wait behind the copies in flight, wait side by side rather than
    /// one after another.
    scratch: Mutex<Vec<Scratch<A>>>,
}

type Scratch<A> = (PinnedBuffer<A>, DeviceBuffer<A>);

impl<A: GpuRuntime> GpuRegistrar<A> {
    /// A cache over the registrar of `ctx`'s device with the policy of `HETBLAS_PIN`.
    pub fn cache(ctx: Arc<A::Context>) -> PinCache<A> {
        let registrar = GpuRegistrar {
            ctx,
            scratch: Mutex::new(Vec::new()),
        };
        hetblas_core::pin::PinCache::new(registrar, PinPolicy::from_env())
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
        unsafe { A::host_register(start, len) }
    }

    fn unregister(&self, start: u64) -> Result<()> {
        A::bind(&self.ctx)?;
        // SAFETY: `start` begins a registration of ours; no copy is in flight (cache contract).
        unsafe { A::host_unregister(start) }
    }

    fn verify(&self, addr: u64, len: usize, access: HostAccess) -> Result<bool> {
        A::bind(&self.ctx)?;
        if !A::host_registered(addr / PAGE * PAGE) {
            return Ok(false);
        }
        if len < 8 {
            return Ok(true); // nothing a word-sized probe can check; too small to matter
        }
        let idle = self.scratch.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let pair = match idle {
            Some(pair) => pair,
            None => (
                PinnedBuffer::new(&self.ctx, PROBES * 8)?,
                DeviceBuffer::new(&self.ctx, MemorySpace::HOST, PROBES * 8)?,
            ),
        };
        let verified = Self::probe(&pair, addr, len, access);
        self.scratch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pair);
        Ok(verified)
    }
}

impl<A: GpuRuntime> GpuRegistrar<A> {
    /// The probes of [`Registrar::verify`] through one scratch pair (the region registered
    /// and at least a word long).
    fn probe(pair: &Scratch<A>, addr: u64, len: usize, access: HostAccess) -> bool {
        let (probe, scratch) = (pair.0.as_mut_ptr(), pair.1.addr());
        let words = (len / 8).clamp(1, PROBES);
        let stride = if words > 1 {
            (len - 8) / (words - 1)
        } else {
            8
        };
        // Registered host words -> device scratch, as the links copy tiles: one 2D copy, or
        // one per word when the pitch is beyond what a 2D copy takes.
        let per_copy = if stride <= 1 << 30 { words } else { 1 };
        for first in (0..words).step_by(per_copy) {
            let copy = Copy2D {
                src: addr + (first * stride) as u64,
                src_pitch: if per_copy > 1 { stride } else { 8 },
                dst: scratch + (first * 8) as u64,
                dst_pitch: 8,
                width: 8,
                height: per_copy,
                kind: CopyKind::HostToDevice,
            };
            // SAFETY: the probed words lie in the caller's registered region; the scratch holds
            // PROBES words. A failing copy means the range is not (or no longer) usable.
            if unsafe { A::copy_2d(&copy) }.is_err() {
                return false;
            }
        }
        let back = Copy2D {
            height: words,
            ..word(scratch, probe as u64, CopyKind::DeviceToHost)
        };
        // SAFETY: device scratch -> pinned probe, both PROBES * 8 bytes, ours.
        if unsafe { A::copy_2d(&back) }.is_err() {
            return false;
        }
        for w in 0..words {
            // SAFETY: [addr + w * stride, + 8) lies inside the caller's region; the probe buffer
            // holds `words` words.
            let (cpu, dma) = unsafe {
                (
                    std::ptr::read_volatile((addr as usize + w * stride) as *const [u8; 8]),
                    std::ptr::read_volatile(probe.add(w * 8) as *const [u8; 8]),
                )
            };
            if cpu != dma {
                return false;
            }
        }
        if access == HostAccess::ReadWrite {
            let target = addr as *mut [u8; 8];
            // SAFETY: the caller holds the region exclusively for this call (it is the GEMM
            // output); its first word is read here, written by DMA below (the write-back path),
            // read back on the CPU and restored before anything else can look at it. The probe
            // buffer and the scratch are ours and hold at least one word.
            let (ok, seen, flipped) = unsafe {
                let old = std::ptr::read_volatile(target);
                let mut flipped = old;
                flipped[0] ^= 0x5a;
                std::ptr::write_volatile(probe as *mut [u8; 8], flipped);
                let ok = A::copy_2d(&word(probe as u64, scratch, CopyKind::HostToDevice)).is_ok()
                    && A::copy_2d(&word(scratch, addr, CopyKind::DeviceToHost)).is_ok();
                let seen = std::ptr::read_volatile(target);
                std::ptr::write_volatile(target, old);
                (ok, seen, flipped)
            };
            if !ok || seen != flipped {
                return false;
            }
        }
        true
    }
}
