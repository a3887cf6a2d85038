//! Parallel pre-faulting of host memory: about to be page-locked, or a fresh output that a call
//! stages ([`Background`]).
//!
//! Page-locking (`cudaHostRegister`, `hipHostRegister`, `mlock`) faults in every page of the
//! range that is not yet backed, one page after another on the calling thread. A program that
//! allocates a fresh output for every call (NumPy's `a @ b`) hands over untouched memory each
//! time, so the registration is dominated by those first-touch faults (zeroing each page):
//! on the H200 host 2 GB of fresh C cost 0.28 s to register against 0.17 s for the whole GEMM.
//! Faulting scales with threads, so a range the call writes is populated first, in parallel
//! chunks, with `MADV_POPULATE_WRITE`, which maps the pages without touching their contents;
//! the registration then only pins resident pages. The registration cache leaves ranges only
//! read alone: the program wrote them, so their pages are there (and managed memory among
//! them is not migrated to the host for nothing).
//!
//! Measured on a 2-core VM, 1 GiB fresh anonymous memory: `mlock` alone 1.56 s; populated first
//! with 4 threads 0.61 s, then `mlock` 0.35 s (first-touch faults 0.50 GB/s on 1 thread,
//! 2.1 GB/s on 4).

use hetblas_core::HostAccess;

/// Ranges below this are registered as they are: starting threads costs more than it saves.
pub const MIN_BYTES: usize = 64 << 20;
/// The least a thread populates (a few milliseconds of faults).
const CHUNK_BYTES: usize = 32 << 20;

/// Threads that populate a range: every core (during a GPU call the host's cores are
/// otherwise idle).
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Units a background population claims, from the start of its range up.
const UNIT_BYTES: u64 = 8 << 20;
/// Page size the population steps by (a larger page is touched several times, harmlessly).
const PAGE: u64 = 4096;

/// Units' states: nobody has them, a thread populates them, populated or claimed by a copy.
const FREE: u8 = 0;
const TOUCHING: u8 = 1;
const DONE: u8 = 2;

/// The population of a staged fresh output during its call, on every core ([`threads`]). A call
/// that stages a fresh output copies its write-backs into it on host threads, which fault its
/// pages in as they write (a copy into fresh memory ran at 12-25 GB/s on H200, into touched
/// memory at 38-49). First-touch stores scale with threads where the kernel's own population
/// does not (H200 host, 16 cores, Linux 6.18, 2026-11-30, `first_touch.c`, GB/s with huge
/// pages: stores on 4 threads 20-21, on 16 threads 49-55; `MADV_POPULATE_WRITE` 4 threads
/// 20-23, 16 threads 8-10). While the devices fetch and compute, before the first write-back,
/// the host is idle: its cores touch C's pages (an atomic compare-exchange of 0 for 0 on a byte
/// per page, which keeps every value) from the start of C up, in units. Every staged copy of the range first
/// [claims](Background::claim) the units it covers: one not yet begun is left to the copy, one
/// in progress is waited for, so no page is touched while a copy writes it. The call
/// [finishes](Background::finish) the population before it returns, so nothing touches the
/// program's memory after it.
/// NumPy's `a @ b` with a fresh output, H200: see docs/PERFORMANCE.md (issue 53).
#[derive(Debug)]
pub struct Background {
    /// The page-aligned range the units cover.
    pub start: u64,
    pub end: u64,
    /// The operand's own bytes, `[first, last)`: no byte outside them is touched.
    first: u64,
    last: u64,
    units: Vec<std::sync::atomic::AtomicU8>,
    next: std::sync::atomic::AtomicUsize,
    stop: std::sync::atomic::AtomicBool,
    live: std::sync::atomic::AtomicUsize,
}

