//! The problem options every subcommand with a GEMM shape takes, written once and flattened in.

use clap::Args;
use hetblas::{DType, Trans};

/// Shape, element type and transposes of `C = alpha * op(A) * op(B) + beta * C`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct ShapeArgs {
    /// m = n = k = SIZE (each overridden by -m/-n/-k).
    // Negative numbers are taken as values so that `-m -5` is refused as a bad size, not as an
    // unknown option `-5`.
    #[arg(
        long,
        short = 's',
        default_value_t = 2048,
        allow_negative_numbers = true
    )]
    pub size: usize,
    /// Rows of C and of op(A) (default: SIZE).
    #[arg(short = 'm', allow_negative_numbers = true)]
    pub m: Option<usize>,
    /// Columns of C and of op(B) (default: SIZE).
    #[arg(short = 'n', allow_negative_numbers = true)]
    pub n: Option<usize>,
    /// Inner dimension: columns of op(A), rows of op(B) (default: SIZE).
    #[arg(short = 'k', allow_negative_numbers = true)]
    pub k: Option<usize>,
    /// Element type: f64, f32, c64 (double complex, ZGEMM) or c32 (single complex, CGEMM).
    #[arg(long, default_value = "f64")]
    pub dtype: DType,
    /// op(A): N (A), T (A transposed) or C (A conjugate-transposed).
    #[arg(long, default_value = "N")]
    pub transa: Trans,
    /// op(B): N (B), T (B transposed) or C (B conjugate-transposed).
    #[arg(long, default_value = "N")]
    pub transb: Trans,
}

impl ShapeArgs {
    /// (m, n, k) with SIZE filling what -m/-n/-k left out.
    pub fn mnk(&self) -> (usize, usize, usize) {
        (
            self.m.unwrap_or(self.size),
            self.n.unwrap_or(self.size),
            self.k.unwrap_or(self.size),
        )
    }
}
