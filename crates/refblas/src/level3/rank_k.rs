//! The rank-k and rank-2k updates SYRK, HERK, SYR2K, HER2K, in one routine: column-oriented
//! loops over the referenced triangle, in the reference's order.

use crate::level3::gemm::gemm_slices;
use crate::options::Trans;
use crate::options::{lsame, Uplo};
use crate::scalar::Scalar;
use crate::strided::{mat_len, max1, scale_by_beta, slice, slice_mut};

/// Argument check of SYRK (UPLO 1, TRANS 2, N 3, K 4, LDA 7, LDC 10). TRANS may be 'N', 'T',
/// or, for a real type only, 'C' (as in the reference SSYRK/DSYRK versus CSYRK/ZSYRK).
pub fn syrk_check<T: Scalar>(uplo: u8, trans: u8, n: i64, k: i64, lda: i64, ldc: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if !rank_k_trans_ok::<T>(trans) {
        2
    } else if n < 0 {
        3
    } else if k < 0 {
        4
    } else if lda < max1(if lsame(trans, b'N') { n } else { k }) {
        7
    } else if ldc < max1(n) {
        10
    } else {
        0
    }
}

/// Argument check of SYR2K (UPLO 1, TRANS 2, N 3, K 4, LDA 7, LDB 9, LDC 12). TRANS may be 'N',
/// 'T', or, for a real type only, 'C'.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub fn syr2k_check<T: Scalar>(
    uplo: u8,
    trans: u8,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
) -> i32 {
    let nrow = max1(if lsame(trans, b'N') { n } else { k });
    if Uplo::parse(uplo).is_none() {
        1
    } else if !rank_k_trans_ok::<T>(trans) {
        2
    } else if n < 0 {
        3
    } else if k < 0 {
        4
    } else if lda < nrow {
        7
    } else if ldb < nrow {
        9
    } else if ldc < max1(n) {
        12
    } else {
        0
    }
}

/// The TRANS values SYRK and SYR2K accept: 'N', 'T', and 'C' for a real type.
fn rank_k_trans_ok<T: Scalar>(trans: u8) -> bool {
    lsame(trans, b'N') || lsame(trans, b'T') || (!T::IS_COMPLEX && lsame(trans, b'C'))
}

/// Argument check of HERK (UPLO 1, TRANS 2 ('N' or 'C'), N 3, K 4, LDA 7, LDC 10).
pub fn herk_check(uplo: u8, trans: u8, n: i64, k: i64, lda: i64, ldc: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if !(lsame(trans, b'N') || lsame(trans, b'C')) {
        2
    } else if n < 0 {
        3
    } else if k < 0 {
        4
    } else if lda < max1(if lsame(trans, b'N') { n } else { k }) {
        7
    } else if ldc < max1(n) {
        10
    } else {
        0
    }
}

/// Argument check of HER2K (UPLO 1, TRANS 2 ('N' or 'C'), N 3, K 4, LDA 7, LDB 9, LDC 12).
pub fn her2k_check(uplo: u8, trans: u8, n: i64, k: i64, lda: i64, ldb: i64, ldc: i64) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if !(lsame(trans, b'N') || lsame(trans, b'C')) {
        2
    } else if n < 0 {
        3
    } else if k < 0 {
        4
    } else if lda < max1(if lsame(trans, b'N') { n } else { k }) {
        7
    } else if ldb < max1(if lsame(trans, b'N') { n } else { k }) {
        9
    } else if ldc < max1(n) {
        12
    } else {
        0
    }
}

/// SYRK: `C := alpha*A*A^T + beta*C` (trans 'N', A n x k) or `alpha*A^T*A + beta*C` (trans 'T',
/// or 'C' for a real type; A k x n); C n x n symmetric, its `uplo` triangle updated.
///
/// # Safety
/// See the level 3 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn syrk<T: Scalar>(
    uplo: u8,
    trans: u8,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) {
    let op = Update {
        herm: false,
        uplo,
        trans,
        n,
        k,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe { rank_update(op, a, lda, None, c, ldc) }
}

/// HERK: `C := alpha*A*A^H + beta*C` (trans 'N', A n x k) or `alpha*A^H*A + beta*C` (trans 'C',
/// A k x n), real alpha and beta; C n x n Hermitian, its `uplo` triangle updated and its
/// diagonal made real.
///
/// # Safety
/// See the level 3 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn herk<T: Scalar>(
    uplo: u8,
    trans: u8,
    n: i64,
    k: i64,
    alpha: T::Real,
    a: *const T,
    lda: i64,
    beta: T::Real,
    c: *mut T,
    ldc: i64,
) {
    let (alpha, beta) = (T::from_real(alpha), T::from_real(beta));
    let op = Update {
        herm: true,
        uplo,
        trans,
        n,
        k,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe { rank_update(op, a, lda, None, c, ldc) }
}

/// SYR2K: `C := alpha*A*B^T + alpha*B*A^T + beta*C` (trans 'N', A and B n x k) or
/// `alpha*A^T*B + alpha*B^T*A + beta*C` (trans 'T', or 'C' for a real type; A and B k x n); C n x n
/// symmetric, its `uplo` triangle updated.
///
/// # Safety
/// See the level 3 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn syr2k<T: Scalar>(
    uplo: u8,
    trans: u8,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) {
    let op = Update {
        herm: false,
        uplo,
        trans,
        n,
        k,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe { rank_update(op, a, lda, Some((b, ldb)), c, ldc) }
}

/// HER2K: `C := alpha*A*B^H + conj(alpha)*B*A^H + beta*C` (trans 'N', A and B n x k) or
/// `alpha*A^H*B + conj(alpha)*B^H*A + beta*C` (trans 'C', A and B k x n), real beta; C n x n
/// Hermitian, its `uplo` triangle updated and its diagonal made real.
///
/// # Safety
/// See the level 3 Safety section.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn her2k<T: Scalar>(
    uplo: u8,
    trans: u8,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T::Real,
    c: *mut T,
    ldc: i64,
) {
    let beta = T::from_real(beta);
    let op = Update {
        herm: true,
        uplo,
        trans,
        n,
        k,
        alpha,
        beta,
    };
    // SAFETY: the same contract.
    unsafe { rank_update(op, a, lda, Some((b, ldb)), c, ldc) }
}

