//! The options every routine subcommand takes, written once and flattened into each: the
//! problem (`-s/-m/-n/-k`, `--dtype`; `predict` and `simulate` take it too) and how it is run
//! (`--reps`, `--check`, `--trace`, `--devices`, `--seed`, `--json`).

use clap::Args;
use hetblas::{DType, Error, Result, Trans};

/// The one default size of every command.
pub const DEFAULT_SIZE: usize = 4096;

/// The problem's dimensions and element type. Each routine reads the dimensions it has and
/// refuses the others (`trsm -k 5`: B is m x n).
#[derive(Args, Debug, Clone, PartialEq)]
pub struct ProblemArgs {
    /// Every dimension of the routine = SIZE, each overridden by -m/-n/-k.
    // Negative numbers are taken as values so that `-m -5` is refused as a bad size, not as an
    // unknown option `-5`.
    #[arg(long, short = 's', default_value_t = DEFAULT_SIZE, allow_negative_numbers = true)]
    pub size: usize,
    /// Rows: of C (GEMM, SYMM/HEMM), of B (TRSM/TRMM), of A (GETRF) (default: SIZE).
    #[arg(short = 'm', allow_negative_numbers = true)]
    pub m: Option<usize>,
    /// Columns: of C (GEMM, SYMM/HEMM; the order of C in the rank updates and GEMMT), of B
    /// (TRSM/TRMM), of A (POTRF, GETRF, GESV: the order) (default: SIZE).
    #[arg(short = 'n', allow_negative_numbers = true)]
    pub n: Option<usize>,
    /// Inner dimension: of GEMM, GEMMT and the rank updates (default: SIZE).
    #[arg(short = 'k', allow_negative_numbers = true)]
    pub k: Option<usize>,
    /// Element type: f64, f32, c64 (double complex) or c32 (single complex); default f64, or
    /// c64 for the routines defined for complex types only (HERK, HER2K, HEMM).
    #[arg(long)]
    pub dtype: Option<DType>,
}

impl ProblemArgs {
    /// (m, n, k) with SIZE filling what -m/-n/-k left out.
    pub fn mnk(&self) -> (usize, usize, usize) {
        (
            self.m.unwrap_or(self.size),
            self.n.unwrap_or(self.size),
            self.k.unwrap_or(self.size),
        )
    }

    /// `--dtype`, or f64 when it was not given.
    pub fn dtype(&self) -> DType {
        self.dtype.unwrap_or(DType::F64)
    }

    /// Refuses each of `flags` (of 'm', 'n', 'k') that was given: `routine` does not have that
    /// dimension, and `why` says what it has instead.
    pub fn without(&self, routine: &str, flags: &[char], why: &str) -> Result<()> {
        for &f in flags {
            let given = match f {
                'm' => self.m.is_some(),
                'n' => self.n.is_some(),
                _ => self.k.is_some(),
            };
            if given {
                return Err(Error::InvalidInput(format!(
                    "{routine} takes no -{f}: {why}"
                )));
            }
        }
        Ok(())
    }
}

/// How a routine is run and reported.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct RunArgs {
    /// Timed repetitions (after one warm-up call); the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// Verify the result against an f64-accumulated reference (sampled entries or residuals
    /// for big sizes); a NaN or infinity that the reference does not have fails it.
    #[arg(long)]
    pub check: bool,
    /// Write a Chrome trace of the last repetition to this file.
    #[arg(long)]
    pub trace: Option<std::path::PathBuf>,
    /// Devices to use: indices or labels ("0,1", "cuda:0,cpu:0"; see `hetblas devices`);
    /// default: hetblas decides.
    #[arg(long)]
    pub devices: Option<String>,
    /// Seed of the random operands.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print the report as one JSON object (for scripts) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// GEMM's problem: the dimensions and type, and the transposes of
/// `C = alpha * op(A) * op(B) + beta * C` (`predict` and `simulate` take them too).
#[derive(Args, Debug, Clone, PartialEq)]
pub struct ShapeArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
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
        self.problem.mnk()
    }

    pub fn dtype(&self) -> DType {
        self.problem.dtype()
    }

    /// The options that give this problem, as they would be typed (`-s 1024 --dtype c64
    /// --transa T`), for the commands a refusal suggests.
    pub fn typed(&self) -> Vec<String> {
        let (m, n, k) = self.mnk();
        let mut v = if m == n && n == k {
            vec![format!("-s {m}")]
        } else {
            vec![format!("-m {m} -n {n} -k {k}")]
        };
        if let Some(d) = self.problem.dtype {
            v.push(format!("--dtype {d}"));
        }
        for (flag, t) in [("--transa", self.transa), ("--transb", self.transb)] {
            if t != Trans::N {
                v.push(format!("{flag} {}", t.as_char()));
            }
        }
        v
    }
}
