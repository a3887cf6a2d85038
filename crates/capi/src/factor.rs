//! The factorization hooks: where a LAPACK call exported by [`crate::lapack`] (Cholesky, LU,
//! and the solves built on them) may be computed by hetblas instead of the host LAPACK. One
//! function per routine family, called first by every entry of that family (S, D, C, Z; LP64,
//! ILP64 `_64_` and the `scipy_` names) with the routine's arguments exactly as the entry
//! received them: pointers, integers of the entry's width `I`.
//!
//! `true`: the hook computed the call and set `info`. `false`: the entry forwards the call,
//! untouched, to the routine it replaced (the host LAPACK: [`crate::lapack`] says which). Today
//! every hook returns `false`; the device factorizations (issue 54) decide here.
//!
//! A hook that takes a call keeps LAPACK's contract exactly: the arguments are not checked
//! before it is called; it checks them in LAPACK's order, and for a bad one sets
//! `info = -position` and calls `xerbla_` (`crate::xerbla::report`) with the routine's name,
//! and does nothing else; `info > 0` and `ipiv` mean what LAPACK says.
//!
//! The BLAS calls a forwarded routine makes by name (a `liblapack.so.3`'s trailing updates:
//! `dgemm_`, `dtrsm_`, `dsyrk_`, ...) reach hetblas's BLAS entries, and so the device path,
//! already; a wheel's OpenBLAS binds its LAPACK's BLAS calls to itself, so there only a hook
//! brings the devices in.

#![allow(clippy::too_many_arguments)] // reason: the LAPACK routines' own argument lists

use crate::elem::Elem;
use std::ffi::c_char;

/// The integer of a LAPACK entry: i32 (LP64) or i64 (ILP64).
pub trait LapackInt: Copy + Into<i64> + TryFrom<i64> {}
impl LapackInt for i32 {}
impl LapackInt for i64 {}

/// `?POTRF(UPLO, N, A, LDA, INFO)`: Cholesky factorization.
///
/// # Safety
/// The pointers are the caller's, under LAPACK's contract (unchecked).
pub unsafe fn potrf<T: Elem, I: LapackInt>(
    _uplo: *const c_char,
    _n: *const I,
    _a: *mut T,
    _lda: *const I,
    _info: *mut I,
) -> bool {
    false
}

/// `?GETRF(M, N, A, LDA, IPIV, INFO)`: LU factorization with partial pivoting.
///
/// # Safety
/// As [`potrf`].
pub unsafe fn getrf<T: Elem, I: LapackInt>(
    _m: *const I,
    _n: *const I,
    _a: *mut T,
    _lda: *const I,
    _ipiv: *mut I,
    _info: *mut I,
) -> bool {
    false
}

/// `?POTRS(UPLO, N, NRHS, A, LDA, B, LDB, INFO)`: solves with a Cholesky factor.
///
/// # Safety
/// As [`potrf`].
pub unsafe fn potrs<T: Elem, I: LapackInt>(
    _uplo: *const c_char,
    _n: *const I,
    _nrhs: *const I,
    _a: *const T,
    _lda: *const I,
    _b: *mut T,
    _ldb: *const I,
    _info: *mut I,
) -> bool {
    false
}

/// `?GETRS(TRANS, N, NRHS, A, LDA, IPIV, B, LDB, INFO)`: solves with an LU factorization.
///
/// # Safety
/// As [`potrf`].
pub unsafe fn getrs<T: Elem, I: LapackInt>(
    _trans: *const c_char,
    _n: *const I,
    _nrhs: *const I,
    _a: *const T,
    _lda: *const I,
    _ipiv: *const I,
    _b: *mut T,
    _ldb: *const I,
    _info: *mut I,
) -> bool {
    false
}

/// `?POSV(UPLO, N, NRHS, A, LDA, B, LDB, INFO)`: factor and solve, A positive definite.
///
/// # Safety
/// As [`potrf`].
pub unsafe fn posv<T: Elem, I: LapackInt>(
    _uplo: *const c_char,
    _n: *const I,
    _nrhs: *const I,
    _a: *mut T,
    _lda: *const I,
    _b: *mut T,
    _ldb: *const I,
    _info: *mut I,
) -> bool {
    false
}

/// `?GESV(N, NRHS, A, LDA, IPIV, B, LDB, INFO)`: factor and solve, A general.
///
/// # Safety
/// As [`potrf`].
pub unsafe fn gesv<T: Elem, I: LapackInt>(
    _n: *const I,
    _nrhs: *const I,
    _a: *mut T,
    _lda: *const I,
    _ipiv: *mut I,
    _b: *mut T,
    _ldb: *const I,
    _info: *mut I,
) -> bool {
    false
}
