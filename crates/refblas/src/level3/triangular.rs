//! TRMM and TRSM: a triangular matrix times, or solved against, a general one, in the
//! reference's column-oriented loops.

use crate::options::{lsame, Diag, Side, Trans, Uplo};
use crate::scalar::Scalar;
use crate::strided::{mat_len, max1, slice, slice_mut};

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

/// TRMM: `B := alpha*op(A)*B` (side 'L', A m x m) or `alpha*B*op(A)` (side 'R', A n x n), A
/// triangular (`diag == 'U'`: unit diagonal, not read), B m x n.
///
/// # Safety
/// See the level 3 Safety section.
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
    // SAFETY: the same contract.
    let Some(t) = (unsafe { Tri::new(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb) })
    else {
        return;
    };
    let Tri {
        left,
        upper,
        trans,
        conj,
        unit,
        m,
        n,
        a,
        lda,
        b,
        ldb,
        ..
    } = t;
    let cj = |v: T| if conj { v.conj() } else { v };
    let dg = |i: usize| if unit { T::one() } else { cj(a[i + i * lda]) };
    match (left, trans, upper) {
        (true, false, true) => {
            for j in 0..n {
                for k in 0..m {
                    let temp = alpha * b[k + j * ldb];
                    for i in 0..k {
                        b[i + j * ldb] += temp * a[i + k * lda];
                    }
                    b[k + j * ldb] = temp * dg(k);
                }
            }
        }
        (true, false, false) => {
            for j in 0..n {
                for k in (0..m).rev() {
                    let temp = alpha * b[k + j * ldb];
                    b[k + j * ldb] = temp * dg(k);
                    for i in k + 1..m {
                        b[i + j * ldb] += temp * a[i + k * lda];
                    }
                }
            }
        }
        (true, true, true) => {
            for j in 0..n {
                for i in (0..m).rev() {
                    let mut temp = b[i + j * ldb] * dg(i);
                    for k in 0..i {
                        temp += cj(a[k + i * lda]) * b[k + j * ldb];
                    }
                    b[i + j * ldb] = alpha * temp;
                }
            }
        }
        (true, true, false) => {
            for j in 0..n {
                for i in 0..m {
                    let mut temp = b[i + j * ldb] * dg(i);
                    for k in i + 1..m {
                        temp += cj(a[k + i * lda]) * b[k + j * ldb];
                    }
                    b[i + j * ldb] = alpha * temp;
                }
            }
        }
        (false, false, true) => {
            for j in (0..n).rev() {
                scale_col(b, ldb, m, j, alpha * dg(j));
                for k in 0..j {
                    axpy_col(b, ldb, m, alpha * a[k + j * lda], k, j);
                }
            }
        }
        (false, false, false) => {
            for j in 0..n {
                scale_col(b, ldb, m, j, alpha * dg(j));
                for k in j + 1..n {
                    axpy_col(b, ldb, m, alpha * a[k + j * lda], k, j);
                }
            }
        }
        (false, true, true) => {
            for k in 0..n {
                for j in 0..k {
                    axpy_col(b, ldb, m, alpha * cj(a[j + k * lda]), k, j);
                }
                scale_col(b, ldb, m, k, alpha * dg(k));
            }
        }
        (false, true, false) => {
            for k in (0..n).rev() {
                for j in k + 1..n {
                    axpy_col(b, ldb, m, alpha * cj(a[j + k * lda]), k, j);
                }
                scale_col(b, ldb, m, k, alpha * dg(k));
            }
        }
    }
}

