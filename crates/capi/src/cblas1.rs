//! CBLAS Level 1: `cblas_saxpy` ... `cblas_izamax`, over the same implementations as the
//! Fortran entries. Level 1 has no argument checks in the reference (it returns on n <= 0), and
//! `cblas_i?amax` returns a 0-based index.
//!
//! One table line per routine, as `cblas!`'s: the exported names with their types, the
//! arguments in CBLAS order with their kinds (`abi.rs`'s `i v r p m`, and `q` for a real
//! array), the returned value's kind, and the body: an expression over the arguments read into
//! their inside values. Per name it generates the four entries (`cblas_x`, `cblas_x64_` and
//! the `scipy_` forms) and records the C prototype `include/hetblas.h` is rendered from.

use crate::abi::LpInt;
use crate::functions as fun;
use crate::routines as f;
use hetblas_refblas as rb;
use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use hetblas_refblas::Scalar;

/// 0-based CBLAS index from the 1-based Fortran one (0 when the vector is empty).
fn index0(i: i64) -> usize {
    if i > 0 {
        (i - 1) as usize
    } else {
        0
    }
}

/// Runs a Level 1 subroutine, which never reports (no checks in the reference).
fn run(r: Result<(), i32>) {
    debug_assert!(r.is_ok(), "Level 1 routines have no argument checks");
}

/// The Rust type of a CBLAS Level 1 result: `[]` none, `[r]` the real type, `[v]` the type
/// itself (real types), `[z]` an index (`size_t`), `[d]` a double (`dsdot`).
macro_rules! cret {
    ([], $T:ty) => {
        ()
    };
    ([r], $T:ty) => {
        <$T as Scalar>::Real
    };
    ([v], $T:ty) => {
        $T
    };
    ([z], $T:ty) => {
        usize
    };
    ([d], $T:ty) => {
        f64
    };
}

/// The table of CBLAS Level 1 routines (see the module's documentation).
macro_rules! cblas1 {
    ($(
        [$($sym:ident $T:ty),+] ($($args:tt)*) $(-> $ret:ident)? => $body:expr;
    )*) => {
        $(cblas1!(@routine [$($sym $T),+] ($($args)*) [$($ret)?] { $body });)*

        /// The C prototype of every name of the table, a slice per line ([`crate::header`]).
        #[cfg(test)]
        pub(crate) static DECLS: &[&[crate::header::Decl]] = &[
            $(c_decls!([$($sym $T),+] ($($args)*) [$($ret)?] [] [])),*
        ];
    };
    (@routine [$($sym:ident $T:ty),+] $args:tt $ret:tt $body:tt) => {
        paste::paste! { $(
            cblas1!(@entry [<cblas_ $sym>], $T, LpInt, Reference, $ret, $body; $args);
            #[cfg(not(feature = "ilp64"))]
            cblas1!(@entry [<cblas_ $sym 64_>], $T, i64, Reference, $ret, $body; $args);
            cblas1!(@entry [<scipy_cblas_ $sym>], $T, i32, ScipyLp64, $ret, $body; $args);
            cblas1!(@entry [<scipy_cblas_ $sym 64_>], $T, i64, ScipyIlp64, $ret, $body; $args);
        )+ }
    };
    (@entry $export:ident, $T:ty, $I:ty, $fam:ident, $ret:tt, { $body:expr };
     ($($k:ident $a:ident),* $(,)?)) => {
        #[doc = concat!("CBLAS `", stringify!($export), "`.")]
        ///
        /// # Safety
        /// The CBLAS contract.
        #[no_mangle]
        pub unsafe extern "C" fn $export($($a: cty!($k, $T, $I)),*) -> cret!($ret, $T) {
            /// The line's body over the inside values.
            ///
            /// # Safety
            /// The CBLAS contract.
            unsafe fn body($($a: rty!($k, $T)),*) -> cret!($ret, $T) {
                // SAFETY: the CBLAS contract.
                unsafe { $body }
            }
            crate::abi::entry(crate::family::Family::$fam, stringify!($export), || {
                // SAFETY: the CBLAS contract.
                unsafe { body($(cval!($k, $T, $a)),*) }
            })
        }
    };
}

cblas1! {
    [saxpy f32, daxpy f64, caxpy C32, zaxpy C64] (i n, v alpha, p x, i incx, m y, i incy)
        => run(f::axpy(n, alpha, x, incx, y, incy));
    [sscal f32, dscal f64, cscal C32, zscal C64] (i n, v alpha, m x, i incx)
        => run(f::scal(n, alpha, x, incx));
    [scopy f32, dcopy f64, ccopy C32, zcopy C64] (i n, p x, i incx, m y, i incy)
        => run(f::copy(n, x, incx, y, incy));
    [sswap f32, dswap f64, cswap C32, zswap C64] (i n, m x, i incx, m y, i incy)
        => run(f::swap(n, x, incx, y, incy));
    [snrm2 f32, dnrm2 f64, scnrm2 C32, dznrm2 C64] (i n, p x, i incx) -> r
        => fun::nrm2(n, x, incx);
    [sasum f32, dasum f64, scasum C32, dzasum C64] (i n, p x, i incx) -> r
        => fun::asum(n, x, incx);
    [isamax f32, idamax f64, icamax C32, izamax C64] (i n, p x, i incx) -> z
        => index0(fun::iamax(n, x, incx));
    [sdot f32, ddot f64] (i n, p x, i incx, p y, i incy) -> v => fun::dot(n, x, incx, y, incy);
    [srot f32, drot f64] (i n, m x, i incx, m y, i incy, r c, r s)
        => run(f::rot(n, x, incx, y, incy, c, s));
    [srotm f32, drotm f64] (i n, m x, i incx, m y, i incy, p param)
        => run(f::rotm(n, x, incx, y, incy, param));
    [srotg f32, drotg f64] (m a, m b, m c, m s) => fun::rotg(a, b, c, s);
    [srotmg f32, drotmg f64] (m d1, m d2, m x1, v y1, m param)
        => fun::rotmg(d1, d2, x1, &y1, param);
    [cdotu_sub C32, zdotu_sub C64] (i n, p x, i incx, p y, i incy, m dotu)
        => *dotu = rb::dotu(n, x, incx, y, incy);
    [cdotc_sub C32, zdotc_sub C64] (i n, p x, i incx, p y, i incy, m dotc)
        => *dotc = rb::dotc(n, x, incx, y, incy);
    [csscal C32, zdscal C64] (i n, r alpha, m x, i incx) => run(f::rscal(n, alpha, x, incx));
    [csrot C32, zdrot C64] (i n, m x, i incx, m y, i incy, r c, r s)
        => run(f::rot(n, x, incx, y, incy, c, s));
    [crotg C32, zrotg C64] (m a, p b, q c, m s) => fun::crotg(a, b, c, s);
    [scabs1 C32, dcabs1 C64] (p z) -> r => (*z).abs1();
    [sdsdot f32] (i n, v sb, p x, i incx, p y, i incy) -> v
        => rb::sdsdot(n, sb, x, incx, y, incy);
    [dsdot f32] (i n, p x, i incx, p y, i incy) -> d => rb::dsdot(n, x, incx, y, incy);
}
