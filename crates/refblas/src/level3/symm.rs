//! SYMM and HEMM: a symmetric or Hermitian matrix times a general one.
//!
//! The referenced triangle of A is expanded, a panel of PANEL columns (side 'L') or rows (side
//! 'R') at a time, into full storage (the diagonal's imaginary part dropped for HEMM, as the
//! reference does), and each panel's product runs through GEMM. The expansion reads exactly the
//! elements the reference reads, costs `na^2` of the `na^2 * n` work, and holds at most
//! `na * PANEL` elements, so a huge A is not copied whole.

use crate::level3::gemm::gemm_slices;
use crate::options::{lsame, Side, Trans, Uplo};
use crate::scalar::Scalar;
use crate::strided::{mat_len, max1, scale_by_beta, slice, slice_mut};

/// Width of the expanded panels of A.
const PANEL: usize = 256;

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

/// SYMM: `C := alpha*A*B + beta*C` (side 'L') or `alpha*B*A + beta*C` (side 'R'), A symmetric
/// (m x m or n x n), one triangle referenced, B and C m x n.
///
/// # Safety
/// See the level 3 Safety section.
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
    // SAFETY: the same contract.
    unsafe { symm_or_hemm(false, side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc) }
}

/// HEMM: `C := alpha*A*B + beta*C` (side 'L') or `alpha*B*A + beta*C` (side 'R'), A Hermitian
/// (m x m or n x n), one triangle referenced, the imaginary part of its diagonal not read.
///
/// # Safety
/// See the level 3 Safety section.
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
    // SAFETY: the same contract.
    unsafe { symm_or_hemm(true, side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc) }
}

/// Element (i, j) of the full symmetric (or, with `herm`, Hermitian) matrix whose `uplo`
/// triangle is stored in `a`.
#[inline(always)]
pub(crate) fn sym_at<T: Scalar>(
    herm: bool,
    uplo: Uplo,
    a: &[T],
    lda: usize,
    i: usize,
    j: usize,
) -> T {
    if i == j {
        let d = a[i + j * lda];
        return if herm { T::from_real(d.re()) } else { d };
    }
    let stored = if uplo == Uplo::Upper { i < j } else { i > j };
    if stored {
        a[i + j * lda]
    } else {
        let v = a[j + i * lda];
        if herm {
            v.conj()
        } else {
            v
        }
    }
}

/// SYMM (`herm == false`) or HEMM.
///
/// # Safety
/// See the level 3 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
unsafe fn symm_or_hemm<T: Scalar>(
    herm: bool,
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
    if m == 0 || n == 0 || (alpha.is_zero() && beta == T::one()) {
        return;
    }
    let (m, n) = (m as usize, n as usize);
    let (lda, ldb, ldc) = (lda as usize, ldb as usize, ldc as usize);
    let (side, uplo) = (Side::assume(side), Uplo::assume(uplo));
    // SAFETY: C is m x n with leading dimension ldc, written by this routine only.
    let c = unsafe { slice_mut(c, mat_len(m, n, ldc)) };
    if alpha.is_zero() {
        for j in 0..n {
            scale_by_beta(&mut c[j * ldc..j * ldc + m], beta);
        }
        return;
    }
    let na = if side == Side::Left { m } else { n };
    // SAFETY: A is na x na with leading dimension lda, B is m x n with ldb; both only read.
    let (a, b) = unsafe { (slice(a, mat_len(na, na, lda)), slice(b, mat_len(m, n, ldb))) };
    // A's columns (side 'L') or rows (side 'R') by panels of PANEL, each expanded and multiplied
    // through GEMM: C = alpha * sum_P A(:, P) B(P, :) (or B(:, P) A(P, :)) + beta * C, with beta
    // applied by the first panel only.
    let no = Trans::No;
    let mut panel = Vec::with_capacity(na * PANEL.min(na));
    for p0 in (0..na).step_by(PANEL) {
        let p1 = (p0 + PANEL).min(na);
        let w = p1 - p0;
        let beta_p = if p0 == 0 { beta } else { T::one() };
        panel.clear();
        if side == Side::Left {
            // A(:, P), na x w, leading dimension na.
            for j in p0..p1 {
                panel.extend((0..na).map(|i| sym_at(herm, uplo, a, lda, i, j)));
            }
            gemm_slices(
                no,
                no,
                m,
                n,
                w,
                alpha,
                &panel,
                na,
                &b[p0..],
                ldb,
                beta_p,
                c,
                ldc,
            );
        } else {
            // A(P, :), w x na, leading dimension w.
            for j in 0..na {
                panel.extend((p0..p1).map(|i| sym_at(herm, uplo, a, lda, i, j)));
            }
            gemm_slices(
                no,
                no,
                m,
                n,
                w,
                alpha,
                &b[p0 * ldb..],
                ldb,
                &panel,
                w,
                beta_p,
                c,
                ldc,
            );
        }
    }
}
