//! The tile of a symmetric/Hermitian routine that a device's kernel runs: the diagonal tile of
//! SYRK/HERK/SYR2K/HER2K (only its referenced triangle is written) or a SYMM/HEMM tile whose A
//! is a diagonal block of the symmetric matrix.

use crate::error::{Error, Result};
use crate::kernel::check_tile;
use crate::memory::RawTile;
use crate::scalar::{DType, ScalarValue};
use crate::sym::{Side, SymOp};

/// The dtypes every symmetric routine BLAS defines covers (HERK/HER2K/HEMM: the complex ones).
pub const SYM_DTYPES: [DType; 4] = DType::ALL;

/// One tile of a symmetric routine, as BLAS calls it:
/// - rank updates: C `n x n` (`m == n`), A (and B for the rank-2k ones) stored as `op(A)` is
///   `n x k` per `trans`;
/// - SYMM/HEMM: C `m x n`, A `m x m` (left) or `n x n` (right), B `m x n`.
///
/// For HERK/HER2K, `beta` (and HERK's `alpha`) are real values carried in the complex dtype
/// (imaginary part zero). With `beta == 0`, C is never read.
#[derive(Debug, Clone, Copy)]
pub struct SymTile {
    pub op: SymOp,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: ScalarValue,
    pub a: RawTile,
    /// B of SYR2K/HER2K and SYMM/HEMM; unused (any value) for SYRK/HERK.
    pub b: RawTile,
    pub beta: ScalarValue,
    pub c: RawTile,
}

impl SymTile {
    pub fn dtype(&self) -> DType {
        self.c.dtype
    }

    /// Whether B is an operand.
    pub fn uses_b(&self) -> bool {
        !matches!(self.op, SymOp::Rank { two: false, .. })
    }

    /// Checks shapes, dtypes and leading dimensions; backends call it before their FFI.
    pub fn check(&self) -> Result<()> {
        let dt = self.c.dtype;
        let bad = |what: String| {
            Err(Error::internal(format!(
                "bad {} tile: {what}",
                self.op.name()
            )))
        };
        if self.a.dtype != dt
            || (self.uses_b() && self.b.dtype != dt)
            || self.alpha.dtype() != dt
            || self.beta.dtype() != dt
        {
            return bad("mixed dtypes".into());
        }
        if !self.op.defined_for(dt) {
            return bad(format!("not defined for {dt}"));
        }
        let (a_shape, b_shape) = match self.op {
            SymOp::Rank { trans, .. } => {
                if self.m != self.n {
                    return bad(format!("C is {}x{}, not square", self.m, self.n));
                }
                let s = trans.stored_shape(self.n, self.k);
                (s, s)
            }
            SymOp::Multiply { side, .. } => {
                let ka = if side == Side::Left { self.m } else { self.n };
                if ka != self.k {
                    return bad(format!("k = {} differs from A's order {ka}", self.k));
                }
                ((ka, ka), (self.m, self.n))
            }
        };
        check_tile("a", &self.a, a_shape, self.k > 0).or_else(bad)?;
        if self.uses_b() {
            check_tile("b", &self.b, b_shape, self.k > 0).or_else(bad)?;
        }
        check_tile("c", &self.c, (self.m, self.n), true).or_else(bad)
    }

    /// The tile's flops (as [`crate::sym::SymProblem::flops`] counts them).
    pub fn flops(&self) -> f64 {
        crate::sym::SymProblem {
            op: self.op,
            m: self.m,
            n: self.n,
            k: self.k,
            dtype: self.dtype(),
        }
        .flops()
    }
}
