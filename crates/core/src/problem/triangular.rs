//! The triangular routines' problem: TRSM (`op(A) X = alpha B` or `X op(A) = alpha B`, X
//! overwriting B) and TRMM (`B := alpha op(A) B` or `alpha B op(A)`), their options and argument
//! checks, and the block order in which a tile algorithm may work on B in place.

use super::blas_flags::{blas_flag, ArgCheck};
use crate::error::Result;
use crate::operand::Trans;
use crate::scalar::DType;

pub use super::blas_flags::{Side, Uplo};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum TriRoutine {
    Trsm,
    Trmm,
}

impl TriRoutine {
    pub fn name(self) -> &'static str {
        ["TRSM", "TRMM"][self as usize]
    }
}

blas_flag! {
    /// DIAG: a unit diagonal is taken as 1 and never read.
    Diag { Unit = b'U', NonUnit = b'N' }
}

/// The options of one triangular call (shape-free part).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct TriOptions {
    pub side: Side,
    pub uplo: Uplo,
    pub transa: Trans,
    pub diag: Diag,
}

/// One triangular problem: B is `m x n`, A is `m x m` (left) or `n x n` (right).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct TriProblem {
    pub routine: TriRoutine,
    pub opts: TriOptions,
    pub m: usize,
    pub n: usize,
    pub dtype: DType,
}

impl TriProblem {
    pub fn a_order(&self) -> usize {
        match self.opts.side {
            Side::Left => self.m,
            Side::Right => self.n,
        }
    }

    /// The number of independent lines of B: columns (left side) or rows (right side).
    pub fn b_lines(&self) -> usize {
        match self.opts.side {
            Side::Left => self.n,
            Side::Right => self.m,
        }
    }

    /// Flops of the call (real flops; a complex multiply-add counts as 8).
    pub fn flops(&self) -> f64 {
        let k = self.a_order() as f64;
        self.dtype.flops_per_fma() * 0.5 * k * k * self.b_lines() as f64
    }

    /// The diagonal block indices in TRSM's (or TRMM's) order, for `nt` blocks: step `s`
    /// works on block `order[s]`; the blocks after it in the order are the ones it updates
    /// (TRSM) or reads (TRMM).
    pub fn block_order(&self, nt: usize) -> Vec<usize> {
        // TRSM walks forward on the left side with a lower `op(A)` (forward substitution), on
        // the right with an upper one; TRMM the other way, so that the blocks of B it still
        // reads are not yet overwritten.
        let o = &self.opts;
        let op_lower = (o.uplo == Uplo::Lower) != o.transa.is_transposed();
        if ((o.side == Side::Left) == op_lower) == (self.routine == TriRoutine::Trsm) {
            (0..nt).collect()
        } else {
            (0..nt).rev().collect()
        }
    }
}

/// Checks TRSM/TRMM arguments as reference BLAS does, in its order (SIDE 1, UPLO 2, TRANSA 3,
/// DIAG 4, M 5, N 6, LDA 9, LDB 11), and returns the parsed options.
#[allow(clippy::too_many_arguments)] // reason: the BLAS argument list
pub fn check_tri_args(
    routine: TriRoutine,
    side: u8,
    uplo: u8,
    transa: u8,
    diag: u8,
    m: i64,
    n: i64,
    lda: i64,
    ldb: i64,
) -> Result<TriOptions> {
    let a = ArgCheck(routine.name());
    let side = a.flag(1, "side", side, Side::from_blas_char, "L or R")?;
    let uplo = a.flag(2, "uplo", uplo, Uplo::from_blas_char, "L or U")?;
    let transa = a.flag(3, "transa", transa, Trans::from_blas_char, "N, T or C")?;
    let diag = a.flag(4, "diag", diag, Diag::from_blas_char, "U or N")?;
    a.dim(5, "m", m)?;
    a.dim(6, "n", n)?;
    a.ld(9, "lda", lda, if side == Side::Left { m } else { n })?;
    a.ld(11, "ldb", ldb, m)?;
    Ok(TriOptions {
        side,
        uplo,
        transa,
        diag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(r: Result<TriOptions>) -> Option<u32> {
        r.err().and_then(|e| e.blas_param())
    }

    #[test]
    fn reference_blas_order() {
        let t = TriRoutine::Trsm;
        assert_eq!(
            param(check_tri_args(t, b'X', b'L', b'N', b'N', 1, 1, 1, 1)),
            Some(1)
        );
        assert_eq!(
            param(check_tri_args(t, b'L', b'X', b'N', b'N', 1, 1, 1, 1)),
            Some(2)
        );
        assert_eq!(
            param(check_tri_args(t, b'L', b'L', b'X', b'N', 1, 1, 1, 1)),
            Some(3)
        );
        assert_eq!(
            param(check_tri_args(t, b'L', b'L', b'N', b'X', 1, 1, 1, 1)),
            Some(4)
        );
        assert_eq!(
            param(check_tri_args(t, b'L', b'L', b'N', b'N', -1, 1, 1, 1)),
            Some(5)
        );
        assert_eq!(
            param(check_tri_args(t, b'L', b'L', b'N', b'N', 1, -1, 1, 1)),
            Some(6)
        );
        // lda is checked against m on the left, n on the right.
        assert_eq!(
            param(check_tri_args(t, b'L', b'L', b'N', b'N', 5, 2, 4, 5)),
            Some(9)
        );
        assert_eq!(
            param(check_tri_args(t, b'R', b'L', b'N', b'N', 5, 2, 4, 5)),
            None
        );
        assert_eq!(
            param(check_tri_args(t, b'R', b'L', b'N', b'N', 5, 7, 6, 5)),
            Some(9)
        );
        assert_eq!(
            param(check_tri_args(t, b'L', b'U', b'T', b'U', 5, 2, 5, 4)),
            Some(11)
        );
        assert!(check_tri_args(TriRoutine::Trmm, b'r', b'u', b'c', b'u', 0, 0, 1, 1).is_ok());
    }

    #[test]
    fn orders() {
        let p = |side, uplo, transa, routine| TriProblem {
            routine,
            opts: TriOptions {
                side,
                uplo,
                transa,
                diag: Diag::NonUnit,
            },
            m: 4,
            n: 4,
            dtype: DType::F64,
        };
        use TriRoutine::*;
        assert_eq!(
            p(Side::Left, Uplo::Lower, Trans::N, Trsm).block_order(3),
            [0, 1, 2]
        );
        assert_eq!(
            p(Side::Left, Uplo::Upper, Trans::N, Trsm).block_order(3),
            [2, 1, 0]
        );
        assert_eq!(
            p(Side::Left, Uplo::Upper, Trans::T, Trsm).block_order(3),
            [0, 1, 2]
        );
        assert_eq!(
            p(Side::Right, Uplo::Upper, Trans::N, Trsm).block_order(3),
            [0, 1, 2]
        );
        assert_eq!(
            p(Side::Right, Uplo::Lower, Trans::N, Trsm).block_order(3),
            [2, 1, 0]
        );
        assert_eq!(
            p(Side::Left, Uplo::Lower, Trans::N, Trmm).block_order(3),
            [2, 1, 0]
        );
    }
}
