//! The symmetric and Hermitian Level 3 routines as problems: SYRK/HERK, SYR2K/HER2K and
//! SYMM/HEMM, and their flop counts.

use crate::operand::Trans;
use crate::scalar::DType;

pub use super::blas_flags::{Side, Uplo};

/// One of the symmetric/Hermitian routines with its structural arguments.
///
/// - `Rank { two: false }`: SYRK (`herm` false) `C = alpha op(A) op(A)^T + beta C`, or HERK
///   `C = alpha op(A) op(A)^H + beta C` with real alpha and beta.
/// - `Rank { two: true }`: SYR2K `C = alpha op(A) op(B)^T + alpha op(B) op(A)^T + beta C`, or
///   HER2K `C = alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C` with real beta.
/// - `Multiply`: SYMM/HEMM `C = alpha A B + beta C` (side left) or `alpha B A + beta C`.
///
/// `op(A)` is `n x k`: `A` itself with `trans == N`, its transpose (SYRK/SYR2K) or conjugate
/// transpose (HERK/HER2K) otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SymOp {
    Rank {
        uplo: Uplo,
        trans: Trans,
        two: bool,
        herm: bool,
    },
    Multiply {
        side: Side,
        uplo: Uplo,
        herm: bool,
    },
}

/// A symmetric/Hermitian routine run as the tiles of a GEMM (see `plan::symmetric`): for a rank
/// update, C's tiles in `op`'s triangle only (`diagonal`: whether C's diagonal tiles, run by the
/// routine's own kernel, are included; the rank-2k routines run as two such GEMMs); for
/// SYMM/HEMM every C tile, the symmetric operand read from its stored triangle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SymTiles {
    pub op: SymOp,
    pub diagonal: bool,
}

impl SymTiles {
    /// Whether only a triangle of C is computed (a rank update).
    pub fn triangle(&self) -> bool {
        self.op.triangular_c()
    }
}

impl SymOp {
    /// The routine's BLAS name without its type prefix ("SYRK", "HER2K", ...).
    pub fn name(&self) -> &'static str {
        match *self {
            SymOp::Rank { two, herm, .. } => match (two, herm) {
                (false, false) => "SYRK",
                (false, true) => "HERK",
                (true, false) => "SYR2K",
                (true, true) => "HER2K",
            },
            SymOp::Multiply { herm: false, .. } => "SYMM",
            SymOp::Multiply { herm: true, .. } => "HEMM",
        }
    }
    pub fn uplo(&self) -> Uplo {
        match *self {
            SymOp::Rank { uplo, .. } | SymOp::Multiply { uplo, .. } => uplo,
        }
    }
    pub fn herm(&self) -> bool {
        match *self {
            SymOp::Rank { herm, .. } | SymOp::Multiply { herm, .. } => herm,
        }
    }
    /// Whether the routine writes only one triangle of C (SYRK/HERK/SYR2K/HER2K).
    pub fn triangular_c(&self) -> bool {
        matches!(self, SymOp::Rank { .. })
    }
    /// The transpose an off-diagonal GEMM uses for `op(A)^T` (or `^H` for Hermitian routines).
    pub fn tconj(&self) -> Trans {
        if self.herm() {
            Trans::C
        } else {
            Trans::T
        }
    }
    /// The transposes of the GEMM a rank update's product `op(A) op(B)^T` (`^H`) is in `dtype`:
    /// `(N, T or C)` with `trans` N, else `(trans, N)`; `(N, N)` for SYMM/HEMM.
    pub fn gemm_trans(&self, dtype: crate::scalar::DType) -> (Trans, Trans) {
        match *self {
            SymOp::Rank {
                trans: Trans::N, ..
            } => (Trans::N, self.tconj().for_dtype(dtype)),
            SymOp::Rank { trans, .. } => (trans.for_dtype(dtype), Trans::N),
            SymOp::Multiply { .. } => (Trans::N, Trans::N),
        }
    }
    /// The order of the symmetric matrix: C's (`n`) for a rank update, `k` for SYMM/HEMM.
    pub fn order(&self, n: usize, k: usize) -> usize {
        match self {
            SymOp::Rank { .. } => n,
            SymOp::Multiply { .. } => k,
        }
    }
    /// Whether BLAS defines the routine for `dtype` (the Hermitian ones are complex only).
    pub fn defined_for(&self, dtype: DType) -> bool {
        !self.herm() || dtype.is_complex()
    }
}

/// A symmetric/Hermitian problem: C is `m x n` (square for the rank-k updates, `m == n`), `k`
/// the inner dimension (for SYMM: `m` on the left side, `n` on the right).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SymProblem {
    pub op: SymOp,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub dtype: DType,
}

impl SymProblem {
    /// SYRK/HERK (`two` false) or SYR2K/HER2K: C `n x n`, op(A) `n x k`.
    pub fn rank(
        uplo: Uplo,
        trans: Trans,
        two: bool,
        herm: bool,
        n: usize,
        k: usize,
        dtype: DType,
    ) -> Self {
        SymProblem {
            op: SymOp::Rank {
                uplo,
                trans,
                two,
                herm,
            },
            m: n,
            n,
            k,
            dtype,
        }
    }
    /// SYMM/HEMM: C `m x n`, A `m x m` (left) or `n x n` (right).
    pub fn multiply(side: Side, uplo: Uplo, herm: bool, m: usize, n: usize, dtype: DType) -> Self {
        let k = if side == Side::Left { m } else { n };
        SymProblem {
            op: SymOp::Multiply { side, uplo, herm },
            m,
            n,
            k,
            dtype,
        }
    }
    /// Floating-point operations: a triangle of C for the rank updates (twice for rank-2k), a
    /// full product for SYMM.
    pub fn flops(&self) -> f64 {
        let f = self.dtype.flops_per_fma();
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        match self.op {
            SymOp::Rank { two, .. } => f * n * (n + 1.0) / 2.0 * k * if two { 2.0 } else { 1.0 },
            SymOp::Multiply { .. } => f * m * n * k,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_count_a_triangle() {
        let p = SymProblem::rank(Uplo::Lower, Trans::N, false, false, 4, 3, DType::F64);
        assert_eq!(p.flops(), 2.0 * 10.0 * 3.0);
        let p = SymProblem::multiply(Side::Right, Uplo::Lower, true, 5, 3, DType::C64);
        assert_eq!((p.k, p.flops()), (3, 8.0 * 5.0 * 3.0 * 3.0));
    }
}
