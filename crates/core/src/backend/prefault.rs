//! Parallel pre-faulting of host memory about to be page-locked.
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

use crate::memory::HostAccess;

/// Ranges below this are registered as they are: starting threads costs more than it saves.
pub const MIN_BYTES: usize = 64 << 20;
/// The least a thread populates (a few milliseconds of faults).
const CHUNK_BYTES: usize = 32 << 20;

/// Threads that populate a range: every core (during a GPU call the host's cores are
/// otherwise idle).
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Threads that populate a fresh output in the background ([`Background`]).
/// `MADV_POPULATE_WRITE` of fresh anonymous memory on the H200 host (16 cores, Linux 6.18,
/// 2026-11-30), GB/s with huge pages (4 KiB pages): 1 thread 5.6-6.4 (2.4-2.9), 4 threads 18-19
/// (9-9.5), 8 threads 7.5-11 (4-6), 16 threads 6-7.5 (3.7-4.4): past four they contend.
pub const BACKGROUND_THREADS: usize = 4;

/// Units a background population takes, from the end of its range down.
const UNIT_BYTES: u64 = 8 << 20;

/// A population of a fresh output in the background, from its end down, until its range is
/// done or [`Background::stop`] (a staged write-back into it has begun copying). A call that
/// stages a fresh output writes its pages at the write-backs, which fault them in one tile at
/// a time; before the first write-back the host is idle, so the pages written last (the end
/// of C: the last columns of C tiles) are populated then, and the copy-outs that end the call
/// find them there. It stops when the copy-outs begin, whose faults it would slow down (run
/// from the start of C alongside them, it made NumPy's `a @ b` slower at every size on H200).
/// NumPy's `a @ b` on H200 (2026-11-30, medians of five alternating runs): 16384 0.214 s with
/// it, 0.230 s without; 8192 0.059 and 0.062 s.
///
/// Safe whatever the program does meanwhile: `MADV_POPULATE_WRITE` never changes contents,
/// and a unit no longer mapped (the program freed it) ends the population.
#[derive(Debug)]
pub struct Background {
    pub start: u64,
    pub end: u64,
    next: std::sync::atomic::AtomicU64,
    stop: std::sync::atomic::AtomicBool,
    live: std::sync::atomic::AtomicUsize,
}

impl Background {
    /// Starts populating the page-aligned `[start, end)` on up to `threads` threads; `None`
    /// when no thread could be started.
    pub fn start(start: u64, end: u64, threads: usize) -> Option<std::sync::Arc<Background>> {
        use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
        let work = std::sync::Arc::new(Background {
            start,
            end,
            next: AtomicU64::new(end),
            stop: AtomicBool::new(end <= start),
            live: AtomicUsize::new(0),
        });
        let threads = threads.clamp(
            1,
            (end.saturating_sub(start)).div_ceil(UNIT_BYTES).max(1) as usize,
        );
        let mut started = 0;
        for i in 0..threads {
            let w = work.clone();
            w.live.fetch_add(1, Ordering::AcqRel);
            let spawned = std::thread::Builder::new()
                .name(format!("hetblas-populate-{i}"))
                .spawn(move || {
                    while !w.stop.load(Ordering::Acquire) {
                        // The next unit down: [hi - UNIT, hi), at the range's start at most.
                        let hi = w.next.fetch_sub(UNIT_BYTES, Ordering::AcqRel);
                        if hi <= w.start || hi > w.end {
                            break;
                        }
                        let lo = hi.saturating_sub(UNIT_BYTES).max(w.start);
                        if !populate_one(lo, hi, HostAccess::ReadWrite) {
                            // Freed, or no MADV_POPULATE_WRITE: stop every thread.
                            w.stop.store(true, Ordering::Release);
                        }
                    }
                    w.live.fetch_sub(1, Ordering::AcqRel);
                });
            match spawned {
                Ok(_) => started += 1,
                Err(_) => {
                    work.live.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
        (started > 0).then_some(work)
    }

    /// Stops it after the units in progress.
    pub fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
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
pub fn chunks(start: u64, end: u64, threads: usize, page: u64) -> Vec<(u64, u64)> {
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
pub fn populate(start: u64, end: u64, access: HostAccess, threads: usize, page: u64) -> bool {
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
pub fn mostly_unbacked(start: u64, end: u64, page: u64) -> bool {
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

/// A fresh anonymous private mapping of `len` bytes, no page touched, for tests (the caller
/// unmaps it).
#[cfg(all(test, unix))]
pub(crate) fn test_mapping(len: usize) -> u64 {
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

    const PAGE: u64 = 4096;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_background_population_backs_its_pages_from_the_end_and_keeps_the_contents() {
        let len = 3 * UNIT_BYTES as usize + 5 * PAGE as usize;
        let p = test_mapping(len);
        let end = p + len as u64;
        // SAFETY: inside the mapping; written before the population starts.
        unsafe { *((p + UNIT_BYTES + 17) as *mut u8) = 42 };
        assert!(mostly_unbacked(p, end, PAGE));
        let bg = Background::start(p, end, BACKGROUND_THREADS).expect("a thread starts");
        bg.wait_ended("population");
        let backed = (0..len as u64 / PAGE)
            .filter(|i| page_backed(p + i * PAGE, PAGE) == Some(true))
            .count() as u64;
        assert_eq!(backed, len as u64 / PAGE, "every page backed");
        // SAFETY: inside the mapping, which no thread populates any more.
        assert_eq!(unsafe { *((p + UNIT_BYTES + 17) as *const u8) }, 42);
        // SAFETY: as above.
        assert_eq!(unsafe { *((p + 2 * UNIT_BYTES) as *const u8) }, 0);
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(p as *mut libc::c_void, len) };

        // Memory no longer mapped ends a population (the program freed its array).
        let q = test_mapping(len);
        // SAFETY: the mapping made above, unmapped before any thread uses it.
        unsafe { libc::munmap(q as *mut libc::c_void, len) };
        let bg = Background::start(q, q + len as u64, 2).expect("a thread starts");
        bg.wait_ended("population of freed memory");
        assert!(
            bg.stop.load(std::sync::atomic::Ordering::Acquire),
            "a unit no longer mapped stops the population"
        );
        // Stopped, it ends too.
        let r = test_mapping(len);
        let bg = Background::start(r, r + len as u64, 1).expect("a thread starts");
        bg.stop();
        bg.wait_ended("a stopped population");
        // SAFETY: the mapping made above; no thread populates it any more.
        unsafe { libc::munmap(r as *mut libc::c_void, len) };
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
