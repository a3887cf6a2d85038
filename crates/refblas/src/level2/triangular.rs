//! The triangular Level 2 routines: TRMV TBMV TPMV (products) and TRSV TBSV TPSV (solves).

use crate::level2::storage::Storage;
use crate::options::{Diag, Trans, Uplo};
use crate::scalar::Scalar;
use crate::strided::{max1, slice, slice_mut, vec_len, Stride};

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
/// See the level 2 Safety section.
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
    let op = Tri {
        solve: false,
        uplo,
        trans,
        diag,
        n,
    };
    // SAFETY: the same contract.
    unsafe { tri(op, a, Storage::Full { lda: lda as usize }, x, incx) }
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
/// See the level 2 Safety section.
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
    let op = Tri {
        solve: false,
        uplo,
        trans,
        diag,
        n,
    };
    // SAFETY: the same contract.
    unsafe {
        tri(
            op,
            a,
            Storage::Band {
                k: k as usize,
                lda: lda as usize,
            },
            x,
            incx,
        )
    }
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
/// See the level 2 Safety section.
pub unsafe fn tpmv<T: Scalar>(
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
    ap: *const T,
    x: *mut T,
    incx: i64,
) {
    let op = Tri {
        solve: false,
        uplo,
        trans,
        diag,
        n,
    };
    // SAFETY: the same contract.
    unsafe { tri(op, ap, Storage::Packed, x, incx) }
}

/// Argument check of TRSV (UPLO 1, TRANS 2, DIAG 3, N 4, LDA 6, INCX 8): TRMV's, in the reference.
pub fn trsv_check(uplo: u8, trans: u8, diag: u8, n: i64, lda: i64, incx: i64) -> i32 {
    trmv_check(uplo, trans, diag, n, lda, incx)
}

/// TRSV: solves `op(A)*x = b`, `b` given in `x` and overwritten, A n x n triangular.
///
/// # Safety
/// See the level 2 Safety section.
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
    let op = Tri {
        solve: true,
        uplo,
        trans,
        diag,
        n,
    };
    // SAFETY: the same contract.
    unsafe { tri(op, a, Storage::Full { lda: lda as usize }, x, incx) }
}

/// Argument check of TBSV (UPLO 1, TRANS 2, DIAG 3, N 4, K 5, LDA 7, INCX 9): TBMV's, in the
/// reference.
pub fn tbsv_check(uplo: u8, trans: u8, diag: u8, n: i64, k: i64, lda: i64, incx: i64) -> i32 {
    tbmv_check(uplo, trans, diag, n, k, lda, incx)
}

/// TBSV: solves `op(A)*x = b`, `b` given in `x` and overwritten, A triangular band with `k` off-diagonals in band storage.
///
/// # Safety
/// See the level 2 Safety section.
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
    let op = Tri {
        solve: true,
        uplo,
        trans,
        diag,
        n,
    };
    // SAFETY: the same contract.
    unsafe {
        tri(
            op,
            a,
            Storage::Band {
                k: k as usize,
                lda: lda as usize,
            },
            x,
            incx,
        )
    }
}

/// Argument check of TPSV (UPLO 1, TRANS 2, DIAG 3, N 4, INCX 7).
pub fn tpsv_check(uplo: u8, trans: u8, diag: u8, n: i64, incx: i64) -> i32 {
    tpmv_check(uplo, trans, diag, n, incx)
}

/// TPSV: solves `op(A)*x = b`, `b` given in `x` and overwritten, A triangular in packed storage.
///
/// # Safety
/// See the level 2 Safety section.
pub unsafe fn tpsv<T: Scalar>(
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
    ap: *const T,
    x: *mut T,
    incx: i64,
) {
    let op = Tri {
        solve: true,
        uplo,
        trans,
        diag,
        n,
    };
    // SAFETY: the same contract.
    unsafe { tri(op, ap, Storage::Packed, x, incx) }
}
/// The options of a triangular matrix-vector product or solve.
struct Tri {
    solve: bool,
    uplo: u8,
    trans: u8,
    diag: u8,
    n: i64,
}

/// TRMV, TBMV, TPMV (`solve == false`: `x := op(A)*x`) and TRSV, TBSV, TPSV (`x := op(A)^-1*x`),
/// in the reference's column orders.
///
/// # Safety
/// See the level 2 Safety section.
unsafe fn tri<T: Scalar>(op: Tri, a: *const T, storage: Storage, x: *mut T, incx: i64) {
    let Tri {
        solve,
        uplo,
        trans,
        diag,
        n,
    } = op;
    if n == 0 {
        return;
    }
    let n = n as usize;
    let incx = incx as isize;
    let sx = Stride::new(n, incx);
    // SAFETY: A spans its storage's length, only read; x spans vec_len(n, incx) elements, written
    // by this routine only.
    let (a, x) = unsafe { (slice(a, storage.len(n)), slice_mut(x, vec_len(n, incx))) };
    let upper = Uplo::assume(uplo) == Uplo::Upper;
    let t = Trans::assume(trans);
    let conj = t == Trans::ConjTrans;
    let unit = Diag::assume(diag) == Diag::Unit;
    let cj = |v: T| if conj { v.conj() } else { v };
    let at = |i: usize, j: usize| a[storage.idx(upper, n, i, j)];
    // Columns in the order the operation needs them: a product of A walks from the end the
    // triangle points away from, a solve from the end it points to; transposition flips both.
    let forward = (upper != solve) == (t == Trans::No);
    let cols: Box<dyn Iterator<Item = usize>> = if forward {
        Box::new(0..n)
    } else {
        Box::new((0..n).rev())
    };
    for j in cols {
        let rows = storage.off_diag(upper, n, j);
        match (t == Trans::No, solve) {
            (true, false) => {
                let temp = x[sx.at(j)];
                for i in rows {
                    x[sx.at(i)] += temp * at(i, j);
                }
                if !unit {
                    x[sx.at(j)] *= at(j, j);
                }
            }
            (true, true) => {
                if !unit {
                    x[sx.at(j)] /= at(j, j);
                }
                let temp = x[sx.at(j)];
                for i in rows {
                    x[sx.at(i)] -= temp * at(i, j);
                }
            }
            (false, false) => {
                let mut temp = x[sx.at(j)];
                if !unit {
                    temp *= cj(at(j, j));
                }
                for i in rows {
                    temp += cj(at(i, j)) * x[sx.at(i)];
                }
                x[sx.at(j)] = temp;
            }
            (false, true) => {
                let mut temp = x[sx.at(j)];
                for i in rows {
                    temp -= cj(at(i, j)) * x[sx.at(i)];
                }
                if !unit {
                    temp /= cj(at(j, j));
                }
                x[sx.at(j)] = temp;
            }
        }
    }
}
