//! The f64-accumulated check of a TRSM or TRMM result on chosen lines of B (columns on the
//! left side, rows on the right): TRSM by its residual `|op(A) X - alpha B|` against
//! `tol (|op(A)| |X| + |alpha B|)`, TRMM against `alpha op(A) B` with `tol |alpha| |op(A)| |B|`,
//! `tol = factor * (order + 2) * u` per entry. Big problems are checked on a sample of lines.

use crate::operand::{MatRef, Trans};
use crate::problem::triangular::{Diag, Side, TriProblem, TriRoutine, Uplo};
use crate::scalar::{c64, Scalar};

/// `op(A)(i, l)`: the unit diagonal as 1, the other triangle as 0 (neither is read).
fn op_a<T: Scalar>(p: &TriProblem, a: &MatRef<'_, T>, i: usize, l: usize) -> c64 {
    let o = &p.opts;
    let (r, c) = if o.transa.is_transposed() {
        (l, i)
    } else {
        (i, l)
    };
    if r == c && o.diag == Diag::Unit {
        return c64::new(1.0, 0.0);
    }
    let stored = match o.uplo {
        Uplo::Lower => r >= c,
        Uplo::Upper => r <= c,
    };
    if !stored {
        return c64::new(0.0, 0.0);
    }
    let v = a.get(r, c).to_c64();
    if o.transa == Trans::C {
        v.conj()
    } else {
        v
    }
}

/// Checks `lines` of `got` (B after the call) against A and the B before the call, `b0`.
/// Returns the entries checked and the worst error relative to its bound.
///
/// # Errors
/// The first entry beyond its bound (or NaN), described.
#[allow(clippy::too_many_arguments)] // reason: the problem, its operands and the sample
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
    for &line in lines {
        // The line of X (TRSM) or of the old B (TRMM) that op(A) multiplies.
        let src = |l: usize| -> c64 {
            let m = if p.routine == TriRoutine::Trsm {
                &got
            } else {
                &b0
            };
            match p.opts.side {
                Side::Left => m.get(l, line).to_c64(),
                Side::Right => m.get(line, l).to_c64(),
            }
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
            let err = (have - want).norm();
            let bound = tol * scale.max(f64::MIN_POSITIVE);
            if err.is_nan() || err > bound {
                return Err(format!(
                    "entry ({r},{c}): {have} against {want}, error {err:e} > bound {bound:e}"
                ));
            }
            worst = worst.max(err / bound);
            checked += 1;
        }
    }
    Ok((checked, worst))
}
