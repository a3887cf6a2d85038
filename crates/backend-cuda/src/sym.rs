//! The symmetric/Hermitian tiles on cuBLAS: {S,D,C,Z}syrk, {C,Z}herk, {S,D,C,Z}syr2k,
//! {C,Z}her2k, {S,D,C,Z}symm and {C,Z}hemm (the `_v2` entry points, 32-bit dimensions; the
//! GPU layer refuses larger tiles before they come here).

use crate::driver::check_blas;
use crate::runtime::{cu_c, cu_z, op};
use cudarc::cublas::sys as cb;
use hetblas_core::sym::{Side, SymOp, Uplo};
use hetblas_core::{Error, Result, ScalarValue, SymTile};

/// Issues the checked, non-empty tile `t` on `h`'s stream.
///
/// # Safety
/// The tiles are device memory of their shapes (checked by `SymTile::check`) that stays valid
/// until the stream has run the kernel; every dimension fits an `i32`.
pub(crate) unsafe fn issue(h: cb::cublasHandle_t, t: &SymTile) -> Result<()> {
    use ScalarValue::{C32, C64, F32, F64};
    let fill = match t.op.uplo() {
        Uplo::Upper => cb::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
        Uplo::Lower => cb::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
    };
    let d = |x: usize| x as i32;
    let (m, n, k) = (d(t.m), d(t.n), d(t.k));
    let (lda, ldb, ldc) = (d(t.a.ld), d(t.b.ld), d(t.c.ld));
    let (a, b, c) = (t.a.addr, t.b.addr, t.c.addr);
    // One argument list per routine family, for each element type.
    macro_rules! rk {
        ($f:path, $ty:ty, $tr:expr, $al:expr, $be:expr) => {
            $f(
                h,
                fill,
                $tr,
                n,
                k,
                &$al,
                a as *const $ty,
                lda,
                &$be,
                c as *mut $ty,
                ldc,
            )
        };
    }
    // SYR2K/HER2K and SYMM/HEMM take the same list: two modes, two dimensions, alpha, A, B,
    // beta, C (SYR2K: fill, trans, n, k; SYMM: side, fill, m, n).
    macro_rules! ab {
        ($f:path, $ty:ty, ($x:expr, $y:expr, $d1:expr, $d2:expr), $al:expr, $be:expr) => {
            $f(
                h,
                $x,
                $y,
                $d1,
                $d2,
                &$al,
                a as *const $ty,
                lda,
                b as *const $ty,
                ldb,
                &$be,
                c as *mut $ty,
                ldc,
            )
        };
    }
    macro_rules! r2k {
        ($f:path, $ty:ty, $tr:expr, $al:expr, $be:expr) => {
            ab!($f, $ty, (fill, $tr, n, k), $al, $be)
        };
    }
    macro_rules! mm {
        ($f:path, $ty:ty, $side:expr, $al:expr, $be:expr) => {
            ab!($f, $ty, ($side, fill, m, n), $al, $be)
        };
    }
    use cb::{cuComplex as Cc, cuDoubleComplex as Zc};
    let dt = t.dtype();
    // SAFETY: caller contract; scalars are read from host memory (the default pointer mode)
    // before the call returns; c32/c64 tiles have the layout of cuComplex / cuDoubleComplex.
    let (status, name) = unsafe {
        match t.op {
            SymOp::Rank {
                trans, two, herm, ..
            } => {
                let tr = op(trans.for_dtype(dt));
                match (two, herm, t.alpha, t.beta) {
                    (false, false, F32(al), F32(be)) => {
                        (rk!(cb::cublasSsyrk_v2, f32, tr, al, be), "cublasSsyrk")
                    }
                    (false, false, F64(al), F64(be)) => {
                        (rk!(cb::cublasDsyrk_v2, f64, tr, al, be), "cublasDsyrk")
                    }
                    (false, false, C32(al), C32(be)) => (
                        rk!(cb::cublasCsyrk_v2, Cc, tr, cu_c(al), cu_c(be)),
                        "cublasCsyrk",
                    ),
                    (false, false, C64(al), C64(be)) => (
                        rk!(cb::cublasZsyrk_v2, Zc, tr, cu_z(al), cu_z(be)),
                        "cublasZsyrk",
                    ),
                    (false, true, C32(al), C32(be)) => {
                        (rk!(cb::cublasCherk_v2, Cc, tr, al.re, be.re), "cublasCherk")
                    }
                    (false, true, C64(al), C64(be)) => {
                        (rk!(cb::cublasZherk_v2, Zc, tr, al.re, be.re), "cublasZherk")
                    }
                    (true, false, F32(al), F32(be)) => {
                        (r2k!(cb::cublasSsyr2k_v2, f32, tr, al, be), "cublasSsyr2k")
                    }
                    (true, false, F64(al), F64(be)) => {
                        (r2k!(cb::cublasDsyr2k_v2, f64, tr, al, be), "cublasDsyr2k")
                    }
                    (true, false, C32(al), C32(be)) => (
                        r2k!(cb::cublasCsyr2k_v2, Cc, tr, cu_c(al), cu_c(be)),
                        "cublasCsyr2k",
                    ),
                    (true, false, C64(al), C64(be)) => (
                        r2k!(cb::cublasZsyr2k_v2, Zc, tr, cu_z(al), cu_z(be)),
                        "cublasZsyr2k",
                    ),
                    (true, true, C32(al), C32(be)) => (
                        r2k!(cb::cublasCher2k_v2, Cc, tr, cu_c(al), be.re),
                        "cublasCher2k",
                    ),
                    (true, true, C64(al), C64(be)) => (
                        r2k!(cb::cublasZher2k_v2, Zc, tr, cu_z(al), be.re),
                        "cublasZher2k",
                    ),
                    _ => return Err(Error::internal("bad scalars in a symmetric tile")),
                }
            }
            SymOp::Multiply { side, herm, .. } => {
                let sd = match side {
                    Side::Left => cb::cublasSideMode_t::CUBLAS_SIDE_LEFT,
                    Side::Right => cb::cublasSideMode_t::CUBLAS_SIDE_RIGHT,
                };
                match (herm, t.alpha, t.beta) {
                    (false, F32(al), F32(be)) => {
                        (mm!(cb::cublasSsymm_v2, f32, sd, al, be), "cublasSsymm")
                    }
                    (false, F64(al), F64(be)) => {
                        (mm!(cb::cublasDsymm_v2, f64, sd, al, be), "cublasDsymm")
                    }
                    (false, C32(al), C32(be)) => (
                        mm!(cb::cublasCsymm_v2, Cc, sd, cu_c(al), cu_c(be)),
                        "cublasCsymm",
                    ),
                    (false, C64(al), C64(be)) => (
                        mm!(cb::cublasZsymm_v2, Zc, sd, cu_z(al), cu_z(be)),
                        "cublasZsymm",
                    ),
                    (true, C32(al), C32(be)) => (
                        mm!(cb::cublasChemm_v2, Cc, sd, cu_c(al), cu_c(be)),
                        "cublasChemm",
                    ),
                    (true, C64(al), C64(be)) => (
                        mm!(cb::cublasZhemm_v2, Zc, sd, cu_z(al), cu_z(be)),
                        "cublasZhemm",
                    ),
                    _ => return Err(Error::internal("bad scalars in a symmetric tile")),
                }
            }
        }
    };
    check_blas(status, name)
}
