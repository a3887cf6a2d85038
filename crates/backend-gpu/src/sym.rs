//! The symmetric and Hermitian tiles (SYRK/HERK, SYR2K/HER2K, SYMM/HEMM) for every vendor,
//! written once: which BLAS routine a [`hetblas_core::SymTile`] is, in which dtype, and its
//! argument list in the reference order (`sym_call!`). A vendor's `GpuRuntime::sym` names
//! its eighteen entry points and the conversions of its enums, and checks the status.

use hetblas_core::scalar::{c32, c64};
use hetblas_core::ScalarValue;

/// The scalars of a tile in each element type, passed by address (cuBLAS's and hipBLAS's
/// complex types have the layout of `c32` / `c64`). The tile's check guarantees the dtype, so
/// the conversions are exact.
#[doc(hidden)]
pub mod scalars {
    use super::*;

    pub fn f32_of(v: ScalarValue) -> f32 {
        v.as_c64().re as f32
    }
    pub fn f64_of(v: ScalarValue) -> f64 {
        v.as_c64().re
    }
    pub fn c32_of(v: ScalarValue) -> c32 {
        let z = v.as_c64();
        c32::new(z.re as f32, z.im as f32)
    }
    pub fn c64_of(v: ScalarValue) -> c64 {
        v.as_c64()
    }
}

