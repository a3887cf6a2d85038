//! # hetblas-refblas
//!
//! The reference BLAS in plain Rust: every Level 1, 2 and 3 routine of netlib's BLAS, generic over
//! f32, f64, Complex32 and Complex64 (the [`Scalar`] trait), with the reference's semantics. It is
//! what the drop-in library (crates/capi) answers with when no host BLAS library is present.
//!
//! - The routines take their arguments in the Fortran order, integers as `i64` (the LP64 ABI
//!   widens its 32-bit integers before calling), character options as `u8` (the first byte of the
//!   Fortran argument, compared case-insensitively like LSAME).
//! - Each Level 2 and 3 routine `xxx` comes with `xxx_check`, which returns the parameter number
//!   the reference passes to XERBLA (0 when the call is valid), in the reference's order of checks.
//!   The `unsafe fn xxx` assumes the check passed.
//! - They compute on raw strided memory, so they are `unsafe fn` over raw pointers; each turns its
//!   operands into slices once, from the shapes, and the arithmetic is safe indexing. All index
//!   arithmetic is in `usize`/`isize`, so operands of more than 2^31 elements work.
//! - Quick returns and the reading rules are the reference's: `n <= 0` (or any zero dimension)
//!   returns at once, `beta == 0` overwrites without reading (NaN in C does not survive), `alpha ==
//!   0` does not read A, B or x. No zero entry of x, y or B is skipped, though the reference skips
//!   some (in TRMV, GER, SYRK, TRMM, ...): results differ only where such a zero would multiply an
//!   Inf or NaN, which here propagates as IEEE arithmetic says.
//! - GEMM above 32^3 multiply-adds runs on the `gemm` crate's blocked kernels (threads from rayon's
//!   global pool); SYMM/HEMM expand A's triangle and call it; SYRK/HERK/SYR2K/HER2K, GEMMT
//!   (reference BLAS 3.12's `?gemmtr`, OpenBLAS's and MKL's `?gemmt`) and TRMM/TRSM from order
//!   128 work by blocks of 64, the diagonal blocks in the reference's loops and the rest
//!   through GEMM. Smaller calls, and Level 1 and 2, run in the reference's column-oriented loops.
//! - Where the reference's behaviour and correctness part: ROTMG keeps H explicit across
//!   several rescalings (see [`rotmg`]); NRM2 follows the current reference (nrm2.f90: a negative
//!   increment walks from the end, `incx == 0` reads `x_1` n times).

pub use num_complex;

pub mod level1;
pub mod level2;
pub mod level3;
pub mod options;
pub mod rotation;
pub mod scalar;
mod strided;

pub use level1::*;
pub use level2::*;
pub use level3::*;
pub use rotation::*;
pub use scalar::{Real, Scalar};
