//! cuBLASXt's symmetric and Hermitian routines (cublasXt{S,D,C,Z}syrk, {C,Z}herk,
//! {S,D,C,Z}syr2k, {C,Z}her2k, {S,D,C,Z}symm, {C,Z}hemm), the baselines of the symmetric
//! comparison, on the handle of a [`CublasXt`]. Prototypes as in `cublasXt.h`: dimensions and
//! leading dimensions `size_t`, scalars and matrices by pointer (HERK's alpha and beta, and
//! HER2K's beta, real).

use crate::cublasxt::{xt_fn, CublasXt};
use hetblas_core::sym::{Side, SymOp, Uplo};
use hetblas_core::{Scalar, Trans};
use std::ffi::c_void;

/// `cublasXt?syrk` / `?herk`: uplo, trans, n, k, alpha, A, lda, beta, C, ldc.
type XtRk = xt_fn!(i32, i32, usize, usize, P, P, usize, P, M, usize);
/// `cublasXt?syr2k` / `?her2k`: uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc; and
/// `cublasXt?symm` / `?hemm`, the same prototype: side, uplo, m, n, alpha, A, lda, B, ldb, beta,
/// C, ldc.
type XtR2k = xt_fn!(i32, i32, usize, usize, P, P, usize, P, usize, P, M, usize);

/// cuBLAS's enum values (cublas_api.h): fill mode lower 0, upper 1; side left 0, right 1;
/// operation N 0, T 1, C 2.
fn fill(u: Uplo) -> i32 {
    match u {
        Uplo::Lower => 0,
        Uplo::Upper => 1,
    }
}

impl CublasXt {
    /// The symmetric routine `op` on host memory in T's dtype (blocking until done): C is
    /// `m x n` (`m == n` for the rank updates, `k` op(A)'s columns; for SYMM `k` is A's order).
    /// `b` is ignored for SYRK/HERK; the real scalars of HERK/HER2K are `alpha.re`, `beta.re`.
    ///
    /// # Safety
    /// Pointers and leading dimensions describe valid host matrices for the given shapes.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub unsafe fn sym<T: Scalar>(
        &self,
        op: &SymOp,
        (m, n, k): (usize, usize, usize),
        alpha: T,
        a: *const T,
        lda: usize,
        b: *const T,
        ldb: usize,
        beta: T,
        c: *mut T,
        ldc: usize,
    ) -> Result<(), String> {
        let dt = T::DTYPE;
        let name = format!(
            "cublasXt{}{}",
            dt.blas_prefix().to_ascii_uppercase(),
            op.name().to_ascii_lowercase()
        );
        let sym = format!("{name}\0");
        let s = self.library();
        let (ar, br) = (alpha.to_c64().re, beta.to_c64().re);
        // The real scalars of the Hermitian routines, in the real type of T.
        let (ar32, br32) = (ar as f32, br as f32);
        let real_ptr = |v64: &f64, v32: &f32| -> *const c_void {
            if dt == hetblas_core::DType::C32 {
                std::ptr::from_ref(v32).cast()
            } else {
                std::ptr::from_ref(v64).cast()
            }
        };
        let pa: *const c_void = std::ptr::from_ref(&alpha).cast();
        let pb: *const c_void = std::ptr::from_ref(&beta).cast();
        // SYR2K/HER2K and SYMM/HEMM share a prototype: two enumerations, two dimensions, then
        // the same operands; one call serves both.
        let r2k = |e: (i32, i32), (d1, d2): (usize, usize), al, be| -> Result<i32, String> {
            // SAFETY: the symbol has the cublasXt.h prototype of `XtR2k` (pointee types of T's
            // layout; HER2K's real beta is f32 for C, f64 for Z); the scalars are locals alive
            // for the call; the caller vouches for the matrices.
            unsafe {
                let f: XtR2k = *s.get(sym.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
                Ok(f(
                    self.raw_handle(),
                    e.0,
                    e.1,
                    d1,
                    d2,
                    al,
                    a.cast(),
                    lda,
                    b.cast(),
                    ldb,
                    be,
                    c.cast(),
                    ldc,
                ))
            }
        };
        let status = match *op {
            SymOp::Rank {
                uplo,
                trans,
                two,
                herm,
            } => {
                let tr = match trans.for_dtype(dt) {
                    Trans::N => 0,
                    Trans::T => 1,
                    Trans::C => 2,
                };
                let (al, be) = match (two, herm) {
                    (false, true) => (real_ptr(&ar, &ar32), real_ptr(&br, &br32)),
                    (true, true) => (pa, real_ptr(&br, &br32)),
                    _ => (pa, pb),
                };
                if two {
                    r2k((fill(uplo), tr), (n, k), al, be)?
                } else {
                    // SAFETY: as `r2k`, with SYRK's prototype `XtRk`; real scalars are f32 for
                    // C, f64 for Z.
                    unsafe {
                        let f: XtRk = *s.get(sym.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
                        f(
                            self.raw_handle(),
                            fill(uplo),
                            tr,
                            n,
                            k,
                            al,
                            a.cast(),
                            lda,
                            be,
                            c.cast(),
                            ldc,
                        )
                    }
                }
            }
            SymOp::Multiply { side, uplo, .. } => {
                let sd = match side {
                    Side::Left => 0,
                    Side::Right => 1,
                };
                r2k((sd, fill(uplo)), (m, n), pa, pb)?
            }
        };
        if status == 0 {
            Ok(())
        } else {
            Err(format!("{name} returned cuBLAS status {status}"))
        }
    }
}
