//! Every routine libhetblas.so exports, one line each: its family, its result, its symbols
//! (one per precision), and its arguments in CBLAS order (the Fortran entries have no
//! `Order`). Flags: `own`, the result is computed by hetblas rather than forwarded to the host
//! BLAS (so within the dtype bound, not bit-identical); `solve`, a triangular solve (its error
//! bound grows with the size).

use super::call::CArg;
use super::call::{fortran, IntoRet, Ret};
use super::oracle::{fuzz, Ctx, Spec};
use super::values::{Api, Args, El, Int, Kind, Val};
use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use std::ffi::{c_int, c_void};

/// One symbol of the table, ready to fuzz.
pub struct Entry {
    pub run: fn(&mut Ctx, Api),
}

/// The Fortran result type of a result kind (`I`: the entry's integer).
macro_rules! fret {
    (None, $T:ty, $I:ty) => {
        ()
    };
    (T, $T:ty, $I:ty) => {
        $T
    };
    (Sub, $T:ty, $I:ty) => {
        $T
    };
    (Re, $T:ty, $I:ty) => {
        <$T as El>::Re
    };
    (Idx, $T:ty, $I:ty) => {
        $I
    };
    (F32, $T:ty, $I:ty) => {
        f32
    };
    (F64, $T:ty, $I:ty) => {
        f64
    };
}
/// The CBLAS result type of a result kind (CBLAS indices are `size_t`).
macro_rules! cret {
    (None, $T:ty) => {
        ()
    };
    (T, $T:ty) => {
        $T
    };
    (Sub, $T:ty) => {
        $T
    };
    (Re, $T:ty) => {
        <$T as El>::Re
    };
    (Idx, $T:ty) => {
        usize
    };
    (F32, $T:ty) => {
        f32
    };
    (F64, $T:ty) => {
        f64
    };
}

macro_rules! table {
    ($($family:ident $(($($flag:ident),*))? -> $ret:ident [$($sym:ident $T:ty),+] ($($k:ident)*);)*) => {
        /// Every exported routine, each precision.
        pub fn entries() -> Vec<Entry> {
            let mut v: Vec<Entry> = Vec::new();
            $({
                const KINDS: &[Kind] = &[$(Kind::$k),*];
                const FLAGS: &[&str] = &[$($(stringify!($flag)),*)?];
                table!(@caller $ret, ($($k)*));
                $(
                    v.push(Entry {
                        run: |ctx, api| {
                            let spec = Spec::<$T> {
                                sym: stringify!($sym),
                                family: stringify!($family),
                                kinds: KINDS,
                                sub: stringify!($ret) == "Sub",
                                forwarded: !FLAGS.contains(&"own"),
                                solve: FLAGS.contains(&"solve"),
                                fortran: [
                                    fortran::<$T, i32, fret!($ret, $T, i32)>,
                                    fortran::<$T, i64, fret!($ret, $T, i64)>,
                                ],
                                cblas: [
                                    call_cblas::<$T, i32, cret!($ret, $T)>,
                                    call_cblas::<$T, i64, cret!($ret, $T)>,
                                ],
                            };
                            fuzz(ctx, &spec, api)
                        },
                    });
                )+
            })*
            v
        }
    };
    (@caller Sub, $k:tt) => { cblas_caller!(sub call_cblas, $k); };
    (@caller $other:ident, $k:tt) => { cblas_caller!(call_cblas, $k); };
}

