//! The symmetric/Hermitian tiles on hipBLAS: {S,D,C,Z}syrk, {C,Z}herk, {S,D,C,Z}syr2k,
//! {C,Z}her2k, {S,D,C,Z}symm and {C,Z}hemm, resolved at load time next to GEMM (each optional:
//! a library without one reports the routine unsupported in that type). Which routine and its
//! arguments are the GPU layer's ([`hetblas_gpu::sym_call!`]); here are the symbols and enums. The prototypes are
//! those of `hipblas.h` (the cuBLAS `_v2` ones with hipBLAS types); `hipblasFillMode_t` and
//! `hipblasSideMode_t` take the CBLAS numbers.

use crate::result::{blas_api, check_blas};
use crate::sys::{HipblasHandle, HipblasOperation, HipblasStatus};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::sym::{Side, Uplo};
use hetblas_core::{DType, Error, Result, SymTile, Trans};
use libloading::Library;
use std::ffi::c_int;

/// `hipblasFillMode_t` / `hipblasSideMode_t` (C enums, a C `int`).
type Mode = c_int;
const FILL_UPPER: Mode = 121;
const FILL_LOWER: Mode = 122;
const SIDE_LEFT: Mode = 141;
const SIDE_RIGHT: Mode = 142;

/// `hipblasXsyrk` / `hipblasXherk`: element `T`, scalars `S` (real for HERK).
type Rk<T, S> = unsafe extern "C" fn(
    HipblasHandle,
    Mode,
    HipblasOperation,
    c_int,
    c_int,
    *const S,
    *const T,
    c_int,
    *const S,
    *mut T,
    c_int,
) -> HipblasStatus;
/// `hipblasXsyr2k` / `hipblasXher2k`: alpha `S`, beta `B` (real for HER2K).
type R2k<T, S, B> = unsafe extern "C" fn(
    HipblasHandle,
    Mode,
    HipblasOperation,
    c_int,
    c_int,
    *const S,
    *const T,
    c_int,
    *const T,
    c_int,
    *const B,
    *mut T,
    c_int,
) -> HipblasStatus;
/// `hipblasXsymm` / `hipblasXhemm`.
type Mm<T> = unsafe extern "C" fn(
    HipblasHandle,
    Mode,
    Mode,
    c_int,
    c_int,
    *const T,
    *const T,
    c_int,
    *const T,
    c_int,
    *const T,
    *mut T,
    c_int,
) -> HipblasStatus;

/// Declares `SymApi` and its `resolve` from one list, so that a field and the symbol it is
/// looked up by cannot drift apart (each field is named after its C function).
macro_rules! sym_api {
    ($($name:ident: $ty:ty,)*) => {
        /// The symmetric entry points of one hipBLAS.
        #[allow(
            non_snake_case,
            reason = "fields are named after the C functions they hold"
        )]
        #[derive(Default)]
        pub struct SymApi {
            $(pub $name: Option<$ty>,)*
        }

        impl SymApi {
            /// Resolves what `lib` has.
            pub fn resolve(lib: &Library) -> SymApi {
                SymApi {
                    $(
                        // SAFETY: the symbol, when present, has the prototype of `hipblas.h`
                        // that the field's type spells; the library stays loaded as long as
                        // the `BlasApi` holding this table.
                        $name: unsafe { lib.get::<$ty>(stringify!($name).as_bytes()) }
                            .ok()
                            .map(|s| *s),
                    )*
                }
            }
        }
    };
}

