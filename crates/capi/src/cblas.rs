//! CBLAS (Level 2 and 3): `cblas_*` over the same implementations as the Fortran entries.
//!
//! Each routine is written once, generic over the element type, as the reference CBLAS does
//! it: the enumerations are read first (a bad one is reported with its CBLAS position), a
//! row-major call becomes the column-major call on the transposed operands, and an error the
//! Fortran-level check finds in that call is reported as its parameter number plus one (the
//! order argument). In row-major that numbering is the reference's, which swaps some numbers
//! (see [`crate::xerbla::unswap`]); hetblas reports exactly what the reference reports, so a
//! program's `cblas_xerbla` written for the reference (the CBLAS test programs') agrees.
//!
//! Row-major complex calls that need a conjugated operand (GEMV with ConjTrans, HEMV, HER,
//! HER2, GERC, the triangular ConjTrans cases) conjugate a copy of the vector (or the vector
//! in place, and back), as the reference does.

use crate::abi::LpInt;
use crate::elem::Elem;
use crate::routines as f;
use hetblas_refblas as rb;
use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use hetblas_refblas::Scalar;
use std::ffi::c_int;

/// `Err((info, row_major))`: the number to report, and whether the call was row-major.
pub type CResult = Result<(), (i32, bool)>;

const ROW: c_int = 101;
const COL: c_int = 102;

fn order(o: c_int) -> Result<bool, (i32, bool)> {
    match o {
        ROW => Ok(true),
        COL => Ok(false),
        _ => Err((1, false)),
    }
}
/// A CBLAS transpose enumeration as the Fortran option letter.
#[inline]
pub(crate) fn trans(t: c_int) -> Option<u8> {
    match t {
        111 => Some(b'N'),
        112 => Some(b'T'),
        113 => Some(b'C'),
        _ => None,
    }
}
fn uplo(u: c_int, row: bool) -> Option<u8> {
    match (u, row) {
        (121, false) | (122, true) => Some(b'U'),
        (122, false) | (121, true) => Some(b'L'),
        _ => None,
    }
}
fn diag(d: c_int) -> Option<u8> {
    match d {
        131 => Some(b'N'),
        132 => Some(b'U'),
        _ => None,
    }
}
fn side(s: c_int, row: bool) -> Option<u8> {
    match (s, row) {
        (141, false) | (142, true) => Some(b'L'),
        (142, false) | (141, true) => Some(b'R'),
        _ => None,
    }
}
/// A Fortran-level result as CBLAS reports it.
fn fr(r: Result<(), i32>, row: bool) -> CResult {
    r.map_err(|p| (p + 1, row))
}
fn need(v: Option<u8>, pos: i32, row: bool) -> Result<u8, (i32, bool)> {
    v.ok_or((pos, row))
}
/// The Fortran-level check's result, as CBLAS reports it.
fn chk(info: i32, row: bool) -> CResult {
    if info == 0 {
        Ok(())
    } else {
        Err((info + 1, row))
    }
}

/// Conjugates the `n` elements of a strided vector in place.
///
/// # Safety
/// `x` holds `1 + (n-1)*|inc|` writable elements.
unsafe fn conj_in_place<T: Elem>(n: i64, x: *mut T, inc: i64) {
    let step = inc.unsigned_abs() as usize;
    for i in 0..n.max(0) as usize {
        // SAFETY: within the caller's vector.
        unsafe {
            let p = x.add(i * step);
            *p = Scalar::conj(*p);
        }
    }
}

/// A conjugated copy of a strided vector's `n` elements, packed: the copy and its increment (1,
/// or -1 where `inc` is negative, so that element i is the same one). Only the elements are
/// copied, not the span between them (x a column of a row-major matrix spans `n * lda`).
///
/// # Safety
/// `x` holds `1 + (n-1)*|inc|` readable elements.
unsafe fn conj_copy<T: Elem>(n: i64, x: *const T, inc: i64) -> (Vec<T>, i64) {
    let step = inc.unsigned_abs() as usize;
    let copy = (0..n.max(0) as usize)
        // SAFETY: the j-th element in memory order lies within the caller's vector.
        .map(|j| Scalar::conj(unsafe { *x.add(j * step) }))
        .collect();
    (copy, inc.signum())
}

// ---- Level 2 ---------------------------------------------------------------------------------

