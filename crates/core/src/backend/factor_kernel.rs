//! The tiles of the factorizations a device's kernel runs: Cholesky of a diagonal tile
//! ([`PotrfTile`]), LU with partial pivoting of a tall panel ([`GetrfTile`]) and the row
//! interchanges applying its pivots elsewhere ([`LaswpTile`]). Each follows LAPACK's routine of
//! the same name exactly on one tile, so a host LAPACK, cuSOLVER or rocSOLVER runs it as one call.
//!
//! LAPACK's `info` comes back through an [`InfoCell`] the kernel fills when the op has run; the
//! pivots through [`RawPivots`] in the memory space of the device that ran the op, copied over a
//! [`Link`](crate::link::Link) like any tile where needed elsewhere.

use crate::error::{Error, Result};
use crate::memory::{MemorySpace, RawTile};
use crate::problem::blas_flags::Uplo;
use crate::scalar::DType;
use std::sync::atomic::{AtomicI64, Ordering};

/// The factorization ops a kernel may support (see [`crate::Kernel::supports_factor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FactorOp {
    Potrf,
    Getrf,
    Laswp,
}

impl FactorOp {
    pub const ALL: [FactorOp; 3] = [FactorOp::Potrf, FactorOp::Getrf, FactorOp::Laswp];

    /// LAPACK's name without the type letter ("potrf").
    pub fn name(self) -> &'static str {
        ["potrf", "getrf", "laswp"][self as usize]
    }
}

/// LAPACK's `info` of one factorization op. It starts pending (`get` is `None`); the kernel
/// [`set`](InfoCell::set)s it once, before the op's queue reports the op complete. After that
/// synchronisation returned `Ok`, `get` is `Some(info)`: 0, or `k > 0` relative to the tile as
/// LAPACK defines it (bad arguments never reach a kernel). After a queue error it may stay
/// pending. One cell serves one op at a time; [`reset`](InfoCell::reset) it before reusing it.
#[derive(Debug)]
pub struct InfoCell(AtomicI64);

/// The pending state (no `info` can take this value).
const PENDING: i64 = i64::MIN;

impl Default for InfoCell {
    fn default() -> Self {
        InfoCell(AtomicI64::new(PENDING))
    }
}

impl InfoCell {
    /// A pending cell.
    pub fn new() -> std::sync::Arc<InfoCell> {
        std::sync::Arc::default()
    }

    /// Fills the cell (the kernel, when the op has run).
    pub fn set(&self, info: i64) {
        debug_assert!(info != PENDING);
        // Release: whoever sees the value also sees what the op wrote before it.
        self.0.store(info, Ordering::Release);
    }

    /// `info`, once the op has run; `None` while pending.
    pub fn get(&self) -> Option<i64> {
        Some(self.0.load(Ordering::Acquire)).filter(|&v| v != PENDING)
    }

    /// Makes the cell pending again, for another op.
    pub fn reset(&self) {
        self.0.store(PENDING, Ordering::Release);
    }
}

/// `len` pivot indices at `addr` in `space`: LAPACK integers (`i32`, as LP64 LAPACK, cuSOLVER
/// and rocSOLVER take them), 1-based, relative to the tile's first row (`ipiv[i] = p`: row
/// `i + 1` was interchanged with row `p`), in the memory of the device whose kernel uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPivots {
    pub space: MemorySpace,
    pub addr: u64,
    pub len: usize,
}

impl RawPivots {
    /// Bytes of one pivot (a LAPACK `int`).
    pub const ELEMENT_BYTES: usize = 4;

    pub fn bytes(&self) -> usize {
        self.len * Self::ELEMENT_BYTES
    }

    /// The array as a contiguous `len x 1` tile for a [`Link::copy`](crate::link::Link::copy),
    /// `F32` standing for any 4-byte element. Never hand it to a numeric kernel.
    pub fn as_tile(&self) -> RawTile {
        RawTile {
            space: self.space,
            addr: self.addr,
            rows: self.len,
            cols: 1,
            ld: self.len.max(1),
            dtype: DType::F32,
        }
    }

