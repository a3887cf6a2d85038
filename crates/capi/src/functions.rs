//! The Level 1 routines that return a value or take only scalars (DOT, NRM2, ASUM, IAMAX,
//! CABS1, ROTG, ROTMG, SDSDOT, DSDOT): their implementations and Fortran entries.
//!
//! Complex dot products are computed by hetblas-refblas rather than forwarded: libraries do not
//! agree on how a Fortran COMPLEX function returns its value (registers or a hidden pointer),
//! and a dot product is bounded by memory bandwidth, which plain Rust reaches.

use crate::abi::{entry, LpInt};
use crate::elem::Elem;
use crate::symbols::Sym;
use hetblas_refblas::num_complex;
use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use hetblas_refblas::Scalar;

type Real<T> = <T as Scalar>::Real;

/// DOT of a real type (`sdot`, `ddot`).
///
/// # Safety
/// The reference BLAS contract for the vectors.
pub unsafe fn dot<T: Elem + hetblas_refblas::Real>(
    n: i64,
    x: *const T,
    incx: i64,
    y: *const T,
    incy: i64,
) -> T {
    if let Some(r) = call_host!(T, Sym::DOT, T; i n, p x, i incx, p y, i incy) {
        return r;
    }
    // SAFETY: the caller's contract.
    unsafe { hetblas_refblas::dot(n, x, incx, y, incy) }
}

/// NRM2 (`snrm2` ... `dznrm2`).
///
/// # Safety
/// The reference BLAS contract for the vector.
pub unsafe fn nrm2<T: Elem>(n: i64, x: *const T, incx: i64) -> Real<T> {
    if let Some(r) = call_host!(T, Sym::NRM2, Real<T>; i n, p x, i incx) {
        return r;
    }
    // SAFETY: the caller's contract.
    unsafe { hetblas_refblas::nrm2(n, x, incx) }
}

/// ASUM (`sasum` ... `dzasum`).
///
/// # Safety
/// The reference BLAS contract for the vector.
pub unsafe fn asum<T: Elem>(n: i64, x: *const T, incx: i64) -> Real<T> {
    if let Some(r) = call_host!(T, Sym::ASUM, Real<T>; i n, p x, i incx) {
        return r;
    }
    // SAFETY: the caller's contract.
    unsafe { hetblas_refblas::asum(n, x, incx) }
}

/// IAMAX (`isamax` ... `izamax`), 1-based.
///
/// # Safety
/// The reference BLAS contract for the vector.
pub unsafe fn iamax<T: Elem>(n: i64, x: *const T, incx: i64) -> i64 {
    if let Some(r) = call_host!(@index T, Sym::IAMAX; i n, p x, i incx) {
        return r;
    }
    // SAFETY: the caller's contract.
    unsafe { hetblas_refblas::iamax(n, x, incx) }
}

/// ROTG of a real type.
///
/// # Safety
/// Four valid pointers.
pub unsafe fn rotg<T: Elem + hetblas_refblas::Real>(a: *mut T, b: *mut T, c: *mut T, s: *mut T) {
    if call_host!(T, Sym::ROTG, (); m a, m b, m c, m s).is_none() {
        // SAFETY: the caller's pointers are valid.
        unsafe { hetblas_refblas::rotg(&mut *a, &mut *b, &mut *c, &mut *s) }
    }
}

/// ROTG of a complex type (`crotg`, `zrotg`).
///
/// # Safety
/// Four valid pointers.
pub unsafe fn crotg<R: hetblas_refblas::Real>(
    a: *mut num_complex::Complex<R>,
    b: *const num_complex::Complex<R>,
    c: *mut R,
    s: *mut num_complex::Complex<R>,
) where
    num_complex::Complex<R>: Elem + Scalar<Real = R>,
{
    if call_host!(num_complex::Complex<R>, Sym::ROTG, (); m a, p b, q c, m s).is_none() {
        // SAFETY: the caller's pointers are valid.
        unsafe { hetblas_refblas::rotg_complex(&mut *a, *b, &mut *c, &mut *s) }
    }
}

/// ROTMG of a real type.
///
/// # Safety
/// Valid pointers; `param` has 5 elements.
pub unsafe fn rotmg<T: Elem + hetblas_refblas::Real>(
    d1: *mut T,
    d2: *mut T,
    x1: *mut T,
    y1: *const T,
    param: *mut T,
) {
    if call_host!(T, Sym::ROTMG, (); m d1, m d2, m x1, p y1, m param).is_none() {
        // SAFETY: the caller's pointers are valid; `param` has 5 elements.
        unsafe {
            hetblas_refblas::rotmg(
                &mut *d1,
                &mut *d2,
                &mut *x1,
                *y1,
                &mut *param.cast::<[T; 5]>(),
            )
        }
    }
}