impl Background {
    /// Starts touching the operand `[addr, addr + len)` (its pages, page-aligned) on up to
    /// `threads` threads: one is started here, which starts the others, so the call that
    /// begins it waits for one thread's start only. `None` when no thread could be started.
    ///
    /// # Safety
    /// Until [`finish`](Self::finish) returns, `[addr, addr + len)` stays mapped and writable,
    /// and nothing accesses it except through copies that [`claim`](Self::claim) their range
    /// first (a call's output during its call: the BLAS contract keeps the program away).
    pub unsafe fn start(
        addr: u64,
        len: usize,
        threads: usize,
    ) -> Option<std::sync::Arc<Background>> {
        use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
        let (first, last) = (addr, addr + len as u64);
        let (start, end) = (first / PAGE * PAGE, last.div_ceil(PAGE) * PAGE);
        let n = (end.saturating_sub(start)).div_ceil(UNIT_BYTES) as usize;
        let work = std::sync::Arc::new(Background {
            start,
            end,
            first,
            last,
            units: (0..n).map(|_| AtomicU8::new(FREE)).collect(),
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(n == 0),
            live: AtomicUsize::new(1),
        });
        let threads = threads.clamp(1, n.max(1));
        let w = work.clone();
        let spawned = std::thread::Builder::new()
            .name("hetblas-populate-0".into())
            .spawn(move || {
                for i in 1..threads {
                    let v = w.clone();
                    v.live.fetch_add(1, Ordering::AcqRel);
                    let more = std::thread::Builder::new()
                        .name(format!("hetblas-populate-{i}"))
                        .spawn(move || v.work());
                    if more.is_err() {
                        w.live.fetch_sub(1, Ordering::AcqRel);
                        break;
                    }
                }
                w.work();
            });
        match spawned {
            Ok(_) => Some(work),
            Err(_) => {
                work.live.fetch_sub(1, Ordering::AcqRel);
                None
            }
        }
    }

    /// One thread's share: free units, in order, until none is left or it is stopped.
    fn work(&self) {
        use std::sync::atomic::Ordering;
        while !self.stop.load(Ordering::Acquire) {
            let i = self.next.fetch_add(1, Ordering::AcqRel);
            let Some(unit) = self.units.get(i) else {
                break;
            };
            if unit
                .compare_exchange(FREE, TOUCHING, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue; // a copy claimed it
            }
            let lo = self.start + i as u64 * UNIT_BYTES;
            let hi = (lo + UNIT_BYTES).min(self.end);
            let mut page = lo;
            while page < hi {
                // The page's byte inside the operand (its first page may begin before it).
                let at = page.max(self.first);
                if at < self.last {
                    // SAFETY: `at` lies in the operand, mapped and writable until `finish`
                    // returns (the contract of `start`); the unit is ours (TOUCHING), so no
                    // copy writes it now.
                    let byte = unsafe { std::sync::atomic::AtomicU8::from_ptr(at as *mut u8) };
                    // A compare-exchange of 0 for 0 changes no byte, whatever it holds, and
                    // on x86 writes the line even when it fails: a write fault, one per page.
                    // (An idempotent `fetch_or(0)` compiles to a load, which maps the zero
                    // page; a load before the exchange would fault twice.)
                    let _ = byte.compare_exchange(0, 0, Ordering::Relaxed, Ordering::Relaxed);
                }
                page += PAGE;
            }
            unit.store(DONE, Ordering::Release);
        }
        self.live.fetch_sub(1, Ordering::AcqRel);
    }

