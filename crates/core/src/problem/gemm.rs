//! The problem: routine, shape, transposes, alpha/beta, dtype and operand locations. The planner
//! sees only this; the executor binds it to actual addresses.

use super::blas_flags::ArgCheck;
use crate::error::{Error, Result};
use crate::memory::MemorySpace;
use crate::operand::Trans;
use crate::scalar::DType;

/// Which GEMM operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Operand {
    A,
    B,
    C,
}

impl Operand {
    pub const ALL: [Operand; 3] = [Operand::A, Operand::B, Operand::C];
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A GEMM problem, independent of addresses: what a plan is made for and cached by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GemmProblem {
    pub transa: Trans,
    pub transb: Trans,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub dtype: DType,
    /// beta == 0: C is never read.
    pub beta_zero: bool,
    /// Where the authoritative copy of A, B and C lives.
    pub locations: [MemorySpace; 3],
    /// A symmetric/Hermitian routine run as this GEMM's tiles (`None`: a plain GEMM).
    pub sym: Option<crate::sym::SymTiles>,
}

/// Operand locations (A, B, C) from a placement such as `"hhd"`: each of three letters `h`
/// (host memory) or `d` (`device`'s memory); `None` for anything else.
pub fn placement_locations(placement: &str, device: MemorySpace) -> Option<[MemorySpace; 3]> {
    let mut out = [MemorySpace::HOST; 3];
    let mut n = 0;
    for ch in placement.chars() {
        *out.get_mut(n)? = match ch {
            'h' => MemorySpace::HOST,
            'd' => device,
            _ => return None,
        };
        n += 1;
    }
    (n == 3).then_some(out)
}

/// The largest m*n*k the models take (their counts stay far inside 64 bits). Operands that fit in
/// memory have m*n*k under 2^56, so no call that can run is refused by it.
pub const MAX_MODELLED_PRODUCT: u128 = 1 << 60;

/// Whether the models can take an m x n x k problem (see [`MAX_MODELLED_PRODUCT`]).
pub fn modelled_size(m: usize, n: usize, k: usize) -> bool {
    m as u128 * n as u128 * k as u128 <= MAX_MODELLED_PRODUCT
}

impl GemmProblem {
    /// `InvalidInput` when m*n*k is over [`MAX_MODELLED_PRODUCT`].
    pub fn check_modelled(&self) -> Result<()> {
        if modelled_size(self.m, self.n, self.k) {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "{}x{}x{} is too large to model (m*n*k over 2^60)",
                self.m, self.n, self.k
            )))
        }
    }

    /// Real floating-point operations: 2mnk, or 8mnk for a complex dtype; for a triangle of
    /// C (a rank update), those of the triangle's entries.
    pub fn flops(&self) -> f64 {
        let full = self.dtype.gemm_flops(self.m, self.n, self.k);
        match self.sym {
            Some(s) if s.triangle() => {
                let n = self.n.max(1) as f64;
                // n (n + 1) / 2 entries of n^2 (without the diagonal: n (n - 1) / 2).
                let entries = if s.diagonal { n + 1.0 } else { n - 1.0 };
                full * entries / (2.0 * n)
            }
            _ => full,
        }
    }

    /// Stored (rows, cols) of an operand.
    pub fn stored_shape(&self, op: Operand) -> (usize, usize) {
        match op {
            Operand::A => self.transa.stored_shape(self.m, self.k),
            Operand::B => self.transb.stored_shape(self.k, self.n),
            Operand::C => (self.m, self.n),
        }
    }

    pub fn location(&self, op: Operand) -> MemorySpace {
        self.locations[op.index()]
    }

    /// A GEMM `m x n x k` of `dtype` with no transposes and A, B and C in host memory.
    pub fn host(m: usize, n: usize, k: usize, dtype: DType, beta_zero: bool) -> GemmProblem {
        GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m,
            n,
            k,
            dtype,
            beta_zero,
            locations: [MemorySpace::HOST; 3],
            sym: None,
        }
    }
}

/// Checks GEMMT arguments (`?gemmtr` of reference BLAS 3.12, `?gemmt` elsewhere: C's `uplo`
/// triangle of `alpha op(A) op(B) + beta C`, C `n x n`) as the reference does, in its order:
/// uplo 1, transa 2, transb 3, n 4, k 5, lda 8, ldb 10, ldc 13. Returns uplo and the transposes.
#[allow(clippy::too_many_arguments)] // the BLAS argument list, as BLAS orders it
pub fn check_gemmt_args(
    uplo: u8,
    transa: u8,
    transb: u8,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
) -> Result<(super::Uplo, Trans, Trans)> {
    let a = ArgCheck("GEMMTR");
    let ul = a.flag(1, "uplo", uplo, super::Uplo::from_blas_char, "U or L")?;
    let (ta, tb) = check_product(&a, 1, transa, transb, None, n, k, lda, ldb, ldc)?;
    Ok((ul, ta, tb))
}

