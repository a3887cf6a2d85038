//! Comparison with the reference GEMM, with error bounds per dtype.

use hetblas_core::reference::check_entries;
use hetblas_core::{MatRef, Scalar, Trans};

/// Error tolerance: `factor * (k + 2) * u * (|alpha| sum|a||b| + |beta||c|)` per element, the
/// classical componentwise GEMM bound with a safety factor for blocked summation orders.
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    pub factor: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance { factor: 2.0 }
    }
}

/// Checks every entry of `got` against the f64-accumulated reference computed from `a`, `b`
/// and the original C `c0` (see `hetblas_core::reference::check_entries`).
#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
pub fn check_against_reference<T: Scalar>(
    ta: Trans,
    tb: Trans,
    alpha: T,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    beta: T,
    c0: MatRef<'_, T>,
    got: MatRef<'_, T>,
    tol: Tolerance,
) -> Result<(), String> {
    let k = if ta.is_transposed() {
        a.rows()
    } else {
        a.cols()
    };
    check_entries(
        ta,
        tb,
        alpha.to_c64(),
        a,
        b,
        beta.to_c64(),
        c0,
        got,
        usize::MAX,
        0,
        tol.factor,
    )
    .map(|_| ())
    .map_err(|e| {
        format!(
            "{e} ({}, m={} n={} k={k}, {ta:?}{tb:?})",
            T::DTYPE,
            got.rows(),
            got.cols()
        )
    })
}