/// GEMV and GBMV share their row-major treatment; `band` carries (kl, ku).
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
unsafe fn gxmv<T: Elem>(
    o: c_int,
    t: c_int,
    m: i64,
    n: i64,
    band: Option<(i64, i64)>,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) -> CResult {
    let row = order(o)?;
    let t = need(trans(t), 2, row)?;
    // SAFETY: (all calls below) the caller's BLAS contract, checked by the Fortran level.
    let call = |t: u8, m: i64, n: i64, kl: i64, ku: i64, al: T, x: *const T, incx: i64, be: T| unsafe {
        match band {
            None => f::gemv(t, m, n, al, a, lda, x, incx, be, y, incy),
            Some(_) => f::gbmv(t, m, n, kl, ku, al, a, lda, x, incx, be, y, incy),
        }
    };
    let (kl, ku) = band.unwrap_or((0, 0));
    if !row {
        return fr(call(t, m, n, kl, ku, alpha, x, incx, beta), false);
    }
    let ft = if t == b'N' { b'T' } else { b'N' };
    if t == b'C' && T::IS_COMPLEX {
        let info = match band {
            None => rb::gemv_check(ft, n, m, lda, incx, incy),
            Some(_) => rb::gbmv_check(ft, n, m, ku, kl, lda, incx, incy),
        };
        chk(info, true)?;
        let ylen = n;
        // SAFETY: x has `m` elements with stride incx (the checked BLAS contract).
        let (xc, xinc) = unsafe { conj_copy(m, x, incx) };
        // SAFETY: y has `ylen` elements with stride incy (the checked BLAS contract).
        unsafe { conj_in_place(ylen, y, incy) };
        let r = call(
            ft,
            n,
            m,
            ku,
            kl,
            Scalar::conj(alpha),
            xc.as_ptr(),
            xinc,
            Scalar::conj(beta),
        );
        // SAFETY: as above.
        unsafe { conj_in_place(ylen, y, incy) };
        return fr(r, true);
    }
    fr(call(ft, n, m, ku, kl, alpha, x, incx, beta), true)
}

/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn gemv<T: Elem>(
    o: c_int,
    t: c_int,
    m: i64,
    n: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) -> CResult {
    // SAFETY: forwarded contract.
    unsafe { gxmv(o, t, m, n, None, alpha, a, lda, x, incx, beta, y, incy) }
}

/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn gbmv<T: Elem>(
    o: c_int,
    t: c_int,
    m: i64,
    n: i64,
    kl: i64,
    ku: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    x: *const T,
    incx: i64,
    beta: T,
    y: *mut T,
    incy: i64,
) -> CResult {
    // SAFETY: forwarded contract.
    unsafe {
        gxmv(
            o,
            t,
            m,
            n,
            Some((kl, ku)),
            alpha,
            a,
            lda,
            x,
            incx,
            beta,
            y,
            incy,
        )
    }
}

/// Hermitian/symmetric matrix-vector products (HEMV, HBMV, HPMV, SYMV, SBMV, SPMV): in
/// row-major the other triangle, and for a complex (Hermitian) matrix the conjugate problem.
macro_rules! hxmv {
    ($name:ident, $fname:ident, $check:ident, ($($pre:ident),*), ($($ck:ident),*), $hermitian:expr) => {
        /// # Safety
        /// The CBLAS contract.
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe fn $name<T: Elem>(
            o: c_int, u: c_int, n: i64, $($pre: i64,)* alpha: T, a: *const T,
            $($ck: i64,)* x: *const T, incx: i64, beta: T, y: *mut T, incy: i64,
        ) -> CResult {
            let row = order(o)?;
            let ul = need(uplo(u, row), 2, row)?;
            if row && $hermitian && T::IS_COMPLEX {
                chk(rb::$check(ul, n, $($pre,)* $($ck,)* incx, incy), true)?;
                // SAFETY: the checked BLAS contract.
                unsafe {
                    let (xc, xinc) = conj_copy(n, x, incx);
                    conj_in_place(n, y, incy);
                    let r = f::$fname(ul, n, $($pre,)* Scalar::conj(alpha), a, $($ck,)* xc.as_ptr(), xinc, Scalar::conj(beta), y, incy);
                    conj_in_place(n, y, incy);
                    return fr(r, true);
                }
            }
            // SAFETY: the BLAS contract, checked by the Fortran level.
            fr(unsafe { f::$fname(ul, n, $($pre,)* alpha, a, $($ck,)* x, incx, beta, y, incy) }, row)
        }
    };
}
hxmv!(hemv, hemv, hemv_check, (), (lda), true);
hxmv!(hbmv, hbmv, hbmv_check, (k), (lda), true);
hxmv!(symv, symv, symv_check, (), (lda), false);
hxmv!(sbmv, sbmv, sbmv_check, (k), (lda), false);
hxmv!(hpmv, hpmv, hpmv_check, (), (), true);
hxmv!(spmv, spmv, spmv_check, (), (), false);

