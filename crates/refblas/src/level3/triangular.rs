//! TRMM and TRSM: a triangular matrix times, or solved against, a general one, in the
//! reference's column-oriented loops.

use crate::level3::gemm::gemm_slices;
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
    if t.a_order() >= 2 * BLOCK {
        trmm_blocked(t, alpha);
    } else {
        trmm_loops(t, alpha);
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
    if t.a_order() >= 2 * BLOCK {
        trsm_blocked(t, alpha);
    } else {
        trsm_loops(t, alpha);
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

/// TRMM in the reference's column-oriented loops.
fn trmm_loops<T: Scalar>(t: Tri<'_, T>, alpha: T) {
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

/// TRSM in the reference's column-oriented loops.
fn trsm_loops<T: Scalar>(t: Tri<'_, T>, alpha: T) {
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

/// Block order of the blocked TRMM / TRSM: the diagonal blocks run in the loops, the rest of the
/// work in GEMM.
const BLOCK: usize = 64;

impl<'a, T: Scalar> Tri<'a, T> {
    /// The order of A: m for side 'L', n for side 'R'.
    fn a_order(&self) -> usize {
        if self.left {
            self.m
        } else {
            self.n
        }
    }

    /// op(A) is upper triangular (A upper and not transposed, or lower and transposed).
    fn op_upper(&self) -> bool {
        self.upper != self.trans
    }

    /// The block of op(A) from row r0 and column c0, as GEMM reads it: the start of the stored
    /// block in A and the transposition to apply. Borrows A, not `self`.
    fn op_block(&self, r0: usize, c0: usize) -> (&'a [T], Trans) {
        let a: &'a [T] = self.a;
        if !self.trans {
            (&a[r0 + c0 * self.lda..], Trans::No)
        } else if self.conj {
            (&a[c0 + r0 * self.lda..], Trans::ConjTrans)
        } else {
            (&a[c0 + r0 * self.lda..], Trans::Trans)
        }
    }

    /// The diagonal blocks (i0, i1) of A in the order `forward` or backward.
    fn blocks(&self, forward: bool) -> Vec<(usize, usize)> {
        let na = self.a_order();
        let mut v: Vec<_> = (0..na)
            .step_by(BLOCK)
            .map(|s| (s, (s + BLOCK).min(na)))
            .collect();
        if !forward {
            v.reverse();
        }
        v
    }

    /// The sub-problem on diagonal block (i0, i1) of A and the matching rows (side 'L') or
    /// columns (side 'R') of B.
    fn diagonal(&mut self, i0: usize, i1: usize) -> Tri<'_, T> {
        let (m, n, b0) = if self.left {
            (i1 - i0, self.n, i0)
        } else {
            (self.m, i1 - i0, i0 * self.ldb)
        };
        Tri {
            left: self.left,
            upper: self.upper,
            trans: self.trans,
            conj: self.conj,
            unit: self.unit,
            m,
            n,
            a: &self.a[i0 + i0 * self.lda..],
            lda: self.lda,
            b: &mut self.b[b0..],
            ldb: self.ldb,
        }
    }

    /// Rows i0..i1 (side 'L', all columns) or columns i0..i1 (side 'R', all rows) of B, copied
    /// out column-major; returns the copy and its leading dimension.
    fn copy_b(&self, i0: usize, i1: usize) -> (Vec<T>, usize) {
        let (r0, r1, c0, c1) = if self.left {
            (i0, i1, 0, self.n)
        } else {
            (0, self.m, i0, i1)
        };
        let mut v = Vec::with_capacity((r1 - r0) * (c1 - c0));
        for j in c0..c1 {
            v.extend_from_slice(&self.b[r0 + j * self.ldb..r1 + j * self.ldb]);
        }
        (v, r1 - r0)
    }

    /// Adds `t` (laid out as [`Tri::copy_b`] returns) into the same block of B.
    fn add_to_b(&mut self, i0: usize, i1: usize, t: &[T]) {
        let (r0, r1, c0, c1) = if self.left {
            (i0, i1, 0, self.n)
        } else {
            (0, self.m, i0, i1)
        };
        let rows = r1 - r0;
        for (jj, j) in (c0..c1).enumerate() {
            let col = &mut self.b[r0 + j * self.ldb..r1 + j * self.ldb];
            for (v, &x) in col.iter_mut().zip(&t[jj * rows..(jj + 1) * rows]) {
                *v += x;
            }
        }
    }
}

/// TRMM by diagonal blocks of A: each block row (side 'L') or column (side 'R') of B is its
/// diagonal block's product, in the loops, plus one GEMM with the part of B not yet overwritten.
fn trmm_blocked<T: Scalar>(mut t: Tri<'_, T>, alpha: T) {
    let (left, up, m, n, ldb, lda) = (t.left, t.op_upper(), t.m, t.n, t.ldb, t.lda);
    // Left: B_I = op(A)_II B_I + op(A)(I, rest) B(rest, :), the rest below (op(A) upper) or above.
    // Right: B_J = B_J op(A)_JJ + B(:, rest) op(A)(rest, J), the rest before (upper) or after.
    for (i0, i1) in t.blocks(left == up) {
        let nb = i1 - i0;
        let (s0, s1) = match (left, up) {
            (true, true) => (i1, m),
            (true, false) => (0, i0),
            (false, true) => (0, i0),
            (false, false) => (i1, n),
        };
        let rest = if s1 > s0 {
            let (len, rows) = if left { (nb * n, nb) } else { (m * nb, m) };
            let mut tmp = vec![T::zero(); len];
            if left {
                let (a_blk, ta) = t.op_block(i0, s0);
                gemm_slices(
                    ta,
                    Trans::No,
                    nb,
                    n,
                    s1 - s0,
                    alpha,
                    a_blk,
                    lda,
                    &t.b[s0..],
                    ldb,
                    T::zero(),
                    &mut tmp,
                    rows,
                );
            } else {
                let (a_blk, tb) = t.op_block(s0, i0);
                gemm_slices(
                    Trans::No,
                    tb,
                    m,
                    nb,
                    s1 - s0,
                    alpha,
                    &t.b[s0 * ldb..],
                    ldb,
                    a_blk,
                    lda,
                    T::zero(),
                    &mut tmp,
                    rows,
                );
            }
            Some(tmp)
        } else {
            None
        };
        trmm_loops(t.diagonal(i0, i1), alpha);
        if let Some(tmp) = rest {
            t.add_to_b(i0, i1, &tmp);
        }
    }
}

/// TRSM by diagonal blocks of A: B is scaled by alpha once; each block of X is solved against
/// its diagonal block in the loops, then removed from the rest of B by one GEMM.
fn trsm_blocked<T: Scalar>(mut t: Tri<'_, T>, alpha: T) {
    let (left, up, m, n, ldb, lda) = (t.left, t.op_upper(), t.m, t.n, t.ldb, t.lda);
    if alpha != T::one() {
        for j in 0..n {
            for v in &mut t.b[j * ldb..j * ldb + m] {
                *v *= alpha;
            }
        }
    }
    // Left: op(A) upper solves from the last block up; Right: op(A) upper from the first block.
    for (i0, i1) in t.blocks(left != up) {
        let nb = i1 - i0;
        trsm_loops(t.diagonal(i0, i1), T::one());
        let (s0, s1) = match (left, up) {
            (true, true) => (0, i0),
            (true, false) => (i1, m),
            (false, true) => (i1, n),
            (false, false) => (0, i0),
        };
        if s1 <= s0 {
            continue;
        }
        let (x, ldx) = t.copy_b(i0, i1);
        let minus = -T::one();
        if left {
            // B(rest, :) -= op(A)(rest, I) X_I.
            let (a_blk, ta) = t.op_block(s0, i0);
            gemm_slices(
                ta,
                Trans::No,
                s1 - s0,
                n,
                nb,
                minus,
                a_blk,
                lda,
                &x,
                ldx,
                T::one(),
                &mut t.b[s0..],
                ldb,
            );
        } else {
            // B(:, rest) -= X_J op(A)(J, rest).
            let (a_blk, tb) = t.op_block(i0, s0);
            gemm_slices(
                Trans::No,
                tb,
                m,
                s1 - s0,
                nb,
                minus,
                &x,
                ldx,
                a_blk,
                lda,
                T::one(),
                &mut t.b[s0 * ldb..],
                ldb,
            );
        }
    }
}
