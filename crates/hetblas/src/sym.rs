//! The symmetric and Hermitian Level 3 routines of [`Runtime`]: SYRK/HERK, SYR2K/HER2K and
//! SYMM/HEMM on host or device operands, in the style of [`Runtime::gemm`].

use crate::runtime::Runtime;
use hetblas_core::{
    GemmOptions, GemmPrediction, GemmReport, MatIn, MatOut, Result, Scalar, Side, SymOp,
    SymProblem, Trans, Uplo,
};

impl Runtime {
    /// SYRK: `C = alpha op(A) op(A)^T + beta C` on the `uplo` triangle of the `n x n` C (the
    /// other triangle is not touched); op(A) is `n x k` (`trans` N, or T for `A^T`).
    ///
    /// # Errors
    /// Shape mismatches as the routine's BLAS parameters (3 n, 4 k); device errors.
    pub fn syrk<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        trans: Trans,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
    ) -> Result<GemmReport> {
        let op = SymOp::Rank {
            uplo,
            trans,
            two: false,
            herm: false,
        };
        self.sym_with(op, alpha, a, None, beta, c, &GemmOptions::default())
    }

    /// HERK (complex `T`): `C = alpha op(A) op(A)^H + beta C` with real alpha and beta, on the
    /// `uplo` triangle; the diagonal of C comes out real. `trans` N or C. As in the reference
    /// BLAS, alpha = 0 or k = 0 with beta = 1 returns at once and leaves C as it was.
    ///
    /// # Errors
    /// As [`Runtime::syrk`]; `InvalidInput` for a real `T`.
    pub fn herk<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        trans: Trans,
        alpha: f64,
        a: impl Into<MatIn<'a, T>>,
        beta: f64,
        c: impl Into<MatOut<'a, T>>,
    ) -> Result<GemmReport> {
        let op = SymOp::Rank {
            uplo,
            trans,
            two: false,
            herm: true,
        };
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        self.sym_with(op, alpha, a, None, beta, c, &GemmOptions::default())
    }

    /// SYR2K: `C = alpha op(A) op(B)^T + alpha op(B) op(A)^T + beta C` on the `uplo` triangle.
    ///
    /// # Errors
    /// As [`Runtime::syrk`].
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub fn syr2k<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        trans: Trans,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
    ) -> Result<GemmReport> {
        let op = SymOp::Rank {
            uplo,
            trans,
            two: true,
            herm: false,
        };
        let b = Some(b.into());
        self.sym_with(op, alpha, a, b, beta, c, &GemmOptions::default())
    }

    /// HER2K (complex `T`): `C = alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C`,
    /// beta real, on the `uplo` triangle with a real diagonal.
    ///
    /// # Errors
    /// As [`Runtime::herk`].
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub fn her2k<'a, T: Scalar>(
        &self,
        uplo: Uplo,
        trans: Trans,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatIn<'a, T>>,
        beta: f64,
        c: impl Into<MatOut<'a, T>>,
    ) -> Result<GemmReport> {
        let op = SymOp::Rank {
            uplo,
            trans,
            two: true,
            herm: true,
        };
        let b = Some(b.into());
        self.sym_with(
            op,
            alpha,
            a,
            b,
            T::from_f64(beta),
            c,
            &GemmOptions::default(),
        )
    }

    /// SYMM: `C = alpha A B + beta C` (`side` left) or `alpha B A + beta C`, A symmetric with
    /// its `uplo` triangle stored; C and B `m x n`.
    ///
    /// # Errors
    /// Shape mismatches as the routine's BLAS parameters (3 m, 4 n); device errors.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub fn symm<'a, T: Scalar>(
        &self,
        side: Side,
        uplo: Uplo,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
    ) -> Result<GemmReport> {
        let op = SymOp::Multiply {
            side,
            uplo,
            herm: false,
        };
        let b = Some(b.into());
        self.sym_with(op, alpha, a, b, beta, c, &GemmOptions::default())
    }

    /// HEMM (complex `T`): as [`Runtime::symm`] with A Hermitian (its diagonal's imaginary
    /// parts are not read).
    ///
    /// # Errors
    /// As [`Runtime::symm`]; `InvalidInput` for a real `T`.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    pub fn hemm<'a, T: Scalar>(
        &self,
        side: Side,
        uplo: Uplo,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: impl Into<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
    ) -> Result<GemmReport> {
        let op = SymOp::Multiply {
            side,
            uplo,
            herm: true,
        };
        let b = Some(b.into());
        self.sym_with(op, alpha, a, b, beta, c, &GemmOptions::default())
    }

    /// Any of the routines above, as `op` says, with explicit options (devices, the diagonal
    /// block size as `tile`, memory limit). `b` is `None` for SYRK/HERK.
    ///
    /// # Errors
    /// As the routine's own method, and bad options.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list and the options
    pub fn sym_with<'a, T: Scalar>(
        &self,
        op: SymOp,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: Option<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
        opts: &GemmOptions,
    ) -> Result<GemmReport> {
        self.pool().sym_with(op, alpha, a, b, beta, c, opts)
    }

    /// What the calibrated profile predicts for a symmetric problem; `None` without a profile.
    pub fn predict_sym(&self, problem: &SymProblem) -> Option<GemmPrediction> {
        self.pool().predict_sym(problem)
    }

    /// Each candidate square tile of `problem` with its simulated makespan (host operands;
    /// empty without a profile).
    pub fn sym_tile_predictions(&self, problem: &SymProblem) -> Vec<(usize, Option<f64>)> {
        self.pool().sym_tile_predictions(problem)
    }

    /// The diagonal block size the model chooses for `problem` with `opts`.
    pub fn sym_block(&self, problem: &SymProblem, opts: &GemmOptions) -> usize {
        self.pool().sym_block(problem, opts)
    }
}