sym_api! {
    hipblasSsyrk: Rk<f32, f32>,
    hipblasDsyrk: Rk<f64, f64>,
    hipblasCsyrk: Rk<c32, c32>,
    hipblasZsyrk: Rk<c64, c64>,
    hipblasCherk: Rk<c32, f32>,
    hipblasZherk: Rk<c64, f64>,
    hipblasSsyr2k: R2k<f32, f32, f32>,
    hipblasDsyr2k: R2k<f64, f64, f64>,
    hipblasCsyr2k: R2k<c32, c32, c32>,
    hipblasZsyr2k: R2k<c64, c64, c64>,
    hipblasCher2k: R2k<c32, c32, f32>,
    hipblasZher2k: R2k<c64, c64, f64>,
    hipblasSsymm: Mm<f32>,
    hipblasDsymm: Mm<f64>,
    hipblasCsymm: Mm<c32>,
    hipblasZsymm: Mm<c64>,
    hipblasChemm: Mm<c32>,
    hipblasZhemm: Mm<c64>,
}

impl SymApi {
    /// Whether every routine BLAS defines for `dtype` is there.
    pub fn complete(&self, dtype: DType) -> bool {
        let s = self;
        match dtype {
            DType::F32 => {
                s.hipblasSsyrk.is_some() && s.hipblasSsyr2k.is_some() && s.hipblasSsymm.is_some()
            }
            DType::F64 => {
                s.hipblasDsyrk.is_some() && s.hipblasDsyr2k.is_some() && s.hipblasDsymm.is_some()
            }
            DType::C32 => {
                s.hipblasCsyrk.is_some()
                    && s.hipblasCherk.is_some()
                    && s.hipblasCsyr2k.is_some()
                    && s.hipblasCher2k.is_some()
                    && s.hipblasCsymm.is_some()
                    && s.hipblasChemm.is_some()
            }
            DType::C64 => {
                s.hipblasZsyrk.is_some()
                    && s.hipblasZherk.is_some()
                    && s.hipblasZsyr2k.is_some()
                    && s.hipblasZher2k.is_some()
                    && s.hipblasZsymm.is_some()
                    && s.hipblasZhemm.is_some()
            }
        }
    }
}

/// Issues the checked, non-empty tile `t` on `h`'s stream.
///
/// # Safety
/// The tiles are device memory of their shapes (checked by `SymTile::check`) that stays valid
/// until the stream has run the kernel; every dimension fits an `i32`.
pub(crate) unsafe fn issue(
    h: HipblasHandle,
    t: &SymTile,
    op: fn(Trans) -> HipblasOperation,
) -> Result<()> {
    let api = &blas_api()?.sym;
    let fill = |u: Uplo| match u {
        Uplo::Upper => FILL_UPPER,
        Uplo::Lower => FILL_LOWER,
    };
    let side = |s: Side| match s {
        Side::Left => SIDE_LEFT,
        Side::Right => SIDE_RIGHT,
    };
    let missing = |name: &str| Error::Unsupported {
        device: "hip".into(),
        detail: format!("hipBLAS has no {name}"),
    };
    // The entry point `$name`, or `Unsupported` out of `issue` when the library lacks it.
    macro_rules! f {
        ($name:ident) => {
            api.$name.ok_or_else(|| missing(stringify!($name)))?
        };
    }
    // SAFETY: caller contract; scalars are read from host memory (the default pointer mode)
    // before the call returns; c32/c64 are hipBLAS's complex types.
    let (status, name) = unsafe {
        hetblas_gpu::sym_call!(h, t, "hipblas",
            fill: fill, side: side, op: op, complex: [c32, c64],
            syrk: [f!(hipblasSsyrk), f!(hipblasDsyrk), f!(hipblasCsyrk), f!(hipblasZsyrk)],
            herk: [f!(hipblasCherk), f!(hipblasZherk)],
            syr2k: [f!(hipblasSsyr2k), f!(hipblasDsyr2k), f!(hipblasCsyr2k), f!(hipblasZsyr2k)],
            her2k: [f!(hipblasCher2k), f!(hipblasZher2k)],
            symm: [f!(hipblasSsymm), f!(hipblasDsymm), f!(hipblasCsymm), f!(hipblasZsymm)],
            hemm: [f!(hipblasChemm), f!(hipblasZhemm)],
        )
    };
    check_blas(status, name)
}
