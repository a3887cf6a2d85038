//! The symmetric/Hermitian tiles on cuBLAS: {S,D,C,Z}syrk, {C,Z}herk, {S,D,C,Z}syr2k,
//! {C,Z}her2k, {S,D,C,Z}symm and {C,Z}hemm (the `_v2` entry points, 32-bit dimensions; the
//! GPU layer refuses larger tiles before they come here). Which routine and its arguments are
//! the GPU layer's ([`hetblas_gpu::sym_call!`]); here are the names and the enums.

use crate::driver::check_blas;
use crate::runtime::op;
use cudarc::cublas::sys as cb;
use hetblas_core::sym::{Side, Uplo};
use hetblas_core::{Result, SymTile};

fn fill(u: Uplo) -> cb::cublasFillMode_t {
    match u {
        Uplo::Upper => cb::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
        Uplo::Lower => cb::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
    }
}

fn side(s: Side) -> cb::cublasSideMode_t {
    match s {
        Side::Left => cb::cublasSideMode_t::CUBLAS_SIDE_LEFT,
        Side::Right => cb::cublasSideMode_t::CUBLAS_SIDE_RIGHT,
    }
}

/// Issues the checked, non-empty tile `t` on `h`'s stream.
///
/// # Safety
/// The tiles are device memory of their shapes (checked by `SymTile::check`) that stays valid
/// until the stream has run the kernel; every dimension fits an `i32`.
pub(crate) unsafe fn issue(h: cb::cublasHandle_t, t: &SymTile) -> Result<()> {
    // SAFETY: caller contract; scalars are read from host memory (the default pointer mode)
    // before the call returns; c32/c64 have the layout of cuComplex / cuDoubleComplex.
    let (status, name) = unsafe {
        hetblas_gpu::sym_call!(h, t, "cublas",
            fill: fill, side: side, op: op, complex: [cb::cuComplex, cb::cuDoubleComplex],
            syrk: [cb::cublasSsyrk_v2, cb::cublasDsyrk_v2, cb::cublasCsyrk_v2, cb::cublasZsyrk_v2],
            herk: [cb::cublasCherk_v2, cb::cublasZherk_v2],
            syr2k: [cb::cublasSsyr2k_v2, cb::cublasDsyr2k_v2, cb::cublasCsyr2k_v2,
                    cb::cublasZsyr2k_v2],
            her2k: [cb::cublasCher2k_v2, cb::cublasZher2k_v2],
            symm: [cb::cublasSsymm_v2, cb::cublasDsymm_v2, cb::cublasCsymm_v2, cb::cublasZsymm_v2],
            hemm: [cb::cublasChemm_v2, cb::cublasZhemm_v2],
        )
    };
    check_blas(status, name)
}
