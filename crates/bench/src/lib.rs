//! # hetblas-bench
//!
//! Benchmarks of hetblas: criterion benches (`cargo bench -p hetblas-bench`) and the comparison
//! harness binaries that run hetblas next to its baselines in one process, on the same data, and
//! print ratios. Shared helpers live here.

use hetblas_core::Scalar;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// `len` random values in [-1, 1), seeded.
pub fn random_data<T: Scalar>(seed: u64, len: usize) -> Vec<T> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..len)
        .map(|_| T::from_f64(r.random_range(-1.0..1.0)))
        .collect()
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
