//! Level 3: matrix-matrix operations.
//!
//! Each routine `xxx` has `xxx_check`, which returns the parameter number the reference BLAS
//! passes to XERBLA (0 when the arguments are valid), checking in the reference's order, and
//! `unsafe fn xxx`, which assumes the check passed and computes with the reference's quick
//! returns: `beta == 0` does not read `C`, `alpha == 0` does not read `A` or `B`.
//!
//! # Safety (every `unsafe fn` here)
//! - Each matrix argument points to the `(cols-1)*ld + rows` initialised elements its shape
//!   addresses (the rows and columns the reference's argument description gives it).
//! - The matrix the routine writes (`C`, or `B` for TRMM/TRSM) is writable and overlaps no other
//!   argument.

mod gemm;
mod rank_k;
mod symm;
mod triangular;

pub use gemm::*;
pub use rank_k::*;
pub use symm::*;
pub use triangular::*;
