//! The four BLAS element types as hetblas's C ABI sees them.

use hetblas_refblas::num_complex::{Complex32, Complex64};
use hetblas_refblas::Scalar;

/// The device hooks of [`Elem`], one per routine with a device path, each with the BLAS
/// routine's own argument list: by default the host's (no device path for the type; the hook
/// macros below give the types that have one theirs). A macro, as the seven defaults would
/// otherwise each spell out the same body and attributes; the argument names stay for reading.
macro_rules! default_hooks {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $t:ty),* $(,)?);)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// The arguments passed the reference checks and the arrays satisfy the BLAS contract.
        #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
        unsafe fn $name($(_: $t),*) -> crate::route::Outcome {
            crate::route::Outcome::Host(None)
        }
    )*};
}

/// f32, f64, Complex32, Complex64: their column in the symbol table, how CBLAS passes their
/// scalars, and which routines have a device path for them.
pub trait Elem: Scalar {
    /// 0 = S, 1 = D, 2 = C, 3 = Z.
    const IDX: usize;
    /// How CBLAS passes alpha and beta: by value for a real type, by pointer for a complex one.
    type CScalar: Copy;
    /// Reads a CBLAS scalar.
    ///
    /// # Safety
    /// For a complex type, `v` points to a valid value.
    unsafe fn cscalar(v: Self::CScalar) -> Self;

    default_hooks! {
        /// Runs GEMM on the devices when the routing sends it there
        /// (`offload::route_call`); [`crate::route::Outcome::Host`] leaves the call
        /// to the host path (also after a device failure, which it reports when verbose).
        /// Complex GEMM has no device path yet.
        fn offload_gemm(ta: u8, tb: u8, m: i64, n: i64, k: i64, alpha: Self, a: *const Self,
            lda: i64, b: *const Self, ldb: i64, beta: Self, c: *mut Self, ldc: i64);
        /// GEMMT (one triangle of C) on the devices as [`Elem::offload_gemm`]
        /// ([`crate::offload::gemmt`]), every type.
        fn offload_gemmt(uplo: u8, ta: u8, tb: u8, n: i64, k: i64, alpha: Self, a: *const Self,
            lda: i64, b: *const Self, ldb: i64, beta: Self, c: *mut Self, ldc: i64);
        /// SYRK on the devices when routed there (see [`crate::offload_sym`]); otherwise the
        /// host path.
        fn offload_syrk(uplo: u8, trans: u8, n: i64, k: i64, alpha: Self, a: *const Self,
            lda: i64, beta: Self, c: *mut Self, ldc: i64);
        /// HERK (complex types), as [`Elem::offload_syrk`].
        fn offload_herk(uplo: u8, trans: u8, n: i64, k: i64, alpha: Self::Real, a: *const Self,
            lda: i64, beta: Self::Real, c: *mut Self, ldc: i64);
        /// SYR2K, as [`Elem::offload_syrk`].
        fn offload_syr2k(uplo: u8, trans: u8, n: i64, k: i64, alpha: Self, a: *const Self,
            lda: i64, b: *const Self, ldb: i64, beta: Self, c: *mut Self, ldc: i64);
        /// HER2K (complex types), as [`Elem::offload_syrk`].
        fn offload_her2k(uplo: u8, trans: u8, n: i64, k: i64, alpha: Self, a: *const Self,
            lda: i64, b: *const Self, ldb: i64, beta: Self::Real, c: *mut Self, ldc: i64);
        /// SYMM, as [`Elem::offload_syrk`].
        fn offload_symm(side: u8, uplo: u8, m: i64, n: i64, alpha: Self, a: *const Self,
            lda: i64, b: *const Self, ldb: i64, beta: Self, c: *mut Self, ldc: i64);
        /// HEMM (complex types), as [`Elem::offload_syrk`].
        fn offload_hemm(side: u8, uplo: u8, m: i64, n: i64, alpha: Self, a: *const Self,
            lda: i64, b: *const Self, ldb: i64, beta: Self, c: *mut Self, ldc: i64);
    }
}