    /// Takes `[addr, addr + len)` from the population before a copy writes or reads it: units
    /// not begun are left to the copy; one being touched is waited for (a few milliseconds at
    /// most, one unit on one thread).
    pub fn claim(&self, addr: u64, len: usize) {
        use std::sync::atomic::Ordering;
        let (s, e) = (addr.max(self.start), (addr + len as u64).min(self.end));
        if s >= e {
            return;
        }
        let first = ((s - self.start) / UNIT_BYTES) as usize;
        let last = ((e - 1 - self.start) / UNIT_BYTES) as usize;
        for unit in &self.units[first..=last] {
            loop {
                match unit.compare_exchange(FREE, DONE, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) | Err(DONE) => break,
                    Err(_) => std::thread::yield_now(),
                }
            }
        }
    }

    /// Stops it after the units in progress and waits until no thread touches the range (the
    /// call's end: the program may free the memory once it returns).
    pub fn finish(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        while self.running() {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }

    /// Whether a thread is still populating.
    pub fn running(&self) -> bool {
        self.live.load(std::sync::atomic::Ordering::Acquire) > 0
    }

    /// Waits until no thread populates any more; fails the test after a minute.
    #[cfg(test)]
    pub(crate) fn wait_ended(&self, what: &str) {
        let t = std::time::Instant::now();
        while self.running() {
            assert!(t.elapsed().as_secs() < 60, "{what} never ended");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// The page-aligned chunks `[start, end)` is populated in by at most `threads` threads: equal
/// parts of at least [`CHUNK_BYTES`] (rounded to pages), covering the range exactly.
pub(crate) fn chunks(start: u64, end: u64, threads: usize, page: u64) -> Vec<(u64, u64)> {
    if end <= start {
        return Vec::new();
    }
    let len = end - start;
    let by_size = len.div_ceil(CHUNK_BYTES as u64).max(1);
    let parts = by_size.min(threads.max(1) as u64);
    let step = len.div_ceil(parts).div_ceil(page) * page;
    (0..parts)
        .map(|i| (start + i * step, (start + (i + 1) * step).min(end)))
        .filter(|(s, e)| s < e)
        .collect()
}

/// Populates the page-aligned `[start, end)` on up to `threads` threads without changing its
/// contents. Returns whether every chunk was populated (false: the kernel lacks
/// `MADV_POPULATE_*`, before Linux 5.14, or some page is not mapped; the registration then
/// faults what is left, as it would have).
pub(crate) fn populate(
    start: u64,
    end: u64,
    access: HostAccess,
    threads: usize,
    page: u64,
) -> bool {
    let parts = chunks(start, end, threads, page);
    if parts.len() <= 1 {
        return parts.iter().all(|&(s, e)| populate_one(s, e, access));
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .iter()
            .map(|&(s, e)| scope.spawn(move || populate_one(s, e, access)))
            .collect();
        // Every thread is joined before the answer (no short cut past a running one).
        let done: Vec<bool> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(false))
            .collect();
        done.into_iter().all(|ok| ok)
    })
}

/// Pages sampled by [`mostly_unbacked`].
const RESIDENCY_SAMPLES: u64 = 64;

/// Whether most of the page-aligned `[start, end)` has never been touched: of
/// [`RESIDENCY_SAMPLES`] pages spread evenly over it, fewer than half are backed (`mincore`).
/// A fresh allocation (NumPy's new result array, `vec![0.0; n]`) is; a buffer the program has
/// written, or one a call wrote before, is not. `false` where it cannot tell (some page not
/// mapped, or not Linux): the caller then treats the range as it always did.
pub(crate) fn mostly_unbacked(start: u64, end: u64, page: u64) -> bool {
    if end <= start {
        return false;
    }
    let pages = (end - start) / page;
    let n = RESIDENCY_SAMPLES.min(pages.max(1));
    let mut backed = 0;
    for i in 0..n {
        let at = start + (i * pages / n) * page;
        match page_backed(at, page) {
            Some(true) => backed += 1,
            Some(false) => {}
            None => return false,
        }
    }
    2 * backed < n
}

#[cfg(target_os = "linux")]
fn page_backed(addr: u64, page: u64) -> Option<bool> {
    let mut v = 0u8;
    // SAFETY: mincore only reports the residency of the page at `addr` (page-aligned) into
    // the one byte it is given; an unmapped page is reported through the return value.
    let r = unsafe { libc::mincore(addr as *mut libc::c_void, page as usize, &mut v) };
    (r == 0).then_some(v & 1 == 1)
}

#[cfg(not(target_os = "linux"))]
fn page_backed(_addr: u64, _page: u64) -> Option<bool> {
    None
}

#[cfg(target_os = "linux")]
fn populate_one(start: u64, end: u64, access: HostAccess) -> bool {
    // Memory only read is populated for reading: a write fault would dirty shared file pages.
    let advice = match access {
        HostAccess::Read => libc::MADV_POPULATE_READ,
        HostAccess::ReadWrite => libc::MADV_POPULATE_WRITE,
    };
    // SAFETY: MADV_POPULATE_* only faults in page tables of the caller's mapped range (as a
    // read or write access would) and never changes the memory's contents; an unmapped or
    // inaccessible range is reported through the return value.
    unsafe { libc::madvise(start as *mut libc::c_void, (end - start) as usize, advice) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn populate_one(_start: u64, _end: u64, _access: HostAccess) -> bool {
    false
}

/// Held for writing by a test from its `munmap` until it is done looking at the freed range,
/// so that no other test's [`test_mapping`] (each holds it for reading) is handed that range
/// meanwhile: the kernel gives a freed range out again, and
/// `registrations_of_freed_memory_are_released` once found its freed range mapped.
#[cfg(all(test, unix))]
pub(crate) static TEST_MAPPINGS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A fresh anonymous private mapping of `len` bytes, no page touched, for tests (the caller
/// unmaps it).
#[cfg(all(test, unix))]
pub(crate) fn test_mapping(len: usize) -> u64 {
    let _shared = TEST_MAPPINGS.read().unwrap_or_else(|p| p.into_inner());
    // SAFETY: a new private anonymous mapping, which nothing else refers to.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(bg: &Background) -> Vec<u8> {
        bg.units
            .iter()
            .map(|u| u.load(std::sync::atomic::Ordering::Acquire))
            .collect()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_background_population_backs_every_page_of_its_operand_and_keeps_the_contents() {
        let len = 3 * UNIT_BYTES as usize + 5 * PAGE as usize;
        let map = len + 2 * PAGE as usize;
        let p = test_mapping(map);
        // The operand starts inside the first page; a byte before it is someone else's.
        let op = p + 100;
        // SAFETY: inside the mapping; written before the population starts.
        unsafe {
            *((p + 7) as *mut u8) = 9;
            *((op + UNIT_BYTES + 17) as *mut u8) = 42;
        }
        assert!(mostly_unbacked(p, p + map as u64, PAGE));
        // SAFETY: the mapping stays until after `finish`; nothing else accesses it meanwhile.
        let bg = unsafe { Background::start(op, len, 4) }.expect("a thread starts");
        bg.wait_ended("population");
        assert!(
            states(&bg).iter().all(|&s| s == DONE),
            "every unit populated"
        );
        let pages = (op + len as u64).div_ceil(PAGE) * PAGE - p;
        let backed = (0..pages / PAGE)
            .filter(|i| page_backed(p + i * PAGE, PAGE) == Some(true))
            .count() as u64;
        assert_eq!(backed, pages / PAGE, "every page of the operand backed");
        // The page after the operand's last is not its own: untouched.
        assert_eq!(page_backed(p + pages, PAGE), Some(false));
        // SAFETY: inside the mapping, which no thread populates any more.
        unsafe {
            assert_eq!(*((p + 7) as *const u8), 9);
            assert_eq!(*((op + UNIT_BYTES + 17) as *const u8), 42);
            assert_eq!(*((op + 2 * UNIT_BYTES) as *const u8), 0);
        }
        bg.finish();
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(p as *mut libc::c_void, map) };
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_claimed_unit_is_the_copys_and_finish_ends_every_thread() {
        let len = 6 * UNIT_BYTES as usize;
        let p = test_mapping(len);
        // SAFETY: the mapping stays until after `finish`; the test writes only claimed units.
        let bg = unsafe { Background::start(p, len, 2) }.expect("a thread starts");
        // A range across units 2 and 3: once claimed, neither is being touched, nor will be.
        bg.claim(p + 3 * UNIT_BYTES - 8, 16);
        assert_eq!(states(&bg)[2..4], [DONE, DONE]);
        // SAFETY: in claimed unit 3, inside the mapping.
        unsafe { *((p + 3 * UNIT_BYTES + 1) as *mut u8) = 5 };
        // Ranges outside the population claim nothing.
        bg.claim(p + len as u64, 4096);
        bg.claim(p - 4096, 4096);
        bg.finish();
        assert!(!bg.running());
        assert!(
            states(&bg).iter().all(|&s| s != TOUCHING),
            "nothing in progress after finish"
        );
        // SAFETY: no thread touches the mapping any more.
        assert_eq!(unsafe { *((p + 3 * UNIT_BYTES + 1) as *const u8) }, 5);
        // Finished at once, a population ends with its units free or done.
        // SAFETY: as above.
        let bg = unsafe { Background::start(p, len, 1) }.expect("a thread starts");
        bg.finish();
        assert!(!bg.running());
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(p as *mut libc::c_void, len) };
    }

    #[test]
    fn chunks_cover_the_range_exactly_on_page_boundaries() {
        let start = 0x7f00_0000_0000u64;
        for (len, threads) in [
            (PAGE, 8),
            (2 << 30, 16),
            (2 << 30, 1),
            ((100 << 20) + 3 * PAGE, 3),
            (CHUNK_BYTES as u64 * 3, 16),
        ] {
            let c = chunks(start, start + len, threads, PAGE);
            assert!(!c.is_empty() && c.len() <= threads);
            assert_eq!(c[0].0, start);
            assert_eq!(c.last().unwrap().1, start + len);
            for w in c.windows(2) {
                assert_eq!(w[0].1, w[1].0, "gap or overlap in {c:x?}");
            }
            for &(s, e) in &c {
                assert!(s < e && s % PAGE == 0, "{s:x}..{e:x}");
            }
        }
        // Never more threads than chunks of the minimum size: 3 chunks' worth on 16 threads.
        assert_eq!(
            chunks(0, CHUNK_BYTES as u64 * 3, 16, PAGE).len(),
            3,
            "small ranges use few threads"
        );
        assert!(chunks(PAGE, PAGE, 4, PAGE).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn untouched_memory_reads_as_unbacked_until_written() {
        let len = 256 * PAGE as usize;
        let p = super::test_mapping(len) as *mut libc::c_void;
        let (s, e) = (p as u64, p as u64 + len as u64);
        assert!(mostly_unbacked(s, e, PAGE));
        // A quarter written: still mostly fresh; all of it: not.
        for i in (0..len).step_by(PAGE as usize) {
            // SAFETY: inside the mapping.
            unsafe { *((s + i as u64) as *mut u8) = 7 };
            if i == len / 4 {
                assert!(mostly_unbacked(s, e, PAGE));
            }
        }
        assert!(!mostly_unbacked(s, e, PAGE));
        // SAFETY: unmaps the mapping made above.
        assert_eq!(unsafe { libc::munmap(p, len) }, 0);
        // Unmapped memory: cannot tell, so not called fresh.
        assert!(!mostly_unbacked(s, e, PAGE));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn populating_keeps_the_contents_and_backs_every_page() {
        let len = 24 * PAGE as usize;
        let p = super::test_mapping(len) as *mut libc::c_void;
        let base = p as u64;
        let resident = || {
            let mut v = vec![0u8; len / PAGE as usize];
            // SAFETY: the mapping is live and page-aligned; v has one byte per page.
            assert_eq!(unsafe { libc::mincore(p, len, v.as_mut_ptr()) }, 0);
            v.iter().filter(|&&b| b & 1 == 1).count()
        };
        // A few pages written before: their contents must survive.
        for i in [0usize, 7, 23] {
            // SAFETY: inside the mapping.
            unsafe { *((base + i as u64 * PAGE + 8) as *mut u64) = 0xdead_0000 + i as u64 };
        }
        assert!(resident() < len / PAGE as usize);
        if !populate(base, base + len as u64, HostAccess::ReadWrite, 3, PAGE) {
            // SAFETY: unmaps the mapping made above.
            unsafe { libc::munmap(p, len) };
            eprintln!("MADV_POPULATE_WRITE unsupported by this kernel; nothing to check");
            return;
        }
        assert_eq!(resident(), len / PAGE as usize);
        for i in 0..len / PAGE as usize {
            // SAFETY: inside the mapping.
            let v = unsafe { *((base + i as u64 * PAGE + 8) as *const u64) };
            let want = if [0, 7, 23].contains(&i) {
                0xdead_0000 + i as u64
            } else {
                0
            };
            assert_eq!(v, want, "page {i}");
        }
        // Memory that cannot be accessed is reported, not faulted.
        // SAFETY: the mapping made above; nothing accesses it after this.
        assert_eq!(unsafe { libc::mprotect(p, len, libc::PROT_NONE) }, 0);
        assert!(!populate(
            base,
            base + len as u64,
            HostAccess::ReadWrite,
            2,
            PAGE
        ));
        // SAFETY: unmaps the mapping made above.
        assert_eq!(unsafe { libc::munmap(p, len) }, 0);
    }
}