table! {
    // ---- Level 1 ----
    axpy -> None [saxpy f32, daxpy f64, caxpy C32, zaxpy C64] (Dim Scalar In Inc Out Inc);
    scal -> None [sscal f32, dscal f64, cscal C32, zscal C64] (Dim Scalar Out Inc);
    rscal -> None [csscal C32, zdscal C64] (Dim Real Out Inc);
    copy -> None [scopy f32, dcopy f64, ccopy C32, zcopy C64] (Dim In Inc Out Inc);
    swap -> None [sswap f32, dswap f64, cswap C32, zswap C64] (Dim Out Inc Out Inc);
    rot -> None [srot f32, drot f64, csrot C32, zdrot C64] (Dim Out Inc Out Inc Real Real);
    rotm -> None [srotm f32, drotm f64] (Dim Out Inc Out Inc Param);
    rotg -> None [srotg f32, drotg f64, crotg C32, zrotg C64] (Out Out Out Out);
    rotmg -> None [srotmg f32, drotmg f64] (Out Out Out Scalar Out);
    dot -> T [sdot f32, ddot f64] (Dim In Inc In Inc);
    dotu (own) -> Sub [cdotu C32, zdotu C64] (Dim In Inc In Inc);
    dotc (own) -> Sub [cdotc C32, zdotc C64] (Dim In Inc In Inc);
    nrm2 -> Re [snrm2 f32, dnrm2 f64, scnrm2 C32, dznrm2 C64] (Dim In Inc);
    asum -> Re [sasum f32, dasum f64, scasum C32, dzasum C64] (Dim In Inc);
    iamax -> Idx [isamax f32, idamax f64, icamax C32, izamax C64] (Dim In Inc);
    cabs1 (own) -> Re [scabs1 C32, dcabs1 C64] (In);
    sdsdot (own) -> F32 [sdsdot f32] (Dim Real In Inc In Inc);
    dsdot (own) -> F64 [dsdot f32] (Dim In Inc In Inc);
    // ---- Level 2 ----
    gemv -> None [sgemv f32, dgemv f64, cgemv C32, zgemv C64]
        (Order Trans Dim Dim Scalar In Ld In Inc Scalar Out Inc);
    gbmv -> None [sgbmv f32, dgbmv f64, cgbmv C32, zgbmv C64]
        (Order Trans Dim Dim Band Band Scalar In Ld In Inc Scalar Out Inc);
    hemv -> None [chemv C32, zhemv C64] (Order Uplo Dim Scalar In Ld In Inc Scalar Out Inc);
    symv -> None [ssymv f32, dsymv f64] (Order Uplo Dim Scalar In Ld In Inc Scalar Out Inc);
    hbmv -> None [chbmv C32, zhbmv C64]
        (Order Uplo Dim Band Scalar In Ld In Inc Scalar Out Inc);
    sbmv -> None [ssbmv f32, dsbmv f64]
        (Order Uplo Dim Band Scalar In Ld In Inc Scalar Out Inc);
    hpmv -> None [chpmv C32, zhpmv C64] (Order Uplo Dim Scalar In In Inc Scalar Out Inc);
    spmv -> None [sspmv f32, dspmv f64] (Order Uplo Dim Scalar In In Inc Scalar Out Inc);
    trmv -> None [strmv f32, dtrmv f64, ctrmv C32, ztrmv C64]
        (Order Uplo Trans Diag Dim In Ld Out Inc);
    trsv (solve) -> None [strsv f32, dtrsv f64, ctrsv C32, ztrsv C64]
        (Order Uplo Trans Diag Dim In Ld Out Inc);
    tbmv -> None [stbmv f32, dtbmv f64, ctbmv C32, ztbmv C64]
        (Order Uplo Trans Diag Dim Band In Ld Out Inc);
    tbsv (solve) -> None [stbsv f32, dtbsv f64, ctbsv C32, ztbsv C64]
        (Order Uplo Trans Diag Dim Band In Ld Out Inc);
    tpmv -> None [stpmv f32, dtpmv f64, ctpmv C32, ztpmv C64]
        (Order Uplo Trans Diag Dim In Out Inc);
    tpsv (solve) -> None [stpsv f32, dtpsv f64, ctpsv C32, ztpsv C64]
        (Order Uplo Trans Diag Dim In Out Inc);
    ger -> None [sger f32, dger f64] (Order Dim Dim Scalar In Inc In Inc Out Ld);
    geru -> None [cgeru C32, zgeru C64] (Order Dim Dim Scalar In Inc In Inc Out Ld);
    gerc -> None [cgerc C32, zgerc C64] (Order Dim Dim Scalar In Inc In Inc Out Ld);
    her -> None [cher C32, zher C64] (Order Uplo Dim Real In Inc Out Ld);
    syr -> None [ssyr f32, dsyr f64] (Order Uplo Dim Scalar In Inc Out Ld);
    hpr -> None [chpr C32, zhpr C64] (Order Uplo Dim Real In Inc Out);
    spr -> None [sspr f32, dspr f64] (Order Uplo Dim Scalar In Inc Out);
    her2 -> None [cher2 C32, zher2 C64] (Order Uplo Dim Scalar In Inc In Inc Out Ld);
    syr2 -> None [ssyr2 f32, dsyr2 f64] (Order Uplo Dim Scalar In Inc In Inc Out Ld);
    hpr2 -> None [chpr2 C32, zhpr2 C64] (Order Uplo Dim Scalar In Inc In Inc Out);
    spr2 -> None [sspr2 f32, dspr2 f64] (Order Uplo Dim Scalar In Inc In Inc Out);
    // ---- Level 3 ----
    gemm -> None [sgemm f32, dgemm f64, cgemm C32, zgemm C64]
        (Order Trans Trans Dim Dim Dim Scalar In Ld In Ld Scalar Out Ld);
    gemmt -> None [sgemmtr f32, dgemmtr f64, cgemmtr C32, zgemmtr C64,
                   sgemmt f32, dgemmt f64, cgemmt C32, zgemmt C64]
        (Order Uplo Trans Trans Dim Dim Scalar In Ld In Ld Scalar Out Ld);
    symm -> None [ssymm f32, dsymm f64, csymm C32, zsymm C64]
        (Order Side Uplo Dim Dim Scalar In Ld In Ld Scalar Out Ld);
    hemm -> None [chemm C32, zhemm C64]
        (Order Side Uplo Dim Dim Scalar In Ld In Ld Scalar Out Ld);
    syrk -> None [ssyrk f32, dsyrk f64, csyrk C32, zsyrk C64]
        (Order Uplo Trans Dim Dim Scalar In Ld Scalar Out Ld);
    herk -> None [cherk C32, zherk C64] (Order Uplo Trans Dim Dim Real In Ld Real Out Ld);
    syr2k -> None [ssyr2k f32, dsyr2k f64, csyr2k C32, zsyr2k C64]
        (Order Uplo Trans Dim Dim Scalar In Ld In Ld Scalar Out Ld);
    her2k -> None [cher2k C32, zher2k C64]
        (Order Uplo Trans Dim Dim Scalar In Ld In Ld Real Out Ld);
    trmm -> None [strmm f32, dtrmm f64, ctrmm C32, ztrmm C64]
        (Order Side Uplo Trans Diag Dim Dim Scalar In Ld Out Ld);
    trsm (solve) -> None [strsm f32, dtrsm f64, ctrsm C32, ztrsm C64]
        (Order Side Uplo Trans Diag Dim Dim Scalar In Ld Out Ld);
}