/// Issues the symmetric tile `$t` (checked, non-empty, within 32 bits) on BLAS handle `$h`
/// and evaluates to `(status, "cublasSsyrk")`: the vendor's status and the routine's name
/// (`$prefix` and the reference name). The vendor gives its enum conversions (`fill`: from
/// `Uplo`, `side`: from `Side`, `op`: from `Trans`), its complex element types, and its entry
/// points, each an expression evaluated only when its routine is the one called (a loaded
/// symbol may be optional there, and `?` leave the vendor's function). Expands to unsafe calls
/// and to `return Err(..)` for a real Hermitian tile (which `SymTile::check` refuses): use it
/// inside `unsafe` in a function returning `hetblas_core::Result`, whose contract is
/// `GpuRuntime::sym`'s.
#[macro_export]
macro_rules! sym_call {
    ($h:expr, $t:expr, $prefix:literal,
     fill: $fill:expr, side: $side:expr, op: $op:expr, complex: [$c:ty, $z:ty],
     syrk: [$ss:expr, $ds:expr, $cs:expr, $zs:expr],
     herk: [$ch:expr, $zh:expr],
     syr2k: [$ss2:expr, $ds2:expr, $cs2:expr, $zs2:expr],
     her2k: [$ch2:expr, $zh2:expr],
     symm: [$sm:expr, $dm:expr, $cm:expr, $zm:expr],
     hemm: [$chm:expr, $zhm:expr] $(,)?) => {{
        use hetblas_core::sym::SymOp;
        use hetblas_core::DType;
        use $crate::runtime::Aligned;
        use $crate::sym::scalars::{c32_of, c64_of, f32_of, f64_of};
        let t: &hetblas_core::SymTile = $t;
        let h = $h;
        let d = |x: usize| x as ::std::ffi::c_int;
        let (m, n, k) = (d(t.m), d(t.n), d(t.k));
        let (lda, ldb, ldc) = (d(t.a.ld), d(t.b.ld), d(t.c.ld));
        let fill = $fill(t.op.uplo());
        let (al, be) = (t.alpha, t.beta);
        // One argument list per routine family: element type `$ty`, the scalars as values of
        // `$sa` / `$sb` read through pointers of the vendor's types `$pa` / `$pb`.
        macro_rules! rk {
            ($f:expr, $ty:ty, $tr:expr, $a:expr, $pa:ty, $b:expr, $pb:ty) => {{
                let (a, b) = (Aligned($a), Aligned($b));
                $f(h, fill, $tr, n, k, &a.0 as *const _ as *const $pa, t.a.addr as *const $ty,
                   lda, &b.0 as *const _ as *const $pb, t.c.addr as *mut $ty, ldc)
            }};
        }
        // SYR2K/HER2K and SYMM/HEMM take the same list: two modes, two dimensions, alpha, A,
        // B, beta, C (SYR2K: fill, trans, n, k; SYMM: side, fill, m, n).
        macro_rules! ab {
            ($f:expr, $ty:ty, $modes:expr, $a:expr, $b:expr, $pb:ty) => {{
                let ((x, y, d1, d2), a, b) = ($modes, Aligned($a), Aligned($b));
                $f(h, x, y, d1, d2, &a.0 as *const _ as *const $ty, t.a.addr as *const $ty,
                   lda, t.b.addr as *const $ty, ldb, &b.0 as *const _ as *const $pb,
                   t.c.addr as *mut $ty, ldc)
            }};
        }
        match t.op {
            SymOp::Rank { trans, two, herm, .. } => {
                let tr = $op(trans.for_dtype(t.dtype()));
                let r2k = (fill, tr, n, k);
                match (two, herm, t.dtype()) {
                    (false, false, DType::F32) => (
                        rk!($ss, f32, tr, f32_of(al), f32, f32_of(be), f32),
                        concat!($prefix, "Ssyrk"),
                    ),
                    (false, false, DType::F64) => (
                        rk!($ds, f64, tr, f64_of(al), f64, f64_of(be), f64),
                        concat!($prefix, "Dsyrk"),
                    ),
                    (false, false, DType::C32) => (
                        rk!($cs, $c, tr, c32_of(al), $c, c32_of(be), $c),
                        concat!($prefix, "Csyrk"),
                    ),
                    (false, false, DType::C64) => (
                        rk!($zs, $z, tr, c64_of(al), $z, c64_of(be), $z),
                        concat!($prefix, "Zsyrk"),
                    ),
                    (false, true, DType::C32) => (
                        rk!($ch, $c, tr, f32_of(al), f32, f32_of(be), f32),
                        concat!($prefix, "Cherk"),
                    ),
                    (false, true, DType::C64) => (
                        rk!($zh, $z, tr, f64_of(al), f64, f64_of(be), f64),
                        concat!($prefix, "Zherk"),
                    ),
                    (true, false, DType::F32) => (
                        ab!($ss2, f32, r2k, f32_of(al), f32_of(be), f32),
                        concat!($prefix, "Ssyr2k"),
                    ),
                    (true, false, DType::F64) => (
                        ab!($ds2, f64, r2k, f64_of(al), f64_of(be), f64),
                        concat!($prefix, "Dsyr2k"),
                    ),
                    (true, false, DType::C32) => (
                        ab!($cs2, $c, r2k, c32_of(al), c32_of(be), $c),
                        concat!($prefix, "Csyr2k"),
                    ),
                    (true, false, DType::C64) => (
                        ab!($zs2, $z, r2k, c64_of(al), c64_of(be), $z),
                        concat!($prefix, "Zsyr2k"),
                    ),
                    (true, true, DType::C32) => (
                        ab!($ch2, $c, r2k, c32_of(al), f32_of(be), f32),
                        concat!($prefix, "Cher2k"),
                    ),
                    (true, true, DType::C64) => (
                        ab!($zh2, $z, r2k, c64_of(al), f64_of(be), f64),
                        concat!($prefix, "Zher2k"),
                    ),
                    // SymTile::check refuses Hermitian routines of real dtypes.
                    (_, true, _) => {
                        return Err(hetblas_core::Error::internal("a real Hermitian tile"))
                    }
                }
            }
            SymOp::Multiply { side, herm, .. } => {
                let mm = ($side(side), fill, m, n);
                match (herm, t.dtype()) {
                    (false, DType::F32) => (
                        ab!($sm, f32, mm, f32_of(al), f32_of(be), f32),
                        concat!($prefix, "Ssymm"),
                    ),
                    (false, DType::F64) => (
                        ab!($dm, f64, mm, f64_of(al), f64_of(be), f64),
                        concat!($prefix, "Dsymm"),
                    ),
                    (false, DType::C32) => (
                        ab!($cm, $c, mm, c32_of(al), c32_of(be), $c),
                        concat!($prefix, "Csymm"),
                    ),
                    (false, DType::C64) => (
                        ab!($zm, $z, mm, c64_of(al), c64_of(be), $z),
                        concat!($prefix, "Zsymm"),
                    ),
                    (true, DType::C32) => (
                        ab!($chm, $c, mm, c32_of(al), c32_of(be), $c),
                        concat!($prefix, "Chemm"),
                    ),
                    (true, DType::C64) => (
                        ab!($zhm, $z, mm, c64_of(al), c64_of(be), $z),
                        concat!($prefix, "Zhemm"),
                    ),
                    (true, _) => {
                        return Err(hetblas_core::Error::internal("a real Hermitian tile"))
                    }
                }
            }
        }
    }};
}
