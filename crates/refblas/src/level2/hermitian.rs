//! The symmetric and Hermitian Level 2 routines: HEMV HBMV HPMV SYMV SBMV SPMV, HER HPR HER2
//! HPR2 SYR SPR SYR2 SPR2. Each is generic over every scalar type (for a real type the Hermitian
//! routine is the symmetric one).

use crate::options::Uplo;
use crate::scalar::Scalar;
use crate::strided::max1;

/// Argument check of HEMV (UPLO 1, N 2, LDA 5, INCX 7, INCY 10).
pub fn hemv_check(uplo: u8, n: i64, lda: i64, incx: i64, incy: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if lda < max1(n) {
        5
    } else if incx == 0 {
        7
    } else if incy == 0 {
        10
    } else {
        0
    }
}

/// HEMV: `y := alpha*A*x + beta*y`, A Hermitian n x n, one triangle referenced.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn hemv<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) {
    let _ = (uplo, n, alpha, a, lda, x, incx, beta, y, incy);
    unimplemented!()
}

/// Argument check of SYMV (UPLO 1, N 2, LDA 5, INCX 7, INCY 10).
pub fn symv_check(uplo: u8, n: i64, lda: i64, incx: i64, incy: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if lda < max1(n) {
        5
    } else if incx == 0 {
        7
    } else if incy == 0 {
        10
    } else {
        0
    }
}

/// SYMV: `y := alpha*A*x + beta*y`, A symmetric n x n, one triangle referenced.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn symv<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) {
    let _ = (uplo, n, alpha, a, lda, x, incx, beta, y, incy);
    unimplemented!()
}

/// Argument check of HBMV (UPLO 1, N 2, K 3, LDA 6, INCX 8, INCY 11).
pub fn hbmv_check(uplo: u8, n: i64, k: i64, lda: i64, incx: i64, incy: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if k < 0 {
        3
    } else if lda < k + 1 {
        6
    } else if incx == 0 {
        8
    } else if incy == 0 {
        11
    } else {
        0
    }
}

/// HBMV: `y := alpha*A*x + beta*y`, A Hermitian band matrix with `k` off-diagonals, one triangle in band storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn hbmv<T: Scalar>(
    uplo: u8,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) {
    let _ = (uplo, n, k, alpha, a, lda, x, incx, beta, y, incy);
    unimplemented!()
}

/// Argument check of SBMV (UPLO 1, N 2, K 3, LDA 6, INCX 8, INCY 11).
pub fn sbmv_check(uplo: u8, n: i64, k: i64, lda: i64, incx: i64, incy: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if k < 0 {
        3
    } else if lda < k + 1 {
        6
    } else if incx == 0 {
        8
    } else if incy == 0 {
        11
    } else {
        0
    }
}

/// SBMV: `y := alpha*A*x + beta*y`, A symmetric band matrix with `k` off-diagonals, one triangle in band storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn sbmv<T: Scalar>(
    uplo: u8,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) {
    let _ = (uplo, n, k, alpha, a, lda, x, incx, beta, y, incy);
    unimplemented!()
}

/// Argument check of HPMV (UPLO 1, N 2, INCX 6, INCY 9).
pub fn hpmv_check(uplo: u8, n: i64, incx: i64, incy: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        6
    } else if incy == 0 {
        9
    } else {
        0
    }
}

/// HPMV: `y := alpha*A*x + beta*y`, A Hermitian n x n in packed storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn hpmv<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    ap: *const T,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) {
    let _ = (uplo, n, alpha, ap, x, incx, beta, y, incy);
    unimplemented!()
}

/// Argument check of SPMV (UPLO 1, N 2, INCX 6, INCY 9).
pub fn spmv_check(uplo: u8, n: i64, incx: i64, incy: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        6
    } else if incy == 0 {
        9
    } else {
        0
    }
}

/// SPMV: `y := alpha*A*x + beta*y`, A symmetric n x n in packed storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn spmv<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    ap: *const T,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) {
    let _ = (uplo, n, alpha, ap, x, incx, beta, y, incy);
    unimplemented!()
}

/// Argument check of HER (UPLO 1, N 2, INCX 5, LDA 7).
pub fn her_check(uplo: u8, n: i64, incx: i64, lda: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else if lda < max1(n) {
        7
    } else {
        0
    }
}