/// Checks GEMM arguments exactly as reference BLAS does, in its order, and returns the parsed
/// transposes. Errors carry the parameter number `xerbla` would report.
#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
pub fn check_gemm_args(
    transa: u8,
    transb: u8,
    m: i64,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
) -> Result<(Trans, Trans)> {
    check_product(
        &ArgCheck("GEMM"),
        0,
        transa,
        transb,
        Some(m),
        n,
        k,
        lda,
        ldb,
        ldc,
    )
}

/// GEMM's checks from TRANSA on, shared with GEMMT: its flags come `shift` places later and its
/// C is `n x n` (no `m`).
#[allow(clippy::too_many_arguments)] // the BLAS argument list
fn check_product(
    a: &ArgCheck,
    shift: u32,
    transa: u8,
    transb: u8,
    m: Option<i64>,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
) -> Result<(Trans, Trans)> {
    let trans = |param, name, c| a.flag(param, name, c, Trans::from_blas_char, "N, T or C");
    let ta = trans(1 + shift, "transa", transa)?;
    let tb = trans(2 + shift, "transb", transb)?;
    if let Some(m) = m {
        a.dim(3, "m", m)?;
    }
    a.dim(4, "n", n)?;
    a.dim(5, "k", k)?;
    let m = m.unwrap_or(n);
    a.ld(8, "lda", lda, if ta.is_transposed() { k } else { m })?;
    a.ld(10, "ldb", ldb, if tb.is_transposed() { n } else { k })?;
    a.ld(13, "ldc", ldc, m)?;
    Ok((ta, tb))
}

/// Test problems.
#[cfg(test)]
impl GemmProblem {
    /// DGEMM `m x n x k`, no transposes, A, B and C in host memory, beta 1.
    pub(crate) fn host_dgemm(m: usize, n: usize, k: usize) -> GemmProblem {
        GemmProblem::host(m, n, k, DType::F64, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements() {
        let d = MemorySpace::new_device();
        let h = MemorySpace::HOST;
        assert_eq!(placement_locations("hhd", d), Some([h, h, d]));
        assert_eq!(placement_locations("dhd", d), Some([d, h, d]));
        for bad in ["hh", "hhdd", "hxd", ""] {
            assert_eq!(placement_locations(bad, d), None, "{bad:?}");
        }
    }

    fn param(r: Result<(Trans, Trans)>) -> Option<u32> {
        r.err().and_then(|e| e.blas_param())
    }

    #[test]
    fn reference_blas_order() {
        assert_eq!(
            param(check_gemm_args(b'X', b'N', 1, 1, 1, 1, 1, 1)),
            Some(1)
        );
        assert_eq!(
            param(check_gemm_args(b'N', b'Q', 1, 1, 1, 1, 1, 1)),
            Some(2)
        );
        assert_eq!(
            param(check_gemm_args(b'N', b'N', -1, 1, 1, 1, 1, 1)),
            Some(3)
        );
        assert_eq!(
            param(check_gemm_args(b'N', b'N', 1, -1, 1, 1, 1, 1)),
            Some(4)
        );
        assert_eq!(
            param(check_gemm_args(b'N', b'N', 1, 1, -1, 1, 1, 1)),
            Some(5)
        );
        assert_eq!(
            param(check_gemm_args(b'N', b'N', 5, 1, 1, 4, 1, 5)),
            Some(8)
        );
        assert_eq!(param(check_gemm_args(b'T', b'N', 5, 1, 3, 3, 3, 5)), None);
        assert_eq!(
            param(check_gemm_args(b'N', b'N', 5, 1, 3, 5, 2, 5)),
            Some(10)
        );
        assert_eq!(
            param(check_gemm_args(b'N', b'T', 5, 7, 3, 5, 6, 5)),
            Some(10)
        );
        assert_eq!(
            param(check_gemm_args(b'N', b'N', 5, 1, 1, 5, 1, 4)),
            Some(13)
        );
        // The first bad argument wins, as in xerbla.
        assert_eq!(
            param(check_gemm_args(b'N', b'N', -1, -1, 1, 0, 0, 0)),
            Some(3)
        );
        // m = n = k = 0 with ld = 1 is legal.
        assert!(check_gemm_args(b'n', b'c', 0, 0, 0, 1, 1, 1).is_ok());
    }
}
