//! Stand-ins for reference routines that Debian's reference BLAS (3.11) lacks: GEMMT, which
//! reference BLAS 3.12 added as `?gemmtr_` and reference CBLAS 3.12 as `cblas_?gemmtr`
//! (OpenBLAS's and MKL's `?gemmt_`, `cblas_?gemmt`, are the same routine). They are written
//! over hetblas-refblas with the reference's C ABI (LP64 and ILP64) and report through the
//! global handlers as the reference library does: the Fortran routine checks as `?gemmtr.f`
//! does and calls `xerbla_` with the name it was called by (`DGEMMTR`, `DGEMMT`); the CBLAS one
//! follows `cblas_dgemmtr.c`: the options checked in the wrapper (layout 1, uplo 2, TransA 3,
//! TransB 4), then the Fortran routine, row-major as the column-major call on the other
//! triangle with A and B exchanged. They also give the values where the host BLAS lacks the
//! routine (OpenBLAS 0.3.21).
//!
//! So for GEMMT the fuzzer checks the ABI (names, integer widths, `xerbla`'s names and numbers,
//! the row-major mapping, every name family) against an independent reading of the reference
//! sources; its values are refblas's, which is also what libhetblas.so computes with where the
//! host has no GEMMT: bit-identity there shows the plumbing, not the arithmetic (refblas's own
//! tests check that against an f64 reference).

use super::values::{El, Int};
use hetblas_refblas as rb;
use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use std::ffi::{c_char, c_int, c_void};

/// The handler `name` (`xerbla_`, `cblas_xerbla`) at the global scope, where the fuzzer's
/// handlers are.
fn handler(name: &std::ffi::CStr) -> *mut c_void {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads the loader's tables.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    assert!(!f.is_null(), "no global {name:?}");
    f
}

/// `xerbla_(name, info)` as the Fortran reference calls it.
fn xerbla(name: &str, info: i32) {
    type F = unsafe extern "C" fn(*const c_char, *const c_int, usize);
    // SAFETY: the fuzzer's `xerbla_` has this prototype (with gfortran's hidden length).
    let f = unsafe { std::mem::transmute::<*mut c_void, F>(handler(c"xerbla_")) };
    // SAFETY: valid pointers for the call; the name is read for its length.
    unsafe { f(name.as_ptr().cast(), &info, name.len()) };
}

/// `cblas_xerbla(info, rout, "")` as the reference CBLAS calls it.
fn cblas_xerbla(rout: &str, info: i32) {
    type F = unsafe extern "C" fn(c_int, *const c_char, *const c_char, ...);
    let rout = std::ffi::CString::new(rout).expect("a routine name");
    // SAFETY: the fuzzer's `cblas_xerbla` has this prototype.
    let f = unsafe { std::mem::transmute::<*mut c_void, F>(handler(c"cblas_xerbla")) };
    // SAFETY: valid C strings; the format has no conversions.
    unsafe { f(info, rout.as_ptr(), c"".as_ptr()) };
}

/// The routine's name in precision `T`: `dgemmtr` (`tr`) or `dgemmt`.
fn name<T: El>(tr: bool) -> String {
    format!("{}gemmt{}", T::P, if tr { "r" } else { "" })
}

/// `?gemmtr_` / `?gemmt_` (integers `I`).
///
/// # Safety
/// The Fortran BLAS contract: every argument by address, the arrays of the sizes the
/// arguments give.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
unsafe extern "C" fn fortran_gemmt<T: El + rb::Scalar, I: Int, const TR: bool>(
    uplo: *const u8,
    ta: *const u8,
    tb: *const u8,
    n: *const I,
    k: *const I,
    alpha: *const T,
    a: *const T,
    lda: *const I,
    b: *const T,
    ldb: *const I,
    beta: *const T,
    c: *mut T,
    ldc: *const I,
    _: usize,
    _: usize,
    _: usize,
    _: usize,
) {
    // SAFETY: the Fortran convention: the scalars are valid references for the call.
    let (uplo, ta, tb, n, k, lda, ldb, ldc, alpha, beta) = unsafe {
        (
            *uplo,
            *ta,
            *tb,
            (*n).into(),
            (*k).into(),
            (*lda).into(),
            (*ldb).into(),
            (*ldc).into(),
            *alpha,
            *beta,
        )
    };
    let info = rb::gemmt_check(uplo, ta, tb, n, k, lda, ldb, ldc);
    if info != 0 {
        xerbla(&name::<T>(TR).to_uppercase(), info);
        return;
    }
    // SAFETY: the arguments passed the check; the arrays are the caller's (contract).
    unsafe { rb::gemmt(uplo, ta, tb, n, k, alpha, a, lda, b, ldb, beta, c, ldc) };
}

