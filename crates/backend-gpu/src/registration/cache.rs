//! The host registration cache: user buffers are page-locked once and stay registered, so
//! repeated calls on the same buffers pay no pinning. The bookkeeping lives here, once, over
//! the three driver operations ([`Registrar`]; a runtime's is
//! [`GpuRegistrar`](super::GpuRegistrar), and the unit tests here bring their own).
//!
//! Invariants, each learnt on real GPUs:
//! - **One registration per buffer.** A copy whose host range spans two registrations is
//!   rejected by the CUDA driver (`CUDA_ERROR_INVALID_VALUE`), so a request overlapping
//!   registrations it is not wholly inside of replaces them with one registration of the union
//!   (or of the request alone when the union cannot be registered).
//! - **Only our own registrations.** Memory someone else page-locked (another runtime in the
//!   process, the program, a pinned allocation) is staged, never copied directly: their
//!   registration may cover the range only in part (buffers share edge pages), and it may be
//!   dropped or replaced between our calls, by a thread we do not wait for. Trusted, it made
//!   concurrent tests on one H200 fail a copy now and then with `CUDA_ERROR_INVALID_VALUE`.
//! - **Verified hits.** A registration outlives the call but the caller's buffer may not: freed
//!   and mapped again (or its pages discarded), the registration still points at the old
//!   physical pages and a DMA through it silently reads stale data or writes where the caller
//!   never looks (seen on H200). Every hit is verified by the backend (probes on the data's own
//!   copy path) and a stale registration is redone.
//! - **Eviction under pressure.** When the OS refuses to lock more memory, the least recently
//!   used registrations are released and the registration retried; memory that still cannot be
//!   registered is copied through pinned staging buffers by the backend's links.
//!
//! Call `ensure` and `release` only while no copy is in flight (the pool calls them between
//! operations).

use super::prefault;
use super::released::{self, Releases, Since};
use hetblas_core::{HostAccess, PinStats, Result};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Page size registrations are aligned to.
pub const PAGE: u64 = 4096;

/// A fresh output this large or larger is staged (its pages populated on every core during
/// the call) rather than page-locked, which faults it in one page after another on the
/// calling thread. NumPy's `a @ b` 2048 hands over a fresh 32 MiB output every call (glibc
/// maps blocks from a threshold that rises to 32 MiB): on the H200 host, 2026-12-01
/// 22:15-22:33Z, 3.7-4.8 ms staged against 8.6-10.8 ms page-locked; 1024-1536 and
/// 3072-8192 stayed within the lease's spread (`docs/data/h200-2026-12-01-fresh-outputs.txt`).
/// Smaller outputs are rarely fresh: the allocator reuses pages it has.
pub const FRESH_STAGED_BYTES: usize = 4 << 20;

/// What a registration attempt gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// Registered by this call.
    Yes,
    /// The memory is already page-locked, in whole or in part, by someone else (a pinned
    /// allocation, another cache): staged.
    Foreign,
    /// The OS or driver cannot lock this memory now (limit reached, or not registrable).
    Refused,
}

/// The driver operations behind the cache.
pub trait Registrar: Send + Sync {
    /// Page-locks `[start, start + len)` (page-aligned) for every device of the backend.
    fn register(&self, start: u64, len: usize) -> Result<Registered>;
    /// Releases the registration that starts at `start`.
    fn unregister(&self, start: u64) -> Result<()>;
    /// Whether the registration covering `[addr, addr + len)` still maps the pages the CPU sees
    /// there (probing through the copy path the data takes; for `ReadWrite`, writing too).
    fn verify(&self, addr: u64, len: usize, access: HostAccess) -> Result<bool>;
    /// [`verify`](Self::verify) of each range, in order. A backend whose probes are copies
    /// overrides it to wait for all of them at once.
    fn verify_all(&self, ranges: &[(u64, usize, HostAccess)]) -> Result<Vec<bool>> {
        ranges
            .iter()
            .map(|&(addr, len, access)| self.verify(addr, len, access))
            .collect()
    }
}

/// How host memory is prepared for DMA (a runtime's choice: `RuntimeBuilder::pin_policy` in
/// the `hetblas` crate; [`PinPolicy::Cache`] unless told).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PinPolicy {
    /// Register and keep registered (default), except a large output whose pages have never
    /// been touched (a fresh result array): that one is staged (its copies go through pinned
    /// buffers, the staged copies faulting its pages in, in parallel), and registered when it
    /// comes back written. Page-locking 2 GB of fresh C
    /// cost more than the whole 16384^3 DGEMM on an H200 host; staging it costs a copy that
    /// overlaps the compute.
    #[default]
    Cache,
    /// Register every operand, fresh outputs included (the default before fresh outputs were
    /// staged; to compare).
    RegisterAll,
    /// Never register; every host copy goes through pinned staging buffers.
    Staging,
    /// Register inputs and outputs already registered; stage every other output range. A
    /// program that writes each result into a fresh array (NumPy's `a @ b`) then pays no
    /// page-locking of that array per call, only staged copies that overlap the compute.
    StageOutputs,
}

/// A call's population of its fresh output ([`PinCache::begin_call`]): finished when dropped,
/// at the call's end.
#[derive(Debug)]
pub struct Population(Arc<prefault::Background>);

impl Drop for Population {
    fn drop(&mut self) {
        self.0.finish();
    }
}

#[derive(Debug, Clone)]
struct Region {
    start: u64,
    end: u64,
    last_use: u64,
}

