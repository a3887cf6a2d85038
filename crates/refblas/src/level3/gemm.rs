//! GEMM, and GEMMT (one triangle of GEMM's C).

use crate::options::{lsame, Trans, Uplo};
use crate::scalar::Scalar;
use crate::strided::{mat_len, max1, scale_by_beta, slice, slice_mut};

/// Argument check of GEMM (TRANSA 1, TRANSB 2, M 3, N 4, K 5, LDA 8, LDB 10, LDC 13).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub fn gemm_check(
    transa: u8,
    transb: u8,
    m: i64,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
) -> i32 {
    if Trans::parse(transa).is_none() {
        1
    } else if Trans::parse(transb).is_none() {
        2
    } else if m < 0 {
        3
    } else if n < 0 {
        4
    } else if k < 0 {
        5
    } else if lda < max1(if lsame(transa, b'N') { m } else { k }) {
        8
    } else if ldb < max1(if lsame(transb, b'N') { k } else { n }) {
        10
    } else if ldc < max1(m) {
        13
    } else {
        0
    }
}

/// Below this many multiply-adds (`m*n*k`) GEMM runs in plain loops: the `gemm` crate's packing
/// costs more than it saves on the tiny products the BLAS test programs make by the thousand.
const BLOCKED_MIN_FLOPS: usize = 32 * 32 * 32;