/// The scalar arguments of a rank-k or rank-2k update; `herm` selects HERK/HER2K (conjugated
/// products, a real diagonal) over SYRK/SYR2K.
struct Update<T> {
    herm: bool,
    uplo: u8,
    trans: u8,
    n: i64,
    k: i64,
    alpha: T,
    beta: T,
}

/// SYRK, HERK (`b == None`), SYR2K, HER2K (`b == Some`).
///
/// # Safety
/// See the level 3 Safety section.
unsafe fn rank_update<T: Scalar>(
    op: Update<T>,
    a: *const T,
    lda: i64,
    b: Option<(*const T, i64)>,
    c: *mut T,
    ldc: i64,
) {
    let Update {
        herm,
        uplo,
        trans,
        n,
        k,
        alpha,
        beta,
    } = op;
    if n == 0 || ((alpha.is_zero() || k == 0) && beta == T::one()) {
        return;
    }
    let (n, k, lda, ldc) = (n as usize, k as usize, lda as usize, ldc as usize);
    let upper = Uplo::assume(uplo) == Uplo::Upper;
    let notrans = Trans::assume(trans) == Trans::No;
    // SAFETY: C is n x n with leading dimension ldc, written by this routine only.
    let c = unsafe { slice_mut(c, mat_len(n, n, ldc)) };
    // The rows of column j in the referenced triangle.
    let rows = |j: usize| if upper { 0..j + 1 } else { j..n };
    let real_diag = |c: &mut [T], j: usize| {
        if herm {
            c[j + j * ldc] = T::from_real(c[j + j * ldc].re());
        }
    };
    if alpha.is_zero() {
        for j in 0..n {
            let r = rows(j);
            scale_by_beta(&mut c[r.start + j * ldc..r.end + j * ldc], beta);
            real_diag(c, j);
        }
        return;
    }
    let (ar, ac) = if notrans { (n, k) } else { (k, n) };
    // SAFETY: A (and B) are ar x ac with their leading dimensions, only read.
    let a = unsafe { slice(a, mat_len(ar, ac, lda)) };
    let b = b.map(|(b, ldb)| {
        let ldb = ldb as usize;
        // SAFETY: as above.
        (unsafe { slice(b, mat_len(ar, ac, ldb)) }, ldb)
    });
    let shape = Shape {
        herm,
        upper,
        notrans,
        k,
    };
    if n >= 2 * BLOCK && k > 0 {
        blocked(shape, n, alpha, beta, a, lda, b, c, ldc);
    } else {
        looped(shape, n, alpha, beta, a, lda, b, c, ldc);
    }
}

/// Column-block width of the blocked update: the diagonal blocks run in loops, the rectangles
/// beside them through GEMM.
const BLOCK: usize = 64;

/// The options of a rank-k update past the quick returns.
#[derive(Clone, Copy)]
struct Shape {
    herm: bool,
    upper: bool,
    notrans: bool,
    k: usize,
}

