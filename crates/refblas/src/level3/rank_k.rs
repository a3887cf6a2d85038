//! The rank-k and rank-2k updates SYRK, HERK, SYR2K, HER2K.

use crate::options::{lsame, Uplo};
use crate::scalar::Scalar;
use crate::strided::max1;

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

/// SYRK: `C := alpha*A*A^T + beta*C` (trans 'N') or `alpha*A^T*A + beta*C`, C n x n symmetric, one triangle updated.
///
/// # Safety
/// See the level Safety section of this module's parent.
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
    let _ = (uplo, trans, n, k, alpha, a, lda, beta, c, ldc);
    unimplemented!()
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

/// HERK: `C := alpha*A*A^H + beta*C` (trans 'N') or `alpha*A^H*A + beta*C`, real alpha and beta, C n x n Hermitian, one triangle updated (its diagonal made real).
///
/// # Safety
/// See the level Safety section of this module's parent.
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
    let _ = (uplo, trans, n, k, alpha, a, lda, beta, c, ldc);
    unimplemented!()
}

/// SYR2K: `C := alpha*A*B^T + alpha*B*A^T + beta*C` (trans 'N') or `alpha*A^T*B + alpha*B^T*A + beta*C`, C n x n symmetric, one triangle updated.
///
/// # Safety
/// See the level Safety section of this module's parent.
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
    let _ = (uplo, trans, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    unimplemented!()
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

/// HER2K: `C := alpha*A*B^H + conj(alpha)*B*A^H + beta*C` (trans 'N') or `alpha*A^H*B + conj(alpha)*B^H*A + beta*C`, real beta, C n x n Hermitian, one triangle updated (its diagonal made real).
///
/// # Safety
/// See the level Safety section of this module's parent.
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
    let _ = (uplo, trans, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    unimplemented!()
}
