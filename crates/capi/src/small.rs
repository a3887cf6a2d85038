//! Small GEMMs straight to the host BLAS: a call whose flops are below every offload rule's
//! floor, with no GPU runtime in the process (so no operand can be device memory) and valid
//! arguments, goes to the host's routine without the routing, the device-pointer check and
//! the host lookup of the general path. Those cost about 800 instructions a call (callgrind):
//! NumPy's `a @ b` at n = 8-64 (3-6 us a product) took 7% longer preloaded, against the 5% the
//! drop-in may cost (issue 53; a 2-core x86-64 host, one pinned core, 2026-11-30).
//! Callers check the arguments first (invalid ones take the general path, which reports them);
//! whatever the fast path declines (verbose output, a GPU runtime loaded, a larger call) takes
//! the general path, which decides as before.

use crate::elem::Elem;
use crate::symbols::Sym;

/// Column-major GEMM on the host BLAS when it is small (see the module); `false` leaves the
/// call to the general path.
///
/// # Safety
/// The arguments passed the reference checks (`hetblas_refblas::gemm_check`), and the arrays
/// satisfy the BLAS contract.
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
    if 2.0 * m as f64 * n as f64 * k as f64 >= crate::route::rule().floor()
        || crate::offload::verbose()
        || crate::device_ptr::worth_asking()
    {
        return false;
    }
    call_host!(T, Sym::GEMM, ();
        c transa, c transb, i m, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc)
    .is_some()
}
