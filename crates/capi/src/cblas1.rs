//! CBLAS Level 1: `cblas_saxpy` ... `cblas_izamax`, over the same implementations as the
//! Fortran entries. Level 1 has no argument checks in the reference (it returns on n <= 0), and
//! `cblas_i?amax` returns a 0-based index.

use crate::abi::{entry, LpInt};
use crate::elem::Elem;
use crate::functions as fun;
use crate::routines as f;
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

/// The CBLAS Level 1 entries of one name family: `[prefix] [suffix], integer, family`.
macro_rules! cblas1 {
    ([$($pre:tt)?] [$($suf:tt)?], $I:ty, $fam:ident) => {
        cblas1!(@all [$($pre)?] [$($suf)?], $I, $fam, s, f32, f32, s);
        cblas1!(@all [$($pre)?] [$($suf)?], $I, $fam, d, f64, f64, d);
        cblas1!(@all [$($pre)?] [$($suf)?], $I, $fam, c, C32, f32, sc);
        cblas1!(@all [$($pre)?] [$($suf)?], $I, $fam, z, C64, f64, dz);
        cblas1!(@real [$($pre)?] [$($suf)?], $I, $fam, s, f32);
        cblas1!(@real [$($pre)?] [$($suf)?], $I, $fam, d, f64);
        cblas1!(@complex [$($pre)?] [$($suf)?], $I, $fam, c, C32, f32, cs, s);
        cblas1!(@complex [$($pre)?] [$($suf)?], $I, $fam, z, C64, f64, zd, d);
        paste::paste! {
            /// `cblas_sdsdot`.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_sdsdot $($suf)?>](
                n: $I, sb: f32, x: *const f32, incx: $I, y: *const f32, incy: $I,
            ) -> f32 {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_sdsdot", || unsafe {
                    hetblas_refblas::sdsdot(n as i64, sb, x, incx as i64, y, incy as i64)
                })
            }
            /// `cblas_dsdot`.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_dsdot $($suf)?>](
                n: $I, x: *const f32, incx: $I, y: *const f32, incy: $I,
            ) -> f64 {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_dsdot", || unsafe {
                    hetblas_refblas::dsdot(n as i64, x, incx as i64, y, incy as i64)
                })
            }
        }
    };
    // Every precision: AXPY, SCAL, COPY, SWAP, NRM2, ASUM, IAMAX.
    (@all [$($pre:tt)?] [$($suf:tt)?], $I:ty, $fam:ident, $p:ident, $T:ty, $R:ty, $rp:ident) => {
        paste::paste! {
            /// CBLAS AXPY.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p axpy $($suf)?>](
                n: $I, alpha: <$T as Elem>::CScalar, x: *const $T, incx: $I, y: *mut $T, incy: $I,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_axpy", || unsafe {
                    run(f::axpy(n as i64, <$T>::cscalar(alpha), x, incx as i64, y, incy as i64))
                })
            }
            /// CBLAS SCAL.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p scal $($suf)?>](
                n: $I, alpha: <$T as Elem>::CScalar, x: *mut $T, incx: $I,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_scal", || unsafe {
                    run(f::scal(n as i64, <$T>::cscalar(alpha), x, incx as i64))
                })
            }
            /// CBLAS COPY.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p copy $($suf)?>](
                n: $I, x: *const $T, incx: $I, y: *mut $T, incy: $I,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_copy", || unsafe {
                    run(f::copy(n as i64, x, incx as i64, y, incy as i64))
                })
            }
            /// CBLAS SWAP.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p swap $($suf)?>](
                n: $I, x: *mut $T, incx: $I, y: *mut $T, incy: $I,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_swap", || unsafe {
                    run(f::swap(n as i64, x, incx as i64, y, incy as i64))
                })
            }
            /// CBLAS NRM2.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $rp nrm2 $($suf)?>](n: $I, x: *const $T, incx: $I) -> $R {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_nrm2", || unsafe { fun::nrm2::<$T>(n as i64, x, incx as i64) })
            }
            /// CBLAS ASUM.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $rp asum $($suf)?>](n: $I, x: *const $T, incx: $I) -> $R {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_asum", || unsafe { fun::asum::<$T>(n as i64, x, incx as i64) })
            }
            /// CBLAS IAMAX (0-based).
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_i $p amax $($suf)?>](n: $I, x: *const $T, incx: $I) -> usize {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_iamax", || index0(unsafe { fun::iamax::<$T>(n as i64, x, incx as i64) }))
            }
        }
    };
    (@real [$($pre:tt)?] [$($suf:tt)?], $I:ty, $fam:ident, $p:ident, $T:ty) => {
        paste::paste! {
            /// CBLAS DOT.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p dot $($suf)?>](
                n: $I, x: *const $T, incx: $I, y: *const $T, incy: $I,
            ) -> $T {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_dot", || unsafe { fun::dot::<$T>(n as i64, x, incx as i64, y, incy as i64) })
            }
            /// CBLAS ROT.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p rot $($suf)?>](
                n: $I, x: *mut $T, incx: $I, y: *mut $T, incy: $I, c: $T, s: $T,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_rot", || unsafe {
                    run(f::rot(n as i64, x, incx as i64, y, incy as i64, c, s))
                })
            }
            /// CBLAS ROTM.
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p rotm $($suf)?>](
                n: $I, x: *mut $T, incx: $I, y: *mut $T, incy: $I, param: *const $T,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_rotm", || unsafe {
                    run(f::rotm(n as i64, x, incx as i64, y, incy as i64, param))
                })
            }
            /// CBLAS ROTG.
            ///
            /// # Safety
            /// Four valid pointers.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p rotg $($suf)?>](a: *mut $T, b: *mut $T, c: *mut $T, s: *mut $T) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_rotg", || unsafe { fun::rotg::<$T>(a, b, c, s) })
            }
            /// CBLAS ROTMG.
            ///
            /// # Safety
            /// Valid pointers; `param` has 5 elements.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p rotmg $($suf)?>](
                d1: *mut $T, d2: *mut $T, x1: *mut $T, y1: $T, param: *mut $T,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_rotmg", || unsafe { fun::rotmg::<$T>(d1, d2, x1, &y1, param) })
            }
        }
    };
    (@complex [$($pre:tt)?] [$($suf:tt)?], $I:ty, $fam:ident, $p:ident, $T:ty, $R:ty, $rs:ident, $r:ident) => {
        paste::paste! {
            /// CBLAS DOTU (result through a pointer).
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p dotu_sub $($suf)?>](
                n: $I, x: *const $T, incx: $I, y: *const $T, incy: $I, dot: *mut $T,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_dotu_sub", || unsafe {
                    *dot = hetblas_refblas::dotu(n as i64, x, incx as i64, y, incy as i64)
                })
            }
            /// CBLAS DOTC (result through a pointer).
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p dotc_sub $($suf)?>](
                n: $I, x: *const $T, incx: $I, y: *const $T, incy: $I, dot: *mut $T,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_dotc_sub", || unsafe {
                    *dot = hetblas_refblas::dotc(n as i64, x, incx as i64, y, incy as i64)
                })
            }
            /// CBLAS SCAL by a real scalar (`cblas_csscal`, `cblas_zdscal`).
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $rs scal $($suf)?>](n: $I, alpha: $R, x: *mut $T, incx: $I) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_rscal", || unsafe { run(f::rscal(n as i64, alpha, x, incx as i64)) })
            }
            /// CBLAS ROT of complex vectors by a real rotation (`cblas_csrot`, `cblas_zdrot`).
            ///
            /// # Safety
            /// The CBLAS contract.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $rs rot $($suf)?>](
                n: $I, x: *mut $T, incx: $I, y: *mut $T, incy: $I, c: $R, s: $R,
            ) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_rot", || unsafe {
                    run(f::rot(n as i64, x, incx as i64, y, incy as i64, c, s))
                })
            }
            /// CBLAS complex ROTG.
            ///
            /// # Safety
            /// Four valid pointers.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $p rotg $($suf)?>](a: *mut $T, b: *const $T, c: *mut $R, s: *mut $T) {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_rotg", || unsafe { fun::crotg::<$R>(a, b, c, s) })
            }
            /// CBLAS CABS1 (`cblas_scabs1`, `cblas_dcabs1`).
            ///
            /// # Safety
            /// A valid pointer.
            #[no_mangle]
            pub unsafe extern "C" fn [<$($pre)? cblas_ $r cabs1 $($suf)?>](z: *const $T) -> $R {
                // SAFETY: the CBLAS contract.
                entry(crate::family::Family::$fam, "cblas_cabs1", || unsafe { (*z).abs1() })
            }
        }
    };
}

cblas1!([] [], LpInt, Reference);
#[cfg(not(feature = "ilp64"))]
cblas1!([][64_], i64, Reference);
cblas1!([scipy_] [], i32, ScipyLp64);
cblas1!([scipy_][64_], i64, ScipyIlp64);
