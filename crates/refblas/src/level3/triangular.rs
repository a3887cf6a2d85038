//! TRMM and TRSM: a triangular matrix times, or solved against, a general one.

use crate::options::{lsame, Diag, Side, Trans, Uplo};
use crate::scalar::Scalar;
use crate::strided::max1;

/// Argument check of TRMM (SIDE 1, UPLO 2, TRANSA 3, DIAG 4, M 5, N 6, LDA 9, LDB 11).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub fn trmm_check(
    side: u8,
    uplo: u8,
    transa: u8,
    diag: u8,
    m: i64,
    n: i64,
    lda: i64,
    ldb: i64,
) -> i32 {
    if Side::parse(side).is_none() {
        1
    } else if Uplo::parse(uplo).is_none() {
        2
    } else if Trans::parse(transa).is_none() {
        3
    } else if Diag::parse(diag).is_none() {
        4
    } else if m < 0 {
        5
    } else if n < 0 {
        6
    } else if lda < max1(if lsame(side, b'L') { m } else { n }) {
        9
    } else if ldb < max1(m) {
        11
    } else {
        0
    }
}

/// TRMM: `B := alpha*op(A)*B` (side 'L') or `alpha*B*op(A)` (side 'R'), A triangular, B m x n.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn trmm<T: Scalar>(
    side: u8,
    uplo: u8,
    transa: u8,
    diag: u8,
    m: i64,
    n: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *mut T,
    ldb: i64,
) {
    let _ = (side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb);
    unimplemented!()
}

/// Argument check of TRSM (SIDE 1, UPLO 2, TRANSA 3, DIAG 4, M 5, N 6, LDA 9, LDB 11).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub fn trsm_check(
    side: u8,
    uplo: u8,
    transa: u8,
    diag: u8,
    m: i64,
    n: i64,
    lda: i64,
    ldb: i64,
) -> i32 {
    if Side::parse(side).is_none() {
        1
    } else if Uplo::parse(uplo).is_none() {
        2
    } else if Trans::parse(transa).is_none() {
        3
    } else if Diag::parse(diag).is_none() {
        4
    } else if m < 0 {
        5
    } else if n < 0 {
        6
    } else if lda < max1(if lsame(side, b'L') { m } else { n }) {
        9
    } else if ldb < max1(m) {
        11
    } else {
        0
    }
}

/// TRSM: solves `op(A)*X = alpha*B` (side 'L') or `X*op(A) = alpha*B` (side 'R'), X overwriting B, A triangular, B m x n.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn trsm<T: Scalar>(
    side: u8,
    uplo: u8,
    transa: u8,
    diag: u8,
    m: i64,
    n: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *mut T,
    ldb: i64,
) {
    let _ = (side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb);
    unimplemented!()
}
