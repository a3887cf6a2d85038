//! Level 2: matrix-vector operations.
//!
//! Each routine `xxx` has `xxx_check`, which returns the parameter number the reference BLAS
//! passes to XERBLA (0 when the arguments are valid), checking in the reference's order, and
//! `unsafe fn xxx`, which assumes the check passed and computes with the reference's quick
//! returns: `beta == 0` does not read `y`, `alpha == 0` does not read `A` or `x`.
//!
//! # Safety (every `unsafe fn` here)
//! - The matrix argument points to the elements the routine addresses: for a full matrix
//!   `(cols-1)*lda + rows` elements, for a band matrix `(n-1)*lda + band rows`, for a packed
//!   one `n*(n+1)/2`; each vector with `n > 0` to `1 + (n-1)*|inc|` elements. All initialised.
//! - The argument the routine writes (`y`, `x` or `A`) is writable and overlaps no other argument.

mod general;
mod hermitian;
mod storage;
mod triangular;

pub use general::*;
pub use hermitian::*;
pub use triangular::*;
