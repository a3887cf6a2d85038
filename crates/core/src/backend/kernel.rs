//! The Kernel trait: the tile kernels a device runs on its own memory, asynchronously on one of
//! its queues. Routines beyond GEMM have default bodies answering `Unsupported`. The
//! factorization ops are `unsafe fn`s: only the caller can vouch for their raw addresses.

use crate::error::{Error, Result};
use crate::factor_kernel::{FactorOp, GetrfTile, InfoCell, LaswpTile, PotrfTile};
use crate::memory::RawTile;
use crate::operand::Trans;
use crate::problem::triangular::{Side, TriOptions};
use crate::queue::Queue;
use crate::scalar::{DType, ScalarValue};
use crate::sym_kernel::SymTile;
use std::sync::Arc;

/// One tile GEMM: `c = alpha * op(a) * op(b) + beta * c`, with `op(a)` `m x k`, `op(b)` `k x n`
/// (`Trans::C` only for complex dtypes). With `beta == 0`, `c` is never read (it may hold NaN).
#[derive(Debug, Clone, Copy)]
pub struct GemmTile {
    pub transa: Trans,
    pub transb: Trans,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: ScalarValue,
    pub a: RawTile,
    pub b: RawTile,
    pub beta: ScalarValue,
    pub c: RawTile,
}

impl GemmTile {
    pub fn dtype(&self) -> DType {
        self.c.dtype
    }

    /// Checks shapes, dtypes and leading dimensions; backends call it before their FFI so a
    /// bad tile is an error, never a crash or a silent out-of-bounds access.
    pub fn check(&self) -> Result<()> {
        let dt = self.c.dtype;
        let bad = |what: String| Error::internal(format!("bad gemm tile: {what}"));
        if self.a.dtype != dt
            || self.b.dtype != dt
            || self.alpha.dtype() != dt
            || self.beta.dtype() != dt
        {
            return Err(bad("mixed dtypes".into()));
        }
        let a_shape = self.transa.stored_shape(self.m, self.k);
        let b_shape = self.transb.stored_shape(self.k, self.n);
        check_tile("a", &self.a, a_shape, self.m * self.k > 0).map_err(bad)?;
        check_tile("b", &self.b, b_shape, self.k * self.n > 0).map_err(bad)?;
        check_tile("c", &self.c, (self.m, self.n), true).map_err(bad)
    }
}

/// Checks that tile `name` is `rows x cols` where `sized` (an operand of an empty product may
/// have any shape), with `ld >= max(1, rows)`; the error says what is wrong.
pub(crate) fn check_tile(
    name: &str,
    t: &RawTile,
    (rows, cols): (usize, usize),
    sized: bool,
) -> std::result::Result<(), String> {
    if sized && (t.rows, t.cols) != (rows, cols) {
        return Err(format!(
            "{name} is {}x{}, expected {rows}x{cols}",
            t.rows, t.cols
        ));
    }
    if t.ld < t.rows.max(1) {
        return Err(format!("{name} ld {} < rows {}", t.ld, t.rows));
    }
    Ok(())
}

/// One tile TRSM (`b := alpha * op(a)^-1 * b`, or `b * op(a)^-1` on the right) or TRMM
/// (`alpha * op(a) * b`, `b * op(a)`) on the `m x n` `b` in place; only `a`'s `uplo` triangle is
/// read (not its diagonal when unit). `opts.transa` is `C` only for complex dtypes.
#[derive(Debug, Clone, Copy)]
pub struct TriTile {
    pub opts: TriOptions,
    pub m: usize,
    pub n: usize,
    pub alpha: ScalarValue,
    pub a: RawTile,
    pub b: RawTile,
}

impl TriTile {
    pub fn dtype(&self) -> DType {
        self.b.dtype
    }

    pub fn a_order(&self) -> usize {
        match self.opts.side {
            Side::Left => self.m,
            Side::Right => self.n,
        }
    }

    /// Checks shapes, dtypes and leading dimensions (backends call it before their FFI).
    pub fn check(&self) -> Result<()> {
        let bad = |what: String| Error::internal(format!("bad triangular tile: {what}"));
        let dt = self.b.dtype;
        if self.a.dtype != dt || self.alpha.dtype() != dt {
            return Err(bad("mixed dtypes".into()));
        }
        if self.a.space != self.b.space {
            return Err(bad("a and b in different memory spaces".into()));
        }
        let k = self.a_order();
        check_tile("a", &self.a, (k, k), self.m * self.n > 0).map_err(bad)?;
        check_tile("b", &self.b, (self.m, self.n), true).map_err(bad)
    }