/// The update by column blocks of width BLOCK: the block's rectangle off the diagonal is a
/// GEMM (two for a rank-2k update), its diagonal block the loops of [`looped`].
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
fn blocked<T: Scalar>(
    shape: Shape,
    n: usize,
    alpha: T,
    beta: T,
    a: &[T],
    lda: usize,
    b: Option<(&[T], usize)>,
    c: &mut [T],
    ldc: usize,
) {
    let Shape {
        herm,
        upper,
        notrans,
        k,
    } = shape;
    // C(rows, cols) += alpha * op(X)(rows, :) * op(Y)(cols, :)^T (conjugated for herm), where
    // op(X) is X for 'N' and X^T (X^H) otherwise: one GEMM per term.
    let t = if herm { Trans::ConjTrans } else { Trans::Trans };
    let (ta, tb) = if notrans {
        (Trans::No, t)
    } else {
        (t, Trans::No)
    };
    // Start of row block r0.. of op(X) in X's storage.
    let at = |ld: usize, r0: usize| if notrans { r0 } else { r0 * ld };
    let alpha2 = if herm { alpha.conj() } else { alpha };
    for j0 in (0..n).step_by(BLOCK) {
        let j1 = (j0 + BLOCK).min(n);
        let (r0, r1) = if upper { (0, j0) } else { (j1, n) };
        if r1 > r0 {
            let cr = &mut c[r0 + j0 * ldc..];
            let (m, nb) = (r1 - r0, j1 - j0);
            match b {
                None => gemm_slices(
                    ta,
                    tb,
                    m,
                    nb,
                    k,
                    alpha,
                    &a[at(lda, r0)..],
                    lda,
                    &a[at(lda, j0)..],
                    lda,
                    beta,
                    cr,
                    ldc,
                ),
                Some((b, ldb)) => {
                    gemm_slices(
                        ta,
                        tb,
                        m,
                        nb,
                        k,
                        alpha,
                        &a[at(lda, r0)..],
                        lda,
                        &b[at(ldb, j0)..],
                        ldb,
                        beta,
                        cr,
                        ldc,
                    );
                    gemm_slices(
                        ta,
                        tb,
                        m,
                        nb,
                        k,
                        alpha2,
                        &b[at(ldb, r0)..],
                        ldb,
                        &a[at(lda, j0)..],
                        lda,
                        T::one(),
                        cr,
                        ldc,
                    );
                }
            }
        }
        let b = b.map(|(b, ldb)| (&b[at(ldb, j0)..], ldb));
        looped(
            shape,
            j1 - j0,
            alpha,
            beta,
            &a[at(lda, j0)..],
            lda,
            b,
            &mut c[j0 + j0 * ldc..],
            ldc,
        );
    }
}

/// The update of the n x n triangle of `c` in the reference's loops: columns of A for 'N', dot
/// products down columns otherwise.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
fn looped<T: Scalar>(
    shape: Shape,
    n: usize,
    alpha: T,
    beta: T,
    a: &[T],
    lda: usize,
    b: Option<(&[T], usize)>,
    c: &mut [T],
    ldc: usize,
) {
    let Shape {
        herm,
        upper,
        notrans,
        k,
    } = shape;
    let rows = |j: usize| if upper { 0..j + 1 } else { j..n };
    let real_diag = |c: &mut [T], j: usize| {
        if herm {
            c[j + j * ldc] = T::from_real(c[j + j * ldc].re());
        }
    };
    let cj = |v: T| if herm { v.conj() } else { v };
    // The second term's scalar: conj(alpha) for HER2K, alpha for SYR2K.
    let alpha2 = cj(alpha);
    for j in 0..n {
        let r = rows(j);
        if notrans {
            // C(:, j) += sum_l A(:, l) * alpha*cj(B(j, l)) (+ B(:, l) * cj(alpha*A(j, l))).
            scale_by_beta(&mut c[r.start + j * ldc..r.end + j * ldc], beta);
            real_diag(c, j);
            for l in 0..k {
                match b {
                    None => {
                        let temp = alpha * cj(a[j + l * lda]);
                        for i in r.clone() {
                            c[i + j * ldc] += temp * a[i + l * lda];
                        }
                    }
                    Some((b, ldb)) => {
                        let temp1 = alpha * cj(b[j + l * ldb]);
                        let temp2 = cj(alpha * a[j + l * lda]);
                        for i in r.clone() {
                            c[i + j * ldc] += a[i + l * lda] * temp1 + b[i + l * ldb] * temp2;
                        }
                    }
                }
            }
            real_diag(c, j);
        } else {
            // C(i, j) = alpha * cj(A(:, i)) . B(:, j) (+ conj-alpha * cj(B(:, i)) . A(:, j)).
            for i in r {
                let mut v = match b {
                    None => {
                        let mut temp = T::zero();
                        for l in 0..k {
                            temp += cj(a[l + i * lda]) * a[l + j * lda];
                        }
                        alpha * temp
                    }
                    Some((b, ldb)) => {
                        let (mut temp1, mut temp2) = (T::zero(), T::zero());
                        for l in 0..k {
                            temp1 += cj(a[l + i * lda]) * b[l + j * ldb];
                            temp2 += cj(b[l + i * ldb]) * a[l + j * lda];
                        }
                        alpha * temp1 + alpha2 * temp2
                    }
                };
                let old = c[i + j * ldc];
                if herm && i == j {
                    v = T::from_real(v.re());
                    if !beta.is_zero() {
                        v += beta * T::from_real(old.re());
                    }
                } else if !beta.is_zero() {
                    v += beta * old;
                }
                c[i + j * ldc] = v;
            }
        }
    }
}
