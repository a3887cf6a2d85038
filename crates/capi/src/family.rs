//! The name families libhetblas.so exports, and the family of the call the current thread is
//! in.
//!
//! Every routine is exported under each family's names, generated from the same one-line
//! definitions ([`crate::routines`], [`crate::cblas`], ...):
//! - [`Family::Reference`]: the reference BLAS and CBLAS names, LP64 (`dgemm_`, `cblas_dgemm`)
//!   and ILP64 with OpenBLAS's suffix (`dgemm_64_`, `cblas_dgemm64_`);
//! - [`Family::ScipyLp64`] / [`Family::ScipyIlp64`]: the renamed OpenBLAS that pip's NumPy and
//!   SciPy wheels bundle (scipy-openblas: `scipy_dgemm_`, `scipy_cblas_dgemm`, and
//!   `scipy_dgemm_64_`, `scipy_cblas_dgemm64_`). A preloaded libhetblas.so takes these calls
//!   before the wheel's own library does.
//!
//! A call kept on the host goes to the library its name belongs to ([`crate::host::current`]):
//! a `scipy_` name to the wheel's own OpenBLAS (the library that defines the same name), so
//! what runs when hetblas does not offload is exactly what ran without it.

use std::cell::Cell;

/// A family of exported names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `dgemm_`, `dgemm_64_`, `cblas_dgemm`, `cblas_dgemm64_`.
    Reference,
    /// `scipy_dgemm_`, `scipy_cblas_dgemm` (32-bit integers).
    ScipyLp64,
    /// `scipy_dgemm_64_`, `scipy_cblas_dgemm64_` (64-bit integers).
    ScipyIlp64,
}

impl Family {
    /// Every family, in the summary's order.
    pub const ALL: [Family; 3] = [Family::Reference, Family::ScipyLp64, Family::ScipyIlp64];

    /// The Fortran symbol of routine `base` ("dgemm") in this family, for the host's integer
    /// width: `dgemm_` (the reference host is LP64), `scipy_dgemm_`, `scipy_dgemm_64_`.
    pub fn host_symbol(self, base: &str) -> String {
        match self {
            Family::Reference => format!("{base}_"),
            Family::ScipyLp64 => format!("scipy_{base}_"),
            Family::ScipyIlp64 => format!("scipy_{base}_64_"),
        }
    }

    /// Whether the family's host library takes 64-bit integers.
    pub fn host_ilp64(self) -> bool {
        self == Family::ScipyIlp64
    }

    /// For messages.
    pub fn describe(self) -> &'static str {
        match self {
            Family::Reference => "reference names",
            Family::ScipyLp64 => "scipy_ LP64 names",
            Family::ScipyIlp64 => "scipy_ ILP64 names",
        }
    }
}

thread_local! {
    static CURRENT: Cell<Family> = const { Cell::new(Family::Reference) };
}

/// The family of the entry point this thread is in (the innermost, for a call made from
/// inside a forwarded host routine); [`Family::Reference`] outside any.
#[inline]
pub fn current() -> Family {
    CURRENT.with(|c| c.get())
}

/// Marks this thread as inside an entry point of `family` until dropped (the previous family
/// is put back, so a host LAPACK routine's nested BLAS calls leave it as they found it).
pub struct Entered(Family);

impl Entered {
    #[inline]
    pub fn new(family: Family) -> Entered {
        Entered(CURRENT.with(|c| c.replace(family)))
    }
}

impl Drop for Entered {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_per_family() {
        assert_eq!(Family::Reference.host_symbol("dgemm"), "dgemm_");
        assert_eq!(Family::ScipyLp64.host_symbol("dgemm"), "scipy_dgemm_");
        assert_eq!(Family::ScipyIlp64.host_symbol("zdotc"), "scipy_zdotc_64_");
        assert!(Family::ScipyIlp64.host_ilp64() && !Family::ScipyLp64.host_ilp64());
    }

    #[test]
    fn nested_entries_restore_the_outer_family() {
        assert_eq!(current(), Family::Reference);
        {
            let _outer = Entered::new(Family::ScipyIlp64);
            assert_eq!(current(), Family::ScipyIlp64);
            {
                let _inner = Entered::new(Family::ScipyLp64);
                assert_eq!(current(), Family::ScipyLp64);
            }
            assert_eq!(current(), Family::ScipyIlp64);
        }
        assert_eq!(current(), Family::Reference);
    }
}