impl Region {
    fn overlaps(&self, s: u64, e: u64) -> bool {
        self.start < e && self.end > s
    }
    fn contains(&self, s: u64, e: u64) -> bool {
        self.start <= s && self.end >= e
    }
}

#[derive(Debug, Default)]
struct State {
    regions: Vec<Region>,
    clock: u64,
    stats: PinStats,
    /// Ranges of [`released`] looked at so far.
    seen: u64,
    /// Fresh outputs staged since the last [`PinCache::check_all`] (a call's entry;
    /// page-aligned start, end): the call decides the same for them in `ensure`, and
    /// populates them ([`PinCache::begin_call`]). (An `ensure` outside a call,
    /// or another call's `check_all` in between, can find an entry stale or gone: the range is
    /// then staged once more, or registered; either is correct, only slower.)
    fresh: Vec<(u64, u64)>,
    /// The population of a staged fresh output in the background, if one was started.
    background: Option<Arc<prefault::Background>>,
}

impl State {
    /// The registrations that memory given back since the last look meets (indices,
    /// ascending), and the count of ranges to record as seen once they are dropped.
    fn met_by_released(&self, releases: &Releases) -> (u64, Vec<usize>) {
        if releases.noted() == self.seen {
            return (self.seen, Vec::new());
        }
        let (now, since) = releases.since(self.seen);
        let met = (0..self.regions.len())
            .filter(|&i| match &since {
                Since::TooMany => true,
                Since::Ranges(r) => r.iter().any(|&(s, e)| self.regions[i].overlaps(s, e)),
            })
            .collect();
        (now, met)
    }
}

/// Whether every page of `[start, start + len)` (page-aligned) is mapped in this process:
/// `msync` fails with `ENOMEM` where some page is not. Elsewhere than Unix: assumed mapped.
fn is_mapped(start: u64, len: u64) -> bool {
    #[cfg(unix)]
    {
        if len == 0 {
            return true;
        }
        // SAFETY: msync with MS_ASYNC only inspects the mapping of the range (no data is read or
        // written); an unmapped range is reported through the return value.
        let r = unsafe { libc::msync(start as *mut libc::c_void, len as usize, libc::MS_ASYNC) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOMEM)
    }
    #[cfg(not(unix))]
    {
        let _ = (start, len);
        true
    }
}

/// Page-aligned `[start, end)` around `[addr, addr + len)`.
pub(crate) fn align(addr: u64, len: u64) -> (u64, u64) {
    (addr / PAGE * PAGE, (addr + len).div_ceil(PAGE) * PAGE)
}

/// The registration cache of one backend.
pub struct PinCache<R: Registrar> {
    registrar: R,
    policy: PinPolicy,
    /// Whether a page-aligned range has mostly never been touched
    /// ([`prefault::mostly_unbacked`]; tests substitute their own).
    unbacked: fn(u64, u64, u64) -> bool,
    /// What the program gave back ([`released::PROCESS`]; tests substitute their own).
    releases: &'static Releases,
    state: Mutex<State>,
}

impl<R: Registrar> std::fmt::Debug for PinCache<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinCache")
            .field("policy", &self.policy)
            .finish()
    }
}

impl<R: Registrar> PinCache<R> {
    pub fn new(registrar: R, policy: PinPolicy) -> PinCache<R> {
        PinCache {
            registrar,
            policy,
            unbacked: prefault::mostly_unbacked,
            releases: &released::PROCESS,
            state: Mutex::new(State::default()),
        }
    }

    pub fn registrar(&self) -> &R {
        &self.registrar
    }

