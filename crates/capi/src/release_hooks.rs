//! The C library's ways of giving memory back (`free`, `realloc`, `reallocarray`, `munmap`,
//! `mremap`, and `madvise` that discards pages), wrapped: each first tells the registration
//! caches which range goes ([`hetblas_gpu::registration::released`]), then calls the next definition (the C
//! library's, or another preloaded allocator's). Knowing every release, the drop-in can keep
//! its callers' buffers page-locked between calls: without it a fresh array at the addresses of
//! a freed one met a registration of the old pages (a wrong product once, and
//! `CUDA_ERROR_ALREADY_MAPPED`), so every copy was staged through pinned buffers, and a
//! 16384 `a @ b` took 0.48 s where registered buffers take 0.2 (nvidia-h200, pip NumPy,
//! 2026-11-29).
//!
//! The wrappers take effect only where they are the definitions the process uses: preloaded
//! (`LD_PRELOAD`), or linked ahead of the C library. Loaded later (a `libblas.so.3` that a
//! program reaches through another library), the C library's own are used, [`live`] says so,
//! and the drop-in stages its copies as before.
//!
//! Inside `free` nothing may allocate or wait for a lock that is held while calling out:
//! [`Releases::note`](hetblas_gpu::registration::released::Releases::note) is a few atomic operations.

use hetblas_gpu::registration::released::PROCESS;
use libc::{c_int, c_void, size_t};
use std::cell::Cell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    /// Set while this thread looks up a next definition: `dlsym` may free or reallocate, and
    /// those calls must not look up again.
    static LOOKING_UP: Cell<bool> = const { Cell::new(false) };
}

/// The next definition of `name` after this library's (0 while it cannot be known: from inside
/// the look-up itself, or when there is none).
fn next(slot: &AtomicUsize, name: &CStr) -> usize {
    let f = slot.load(Ordering::Acquire);
    if f != 0 {
        return f;
    }
    let busy = LOOKING_UP.try_with(|l| l.replace(true)).unwrap_or(true);
    if busy {
        return 0;
    }
    // SAFETY: dlsym with a valid NUL-terminated name; RTLD_NEXT searches the objects loaded
    // after this one.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    let _ = LOOKING_UP.try_with(|l| l.set(false));
    slot.store(f, Ordering::Release);
    f
}

extern "C" {
    // glibc's own allocator entry points, exported for allocators that wrap them: the
    // fallback while the next definition is being looked up.
    fn __libc_free(p: *mut c_void);
    fn __libc_realloc(p: *mut c_void, n: size_t) -> *mut c_void;
}

/// Notes a block of the allocator's as given back.
///
/// # Safety
/// `p` is null or a live block of the process's allocator.
unsafe fn note_block(p: *mut c_void) {
    let start = p as u64;
    if p.is_null() || !PROCESS.may_touch(start) {
        return;
    }
    // SAFETY: a live block (caller contract).
    let len = unsafe { libc::malloc_usable_size(p) } as u64;
    PROCESS.note(start, start.saturating_add(len));
}

static FREE: AtomicUsize = AtomicUsize::new(0);
static REALLOC: AtomicUsize = AtomicUsize::new(0);
static REALLOCARRAY: AtomicUsize = AtomicUsize::new(0);
static MUNMAP: AtomicUsize = AtomicUsize::new(0);
static MREMAP: AtomicUsize = AtomicUsize::new(0);
static MADVISE: AtomicUsize = AtomicUsize::new(0);

/// `free(3)`, noting the block first.
///
/// # Safety
/// As `free(3)`.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: `p` is what the caller frees: null or a live block.
    unsafe { note_block(p) };
    match next(&FREE, c"free") {
        // SAFETY: the C library's `free` (or the next allocator's), as the caller asked.
        0 => unsafe { __libc_free(p) },
        // SAFETY: `f` is the next definition of `free`, with this signature.
        f => unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(f)(p) },
    }
}

/// `realloc(3)`, noting the old block first (it may move or shrink).
///
/// # Safety
/// As `realloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: size_t) -> *mut c_void {
    // SAFETY: null or a live block (caller contract).
    unsafe { note_block(p) };
    match next(&REALLOC, c"realloc") {
        // SAFETY: as the caller asked.
        0 => unsafe { __libc_realloc(p, n) },
        // SAFETY: `f` is the next definition of `realloc`, with this signature.
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, size_t) -> *mut c_void>(
                f,
            )(p, n)
        },
    }
}

/// `reallocarray(3)`, noting the old block first (glibc's calls its internal `realloc`).
///
/// # Safety
/// As `reallocarray(3)`.
#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, count: size_t, size: size_t) -> *mut c_void {
    // SAFETY: null or a live block (caller contract).
    unsafe { note_block(p) };
    match next(&REALLOCARRAY, c"reallocarray") {
        0 => match count.checked_mul(size) {
            // SAFETY: as the caller asked.
            Some(n) => unsafe { __libc_realloc(p, n) },
            None => {
                // SAFETY: errno is this thread's.
                unsafe { *libc::__errno_location() = libc::ENOMEM };
                std::ptr::null_mut()
            }
        },
        f => unsafe {
            // SAFETY: as the caller asked.
            std::mem::transmute::<
                usize,
                unsafe extern "C" fn(*mut c_void, size_t, size_t) -> *mut c_void,
            >(f)(p, count, size)
        },
    }
}

