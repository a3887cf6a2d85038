//! The tile kernels of a GPU device, over the runtime's BLAS. A kernel runs on one of the
//! device's own compute streams, found by identity among its typed streams: no run-time type
//! test, and a queue of another device is an error, not a crash.
//!
//! Adding a routine: one method on [`GpuRuntime`] (the vendor's BLAS call) and one wrapper
//! here that checks the tile, finds the stream and issues it. The factorization tiles go
//! through the stream's solver state (`factor.rs`: handle, workspace, `info`).

use crate::device::GpuDevice;
use crate::runtime::GpuRuntime;
use crate::stream::GpuStream;
use hetblas_core::fault::FaultOp;
use hetblas_core::kernel::check_add_i32;
use hetblas_core::problem::TriRoutine;
use hetblas_core::queue::own_queue;
use hetblas_core::{
    DType, Error, FactorOp, GemmTile, GetrfTile, InfoCell, Kernel, LaswpTile, PotrfTile, Queue,
    RawTile, Result, ScalarValue, SymTile, TriTile,
};
use std::sync::Arc;

impl<A: GpuRuntime> GpuDevice<A> {
    /// The compute stream behind `queue` (one of the device's compute queues).
    fn compute_stream(&self, queue: &Arc<dyn Queue>) -> Result<&GpuStream<A>> {
        own_queue(&self.streams, queue).ok_or_else(|| self.not_its_queue(queue))
    }

    /// The index of `queue` among the device's compute streams.
    pub(crate) fn compute_index(&self, queue: &Arc<dyn Queue>) -> Result<usize> {
        self.streams
            .iter()
            .position(|s| std::ptr::addr_eq(Arc::as_ptr(s), Arc::as_ptr(queue)))
            .ok_or_else(|| self.not_its_queue(queue))
    }

    fn not_its_queue(&self, queue: &Arc<dyn Queue>) -> Error {
        Error::Unsupported {
            device: self.info.label(),
            detail: format!("queue {} is not one of its compute streams", queue.name()),
        }
    }

    /// `Unsupported` unless the runtime's solver has `op` in `dtype`.
    fn check_factor(&self, op: FactorOp, dtype: DType) -> Result<()> {
        if self.supports_factor(op, dtype) {
            return Ok(());
        }
        Err(Error::Unsupported {
            device: self.info.label(),
            detail: format!("{}{} tiles", dtype.blas_prefix(), op.name()),
        })
    }

    /// `Unsupported` (naming the op) when a dimension exceeds the solvers' 32-bit `int`.
    fn check_32_bits(&self, op: FactorOp, dims: &[usize]) -> Result<()> {
        if dims.iter().all(|&d| d <= i32::MAX as usize) {
            return Ok(());
        }
        Err(Error::Unsupported {
            device: self.info.label(),
            detail: format!("a {} tile beyond 32-bit dimensions", op.name()),
        })
    }

    /// Runs `call` with the BLAS handle of `queue`'s stream, locked.
    fn with_blas(
        &self,
        queue: &Arc<dyn Queue>,
        call: impl FnOnce(A::Blas) -> Result<()>,
    ) -> Result<()> {
        let stream = self.compute_stream(queue)?;
        let blas = stream
            .blas
            .as_ref()
            .ok_or_else(|| Error::internal("compute stream without a BLAS handle"))?;
        let h = blas.lock().unwrap_or_else(|p| p.into_inner());
        A::bind(stream.context())?;
        call(h.raw)
    }
}

impl<A: GpuRuntime> Kernel for GpuDevice<A> {
    fn supports(&self, dtype: DType) -> bool {
        matches!(dtype, DType::F32 | DType::F64 | DType::C32 | DType::C64)
            && A::supports_dtype(dtype)
    }

    fn gemm(&self, queue: &Arc<dyn Queue>, op: &GemmTile) -> Result<()> {
        op.check()?;
        if !self.supports(op.dtype()) {
            return Err(Error::Unsupported {
                device: self.info.label(),
                detail: format!("gemm in {}", op.dtype()),
            });
        }
        if op.m == 0 || op.n == 0 {
            return Ok(());
        }
        self.faults.check(FaultOp::Kernel)?;
        // SAFETY: checked tiles of device memory the executor keeps alive until the stream is
        // synchronised.
        self.with_blas(queue, |h| unsafe { A::gemm(h, op) })
    }

    fn supports_add(&self) -> bool {
        A::supports_add()
    }

    fn add(
        &self,
        queue: &Arc<dyn Queue>,
        beta: ScalarValue,
        x: &RawTile,
        y: &RawTile,
    ) -> Result<()> {
        if !check_add_i32(beta, x, y, A::NAME)? {
            return Ok(());
        }
        self.faults.check(FaultOp::Kernel)?;
        // SAFETY: as for gemm; check_add_i32 matched the shapes and 32-bit dimensions.
        self.with_blas(queue, |h| unsafe { A::add(h, beta, x, y) })
    }

    // Triangular routines

    fn supports_tri(&self, dtype: DType) -> bool {
        self.supports(dtype) && A::supports_tri(dtype)
    }

    fn trsm(&self, queue: &Arc<dyn Queue>, op: &TriTile) -> Result<()> {
        self.tri(queue, TriRoutine::Trsm, op)
    }