    /// The pivots `[from, from + len)` of this array.
    pub fn sub(&self, from: usize, len: usize) -> RawPivots {
        debug_assert!(from + len <= self.len);
        RawPivots {
            addr: self.addr + (from * Self::ELEMENT_BYTES) as u64,
            len,
            ..*self
        }
    }
}

fn bad(op: FactorOp, what: impl std::fmt::Display) -> Error {
    Error::internal(format!("bad {} tile: {what}", op.name()))
}

fn check_tile(op: FactorOp, name: &str, t: &RawTile) -> Result<()> {
    if t.ld < t.rows.max(1) {
        return Err(bad(op, format!("{name} ld {} < rows {}", t.ld, t.rows)));
    }
    Ok(())
}

/// Whether `[a, a + a_len)` and `[b, b + b_len)` overlap (empty ranges overlap nothing).
fn overlaps(a: u64, a_len: usize, b: u64, b_len: usize) -> bool {
    a_len > 0 && b_len > 0 && a < b + b_len as u64 && b < a + a_len as u64
}

/// Cholesky factorization of one Hermitian (symmetric) positive definite tile in place, as
/// `?potrf`: only the `uplo` triangle of `a` (`n x n`) is read and written. `info = k > 0`: the
/// leading minor of order `k` is not positive definite (pivot not positive, or NaN); the
/// triangle then holds partial results, which may differ between backends.
#[derive(Debug, Clone, Copy)]
pub struct PotrfTile {
    pub uplo: Uplo,
    pub a: RawTile,
}

impl PotrfTile {
    pub fn dtype(&self) -> DType {
        self.a.dtype
    }

    pub fn n(&self) -> usize {
        self.a.rows
    }

    /// Checks the shape and leading dimension (backends call it before their FFI).
    pub fn check(&self) -> Result<()> {
        if self.a.rows != self.a.cols {
            return Err(bad(
                FactorOp::Potrf,
                format!("a is {}x{}, not square", self.a.rows, self.a.cols),
            ));
        }
        check_tile(FactorOp::Potrf, "a", &self.a)
    }

    /// Real flops: `n^3 / 6` multiply-adds (LAPACK's leading term).
    pub fn flops(&self) -> f64 {
        let n = self.n() as f64;
        self.dtype().flops_per_fma() * n * n * n / 6.0
    }
}

/// LAPACK's `info` for a Cholesky factor whose library did not stop at a NaN pivot (OpenBLAS
/// tests only for non-positive ones): the first of `n` diagonal entries (`stride` elements
/// apart from `addr`, host memory) that is NaN, 1-based, or `None`. Columns before a NaN pivot
/// do not depend on it, so the first NaN on the diagonal is the column LAPACK names.
///
/// # Safety
/// The `n` entries (at `addr + i * stride` elements of `dtype`) are valid host memory.
pub unsafe fn first_nan_pivot(addr: u64, stride: usize, n: usize, dtype: DType) -> Option<i64> {
    let real = dtype.real();
    // A complex entry is NaN when either part is: look at both.
    let parts = dtype.size() / real.size();
    (0..n).find_map(|i| {
        let nan = (0..parts).any(|p| {
            let at = addr as usize + (i * stride * parts + p) * real.size();
            // SAFETY: the entry lies in valid host memory (caller contract); reads are
            // unaligned-tolerant.
            unsafe {
                match real {
                    DType::F32 => (at as *const f32).read_unaligned().is_nan(),
                    _ => (at as *const f64).read_unaligned().is_nan(),
                }
            }
        });
        nan.then_some(i as i64 + 1)
    })
}

/// LU factorization with partial pivoting of one `m x n` panel in place, as `?getrf`
/// (`A = P L U`), its `min(m, n)` pivots into `ipiv`. Each column's pivot is the first entry of
/// largest `|re| + |im|` on or below the diagonal, as LAPACK's `i?amax` picks it. `info = k > 0`:
/// `U(k, k)` is exactly zero (the factorization is completed, as LAPACK does).
#[derive(Debug, Clone, Copy)]
pub struct GetrfTile {
    pub a: RawTile,
    pub ipiv: RawPivots,
}

