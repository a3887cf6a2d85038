//! GEMV, GBMV, GER / GERU / GERC: general and band matrices.

use crate::options::Trans;
use crate::scalar::Scalar;
use crate::strided::max1;

/// Argument check of GEMV (TRANS 1, M 2, N 3, LDA 6, INCX 8, INCY 11).
pub fn gemv_check(trans: u8, m: i64, n: i64, lda: i64, incx: i64, incy: i64) -> i32 {
    if Trans::parse(trans).is_none() {
        1
    } else if m < 0 {
        2
    } else if n < 0 {
        3
    } else if lda < max1(m) {
        6
    } else if incx == 0 {
        8
    } else if incy == 0 {
        11
    } else {
        0
    }
}

/// GEMV: `y := alpha*op(A)*x + beta*y`, `A` m x n, op given by `trans`.
///
/// # Safety
/// See the level 2 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn gemv<T: Scalar>(
    trans: u8,
    m: i64,
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
    let _ = (trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
    unimplemented!()
}

/// Argument check of GBMV (TRANS 1, M 2, N 3, KL 4, KU 5, LDA 8, INCX 10, INCY 13).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub fn gbmv_check(
    trans: u8,
    m: i64,
    n: i64,
    kl: i64,
    ku: i64,
    lda: i64,
    incx: i64,
    incy: i64,
) -> i32 {
    if Trans::parse(trans).is_none() {
        1
    } else if m < 0 {
        2
    } else if n < 0 {
        3
    } else if kl < 0 {
        4
    } else if ku < 0 {
        5
    } else if lda < kl + ku + 1 {
        8
    } else if incx == 0 {
        10
    } else if incy == 0 {
        13
    } else {
        0
    }
}

/// GBMV: `y := alpha*op(A)*x + beta*y`, `A` an m x n band matrix with `kl` sub- and `ku`
/// super-diagonals in band storage.
///
/// # Safety
/// See the level 2 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn gbmv<T: Scalar>(
    trans: u8,
    m: i64,
    n: i64,
    kl: i64,
    ku: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) {
    let _ = (trans, m, n, kl, ku, alpha, a, lda, x, incx, beta, y, incy);
    unimplemented!()
}

/// Argument check of GER / GERU / GERC (M 1, N 2, INCX 5, INCY 7, LDA 9).
pub fn ger_check(m: i64, n: i64, incx: i64, incy: i64, lda: i64) -> i32 {
    if m < 0 {
        1
    } else if n < 0 {
        2
    } else if incx == 0 {
        5
    } else if incy == 0 {
        7
    } else if lda < max1(m) {
        9
    } else {
        0
    }
}

/// Argument check of GERU (the same as GER's).
pub fn geru_check(m: i64, n: i64, incx: i64, incy: i64, lda: i64) -> i32 {
    ger_check(m, n, incx, incy, lda)
}

/// Argument check of GERC (the same as GER's).
pub fn gerc_check(m: i64, n: i64, incx: i64, incy: i64, lda: i64) -> i32 {
    ger_check(m, n, incx, incy, lda)
}

/// GERU: `A := alpha*x*y^T + A`, `A` m x n.
///
/// # Safety
/// See the level 2 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn geru<T: Scalar>(
    m: i64,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) {
    let _ = (m, n, alpha, x, incx, y, incy, a, lda);
    unimplemented!()
}

/// GERC: `A := alpha*x*y^H + A`, `A` m x n.
///
/// # Safety
/// See the level 2 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn gerc<T: Scalar>(
    m: i64,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) {
    let _ = (m, n, alpha, x, incx, y, incy, a, lda);
    unimplemented!()
}

/// GER (real types): `A := alpha*x*y^T + A`, the same as GERU.
///
/// # Safety
/// See the level 2 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn ger<T: Scalar>(
    m: i64,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) {
    // SAFETY: the same contract.
    unsafe { geru(m, n, alpha, x, incx, y, incy, a, lda) }
}
