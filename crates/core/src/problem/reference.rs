//! The reference GEMM check: entries of C recomputed by a plain dot product accumulated in f64
//! (slow and obviously right), compared with the error bound of [`gemm_error_bound`]. Tests and
//! `hetblas gemm --check` use it.

use crate::operand::{MatRef, Trans};
use crate::scalar::{DType, Scalar};

/// Elementwise bound on |computed - exact| for a GEMM entry: `factor * (k + 2) * u *
/// (|alpha| * sum_l |a_il||b_lj| + |beta| |c_ij|)` plus rounding of the result itself. `factor`
/// absorbs the summation order of blocked kernels; 2 is comfortable for BLAS libraries.
pub fn gemm_error_bound(dtype: DType, k: usize, abs_sum: f64, factor: f64) -> f64 {
    let u = dtype.unit_roundoff();
    factor * (k as f64 + 2.0) * u * abs_sum
}

/// Checks `c` (the result of `c = alpha*op(a)*op(b) + beta*c0`) at `samples` random entries (all
/// entries when there are fewer), each against an f64-accumulated dot product with the bound of
/// [`gemm_error_bound`]. Returns (entries checked, worst error / bound) or the first violation.
#[allow(clippy::too_many_arguments)]
pub fn check_sampled<T: Scalar>(
    transa: Trans,
    transb: Trans,
    alpha: f64,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    beta: f64,
    c0: MatRef<'_, T>,
    c: MatRef<'_, T>,
    samples: usize,
    seed: u64,
) -> Result<(usize, f64), String> {
    check_entries(transa, transb, alpha, a, b, beta, c0, c, samples, seed, 2.0)
}

/// [`check_sampled`] with the bound's safety `factor` chosen by the caller.
#[allow(clippy::too_many_arguments)]
pub fn check_entries<T: Scalar>(
    transa: Trans,
    transb: Trans,
    alpha: f64,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    beta: f64,
    c0: MatRef<'_, T>,
    c: MatRef<'_, T>,
    samples: usize,
    seed: u64,
    factor: f64,
) -> Result<(usize, f64), String> {
    let (m, n) = (c.rows(), c.cols());
    let k = if transa.is_transposed() {
        a.rows()
    } else {
        a.cols()
    };
    let opa = |i: usize, l: usize| {
        if transa.is_transposed() {
            a.get(l, i)
        } else {
            a.get(i, l)
        }
        .to_f64()
    };
    let opb = |l: usize, j: usize| {
        if transb.is_transposed() {
            b.get(j, l)
        } else {
            b.get(l, j)
        }
        .to_f64()
    };
    let entries: Vec<(usize, usize)> = if m * n <= samples {
        (0..n).flat_map(|j| (0..m).map(move |i| (i, j))).collect()
    } else {
        // splitmix64: a dependency-free, seeded choice of entries.
        let mut s = seed;
        let mut next = move || {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        (0..samples)
            .map(|_| ((next() % m as u64) as usize, (next() % n as u64) as usize))
            .collect()
    };
    let mut worst = 0.0f64;
    for &(i, j) in &entries {
        let (mut s, mut abs) = (0.0, 0.0);
        for l in 0..k {
            let p = opa(i, l) * opb(l, j);
            s += p;
            abs += p.abs();
        }
        let c0v = c0.get(i, j).to_f64();
        let want = alpha * s + if beta == 0.0 { 0.0 } else { beta * c0v };
        let sum = alpha.abs() * abs
            + if beta == 0.0 {
                0.0
            } else {
                beta.abs() * c0v.abs()
            };
        let bound = gemm_error_bound(T::DTYPE, k, sum, factor)
            + 2.0 * T::DTYPE.unit_roundoff() * want.abs()
            + f64::MIN_POSITIVE;
        let got = c.get(i, j).to_f64();
        if !want.is_finite() {
            // NaN or an infinity is the right answer (NaN inputs, alpha = NaN, beta = inf):
            // the same class of value is, with no error to measure.
            if (want.is_nan() && got.is_nan()) || got == want {
                continue;
            }
            return Err(format!("C({i},{j}) = {got:e}, expected {want:e}"));
        }
        let err = (got - want).abs();
        if err.is_nan() || err > bound {
            return Err(format!(
                "C({i},{j}) = {got:e}, expected {want:e}: error {err:e} exceeds bound {bound:e}"
            ));
        }
        worst = worst.max(err / bound);
    }
    Ok((entries.len(), worst))
}
