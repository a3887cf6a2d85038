//! The f64-accumulated check of a TRSM or TRMM result on chosen lines of B (columns on the
//! left side, rows on the right): TRSM by its residual `|op(A) X - alpha B|` against
//! `tol (|op(A)| |X| + |alpha B|)`, TRMM against `alpha op(A) B` with `tol |alpha| |op(A)| |B|`,
//! `tol = factor * (order + 2) * u` per entry. Big problems are checked on a sample of lines.

use super::reference::{agrees, op_elem};
use crate::operand::MatRef;
use crate::problem::triangular::{Diag, Side, TriProblem, TriRoutine};
use crate::scalar::{c64, Scalar};

/// `op(A)(i, l)`: the unit diagonal as 1, the other triangle as 0 (neither is read).
fn op_a<T: Scalar>(p: &TriProblem, a: &MatRef<'_, T>, i: usize, l: usize) -> c64 {
    let o = &p.opts;
    let (r, c) = o.transa.stored_shape(i, l);
    if r == c && o.diag == Diag::Unit {
        return c64::new(1.0, 0.0);
    }
    if !o.uplo.contains(r, c) {
        return c64::new(0.0, 0.0);
    }
    op_elem(a, o.transa, i, l)
}

/// Checks `lines` of `got` (B after the call) against A and the B before the call, `b0`.
/// Returns the entries checked and the worst error relative to its bound.
///
/// # Errors
/// The first entry beyond its bound (or NaN), described.
pub fn check_tri_lines<T: Scalar>(
    p: &TriProblem,
    alpha: T,
    a: MatRef<'_, T>,
    b0: MatRef<'_, T>,
    got: MatRef<'_, T>,
    lines: &[usize],
    factor: f64,
) -> Result<(usize, f64), String> {
    let order = p.a_order();
    let tol = factor * (order as f64 + 2.0) * p.dtype.unit_roundoff();
    let alpha = alpha.to_c64();
    let mut worst = 0.0f64;
    let mut checked = 0;
    // X (TRSM) or the old B (TRMM): what op(A) multiplies.
    let x = if p.routine == TriRoutine::Trsm {
        got
    } else {
        b0
    };
    for &line in lines {
        let src = |l: usize| match p.opts.side {
            Side::Left => x.get(l, line).to_c64(),
            Side::Right => x.get(line, l).to_c64(),
        };
        for e in 0..order {
            let (mut s, mut abs) = (c64::new(0.0, 0.0), 0.0);
            for l in 0..order {
                let t = match p.opts.side {
                    Side::Left => op_a(p, &a, e, l) * src(l),
                    Side::Right => src(l) * op_a(p, &a, l, e),
                };
                s += t;
                abs += t.norm();
            }
            let (r, c) = match p.opts.side {
                Side::Left => (e, line),
                Side::Right => (line, e),
            };
            let (have, want, scale) = match p.routine {
                TriRoutine::Trsm => {
                    let rhs = alpha * b0.get(r, c).to_c64();
                    (s, rhs, abs + rhs.norm())
                }
                TriRoutine::Trmm => (got.get(r, c).to_c64(), alpha * s, alpha.norm() * abs),
            };
            let bound = tol * scale.max(f64::MIN_POSITIVE);
            let ratio = agrees(p.dtype, have, want, bound).map_err(|e| match p.routine {
                TriRoutine::Trsm => format!("entry ({r},{c}) of op(A) X against alpha B: {e}"),
                TriRoutine::Trmm => format!("entry ({r},{c}): {e}"),
            })?;
            worst = worst.max(ratio);
            checked += 1;
        }
    }
    Ok((checked, worst))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::Trans;
    use crate::problem::triangular::{TriOptions, Uplo};
    use crate::scalar::DType;

    fn view(v: &[f64], r: usize, c: usize) -> MatRef<'_, f64> {
        MatRef::new(v, r, c, r).unwrap()
    }

    /// TRMM's check takes a NaN result where the reference is NaN (alpha = NaN) and flags an
    /// infinity where it is finite.
    #[test]
    fn a_non_finite_result_fails_only_where_the_reference_is_finite() {
        let (m, n) = (3, 2);
        let p = TriProblem {
            routine: TriRoutine::Trmm,
            opts: TriOptions {
                side: Side::Left,
                uplo: Uplo::Lower,
                transa: Trans::N,
                diag: Diag::NonUnit,
            },
            m,
            n,
            dtype: DType::F64,
        };
        // A lower triangular, B all ones: row i of A B sums row i of A.
        let a = vec![2.0, 0.5, 0.25, 0.0, 3.0, 0.5, 0.0, 0.0, 4.0f64];
        let b0 = vec![1.0f64; m * n];
        let ab: Vec<f64> = (0..m * n)
            .map(|x| (0..=x % m).map(|l| a[x % m + l * m]).sum())
            .collect();
        let check = |alpha: f64, got: &[f64]| {
            check_tri_lines(
                &p,
                alpha,
                view(&a, m, m),
                view(&b0, m, n),
                view(got, m, n),
                &[0, 1],
                4.0,
            )
        };
        check(1.0, &ab).expect("the right result passes");
        check(f64::NAN, &[f64::NAN; 6]).expect("NaN where the reference is NaN passes");
        let mut inf = ab.clone();
        inf[4] = f64::INFINITY;
        let e = check(1.0, &inf).expect_err("an infinity the reference does not have fails");
        assert!(e.contains("(1,1)") && e.contains("does not have"), "{e}");
    }
}