/// `cblas_?gemmtr` / `cblas_?gemmt` (integers `I`), as reference CBLAS 3.12 writes it.
///
/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
unsafe extern "C" fn cblas_gemmt<T: El + rb::Scalar, I: Int, const TR: bool>(
    layout: c_int,
    uplo: c_int,
    transa: c_int,
    transb: c_int,
    n: I,
    k: I,
    alpha: T::Arg,
    a: *const T,
    lda: I,
    b: *const T,
    ldb: I,
    beta: T::Arg,
    c: *mut T,
    ldc: I,
) {
    let rout = format!("cblas_{}", name::<T>(TR));
    let trans = |t: c_int| match t {
        111 => Some(b'N'),
        112 => Some(b'T'),
        113 => Some(b'C'),
        _ => None,
    };
    let row = match layout {
        102 => false,
        101 => true,
        _ => return cblas_xerbla(&rout, 1),
    };
    let ul = match (uplo, row) {
        (121, false) | (122, true) => b'U',
        (122, false) | (121, true) => b'L',
        _ => return cblas_xerbla(&rout, 2),
    };
    let Some(ta) = trans(transa) else {
        return cblas_xerbla(&rout, 3);
    };
    let Some(tb) = trans(transb) else {
        return cblas_xerbla(&rout, 4);
    };
    // SAFETY: the CBLAS contract (a complex scalar's pointer is valid).
    let (alpha, beta) = unsafe { (T::from_arg(alpha), T::from_arg(beta)) };
    let f = fortran_gemmt::<T, I, TR>;
    // SAFETY: the Fortran routine of the same contract, every argument by address.
    unsafe {
        if row {
            f(
                &ul, &tb, &ta, &n, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc, 1, 1, 1, 1,
            )
        } else {
            f(
                &ul, &ta, &tb, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1, 1, 1,
            )
        }
    }
}

/// The stand-in entries of precision `T`: (CBLAS, ILP64, `gemmtr` name).
fn typed<T: El + rb::Scalar>(cblas: bool, wide: bool, tr: bool) -> *const c_void {
    match (cblas, wide, tr) {
        (false, false, false) => fortran_gemmt::<T, i32, false> as *const c_void,
        (false, false, true) => fortran_gemmt::<T, i32, true> as *const c_void,
        (false, true, false) => fortran_gemmt::<T, i64, false> as *const c_void,
        (false, true, true) => fortran_gemmt::<T, i64, true> as *const c_void,
        (true, false, false) => cblas_gemmt::<T, i32, false> as *const c_void,
        (true, false, true) => cblas_gemmt::<T, i32, true> as *const c_void,
        (true, true, false) => cblas_gemmt::<T, i64, false> as *const c_void,
        (true, true, true) => cblas_gemmt::<T, i64, true> as *const c_void,
    }
}

/// The stand-in for the reference routine `name` ("dgemmtr_", "cblas_zgemmt"; the ILP64
/// library's where `wide`), if there is one.
pub fn find(name: &str, wide: bool) -> Option<*const c_void> {
    let (cblas, base) = match name.strip_prefix("cblas_") {
        Some(b) => (true, b),
        None => (false, name.strip_suffix('_')?),
    };
    let tr = match base.get(1..)? {
        "gemmtr" => true,
        "gemmt" => false,
        _ => return None,
    };
    Some(match &base[..1] {
        "s" => typed::<f32>(cblas, wide, tr),
        "d" => typed::<f64>(cblas, wide, tr),
        "c" => typed::<C32>(cblas, wide, tr),
        "z" => typed::<C64>(cblas, wide, tr),
        _ => return None,
    })
}

/// The names a host BLAS may have routine `name` under, in the order libhetblas.so looks for
/// them: GEMMT's Fortran names both (`dgemmtr_`, then `dgemmt_`), any other name itself.
pub fn host_names(name: &str) -> Vec<String> {
    match name
        .strip_suffix("gemmt_")
        .or_else(|| name.strip_suffix("gemmtr_"))
    {
        Some(p) if p.len() == 1 => vec![format!("{p}gemmtr_"), format!("{p}gemmt_")],
        _ => vec![name.to_string()],
    }
}