/// The Fortran entries of one name family: `[prefix] suffix, integer, family`.
macro_rules! functions {
    ([$($pre:tt)?] $suf:tt, $I:ty, $fam:ident) => {
        paste::paste! {
            functions!(@real [$($pre)?] $suf, $I, $fam, s, f32);
            functions!(@real [$($pre)?] $suf, $I, $fam, d, f64);
            functions!(@complex [$($pre)?] $suf, $I, $fam, c, C32, sc, s, f32);
            functions!(@complex [$($pre)?] $suf, $I, $fam, z, C64, dz, d, f64);

            /// SDSDOT: `sb + x.y` accumulated in double precision.
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? sdsdot $suf>](
                n: *const $I, sb: *const f32, x: *const f32, incx: *const $I, y: *const f32,
                incy: *const $I,
            ) -> f32 {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "sdsdot", || unsafe {
                    hetblas_refblas::sdsdot(*n as i64, *sb, x, *incx as i64, y, *incy as i64)
                })
            }

            /// DSDOT: the dot product of two f32 vectors, accumulated and returned in f64.
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? dsdot $suf>](
                n: *const $I, x: *const f32, incx: *const $I, y: *const f32, incy: *const $I,
            ) -> f64 {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "dsdot", || unsafe {
                    hetblas_refblas::dsdot(*n as i64, x, *incx as i64, y, *incy as i64)
                })
            }
        }
    };
    (@real [$($pre:tt)?] $suf:tt, $I:ty, $fam:ident, $p:ident, $T:ty) => {
        paste::paste! {
            /// Fortran DOT.
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $p dot $suf>](
                n: *const $I, x: *const $T, incx: *const $I, y: *const $T, incy: *const $I,
            ) -> $T {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "dot", || unsafe { dot::<$T>(*n as i64, x, *incx as i64, y, *incy as i64) })
            }
            /// Fortran NRM2.
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $p nrm2 $suf>](n: *const $I, x: *const $T, incx: *const $I) -> $T {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "nrm2", || unsafe { nrm2::<$T>(*n as i64, x, *incx as i64) })
            }
            /// Fortran ASUM.
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $p asum $suf>](n: *const $I, x: *const $T, incx: *const $I) -> $T {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "asum", || unsafe { asum::<$T>(*n as i64, x, *incx as i64) })
            }
            /// Fortran IAMAX.
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? i $p amax $suf>](n: *const $I, x: *const $T, incx: *const $I) -> $I {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "iamax", || unsafe { iamax::<$T>(*n as i64, x, *incx as i64) as $I })
            }
            /// Fortran ROTG: the Givens rotation that zeroes `b`.
            ///
            /// # Safety
            /// Four valid references.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $p rotg $suf>](a: *mut $T, b: *mut $T, c: *mut $T, s: *mut $T) {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "rotg", || unsafe { rotg::<$T>(a, b, c, s) })
            }
            /// Fortran ROTMG: the modified Givens rotation.
            ///
            /// # Safety
            /// Valid references; `param` has 5 elements.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $p rotmg $suf>](
                d1: *mut $T, d2: *mut $T, x1: *mut $T, y1: *const $T, param: *mut $T,
            ) {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "rotmg", || unsafe { rotmg::<$T>(d1, d2, x1, y1, param) })
            }
        }
    };
    (@complex [$($pre:tt)?] $suf:tt, $I:ty, $fam:ident, $p:ident, $T:ty, $rp:ident, $r:ident, $R:ty) => {
        paste::paste! {
            /// Fortran DOTU (a COMPLEX function, returned in registers as gfortran does).
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $p dotu $suf>](
                n: *const $I, x: *const $T, incx: *const $I, y: *const $T, incy: *const $I,
            ) -> $T {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "dotu", || unsafe {
                    hetblas_refblas::dotu(*n as i64, x, *incx as i64, y, *incy as i64)
                })
            }
            /// Fortran DOTC.
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $p dotc $suf>](
                n: *const $I, x: *const $T, incx: *const $I, y: *const $T, incy: *const $I,
            ) -> $T {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "dotc", || unsafe {
                    hetblas_refblas::dotc(*n as i64, x, *incx as i64, y, *incy as i64)
                })
            }
            /// Fortran complex NRM2 (`scnrm2`, `dznrm2`).
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $rp nrm2 $suf>](n: *const $I, x: *const $T, incx: *const $I) -> $R {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "nrm2", || unsafe { nrm2::<$T>(*n as i64, x, *incx as i64) })
            }
            /// Fortran complex ASUM (`scasum`, `dzasum`).
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $rp asum $suf>](n: *const $I, x: *const $T, incx: *const $I) -> $R {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "asum", || unsafe { asum::<$T>(*n as i64, x, *incx as i64) })
            }
            /// Fortran complex IAMAX (`icamax`, `izamax`).
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? i $p amax $suf>](n: *const $I, x: *const $T, incx: *const $I) -> $I {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "iamax", || unsafe { iamax::<$T>(*n as i64, x, *incx as i64) as $I })
            }
            /// Fortran CABS1 (`scabs1`, `dcabs1`): `|re| + |im|`.
            ///
            /// # Safety
            /// A valid reference.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $r cabs1 $suf>](z: *const $T) -> $R {
                // SAFETY: the caller's reference is valid.
                entry(crate::family::Family::$fam, "cabs1", || unsafe { (*z).abs1() })
            }
            /// Fortran complex ROTG (`crotg`, `zrotg`).
            ///
            /// # Safety
            /// Four valid references.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? $p rotg $suf>](a: *mut $T, b: *const $T, c: *mut $R, s: *mut $T) {
                // SAFETY: the caller's references are valid (the BLAS contract).
                entry(crate::family::Family::$fam, "rotg", || unsafe { crotg::<$R>(a, b, c, s) })
            }
        }
    };
}

functions!([] _, LpInt, Reference);
#[cfg(not(feature = "ilp64"))]
functions!([] _64_, i64, Reference);
functions!([scipy_] _, i32, ScipyLp64);
functions!([scipy_] _64_, i64, ScipyIlp64);