/// Triangular products and solves (TRMV, TBMV, TPMV, TRSV, TBSV, TPSV).
macro_rules! txmv {
    ($name:ident, $check:ident, ($($pre:ident),*), ($($ck:ident),*)) => {
        /// # Safety
        /// The CBLAS contract.
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe fn $name<T: Elem>(
            o: c_int, u: c_int, t: c_int, d: c_int, n: i64, $($pre: i64,)* a: *const T,
            $($ck: i64,)* x: *mut T, incx: i64,
        ) -> CResult {
            let row = order(o)?;
            let ul = need(uplo(u, row), 2, row)?;
            let tr = need(trans(t), 3, row)?;
            let dg = need(diag(d), 4, row)?;
            if !row {
                // SAFETY: the BLAS contract, checked by the Fortran level.
                return fr(unsafe { f::$name(ul, tr, dg, n, $($pre,)* a, $($ck,)* x, incx) }, false);
            }
            let ft = if tr == b'N' { b'T' } else { b'N' };
            if tr == b'C' && T::IS_COMPLEX {
                chk(rb::$check(ul, ft, dg, n, $($pre,)* $($ck,)* incx), true)?;
                // SAFETY: the checked BLAS contract.
                unsafe {
                    conj_in_place(n, x, incx);
                    let r = f::$name(ul, ft, dg, n, $($pre,)* a, $($ck,)* x, incx);
                    conj_in_place(n, x, incx);
                    return fr(r, true);
                }
            }
            // SAFETY: the BLAS contract, checked by the Fortran level.
            fr(unsafe { f::$name(ul, ft, dg, n, $($pre,)* a, $($ck,)* x, incx) }, true)
        }
    };
}
txmv!(trmv, trmv_check, (), (lda));
txmv!(trsv, trsv_check, (), (lda));
txmv!(tbmv, tbmv_check, (k), (lda));
txmv!(tbsv, tbsv_check, (k), (lda));
txmv!(tpmv, tpmv_check, (), ());
txmv!(tpsv, tpsv_check, (), ());

/// The Fortran-level rank-1 update GER / GERU (same arguments).
type Rank1<T> =
    unsafe fn(i64, i64, T, *const T, i64, *const T, i64, *mut T, i64) -> Result<(), i32>;

/// GER (real), GERU: in row-major, the transposed update with x and y exchanged.
///
/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
unsafe fn rank1<T: Elem>(
    update: Rank1<T>,
    o: c_int,
    m: i64,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) -> CResult {
    let row = order(o)?;
    // SAFETY: (both) the BLAS contract, checked by the Fortran level.
    let r = if !row {
        // SAFETY: the BLAS contract, checked by the Fortran level.
        unsafe { update(m, n, alpha, x, incx, y, incy, a, lda) }
    } else {
        // SAFETY: the BLAS contract, checked by the Fortran level.
        unsafe { update(n, m, alpha, y, incy, x, incx, a, lda) }
    };
    fr(r, row)
}

/// GERU (complex).
///
/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn geru<T: Elem>(
    o: c_int,
    m: i64,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) -> CResult {
    // SAFETY: the same contract.
    unsafe { rank1(f::geru::<T>, o, m, n, alpha, x, incx, y, incy, a, lda) }
}

/// Real GER (the same as GERU, under the real routine's name and symbol).
///
/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn ger<T: Elem>(
    o: c_int,
    m: i64,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) -> CResult {
    // SAFETY: the same contract.
    unsafe { rank1(f::ger::<T>, o, m, n, alpha, x, incx, y, incy, a, lda) }
}

