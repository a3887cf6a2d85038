//! The host registration cache: user buffers are page-locked with hipHostRegister once and stay
//! registered, so repeated calls on the same buffers pay no pinning. Ranges are page-aligned;
//! a request is split into the pieces not yet covered, so neighbouring buffers that share a
//! page never collide. When the OS refuses to lock more memory, the least recently used
//! registrations are released and the registration retried; memory that still cannot be
//! registered is copied through pinned staging buffers by the links.
//!
//! A registration outlives the call, but the caller's buffer may not: when it is freed and the
//! address range is mapped again (or its pages are discarded with madvise), the registration
//! still points at the old physical pages, and a DMA through it would silently read stale data
//! or write where the caller never looks. So every cache hit is verified before use, through
//! the same path the data takes: the runtime must still know each registration
//! (hipHostGetDevicePointer), a few words are copied from the registered host addresses into a
//! small device scratch buffer (hipMemcpy2D host->device, exactly as the links copy tiles) and
//! back into a pinned probe buffer, and must equal what the CPU reads at those addresses; for
//! memory the call will write, one word with flipped bits is copied from device scratch to the
//! host address and must appear at the CPU address (then the CPU restores it). A region that
//! fails is unregistered and registered again. Registrations are released when the cache is
//! dropped (with the runtime), by [`PinCache::release_all`], or for one buffer by
//! [`PinCache::release`] (the Device's `release_host`); `HETBLAS_PIN=staging` never registers
//! at all.

use crate::memory::{HipBuffer, PinnedHostBuffer};
use crate::result::{self, hip_error, Context};
use crate::sys::{err, memcpy};
use hetblas_core::{HostAccess, MemorySpace, Result};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use std::time::Instant;

const PAGE: u64 = 4096;

#[derive(Debug, Clone)]
struct Region {
    start: u64,
    end: u64,
    last_use: u64,
    /// Registered by someone else (hipHostMalloc'd memory, an outside registration).
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
    /// Pinned scratch the verification probes read back into.
    probe: Option<PinnedHostBuffer>,
    /// Device scratch the verification probes copy through.
    scratch: Option<HipBuffer>,
}

/// Words compared per verification.
const PROBES: usize = 16;

