//! The pure-Rust LAPACK: the factorization tiles through faer (its blocked Cholesky and
//! partial-pivoting LU), kept to LAPACK's contract where faer's differs:
//!
//! - **The triangle.** faer factors the lower triangle of its matrix and may write the other
//!   one (it does for complex ones); LAPACK never touches it. The stored triangle is copied
//!   into a packed lower triangle, factored there, and copied back. The upper triangle goes in
//!   transposed: as a lower triangle it is `conj(A)`, whose Cholesky factor `conj(L)`,
//!   transposed back, is `U = L^H` (`A = U^H U`, as `?potrf` with `uplo = U` leaves it). The
//!   pivot faer stops at is the column LAPACK stops at (both go left to right; `index + 1` is
//!   `info`).
//! - **Pivots.** faer returns the row permutation; LAPACK's `ipiv` is the sequence of
//!   interchanges that builds it, which the permutation determines uniquely (interchange `k`
//!   brings the row that ends in position `k` there). faer picks each pivot as `?getrf` does
//!   (the first largest `|re| + |im|`), so the same choices give the same `ipiv`.
//! - **Exactly singular panels.** faer scales a column by `1 / pivot` even when the pivot is
//!   zero, spreading NaN; LAPACK leaves that column alone and reports the first such column in
//!   `info`. A panel whose `U` has a zero or non-finite diagonal after faer is restored and
//!   factored again by `getf2`, LAPACK's unblocked algorithm, which gives LAPACK's `info`.
//! - **LASWP** is the loop LAPACK defines (interchanges `k1..=k2` in order), per column.

use crate::lapack::{check_pivots, HostLapack};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch, LltError};
use faer::linalg::lu::partial_pivoting::factor::{lu_in_place, lu_in_place_scratch};
use faer::{MatMut, Par};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{DType, Error, GetrfTile, LaswpTile, PotrfTile, Result, Uplo};
use num_complex::ComplexFloat;
use num_traits::Float;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The factorization tiles in Rust (faer), on the calling thread and `threads` rayon workers.
pub struct RustLapack {
    threads: AtomicUsize,
    describe: String,
}

impl RustLapack {
    /// `threads` = 0 uses every core.
    pub fn new(threads: usize) -> RustLapack {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        RustLapack {
            threads: AtomicUsize::new(threads),
            describe: "pure-Rust faer".into(),
        }
    }

    fn par(&self) -> Par {
        match self.threads.load(Ordering::Relaxed) {
            0 | 1 => Par::Seq,
            t => Par::rayon(t),
        }
    }
}

/// A workspace of `req` for faer, or `OutOfMemory`.
fn workspace(req: faer::dyn_stack::StackReq) -> Result<MemBuffer> {
    MemBuffer::try_new(req).map_err(|_| Error::OutOfMemory {
        device: "cpu".into(),
        detail: "faer workspace".into(),
    })
}

/// The element types, for the dispatch on a tile's dtype.
macro_rules! by_dtype {
    ($dtype:expr, $f:ident, $($arg:expr),*) => {
        match $dtype {
            DType::F32 => $f::<f32>($($arg),*),
            DType::F64 => $f::<f64>($($arg),*),
            DType::C32 => $f::<c32>($($arg),*),
            DType::C64 => $f::<c64>($($arg),*),
        }
    };
}

impl HostLapack for RustLapack {
    fn describe(&self) -> &str {
        &self.describe
    }
    fn kind(&self) -> &'static str {
        "rust"
    }
    fn set_threads(&self, threads: usize) {
        self.threads.store(threads.max(1), Ordering::Relaxed);
    }
    unsafe fn potrf(&self, op: &PotrfTile) -> Result<i64> {
        op.check()?;
        let par = self.par();
        // SAFETY: forwarded caller contract.
        unsafe { by_dtype!(op.dtype(), potrf_typed, op, par) }
    }
    unsafe fn getrf(&self, op: &GetrfTile) -> Result<i64> {
        op.check()?;
        let par = self.par();
        // SAFETY: forwarded caller contract.
        unsafe { by_dtype!(op.dtype(), getrf_typed, op, par) }
    }
    unsafe fn laswp(&self, op: &LaswpTile) -> Result<()> {
        op.check()?;
        // SAFETY: forwarded caller contract.
        unsafe { check_pivots(op) }?;
        // SAFETY: forwarded caller contract; the pivots name rows of the tile.
        unsafe { by_dtype!(op.dtype(), laswp_typed, op) };
        Ok(())
    }
}

/// The column-major `rows x cols` matrix at `addr` with leading dimension `ld`, as faer's view.
///
/// # Safety
/// The elements are valid, writable host memory of `T`, used by nothing else for `'a`.
unsafe fn view<'a, T>(addr: u64, rows: usize, cols: usize, ld: usize) -> MatMut<'a, T> {
    // SAFETY: caller contract; ld fits isize (it bounds an allocation).
    unsafe { MatMut::from_raw_parts_mut(addr as *mut T, rows, cols, 1, ld as isize) }
}