    /// [`TriTile::check`], then whether there is work (`Ok(false)`: an empty tile);
    /// `Unsupported` (naming `device`) beyond the 32-bit dimensions cuBLAS, hipBLAS and CBLAS take.
    pub fn check_i32(&self, device: &str) -> Result<bool> {
        self.check()?;
        let dims = [self.m, self.n, self.a.ld, self.b.ld];
        fit_i32(self.m == 0 || self.n == 0, dims, device, "triangular tile")
    }
}

/// Tile kernels of one device.
pub trait Kernel: Send + Sync {
    /// Whether `gemm` accepts this dtype.
    fn supports(&self, dtype: DType) -> bool;
    /// Issues the tile GEMM on `queue` (one of the device's compute queues).
    fn gemm(&self, queue: &Arc<dyn Queue>, op: &GemmTile) -> Result<()>;
    /// Whether `add` is implemented (the planner then lets C arrive after the first products).
    fn supports_add(&self) -> bool {
        false
    }
    /// `y += beta * x` for two tiles of the same shape in the device's memory, on `queue`.
    fn add(
        &self,
        _queue: &Arc<dyn Queue>,
        _beta: ScalarValue,
        _x: &RawTile,
        _y: &RawTile,
    ) -> Result<()> {
        unsupported("add")
    }

    // Triangular routines

    /// Whether `trsm` and `trmm` accept this dtype.
    fn supports_tri(&self, _dtype: DType) -> bool {
        false
    }
    /// Issues the tile TRSM on `queue`: `op.b` is overwritten by the solution.
    fn trsm(&self, _queue: &Arc<dyn Queue>, _op: &TriTile) -> Result<()> {
        unsupported("trsm")
    }
    /// Issues the tile TRMM on `queue`: `op.b` is overwritten by the product.
    fn trmm(&self, _queue: &Arc<dyn Queue>, _op: &TriTile) -> Result<()> {
        unsupported("trmm")
    }

    // Symmetric and Hermitian routines
    /// Whether `sym` accepts this dtype (every routine BLAS defines for it).
    fn supports_sym(&self, _dtype: DType) -> bool {
        false
    }
    /// Issues one diagonal tile of SYRK/HERK/SYR2K/HER2K, or one SYMM/HEMM tile, on `queue`
    /// ([`SymTile`]). Off-diagonal tiles are GEMMs and never come here.
    fn sym(&self, _queue: &Arc<dyn Queue>, op: &SymTile) -> Result<()> {
        unsupported(op.op.name())
    }

    // Factorizations (LAPACK's tile ops)

    /// Whether `op` (`potrf`, `getrf` or `laswp`) accepts this dtype.
    fn supports_factor(&self, _op: FactorOp, _dtype: DType) -> bool {
        false
    }
    /// Issues the Cholesky factorization of `op.a` in place on `queue` ([`PotrfTile`]); `info`
    /// is filled when it has run. Errors: `Unsupported` where `supports_factor` says no,
    /// `Internal` for a tile failing its `check`, the backend's errors issuing it.
    ///
    /// # Safety
    /// - `op.a` lies in this device's memory space (`op.a.space` is the device's), and the
    ///   `(cols - 1) * ld + rows` elements from `op.a.addr` are allocated there, aligned for
    ///   the dtype, and hold initialised values;
    /// - that memory stays allocated, and nothing else (another queue, the host, another op)
    ///   reads or writes it, from this call until the op has completed on `queue` (the queue
    ///   synchronised, or an event recorded after the op completed).
    unsafe fn potrf(
        &self,
        _queue: &Arc<dyn Queue>,
        _op: &PotrfTile,
        _info: &Arc<InfoCell>,
    ) -> Result<()> {
        unsupported("potrf")
    }
    /// Issues the LU factorization of the panel `op.a` in place on `queue`, its pivots into
    /// `op.ipiv` ([`GetrfTile`]); `info` is filled when it has run. Errors as `potrf`'s.
    ///
    /// # Safety
    /// As [`potrf`](Kernel::potrf) for `op.a`; and `op.ipiv` lies in the same space, its
    /// `len` 4-byte integers are allocated there (aligned for `i32`), outside `op.a`, and are
    /// neither read nor written by anything else until the op has completed.
    unsafe fn getrf(
        &self,
        _queue: &Arc<dyn Queue>,
        _op: &GetrfTile,
        _info: &Arc<InfoCell>,
    ) -> Result<()> {
        unsupported("getrf")
    }
    /// Issues the row interchanges `op.k1 ..= op.k2` of `op.ipiv` on `op.a` in place on `queue`
    /// ([`LaswpTile`]). Errors as `potrf`'s.
    ///
    /// # Safety
    /// As [`potrf`](Kernel::potrf) for `op.a`; and when `k1 <= k2`, `op.ipiv` lies in the same
    /// space, its `len` 4-byte integers are allocated there (aligned for `i32`, outside
    /// `op.a`), nothing writes them until the op has completed, and when the op runs, each of
    /// the entries `k1 - 1 .. k2` holds a row number of `op.a` (`1 ..= rows`): no kernel
    /// reads the pivots at issue time (on a GPU they are still being computed), so none can
    /// check them.
    unsafe fn laswp(&self, _queue: &Arc<dyn Queue>, _op: &LaswpTile) -> Result<()> {
        unsupported("laswp")
    }
}

