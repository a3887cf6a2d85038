//! Host memory the program gave back (freed, unmapped, remapped, its pages discarded), as a
//! hook on the program's allocator reports it: the drop-in library's `free`, `realloc`,
//! `munmap`, `mremap` and `madvise`. A registration over such memory still maps the pages the
//! program no longer sees: a new array the allocator puts at those addresses would be read
//! stale through it, and the driver refuses to register the addresses again
//! (`CUDA_ERROR_ALREADY_MAPPED`; both seen on an H200 host with pip NumPy's fresh `a @ b`
//! outputs). The registration caches ([`PinCache`](super::cache::PinCache)) drop every
//! registration such a range touches before they next use one.
//!
//! [`Releases::note`] runs inside `free`, so it allocates nothing and takes no lock that anyone
//! holds while calling out: a spin lock around a fixed ring, held for a few stores. Only ranges
//! that meet a registration ([`Releases::watch`]) are kept: a program that registers nothing
//! pays two loads per `free`, and one that does a scan of its few registrations. (Keeping every
//! range within the registrations' bounds was tried first: the frees of the runtime's own
//! threads, whose allocator arenas lie among NumPy's arrays, filled the ring during every call,
//! and every registration was dropped and redone: 0.19 s per 16384 `a @ b` on the H200 host.)

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Ranges kept between two looks of a cache; more in between and the cache drops everything
/// (correct, only slower).
const SLOTS: usize = 256;
/// Registrations watched one by one; beyond them every range within the bounds is kept.
const WATCHED: usize = 64;

/// The releases of this process, which the drop-in's hooks report.
pub static PROCESS: Releases = Releases::new();

/// A record of released ranges: [`PROCESS`] (tests make their own).
#[derive(Debug)]
pub struct Releases {
    /// The bounds of every host range registered so far (they never shrink).
    lo: AtomicU64,
    hi: AtomicU64,
    /// Ranges noted so far; slot `n % SLOTS` holds the `n`-th.
    noted: AtomicU64,
    ring: [(AtomicU64, AtomicU64); SLOTS],
    lock: AtomicBool,
    /// The registrations, `[start, end)`; `(0, 0)` is a free slot. A slot keeps its place
    /// while in use, so [`Releases::note`] reads them without the lock.
    watched: [(AtomicU64, AtomicU64); WATCHED],
    /// One past the highest slot of `watched` ever used.
    watched_len: AtomicUsize,
    /// Set when `watched` was full: every range within the bounds is kept from then on.
    watch_all: AtomicBool,
}

/// Held while the ring is written or read: a few loads and stores, never a call out.
struct Spin<'a>(&'a AtomicBool);

impl<'a> Spin<'a> {
    fn lock(flag: &'a AtomicBool) -> Spin<'a> {
        while flag
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        Spin(flag)
    }
}

impl Drop for Spin<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// What was released since a cache last looked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// These ranges (`[start, end)`).
    Ranges(Vec<(u64, u64)>),
    /// More than the ring keeps: treat every registration as released.
    TooMany,
}

impl Releases {
    pub const fn new() -> Releases {
        Releases {
            lo: AtomicU64::new(u64::MAX),
            hi: AtomicU64::new(0),
            noted: AtomicU64::new(0),
            ring: [const { (AtomicU64::new(0), AtomicU64::new(0)) }; SLOTS],
            lock: AtomicBool::new(false),
            watched: [const { (AtomicU64::new(0), AtomicU64::new(0)) }; WATCHED],
            watched_len: AtomicUsize::new(0),
            watch_all: AtomicBool::new(false),
        }
    }

    /// Watches `[start, end)` (non-empty): called before it is registered. Watched twice (two
    /// caches), it needs two [`unwatch`](Self::unwatch)es.
    pub fn watch(&self, start: u64, end: u64) {
        self.lo.fetch_min(start, Ordering::AcqRel);
        self.hi.fetch_max(end, Ordering::AcqRel);
        let _held = Spin::lock(&self.lock);
        let free = self
            .watched
            .iter()
            .position(|w| w.1.load(Ordering::Relaxed) == 0);
        match free {
            Some(i) => {
                self.watched[i].0.store(start, Ordering::Release);
                self.watched[i].1.store(end, Ordering::Release);
                self.watched_len.fetch_max(i + 1, Ordering::AcqRel);
            }
            None => self.watch_all.store(true, Ordering::Release),
        }
    }

    /// Stops watching `[start, end)`: its registration is gone.
    pub fn unwatch(&self, start: u64, end: u64) {
        let _held = Spin::lock(&self.lock);
        if let Some(w) = self
            .watched
            .iter()
            .find(|w| w.0.load(Ordering::Relaxed) == start && w.1.load(Ordering::Relaxed) == end)
        {
            w.1.store(0, Ordering::Release);
            w.0.store(0, Ordering::Release);
        }
    }

