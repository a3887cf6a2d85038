//! # hetblas-bench
//!
//! Benchmarks of hetblas: criterion benches (`cargo bench -p hetblas-bench`) and the comparison
//! harness binaries that run hetblas next to its baselines in one process, on the same data, and
//! print ratios. Shared helpers live here.

pub mod cublasxt;
pub mod cublasxt_sym;
pub mod link_contention;
pub mod rescore;
pub mod sym_compare;
pub mod tri;
pub mod validation_csv;
pub mod validation_set;
pub mod validation_summary;

use hetblas_core::Scalar;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// `len` random values in [-1, 1), seeded; filled in parallel chunks (GPU-sized matrices hold
/// billions of elements).
///
/// With `HETBLAS_BENCH_HUGEPAGES=1` the buffer is advised for transparent huge pages before it
/// is first touched (see [`huge_pages_requested`]).
pub fn random_data<T: Scalar>(seed: u64, len: usize) -> Vec<T> {
    // Zeroed allocations of this size are fresh mappings: no page is touched before the advice.
    let mut v = vec![T::default(); len];
    if huge_pages_requested() {
        advise_huge_pages(&mut v);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = len.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (i, part) in v.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                let mut r =
                    StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9).wrapping_add(i as u64));
                for x in part {
                    // Both parts of a complex value: timings on random data (see DESIGN).
                    let re = r.random_range(-1.0..1.0);
                    let im = if T::DTYPE.is_complex() {
                        r.random_range(-1.0..1.0)
                    } else {
                        0.0
                    };
                    *x = T::from_c64(hetblas_core::scalar::c64::new(re, im));
                }
            });
        }
    });
    v
}

/// `HETBLAS_BENCH_HUGEPAGES=1`: host operands of the harness are backed by transparent huge
/// pages where the kernel grants them (DMA of short strided columns depends on the page layout
/// of registered memory; this measures how much).
pub fn huge_pages_requested() -> bool {
    std::env::var("HETBLAS_BENCH_HUGEPAGES").is_ok_and(|v| v == "1")
}

/// Advises the 2 MiB-aligned interior of `v` for transparent huge pages (Linux; elsewhere a
/// no-op). Best effort: a refusal only leaves normal pages.
pub fn advise_huge_pages<T>(v: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(v);
        let lo = start.next_multiple_of(HUGE);
        let hi = end / HUGE * HUGE;
        if hi > lo {
            // SAFETY: [lo, hi) lies inside `v`'s allocation, which we borrow mutably; the advice
            // changes only how the kernel backs the pages, not their contents.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Anonymous memory of this process backed by transparent huge pages, in bytes (Linux's
/// `/proc/self/smaps_rollup`); `None` where it cannot be read.
pub fn anon_huge_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = s.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Parallel copy of a large slice.
pub fn par_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = dst.len().div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (d, sr) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
            s.spawn(move || d.copy_from_slice(sr));
        }
    });
}

/// Median of a sample (sorts it).
/// The runtime of the one-GPU harnesses (`validate`, `callcost`): `emulated` host-emulated
/// devices when non-zero, else the CUDA GPUs and the CPU; and the index of its first device
/// that is not the CPU. The CPU is in the runtime, as it is by default, and left out of the
/// harnesses' calls: without a device that can finish a failed call, every call keeps the
/// undo log of C (a host copy of C per call), which made the problems whose C is large next
/// to their work (small K) 3-10x slower than the same calls from the CLI (H200, 2026-11-23).
pub fn harness_runtime(emulated: usize) -> Result<(hetblas::Runtime, usize), String> {
    let rt = if emulated > 0 {
        hetblas::Runtime::builder().emulated(emulated).build()
    } else {
        hetblas::Runtime::builder().only(&["cuda", "cpu"]).build()
    }
    .map_err(|e| e.to_string())?;
    println!("{}", rt.profile_status());
    let accelerator = rt
        .devices()
        .iter()
        .position(|d| d.info().kind != hetblas_core::DeviceKind::Cpu)
        .ok_or("no accelerator")?;
    Ok((rt, accelerator))
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}
