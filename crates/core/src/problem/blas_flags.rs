//! The BLAS flags of the Level 3 routines beyond GEMM: which triangle is referenced (UPLO) and
//! on which side a matrix multiplies (SIDE), shared by the symmetric and triangular routines;
//! and the reference BLAS argument checks every routine's checker is made of ([`ArgCheck`]).

use crate::error::{Error, Result};

/// The argument checks of reference BLAS for `routine`: each failure is the `InvalidArgument`
/// carrying the parameter number `xerbla` reports. Callers check in BLAS's order.
pub(crate) struct ArgCheck(pub &'static str);

impl ArgCheck {
    /// The error for parameter `param` (`name`), failing for `reason`.
    pub(crate) fn err(&self, param: u32, name: &'static str, reason: String) -> Error {
        Error::InvalidArgument {
            routine: self.0,
            param,
            name,
            reason,
        }
    }

    /// The flag character `c` as `parse` reads it, else an error naming the `allowed` ones.
    pub(crate) fn flag<T>(
        &self,
        param: u32,
        name: &'static str,
        c: u8,
        parse: impl FnOnce(u8) -> Option<T>,
        allowed: &str,
    ) -> Result<T> {
        parse(c).ok_or_else(|| self.err(param, name, format!("{:?} is not {allowed}", c as char)))
    }

    /// A dimension: `v >= 0`.
    pub(crate) fn dim(&self, param: u32, name: &'static str, v: i64) -> Result<()> {
        if v < 0 {
            return Err(self.err(param, name, format!("{name} = {v} < 0")));
        }
        Ok(())
    }

    /// A leading dimension: `ld >= max(1, rows)`.
    pub(crate) fn ld(&self, param: u32, name: &'static str, ld: i64, rows: i64) -> Result<()> {
        if ld < rows.max(1) {
            return Err(self.err(param, name, format!("{name} = {ld} < max(1, {rows})")));
        }
        Ok(())
    }
}

/// Which triangle of a symmetric or Hermitian matrix is referenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Uplo {
    Upper,
    Lower,
}

impl Uplo {
    /// Parses a BLAS `uplo` character (`U`, `L`, either case).
    pub fn from_blas_char(c: u8) -> Option<Uplo> {
        match c.to_ascii_uppercase() {
            b'U' => Some(Uplo::Upper),
            b'L' => Some(Uplo::Lower),
            _ => None,
        }
    }
    pub fn as_char(self) -> char {
        match self {
            Uplo::Upper => 'U',
            Uplo::Lower => 'L',
        }
    }
    /// Whether entry (i, j) lies in the referenced triangle (the diagonal included).
    pub fn contains(self, i: usize, j: usize) -> bool {
        match self {
            Uplo::Upper => i <= j,
            Uplo::Lower => i >= j,
        }
    }
}

impl std::str::FromStr for Uplo {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.as_bytes() {
            [c] => Uplo::from_blas_char(*c).ok_or_else(|| format!("bad uplo {s:?}")),
            _ => Err(format!("bad uplo {s:?} (expected U or L)")),
        }
    }
}

/// On which side the symmetric matrix of SYMM/HEMM multiplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Side {
    Left,
    Right,
}

impl Side {
    /// Parses a BLAS `side` character (`L`, `R`, either case).
    pub fn from_blas_char(c: u8) -> Option<Side> {
        match c.to_ascii_uppercase() {
            b'L' => Some(Side::Left),
            b'R' => Some(Side::Right),
            _ => None,
        }
    }
    pub fn as_char(self) -> char {
        match self {
            Side::Left => 'L',
            Side::Right => 'R',
        }
    }
}

impl std::str::FromStr for Side {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.as_bytes() {
            [c] => Side::from_blas_char(*c).ok_or_else(|| format!("bad side {s:?}")),
            _ => Err(format!("bad side {s:?} (expected L or R)")),
        }
    }
}
