//! Comparison with the reference GEMM, with error bounds per dtype.

use hetblas_core::reference::{gemm_error_bound, reference_gemm};
use hetblas_core::{DType, MatMut, MatRef, Scalar, Trans};

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

/// Checks `got` (m x n, packed with ld `ldc`) against the reference computed from `a`, `b`
/// and the original C `c0`.
#[allow(clippy::too_many_arguments)]
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
    let (m, n) = (c0.rows(), c0.cols());
    let k = if ta.is_transposed() {
        a.rows()
    } else {
        a.cols()
    };
    let mut want = vec![T::default(); m * n];
    let mut c0p = vec![T::default(); m * n];
    for j in 0..n {
        for i in 0..m {
            c0p[i + j * m] = c0.get(i, j);
        }
    }
    want.copy_from_slice(&c0p);
    reference_gemm(
        ta,
        tb,
        alpha,
        a,
        b,
        beta,
        &mut MatMut::packed(&mut want, m, n).map_err(|e| e.to_string())?,
    );
    // |alpha| * |op(A)| |op(B)| + |beta| |C0|, for the bound.
    let abs = |v: MatRef<'_, T>| -> Vec<f64> {
        let mut out = Vec::with_capacity(v.rows() * v.cols());
        for j in 0..v.cols() {
            out.extend(v.col(j).iter().map(|x| x.to_f64().abs()));
        }
        out
    };
    let (aa, ba) = (abs(a), abs(b));
    let (ar, br) = (a.rows(), b.rows());
    let at = |i: usize, l: usize| {
        if ta.is_transposed() {
            aa[l + i * ar]
        } else {
            aa[i + l * ar]
        }
    };
    let bt = |l: usize, j: usize| {
        if tb.is_transposed() {
            ba[j + l * br]
        } else {
            ba[l + j * br]
        }
    };
    let dtype: DType = T::DTYPE;
    let mut worst = (0.0f64, 0usize, 0usize);
    for j in 0..n {
        for i in 0..m {
            let g = got.get(i, j).to_f64();
            let w = want[i + j * m].to_f64();
            if !g.is_finite() {
                return Err(format!("C({i},{j}) = {g} is not finite (expected {w})"));
            }
            let mut s = 0.0;
            for l in 0..k {
                s += at(i, l) * bt(l, j);
            }
            let sum = alpha.to_f64().abs() * s
                + if beta == T::default() {
                    0.0
                } else {
                    beta.to_f64().abs() * c0p[i + j * m].to_f64().abs()
                };
            // The reference itself rounds to T once; allow one ulp of the magnitude for that.
            let bound = gemm_error_bound(dtype, k, sum, tol.factor)
                + 2.0 * dtype.unit_roundoff() * w.abs()
                + f64::MIN_POSITIVE;
            let err = (g - w).abs();
            if err > bound {
                return Err(format!(
                    "C({i},{j}) = {g:e}, expected {w:e}: error {err:e} exceeds bound {bound:e} \
                     ({dtype}, m={m} n={n} k={k}, {ta:?}{tb:?}, alpha={alpha} beta={beta})"
                ));
            }
            if bound > 0.0 && err / bound > worst.0 {
                worst = (err / bound, i, j);
            }
        }
    }
    Ok(())
}
