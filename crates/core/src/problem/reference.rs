//! The reference GEMM check: entries of C recomputed by a plain dot product accumulated in f64
//! (`complex<f64>` for every dtype: a real one has no imaginary part), slow and obviously right,
//! compared with the error bound of [`gemm_error_bound`]. `Trans::C` conjugates complex
//! elements. Tests and `hetblas gemm --check` use it.

use crate::operand::{MatRef, Trans};
use crate::scalar::{c64, DType, Scalar};

/// Elementwise bound on |computed - exact| for a GEMM entry: `factor * g * (k + 2) * u *
/// (|alpha| * sum_l |a_il||b_lj| + |beta| |c_ij|)` plus rounding of the result itself. `factor`
/// absorbs the summation order of blocked kernels; 2 is comfortable for BLAS libraries. `g` is
/// 1 for real types and 2*sqrt(2) for complex ones: a complex product carries up to sqrt(2) *
/// 2u relative error against u for a real one (Higham, Accuracy and Stability, Lemma 3.5), and
/// moduli are used for |.|.
pub fn gemm_error_bound(dtype: DType, k: usize, abs_sum: f64, factor: f64) -> f64 {
    let u = dtype.unit_roundoff();
    let g = if dtype.is_complex() {
        2.0 * std::f64::consts::SQRT_2
    } else {
        1.0
    };
    factor * g * (k as f64 + 2.0) * u * abs_sum
}

/// Checks `c` (the result of `c = alpha*op(a)*op(b) + beta*c0`) at `samples` random entries (all
/// entries when there are fewer), each against an f64-accumulated dot product with the bound of
/// [`gemm_error_bound`]. Returns (entries checked, worst error / bound) or the first violation.
/// `alpha` and `beta` are f64 for real calls (`x.to_c64()` for complex ones).
#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
pub fn check_sampled<T: Scalar>(
    transa: Trans,
    transb: Trans,
    alpha: impl Into<c64>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    beta: impl Into<c64>,
    c0: MatRef<'_, T>,
    c: MatRef<'_, T>,
    samples: usize,
    seed: u64,
) -> Result<(usize, f64), String> {
    check_entries(transa, transb, alpha, a, b, beta, c0, c, samples, seed, 2.0)
}

/// [`check_sampled`] with the bound's safety `factor` chosen by the caller.
#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
pub fn check_entries<T: Scalar>(
    transa: Trans,
    transb: Trans,
    alpha: impl Into<c64>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    beta: impl Into<c64>,
    c0: MatRef<'_, T>,
    c: MatRef<'_, T>,
    samples: usize,
    seed: u64,
    factor: f64,
) -> Result<(usize, f64), String> {
    let (alpha, beta) = (alpha.into(), beta.into());
    let (m, n) = (c.rows(), c.cols());
    // op(a) is m x k.
    let (_, k) = transa.stored_shape(a.rows(), a.cols());
    let entries = sampled_entries(m, n, samples, seed);
    let zero = c64::new(0.0, 0.0);
    let mut worst = 0.0f64;
    for &(i, j) in &entries {
        let (mut s, mut abs) = (zero, 0.0);
        for l in 0..k {
            let p = op_elem(&a, transa, i, l) * op_elem(&b, transb, l, j);
            s += p;
            abs += p.norm();
        }
        // beta = 0 does not read C (0 * inf would be NaN).
        let c0v = if beta == zero {
            zero
        } else {
            c0.get(i, j).to_c64()
        };
        let want = alpha * s + beta * c0v;
        // A real dtype has no imaginary part to compare (complex arithmetic on NaN would
        // give it one).
        let want = if T::DTYPE.is_complex() {
            want
        } else {
            c64::new(want.re, 0.0)
        };
        let sum = alpha.norm() * abs + beta.norm() * c0v.norm();
        let bound = gemm_error_bound(T::DTYPE, k, sum, factor)
            + 2.0 * T::DTYPE.unit_roundoff() * want.norm()
            + f64::MIN_POSITIVE;
        let got = c.get(i, j).to_c64();
        let ratio = agrees(T::DTYPE, got, want, bound).map_err(|e| format!("C({i},{j}) = {e}"))?;
        worst = worst.max(ratio);
    }
    Ok((entries.len(), worst))
}