/// GERC: in row-major, GERU of the transposed update with a conjugated copy of y.
///
/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn gerc<T: Elem>(
    o: c_int,
    m: i64,
    n: i64,
    alpha: T,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
    a: *mut T,
    lda: i64,
) -> CResult {
    let row = order(o)?;
    if !row {
        // SAFETY: the BLAS contract, checked by the Fortran level.
        return fr(
            // SAFETY: the BLAS contract, checked by the Fortran level.
            unsafe { f::gerc(m, n, alpha, x, incx, y, incy, a, lda) },
            false,
        );
    }
    chk(rb::gerc_check(n, m, incy, incx, lda), true)?;
    // SAFETY: the checked BLAS contract.
    unsafe {
        let (yc, yinc) = conj_copy(n, y, incy);
        fr(
            f::geru(n, m, alpha, yc.as_ptr(), yinc, x, incx, a, lda),
            true,
        )
    }
}

/// HER / HPR (`packed` without lda): in row-major, the other triangle with conj(x).
macro_rules! herx {
    ($name:ident, $check:ident, ($($ck:ident),*)) => {
        /// # Safety
        /// The CBLAS contract.
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe fn $name<T: Elem>(
            o: c_int, u: c_int, n: i64, alpha: T::Real, x: *const T, incx: i64, a: *mut T,
            $($ck: i64,)*
        ) -> CResult {
            let row = order(o)?;
            let ul = need(uplo(u, row), 2, row)?;
            if !row {
                // SAFETY: the BLAS contract, checked by the Fortran level.
                return fr(unsafe { f::$name(ul, n, alpha, x, incx, a, $($ck,)*) }, false);
            }
            chk(rb::$check(ul, n, incx, $($ck,)*), true)?;
            // SAFETY: the checked BLAS contract.
            unsafe {
                let (xc, xinc) = conj_copy(n, x, incx);
                fr(f::$name(ul, n, alpha, xc.as_ptr(), xinc, a, $($ck,)*), true)
            }
        }
    };
}
herx!(her, her_check, (lda));
herx!(hpr, hpr_check, ());

/// HER2 / HPR2: in row-major, the other triangle with conj(y), conj(x) in that order.
macro_rules! her2x {
    ($name:ident, $check:ident, ($($ck:ident),*)) => {
        /// # Safety
        /// The CBLAS contract.
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe fn $name<T: Elem>(
            o: c_int, u: c_int, n: i64, alpha: T, x: *const T, incx: i64, y: *const T,
            incy: i64, a: *mut T, $($ck: i64,)*
        ) -> CResult {
            let row = order(o)?;
            let ul = need(uplo(u, row), 2, row)?;
            if !row {
                // SAFETY: the BLAS contract, checked by the Fortran level.
                return fr(unsafe { f::$name(ul, n, alpha, x, incx, y, incy, a, $($ck,)*) }, false);
            }
            chk(rb::$check(ul, n, incy, incx, $($ck,)*), true)?;
            // SAFETY: the checked BLAS contract.
            unsafe {
                let (xc, xinc) = conj_copy(n, x, incx);
                let (yc, yinc) = conj_copy(n, y, incy);
                fr(f::$name(ul, n, alpha, yc.as_ptr(), yinc, xc.as_ptr(), xinc, a, $($ck,)*), true)
            }
        }
    };
}
her2x!(her2, her2_check, (lda));
her2x!(hpr2, hpr2_check, ());

/// Real symmetric rank-1 and rank-2 updates: in row-major, the other triangle.
macro_rules! syrx {
    ($name:ident, ($($v:ident: $vt:ident),*), ($($ck:ident),*)) => {
        /// # Safety
        /// The CBLAS contract.
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe fn $name<T: Elem>(
            o: c_int, u: c_int, n: i64, alpha: T, $($v: syrx!(@t $vt),)* a: *mut T,
            $($ck: i64,)*
        ) -> CResult {
            let row = order(o)?;
            let ul = need(uplo(u, row), 2, row)?;
            // SAFETY: the BLAS contract, checked by the Fortran level.
            fr(unsafe { f::$name(ul, n, alpha, $($v,)* a, $($ck,)*) }, row)
        }
    };
    (@t ptr) => { *const T };
    (@t int) => { i64 };
}
syrx!(syr, (x: ptr, incx: int), (lda));
syrx!(spr, (x: ptr, incx: int), ());
syrx!(syr2, (x: ptr, incx: int, y: ptr, incy: int), (lda));
syrx!(spr2, (x: ptr, incx: int, y: ptr, incy: int), ());

