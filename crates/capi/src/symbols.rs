//! The host symbols hetblas forwards to: one row per routine, one column per precision
//! (S, D, C, Z; "" where the routine does not exist in that precision). A routine known under
//! several names lists them with `|`, the first a library has is taken (GEMMT: reference BLAS
//! 3.12's `dgemmtr`, OpenBLAS's and MKL's `dgemmt`).

macro_rules! symbols {
    ($($id:ident: $s:literal $d:literal $c:literal $z:literal;)*) => {
        /// A routine whose host symbol hetblas may call.
        #[allow(clippy::upper_case_acronyms)] // reason: named as the BLAS routines are
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(usize)]
        pub enum Sym { $($id),* }

        /// The symbol names (without the trailing `_`; alternatives separated by `|`), four
        /// per routine, in [`Sym`] order.
        pub static SYMBOLS: &[&str] = &[$($s, $d, $c, $z),*];
    };
}

symbols! {
    AXPY: "saxpy" "daxpy" "caxpy" "zaxpy";
    SCAL: "sscal" "dscal" "cscal" "zscal";
    RSCAL: "" "" "csscal" "zdscal";
    COPY: "scopy" "dcopy" "ccopy" "zcopy";
    SWAP: "sswap" "dswap" "cswap" "zswap";
    ROT: "srot" "drot" "csrot" "zdrot";
    ROTM: "srotm" "drotm" "" "";
    ROTG: "srotg" "drotg" "crotg" "zrotg";
    ROTMG: "srotmg" "drotmg" "" "";
    DOT: "sdot" "ddot" "" "";
    NRM2: "snrm2" "dnrm2" "scnrm2" "dznrm2";
    ASUM: "sasum" "dasum" "scasum" "dzasum";
    IAMAX: "isamax" "idamax" "icamax" "izamax";
    GEMV: "sgemv" "dgemv" "cgemv" "zgemv";
    GBMV: "sgbmv" "dgbmv" "cgbmv" "zgbmv";
    HEMV: "" "" "chemv" "zhemv";
    HBMV: "" "" "chbmv" "zhbmv";
    HPMV: "" "" "chpmv" "zhpmv";
    SYMV: "ssymv" "dsymv" "" "";
    SBMV: "ssbmv" "dsbmv" "" "";
    SPMV: "sspmv" "dspmv" "" "";
    TRMV: "strmv" "dtrmv" "ctrmv" "ztrmv";
    TBMV: "stbmv" "dtbmv" "ctbmv" "ztbmv";
    TPMV: "stpmv" "dtpmv" "ctpmv" "ztpmv";
    TRSV: "strsv" "dtrsv" "ctrsv" "ztrsv";
    TBSV: "stbsv" "dtbsv" "ctbsv" "ztbsv";
    TPSV: "stpsv" "dtpsv" "ctpsv" "ztpsv";
    GER: "sger" "dger" "" "";
    GERU: "" "" "cgeru" "zgeru";
    GERC: "" "" "cgerc" "zgerc";
    HER: "" "" "cher" "zher";
    HPR: "" "" "chpr" "zhpr";
    HER2: "" "" "cher2" "zher2";
    HPR2: "" "" "chpr2" "zhpr2";
    SYR: "ssyr" "dsyr" "" "";
    SPR: "sspr" "dspr" "" "";
    SYR2: "ssyr2" "dsyr2" "" "";
    SPR2: "sspr2" "dspr2" "" "";
    GEMM: "sgemm" "dgemm" "cgemm" "zgemm";
    GEMMT: "sgemmtr|sgemmt" "dgemmtr|dgemmt" "cgemmtr|cgemmt" "zgemmtr|zgemmt";
    SYMM: "ssymm" "dsymm" "csymm" "zsymm";
    HEMM: "" "" "chemm" "zhemm";
    SYRK: "ssyrk" "dsyrk" "csyrk" "zsyrk";
    HERK: "" "" "cherk" "zherk";
    SYR2K: "ssyr2k" "dsyr2k" "csyr2k" "zsyr2k";
    HER2K: "" "" "cher2k" "zher2k";
    TRMM: "strmm" "dtrmm" "ctrmm" "ztrmm";
    TRSM: "strsm" "dtrsm" "ctrsm" "ztrsm";
}

/// The index in [`SYMBOLS`] (and in the host's address table) of `sym` for type `T`.
#[inline]
pub fn index<T: crate::elem::Elem>(sym: Sym) -> usize {
    sym as usize * 4 + T::IDX
}