/// `munmap(2)`, noting the range first.
///
/// # Safety
/// As `munmap(2)`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    // Saturating: a caller's bad length must not panic here (the call itself reports it).
    PROCESS.note(addr as u64, (addr as u64).saturating_add(len as u64));
    match next(&MUNMAP, c"munmap") {
        // SAFETY: the system call the caller asked for.
        0 => unsafe { libc::syscall(libc::SYS_munmap, addr, len) as c_int },
        f => unsafe {
            // SAFETY: as the caller asked.
            std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, size_t) -> c_int>(f)(
                addr, len,
            )
        },
    }
}

/// `mremap(2)`, noting the old range first. Declared with its optional fifth argument: on the
/// Linux ABIs a variadic argument travels where a fixed one would, and the call passes on
/// whatever the caller put there (read by the kernel only with `MREMAP_FIXED`).
///
/// # Safety
/// As `mremap(2)`.
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    PROCESS.note(old as u64, (old as u64).saturating_add(old_len as u64));
    match next(&MREMAP, c"mremap") {
        // SAFETY: the system call the caller asked for.
        0 => unsafe {
            libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags, new_addr) as *mut c_void
        },
        f => unsafe {
            // SAFETY: as the caller asked; the C library's mremap is variadic after `flags`.
            std::mem::transmute::<
                usize,
                unsafe extern "C" fn(*mut c_void, size_t, size_t, c_int, ...) -> *mut c_void,
            >(f)(old, old_len, new_len, flags, new_addr)
        },
    }
}

/// `madvise(2)`, noting ranges whose pages the advice discards (the next touch maps new ones).
///
/// # Safety
/// As `madvise(2)`.
#[no_mangle]
pub unsafe extern "C" fn madvise(addr: *mut c_void, len: size_t, advice: c_int) -> c_int {
    if matches!(
        advice,
        libc::MADV_DONTNEED | libc::MADV_FREE | libc::MADV_REMOVE
    ) {
        PROCESS.note(addr as u64, (addr as u64).saturating_add(len as u64));
    }
    match next(&MADVISE, c"madvise") {
        // SAFETY: the system call the caller asked for.
        0 => unsafe { libc::syscall(libc::SYS_madvise, addr, len, advice) as c_int },
        f => unsafe {
            // SAFETY: as the caller asked.
            std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, size_t, c_int) -> c_int>(
                f,
            )(addr, len, advice)
        },
    }
}

/// Whether this process frees and unmaps through the wrappers above (so every release of
/// memory is noted): the definitions it resolves `free` and `munmap` to are this library's.
pub fn live() -> bool {
    // SAFETY: dlsym with valid NUL-terminated names; RTLD_DEFAULT is the global scope.
    let (f, m) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"free".as_ptr()) as usize,
            libc::dlsym(libc::RTLD_DEFAULT, c"munmap".as_ptr()) as usize,
        )
    };
    f == free as *const () as usize && m == munmap as *const () as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetblas_gpu::registration::released::Since;

    /// Whether a range noted after `seen` covers `[start, end)`.
    fn noted_since(seen: u64, start: u64, end: u64) -> bool {
        match PROCESS.since(seen).1 {
            Since::Ranges(r) => r.iter().any(|&(s, e)| s <= start && e >= end),
            Since::TooMany => panic!("more releases than the record keeps"),
        }
    }

    // The test binary holds this module's definitions, so they are the process's.
    #[test]
    fn every_way_of_giving_memory_back_is_noted_and_the_memory_still_goes() {
        assert!(live());
        let page = 4096;
        // SAFETY: plain C library calls on blocks and mappings made here, each used within its
        // size and given back once.
        unsafe {
            let len = 1 << 20;
            let block = libc::malloc(len) as u64;
            PROCESS.watch(block, block + len as u64);
            let seen = PROCESS.noted();
            free(block as *mut c_void);
            assert!(noted_since(seen, block, block + len as u64), "free");

            let block = libc::malloc(len);
            PROCESS.watch(block as u64, block as u64 + len as u64);
            let seen = PROCESS.noted();
            let moved = realloc(block, 4 * len);
            assert!(!moved.is_null());
            assert!(
                noted_since(seen, block as u64, block as u64 + len as u64),
                "realloc"
            );
            libc::free(moved);

            let len = 16 * page;
            let map = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let at = map as u64;
            PROCESS.watch(at, at + len as u64);
            *(map as *mut u8) = 7;
            let seen = PROCESS.noted();
            assert_eq!(madvise(map, page, libc::MADV_WILLNEED), 0);
            assert!(
                !noted_since(seen, at, at + page as u64),
                "WILLNEED keeps the pages"
            );
            assert_eq!(madvise(map, page, libc::MADV_DONTNEED), 0);
            assert!(noted_since(seen, at, at + page as u64), "DONTNEED");
            assert_eq!(*(map as *const u8), 0, "the advice took effect");
            let grown = mremap(
                map,
                len,
                2 * len,
                libc::MREMAP_MAYMOVE,
                std::ptr::null_mut(),
            );
            assert_ne!(grown, libc::MAP_FAILED);
            assert!(noted_since(seen, at, at + len as u64), "mremap");
            let seen = PROCESS.noted();
            assert_eq!(munmap(grown, 2 * len), 0);
            let g = grown as u64;
            PROCESS.watch(g, g + 2 * len as u64);
            assert_eq!(
                munmap(grown, 2 * len),
                0,
                "munmap of an unmapped range succeeds"
            );
            assert!(noted_since(seen, g, g + 2 * len as u64), "munmap");
            assert_eq!(
                libc::msync(grown, page, libc::MS_ASYNC),
                -1,
                "the mapping is gone"
            );
        }
    }
}