/// A rank-update hook forwarding to [`crate::offload_sym::rank`] (`$two`: SYR2K/HER2K, `$herm`:
/// HERK/HER2K). Alpha and beta come as `$A` and `$B` (real for HERK's, and HER2K's beta) and go
/// on as `$T` with zero imaginary part. SYRK/HERK have no B: A stands in, unread.
macro_rules! rank_hook {
    (@b $a:ident, $lda:ident) => {
        ($a, $lda)
    };
    (@b $a:ident, $lda:ident, $b:ident, $ldb:ident) => {
        ($b, $ldb)
    };
    ($T:ty, $name:ident, ($two:literal, $herm:literal), $A:ty, $B:ty $(, $b:ident, $ldb:ident)?) => {
        #[allow(clippy::useless_conversion)] // reason: `$A` and `$B` are `$T` itself but in HERK/HER2K
        unsafe fn $name(
            uplo: u8,
            trans: u8,
            n: i64,
            k: i64,
            alpha: $A,
            a: *const $T,
            lda: i64,
            $($b: *const $T, $ldb: i64,)?
            beta: $B,
            c: *mut $T,
            ldc: i64,
        ) -> crate::route::Outcome {
            // SAFETY: forwarded contract.
            unsafe {
                crate::offload_sym::rank(
                    ($two, $herm),
                    uplo,
                    trans,
                    n,
                    k,
                    <$T>::from(alpha),
                    (a, lda),
                    rank_hook!(@b a, lda $(, $b, $ldb)?),
                    <$T>::from(beta),
                    (c, ldc),
                )
            }
        }
    };
}

/// A SYMM (`$herm` false) or HEMM hook forwarding to [`crate::offload_sym::multiply`].
macro_rules! multiply_hook {
    ($T:ty, $name:ident, $herm:literal) => {
        unsafe fn $name(
            side: u8,
            uplo: u8,
            m: i64,
            n: i64,
            alpha: $T,
            a: *const $T,
            lda: i64,
            b: *const $T,
            ldb: i64,
            beta: $T,
            c: *mut $T,
            ldc: i64,
        ) -> crate::route::Outcome {
            // SAFETY: forwarded contract.
            unsafe {
                crate::offload_sym::multiply(
                    $herm,
                    side,
                    uplo,
                    m,
                    n,
                    alpha,
                    (a, lda),
                    (b, ldb),
                    beta,
                    (c, ldc),
                )
            }
        }
    };
}

/// The symmetric routines' hooks of every type: SYRK, SYR2K, SYMM; with `herm`, HERK, HER2K
/// and HEMM too (complex types).
macro_rules! sym_hooks {
    ($T:ty) => {
        rank_hook!($T, offload_syrk, (false, false), $T, $T);
        rank_hook!($T, offload_syr2k, (true, false), $T, $T, b, ldb);
        multiply_hook!($T, offload_symm, false);
    };
    ($T:ty, herm) => {
        sym_hooks!($T);
        rank_hook!(
            $T,
            offload_herk,
            (false, true),
            <$T as Scalar>::Real,
            <$T as Scalar>::Real
        );
        rank_hook!(
            $T,
            offload_her2k,
            (true, true),
            $T,
            <$T as Scalar>::Real,
            b,
            ldb
        );
        multiply_hook!($T, offload_hemm, true);
    };
}

/// The GEMMT hook of every type, forwarding to [`crate::offload::gemmt`].
macro_rules! gemmt_hook {
    ($T:ty) => {
        unsafe fn offload_gemmt(
            uplo: u8,
            ta: u8,
            tb: u8,
            n: i64,
            k: i64,
            alpha: $T,
            a: *const $T,
            lda: i64,
            b: *const $T,
            ldb: i64,
            beta: $T,
            c: *mut $T,
            ldc: i64,
        ) -> crate::route::Outcome {
            // SAFETY: forwarded contract.
            unsafe {
                crate::offload::gemmt(uplo, ta, tb, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
            }
        }
    };
}

macro_rules! real_elem {
    ($T:ty, $idx:literal) => {
        impl Elem for $T {
            const IDX: usize = $idx;
            type CScalar = $T;
            unsafe fn cscalar(v: $T) -> $T {
                v
            }
            unsafe fn offload_gemm(
                ta: u8,
                tb: u8,
                m: i64,
                n: i64,
                k: i64,
                alpha: $T,
                a: *const $T,
                lda: i64,
                b: *const $T,
                ldb: i64,
                beta: $T,
                c: *mut $T,
                ldc: i64,
            ) -> crate::route::Outcome {
                // SAFETY: forwarded contract.
                unsafe {
                    crate::offload::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
                }
            }
            sym_hooks!($T);
            gemmt_hook!($T);
        }
    };
}
real_elem!(f32, 0);
real_elem!(f64, 1);

macro_rules! complex_elem {
    ($T:ty, $idx:literal) => {
        impl Elem for $T {
            const IDX: usize = $idx;
            type CScalar = *const $T;
            unsafe fn cscalar(v: *const $T) -> $T {
                // SAFETY: the caller passes a valid pointer (the CBLAS contract).
                unsafe { *v }
            }
            sym_hooks!($T, herm);
            gemmt_hook!($T);
        }
    };
}
complex_elem!(Complex32, 2);
complex_elem!(Complex64, 3);