/// GEMM: `C := alpha*op(A)*op(B) + beta*C`, C m x n, op(A) m x k, op(B) k x n.
///
/// # Safety
/// See the level 3 Safety section (A is m x k for `transa == 'N'`, else k x m; B is k x n for
/// `transb == 'N'`, else n x k; C is m x n).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn gemm<T: Scalar>(
    transa: u8,
    transb: u8,
    m: i64,
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
    if m == 0 || n == 0 || ((alpha.is_zero() || k == 0) && beta == T::one()) {
        return;
    }
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (lda, ldb, ldc) = (lda as usize, ldb as usize, ldc as usize);
    let (ta, tb) = (Trans::assume(transa), Trans::assume(transb));
    // SAFETY: C is m x n with leading dimension ldc, written by this routine only.
    let c = unsafe { slice_mut(c, mat_len(m, n, ldc)) };
    if alpha.is_zero() || k == 0 {
        for j in 0..n {
            scale_by_beta(&mut c[j * ldc..j * ldc + m], beta);
        }
        return;
    }
    let (ar, ac) = if ta == Trans::No { (m, k) } else { (k, m) };
    let (br, bc) = if tb == Trans::No { (k, n) } else { (n, k) };
    // SAFETY: A is ar x ac with leading dimension lda, B is br x bc with ldb; both only read.
    let (a, b) = unsafe {
        (
            slice(a, mat_len(ar, ac, lda)),
            slice(b, mat_len(br, bc, ldb)),
        )
    };
    gemm_slices(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/// GEMM over slices, for `m, n, k > 0` and `alpha != 0` (the other Level 3 routines reuse it).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub(crate) fn gemm_slices<T: Scalar>(
    ta: Trans,
    tb: Trans,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &[T],
    lda: usize,
    b: &[T],
    ldb: usize,
    beta: T,
    c: &mut [T],
    ldc: usize,
) {
    if m.saturating_mul(n).saturating_mul(k) >= BLOCKED_MIN_FLOPS {
        blocked(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else {
        looped(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
}

/// `op(A)(i, l)` for A stored column-major with leading dimension `lda`.
#[inline(always)]
pub(crate) fn op_at<T: Scalar>(t: Trans, a: &[T], lda: usize, i: usize, l: usize) -> T {
    match t {
        Trans::No => a[i + l * lda],
        Trans::Trans => a[l + i * lda],
        Trans::ConjTrans => a[l + i * lda].conj(),
    }
}

/// GEMM in the reference's loop orders: for op(A) = A a column of C is updated by columns of A
/// (unit stride innermost); otherwise each entry of C is a dot product down two columns.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
fn looped<T: Scalar>(
    ta: Trans,
    tb: Trans,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &[T],
    lda: usize,
    b: &[T],
    ldb: usize,
    beta: T,
    c: &mut [T],
    ldc: usize,
) {
    for j in 0..n {
        let cj = &mut c[j * ldc..j * ldc + m];
        if ta == Trans::No {
            scale_by_beta(cj, beta);
            for l in 0..k {
                let temp = alpha * op_at(tb, b, ldb, l, j);
                let al = &a[l * lda..l * lda + m];
                for (ci, &ai) in cj.iter_mut().zip(al) {
                    *ci += temp * ai;
                }
            }
        } else {
            for (i, ci) in cj.iter_mut().enumerate() {
                let mut temp = T::zero();
                for l in 0..k {
                    temp += op_at(ta, a, lda, i, l) * op_at(tb, b, ldb, l, j);
                }
                *ci = if beta.is_zero() {
                    alpha * temp
                } else {
                    alpha * temp + beta * *ci
                };
            }
        }
    }
}

/// GEMM on the `gemm` crate's blocked, vectorised kernels, which compute
/// `dst := s*dst + t*lhs*rhs` over arbitrary strides (and read nothing of dst when told not to).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
fn blocked<T: Scalar>(
    ta: Trans,
    tb: Trans,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &[T],
    lda: usize,
    b: &[T],
    ldb: usize,
    beta: T,
    c: &mut [T],
    ldc: usize,
) {
    let strides = |t: Trans, ld: usize| -> (isize, isize) {
        // (column stride, row stride) of op(X).
        if t == Trans::No {
            (ld as isize, 1)
        } else {
            (1, ld as isize)
        }
    };
    let (a_cs, a_rs) = strides(ta, lda);
    let (b_cs, b_rs) = strides(tb, ldb);
    let conj_a = T::IS_COMPLEX && ta == Trans::ConjTrans;
    let conj_b = T::IS_COMPLEX && tb == Trans::ConjTrans;
    // SAFETY: the slices cover every element the strides address (op(A) is m x k, op(B) k x n,
    // C m x n, each inside its slice's bounds by construction above); C does not overlap A or B;
    // T is one of f32, f64, c32, c64, the types the crate implements.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            ldc as isize,
            1,
            !beta.is_zero(),
            a.as_ptr(),
            a_cs,
            a_rs,
            b.as_ptr(),
            b_cs,
            b_rs,
            beta,
            alpha,
            false,
            conj_a,
            conj_b,
            gemm::Parallelism::Rayon(0),
        )
    }
}

/// Argument check of GEMMT (`?gemmtr` of reference BLAS 3.12, `?gemmt` of OpenBLAS and MKL:
/// UPLO 1, TRANSA 2, TRANSB 3, N 4, K 5, LDA 8, LDB 10, LDC 13).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub fn gemmt_check(
    uplo: u8,
    transa: u8,
    transb: u8,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
) -> i32 {
    if Uplo::parse(uplo).is_none() {
        1
    } else if Trans::parse(transa).is_none() {
        2
    } else if Trans::parse(transb).is_none() {
        3
    } else if n < 0 {
        4
    } else if k < 0 {
        5
    } else if lda < max1(if lsame(transa, b'N') { n } else { k }) {
        8
    } else if ldb < max1(if lsame(transb, b'N') { k } else { n }) {
        10
    } else if ldc < max1(n) {
        13
    } else {
        0
    }
}

/// Column-block width of the blocked GEMMT: the diagonal blocks run in loops over their
/// triangle, the rectangles beside them through GEMM.
const GEMMT_BLOCK: usize = 64;

/// GEMMT: the `uplo` triangle (diagonal included) of `C := alpha*op(A)*op(B) + beta*C`, C n x n,
/// op(A) n x k, op(B) k x n; the other triangle is neither read nor written. From order 128 it
/// works by column blocks of 64: the rectangle beside each diagonal block through GEMM, the
/// diagonal block's triangle in GEMM's loops.
///
/// # Safety
/// See the level 3 Safety section (A is n x k for `transa == 'N'`, else k x n; B is k x n for
/// `transb == 'N'`, else n x k; C is n x n).
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub unsafe fn gemmt<T: Scalar>(
    uplo: u8,
    transa: u8,
    transb: u8,
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
    if n == 0 || ((alpha.is_zero() || k == 0) && beta == T::one()) {
        return;
    }
    let (n, k) = (n as usize, k as usize);
    let (lda, ldb, ldc) = (lda as usize, ldb as usize, ldc as usize);
    let (ta, tb) = (Trans::assume(transa), Trans::assume(transb));
    let upper = Uplo::assume(uplo) == Uplo::Upper;
    // SAFETY: C is n x n with leading dimension ldc, written by this routine only.
    let c = unsafe { slice_mut(c, mat_len(n, n, ldc)) };
    if alpha.is_zero() || k == 0 {
        for j in 0..n {
            let r = if upper { 0..j + 1 } else { j..n };
            scale_by_beta(&mut c[r.start + j * ldc..r.end + j * ldc], beta);
        }
        return;
    }
    let (ar, ac) = if ta == Trans::No { (n, k) } else { (k, n) };
    let (br, bc) = if tb == Trans::No { (k, n) } else { (n, k) };
    // SAFETY: A is ar x ac with leading dimension lda, B is br x bc with ldb; both only read.
    let (a, b) = unsafe {
        (
            slice(a, mat_len(ar, ac, lda)),
            slice(b, mat_len(br, bc, ldb)),
        )
    };
    let ops = Ops {
        ta,
        tb,
        k,
        alpha,
        beta,
    };
    if n < 2 * GEMMT_BLOCK {
        gemmt_looped(&ops, upper, n, a, lda, b, ldb, c, ldc);
        return;
    }
    // Where row r0 of op(A) and column j0 of op(B) start in A's and B's storage.
    let a_row = |r0: usize| if ta == Trans::No { r0 } else { r0 * lda };
    let b_col = |j0: usize| if tb == Trans::No { j0 * ldb } else { j0 };
    for j0 in (0..n).step_by(GEMMT_BLOCK) {
        let j1 = (j0 + GEMMT_BLOCK).min(n);
        let (r0, r1) = if upper { (0, j0) } else { (j1, n) };
        if r1 > r0 {
            gemm_slices(
                ta,
                tb,
                r1 - r0,
                j1 - j0,
                k,
                alpha,
                &a[a_row(r0)..],
                lda,
                &b[b_col(j0)..],
                ldb,
                beta,
                &mut c[r0 + j0 * ldc..],
                ldc,
            );
        }
        gemmt_looped(
            &ops,
            upper,
            j1 - j0,
            &a[a_row(j0)..],
            lda,
            &b[b_col(j0)..],
            ldb,
            &mut c[j0 + j0 * ldc..],
            ldc,
        );
    }
}

/// GEMMT's transposes and scalars past the quick returns.
struct Ops<T> {
    ta: Trans,
    tb: Trans,
    k: usize,
    alpha: T,
    beta: T,
}

/// The `upper` or lower triangle of the n x n `c` in GEMM's loop orders ([`looped`]), each
/// column over its rows in the triangle only.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
fn gemmt_looped<T: Scalar>(
    ops: &Ops<T>,
    upper: bool,
    n: usize,
    a: &[T],
    lda: usize,
    b: &[T],
    ldb: usize,
    c: &mut [T],
    ldc: usize,
) {
    let &Ops {
        ta,
        tb,
        k,
        alpha,
        beta,
    } = ops;
    for j in 0..n {
        let rows = if upper { 0..j + 1 } else { j..n };
        let cj = &mut c[rows.start + j * ldc..rows.end + j * ldc];
        if ta == Trans::No {
            scale_by_beta(cj, beta);
            for l in 0..k {
                let temp = alpha * op_at(tb, b, ldb, l, j);
                let al = &a[rows.start + l * lda..rows.end + l * lda];
                for (ci, &ai) in cj.iter_mut().zip(al) {
                    *ci += temp * ai;
                }
            }
        } else {
            for (ci, i) in cj.iter_mut().zip(rows) {
                let mut temp = T::zero();
                for l in 0..k {
                    temp += op_at(ta, a, lda, i, l) * op_at(tb, b, ldb, l, j);
                }
                *ci = if beta.is_zero() {
                    alpha * temp
                } else {
                    alpha * temp + beta * *ci
                };
            }
        }
    }
}