/// What a kernel op answers by default: the backend does not implement it.
fn unsupported(op: &str) -> Result<()> {
    Err(Error::Unsupported {
        device: "kernel".into(),
        detail: format!("tile {op}"),
    })
}

/// Checks an `add` request; backends call it before their FFI.
pub fn check_add(beta: ScalarValue, x: &RawTile, y: &RawTile) -> Result<()> {
    if x.rows != y.rows || x.cols != y.cols || x.dtype != y.dtype || beta.dtype() != x.dtype {
        return Err(Error::internal(format!(
            "bad add: {}x{} {} += {} * {}x{} {}",
            y.rows,
            y.cols,
            y.dtype,
            beta.dtype(),
            x.rows,
            x.cols,
            x.dtype
        )));
    }
    if x.ld < x.rows.max(1) || y.ld < y.rows.max(1) || x.space != y.space {
        return Err(Error::internal("bad add: leading dimensions or spaces"));
    }
    Ok(())
}

/// [`check_add`] for a library taking 32-bit dimensions (cuBLAS/hipBLAS geam): `Ok(false)` when
/// there is nothing to add, `Unsupported` (naming `device`) beyond 32 bits.
pub fn check_add_i32(beta: ScalarValue, x: &RawTile, y: &RawTile, device: &str) -> Result<bool> {
    check_add(beta, x, y)?;
    let dims = [x.rows, x.cols, x.ld, y.ld];
    fit_i32(x.is_empty(), dims, device, "tile add")
}

/// Whether there is work (`Ok(false)` when `empty`), or `Unsupported` (naming `device`) for a
/// dimension beyond the 32 bits the libraries take.
fn fit_i32(empty: bool, dims: [usize; 4], device: &str, what: &str) -> Result<bool> {
    if !empty && dims.iter().any(|&d| d > i32::MAX as usize) {
        return Err(Error::Unsupported {
            device: device.into(),
            detail: format!("{what} beyond 32-bit dimensions"),
        });
    }
    Ok(!empty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;

    fn tile(rows: usize, cols: usize, ld: usize) -> RawTile {
        RawTile {
            space: MemorySpace::HOST,
            addr: 0,
            rows,
            cols,
            ld,
            dtype: crate::scalar::DType::F64,
        }
    }

    #[test]
    fn add_for_32_bit_libraries() {
        let b = ScalarValue::F64(2.0);
        assert!(check_add_i32(b, &tile(4, 3, 4), &tile(4, 3, 8), "gpu").unwrap());
        assert!(!check_add_i32(b, &tile(0, 3, 1), &tile(0, 3, 1), "gpu").unwrap());
        assert!(matches!(
            check_add_i32(b, &tile(4, 3, 1 << 31), &tile(4, 3, 4), "gpu"),
            Err(Error::Unsupported { .. })
        ));
        assert!(check_add_i32(b, &tile(4, 3, 4), &tile(3, 3, 4), "gpu").is_err());
        assert!(
            check_add_i32(ScalarValue::F32(1.0), &tile(4, 3, 4), &tile(4, 3, 4), "gpu").is_err()
        );
    }
}