impl GetrfTile {
    pub fn dtype(&self) -> DType {
        self.a.dtype
    }

    /// Checks the shape, leading dimension and pivot array (backends call it before their FFI).
    pub fn check(&self) -> Result<()> {
        let op = FactorOp::Getrf;
        check_tile(op, "a", &self.a)?;
        let k = self.a.rows.min(self.a.cols);
        if self.ipiv.len != k {
            return Err(bad(
                op,
                format!(
                    "{} pivots for a {}x{} panel",
                    self.ipiv.len, self.a.rows, self.a.cols
                ),
            ));
        }
        if self.ipiv.space != self.a.space {
            return Err(bad(op, "pivots and panel in different memory spaces"));
        }
        if overlaps(
            self.a.addr,
            self.a.extent_bytes(),
            self.ipiv.addr,
            self.ipiv.bytes(),
        ) {
            return Err(bad(op, "pivots overlap the panel"));
        }
        Ok(())
    }

    /// Real flops: `m n^2 / 2 - n^3 / 6` multiply-adds for `m >= n` (LAPACK's leading terms;
    /// swapped for a wide panel).
    pub fn flops(&self) -> f64 {
        let (m, n) = (self.a.rows as f64, self.a.cols as f64);
        let (m, n) = if m >= n { (m, n) } else { (n, m) };
        self.dtype().flops_per_fma() * (m * n * n / 2.0 - n * n * n / 6.0)
    }
}

/// Row interchanges on one tile in place, as `?laswp` with `incx = 1`: for `i = k1, ..., k2` in
/// order, row `i` of `a` is interchanged with row `ipiv[i - 1]` (1-based). Each pivot read must
/// name a row of `a`, unchecked (see [`crate::Kernel::laswp`]). `k1 > k2` interchanges nothing.
#[derive(Debug, Clone, Copy)]
pub struct LaswpTile {
    pub a: RawTile,
    pub k1: usize,
    pub k2: usize,
    pub ipiv: RawPivots,
}

impl LaswpTile {
    pub fn dtype(&self) -> DType {
        self.a.dtype
    }

    /// Whether any row moves (`k1 <= k2` and `a` has columns).
    pub fn has_work(&self) -> bool {
        self.k1 <= self.k2 && self.a.cols > 0
    }