/// TRSM: solves `op(A)*X = alpha*B` (side 'L', A m x m) or `X*op(A) = alpha*B` (side 'R', A n x n)
/// for X, which overwrites B; A triangular (`diag == 'U'`: unit diagonal, not read), B m x n. No
/// test for singularity is made.
///
/// # Safety
/// See the level 3 Safety section.
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
    // SAFETY: the same contract.
    let Some(t) = (unsafe { Tri::new(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb) })
    else {
        return;
    };
    let Tri {
        left,
        upper,
        trans,
        conj,
        unit,
        m,
        n,
        a,
        lda,
        b,
        ldb,
        ..
    } = t;
    let cj = |v: T| if conj { v.conj() } else { v };
    let one = T::one();
    match (left, trans, upper) {
        (true, false, true) => {
            for j in 0..n {
                scale_col(b, ldb, m, j, alpha);
                for k in (0..m).rev() {
                    if !unit {
                        b[k + j * ldb] /= a[k + k * lda];
                    }
                    let bk = b[k + j * ldb];
                    for i in 0..k {
                        b[i + j * ldb] -= bk * a[i + k * lda];
                    }
                }
            }
        }
        (true, false, false) => {
            for j in 0..n {
                scale_col(b, ldb, m, j, alpha);
                for k in 0..m {
                    if !unit {
                        b[k + j * ldb] /= a[k + k * lda];
                    }
                    let bk = b[k + j * ldb];
                    for i in k + 1..m {
                        b[i + j * ldb] -= bk * a[i + k * lda];
                    }
                }
            }
        }
        (true, true, true) => {
            for j in 0..n {
                for i in 0..m {
                    let mut temp = alpha * b[i + j * ldb];
                    for k in 0..i {
                        temp -= cj(a[k + i * lda]) * b[k + j * ldb];
                    }
                    if !unit {
                        temp /= cj(a[i + i * lda]);
                    }
                    b[i + j * ldb] = temp;
                }
            }
        }
        (true, true, false) => {
            for j in 0..n {
                for i in (0..m).rev() {
                    let mut temp = alpha * b[i + j * ldb];
                    for k in i + 1..m {
                        temp -= cj(a[k + i * lda]) * b[k + j * ldb];
                    }
                    if !unit {
                        temp /= cj(a[i + i * lda]);
                    }
                    b[i + j * ldb] = temp;
                }
            }
        }
        (false, false, true) => {
            for j in 0..n {
                scale_col(b, ldb, m, j, alpha);
                for k in 0..j {
                    axpy_col(b, ldb, m, -a[k + j * lda], k, j);
                }
                if !unit {
                    scale_col(b, ldb, m, j, one / a[j + j * lda]);
                }
            }
        }
        (false, false, false) => {
            for j in (0..n).rev() {
                scale_col(b, ldb, m, j, alpha);
                for k in j + 1..n {
                    axpy_col(b, ldb, m, -a[k + j * lda], k, j);
                }
                if !unit {
                    scale_col(b, ldb, m, j, one / a[j + j * lda]);
                }
            }
        }
        (false, true, true) => {
            for k in (0..n).rev() {
                if !unit {
                    scale_col(b, ldb, m, k, one / cj(a[k + k * lda]));
                }
                for j in 0..k {
                    axpy_col(b, ldb, m, -cj(a[j + k * lda]), k, j);
                }
                scale_col(b, ldb, m, k, alpha);
            }
        }
        (false, true, false) => {
            for k in 0..n {
                if !unit {
                    scale_col(b, ldb, m, k, one / cj(a[k + k * lda]));
                }
                for j in k + 1..n {
                    axpy_col(b, ldb, m, -cj(a[j + k * lda]), k, j);
                }
                scale_col(b, ldb, m, k, alpha);
            }
        }
    }
}

/// The decoded arguments of TRMM / TRSM, past the quick returns.
struct Tri<'a, T> {
    left: bool,
    upper: bool,
    /// op(A) is A^T or A^H.
    trans: bool,
    /// op(A) is A^H.
    conj: bool,
    unit: bool,
    m: usize,
    n: usize,
    a: &'a [T],
    lda: usize,
    b: &'a mut [T],
    ldb: usize,
}

impl<'a, T: Scalar> Tri<'a, T> {
    /// Decodes the arguments; `None` when the call is done already: a zero dimension, or
    /// `alpha == 0` (B is then zeroed without reading A or B).
    ///
    /// # Safety
    /// See the level 3 Safety section.
    #[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
    unsafe fn new(
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
    ) -> Option<Tri<'a, T>> {
        if m == 0 || n == 0 {
            return None;
        }
        let (m, n, lda, ldb) = (m as usize, n as usize, lda as usize, ldb as usize);
        // SAFETY: B is m x n with leading dimension ldb, written by this routine only.
        let b = unsafe { slice_mut(b, mat_len(m, n, ldb)) };
        if alpha.is_zero() {
            for j in 0..n {
                b[j * ldb..j * ldb + m].fill(T::zero());
            }
            return None;
        }
        let left = Side::assume(side) == Side::Left;
        let na = if left { m } else { n };
        let t = Trans::assume(transa);
        // SAFETY: A is na x na with leading dimension lda, only read.
        let a = unsafe { slice(a, mat_len(na, na, lda)) };
        Some(Tri {
            left,
            upper: Uplo::assume(uplo) == Uplo::Upper,
            trans: t != Trans::No,
            conj: t == Trans::ConjTrans && T::IS_COMPLEX,
            unit: Diag::assume(diag) == Diag::Unit,
            m,
            n,
            a,
            lda,
            b,
            ldb,
        })
    }
}

/// Column `j` of B (m rows) times `s`, skipped when `s == 1`.
fn scale_col<T: Scalar>(b: &mut [T], ldb: usize, m: usize, j: usize, s: T) {
    if s != T::one() {
        for v in &mut b[j * ldb..j * ldb + m] {
            *v *= s;
        }
    }
}

/// Column `j` of B (m rows) plus `s` times column `k` (`k != j`).
fn axpy_col<T: Scalar>(b: &mut [T], ldb: usize, m: usize, s: T, k: usize, j: usize) {
    for i in 0..m {
        let v = b[i + k * ldb];
        b[i + j * ldb] += s * v;
    }
}
