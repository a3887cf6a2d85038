//! The symmetric and Hermitian Level 2 routines: HEMV HBMV HPMV SYMV SBMV SPMV, HER HPR HER2
//! HPR2 SYR SPR SYR2 SPR2. Each is generic over every scalar type (for a real type the Hermitian
//! routine is the symmetric one).

use crate::level2::storage::Storage;
use crate::options::Uplo;
use crate::scalar::Scalar;
use crate::strided::{max1, slice, slice_mut, vec_len, Stride};

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
/// See the level 2 Safety section.
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
    let op = MatVec {
        herm: true,
        uplo,
        n,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe { sym_mv(op, a, Storage::Full { lda: lda as usize }, x, incx, y, incy) }
}

/// Argument check of SYMV (UPLO 1, N 2, LDA 5, INCX 7, INCY 10): HEMV's, in the reference.
pub fn symv_check(uplo: u8, n: i64, lda: i64, incx: i64, incy: i64) -> i32 {
    hemv_check(uplo, n, lda, incx, incy)
}

/// SYMV: `y := alpha*A*x + beta*y`, A symmetric n x n, one triangle referenced.
///
/// # Safety
/// See the level 2 Safety section.
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
    let op = MatVec {
        herm: false,
        uplo,
        n,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe { sym_mv(op, a, Storage::Full { lda: lda as usize }, x, incx, y, incy) }
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
/// See the level 2 Safety section.
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
    let op = MatVec {
        herm: true,
        uplo,
        n,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe {
        sym_mv(
            op,
            a,
            Storage::Band {
                k: k as usize,
                lda: lda as usize,
            },
            x,
            incx,
            y,
            incy,
        )
    }
}

/// Argument check of SBMV (UPLO 1, N 2, K 3, LDA 6, INCX 8, INCY 11): HBMV's, in the
/// reference.
pub fn sbmv_check(uplo: u8, n: i64, k: i64, lda: i64, incx: i64, incy: i64) -> i32 {
    hbmv_check(uplo, n, k, lda, incx, incy)
}

/// SBMV: `y := alpha*A*x + beta*y`, A symmetric band matrix with `k` off-diagonals, one triangle in band storage.
///
/// # Safety
/// See the level 2 Safety section.
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
    let op = MatVec {
        herm: false,
        uplo,
        n,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe {
        sym_mv(
            op,
            a,
            Storage::Band {
                k: k as usize,
                lda: lda as usize,
            },
            x,
            incx,
            y,
            incy,
        )
    }
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
/// See the level 2 Safety section.
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
    let op = MatVec {
        herm: true,
        uplo,
        n,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe { sym_mv(op, ap, Storage::Packed, x, incx, y, incy) }
}

/// Argument check of SPMV (UPLO 1, N 2, INCX 6, INCY 9): HPMV's, in the reference.
pub fn spmv_check(uplo: u8, n: i64, incx: i64, incy: i64) -> i32 {
    hpmv_check(uplo, n, incx, incy)
}

/// SPMV: `y := alpha*A*x + beta*y`, A symmetric n x n in packed storage.
///
/// # Safety
/// See the level 2 Safety section.
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
    let op = MatVec {
        herm: false,
        uplo,
        n,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe { sym_mv(op, ap, Storage::Packed, x, incx, y, incy) }
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
/// See the level 2 Safety section.
pub unsafe fn her<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T::Real,
    x: *const T,
    incx: i64,
    a: *mut T,
    lda: i64,
) {
    // SAFETY: the same contract.
    unsafe {
        sym_rank(
            Rank {
                herm: true,
                uplo,
                n,
                alpha: T::from_real(alpha),
            },
            x,
            incx,
            None,
            a,
            Storage::Full { lda: lda as usize },
        )
    }
}

/// Argument check of SYR (UPLO 1, N 2, INCX 5, LDA 7): HER's, in the reference.
pub fn syr_check(uplo: u8, n: i64, incx: i64, lda: i64) -> i32 {
    her_check(uplo, n, incx, lda)
}

/// SYR: `A := alpha*x*x^T + A`, one triangle of the n x n A updated.
///
/// # Safety
/// See the level 2 Safety section.
pub unsafe fn syr<T: Scalar>(
    uplo: u8,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    a: *mut T,
    lda: i64,
) {
    // SAFETY: the same contract.
    unsafe {
        sym_rank(
            Rank {
                herm: false,
                uplo,
                n,
                alpha,
            },
            x,
            incx,
            None,
            a,
            Storage::Full { lda: lda as usize },
        )
    }
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
/// See the level 2 Safety section.
pub unsafe fn hpr<T: Scalar>(uplo: u8, n: i64, alpha: T::Real, x: *const T, incx: i64, ap: *mut T) {
    // SAFETY: the same contract.
    unsafe {
        sym_rank(
            Rank {
                herm: true,
                uplo,
                n,
                alpha: T::from_real(alpha),
            },
            x,
            incx,
            None,
            ap,
            Storage::Packed,
        )
    }
}

/// Argument check of SPR (UPLO 1, N 2, INCX 5): HPR's, in the reference.
pub fn spr_check(uplo: u8, n: i64, incx: i64) -> i32 {
    hpr_check(uplo, n, incx)
}

/// SPR: `A := alpha*x*x^T + A`, A in packed storage.
///
/// # Safety
/// See the level 2 Safety section.
pub unsafe fn spr<T: Scalar>(uplo: u8, n: i64, alpha: T, x: *const T, incx: i64, ap: *mut T) {
    // SAFETY: the same contract.
    unsafe {
        sym_rank(
            Rank {
                herm: false,
                uplo,
                n,
                alpha,
            },
            x,
            incx,
            None,
            ap,
            Storage::Packed,
        )
    }
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
/// See the level 2 Safety section.
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
    let op = Rank {
        herm: true,
        uplo,
        n,
        alpha,
    };
    // SAFETY: the same contract.
    unsafe {
        sym_rank(
            op,
            x,
            incx,
            Some((y, incy)),
            a,
            Storage::Full { lda: lda as usize },
        )
    }
}

/// Argument check of SYR2 (UPLO 1, N 2, INCX 5, INCY 7, LDA 9): HER2's, in the reference.
pub fn syr2_check(uplo: u8, n: i64, incx: i64, incy: i64, lda: i64) -> i32 {
    her2_check(uplo, n, incx, incy, lda)
}

/// SYR2: `A := alpha*x*y^T + alpha*y*x^T + A`, one triangle of the n x n A updated.
///
/// # Safety
/// See the level 2 Safety section.
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
    let op = Rank {
        herm: false,
        uplo,
        n,
        alpha,
    };
    // SAFETY: the same contract.
    unsafe {
        sym_rank(
            op,
            x,
            incx,
            Some((y, incy)),
            a,
            Storage::Full { lda: lda as usize },
        )
    }
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
/// See the level 2 Safety section.
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
    let op = Rank {
        herm: true,
        uplo,
        n,
        alpha,
    };
    // SAFETY: the same contract.
    unsafe { sym_rank(op, x, incx, Some((y, incy)), ap, Storage::Packed) }
}

/// Argument check of SPR2 (UPLO 1, N 2, INCX 5, INCY 7): HPR2's, in the reference.
pub fn spr2_check(uplo: u8, n: i64, incx: i64, incy: i64) -> i32 {
    hpr2_check(uplo, n, incx, incy)
}

/// SPR2: `A := alpha*x*y^T + alpha*y*x^T + A`, A in packed storage.
///
/// # Safety
/// See the level 2 Safety section.
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
    let op = Rank {
        herm: false,
        uplo,
        n,
        alpha,
    };
    // SAFETY: the same contract.
    unsafe { sym_rank(op, x, incx, Some((y, incy)), ap, Storage::Packed) }
}
/// The scalar arguments of a symmetric or Hermitian matrix-vector product.
struct MatVec<T> {
    herm: bool,
    uplo: u8,
    n: i64,
    alpha: T,
    beta: T,
}

/// SYMV, SBMV, SPMV, and with `herm` HEMV, HBMV, HPMV: `y := alpha*A*x + beta*y`, in the
/// reference's order (each stored column used once, for its column and its reflected row).
///
/// # Safety
/// See the level 2 Safety section.
unsafe fn sym_mv<T: Scalar>(
    op: MatVec<T>,
    a: *const T,
    storage: Storage,
    x: *const T,
    incx: i64,
    y: *mut T,
    incy: i64,
) {
    let MatVec {
        herm,
        uplo,
        n,
        alpha,
        beta,
    } = op;
    if n == 0 || (alpha.is_zero() && beta == T::one()) {
        return;
    }
    let n = n as usize;
    let (incx, incy) = (incx as isize, incy as isize);
    let (sx, sy) = (Stride::new(n, incx), Stride::new(n, incy));
    // SAFETY: y spans vec_len(n, incy) elements, written by this routine only.
    let y = unsafe { slice_mut(y, vec_len(n, incy)) };
    if beta != T::one() {
        scale_vec(y, sy, n, beta);
    }
    if alpha.is_zero() {
        return;
    }
    // SAFETY: A spans its storage's length, x vec_len(n, incx) elements; both only read.
    let (a, x) = unsafe { (slice(a, storage.len(n)), slice(x, vec_len(n, incx))) };
    let upper = Uplo::assume(uplo) == Uplo::Upper;
    let cj = |v: T| if herm { v.conj() } else { v };
    for j in 0..n {
        let temp1 = alpha * x[sx.at(j)];
        let mut temp2 = T::zero();
        for i in storage.off_diag(upper, n, j) {
            let aij = a[storage.idx(upper, n, i, j)];
            y[sy.at(i)] += temp1 * aij;
            temp2 += cj(aij) * x[sx.at(i)];
        }
        let d = a[storage.idx(upper, n, j, j)];
        let d = if herm { T::from_real(d.re()) } else { d };
        y[sy.at(j)] += temp1 * d + alpha * temp2;
    }
}

/// `y := beta*y` over a strided vector (zeros, not read, when `beta == 0`).
pub(crate) fn scale_vec<T: Scalar>(y: &mut [T], sy: Stride, n: usize, beta: T) {
    if beta.is_zero() {
        for i in 0..n {
            y[sy.at(i)] = T::zero();
        }
    } else {
        for i in 0..n {
            y[sy.at(i)] *= beta;
        }
    }
}

/// The scalar arguments of a symmetric or Hermitian rank-1 or rank-2 update.
struct Rank<T> {
    herm: bool,
    uplo: u8,
    n: i64,
    alpha: T,
}

/// SYR, SPR (`y == None`), SYR2, SPR2, and with `herm` HER, HPR, HER2, HPR2:
/// `A := alpha*x*cj(x)^T + A` or `A := alpha*x*cj(y)^T + cj(alpha)*y*cj(x)^T + A` on the stored
/// triangle (for `herm` its diagonal made real).
///
/// # Safety
/// See the level 2 Safety section.
unsafe fn sym_rank<T: Scalar>(
    op: Rank<T>,
    x: *const T,
    incx: i64,
    y: Option<(*const T, i64)>,
    a: *mut T,
    storage: Storage,
) {
    let Rank {
        herm,
        uplo,
        n,
        alpha,
    } = op;
    if n == 0 || alpha.is_zero() {
        return;
    }
    let n = n as usize;
    let incx = incx as isize;
    let sx = Stride::new(n, incx);
    // SAFETY: A spans its storage's length, written by this routine only; x (and y) span their
    // vec_len elements, only read.
    let (a, x) = unsafe { (slice_mut(a, storage.len(n)), slice(x, vec_len(n, incx))) };
    let y = y.map(|(y, incy)| {
        let incy = incy as isize;
        // SAFETY: as above.
        (unsafe { slice(y, vec_len(n, incy)) }, Stride::new(n, incy))
    });
    let upper = Uplo::assume(uplo) == Uplo::Upper;
    let cj = |v: T| if herm { v.conj() } else { v };
    for j in 0..n {
        let rows = storage.off_diag(upper, n, j);
        let rows = if upper {
            rows.start..j + 1
        } else {
            j..rows.end
        };
        match y {
            None => {
                let temp = alpha * cj(x[sx.at(j)]);
                for i in rows {
                    a[storage.idx(upper, n, i, j)] += x[sx.at(i)] * temp;
                }
            }
            Some((y, sy)) => {
                let temp1 = alpha * cj(y[sy.at(j)]);
                let temp2 = cj(alpha * x[sx.at(j)]);
                for i in rows {
                    a[storage.idx(upper, n, i, j)] += x[sx.at(i)] * temp1 + y[sy.at(i)] * temp2;
                }
            }
        }
        if herm {
            let d = &mut a[storage.idx(upper, n, j, j)];
            *d = T::from_real(d.re());
        }
    }
}
