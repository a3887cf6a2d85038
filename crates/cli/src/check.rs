//! How every routine's `--check` reports: the entries compared with the f64-accumulated
//! reference (hetblas_core's checks, which decide each entry in `reference::agrees`: a NaN or
//! infinity of the result fails unless the reference has the same one there), then one line
//! and the JSON `check` field, the same for GEMM, GEMMT, the symmetric routines and TRSM/TRMM.

use crate::report::{say, Out};
use hetblas::Scalar;

/// Reports a passed check of `result`: `what` was checked (`"256 entries"`, `"sampled
/// entries"`), `entries` how many where known, `worst` the largest error / bound; `also` what
/// else the check verified, said after (empty: nothing).
pub fn passed<T: Scalar>(
    out: &Out,
    what: &str,
    entries: Option<usize>,
    worst: f64,
    result: &[T],
    also: &str,
) {
    let non_finite = non_finite(result);
    let also = if also.is_empty() {
        String::new()
    } else {
        format!("; {also}")
    };
    say!(out, "check: {what} {}{also}", agreement(worst, non_finite));
    out.set(
        "check",
        serde_json::json!({
            "passed": true,
            "entries": entries,
            "worst_error_over_bound": worst,
            "non_finite": non_finite,
        }),
    );
}

/// The error of a failed check: the entry that differs, as the reference check described it.
pub fn failed(why: impl std::fmt::Display) -> hetblas::Error {
    hetblas::Error::Internal(format!("check FAILED: {why}"))
}

/// Entries of `c` with a NaN or an infinite part.
fn non_finite<T: Scalar>(c: &[T]) -> usize {
    c.iter()
        .filter(|x| {
            let v = x.to_c64();
            !(v.re.is_finite() && v.im.is_finite())
        })
        .count()
}

/// How a passed check's entries agree with the reference: within the error bound, and where
/// C has NaN or infinite entries (`non_finite` of them), that the reference has them too at
/// every entry checked (a NaN or infinity it does not have fails the check).
fn agreement(worst: f64, non_finite: usize) -> String {
    if non_finite == 0 {
        format!("within the error bound (worst error/bound {worst:.3})")
    } else {
        format!(
            "agree with the reference: {non_finite} entries of the result are NaN or \
             infinite, as the reference's are at each entry checked (a NaN or infinite scalar \
             or operand, or an overflow); the finite ones within the error bound (worst \
             error/bound {worst:.3})"
        )
    }
}