    fn trmm(&self, queue: &Arc<dyn Queue>, op: &TriTile) -> Result<()> {
        self.tri(queue, TriRoutine::Trmm, op)
    }

    // Symmetric and Hermitian routines

    fn supports_sym(&self, dtype: DType) -> bool {
        self.supports(dtype) && A::supports_sym(dtype)
    }

    fn sym(&self, queue: &Arc<dyn Queue>, op: &SymTile) -> Result<()> {
        op.check()?;
        if !self.supports_sym(op.dtype()) {
            return Err(Error::Unsupported {
                device: self.info.label(),
                detail: format!("{}{} tiles", op.dtype().blas_prefix(), op.op.name()),
            });
        }
        if op.m == 0 || op.n == 0 {
            return Ok(());
        }
        if [op.m, op.n, op.k, op.a.ld, op.b.ld, op.c.ld]
            .iter()
            .any(|&d| d > i32::MAX as usize)
        {
            return Err(Error::Unsupported {
                device: self.info.label(),
                detail: format!("a {} tile beyond 32-bit dimensions", op.op.name()),
            });
        }
        self.faults.check(FaultOp::Kernel)?;
        // SAFETY: a checked tile of device memory, dimensions within 32 bits, that the caller
        // keeps alive until the stream is synchronised.
        self.with_blas(queue, |h| unsafe { A::sym(h, op) })
    }

    // Factorizations: the runtime's solver library, through `factor.rs`.

    fn supports_factor(&self, op: FactorOp, dtype: DType) -> bool {
        self.supports(dtype) && A::supports_factor(op, dtype)
    }

    unsafe fn potrf(
        &self,
        queue: &Arc<dyn Queue>,
        op: &PotrfTile,
        info: &Arc<InfoCell>,
    ) -> Result<()> {
        op.check()?;
        self.check_factor(FactorOp::Potrf, op.dtype())?;
        self.compute_index(queue)?;
        if op.n() == 0 {
            info.set(0);
            return Ok(());
        }
        self.check_32_bits(FactorOp::Potrf, &[op.n(), op.a.ld])?;
        let diagonal = crate::factor::Diagonal {
            addr: op.a.addr,
            pitch: (op.a.ld + 1) * op.dtype().size(),
            n: op.n(),
            dtype: op.dtype(),
        };
        self.issue_with_info(
            queue,
            info,
            Some(diagonal),
            // SAFETY: a live handle; a checked, non-empty tile within 32 bits.
            |h| unsafe { A::potrf_workspace(h, op) },
            // SAFETY: the caller's contract (Kernel::potrf): the tile is this device's memory,
            // alive and unshared until the stream has run the op; workspace and info slot are
            // the stream's own.
            |h, work, dev_info| unsafe { A::potrf(h, op, work, dev_info) },
        )
    }

    unsafe fn getrf(
        &self,
        queue: &Arc<dyn Queue>,
        op: &GetrfTile,
        info: &Arc<InfoCell>,
    ) -> Result<()> {
        op.check()?;
        self.check_factor(FactorOp::Getrf, op.dtype())?;
        self.compute_index(queue)?;
        if op.ipiv.len == 0 {
            info.set(0);
            return Ok(());
        }
        self.check_32_bits(FactorOp::Getrf, &[op.a.rows, op.a.cols, op.a.ld])?;
        self.issue_with_info(
            queue,
            info,
            None,
            // SAFETY: a live handle; a checked, non-empty panel within 32 bits.
            |h| unsafe { A::getrf_workspace(h, op) },
            // SAFETY: the caller's contract (Kernel::getrf): panel and pivots are this device's
            // memory, apart, alive and unshared until the stream has run the op.
            |h, work, dev_info| unsafe { A::getrf(h, op, work, dev_info) },
        )
    }

    unsafe fn laswp(&self, queue: &Arc<dyn Queue>, op: &LaswpTile) -> Result<()> {
        op.check()?;
        self.check_factor(FactorOp::Laswp, op.dtype())?;
        self.compute_index(queue)?;
        if !op.has_work() {
            return Ok(());
        }
        self.check_32_bits(FactorOp::Laswp, &[op.a.rows, op.a.cols, op.a.ld, op.k2])?;
        // SAFETY: the caller's contract (Kernel::laswp): tile and pivots are this device's
        // memory, the pivots naming rows of the tile when the stream runs the op.
        self.with_solver(queue, |s| unsafe { A::laswp(s.handle(), op) })
    }
}

impl<A: GpuRuntime> GpuDevice<A> {
    fn tri(&self, queue: &Arc<dyn Queue>, routine: TriRoutine, op: &TriTile) -> Result<()> {
        if !op.check_i32(A::NAME)? {
            return Ok(());
        }
        if !self.supports_tri(op.dtype()) {
            return Err(Error::Unsupported {
                device: self.info.label(),
                detail: format!("{} in {}", routine.name(), op.dtype()),
            });
        }
        self.faults.check(FaultOp::Kernel)?;
        // SAFETY: checked tiles of device memory the executor keeps alive until the stream is
        // synchronised; dimensions fit 32 bits (check_i32).
        self.with_blas(queue, |h| unsafe { A::tri(h, routine, op) })
    }
}
