//! SYMM and HEMM: a symmetric or Hermitian matrix times a general one.

use crate::options::{lsame, Side, Uplo};
use crate::scalar::Scalar;
use crate::strided::max1;

/// Argument check of SYMM (SIDE 1, UPLO 2, M 3, N 4, LDA 7, LDB 9, LDC 12).
pub fn symm_check(side: u8, uplo: u8, m: i64, n: i64, lda: i64, ldb: i64, ldc: i64) -> i32 {
    if Side::parse(side).is_none() {
        1
    } else if Uplo::parse(uplo).is_none() {
        2
    } else if m < 0 {
        3
    } else if n < 0 {
        4
    } else if lda < max1(if lsame(side, b'L') { m } else { n }) {
        7
    } else if ldb < max1(m) {
        9
    } else if ldc < max1(m) {
        12
    } else {
        0
    }
}

/// SYMM: `C := alpha*A*B + beta*C` (side 'L') or `alpha*B*A + beta*C` (side 'R'), A symmetric, one triangle referenced.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn symm<T: Scalar>(
    side: u8,
    uplo: u8,
    m: i64,
    n: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) {
    let _ = (side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc);
    unimplemented!()
}

/// Argument check of HEMM (SIDE 1, UPLO 2, M 3, N 4, LDA 7, LDB 9, LDC 12).
pub fn hemm_check(side: u8, uplo: u8, m: i64, n: i64, lda: i64, ldb: i64, ldc: i64) -> i32 {
    if Side::parse(side).is_none() {
        1
    } else if Uplo::parse(uplo).is_none() {
        2
    } else if m < 0 {
        3
    } else if n < 0 {
        4
    } else if lda < max1(if lsame(side, b'L') { m } else { n }) {
        7
    } else if ldb < max1(m) {
        9
    } else if ldc < max1(m) {
        12
    } else {
        0
    }
}

/// HEMM: `C := alpha*A*B + beta*C` (side 'L') or `alpha*B*A + beta*C` (side 'R'), A Hermitian, one triangle referenced.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn hemm<T: Scalar>(
    side: u8,
    uplo: u8,
    m: i64,
    n: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) {
    let _ = (side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc);
    unimplemented!()
}
