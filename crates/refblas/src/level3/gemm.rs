//! GEMM.

use crate::options::{lsame, Trans};
use crate::scalar::Scalar;
use crate::strided::max1;

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

/// GEMM: `C := alpha*op(A)*op(B) + beta*C`, C m x n, op(A) m x k, op(B) k x n.
///
/// # Safety
/// See the level Safety section of this module's parent.
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
    let _ = (transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    unimplemented!()
}