// ---- Level 3 ---------------------------------------------------------------------------------

/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn gemm<T: Elem>(
    o: c_int,
    ta: c_int,
    tb: c_int,
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
) -> CResult {
    let row = order(o)?;
    let ta = need(trans(ta), 2, row)?;
    // The reference reports a bad TransB of a row-major call as parameter 2 (it checks it as
    // the A of the column-major call it makes).
    let tb = need(trans(tb), if row { 2 } else { 3 }, row)?;
    // The column-major call: on the transposes, A and B exchanged, for a row-major one.
    let (ta, tb, m, n, a, lda, b, ldb) = if row {
        (tb, ta, n, m, b, ldb, a, lda)
    } else {
        (ta, tb, m, n, a, lda, b, ldb)
    };
    // SAFETY: the BLAS contract, checked by the Fortran level.
    let r = unsafe { f::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) };
    fr(r, row)
}

/// GEMMT (`cblas_?gemmt`, OpenBLAS's and MKL's; `cblas_?gemmtr`, reference CBLAS 3.12's, the
/// same prototype). Row-major is the column-major call on the transposes, as the reference
/// makes it: the other triangle, A and B exchanged with each other's transposes. The options
/// are read in the reference's order (uplo 2, TransA 3, TransB 4, whatever the layout).
///
/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn gemmt<T: Elem>(
    o: c_int,
    u: c_int,
    ta: c_int,
    tb: c_int,
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
) -> CResult {
    let row = order(o)?;
    let ul = need(uplo(u, row), 2, row)?;
    let ta = need(trans(ta), 3, row)?;
    let tb = need(trans(tb), 4, row)?;
    // SAFETY: (both) the BLAS contract, checked by the Fortran level.
    let r = if !row {
        // SAFETY: the BLAS contract, checked by the Fortran level.
        unsafe { f::gemmt(ul, ta, tb, n, k, alpha, a, lda, b, ldb, beta, c, ldc) }
    } else {
        // SAFETY: the BLAS contract, checked by the Fortran level.
        unsafe { f::gemmt(ul, tb, ta, n, k, alpha, b, ldb, a, lda, beta, c, ldc) }
    };
    fr(r, row)
}

macro_rules! xymm {
    ($name:ident) => {
        /// # Safety
        /// The CBLAS contract.
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe fn $name<T: Elem>(
            o: c_int,
            s: c_int,
            u: c_int,
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
        ) -> CResult {
            let row = order(o)?;
            let sd = need(side(s, row), 2, row)?;
            let ul = need(uplo(u, row), 3, row)?;
            let (m, n) = if row { (n, m) } else { (m, n) };
            // SAFETY: the BLAS contract, checked by the Fortran level.
            fr(
                // SAFETY: the BLAS contract, checked by the Fortran level.
                unsafe { f::$name(sd, ul, m, n, alpha, a, lda, b, ldb, beta, c, ldc) },
                row,
            )
        }
    };
}
xymm!(symm);
xymm!(hemm);

/// The transposition a row-major SYRK/SYR2K (`herm = false`) or HERK/HER2K (`herm = true`)
/// call becomes, as the reference maps it; `None` is an invalid setting (parameter 3).
fn rank_k_trans<T: Elem>(t: c_int, row: bool, herm: bool) -> Option<u8> {
    let t = trans(t)?;
    if !row {
        return Some(t);
    }
    match (t, herm, T::IS_COMPLEX) {
        (b'N', true, _) => Some(b'C'),
        (b'C', true, _) => Some(b'N'),
        (b'T', true, _) => None,
        (b'N', false, _) => Some(b'T'),
        (b'T', false, _) => Some(b'N'),
        (b'C', false, false) => Some(b'N'),
        _ => None,
    }
}

/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn syrk<T: Elem>(
    o: c_int,
    u: c_int,
    t: c_int,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) -> CResult {
    let row = order(o)?;
    let ul = need(uplo(u, row), 2, row)?;
    let tr = need(rank_k_trans::<T>(t, row, false), 3, row)?;
    // SAFETY: the BLAS contract, checked by the Fortran level.
    fr(
        // SAFETY: the BLAS contract, checked by the Fortran level.
        unsafe { f::syrk(ul, tr, n, k, alpha, a, lda, beta, c, ldc) },
        row,
    )
}

