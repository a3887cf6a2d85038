//! The reference check of the symmetric/Hermitian routines: every entry of C recomputed by a
//! plain sum accumulated in `complex<f64>` (any dtype), compared with the GEMM error bound over the
//! referenced part of C; the part the routine must not write is compared bit for bit with C
//! before the call, and a Hermitian rank update's diagonal must be exactly real (except in the
//! reference's quick return, alpha = 0 or k = 0 with beta = 1, which leaves all of C as it was).

use super::reference::{agrees, gemm_error_bound, op_elem, sampled_entries};
use super::sym::{Side, SymOp, SymProblem};
use crate::operand::{MatRef, Trans};
use crate::scalar::{c64, Scalar};

/// The bytes of one element. Scalars are plain data without padding (f32, f64 and their
/// complex pairs), so their bytes are their bits: a NaN keeps its payload in the comparison.
fn bits<T: Scalar>(x: &T) -> &[u8] {
    // SAFETY: `x` is a valid reference to a `T` of `size_of::<T>()` initialised bytes (Scalar is
    // sealed to padding-free plain-data types).
    unsafe { std::slice::from_raw_parts((x as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

/// Whether two elements are the same bits (a NaN equal to itself, 0.0 differing from -0.0).
pub fn same_bits<T: Scalar>(x: &T, y: &T) -> bool {
    bits(x) == bits(y)
}

/// Element `(i, l)` of the full symmetric/Hermitian matrix stored in `uplo` of `a`.
fn full_elem<T: Scalar>(a: &MatRef<'_, T>, op: &SymOp, i: usize, l: usize) -> c64 {
    if i == l && op.herm() {
        return c64::new(a.get(i, i).to_c64().re, 0.0);
    }
    // The other triangle is the stored one transposed (conjugated for HEMM).
    let t = if op.uplo().contains(i, l) {
        Trans::N
    } else {
        op.tconj()
    };
    op_elem(a, t, i, l)
}

/// Checks `c`, the result of the routine `p` on `a`, `b` (SYR2K/HER2K and SYMM/HEMM) and `c0`
/// (C before the call; ignored where `beta == 0`), at every entry. `alpha`/`beta` as the routine
/// takes them (HERK's are real: pass them with zero imaginary part). Returns the worst error /
/// bound over the referenced entries, or the first violation.
#[allow(clippy::too_many_arguments)] // the routine's operands, as BLAS orders them
pub fn check_sym<T: Scalar>(
    p: &SymProblem,
    alpha: c64,
    a: MatRef<'_, T>,
    b: Option<MatRef<'_, T>>,
    beta: c64,
    c0: MatRef<'_, T>,
    c: MatRef<'_, T>,
    factor: f64,
) -> Result<f64, String> {
    let all = sampled_entries(p.m, p.n, usize::MAX, 0);
    check_sym_at(p, alpha, a, b, beta, c0, c, factor, &all)
}

/// [`check_sym`] at `samples` entries chosen from `seed` (all of them when there are fewer),
/// for sizes where checking every entry would take too long.
#[allow(clippy::too_many_arguments)] // the routine's operands, as BLAS orders them
pub fn check_sym_sampled<T: Scalar>(
    p: &SymProblem,
    alpha: c64,
    a: MatRef<'_, T>,
    b: Option<MatRef<'_, T>>,
    beta: c64,
    c0: MatRef<'_, T>,
    c: MatRef<'_, T>,
    samples: usize,
    seed: u64,
) -> Result<f64, String> {
    let entries = sampled_entries(p.m, p.n, samples, seed);
    check_sym_at(p, alpha, a, b, beta, c0, c, 2.0, &entries)
}

#[allow(clippy::too_many_arguments)] // the routine's operands, as BLAS orders them
fn check_sym_at<T: Scalar>(
    p: &SymProblem,
    alpha: c64,
    a: MatRef<'_, T>,
    b: Option<MatRef<'_, T>>,
    beta: c64,
    c0: MatRef<'_, T>,
    c: MatRef<'_, T>,
    factor: f64,
    entries: &[(usize, usize)],
) -> Result<f64, String> {
    let (m, n, k) = (p.m, p.n, p.k);
    if (c.rows(), c.cols()) != (m, n) || (c0.rows(), c0.cols()) != (m, n) {
        return Err(format!("C is {}x{}, expected {m}x{n}", c.rows(), c.cols()));
    }
    let zero = c64::new(0.0, 0.0);
    let real = !T::DTYPE.is_complex();
    // The reference BLAS returns at once when alpha = 0 (or k = 0) and beta = 1: C is left as
    // it was, bit for bit, a Hermitian diagonal's imaginary part included.
    let untouched = beta == c64::new(1.0, 0.0) && (alpha == zero || k == 0);
    let mut worst = 0.0f64;
    for &(i, j) in entries {
        let referenced = !p.op.triangular_c() || p.op.uplo().contains(i, j);
        if untouched || !referenced {
            if same_bits(&c.get(i, j), &c0.get(i, j)) {
                continue;
            }
            return Err(if untouched {
                format!(
                    "C({i},{j}) was written by a call that must return at once \
                     (alpha = {alpha}, k = {k}, beta = 1)"
                )
            } else {
                format!(
                    "C({i},{j}) outside the {:?} triangle was written",
                    p.op.uplo()
                )
            });
        }
        // alpha = 0 references neither A nor B (they may hold NaN).
        let k = if alpha == zero { 0 } else { k };
        let (mut s, mut abs, mut keff) = (zero, 0.0, k);
        match p.op {
            SymOp::Rank {
                trans, two, herm, ..
            } => {
                let alpha2 = if herm { alpha.conj() } else { alpha };
                let conj = |x: c64| if herm { x.conj() } else { x };
                // op(X)(i, l): transposed (conjugated for the Hermitian routines) unless `N`.
                let t = if trans.is_transposed() {
                    p.op.tconj()
                } else {
                    Trans::N
                };
                let op = |x: &MatRef<'_, T>, i, l| op_elem(x, t, i, l);
                // B is read only when there are products (SYRK's B is A).
                let b = if two && k > 0 {
                    *b.as_ref().ok_or("SYR2K without B")?
                } else {
                    a
                };
                for l in 0..k {
                    let x = alpha * op(&a, i, l) * conj(op(&b, j, l));
                    let y = if two {
                        alpha2 * op(&b, i, l) * conj(op(&a, j, l))
                    } else {
                        zero
                    };
                    s += x + y;
                    abs += x.norm() + y.norm();
                }
                if two {
                    keff = 2 * k;
                }
            }
            SymOp::Multiply { side, .. } => {
                let b = b.as_ref().ok_or("SYMM without B")?;
                for l in 0..k {
                    let x = alpha
                        * match side {
                            Side::Left => full_elem(&a, &p.op, i, l) * b.get(l, j).to_c64(),
                            Side::Right => b.get(i, l).to_c64() * full_elem(&a, &p.op, l, j),
                        };
                    s += x;
                    abs += x.norm();
                }
            }
        }
        let herm_diag = p.op.herm() && p.op.triangular_c() && i == j;
        let mut c0v = if beta == zero {
            zero
        } else {
            c0.get(i, j).to_c64()
        };
        if herm_diag {
            c0v = c64::new(c0v.re, 0.0);
        }
        let mut want = s + beta * c0v;
        if real || herm_diag {
            want = c64::new(want.re, 0.0);
        }
        let got = c.get(i, j).to_c64();
        if herm_diag && got.im != 0.0 {
            return Err(format!(
                "C({i},{i}) = {got:e}: the Hermitian diagonal is not real"
            ));
        }
        let sum = abs + beta.norm() * c0v.norm();
        let bound = gemm_error_bound(T::DTYPE, keff, sum, factor)
            + 2.0 * T::DTYPE.unit_roundoff() * want.norm()
            + f64::MIN_POSITIVE;
        let ratio = agrees(T::DTYPE, got, want, bound).map_err(|e| format!("C({i},{j}) = {e}"))?;
        worst = worst.max(ratio);
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::super::sym::Uplo;
    use super::*;
    use crate::scalar::DType;

    fn view(v: &[f64], r: usize, c: usize) -> MatRef<'_, f64> {
        MatRef::new(v, r, c, r).unwrap()
    }

    /// SYRK's check takes a NaN result where the reference is NaN (alpha = NaN) and flags one
    /// where it is not.
    #[test]
    fn a_nan_result_fails_only_where_the_reference_is_finite() {
        let (n, k) = (3, 2);
        let a: Vec<f64> = (0..n * k).map(|x| x as f64 * 0.25 - 0.5).collect();
        let c0 = vec![0.0f64; n * n];
        let p = SymProblem::rank(Uplo::Lower, Trans::N, false, false, n, k, DType::F64);
        let check = |alpha: f64, c: &[f64]| {
            check_sym(
                &p,
                c64::new(alpha, 0.0),
                view(&a, n, k),
                None,
                c64::new(0.0, 0.0),
                view(&c0, n, n),
                view(c, n, n),
                2.0,
            )
        };
        // Lower triangle of A A^T; the upper one left as C was.
        let mut c = c0.clone();
        for j in 0..n {
            for i in j..n {
                c[i + j * n] = (0..k).map(|l| a[i + l * n] * a[j + l * n]).sum();
            }
        }
        check(1.0, &c).expect("the right result passes");
        let mut nan = c.clone();
        for j in 0..n {
            for i in j..n {
                nan[i + j * n] = f64::NAN;
            }
        }
        check(f64::NAN, &nan).expect("NaN where the reference is NaN passes");
        let mut one = c.clone();
        one[2] = f64::NAN;
        let e = check(1.0, &one).expect_err("a NaN the reference does not have fails");
        assert!(e.contains("C(2,0)") && e.contains("does not have"), "{e}");
    }
}
