//! Small GEMMs straight to the host BLAS, before the entry point's bookkeeping: a call whose
//! flops are below every offload rule's floor, with valid arguments and no GPU runtime in the
//! process (so no operand can be device memory), goes to the host's routine with one
//! thread-local access and no routing, device-pointer check, panic guard, family mark or
//! summary count. NumPy's `a @ b` at n = 8-64 takes 0.3-6 us, against the 5% the drop-in may
//! add (issue 53): on the H200 host a C loop of n = 8 products took 76-87 ns a call preloaded
//! with the same check inside the entry point, 64 ns with it before, 39-41 ns alone
//! (`docs/data/h200-2026-12-01-small-path-0920Z.txt`).
//!
//! Whatever the fast path declines takes the general path, which decides as before: invalid
//! arguments (reported there), a larger call, verbose output or the summary on, a GPU
//! runtime loaded, a call from inside a host routine, and the first calls (before the settings
//! and the family's host are loaded: loading them is the general path's, under its panic
//! guard). Nothing here allocates, locks or can panic.

use crate::elem::Elem;
use crate::family::Family;
use crate::symbols::Sym;
use std::ffi::c_int;

/// A CBLAS GEMM of `family` on the host when it is small (see the module); `false` leaves the
/// call to the entry point.
///
/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
#[inline(always)]
pub unsafe fn cblas_gemm<T: Elem>(
    family: Family,
    order: c_int,
    ta: c_int,
    tb: c_int,
    m: i64,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) -> bool {
    let (Some(ta), Some(tb)) = (crate::cblas::trans(ta), crate::cblas::trans(tb)) else {
        return false;
    };
    match order {
        // SAFETY: the CBLAS contract.
        102 => unsafe { gemm(family, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) },
        // SAFETY: the CBLAS contract; a row-major call is the column-major call on the
        // transposes, A and B exchanged.
        101 => unsafe { gemm(family, tb, ta, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc) },
        _ => false,
    }
}

/// A column-major GEMM of `family` (Fortran options, any case) on the host when it is small
/// (see the module); `false` leaves the call to the entry point.
///
/// # Safety
/// The BLAS contract for the arrays (the arguments themselves are checked here).
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
#[inline(always)]
pub unsafe fn gemm<T: Elem>(
    family: Family,
    ta: u8,
    tb: u8,
    m: i64,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) -> bool {
    let (ta, tb) = (ta.to_ascii_uppercase(), tb.to_ascii_uppercase());
    if !valid_nonempty(ta, tb, m, n, k, lda, ldb, ldc) {
        return false;
    }
    let Some(settings) = crate::settings::read_already() else {
        return false;
    };
    let floor = settings
        .offload_flops
        .map_or(crate::route::Rule::BUILT_IN, crate::route::Rule::Flops)
        .floor();
    if 2.0 * m as f64 * n as f64 * k as f64 >= floor
        || settings.verbose
        || settings.summary
        || crate::device_ptr::worth_asking()
    {
        return false;
    }
    let Some(host) = crate::host::loaded_for(family) else {
        return false;
    };
    let Some(addr) = host.addr(crate::symbols::index::<T>(Sym::GEMM)) else {
        return false;
    };
    let fits = |x: i64| i32::try_from(x).is_ok();
    let ilp64 = host.ilp64;
    if !(ilp64 || fits(m) && fits(n) && fits(k) && fits(lda) && fits(ldb) && fits(ldc)) {
        return false;
    }
    crate::host::outside_host(|| {
        if ilp64 {
            call_host!(@call addr, i64, T, ();
                c ta, c tb, i m, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc)
        } else {
            // The integers were checked to fit above.
            call_host!(@call addr, i32, T, ();
                c ta, c tb, i m, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc)
        }
    })
    .is_some()
}

/// Whether a column-major GEMM (options in upper case) has no empty dimension and passes the
/// reference checks; anything else takes the general path, which reports errors.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
#[inline(always)]
fn valid_nonempty(ta: u8, tb: u8, m: i64, n: i64, k: i64, lda: i64, ldb: i64, ldc: i64) -> bool {
    let trans = |t: u8| matches!(t, b'N' | b'T' | b'C');
    trans(ta)
        && trans(tb)
        && m > 0
        && n > 0
        && k > 0
        && lda >= if ta == b'N' { m } else { k }
        && ldb >= if tb == b'N' { k } else { n }
        && ldc >= m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path's reading of the reference checks is the reference's: over every option
    /// letter and dimensions around each bound, a non-empty call passes here exactly when
    /// hetblas-refblas's check finds no error.
    #[test]
    fn the_argument_screen_is_the_reference_check_on_nonempty_calls() {
        let letters = [b'N', b'T', b'C', b'X', b'n'];
        let (mut passed, mut refused) = (0, 0);
        for &ta in &letters {
            for &tb in &letters {
                for m in [-1i64, 0, 1, 5] {
                    for n in [0i64, 1, 4] {
                        for k in [0i64, 1, 3] {
                            for lda in [0i64, 1, 3, 5] {
                                for ldb in [1i64, 3, 4] {
                                    for ldc in [0i64, 1, 5] {
                                        let (ua, ub) =
                                            (ta.to_ascii_uppercase(), tb.to_ascii_uppercase());
                                        let ours = valid_nonempty(ua, ub, m, n, k, lda, ldb, ldc);
                                        let reference = hetblas_refblas::gemm_check(
                                            ta, tb, m, n, k, lda, ldb, ldc,
                                        ) == 0
                                            && m > 0
                                            && n > 0
                                            && k > 0;
                                        assert_eq!(
                                            ours, reference,
                                            "{} {} {m} {n} {k} {lda} {ldb} {ldc}",
                                            ta as char, tb as char
                                        );
                                        if ours {
                                            passed += 1
                                        } else {
                                            refused += 1
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(
            passed > 100 && refused > 100,
            "{passed} passed, {refused} refused"
        );
    }
}