/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn herk<T: Elem>(
    o: c_int,
    u: c_int,
    t: c_int,
    n: i64,
    k: i64,
    alpha: T::Real,
    a: *const T,
    lda: i64,
    beta: T::Real,
    c: *mut T,
    ldc: i64,
) -> CResult {
    let row = order(o)?;
    let ul = need(uplo(u, row), 2, row)?;
    let tr = need(rank_k_trans::<T>(t, row, true), 3, row)?;
    // SAFETY: the BLAS contract, checked by the Fortran level.
    fr(
        // SAFETY: the BLAS contract, checked by the Fortran level.
        unsafe { f::herk(ul, tr, n, k, alpha, a, lda, beta, c, ldc) },
        row,
    )
}

/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn syr2k<T: Elem>(
    o: c_int,
    u: c_int,
    t: c_int,
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
) -> CResult {
    let row = order(o)?;
    let ul = need(uplo(u, row), 2, row)?;
    let tr = need(rank_k_trans::<T>(t, row, false), 3, row)?;
    // SAFETY: the BLAS contract, checked by the Fortran level.
    fr(
        // SAFETY: the BLAS contract, checked by the Fortran level.
        unsafe { f::syr2k(ul, tr, n, k, alpha, a, lda, b, ldb, beta, c, ldc) },
        row,
    )
}

/// # Safety
/// The CBLAS contract.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn her2k<T: Elem>(
    o: c_int,
    u: c_int,
    t: c_int,
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
) -> CResult {
    let row = order(o)?;
    let ul = need(uplo(u, row), 2, row)?;
    let tr = need(rank_k_trans::<T>(t, row, true), 3, row)?;
    let alpha = if row { Scalar::conj(alpha) } else { alpha };
    // SAFETY: the BLAS contract, checked by the Fortran level.
    fr(
        // SAFETY: the BLAS contract, checked by the Fortran level.
        unsafe { f::her2k(ul, tr, n, k, alpha, a, lda, b, ldb, beta, c, ldc) },
        row,
    )
}

macro_rules! trxm {
    ($name:ident) => {
        /// # Safety
        /// The CBLAS contract.
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe fn $name<T: Elem>(
            o: c_int,
            s: c_int,
            u: c_int,
            t: c_int,
            d: c_int,
            m: i64,
            n: i64,
            alpha: T,
            a: *const T,
            lda: i64,
            b: *mut T,
            ldb: i64,
        ) -> CResult {
            let row = order(o)?;
            let sd = need(side(s, row), 2, row)?;
            let ul = need(uplo(u, row), 3, row)?;
            let tr = need(trans(t), 4, row)?;
            let dg = need(diag(d), 5, row)?;
            let (m, n) = if row { (n, m) } else { (m, n) };
            // SAFETY: the BLAS contract, checked by the Fortran level.
            fr(
                // SAFETY: the BLAS contract, checked by the Fortran level.
                unsafe { f::$name(sd, ul, tr, dg, m, n, alpha, a, lda, b, ldb) },
                row,
            )
        }
    };
}
trxm!(trmm);
trxm!(trsm);

// ---- The exported symbols ----------------------------------------------------------------------

