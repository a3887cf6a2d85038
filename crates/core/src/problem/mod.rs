//! The problem and its operands: element types ([`scalar`]), host views ([`operand`]),
//! device-resident matrices and the operand forms GEMM accepts ([`matrix`]), the GEMM problem
//! and its argument checks ([`gemm`]), and the f64-accumulated reference GEMM that tests compare
//! against ([`mod@reference`]).

pub mod blas_flags;
pub mod gemm;
pub mod matrix;
pub mod operand;
pub mod reference;
pub mod scalar;
pub mod sym;
pub mod sym_reference;
pub mod tri_check;
pub mod triangular;

pub use gemm::{check_gemm_args, check_gemmt_args, placement_locations, GemmProblem, Operand};
pub use sym::{Side, SymOp, SymProblem, SymTiles, Uplo};
pub use triangular::{check_tri_args, Diag, TriOptions, TriProblem, TriRoutine};
