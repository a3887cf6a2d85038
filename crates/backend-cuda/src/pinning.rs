//! The host registration cache: user buffers are page-locked with cuMemHostRegister once and stay
//! registered, so repeated calls on the same buffers pay no pinning. Ranges are page-aligned;
//! a request is split into the pieces not yet covered, so neighbouring buffers that share a
//! page never collide. When the OS refuses to lock more memory, the least recently used
//! registrations are released and the registration retried; memory that still cannot be
//! registered is copied through pinned staging buffers by the links.
//!
//! A registration outlives the call, but the caller's buffer may not: when it is freed and the
//! address range is mapped again (or its pages are discarded with madvise), the registration
//! still points at the old physical pages, and a DMA through it would silently read stale data
//! or write where the caller never looks. So every cache hit is verified before use: a few
//! words of the region are read through the GPU's mapping of the registered pages and compared
//! with what the CPU sees at the same addresses; for memory the call will write, one word is
//! also written through the GPU mapping and must appear at the CPU address (then restored). A
//! region that fails is unregistered and registered again. Registrations are released when the
//! cache is dropped (with the runtime) or by [`PinCache::release_all`]; `HETBLAS_PIN=staging`
//! never registers at all.

use crate::driver::{check, driver_error, Context};
use crate::memory::{CudaBuffer, PinnedHostBuffer};
use cudarc::driver::sys;
use hetblas_core::HostAccess;
use hetblas_core::Result;
use std::sync::{Arc, Mutex};
use std::time::Instant;

const PAGE: u64 = 4096;

#[derive(Debug, Clone)]
struct Region {
    start: u64,
    end: u64,
    last_use: u64,
    /// Registered by someone else (cuMemHostAlloc'd memory, an outside registration).
    foreign: bool,
}

/// Counters of the cache, for reports and the acceptance "the second call pays no pinning".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PinStats {
    pub registrations: u64,
    pub hits: u64,
    pub failures: u64,
    pub evictions: u64,
    /// Cached registrations found stale (memory freed and mapped again) and redone.
    pub stale: u64,
    pub bytes_registered: u64,
    pub seconds_registering: f64,
}

/// How host memory is prepared for DMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinPolicy {
    /// Register and keep registered (default).
    Cache,
    /// Never register; every host copy goes through pinned staging buffers.
    Staging,
}