    pub fn policy(&self) -> PinPolicy {
        self.policy
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends a registration the cache no longer holds: its range is no longer watched for
    /// releases, and it is unregistered.
    fn forget(&self, r: &Region) -> Result<()> {
        self.releases.unwatch(r.start, r.end);
        self.registrar.unregister(r.start)
    }

    /// Drops the registrations of memory given back ([`released`]).
    fn drop_released(&self, st: &mut State) {
        let (now, met) = st.met_by_released(self.releases);
        for &i in met.iter().rev() {
            let r = st.regions.swap_remove(i);
            // Memory already unmapped may make the driver object; the entry goes either way.
            if let Err(e) = self.forget(&r) {
                tracing::debug!("unregistering released host range {:#x}: {e}", r.start);
            }
            st.stats.released_freed += 1;
        }
        st.seen = now;
    }

    /// Makes `[addr, addr + len)` lie inside one registration that maps the caller's pages.
    /// Returns whether it does (false: copies must be staged).
    pub fn ensure(&self, addr: u64, len: usize, access: HostAccess) -> Result<bool> {
        if len == 0 {
            return Ok(true);
        }
        if self.policy == PinPolicy::Staging {
            return Ok(false);
        }
        let (s, e) = align(addr, len as u64);
        let mut st = self.lock();
        self.drop_released(&mut st);
        st.clock += 1;
        let now = st.clock;
        let over: Vec<usize> = (0..st.regions.len())
            .filter(|&i| st.regions[i].overlaps(s, e))
            .collect();
        if let [i] = over[..] {
            if st.regions[i].contains(s, e) {
                if self.registrar.verify(addr, len, access)? {
                    st.regions[i].last_use = now;
                    st.stats.hits += 1;
                    return Ok(true);
                }
                st.stats.stale += 1;
            }
        }
        if self.stages(&mut st, s, e, access) {
            return Ok(false);
        }
        // Replace every overlapping registration by one covering the union.
        let (mut us, mut ue) = (s, e);
        for &i in &over {
            us = us.min(st.regions[i].start);
            ue = ue.max(st.regions[i].end);
        }
        if over.len() > 1 || (over.len() == 1 && (us, ue) != (s, e)) {
            st.stats.merges += 1;
        }
        let mut olds: Vec<Region> = Vec::new();
        for &i in over.iter().rev() {
            olds.push(st.regions.swap_remove(i));
        }
        for r in &olds {
            self.forget(r)?;
        }
        let t = Instant::now();
        if access == HostAccess::ReadWrite && (ue - us) as usize >= prefault::MIN_BYTES {
            // A fresh output would be faulted in page by page inside the registration. Inputs
            // were written by the program, so their pages are there already.
            if prefault::populate(us, ue, access, prefault::threads(), PAGE) {
                st.stats.bytes_prefaulted += ue - us;
            }
            st.stats.seconds_prefaulting += t.elapsed().as_secs_f64();
        }
        let mut ok = self.register(&mut st, us, ue, now)?;
        if !ok && (us, ue) != (s, e) {
            // Parts of the union may no longer be mapped (stale neighbours): the request alone.
            ok = self.register(&mut st, s, e, now)?;
        }
        st.stats.seconds_registering += t.elapsed().as_secs_f64();
        Ok(ok)
    }

    /// Whether [`ensure`](Self::ensure) would change nothing for `[addr, addr + len)`: the
    /// range lies in one registration that still maps the caller's pages (verified as
    /// `ensure` verifies a hit), or copies of it are staged anyway. Never registers or
    /// unregisters, so it is safe while copies of other calls are in flight.
    ///
    /// The cache's lock is not held while the backend verifies: its probes are synchronous
    /// copies, which wait behind the copies other calls have in flight, and every copy a link
    /// issues asks [`is_pinned`](Self::is_pinned) under that lock; held, one call's check
    /// stopped every other call from issuing copies. Registrations change only in `ensure`
    /// and `release`, which the pool runs with no call in flight, so the region found stays.
    pub fn check(&self, addr: u64, len: usize, access: HostAccess) -> Result<bool> {
        self.check_all(&[(addr, len, access)])
    }

    /// [`check`](Self::check) of every range: `true` when each would be. The registrations
    /// found are verified together ([`Registrar::verify_all`]): on H200 the synchronous probes
    /// of A, B and C one after another were most of the 61-68 us a small call spent before
    /// its first task.
    pub fn check_all(&self, ranges: &[(u64, usize, HostAccess)]) -> Result<bool> {
        if self.policy == PinPolicy::Staging {
            return Ok(true);
        }
        self.lock().fresh.clear();
        {
            // Memory given back under a registration: `ensure` drops it, with no call in flight.
            let mut st = self.lock();
            let (now, met) = st.met_by_released(self.releases);
            if !met.is_empty() {
                return Ok(false);
            }
            st.seen = now;
        }
        // Per range a registration holds whole: the registration's start, and the range's
        // index in `to_verify`.
        let mut held: Vec<(u64, usize)> = Vec::new();
        let mut to_verify: Vec<(u64, usize, HostAccess)> = Vec::new();
        for &(addr, len, access) in ranges.iter().filter(|r| r.1 > 0) {
            let (s, e) = align(addr, len as u64);
            let region = {
                let st = self.lock();
                let over: Vec<&Region> = st.regions.iter().filter(|r| r.overlaps(s, e)).collect();
                match over[..] {
                    [r] if r.contains(s, e) => Some(r.start),
                    _ => None,
                }
            };
            match region {
                None => {
                    if !self.stages(&mut self.lock(), s, e, access) {
                        return Ok(false);
                    }
                }
                Some(start) => {
                    to_verify.push((addr, len, access));
                    held.push((start, to_verify.len() - 1));
                }
            }
        }
        let verified = if to_verify.is_empty() {
            Vec::new()
        } else {
            self.registrar.verify_all(&to_verify)?
        };
        for (range, ok) in to_verify.iter().zip(&verified) {
            let (s, e) = align(range.0, range.1 as u64);
            if !ok && !self.stages(&mut self.lock(), s, e, range.2) {
                return Ok(false);
            }
        }
        let mut st = self.lock();
        for (start, verify) in held {
            if !verified[verify] {
                continue; // stale, staged this time
            }
            st.clock += 1;
            let now = st.clock;
            if let Some(r) = st.regions.iter_mut().find(|r| r.start == start) {
                r.last_use = now;
            }
            st.stats.hits += 1;
        }
        Ok(true)
    }

    /// Whether the page-aligned `[s, e)` of this access, which no registration holds, is
    /// staged rather than registered: every output under `StageOutputs`; under `Cache`, an
    /// output of at least [`FRESH_STAGED_BYTES`] that has mostly never been touched. Its
    /// pages are populated during the call ([`PinCache::begin_call`]).
    fn stages(&self, st: &mut State, s: u64, e: u64, access: HostAccess) -> bool {
        if access != HostAccess::ReadWrite {
            return false;
        }
        match self.policy {
            PinPolicy::StageOutputs => true,
            PinPolicy::Cache if (e - s) as usize >= FRESH_STAGED_BYTES => {
                if st.fresh.contains(&(s, e)) {
                    return true;
                }
                let fresh = (self.unbacked)(s, e, PAGE);
                if fresh {
                    st.fresh.push((s, e));
                }
                fresh
            }
            _ => false,
        }
    }

    /// Registers `[s, e)`, evicting least recently used registrations while the OS refuses.
    fn register(&self, st: &mut State, s: u64, e: u64, now: u64) -> Result<bool> {
        loop {
            // Before registering: the allocator hook must report the range's release from now.
            self.releases.watch(s, e);
            let registered = self.registrar.register(s, (e - s) as usize);
            if !matches!(registered, Ok(Registered::Yes)) {
                self.releases.unwatch(s, e);
            }
            match registered? {
                Registered::Yes => {
                    st.regions.push(Region {
                        start: s,
                        end: e,
                        last_use: now,
                    });
                    st.stats.registrations += 1;
                    st.stats.bytes_registered += e - s;
                    return Ok(true);
                }
                Registered::Foreign => {
                    st.stats.failures += 1;
                    return Ok(false);
                }
                Registered::Refused => {
                    let victim = (0..st.regions.len())
                        .filter(|&i| !st.regions[i].overlaps(s, e))
                        .min_by_key(|&i| st.regions[i].last_use);
                    match victim {
                        Some(i) => {
                            let v = st.regions.swap_remove(i);
                            self.forget(&v)?;
                            st.stats.evictions += 1;
                        }
                        None => {
                            st.stats.failures += 1;
                            return Ok(false);
                        }
                    }
                }
            }
        }
    }

    /// Starts populating the call's fresh outputs (those it stages as never touched) on every
    /// core ([`prefault::Background`]), one at a time per cache. The returned guard finishes
    /// the population when dropped.
    ///
    /// # Safety
    /// `regions` are the call's host operands: they stay mapped, and the program leaves them
    /// alone, until the guard is dropped; every copy of them the backend makes first claims its
    /// range ([`PinCache::background_of`], [`prefault::Background::claim`]).
    pub unsafe fn begin_call(&self, regions: &[(u64, usize, HostAccess)]) -> Option<Population> {
        let mut st = self.lock();
        if st.background.as_ref().is_some_and(|b| b.running()) {
            return None;
        }
        let &(addr, len, _) = regions.iter().find(|&&(addr, len, access)| {
            access == HostAccess::ReadWrite && st.fresh.contains(&align(addr, len as u64))
        })?;
        // SAFETY: the caller's contract.
        let bg = unsafe { prefault::Background::start(addr, len, prefault::threads()) }?;
        st.background = Some(bg.clone());
        Some(Population(bg))
    }

    /// The population of a fresh output that `[addr, addr + len)` lies in, if one runs: a copy
    /// of that range claims it first ([`prefault::Background::claim`]).
    pub fn background_of(&self, addr: u64, len: usize) -> Option<Arc<prefault::Background>> {
        let (s, e) = align(addr, len as u64);
        self.lock()
            .background
            .as_ref()
            .filter(|b| b.running() && b.start <= s && e <= b.end)
            .cloned()
    }

    /// Whether copies into the output `[addr, addr + len)` would be staged: no registration
    /// holds it, and it is a range [`PinCache::ensure`] stages (a fresh output).
    pub fn stages_output(&self, addr: u64, len: usize) -> bool {
        if len == 0 {
            return false;
        }
        if self.policy == PinPolicy::Staging {
            return true;
        }
        let (s, e) = align(addr, len as u64);
        let mut st = self.lock();
        !st.regions.iter().any(|r| r.contains(s, e))
            && self.stages(&mut st, s, e, HostAccess::ReadWrite)
    }

    /// Whether `[addr, addr + len)` lies inside one registration (a copy can DMA it directly).
    pub fn is_pinned(&self, addr: u64, len: usize) -> bool {
        if len == 0 {
            return true;
        }
        let (s, e) = align(addr, len as u64);
        self.lock().regions.iter().any(|r| r.contains(s, e))
    }

    /// Forgets and unregisters every registration overlapping `[addr, addr + len)`.
    pub fn release(&self, addr: u64, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let (s, e) = align(addr, len as u64);
        let mut st = self.lock();
        let mut keep = Vec::with_capacity(st.regions.len());
        let mut result = Ok(());
        for r in st.regions.drain(..) {
            if r.overlaps(s, e) {
                if let Err(err) = self.forget(&r) {
                    result = Err(err);
                }
            } else {
                keep.push(r);
            }
        }
        st.regions = keep;
        result
    }

    pub fn stats(&self) -> PinStats {
        self.lock().stats.clone()
    }

    /// Releases the registrations whose memory is no longer mapped in this process (the caller
    /// freed the buffer without [`release`](Self::release)); returns how many. The driver keeps
    /// such ranges in its address map, and when the OS hands the addresses out again its own
    /// mappings collide: on H200 a `cuMemAlloc` after registered host buffers had been freed
    /// failed with `CUDA_ERROR_ALREADY_MAPPED`. Safe while other operations run: none can use
    /// memory that no longer exists.
    pub fn release_unmapped(&self) -> usize {
        let mut st = self.lock();
        let before = st.stats.released_freed;
        self.drop_released(&mut st);
        let freed = (st.stats.released_freed - before) as usize;
        let mut keep = Vec::with_capacity(st.regions.len());
        let mut released = 0;
        for r in st.regions.drain(..) {
            if is_mapped(r.start, r.end - r.start) {
                keep.push(r);
            } else {
                // The driver may object to unregistering vanished memory; the entry goes either
                // way (keeping it would keep the collision).
                if let Err(e) = self.forget(&r) {
                    tracing::debug!("unregistering unmapped host range {:#x}: {e}", r.start);
                }
                released += 1;
            }
        }
        st.regions = keep;
        st.stats.released_unmapped += released as u64;
        released + freed
    }

    /// Runs `alloc` (a device allocation); when it fails with an error `collides` recognises as
    /// the driver's address map colliding with a freed buffer's registration, releases the
    /// registrations of unmapped memory ([`release_unmapped`](Self::release_unmapped)) and, if
    /// there were any, runs `alloc` once more. Backends name their own error code.
    pub fn retry_after_unmapped<T>(
        &self,
        alloc: impl Fn() -> Result<T>,
        collides: impl Fn(&hetblas_core::Error) -> bool,
    ) -> Result<T> {
        match alloc() {
            Err(e) if collides(&e) && self.release_unmapped() > 0 => alloc(),
            r => r,
        }
    }

    /// Unregisters everything this cache registered.
    pub fn release_all(&self) -> Result<()> {
        let mut st = self.lock();
        let mut result = Ok(());
        for r in st.regions.drain(..) {
            if let Err(err) = self.forget(&r) {
                result = Err(err);
            }
        }
        result
    }
}

impl<R: Registrar> Drop for PinCache<R> {
    fn drop(&mut self) {
        // Registrations are released with the cache (the runtime); the registrar holds what it
        // needs (the driver context) until after this.
        let _ = self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A driver stand-in: registrations may not overlap (as in CUDA), a capacity limit, and
    /// memory "generations" for staleness; `others` were registered by someone else.
    #[derive(Default)]
    struct Fake {
        regs: Mutex<BTreeMap<u64, u64>>,
        capacity: u64,
        stale_pages: Mutex<Vec<u64>>,
        others: Vec<(u64, u64)>,
    }

    impl Registrar for Fake {
        fn register(&self, start: u64, len: usize) -> Result<Registered> {
            let mut r = self.regs.lock().unwrap();
            let end = start + len as u64;
            if self.others.iter().any(|&(s, e)| s < end && start < e) {
                return Ok(Registered::Foreign);
            }
            assert!(
                r.iter().all(|(&s, &e)| e <= start || s >= end),
                "overlapping registration [{start:x}, {end:x})"
            );
            let used: u64 = r.iter().map(|(s, e)| e - s).sum();
            if used + len as u64 > self.capacity {
                return Ok(Registered::Refused);
            }
            r.insert(start, end);
            Ok(Registered::Yes)
        }
        fn unregister(&self, start: u64) -> Result<()> {
            let mut r = self.regs.lock().unwrap();
            let end = r
                .remove(&start)
                .expect("unregister of an unknown registration");
            // Registering again maps the pages now there.
            self.stale_pages
                .lock()
                .unwrap()
                .retain(|&p| p < start || p >= end);
            Ok(())
        }
        fn verify(&self, addr: u64, len: usize, _: HostAccess) -> Result<bool> {
            let (s, e) = align(addr, len as u64);
            Ok(!self
                .stale_pages
                .lock()
                .unwrap()
                .iter()
                .any(|&p| p >= s && p < e))
        }
    }

    fn cache(capacity: u64) -> PinCache<Fake> {
        PinCache::new(
            Fake {
                capacity,
                ..Default::default()
            },
            PinPolicy::Cache,
        )
    }

    /// A range someone else page-locked in part is staged on every call, never taken for
    /// registered (their registration may not cover it, and may change between calls).
    #[test]
    fn someone_elses_registration_is_staged() {
        let base = 0x1000_0000;
        let c = PinCache::new(
            Fake {
                capacity: u64::MAX,
                others: vec![(base, base + PAGE)],
                ..Default::default()
            },
            PinPolicy::Cache,
        );
        let len = 3 * PAGE as usize;
        for _ in 0..2 {
            assert!(!c.ensure(base + 100, len, HostAccess::Read).unwrap());
            assert!(!c.is_pinned(base + 100, len));
        }
        assert!(c.ensure(base + PAGE, len, HostAccess::Read).unwrap());
        let stats = c.stats();
        assert_eq!((stats.failures, stats.registrations), (2, 1));
    }

    #[test]
    fn stage_outputs_registers_inputs_only() {
        let mut c = cache(u64::MAX);
        c.policy = PinPolicy::StageOutputs;
        let len = 8 * PAGE as usize;
        let (input, output) = (0x4000_0000u64, 0x8000_0000u64);
        assert!(c.ensure(input, len, HostAccess::Read).unwrap());
        assert!(one_registration_covers(&c, input, len as u64));
        assert!(!c.ensure(output, len, HostAccess::ReadWrite).unwrap());
        assert!(!one_registration_covers(&c, output, len as u64));
        // Nothing to change for a staged output; an input range already registered is a hit,
        // also when it is written.
        assert!(c.check(output, len, HostAccess::ReadWrite).unwrap());
        assert!(c.ensure(input, len, HostAccess::ReadWrite).unwrap());
    }

    #[test]
    fn memory_given_back_drops_its_registration_before_the_next_use() {
        let mut c = cache(u64::MAX);
        c.releases = Box::leak(Box::new(Releases::new()));
        let len = 8 * PAGE as usize;
        let (a, b) = (0x4000_0000u64, 0x5000_0000u64);
        let both = [(a, len, HostAccess::Read), (b, len, HostAccess::Read)];
        for (addr, _, access) in both {
            assert!(c.ensure(addr, len, access).unwrap());
        }
        assert!(c.check_all(&both).unwrap());
        // Memory next to a registration, given back: nothing to drop, calls still run beside
        // each other.
        c.releases.note(b + len as u64, b + 2 * len as u64);
        assert!(c.check_all(&both).unwrap());
        // B's last page freed (its probes would still pass: the fake's pages are not stale).
        c.releases.note(b + len as u64 - PAGE, b + len as u64);
        assert!(
            !c.check_all(&both).unwrap(),
            "B must be registered again first"
        );
        assert!(c.ensure(b, len, HostAccess::Read).unwrap());
        let st = c.stats();
        assert_eq!((st.released_freed, st.registrations), (1, 3));
        assert!(c.check_all(&both).unwrap());
        // More releases (here of A's first page, again and again) than the record keeps: every
        // registration goes, B's too.
        for _ in 0..=256 {
            c.releases.note(a, a + PAGE);
        }
        assert!(c.ensure(b, len, HostAccess::Read).unwrap());
        let st = c.stats();
        assert_eq!((st.released_freed, st.registrations), (3, 4));
        assert!(!one_registration_covers(&c, a, len as u64));
    }

    #[test]
    fn check_all_holds_when_every_range_would_and_counts_only_verified_hits() {
        let c = cache(u64::MAX);
        let len = 8 * PAGE as usize;
        let (a, b, out) = (0x4000_0000u64, 0x5000_0000u64, 0x6000_0000u64);
        for (addr, access) in [
            (a, HostAccess::Read),
            (b, HostAccess::Read),
            (out, HostAccess::ReadWrite),
        ] {
            assert!(c.ensure(addr, len, access).unwrap());
        }
        let all = [
            (a, len, HostAccess::Read),
            (b, len, HostAccess::Read),
            (out, len, HostAccess::ReadWrite),
        ];
        assert!(c.check_all(&all).unwrap());
        assert_eq!(c.stats().hits, 3);
        // B freed and mapped again behind the cache: the set is not ready, and only A and C
        // count as hits.
        c.registrar.stale_pages.lock().unwrap().push(b + PAGE);
        assert!(!c.check_all(&all).unwrap());
        assert!(c.check_all(&[all[0], all[2]]).unwrap());
        assert_eq!(c.stats().hits, 5);
        // Empty ranges and ranges no registration holds (an input: not staged) decide alone.
        assert!(c.check_all(&[(b, 0, HostAccess::Read)]).unwrap());
        assert!(!c
            .check_all(&[all[0], (0x7000_0000, len, HostAccess::Read)])
            .unwrap());
        assert!(!c.check(b, len, HostAccess::Read).unwrap());
    }

    /// A fresh anonymous mapping of `len` bytes (no page touched), unmapped on drop.
    struct Fresh(u64, usize);
    impl Fresh {
        fn new(len: usize) -> Fresh {
            Fresh(prefault::test_mapping(len), len)
        }
        fn touch(&self) {
            for off in (0..self.1).step_by(PAGE as usize) {
                // SAFETY: inside the mapping.
                unsafe { *((self.0 + off as u64) as *mut u8) = 1 };
            }
        }
    }
    impl Drop for Fresh {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`, no longer used.
            unsafe { libc::munmap(self.0 as *mut libc::c_void, self.1) };
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_fresh_output_is_staged_and_registered_when_it_comes_back_written() {
        let len = prefault::MIN_BYTES;
        let out = Fresh::new(len);
        let c = cache(u64::MAX);
        // The decision asks first (and prices the copy-outs); a smaller one is registered.
        assert!(c.stages_output(out.0, len));
        assert!(c.stages_output(out.0, FRESH_STAGED_BYTES));
        assert!(!c.stages_output(out.0, FRESH_STAGED_BYTES / 2));
        assert!(!c.ensure(out.0, len, HostAccess::ReadWrite).unwrap());
        assert!(!one_registration_covers(&c, out.0, len as u64));
        // Deciding populates nothing; the call's start does, on every core, for outputs only.
        assert!(c.background_of(out.0, len).is_none());
        // SAFETY: the mapping outlives the population, and the test leaves it alone meanwhile.
        assert!(unsafe { c.begin_call(&[(out.0, len, HostAccess::Read)]) }.is_none());
        // SAFETY: as above.
        let pop = unsafe { c.begin_call(&[(out.0, len, HostAccess::ReadWrite)]) }
            .expect("the fresh output's population started");
        // The same call still stages it, populated or not.
        assert!(!c.ensure(out.0, len, HostAccess::ReadWrite).unwrap());
        pop.0.wait_ended("population");
        drop(pop);
        let (s, e) = align(out.0, len as u64);
        assert!(!prefault::mostly_unbacked(s, e, PAGE), "populated");
        // Written (here populated), it is registered by the next call.
        out.touch();
        assert!(!c.check(out.0, len, HostAccess::ReadWrite).unwrap());
        assert!(c.ensure(out.0, len, HostAccess::ReadWrite).unwrap());
        assert!(one_registration_covers(&c, out.0, len as u64));
        assert!(!c.stages_output(out.0, len));
        assert_eq!(c.stats().registrations, 1);
        assert!(c.background_of(out.0, len).is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn fresh_inputs_small_outputs_and_register_all_are_registered() {
        let len = prefault::MIN_BYTES;
        // Read only: registered even untouched (nothing would write its pages).
        let input = Fresh::new(len);
        let c = cache(u64::MAX);
        assert!(c.ensure(input.0, len, HostAccess::Read).unwrap());
        // Below the threshold a fresh output costs little to lock: registered.
        let small = Fresh::new(FRESH_STAGED_BYTES / 2);
        assert!(c
            .ensure(small.0, FRESH_STAGED_BYTES / 2, HostAccess::ReadWrite)
            .unwrap());
        // `PinPolicy::RegisterAll`: fresh outputs too.
        let out = Fresh::new(len);
        let mut all = cache(u64::MAX);
        all.policy = PinPolicy::RegisterAll;
        assert!(all.ensure(out.0, len, HostAccess::ReadWrite).unwrap());
        assert!(one_registration_covers(&all, out.0, len as u64));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_written_output_is_registered_at_once() {
        let len = prefault::MIN_BYTES;
        let out = Fresh::new(len);
        out.touch();
        let c = cache(u64::MAX);
        assert!(c.ensure(out.0, len, HostAccess::ReadWrite).unwrap());
        assert!(one_registration_covers(&c, out.0, len as u64));
    }

    fn one_registration_covers(c: &PinCache<Fake>, addr: u64, len: u64) -> bool {
        let (s, e) = align(addr, len);
        c.registrar()
            .regs
            .lock()
            .unwrap()
            .iter()
            .any(|(&rs, &re)| rs <= s && re >= e)
    }

    /// A fresh anonymous mapping of `len` bytes (the caller unmaps it).
    #[cfg(unix)]
    fn map(len: usize) -> u64 {
        prefault::test_mapping(len)
    }

    #[cfg(unix)]
    #[test]
    fn allocation_is_retried_only_after_releasing_unmapped_memory() {
        use hetblas_core::Error;
        let len = 16 * PAGE as usize;
        let buf = map(len);
        let c = cache(u64::MAX);
        assert!(c.ensure(buf, len, HostAccess::Read).unwrap());
        let calls = std::cell::Cell::new(0);
        let alloc = || {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                Err(Error::internal("collides"))
            } else {
                Ok(calls.get())
            }
        };
        let collides = |e: &Error| matches!(e, Error::Internal(_));
        // Nothing freed: no retry, the error stands.
        assert!(c.retry_after_unmapped(alloc, collides).is_err());
        assert_eq!(calls.get(), 1);
        // Another error: no retry either.
        calls.set(0);
        assert!(c.retry_after_unmapped(alloc, |_| false).is_err());
        assert_eq!(calls.get(), 1);
        let _alone = prefault::TEST_MAPPINGS
            .write()
            .unwrap_or_else(|p| p.into_inner());
        // SAFETY: unmaps the mapping, which nothing else refers to.
        assert_eq!(unsafe { libc::munmap(buf as *mut libc::c_void, len) }, 0);
        calls.set(0);
        assert_eq!(c.retry_after_unmapped(alloc, collides).unwrap(), 2);
        assert_eq!(c.stats().released_unmapped, 1);
        assert!(!c.is_pinned(buf, len));
    }

    #[cfg(unix)]
    #[test]
    fn registrations_of_freed_memory_are_released() {
        let len = 16 * PAGE as usize;
        let (freed, kept) = (map(len), map(len));
        let c = cache(u64::MAX);
        assert!(c.ensure(freed, len, HostAccess::Read).unwrap());
        assert!(c.ensure(kept, len, HostAccess::Read).unwrap());
        assert!(is_mapped(freed, len as u64));
        let _alone = prefault::TEST_MAPPINGS
            .write()
            .unwrap_or_else(|p| p.into_inner());
        // SAFETY: unmaps the first mapping, which nothing else refers to.
        assert_eq!(unsafe { libc::munmap(freed as *mut libc::c_void, len) }, 0);
        assert!(!is_mapped(freed, len as u64));
        assert_eq!(c.release_unmapped(), 1);
        assert!(!one_registration_covers(&c, freed, len as u64));
        assert!(one_registration_covers(&c, kept, len as u64));
        assert!(c.is_pinned(kept, len));
        assert_eq!(c.stats().released_unmapped, 1);
        assert_eq!(c.release_unmapped(), 0);
        c.release_all().unwrap();
        // SAFETY: unmaps the second mapping, released from the cache above.
        assert_eq!(unsafe { libc::munmap(kept as *mut libc::c_void, len) }, 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn fresh_memory_is_faulted_in_before_a_large_registration() {
        let len = prefault::MIN_BYTES;
        let buf = map(len);
        let resident = || {
            let mut v = vec![0u8; len / PAGE as usize];
            // SAFETY: the mapping is live and page-aligned; v has one byte per page.
            let r = unsafe { libc::mincore(buf as *mut libc::c_void, len, v.as_mut_ptr()) };
            assert_eq!(r, 0);
            v.iter().filter(|&&b| b & 1 == 1).count()
        };
        assert_eq!(resident(), 0, "a fresh mapping has no page yet");
        let mut c = cache(u64::MAX);
        // Registered although fresh: the policy that registers every operand.
        c.policy = PinPolicy::RegisterAll;
        assert!(c.ensure(buf, len, HostAccess::ReadWrite).unwrap());
        let st = c.stats();
        if st.bytes_prefaulted == 0 {
            eprintln!("MADV_POPULATE_WRITE unsupported by this kernel; nothing to check");
        } else {
            assert_eq!(st.bytes_prefaulted, len as u64);
            assert_eq!(resident(), len / PAGE as usize);
        }
        assert!(one_registration_covers(&c, buf, len as u64));
        // A hit populates nothing more; a small range or one only read is never populated.
        assert!(c.ensure(buf, len, HostAccess::ReadWrite).unwrap());
        assert_eq!(c.stats().bytes_prefaulted, st.bytes_prefaulted);
        let small = map(16 * PAGE as usize);
        assert!(c
            .ensure(small, 16 * PAGE as usize, HostAccess::ReadWrite)
            .unwrap());
        assert_eq!(c.stats().bytes_prefaulted, st.bytes_prefaulted);
        let input = map(len);
        assert!(c.ensure(input, len, HostAccess::Read).unwrap());
        assert_eq!(c.stats().bytes_prefaulted, st.bytes_prefaulted);
        c.release_all().unwrap();
        // SAFETY: unmaps the mappings, released from the cache above.
        unsafe {
            assert_eq!(libc::munmap(buf as *mut libc::c_void, len), 0);
            assert_eq!(libc::munmap(input as *mut libc::c_void, len), 0);
            assert_eq!(
                libc::munmap(small as *mut libc::c_void, 16 * PAGE as usize),
                0
            );
        }
    }

    #[test]
    fn buffers_sharing_pages_end_in_one_registration_each() {
        let c = cache(u64::MAX);
        // Two buffers sharing a page, then one spanning both.
        assert!(c.ensure(0x1000_0100, 0x2000, HostAccess::Read).unwrap());
        assert!(c.ensure(0x1000_2200, 0x2000, HostAccess::Read).unwrap());
        assert!(one_registration_covers(&c, 0x1000_2200, 0x2000));
        assert!(c
            .ensure(0x1000_0000, 0x5000, HostAccess::ReadWrite)
            .unwrap());
        assert!(one_registration_covers(&c, 0x1000_0000, 0x5000));
        assert!(c.is_pinned(0x1000_0100, 0x100));
        assert!(c.stats().merges >= 1);
        // A hit the second time.
        let hits = c.stats().hits;
        assert!(c.ensure(0x1000_0000, 0x5000, HostAccess::Read).unwrap());
        assert_eq!(c.stats().hits, hits + 1);
    }

    /// A registrar whose verify waits, with the cache's caller still inside it, until the
    /// test says go (or two seconds pass).
    struct SlowVerify {
        entered: Mutex<std::sync::mpsc::Sender<()>>,
        go: Mutex<std::sync::mpsc::Receiver<()>>,
        went: std::sync::atomic::AtomicBool,
    }

    impl Registrar for SlowVerify {
        fn register(&self, _: u64, _: usize) -> Result<Registered> {
            Ok(Registered::Yes)
        }
        fn unregister(&self, _: u64) -> Result<()> {
            Ok(())
        }
        fn verify(&self, _: u64, _: usize, _: HostAccess) -> Result<bool> {
            self.entered.lock().unwrap().send(()).unwrap();
            let go = self
                .go
                .lock()
                .unwrap()
                .recv_timeout(std::time::Duration::from_secs(2));
            self.went
                .store(go.is_ok(), std::sync::atomic::Ordering::SeqCst);
            Ok(true)
        }
    }

    #[test]
    fn a_check_lets_copies_ask_while_it_verifies() {
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (go, go_rx) = std::sync::mpsc::channel();
        let c = PinCache::new(
            SlowVerify {
                entered: Mutex::new(entered_tx),
                go: Mutex::new(go_rx),
                went: Default::default(),
            },
            PinPolicy::Cache,
        );
        let (addr, len) = (0x7000_0000u64, 4 * PAGE as usize);
        let mut st = c.lock();
        st.regions.push(Region {
            start: addr,
            end: addr + len as u64,
            last_use: 0,
        });
        drop(st);
        std::thread::scope(|s| {
            let checking = s.spawn(|| c.check(addr, len, HostAccess::Read));
            entered.recv().unwrap();
            // What every copy of another call asks while this check verifies: it must not
            // wait for the verification (which waits for this very answer here).
            assert!(c.is_pinned(addr, len));
            go.send(()).unwrap();
            assert!(checking.join().unwrap().unwrap());
        });
        assert!(
            c.registrar().went.load(std::sync::atomic::Ordering::SeqCst),
            "is_pinned waited for a verification in progress"
        );
        assert_eq!(c.stats().hits, 1);
    }

    #[test]
    fn stale_registrations_are_redone() {
        let c = cache(u64::MAX);
        assert!(c.ensure(0x2000_0000, 0x10000, HostAccess::Read).unwrap());
        c.registrar().stale_pages.lock().unwrap().push(0x2000_3000);
        assert!(c.ensure(0x2000_0000, 0x10000, HostAccess::Read).unwrap());
        assert_eq!(c.stats().stale, 1);
        assert!(one_registration_covers(&c, 0x2000_0000, 0x10000));
    }

    #[test]
    fn lru_eviction_and_refusal() {
        let c = cache(0x3000);
        assert!(c.ensure(0x10_0000, 0x1000, HostAccess::Read).unwrap());
        assert!(c.ensure(0x20_0000, 0x1000, HostAccess::Read).unwrap());
        assert!(c.ensure(0x30_0000, 0x1000, HostAccess::Read).unwrap());
        assert!(c.ensure(0x10_0000, 0x1000, HostAccess::Read).unwrap()); // refresh the first
        assert!(c.ensure(0x40_0000, 0x1000, HostAccess::Read).unwrap()); // evicts 0x20_0000
        assert_eq!(c.stats().evictions, 1);
        assert!(!c.is_pinned(0x20_0000, 8));
        assert!(c.is_pinned(0x10_0000, 8));
        // Larger than the capacity: refused, stage.
        assert!(!c.ensure(0x50_0000, 0x10000, HostAccess::Read).unwrap());
        c.release(0x10_0000, 0x1000).unwrap();
        assert!(!c.is_pinned(0x10_0000, 8));
        c.release_all().unwrap();
        assert!(c.registrar().regs.lock().unwrap().is_empty());
    }
}