/// The registration cache, shared by every HIP device of a runtime (registrations are
/// portable and mapped: every device can DMA them).
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
    /// A cache whose probes run on `ctx`'s device.
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
        let ours: Vec<Region> = st
            .regions
            .iter()
            .filter(|r| !r.foreign && r.start < end && r.end > start)
            .cloned()
            .collect();
        if !ours.is_empty() && !self.verify(&mut st, &ours, addr, len, access)? {
            // Stale: the range was unmapped and mapped again since it was registered.
            st.stats.stale += 1;
            st.regions
                .retain(|r| r.foreign || !(r.start < end && r.end > start));
            for r in ours {
                // SAFETY: registered by us; no copy is in flight (caller contract). A failure
                // means the runtime already dropped it, which is what we want.
                let _ = unsafe { result::host_unregister(r.start as *mut c_void) };
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
    /// `ours` are the cached registrations overlapping it. The device is bound.
    fn verify(
        &self,
        st: &mut State,
        ours: &[Region],
        addr: u64,
        len: usize,
        access: HostAccess,
    ) -> Result<bool> {
        // The runtime must still hold every registration we think we made.
        for r in ours {
            if result::host_device_pointer(r.start).is_err() {
                return Ok(false);
            }
        }
        if len < 8 {
            return Ok(true); // nothing a word-sized probe can check; too small to matter
        }
        let words = (len / 8).clamp(1, PROBES);
        let stride = if words > 1 {
            (len - 8) / (words - 1)
        } else {
            8
        };
        if st.probe.is_none() {
            st.probe = Some(PinnedHostBuffer::new(&self.ctx, PROBES * 8)?);
        }
        if st.scratch.is_none() {
            st.scratch = Some(HipBuffer::new(
                &self.ctx,
                MemorySpace::new_device(),
                PROBES * 8,
            )?);
        }
        let probe = st
            .probe
            .as_ref()
            .map_or(std::ptr::null_mut(), |p| p.as_mut_ptr());
        let scratch = st
            .scratch
            .as_ref()
            .map_or(std::ptr::null_mut(), |s| s.as_ptr());
        // Host (registered) -> device scratch, as the links copy tiles, then scratch -> probe.
        let host_to_scratch = if stride <= 1 << 30 {
            // SAFETY: reads `words` words at `addr + w * stride`, all inside the caller's
            // region, into the device scratch (PROBES * 8 bytes).
            unsafe {
                result::memcpy_2d(
                    scratch,
                    8,
                    addr as *const c_void,
                    stride,
                    8,
                    words,
                    memcpy::HOST_TO_DEVICE,
                )
            }
        } else {
            // Pitches this large exceed what a 2D copy takes: one word at a time.
            (0..words).try_for_each(|w| {
                // SAFETY: as above, one word per copy.
                unsafe {
                    result::memcpy_2d(
                        (scratch as *mut u8).add(w * 8) as *mut c_void,
                        8,
                        (addr as usize + w * stride) as *const c_void,
                        8,
                        8,
                        1,
                        memcpy::HOST_TO_DEVICE,
                    )
                }
            })
        };
        if host_to_scratch.is_err() {
            return Ok(false);
        }
        // SAFETY: device scratch -> pinned probe, both PROBES * 8 bytes, ours.
        let back = unsafe {
            result::memcpy_2d(
                probe as *mut c_void,
                8,
                scratch,
                8,
                8,
                words,
                memcpy::DEVICE_TO_HOST,
            )
        };
        back?;
        for w in 0..words {
            let off = w * stride;
            // SAFETY: [addr + off, addr + off + 8) lies inside the caller's region; the probe
            // buffer holds `words` words.
            let (cpu, dma) = unsafe {
                (
                    std::ptr::read_volatile((addr as usize + off) as *const [u8; 8]),
                    std::ptr::read_volatile(probe.add(w * 8) as *const [u8; 8]),
                )
            };
            if cpu != dma {
                return Ok(false);
            }
        }
        if access == HostAccess::ReadWrite {
            let word = addr as *mut [u8; 8];
            // SAFETY: the caller holds the region exclusively for this call (it is the GEMM
            // output); the first word is read here, written by DMA below, read back on the CPU
            // and restored before anything else can look at it.
            let old = unsafe { std::ptr::read_volatile(word) };
            let mut flipped = old;
            flipped[0] ^= 0x5a;
            // SAFETY: the probe buffer is ours and holds at least one word.
            unsafe { std::ptr::write_volatile(probe as *mut [u8; 8], flipped) };
            // SAFETY: pinned probe -> device scratch, one word, both ours.
            let up = unsafe {
                result::memcpy_2d(
                    scratch,
                    8,
                    probe as *const c_void,
                    8,
                    8,
                    1,
                    memcpy::HOST_TO_DEVICE,
                )
            };
            up?;
            // SAFETY: device scratch -> the caller's registered word (see above), the path a
            // device->host tile copy takes.
            let down = unsafe {
                result::memcpy_2d(
                    word as *mut c_void,
                    8,
                    scratch,
                    8,
                    8,
                    1,
                    memcpy::DEVICE_TO_HOST,
                )
            };
            // SAFETY: as above; restores the caller's word.
            let seen = unsafe {
                let seen = std::ptr::read_volatile(word);
                std::ptr::write_volatile(word, old);
                seen
            };
            if down.is_err() || seen != flipped {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn register(&self, st: &mut State, s: u64, e: u64, keep_s: u64, keep_e: u64) -> Result<bool> {
        loop {
            // SAFETY: [s, e) is mapped host memory of the caller's operand (page-aligned
            // outward; whole pages are what the OS locks anyway).
            let r = unsafe { result::host_register(s as *mut c_void, (e - s) as usize) }?;
            match r {
                err::SUCCESS => {
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
                err::HOST_MEMORY_ALREADY_REGISTERED => {
                    st.regions.push(Region {
                        start: s,
                        end: e,
                        last_use: st.clock,
                        foreign: true,
                    });
                    return Ok(true);
                }
                err::OUT_OF_MEMORY | err::INVALID_VALUE => {
                    // Evict the least recently used registration not in the current request.
                    let victim = st
                        .regions
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| !r.foreign && (r.end <= keep_s || r.start >= keep_e))
                        .min_by_key(|(_, r)| r.last_use)
                        .map(|(i, _)| i);
                    match victim {
                        Some(i) if r == err::OUT_OF_MEMORY => {
                            let v = st.regions.swap_remove(i);
                            // SAFETY: v was registered by us and no copy is in flight.
                            let _ = unsafe { result::host_unregister(v.start as *mut c_void) };
                            st.stats.evictions += 1;
                        }
                        _ => {
                            st.stats.failures += 1;
                            tracing::debug!(
                                "hipHostRegister failed: {}",
                                hip_error(r, "hipHostRegister")
                            );
                            return Ok(false);
                        }
                    }
                }
                other => return Err(hip_error(other, "hipHostRegister")),
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

    /// Unregisters the registrations this cache made that overlap `[addr, addr + len)` (before
    /// the caller frees that memory). Call only while no copy is in flight.
    pub fn release(&self, addr: u64, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let (start, end) = align(addr, len as u64);
        let mut st = self.lock();
        self.ctx.bind()?;
        let (gone, keep): (Vec<Region>, Vec<Region>) = st
            .regions
            .drain(..)
            .partition(|r| r.start < end && r.end > start);
        st.regions = keep;
        let mut first_err = Ok(());
        for r in gone.into_iter().filter(|r| !r.foreign) {
            // SAFETY: registered by us; no copy is in flight (caller contract).
            let res = unsafe { result::host_unregister(r.start as *mut c_void) };
            if first_err.is_ok() {
                first_err = res;
            }
        }
        first_err
    }

    pub fn stats(&self) -> PinStats {
        self.lock().stats.clone()
    }

    /// Unregisters everything this cache registered.
    pub fn release_all(&self) -> Result<()> {
        let mut st = self.lock();
        self.ctx.bind()?;
        let mut first_err = Ok(());
        for r in st.regions.drain(..) {
            if !r.foreign {
                // SAFETY: registered by us; the caller guarantees no copy is in flight.
                let res = unsafe { result::host_unregister(r.start as *mut c_void) };
                if first_err.is_ok() {
                    first_err = res;
                }
            }
        }
        first_err
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