    /// Checks the range, leading dimension and pivot array (backends call it before their FFI).
    pub fn check(&self) -> Result<()> {
        let op = FactorOp::Laswp;
        check_tile(op, "a", &self.a)?;
        if self.k1 == 0 {
            return Err(bad(op, "k1 = 0 (pivots are 1-based)"));
        }
        if self.k1 <= self.k2 {
            if self.k2 > self.ipiv.len {
                return Err(bad(
                    op,
                    format!("k2 = {} beyond {} pivots", self.k2, self.ipiv.len),
                ));
            }
            if self.k2 > self.a.rows {
                return Err(bad(
                    op,
                    format!("k2 = {} beyond the tile's {} rows", self.k2, self.a.rows),
                ));
            }
            if self.ipiv.space != self.a.space {
                return Err(bad(op, "pivots and tile in different memory spaces"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(addr: u64, rows: usize, cols: usize, ld: usize) -> RawTile {
        RawTile {
            space: MemorySpace::HOST,
            addr,
            rows,
            cols,
            ld,
            dtype: DType::F64,
        }
    }

    fn pivots(addr: u64, len: usize) -> RawPivots {
        RawPivots {
            space: MemorySpace::HOST,
            addr,
            len,
        }
    }

    #[test]
    fn info_cell_is_pending_until_set() {
        let c = InfoCell::new();
        assert_eq!(c.get(), None);
        c.set(0);
        assert_eq!(c.get(), Some(0));
        c.set(7);
        assert_eq!(c.get(), Some(7));
        c.reset();
        assert_eq!(c.get(), None);
    }

    #[test]
    fn potrf_checks() {
        let ok = PotrfTile {
            uplo: Uplo::Lower,
            a: tile(0, 5, 5, 7),
        };
        ok.check().unwrap();
        assert!(PotrfTile {
            a: tile(0, 5, 4, 7),
            ..ok
        }
        .check()
        .is_err());
        assert!(PotrfTile {
            a: tile(0, 5, 5, 4),
            ..ok
        }
        .check()
        .is_err());
        PotrfTile {
            a: tile(0, 0, 0, 1),
            ..ok
        }
        .check()
        .unwrap();
        assert_eq!(ok.flops(), 125.0 / 3.0);
    }

    #[test]
    fn getrf_checks() {
        let ok = GetrfTile {
            a: tile(0, 9, 4, 10),
            ipiv: pivots(4096, 4),
        };
        ok.check().unwrap();
        // Square: 2 n^3 / 3.
        let sq = GetrfTile {
            a: tile(0, 6, 6, 6),
            ipiv: pivots(4096, 6),
        };
        assert!((sq.flops() - 2.0 * 216.0 / 3.0).abs() < 1e-9);
        // Wide panels pivot min(m, n) rows.
        GetrfTile {
            a: tile(0, 3, 6, 3),
            ipiv: pivots(4096, 3),
        }
        .check()
        .unwrap();
        for bad in [
            GetrfTile {
                ipiv: pivots(4096, 3),
                ..ok
            },
            GetrfTile {
                a: tile(0, 9, 4, 8),
                ..ok
            },
            // The pivots inside the panel's extent.
            GetrfTile {
                ipiv: pivots(8, 4),
                ..ok
            },
            GetrfTile {
                ipiv: RawPivots {
                    space: MemorySpace(9),
                    ..ok.ipiv
                },
                ..ok
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
        GetrfTile {
            a: tile(0, 0, 4, 1),
            ipiv: pivots(4096, 0),
        }
        .check()
        .unwrap();
    }

    #[test]
    fn laswp_checks() {
        let ok = LaswpTile {
            a: tile(0, 8, 3, 8),
            k1: 1,
            k2: 4,
            ipiv: pivots(4096, 4),
        };
        ok.check().unwrap();
        assert!(ok.has_work());
        // An empty range needs no pivots at all.
        let none = LaswpTile {
            k1: 5,
            k2: 4,
            ipiv: pivots(0, 0),
            ..ok
        };
        none.check().unwrap();
        assert!(!none.has_work());
        for bad in [
            LaswpTile { k1: 0, ..ok },
            LaswpTile { k2: 5, ..ok },
            LaswpTile {
                a: tile(0, 3, 3, 3),
                ..ok
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn nan_pivots_are_found_on_the_diagonal() {
        // A 3x3 f64 matrix (ld 3): NaN off the diagonal does not count; the (2, 2) one does.
        let a = [1.0, f64::NAN, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, f64::NAN];
        let diagonal = |n| {
            // SAFETY: n <= 3 diagonal entries, 4 elements apart, inside `a`.
            unsafe { first_nan_pivot(a.as_ptr() as u64, 4, n, DType::F64) }
        };
        assert_eq!(diagonal(3), Some(3));
        assert_eq!(diagonal(2), None);
        // Complex: a NaN imaginary part counts.
        let z = [1.0f32, 0.0, 2.0, f32::NAN];
        // SAFETY: two contiguous c32 entries.
        let found = unsafe { first_nan_pivot(z.as_ptr() as u64, 1, 2, DType::C32) };
        assert_eq!(found, Some(2));
    }

    #[test]
    fn pivots_as_a_tile() {
        let p = pivots(64, 5);
        let t = p.as_tile();
        assert_eq!((t.rows, t.cols, t.ld, t.bytes()), (5, 1, 5, p.bytes()));
        assert_eq!(p.sub(2, 3).addr, 72);
        assert_eq!(pivots(0, 0).as_tile().ld, 1);
    }
}
