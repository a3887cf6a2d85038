//! The reference GEMM: a plain triple loop accumulating in f64. Slow and obviously right; tests
//! and `hetblas gemm --check` compare against it, with the error bound of [`gemm_error_bound`].

use crate::operand::{MatMut, MatRef, Trans};
use crate::scalar::{DType, Scalar};

/// `c = alpha * op(a) * op(b) + beta * c`, accumulated in f64 (beta == 0 never reads c).
pub fn reference_gemm<T: Scalar>(
    transa: Trans,
    transb: Trans,
    alpha: T,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    beta: T,
    c: &mut MatMut<'_, T>,
) {
    let (m, n) = (c.rows(), c.cols());
    let k = if transa.is_transposed() {
        a.rows()
    } else {
        a.cols()
    };
    let at = |i: usize, l: usize| {
        if transa.is_transposed() {
            a.get(l, i)
        } else {
            a.get(i, l)
        }
    };
    let bt = |l: usize, j: usize| {
        if transb.is_transposed() {
            b.get(j, l)
        } else {
            b.get(l, j)
        }
    };
    let (alpha, beta) = (alpha.to_f64(), beta.to_f64());
    for j in 0..n {
        for i in 0..m {
            let mut s = 0.0f64;
            for l in 0..k {
                s += at(i, l).to_f64() * bt(l, j).to_f64();
            }
            let v = if beta == 0.0 {
                alpha * s
            } else {
                alpha * s + beta * c.get(i, j).to_f64()
            };
            c.set(i, j, T::from_f64(v));
        }
    }
}

/// Elementwise bound on |computed - exact| for a GEMM entry: `factor * (k + 2) * u *
/// (|alpha| * sum_l |a_il||b_lj| + |beta| |c_ij|)` plus rounding of the result itself. `factor`
/// absorbs the summation order of blocked kernels; 2 is comfortable for BLAS libraries.
pub fn gemm_error_bound(dtype: DType, k: usize, abs_sum: f64, factor: f64) -> f64 {
    let u = dtype.unit_roundoff();
    factor * (k as f64 + 2.0) * u * abs_sum
}