/// The table of CBLAS Level 2 and 3 routines: per line, the implementation above, every
/// exported name with its type, the reference's row-major renumbering, and the argument list
/// in CBLAS order with each argument's kind (`abi.rs`'s, and `e` for an enumeration). Per name
/// it generates the `cblas_<sym>` (LP64) and `cblas_<sym>64_` (ILP64) entries and their
/// `scipy_` forms ([`crate::family`]), and records the C prototype `include/hetblas.h` is
/// rendered from (`crate::header`; a `///` line above a table line becomes the header's
/// comment there).
///
/// `swap(a, b)`: the reference CBLAS reports a row-major call's error in argument `a` as `b`
/// and the other way round (the numbering of the column-major call it makes, plus one); the
/// default handler undoes it ([`crate::xerbla::unswap`]). The pairs of a line are disjoint.
macro_rules! cblas {
    ($(
        $(#[doc = $doc:literal])*
        $imp:ident [$($sym:ident $T:ty),+] $(swap($x:literal, $y:literal))* ($($args:tt)*);
    )*) => {
        $(cblas!(@routine $imp [$($sym $T),+] [$(($x, $y)),*] ($($args)*));)*

        /// The C prototype of every name of the table, a slice per line ([`crate::header`]).
        #[cfg(test)]
        pub(crate) static DECLS: &[&[crate::header::Decl]] = &[
            $(c_decls!([$($sym $T),+] ($($args)*) [] [$(($x, $y)),*] [$($doc),*])),*
        ];
    };
    (@routine $imp:ident [$($sym:ident $T:ty),+] $swaps:tt $args:tt) => {
        paste::paste! { $(
            cblas!(@entry $imp, [<cblas_ $sym>], $sym, $T, LpInt, Reference, $swaps; $args);
            #[cfg(not(feature = "ilp64"))]
            cblas!(@entry $imp, [<cblas_ $sym 64_>], $sym, $T, i64, Reference, $swaps; $args);
            cblas!(@entry $imp, [<scipy_cblas_ $sym>], $sym, $T, i32, ScipyLp64, $swaps; $args);
            cblas!(@entry $imp, [<scipy_cblas_ $sym 64_>], $sym, $T, i64, ScipyIlp64, $swaps;
                $args);
        )+ }
    };
    (@entry $imp:ident, $export:ident, $sym:ident, $T:ty, $I:ty, $fam:ident, $swaps:tt;
     ($($k:ident $a:ident),* $(,)?)) => {
        #[doc = concat!("CBLAS `cblas_", stringify!($sym), "`.")]
        ///
        /// # Safety
        /// The CBLAS contract.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        pub unsafe extern "C" fn $export($($a: cty!($k, $T, $I)),*) {
            fast_path!(cblas $imp, $fam, $T; ($($k $a),*));
            crate::abi::entry(crate::family::Family::$fam, stringify!($export), || {
                // SAFETY: the CBLAS contract.
                let r = unsafe { $imp::<$T>($(cval!($k, $T, $a)),*) };
                if let Err((info, row)) = r {
                    let name = concat!("cblas_", stringify!($sym));
                    crate::xerbla::report_cblas(name, info, row, &$swaps);
                }
            })
        }
    };
}

