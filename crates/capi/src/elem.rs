//! The four BLAS element types as hetblas's C ABI sees them.
//!
//! The device hooks are not here: a routine's table line names its hook, a function generic
//! over [`Elem`] (`offload(offload::gemm)` in `routines.rs`), so a new routine adds nothing
//! to this file. `Elem` is both scalar traits (hetblas-refblas's, for the host and pure-Rust
//! paths, and hetblas's, for the Runtime), so one generic hook serves every type; a method
//! both define (`conj`, `to_c64`) is then named with its trait where `T: Elem`.

use hetblas_refblas::num_complex::{Complex32, Complex64};
use hetblas_refblas::Scalar;

/// f32, f64, Complex32, Complex64: their column in the symbol table and how CBLAS passes their
/// scalars.
pub trait Elem: Scalar + hetblas::Scalar {
    /// 0 = S, 1 = D, 2 = C, 3 = Z.
    const IDX: usize;
    /// How CBLAS passes alpha and beta: by value for a real type, by pointer for a complex one.
    type CScalar: Copy;
    /// Reads a CBLAS scalar.
    ///
    /// # Safety
    /// For a complex type, `v` points to a valid value.
    unsafe fn cscalar(v: Self::CScalar) -> Self;
}

macro_rules! real_elem {
    ($T:ty, $idx:literal) => {
        impl Elem for $T {
            const IDX: usize = $idx;
            type CScalar = $T;
            unsafe fn cscalar(v: $T) -> $T {
                v
            }
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
        }
    };
}
complex_elem!(Complex32, 2);
complex_elem!(Complex64, 3);