/// Element `(i, l)` of `op(a)`: `a`'s `(l, i)` when `trans` transposes, conjugated for `C`
/// (which changes nothing for a real dtype).
pub(crate) fn op_elem<T: Scalar>(a: &MatRef<'_, T>, trans: Trans, i: usize, l: usize) -> c64 {
    let (r, c) = trans.stored_shape(i, l);
    let x = a.get(r, c).to_c64();
    if trans.is_conjugated() {
        x.conj()
    } else {
        x
    }
}

/// The entries of an `m x n` matrix a check looks at: all of them, column by column, when
/// there are at most `samples`, else `samples` chosen from `seed`.
pub(crate) fn sampled_entries(
    m: usize,
    n: usize,
    samples: usize,
    seed: u64,
) -> Vec<(usize, usize)> {
    if m * n <= samples {
        return (0..n).flat_map(|j| (0..m).map(move |i| (i, j))).collect();
    }
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
}

/// Whether a computed entry `got` agrees with its f64-accumulated reference `want` within
/// `bound`: `Ok(error / bound)`, or what differs. Where the reference is NaN or infinite, the
/// entry agrees when it is the same value class part by part; a NaN or infinity the reference
/// does not have never agrees. A real `dtype` compares real parts only (complex arithmetic on a
/// NaN gives the reference an imaginary NaN). Every reference check decides here.
pub fn agrees(dtype: DType, got: c64, want: c64, bound: f64) -> Result<f64, String> {
    let (got, want) = if dtype.is_complex() {
        (got, want)
    } else {
        (c64::new(got.re, 0.0), c64::new(want.re, 0.0))
    };
    let finite = |x: c64| x.re.is_finite() && x.im.is_finite();
    if !finite(want) {
        let same = |g: f64, w: f64| (w.is_nan() && g.is_nan()) || g == w;
        return if same(got.re, want.re) && same(got.im, want.im) {
            Ok(0.0)
        } else {
            Err(format!(
                "{got:e}, expected {want:e} (not the reference's NaN or infinity)"
            ))
        };
    }
    if !finite(got) {
        return Err(format!(
            "{got:e}, expected {want:e} (a NaN or infinity the reference does not have)"
        ));
    }
    let err = (got - want).norm();
    if bound.is_nan() || err > bound {
        Err(format!(
            "{got:e}, expected {want:e}: error {err:e} exceeds bound {bound:e}"
        ))
    } else {
        Ok(err / bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::c32;

    /// A plain product in the type itself, with `conj_a` deciding whether A is conjugated (so
    /// a test can compute the wrong, unconjugated answer on purpose).
    fn product<T: Scalar>(a: &[T], b: &[T], n: usize, conj_a: bool) -> Vec<T> {
        // C = op(A) * B, A stored n x n and used transposed.
        let mut c = vec![T::default(); n * n];
        for j in 0..n {
            for i in 0..n {
                let mut s = T::default();
                for l in 0..n {
                    let x = a[l + i * n];
                    s = s + if conj_a { x.conj() } else { x } * b[l + j * n];
                }
                c[i + j * n] = s;
            }
        }
        c
    }

    fn view(v: &[c32], n: usize) -> MatRef<'_, c32> {
        MatRef::packed(v, n, n).unwrap()
    }

    fn data(n: usize, seed: u64) -> Vec<c32> {
        let mut s = seed;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64 - 0.5) as f32
        };
        (0..n).map(|_| c32::new(next(), next())).collect()
    }

    #[test]
    fn conjugate_transpose_differs_from_transpose() {
        let n = 9;
        let (a, b) = (data(n * n, 1), data(n * n, 2));
        let c0 = vec![c32::new(f32::NAN, f32::NAN); n * n];
        let conj = product(&a, &b, n, true);
        let plain = product(&a, &b, n, false);
        let check = |transa: Trans, got: &[c32]| {
            check_sampled(
                transa,
                Trans::N,
                1.0,
                view(&a, n),
                view(&b, n),
                0.0,
                view(&c0, n),
                view(got, n),
                usize::MAX,
                0,
            )
        };
        let (checked, worst) = check(Trans::C, &conj).unwrap();
        assert_eq!(checked, n * n);
        assert!(worst < 1.0);
        check(Trans::T, &plain).unwrap();
        // C treated as T (and T as C) is caught.
        assert!(check(Trans::C, &plain).is_err());
        assert!(check(Trans::T, &conj).is_err());
    }

    #[test]
    fn complex_scalars_and_bounds() {
        let n = 5;
        let (a, b) = (data(n * n, 3), data(n * n, 4));
        let c0 = data(n * n, 5);
        let (alpha, beta) = (c32::new(0.5, -1.25), c32::new(-0.75, 0.5));
        let ab = product(&a, &b, n, false);
        let got: Vec<c32> = ab
            .iter()
            .zip(&c0)
            .map(|(&p, &c)| alpha * p + beta * c)
            .collect();
        let run = |alpha: c32, got: &[c32]| {
            check_sampled(
                Trans::T,
                Trans::N,
                alpha.to_c64(),
                view(&a, n),
                view(&b, n),
                beta.to_c64(),
                view(&c0, n),
                view(got, n),
                usize::MAX,
                0,
            )
        };
        run(alpha, &got).unwrap();
        // The imaginary part of alpha matters.
        assert!(run(c32::new(0.5, 1.25), &got).is_err());
        // One ulp-scale change per entry is inside the bound; a 1e-4 relative one is not.
        let near: Vec<c32> = got.iter().map(|&x| x * c32::new(1.0 + 1e-7, 0.0)).collect();
        run(alpha, &near).unwrap();
        let far: Vec<c32> = got.iter().map(|&x| x * c32::new(1.0, 1e-4)).collect();
        assert!(run(alpha, &far).is_err());
        assert!(
            gemm_error_bound(DType::C64, 10, 1.0, 2.0)
                > 2.0 * gemm_error_bound(DType::F64, 10, 1.0, 2.0)
        );
    }

    /// A NaN or infinity is an error exactly where the reference does not have the same one.
    #[test]
    fn non_finite_entries_agree_only_with_the_same_reference() {
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        let z = |re: f64, im: f64| c64::new(re, im);
        let ok = |d: DType, got: c64, want: c64| agrees(d, got, want, 1e-12).is_ok();
        // The reference's NaN or infinity, matched.
        assert!(ok(DType::F64, z(nan, 0.0), z(nan, nan)));
        assert!(ok(DType::C64, z(nan, nan), z(nan, nan)));
        assert!(ok(DType::F32, z(-inf, 0.0), z(-inf, 0.0)));
        // One the reference does not have, or not the same one.
        assert!(!ok(DType::F64, z(nan, 0.0), z(1.0, 0.0)));
        assert!(!ok(DType::C32, z(1.0, inf), z(1.0, 0.5)));
        assert!(!ok(DType::F64, z(inf, 0.0), z(-inf, 0.0)));
        assert!(!ok(DType::C64, z(nan, 1.0), z(nan, nan)));
        assert!(!ok(DType::F64, z(1.0, 0.0), z(nan, 0.0)));
        // Finite entries against the bound.
        assert_eq!(agrees(DType::F64, z(1.0, 0.0), z(1.0, 0.0), 1e-12), Ok(0.0));
        assert!(!ok(DType::F64, z(1.0 + 1e-9, 0.0), z(1.0, 0.0)));
        assert!(agrees(DType::F64, z(1.0, 0.0), z(1.0, 0.0), f64::NAN).is_err());
    }
}
