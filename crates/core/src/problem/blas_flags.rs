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

/// A BLAS flag: an enum whose variants are the characters `from_blas_char` parses (either case)
/// and `as_char` gives; with `parse "what", "expected"`, also `FromStr` of one character.
macro_rules! blas_flag {
    ($(#[$doc:meta])* $name:ident { $($var:ident = $ch:literal),+ } $(parse $what:literal, $expected:literal)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($var),+
        }

        impl $name {
            /// Parses the BLAS character (either case).
            pub fn from_blas_char(c: u8) -> Option<$name> {
                match c.to_ascii_uppercase() {
                    $($ch => Some($name::$var),)+
                    _ => None,
                }
            }
            /// The BLAS character.
            pub fn as_char(self) -> char {
                match self {
                    $($name::$var => $ch as char,)+
                }
            }
        }

        $(impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                match s.as_bytes() {
                    [c] => $name::from_blas_char(*c).ok_or_else(|| format!("bad {} {s:?}", $what)),
                    _ => Err(format!("bad {} {s:?} (expected {})", $what, $expected)),
                }
            }
        })?
    };
}
pub(crate) use blas_flag;

blas_flag! {
    /// Which triangle of a symmetric or Hermitian matrix is referenced.
    Uplo { Upper = b'U', Lower = b'L' } parse "uplo", "U or L"
}

impl Uplo {
    /// Whether entry (i, j) lies in the referenced triangle (the diagonal included).
    pub fn contains(self, i: usize, j: usize) -> bool {
        match self {
            Uplo::Upper => i <= j,
            Uplo::Lower => i >= j,
        }
    }
}

blas_flag! {
    /// On which side the symmetric matrix of SYMM/HEMM multiplies.
    Side { Left = b'L', Right = b'R' } parse "side", "L or R"
}