    /// Whether `[start, end)` meets a watched registration.
    #[inline]
    fn meets_watched(&self, start: u64, end: u64) -> bool {
        if self.watch_all.load(Ordering::Acquire) {
            return true;
        }
        let n = self.watched_len.load(Ordering::Acquire);
        self.watched[..n].iter().any(|w| {
            let e = w.1.load(Ordering::Acquire);
            e > start && w.0.load(Ordering::Acquire) < end
        })
    }

    /// Whether memory starting at `start` may meet a registration: `false` lets a hook skip
    /// the work of finding the block's length.
    #[inline]
    pub fn may_touch(&self, start: u64) -> bool {
        start < self.hi.load(Ordering::Acquire)
    }

    /// Records that the program gives `[start, end)` back. Called before the memory goes (the
    /// allocator may hand the addresses out again as soon as it has them). Allocation-free;
    /// safe inside `free`.
    #[inline]
    pub fn note(&self, start: u64, end: u64) {
        if end <= self.lo.load(Ordering::Acquire)
            || start >= self.hi.load(Ordering::Acquire)
            || !self.meets_watched(start, end)
        {
            return;
        }
        let _held = Spin::lock(&self.lock);
        let n = self.noted.load(Ordering::Relaxed);
        let slot = &self.ring[(n % SLOTS as u64) as usize];
        slot.0.store(start, Ordering::Relaxed);
        slot.1.store(end, Ordering::Relaxed);
        self.noted.store(n + 1, Ordering::Release);
    }

    /// How many ranges were noted so far: a cache that has seen this many has nothing to drop.
    #[inline]
    pub fn noted(&self) -> u64 {
        self.noted.load(Ordering::Acquire)
    }

    /// The ranges noted after the first `seen`, and the count to remember for the next look.
    pub fn since(&self, seen: u64) -> (u64, Since) {
        // Allocated before the lock: a hook on `realloc` notes under it.
        let mut ranges = Vec::with_capacity(SLOTS);
        let _held = Spin::lock(&self.lock);
        let now = self.noted.load(Ordering::Relaxed);
        if now - seen > SLOTS as u64 {
            return (now, Since::TooMany);
        }
        for n in seen..now {
            let slot = &self.ring[(n % SLOTS as u64) as usize];
            ranges.push((
                slot.0.load(Ordering::Relaxed),
                slot.1.load(Ordering::Relaxed),
            ));
        }
        (now, Since::Ranges(ranges))
    }
}

impl Default for Releases {
    fn default() -> Releases {
        Releases::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_outside_every_registration_are_not_kept_and_an_overrun_says_so() {
        let r = Releases::new();
        let base = 0x7000_0000_0000u64;
        r.watch(base, base + (1 << 20));
        r.watch(base + (8 << 20), base + (9 << 20));
        r.note(base - 8192, base - 4096); // below every registration
        r.note(base + (10 << 20), base + (11 << 20)); // above
        r.note(base + (2 << 20), base + (3 << 20)); // between the two
        assert_eq!(r.noted(), 0);
        assert!(!r.may_touch(base + (10 << 20)));
        assert!(r.may_touch(base + 4096));
        r.note(base + 4096, base + 8192);
        r.note(base - 4096, base + 4096); // straddles the registration's start
        let (now, got) = r.since(0);
        assert_eq!(now, 2);
        assert_eq!(
            got,
            Since::Ranges(vec![(base + 4096, base + 8192), (base - 4096, base + 4096)])
        );
        assert_eq!(r.since(now), (2, Since::Ranges(vec![])));
        for i in 0..SLOTS as u64 {
            r.note(base + 4096 * i, base + 4096 * (i + 1));
        }
        // The ring holds exactly SLOTS ranges: one more and a cache at `now` lost some.
        assert!(matches!(r.since(now).1, Since::Ranges(v) if v.len() == SLOTS));
        r.note(base, base + 4096);
        assert_eq!(r.since(now).1, Since::TooMany);
        // Unwatched, a registration's range is not kept; the other's still is.
        r.unwatch(base, base + (1 << 20));
        let now = r.noted();
        r.note(base, base + 4096);
        r.note(base + (9 << 20) - 4096, base + (9 << 20));
        assert_eq!(
            r.since(now).1,
            Since::Ranges(vec![(base + (9 << 20) - 4096, base + (9 << 20))])
        );
    }

    #[test]
    fn beyond_the_watched_slots_every_range_within_the_bounds_is_kept() {
        let r = Releases::new();
        let base = 0x7000_0000_0000u64;
        for i in 0..WATCHED as u64 + 1 {
            r.watch(base + (i << 21), base + (i << 21) + 4096);
        }
        r.note(base + 8192, base + 12288); // between two registrations
        assert_eq!(r.noted(), 1);
    }
}
