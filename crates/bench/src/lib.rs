//! # hetblas-bench
//!
//! Benchmarks of hetblas: criterion benches (`cargo bench -p hetblas-bench`) and the comparison
//! harness binaries that run hetblas next to its baselines in one process, on the same data, and
//! print ratios. Shared helpers live here.

pub mod cublasxt;
pub mod rescore;
pub mod validation_csv;

use hetblas_core::Scalar;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// `len` random values in [-1, 1), seeded; filled in parallel chunks (GPU-sized matrices hold
/// billions of elements).
pub fn random_data<T: Scalar>(seed: u64, len: usize) -> Vec<T> {
    let mut v = vec![T::default(); len];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = len.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (i, part) in v.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                let mut r =
                    StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9).wrapping_add(i as u64));
                for x in part {
                    *x = T::from_f64(r.random_range(-1.0..1.0));
                }
            });
        }
    });
    v
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
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}