cblas! {
    gemv [sgemv f32, dgemv f64, cgemv C32, zgemv C64] swap(3, 4)
        (e order, e trans, i m, i n, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy);
    gbmv [sgbmv f32, dgbmv f64, cgbmv C32, zgbmv C64] swap(3, 4) swap(5, 6)
        (e order, e trans, i m, i n, i kl, i ku, v alpha, p a, i lda, p x, i incx, v beta, m y,
         i incy);
    hemv [chemv C32, zhemv C64]
        (e order, e uplo, i n, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy);
    symv [ssymv f32, dsymv f64]
        (e order, e uplo, i n, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy);
    hbmv [chbmv C32, zhbmv C64]
        (e order, e uplo, i n, i k, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy);
    sbmv [ssbmv f32, dsbmv f64]
        (e order, e uplo, i n, i k, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy);
    hpmv [chpmv C32, zhpmv C64]
        (e order, e uplo, i n, v alpha, p ap, p x, i incx, v beta, m y, i incy);
    spmv [sspmv f32, dspmv f64]
        (e order, e uplo, i n, v alpha, p ap, p x, i incx, v beta, m y, i incy);
    trmv [strmv f32, dtrmv f64, ctrmv C32, ztrmv C64]
        (e order, e uplo, e trans, e diag, i n, p a, i lda, m x, i incx);
    trsv [strsv f32, dtrsv f64, ctrsv C32, ztrsv C64]
        (e order, e uplo, e trans, e diag, i n, p a, i lda, m x, i incx);
    tbmv [stbmv f32, dtbmv f64, ctbmv C32, ztbmv C64]
        (e order, e uplo, e trans, e diag, i n, i k, p a, i lda, m x, i incx);
    tbsv [stbsv f32, dtbsv f64, ctbsv C32, ztbsv C64]
        (e order, e uplo, e trans, e diag, i n, i k, p a, i lda, m x, i incx);
    tpmv [stpmv f32, dtpmv f64, ctpmv C32, ztpmv C64]
        (e order, e uplo, e trans, e diag, i n, p ap, m x, i incx);
    tpsv [stpsv f32, dtpsv f64, ctpsv C32, ztpsv C64]
        (e order, e uplo, e trans, e diag, i n, p ap, m x, i incx);
    ger [sger f32, dger f64] swap(2, 3) swap(6, 8)
        (e order, i m, i n, v alpha, p x, i incx, p y, i incy, m a, i lda);
    geru [cgeru C32, zgeru C64] swap(2, 3) swap(6, 8)
        (e order, i m, i n, v alpha, p x, i incx, p y, i incy, m a, i lda);
    gerc [cgerc C32, zgerc C64] swap(2, 3) swap(6, 8)
        (e order, i m, i n, v alpha, p x, i incx, p y, i incy, m a, i lda);
    her [cher C32, zher C64] (e order, e uplo, i n, r alpha, p x, i incx, m a, i lda);
    hpr [chpr C32, zhpr C64] (e order, e uplo, i n, r alpha, p x, i incx, m ap);
    her2 [cher2 C32, zher2 C64] swap(6, 8)
        (e order, e uplo, i n, v alpha, p x, i incx, p y, i incy, m a, i lda);
    hpr2 [chpr2 C32, zhpr2 C64] swap(6, 8)
        (e order, e uplo, i n, v alpha, p x, i incx, p y, i incy, m ap);
    syr [ssyr f32, dsyr f64] (e order, e uplo, i n, v alpha, p x, i incx, m a, i lda);
    spr [sspr f32, dspr f64] (e order, e uplo, i n, v alpha, p x, i incx, m ap);
    syr2 [ssyr2 f32, dsyr2 f64]
        (e order, e uplo, i n, v alpha, p x, i incx, p y, i incy, m a, i lda);
    spr2 [sspr2 f32, dspr2 f64]
        (e order, e uplo, i n, v alpha, p x, i incx, p y, i incy, m ap);

    gemm [sgemm f32, dgemm f64, cgemm C32, zgemm C64] swap(4, 5) swap(9, 11)
        (e order, e transa, e transb, i m, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c,
         i ldc);
    /// GEMMT: C's uplo triangle of alpha op(A) op(B) + beta C (OpenBLAS's and MKL's
    /// cblas_?gemmt, reference CBLAS 3.12's cblas_?gemmtr: one routine under both names).
    // Only A and B are exchanged (the reference's own handler, matching "gemm", also
    // exchanges 4 and 5, TransB and N, which GEMMT does not swap).
    gemmt [sgemmt f32, dgemmt f64, cgemmt C32, zgemmt C64,
           sgemmtr f32, dgemmtr f64, cgemmtr C32, zgemmtr C64] swap(9, 11)
        (e order, e uplo, e transa, e transb, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta,
         m c, i ldc);
    symm [ssymm f32, dsymm f64, csymm C32, zsymm C64] swap(4, 5)
        (e order, e side, e uplo, i m, i n, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc);
    hemm [chemm C32, zhemm C64] swap(4, 5)
        (e order, e side, e uplo, i m, i n, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc);
    syrk [ssyrk f32, dsyrk f64, csyrk C32, zsyrk C64]
        (e order, e uplo, e trans, i n, i k, v alpha, p a, i lda, v beta, m c, i ldc);
    herk [cherk C32, zherk C64]
        (e order, e uplo, e trans, i n, i k, r alpha, p a, i lda, r beta, m c, i ldc);
    syr2k [ssyr2k f32, dsyr2k f64, csyr2k C32, zsyr2k C64]
        (e order, e uplo, e trans, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc);
    her2k [cher2k C32, zher2k C64]
        (e order, e uplo, e trans, i n, i k, v alpha, p a, i lda, p b, i ldb, r beta, m c, i ldc);
    trmm [strmm f32, dtrmm f64, ctrmm C32, ztrmm C64] swap(6, 7)
        (e order, e side, e uplo, e transa, e diag, i m, i n, v alpha, p a, i lda, m b, i ldb);
    trsm [strsm f32, dtrsm f64, ctrsm C32, ztrsm C64] swap(6, 7)
        (e order, e side, e uplo, e transa, e diag, i m, i n, v alpha, p a, i lda, m b, i ldb);
}