/// HER: `A := alpha*x*x^H + A`, one triangle of the n x n A updated.
///
/// # Safety
/// See the level Safety section of this module's parent.
pub unsafe fn her<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T::Real,
    x: *const T,
    incx: i64,
    a: *mut T,
    lda: i64,
) {
    let _ = (uplo, n, alpha, x, incx, a, lda);
    unimplemented!()
}

/// Argument check of SYR (UPLO 1, N 2, INCX 5, LDA 7).
pub fn syr_check(uplo: u8, n: i64, incx: i64, lda: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else if lda < max1(n) {
        7
    } else {
        0
    }
}

/// SYR: `A := alpha*x*x^T + A`, one triangle of the n x n A updated.
///
/// # Safety
/// See the level Safety section of this module's parent.
pub unsafe fn syr<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    a: *mut T,
    lda: i64,
) {
    let _ = (uplo, n, alpha, x, incx, a, lda);
    unimplemented!()
}

/// Argument check of HPR (UPLO 1, N 2, INCX 5).
pub fn hpr_check(uplo: u8, n: i64, incx: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else {
        0
    }
}

/// HPR: `A := alpha*x*x^H + A`, A in packed storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
pub unsafe fn hpr<T: Scalar>(uplo: u8, n: i64, alpha: T::Real, x: *const T, incx: i64, ap: *mut T) {
    let _ = (uplo, n, alpha, x, incx, ap);
    unimplemented!()
}

/// Argument check of SPR (UPLO 1, N 2, INCX 5).
pub fn spr_check(uplo: u8, n: i64, incx: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else {
        0
    }
}

/// SPR: `A := alpha*x*x^T + A`, A in packed storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
pub unsafe fn spr<T: Scalar>(uplo: u8, n: i64, alpha: T, x: *const T, incx: i64, ap: *mut T) {
    let _ = (uplo, n, alpha, x, incx, ap);
    unimplemented!()
}

/// Argument check of HER2 (UPLO 1, N 2, INCX 5, INCY 7, LDA 9).
pub fn her2_check(uplo: u8, n: i64, incx: i64, incy: i64, lda: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else if incy == 0 {
        7
    } else if lda < max1(n) {
        9
    } else {
        0
    }
}

/// HER2: `A := alpha*x*y^H + conj(alpha)*y*x^H + A`, one triangle of the n x n A updated.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn her2<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) {
    let _ = (uplo, n, alpha, x, incx, y, incy, a, lda);
    unimplemented!()
}

/// Argument check of SYR2 (UPLO 1, N 2, INCX 5, INCY 7, LDA 9).
pub fn syr2_check(uplo: u8, n: i64, incx: i64, incy: i64, lda: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else if incy == 0 {
        7
    } else if lda < max1(n) {
        9
    } else {
        0
    }
}

/// SYR2: `A := alpha*x*y^T + alpha*y*x^T + A`, one triangle of the n x n A updated.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn syr2<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) {
    let _ = (uplo, n, alpha, x, incx, y, incy, a, lda);
    unimplemented!()
}

/// Argument check of HPR2 (UPLO 1, N 2, INCX 5, INCY 7).
pub fn hpr2_check(uplo: u8, n: i64, incx: i64, incy: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else if incy == 0 {
        7
    } else {
        0
    }
}

/// HPR2: `A := alpha*x*y^H + conj(alpha)*y*x^H + A`, A in packed storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn hpr2<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    ap: *mut T,
) {
    let _ = (uplo, n, alpha, x, incx, y, incy, ap);
    unimplemented!()
}

/// Argument check of SPR2 (UPLO 1, N 2, INCX 5, INCY 7).
pub fn spr2_check(uplo: u8, n: i64, incx: i64, incy: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else if incy == 0 {
        7
    } else {
        0
    }
}

/// SPR2: `A := alpha*x*y^T + alpha*y*x^T + A`, A in packed storage.
///
/// # Safety
/// See the level Safety section of this module's parent.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn spr2<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    ap: *mut T,
) {
    let _ = (uplo, n, alpha, x, incx, y, incy, ap);
    unimplemented!()
}
