//! GEMV, GBMV, GER / GERU / GERC: general and band matrices.

use crate::level2::hermitian::scale_vec;
use crate::options::Trans;
use crate::scalar::Scalar;
use crate::strided::{mat_len, max1, slice, slice_mut, vec_len, Stride};

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
    // SAFETY: the same contract.
    unsafe { band_mv(trans, m, n, None, alpha, a, lda, x, incx, beta, y, incy) }
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
    // SAFETY: the same contract.
    unsafe {
        band_mv(
            trans,
            m,
            n,
            Some((kl, ku)),
            alpha,
            a,
            lda,
            x,
            incx,
            beta,
            y,
            incy,
        )
    }
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
    // SAFETY: the same contract.
    unsafe { rank1(false, m, n, alpha, x, incx, y, incy, a, lda) }
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
    // SAFETY: the same contract.
    unsafe { rank1(true, m, n, alpha, x, incx, y, incy, a, lda) }
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
/// GEMV (`band == None`) and GBMV (`band == Some((kl, ku))`): `y := alpha*op(A)*x + beta*y`.
///
/// # Safety
/// See the level 2 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
unsafe fn band_mv<T: Scalar>(
    trans: u8,
    m: i64,
    n: i64,
    band: Option<(i64, i64)>,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) {
    if m == 0 || n == 0 || (alpha.is_zero() && beta == T::one()) {
        return;
    }
    let (m, n, lda) = (m as usize, n as usize, lda as usize);
    let t = Trans::assume(trans);
    let (lenx, leny) = if t == Trans::No { (n, m) } else { (m, n) };
    let (incx, incy) = (incx as isize, incy as isize);
    let (sx, sy) = (Stride::new(lenx, incx), Stride::new(leny, incy));
    // SAFETY: y spans vec_len(leny, incy) elements, written by this routine only.
    let y = unsafe { slice_mut(y, vec_len(leny, incy)) };
    if beta != T::one() {
        scale_vec(y, sy, leny, beta);
    }
    if alpha.is_zero() {
        return;
    }
    // Rows of column j stored, and the index of entry (i, j): all rows at i + j*lda for a full
    // matrix; rows j-ku..=j+kl at row ku + i - j of the band storage.
    let full = band.is_none();
    let (kl, ku) = band.map_or((0, 0), |(kl, ku)| (kl as usize, ku as usize));
    let rows = |j: usize| {
        if full {
            0..m
        } else {
            j.saturating_sub(ku)..m.min(j + kl + 1)
        }
    };
    let at = |i: usize, j: usize| {
        if full {
            i + j * lda
        } else {
            ku + i - j + j * lda
        }
    };
    let a_len = match band {
        Some(_) => mat_len(kl + ku + 1, n, lda),
        None => mat_len(m, n, lda),
    };
    // SAFETY: A spans a_len elements, x vec_len(lenx, incx); both only read.
    let (a, x) = unsafe { (slice(a, a_len), slice(x, vec_len(lenx, incx))) };
    match t {
        Trans::No => {
            for j in 0..n {
                let temp = alpha * x[sx.at(j)];
                for i in rows(j) {
                    y[sy.at(i)] += temp * a[at(i, j)];
                }
            }
        }
        Trans::Trans | Trans::ConjTrans => {
            let conj = t == Trans::ConjTrans;
            for j in 0..n {
                let mut temp = T::zero();
                for i in rows(j) {
                    let aij = a[at(i, j)];
                    temp += if conj { aij.conj() } else { aij } * x[sx.at(i)];
                }
                y[sy.at(j)] += alpha * temp;
            }
        }
    }
}

/// GERU (`conj == false`) and GERC: `A := alpha*x*y^T + A` or `alpha*x*y^H + A`.
///
/// # Safety
/// See the level 2 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
unsafe fn rank1<T: Scalar>(
    conj: bool,
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
    if m == 0 || n == 0 || alpha.is_zero() {
        return;
    }
    let (m, n, lda) = (m as usize, n as usize, lda as usize);
    let (incx, incy) = (incx as isize, incy as isize);
    let (sx, sy) = (Stride::new(m, incx), Stride::new(n, incy));
    // SAFETY: A spans mat_len(m, n, lda) elements, written by this routine only; x and y span
    // their vec_len elements, only read.
    let (a, x, y) = unsafe {
        (
            slice_mut(a, mat_len(m, n, lda)),
            slice(x, vec_len(m, incx)),
            slice(y, vec_len(n, incy)),
        )
    };
    for j in 0..n {
        let yj = y[sy.at(j)];
        let temp = alpha * if conj { yj.conj() } else { yj };
        for i in 0..m {
            a[i + j * lda] += x[sx.at(i)] * temp;
        }
    }
}
