//! Random test data: never zeros, never all-equal, seeded for reproducibility.

use hetblas_core::scalar::Complex64;
use hetblas_core::Scalar;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// A seeded generator.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// `len` values uniform in [-1, 1) (excluding exact zero); complex values have both parts so
/// drawn (a conjugation always changes them).
pub fn random_vec<T: Scalar>(rng: &mut StdRng, len: usize) -> Vec<T> {
    let mut part = move || {
        let v: f64 = rng.random_range(-1.0..1.0);
        if v == 0.0 {
            0.5
        } else {
            v
        }
    };
    (0..len)
        .map(|_| {
            if T::DTYPE.is_complex() {
                let re = part();
                T::from_c64(Complex64::new(re, part()))
            } else {
                T::from_f64(part())
            }
        })
        .collect()
}

/// A non-trivial scalar in [-2, 2] away from 0 and 1.
pub fn random_scalar(rng: &mut StdRng) -> f64 {
    let v: f64 = rng.random_range(0.25..2.0);
    if rng.random::<bool>() {
        -v
    } else {
        v
    }
}
