//! The triangular Level 2 routines: TRMV TBMV TPMV (products) and TRSV TBSV TPSV (solves).

use crate::options::{Diag, Trans, Uplo};
use crate::scalar::Scalar;
use crate::strided::max1;

/// Argument check of TRMV (UPLO 1, TRANS 2, DIAG 3, N 4, LDA 6, INCX 8).
pub fn trmv_check(uplo: u8, trans: u8, diag: u8, n: i64, lda: i64, incx: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if Trans::parse(trans).is_none() {
        2
    } else if Diag::parse(diag).is_none() {
        3
    } else if n < 0 {
        4
    } else if lda < max1(n) {
        6
    } else if incx == 0 {
        8
    } else {
        0
    }
}

/// TRMV: `x := op(A)*x`, A n x n triangular.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn trmv<T: Scalar>(
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
    a: *const T,
    lda: i64,
    x: *mut T,
    incx: i64,
) {
    let _ = (uplo, trans, diag, n, a, lda, x, incx);
    unimplemented!()
}

/// Argument check of TBMV (UPLO 1, TRANS 2, DIAG 3, N 4, K 5, LDA 7, INCX 9).
pub fn tbmv_check(uplo: u8, trans: u8, diag: u8, n: i64, k: i64, lda: i64, incx: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if Trans::parse(trans).is_none() {
        2
    } else if Diag::parse(diag).is_none() {
        3
    } else if n < 0 {
        4
    } else if k < 0 {
        5
    } else if lda < k + 1 {
        7
    } else if incx == 0 {
        9
    } else {
        0
    }
}

/// TBMV: `x := op(A)*x`, A triangular band with `k` off-diagonals in band storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn tbmv<T: Scalar>(
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
    k: i64,
    a: *const T,
    lda: i64,
    x: *mut T,
    incx: i64,
) {
    let _ = (uplo, trans, diag, n, k, a, lda, x, incx);
    unimplemented!()
}

/// Argument check of TPMV (UPLO 1, TRANS 2, DIAG 3, N 4, INCX 7).
pub fn tpmv_check(uplo: u8, trans: u8, diag: u8, n: i64, incx: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if Trans::parse(trans).is_none() {
        2
    } else if Diag::parse(diag).is_none() {
        3
    } else if n < 0 {
        4
    } else if incx == 0 {
        7
    } else {
        0
    }
}

/// TPMV: `x := op(A)*x`, A triangular in packed storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
pub unsafe fn tpmv<T: Scalar>(
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
    ap: *const T,
    x: *mut T,
    incx: i64,
) {
    let _ = (uplo, trans, diag, n, ap, x, incx);
    unimplemented!()
}

/// Argument check of TRSV (UPLO 1, TRANS 2, DIAG 3, N 4, LDA 6, INCX 8).
pub fn trsv_check(uplo: u8, trans: u8, diag: u8, n: i64, lda: i64, incx: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if Trans::parse(trans).is_none() {
        2
    } else if Diag::parse(diag).is_none() {
        3
    } else if n < 0 {
        4
    } else if lda < max1(n) {
        6
    } else if incx == 0 {
        8
    } else {
        0
    }
}

/// TRSV: solves `op(A)*x = b`, `b` given in `x` and overwritten, A n x n triangular.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn trsv<T: Scalar>(
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
    a: *const T,
    lda: i64,
    x: *mut T,
    incx: i64,
) {
    let _ = (uplo, trans, diag, n, a, lda, x, incx);
    unimplemented!()
}

/// Argument check of TBSV (UPLO 1, TRANS 2, DIAG 3, N 4, K 5, LDA 7, INCX 9).
pub fn tbsv_check(uplo: u8, trans: u8, diag: u8, n: i64, k: i64, lda: i64, incx: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if Trans::parse(trans).is_none() {
        2
    } else if Diag::parse(diag).is_none() {
        3
    } else if n < 0 {
        4
    } else if k < 0 {
        5
    } else if lda < k + 1 {
        7
    } else if incx == 0 {
        9
    } else {
        0
    }
}

/// TBSV: solves `op(A)*x = b`, `b` given in `x` and overwritten, A triangular band with `k` off-diagonals in band storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn tbsv<T: Scalar>(
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
    k: i64,
    a: *const T,
    lda: i64,
    x: *mut T,
    incx: i64,
) {
    let _ = (uplo, trans, diag, n, k, a, lda, x, incx);
    unimplemented!()
}

/// Argument check of TPSV (UPLO 1, TRANS 2, DIAG 3, N 4, INCX 7).
pub fn tpsv_check(uplo: u8, trans: u8, diag: u8, n: i64, incx: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if Trans::parse(trans).is_none() {
        2
    } else if Diag::parse(diag).is_none() {
        3
    } else if n < 0 {
        4
    } else if incx == 0 {
        7
    } else {
        0
    }
}

/// TPSV: solves `op(A)*x = b`, `b` given in `x` and overwritten, A triangular in packed storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
pub unsafe fn tpsv<T: Scalar>(
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
    ap: *const T,
    x: *mut T,
    incx: i64,
) {
    let _ = (uplo, trans, diag, n, ap, x, incx);
    unimplemented!()
}
