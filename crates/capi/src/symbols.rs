//! The host symbols hetblas forwards to: a row per routine of the table in `routines.rs`
//! ([`Sym`], generated from its lines by `routines!`), a column per precision (S, D, C, Z). A
//! routine known under several names (reference BLAS 3.12's and OpenBLAS's) lists them all on
//! its line; the first a library has is taken.

pub use crate::routines::{Sym, SYMBOLS};

/// The index in the host's address table of `sym` for type `T`: four entries per routine.
#[inline]
pub fn index<T: crate::elem::Elem>(sym: Sym) -> usize {
    sym as usize * 4 + T::IDX
}