/// # Safety
/// As [`HostLapack::potrf`].
unsafe fn potrf_typed<T: faer::traits::ComplexField + Copy>(
    op: &PotrfTile,
    par: Par,
) -> Result<i64> {
    let n = op.n();
    if n == 0 {
        return Ok(0);
    }
    // The stored triangle as the lower triangle of a packed copy (the upper one transposed:
    // see the module's documentation), zeros above.
    let at = |i: usize, j: usize| (op.a.addr as *mut T).wrapping_add(i + j * op.a.ld);
    // Entry (i, j), i >= j, of the packed lower triangle in the tile.
    let stored = |i: usize, j: usize| match op.uplo {
        Uplo::Lower => at(i, j),
        Uplo::Upper => at(j, i),
    };
    let mut b = faer::Mat::<T>::zeros(n, n);
    for j in 0..n {
        for i in j..n {
            // SAFETY: (i, j) of the lower triangle is an entry of the stored one (caller
            // contract: valid host memory of the tile).
            b[(i, j)] = unsafe { stored(i, j).read() };
        }
    }
    let mut mem = workspace(cholesky_in_place_scratch::<T>(n, par, Default::default()))?;
    let r = cholesky_in_place(
        b.as_mut(),
        Default::default(),
        par,
        MemStack::new(&mut mem),
        Default::default(),
    );
    // Only the stored triangle goes back: faer may write the other one of its matrix.
    for j in 0..n {
        for i in j..n {
            // SAFETY: as above; the tile is writable and unshared (caller contract).
            unsafe { stored(i, j).write(b[(i, j)]) };
        }
    }
    Ok(match r {
        Ok(_) => 0,
        Err(LltError::NonPositivePivot { index }) => index as i64 + 1,
    })
}

/// # Safety
/// As [`HostLapack::getrf`].
unsafe fn getrf_typed<T>(op: &GetrfTile, par: Par) -> Result<i64>
where
    T: faer::traits::ComplexField + ComplexFloat,
    <T as ComplexFloat>::Real: Float,
{
    let (m, n, ld) = (op.a.rows, op.a.cols, op.a.ld);
    let k = m.min(n);
    if k == 0 {
        return Ok(0);
    }
    let at = |i: usize, j: usize| (op.a.addr as *mut T).wrapping_add(i + j * ld);
    // The panel as it came, for the exactly singular case.
    let mut saved = Vec::with_capacity(m * n);
    for j in 0..n {
        // SAFETY: column j lies inside the tile (caller contract).
        saved.extend_from_slice(unsafe { std::slice::from_raw_parts(at(0, j), m) });
    }
    let mut perm = vec![0usize; m];
    let mut perm_inv = vec![0usize; m];
    {
        // SAFETY: forwarded caller contract.
        let a = unsafe { view::<T>(op.a.addr, m, n, ld) };
        let mut mem = workspace(lu_in_place_scratch::<usize, T>(
            m,
            n,
            par,
            Default::default(),
        ))?;
        lu_in_place(
            a,
            &mut perm,
            &mut perm_inv,
            par,
            MemStack::new(&mut mem),
            Default::default(),
        );
    }
    let regular = (0..k).all(|j| {
        // SAFETY: diagonal entries lie inside the tile.
        let d = unsafe { at(j, j).read() };
        d != T::zero() && ComplexFloat::is_finite(d)
    });
    // SAFETY: ipiv holds k i32s (checked length; caller contract), outside the tile.
    let ipiv = unsafe { std::slice::from_raw_parts_mut(op.ipiv.addr as *mut i32, k) };
    if regular {
        interchanges(&perm, ipiv);
        return Ok(0);
    }
    for (j, col) in saved.chunks_exact(m).enumerate() {
        // SAFETY: column j lies inside the tile; `saved` is a separate allocation.
        unsafe { std::ptr::copy_nonoverlapping(col.as_ptr(), at(0, j), m) };
    }
    // SAFETY: forwarded caller contract.
    Ok(unsafe { getf2::<T>(op.a.addr as *mut T, m, n, ld, ipiv) })
}

/// LAPACK's `ipiv` (1-based interchanges, `ipiv.len()` of them) that builds the row
/// permutation `perm` (row `perm[i]` of the input ends in position `i`).
fn interchanges(perm: &[usize], ipiv: &mut [i32]) {
    let m = perm.len();
    // Where each input row is now, and which input row each position holds.
    let mut position: Vec<usize> = (0..m).collect();
    let mut row_at: Vec<usize> = (0..m).collect();
    for (k, piv) in ipiv.iter_mut().enumerate() {
        let p = position[perm[k]];
        *piv = (p + 1) as i32;
        let moved = row_at[k];
        row_at.swap(k, p);
        position[moved] = p;
        position[perm[k]] = k;
    }
}

