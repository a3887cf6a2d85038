//! The character options of the BLAS interface, read like the reference's LSAME: the first byte
//! of the Fortran character argument, compared case-insensitively.

/// LSAME: whether `c` is the letter `upper` (given in upper case), in either case.
pub fn lsame(c: u8, upper: u8) -> bool {
    c.to_ascii_uppercase() == upper
}

/// TRANS / TRANSA / TRANSB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trans {
    /// 'N': op(A) = A.
    No,
    /// 'T': op(A) = A^T.
    Trans,
    /// 'C': op(A) = A^H (A^T for a real type).
    ConjTrans,
}

impl Trans {
    /// The option named by `c`, which the routine's check has accepted (an invalid `c`, a broken
    /// contract, reads as Trans::No, never a panic).
    pub(crate) fn assume(c: u8) -> Trans {
        Self::parse(c).unwrap_or(Trans::No)
    }

    /// The option named by `c`, if it names one.
    pub fn parse(c: u8) -> Option<Trans> {
        match c.to_ascii_uppercase() {
            b'N' => Some(Trans::No),
            b'T' => Some(Trans::Trans),
            b'C' => Some(Trans::ConjTrans),
            _ => None,
        }
    }
}

/// UPLO: which triangle of a symmetric, Hermitian or triangular matrix is referenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uplo {
    /// 'U'.
    Upper,
    /// 'L'.
    Lower,
}

impl Uplo {
    /// The option named by `c`, which the routine's check has accepted (an invalid `c`, a broken
    /// contract, reads as Uplo::Upper, never a panic).
    pub(crate) fn assume(c: u8) -> Uplo {
        Self::parse(c).unwrap_or(Uplo::Upper)
    }

    /// The option named by `c`, if it names one.
    pub fn parse(c: u8) -> Option<Uplo> {
        match c.to_ascii_uppercase() {
            b'U' => Some(Uplo::Upper),
            b'L' => Some(Uplo::Lower),
            _ => None,
        }
    }
}

/// SIDE: whether the special matrix multiplies from the left or the right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// 'L'.
    Left,
    /// 'R'.
    Right,
}

impl Side {
    /// The option named by `c`, which the routine's check has accepted (an invalid `c`, a broken
    /// contract, reads as Side::Left, never a panic).
    pub(crate) fn assume(c: u8) -> Side {
        Self::parse(c).unwrap_or(Side::Left)
    }

    /// The option named by `c`, if it names one.
    pub fn parse(c: u8) -> Option<Side> {
        match c.to_ascii_uppercase() {
            b'L' => Some(Side::Left),
            b'R' => Some(Side::Right),
            _ => None,
        }
    }
}

/// DIAG: whether a triangular matrix has an implicit unit diagonal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Diag {
    /// 'U': the diagonal is taken as 1 and not read.
    Unit,
    /// 'N'.
    NonUnit,
}

impl Diag {
    /// The option named by `c`, which the routine's check has accepted (an invalid `c`, a broken
    /// contract, reads as Diag::NonUnit, never a panic).
    pub(crate) fn assume(c: u8) -> Diag {
        Self::parse(c).unwrap_or(Diag::NonUnit)
    }

    /// The option named by `c`, if it names one.
    pub fn parse(c: u8) -> Option<Diag> {
        match c.to_ascii_uppercase() {
            b'U' => Some(Diag::Unit),
            b'N' => Some(Diag::NonUnit),
            _ => None,
        }
    }
}
