//! Small GEMMs straight to the host BLAS: a call whose flops are below every offload rule's
//! floor, with no GPU runtime in the process (so no operand can be device memory) and valid
//! arguments, goes to the host's routine without the routing, the device-pointer check and
//! the host lookup of the general path. Those cost about 800 instructions a call (callgrind):
//! NumPy's `a @ b` at n = 8-64 (3-6 us a product) took 7% longer preloaded, against the 5% the
//! drop-in may cost (issue 53; a 2-core x86-64 host, one pinned core, 2026-11-30).
//! Whatever the fast path declines (invalid arguments, verbose output, a GPU runtime loaded,
//! a larger call) takes the general path, which reports errors and decides as before.

use crate::elem::Elem;
use crate::symbols::Sym;
use std::sync::atomic::{AtomicU64, Ordering};

/// The flops below which no call leaves the host ([`crate::route::Rule::floor`]), as `f64`
/// bits; 0 until the settings are read.
static FLOOR: AtomicU64 = AtomicU64::new(0);

fn floor() -> f64 {
    match FLOOR.load(Ordering::Relaxed) {
        0 => {
            let f = crate::route::rule().floor();
            FLOOR.store(f.to_bits(), Ordering::Relaxed);
            f
        }
        bits => f64::from_bits(bits),
    }
}

/// Whether op(X) (`rows x cols` after `trans`) is a valid transpose character with a leading
/// dimension the reference accepts.
fn valid(trans: u8, rows: i64, cols: i64, ld: i64) -> bool {
    let stored_rows = match trans.to_ascii_uppercase() {
        b'N' => rows,
        b'T' | b'C' => cols,
        _ => return false,
    };
    ld >= stored_rows.max(1)
}

/// Column-major GEMM on the host BLAS when it is small (see the module); `false` leaves the
/// call to the general path.
///
/// # Safety
/// The BLAS contract for the arguments it accepts (they are checked as the reference does
/// before anything is read).
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
#[inline]
pub unsafe fn gemm<T: Elem>(
    transa: u8,
    transb: u8,
    m: i64,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) -> bool {
    if m <= 0 || n <= 0 || k <= 0 {
        return false;
    }
    if 2.0 * m as f64 * n as f64 * k as f64 >= floor()
        || !valid(transa, m, k, lda)
        || !valid(transb, k, n, ldb)
        || ldc < m
        || crate::offload::verbose()
        || crate::device_ptr::worth_asking()
    {
        return false;
    }
    call_host!(T, Sym::GEMM, ();
        c transa, c transb, i m, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc)
    .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_dimensions_and_characters_are_checked_as_the_reference_does() {
        assert!(valid(b'N', 5, 3, 5));
        assert!(!valid(b'N', 5, 3, 4));
        assert!(valid(b't', 5, 3, 3));
        assert!(!valid(b'T', 5, 3, 2));
        assert!(valid(b'C', 0, 3, 3));
        assert!(valid(b'N', 0, 3, 1), "ld >= max(1, rows)");
        assert!(!valid(b'N', 0, 3, 0));
        assert!(!valid(b'X', 5, 3, 5));
    }
}