/// LAPACK's unblocked LU with partial pivoting (`?getf2`, as `?getrf2` decides each column):
/// the first largest `|re| + |im|` pivots; a zero pivot leaves its column unscaled and sets
/// `info` to the first such column. Returns `info`.
///
/// # Safety
/// `a` is valid, writable memory of an `m x n` matrix with leading dimension `ld`; `ipiv`
/// holds `min(m, n)` entries outside it.
unsafe fn getf2<T>(a: *mut T, m: usize, n: usize, ld: usize, ipiv: &mut [i32]) -> i64
where
    T: ComplexFloat,
    T::Real: Float,
{
    let at = |i: usize, j: usize| a.wrapping_add(i + j * ld);
    // SAFETY: every (i, j) read below is inside the m x n matrix (caller contract).
    let get = |i: usize, j: usize| unsafe { at(i, j).read() };
    // SAFETY: as above, for the writes; the matrix is writable and unshared.
    let set = |i: usize, j: usize, v: T| unsafe { at(i, j).write(v) };
    let abs1 = |v: T| Float::abs(v.re()) + Float::abs(v.im());
    let sfmin = <T::Real as Float>::min_positive_value();
    let mut info = 0;
    for (j, piv) in ipiv.iter_mut().enumerate().take(m.min(n)) {
        let (mut p, mut max) = (j, abs1(get(j, j)));
        for i in j + 1..m {
            let v = abs1(get(i, j));
            if v > max {
                (p, max) = (i, v);
            }
        }
        *piv = (p + 1) as i32;
        let pivot = get(p, j);
        if pivot != T::zero() {
            if p != j {
                for c in 0..n {
                    let (x, y) = (get(j, c), get(p, c));
                    set(j, c, y);
                    set(p, c, x);
                }
            }
            if pivot.abs() >= sfmin {
                let r = pivot.recip();
                (j + 1..m).for_each(|i| set(i, j, get(i, j) * r));
            } else {
                (j + 1..m).for_each(|i| set(i, j, get(i, j) / pivot));
            }
        } else if info == 0 {
            info = j as i64 + 1;
        }
        for c in j + 1..n {
            let u = get(j, c);
            if u != T::zero() {
                (j + 1..m).for_each(|i| set(i, c, get(i, c) - get(i, j) * u));
            }
        }
    }
    info
}

/// # Safety
/// As [`HostLapack::laswp`], the pivots checked.
unsafe fn laswp_typed<T: Copy>(op: &LaswpTile) {
    if !op.has_work() {
        return;
    }
    // SAFETY: the pivots lie in host memory (caller contract), k2 <= len (checked).
    let ipiv = unsafe { std::slice::from_raw_parts(op.ipiv.addr as *const i32, op.k2) };
    for c in 0..op.a.cols {
        let col = (op.a.addr as *mut T).wrapping_add(c * op.a.ld);
        for i in op.k1..=op.k2 {
            let p = ipiv[i - 1] as usize;
            if p != i {
                // SAFETY: rows i and p are rows of the tile (checked pivots, k2 <= rows).
                unsafe { std::ptr::swap(col.add(i - 1), col.add(p - 1)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies LAPACK interchanges to 0..m and returns the resulting order.
    fn apply(ipiv: &[i32], m: usize) -> Vec<usize> {
        let mut rows: Vec<usize> = (0..m).collect();
        for (k, &p) in ipiv.iter().enumerate() {
            rows.swap(k, p as usize - 1);
        }
        rows
    }

    #[test]
    fn interchanges_rebuild_the_permutation() {
        for ipiv in [
            vec![3, 2, 3, 4, 5],
            vec![5, 5, 5, 5, 5],
            vec![1, 2, 3, 4, 5],
            vec![2, 4, 3, 5, 5],
        ] {
            let m = ipiv.len();
            let perm = apply(&ipiv, m);
            let mut got = vec![0; m];
            interchanges(&perm, &mut got);
            assert_eq!(got, ipiv);
        }
        // A tall panel: fewer interchanges than rows.
        let ipiv = vec![7, 3];
        let perm = apply(&ipiv, 8);
        let mut got = vec![0; 2];
        interchanges(&perm, &mut got);
        assert_eq!(got, ipiv);
    }

    #[test]
    fn getf2_reports_the_first_zero_pivot_and_leaves_its_column() {
        // Column 1 is twice column 0: after one step its subcolumn is exactly zero.
        let (m, n) = (3, 3);
        let mut a = vec![2.0f64, 1.0, 4.0, 4.0, 2.0, 8.0, 1.0, 5.0, 3.0];
        let mut ipiv = vec![0; 3];
        // SAFETY: a is 3x3 with ld 3; ipiv has 3 entries.
        let info = unsafe { getf2(a.as_mut_ptr(), m, n, m, &mut ipiv) };
        assert_eq!(info, 2);
        assert_eq!(ipiv, vec![3, 2, 3]);
        assert!(a.iter().all(|x| x.is_finite()), "{a:?}");
    }
}