impl PinPolicy {
    /// From `HETBLAS_PIN` (`cache`, `staging`).
    pub fn from_env() -> PinPolicy {
        match std::env::var("HETBLAS_PIN").as_deref() {
            Ok("staging") | Ok("off") | Ok("0") => PinPolicy::Staging,
            _ => PinPolicy::Cache,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    regions: Vec<Region>,
    clock: u64,
    stats: PinStats,
    /// Pinned scratch the verification probes read into, and device scratch they pass through.
    probe: Option<PinnedHostBuffer>,
    scratch: Option<CudaBuffer>,
}

/// Words compared per verification.
const PROBES: usize = 32;

/// The registration cache, shared by every CUDA device of a runtime.
#[derive(Debug)]
pub struct PinCache {
    ctx: Arc<Context>,
    policy: PinPolicy,
    state: Mutex<State>,
}

fn align(addr: u64, len: u64) -> (u64, u64) {
    (addr / PAGE * PAGE, (addr + len).div_ceil(PAGE) * PAGE)
}

impl State {
    /// Parts of [start, end) not covered by any region.
    fn uncovered(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut regs: Vec<_> = self
            .regions
            .iter()
            .filter(|r| r.start < end && r.end > start)
            .map(|r| (r.start, r.end))
            .collect();
        regs.sort();
        let mut out = Vec::new();
        let mut cur = start;
        for (s, e) in regs {
            if s > cur {
                out.push((cur, s.min(end)));
            }
            cur = cur.max(e);
            if cur >= end {
                break;
            }
        }
        if cur < end {
            out.push((cur, end));
        }
        out
    }

    fn touch(&mut self, start: u64, end: u64) {
        self.clock += 1;
        let now = self.clock;
        for r in self
            .regions
            .iter_mut()
            .filter(|r| r.start < end && r.end > start)
        {
            r.last_use = now;
        }
    }
}

impl PinCache {
    pub fn new(ctx: Arc<Context>) -> PinCache {
        PinCache {
            ctx,
            policy: PinPolicy::from_env(),
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn policy(&self) -> PinPolicy {
        self.policy
    }

    /// Makes sure `[addr, addr + len)` is registered and that the registration still maps the
    /// caller's pages. Returns whether it now is (false: the links will stage it). Call only
    /// while no copy is in flight (the pool calls it before executing), since it may release
    /// registrations.
    pub fn ensure(&self, addr: u64, len: usize, access: HostAccess) -> Result<bool> {
        if len == 0 || self.policy == PinPolicy::Staging {
            return Ok(len == 0);
        }
        let (start, end) = align(addr, len as u64);
        let mut st = self.lock();
        self.ctx.bind()?;
        let overlapping = st
            .regions
            .iter()
            .any(|r| !r.foreign && r.start < end && r.end > start);
        if overlapping && !self.verify(&mut st, addr, len, access)? {
            // Stale: the range was unmapped and mapped again since it was registered.
            st.stats.stale += 1;
            let stale: Vec<Region> = st
                .regions
                .iter()
                .filter(|r| !r.foreign && r.start < end && r.end > start)
                .cloned()
                .collect();
            st.regions
                .retain(|r| r.foreign || !(r.start < end && r.end > start));
            for r in stale {
                // SAFETY: registered by us; no copy is in flight (caller contract).
                unsafe { sys::cuMemHostUnregister(r.start as *mut std::ffi::c_void) };
            }
        }
        let missing = st.uncovered(start, end);
        if missing.is_empty() {
            st.stats.hits += 1;
            st.touch(start, end);
            return Ok(true);
        }
        let t = Instant::now();
        let mut ok = true;
        for (s, e) in missing {
            if !self.register(&mut st, s, e, start, end)? {
                ok = false;
            }
        }
        st.stats.seconds_registering += t.elapsed().as_secs_f64();
        st.touch(start, end);
        Ok(ok)
    }

    /// Whether the registered pages behind `[addr, addr + len)` are the ones the CPU sees there.
    ///
    /// The probes take the same path as the data: copies from (and to) the registered host
    /// pointer with host memory type, which the driver serves from the pages it pinned at
    /// registration. (Reading through the mapped device pointer is NOT equivalent: on H200 /
    /// driver 580 it saw the new pages while host-pointer copies still used the stale ones.)
    fn verify(&self, st: &mut State, addr: u64, len: usize, access: HostAccess) -> Result<bool> {
        if len < 8 {
            return Ok(true); // nothing a word-sized probe can check; too small to matter
        }
        let words = (len / 8).clamp(1, PROBES);
        let stride = if words > 1 {
            ((len - 8) / (words - 1)) as u64
        } else {
            0
        };
        if st.probe.is_none() {
            st.probe = Some(PinnedHostBuffer::new(&self.ctx, PROBES * 8)?);
        }
        if st.scratch.is_none() {
            st.scratch = Some(CudaBuffer::new(
                &self.ctx,
                hetblas_core::MemorySpace::HOST,
                PROBES * 8,
            )?);
        }
        let probe = st.probe.as_ref().expect("allocated above").as_mut_ptr();
        let scratch = hetblas_core::Buffer::addr(st.scratch.as_ref().expect("allocated above"));
        // Host words -> device scratch, through the registration, with the same kind of call
        // the data takes (a 2D copy from a host-typed pointer).
        let rows_per_copy = if stride <= 1 << 30 { words } else { 1 };
        for first in (0..words).step_by(rows_per_copy) {
            let p = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
                srcHost: (addr + first as u64 * stride) as *const std::ffi::c_void,
                srcDevice: 0,
                srcArray: std::ptr::null_mut(),
                srcPitch: stride.max(8) as usize,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                dstHost: std::ptr::null_mut(),
                dstDevice: scratch + (first * 8) as u64,
                dstArray: std::ptr::null_mut(),
                dstPitch: 8,
                WidthInBytes: 8,
                Height: rows_per_copy,
            };
            // SAFETY: the probed words lie in the caller's registered region; the scratch holds
            // PROBES words. A failing copy means the range is not (or no longer) usable.
            if unsafe { sys::cuMemcpy2D_v2(&p) } != sys::CUresult::CUDA_SUCCESS {
                return Ok(false);
            }
        }
        // Device scratch -> our own pinned probe buffer (always valid).
        // SAFETY: both buffers hold PROBES * 8 bytes.
        let r = unsafe { sys::cuMemcpyDtoH_v2(probe as *mut std::ffi::c_void, scratch, words * 8) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Ok(false);
        }
        for w in 0..words {
            let off = w as u64 * stride;
            // SAFETY: [addr + off, addr + off + 8) lies inside the caller's region; the probe
            // buffer holds `words` words.
            let (cpu, dma) = unsafe {
                (
                    std::ptr::read_volatile((addr + off) as *const [u8; 8]),
                    std::ptr::read_volatile(probe.add(w * 8) as *const [u8; 8]),
                )
            };
            if cpu != dma {
                return Ok(false);
            }
        }
        if access == HostAccess::ReadWrite {
            // SAFETY: the caller holds the region exclusively for this call (it is the GEMM
            // output); a flipped copy of its first word goes device -> registered host pointer
            // (the write-back path), is read back on the CPU, and the original is restored
            // before anything else can look at it. The scratch holds the flipped word.
            unsafe {
                let word = addr as *mut [u8; 8];
                let old = std::ptr::read_volatile(word);
                let mut flipped = old;
                flipped[0] ^= 0x5a;
                let ok =
                    sys::cuMemcpyHtoD_v2(scratch, flipped.as_ptr() as *const std::ffi::c_void, 8)
                        == sys::CUresult::CUDA_SUCCESS
                        && sys::cuMemcpyDtoH_v2(addr as *mut std::ffi::c_void, scratch, 8)
                            == sys::CUresult::CUDA_SUCCESS;
                let seen = std::ptr::read_volatile(word);
                std::ptr::write_volatile(word, old);
                if !ok || seen != flipped {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn register(&self, st: &mut State, s: u64, e: u64, keep_s: u64, keep_e: u64) -> Result<bool> {
        loop {
            // SAFETY: [s, e) is mapped host memory of the caller's operand (page-aligned
            // outward; whole pages are what the OS locks anyway).
            let r = unsafe {
                sys::cuMemHostRegister_v2(
                    s as *mut std::ffi::c_void,
                    (e - s) as usize,
                    sys::CU_MEMHOSTREGISTER_PORTABLE,
                )
            };
            match r {
                sys::CUresult::CUDA_SUCCESS => {
                    st.regions.push(Region {
                        start: s,
                        end: e,
                        last_use: st.clock,
                        foreign: false,
                    });
                    st.stats.registrations += 1;
                    st.stats.bytes_registered += e - s;
                    return Ok(true);
                }
                sys::CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => {
                    st.regions.push(Region {
                        start: s,
                        end: e,
                        last_use: st.clock,
                        foreign: true,
                    });
                    return Ok(true);
                }
                sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
                | sys::CUresult::CUDA_ERROR_INVALID_VALUE => {
                    // Evict the least recently used registration not in the current request.
                    let victim = st
                        .regions
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| !r.foreign && (r.end <= keep_s || r.start >= keep_e))
                        .min_by_key(|(_, r)| r.last_use)
                        .map(|(i, _)| i);
                    match victim {
                        Some(i) if r == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                            let v = st.regions.swap_remove(i);
                            // SAFETY: v was registered by us and no copy is in flight.
                            unsafe { sys::cuMemHostUnregister(v.start as *mut std::ffi::c_void) };
                            st.stats.evictions += 1;
                        }
                        _ => {
                            st.stats.failures += 1;
                            tracing::debug!(
                                "cuMemHostRegister failed: {}",
                                driver_error(r, "cuMemHostRegister")
                            );
                            return Ok(false);
                        }
                    }
                }
                other => return Err(driver_error(other, "cuMemHostRegister")),
            }
        }
    }

    /// Whether `[addr, addr + len)` is registered (so a copy can DMA it directly).
    pub fn is_pinned(&self, addr: u64, len: usize) -> bool {
        if len == 0 {
            return true;
        }
        let (s, e) = align(addr, len as u64);
        self.lock().uncovered(s, e).is_empty()
    }

    /// Unregisters the registrations this cache made that overlap `[addr, addr + len)`. Call
    /// only while no copy is in flight.
    pub fn release(&self, addr: u64, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let (start, end) = align(addr, len as u64);
        let mut st = self.lock();
        self.ctx.bind()?;
        let mut keep = Vec::with_capacity(st.regions.len());
        for r in st.regions.drain(..) {
            if r.start < end && r.end > start {
                if !r.foreign {
                    check(
                        // SAFETY: registered by us; no copy is in flight (caller contract).
                        unsafe { sys::cuMemHostUnregister(r.start as *mut std::ffi::c_void) },
                        "cuMemHostUnregister",
                    )?;
                }
            } else {
                keep.push(r);
            }
        }
        st.regions = keep;
        Ok(())
    }

    pub fn stats(&self) -> PinStats {
        self.lock().stats.clone()
    }

    /// Unregisters everything this cache registered.
    pub fn release_all(&self) -> Result<()> {
        let mut st = self.lock();
        self.ctx.bind()?;
        for r in st.regions.drain(..) {
            if !r.foreign {
                check(
                    // SAFETY: registered by us; the caller guarantees no copy is in flight.
                    unsafe { sys::cuMemHostUnregister(r.start as *mut std::ffi::c_void) },
                    "cuMemHostUnregister",
                )?;
            }
        }
        Ok(())
    }
}

impl Drop for PinCache {
    fn drop(&mut self) {
        let _ = self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncovered_pieces() {
        let mut st = State::default();
        st.regions.push(Region {
            start: 4096,
            end: 8192,
            last_use: 0,
            foreign: false,
        });
        st.regions.push(Region {
            start: 12288,
            end: 16384,
            last_use: 0,
            foreign: false,
        });
        assert_eq!(
            st.uncovered(0, 20480),
            vec![(0, 4096), (8192, 12288), (16384, 20480)]
        );
        assert!(st.uncovered(4096, 8192).is_empty());
        assert_eq!(st.uncovered(6000, 13000), vec![(8192, 12288)]);
        assert_eq!(align(4097, 10), (4096, 8192));
    }
}
