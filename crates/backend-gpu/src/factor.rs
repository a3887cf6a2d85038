//! The factorization tiles of a GPU (`Kernel::potrf`, `getrf`, `laswp`), over the runtime's
//! solver library, written once for every vendor. A vendor provides the calls (its
//! [`GpuRuntime`] solver methods); this file keeps, per compute stream:
//!
//! - the solver handle, created on the stream's first factorization (creating one costs a
//!   library initialisation that most calls, all GEMM, never need);
//! - the device workspace the library asks for, grown when a larger tile needs more (after the
//!   stream has finished with the old one);
//! - one device `i32` for `info` and one page-locked host `i32`: each op's `info` is copied
//!   from the first to the second and then stored into the caller's [`InfoCell`] by a host
//!   function, all in stream order. A Cholesky factor's diagonal comes back the same way (a
//!   host buffer grown as needed), for LAPACK's NaN-pivot `info` where the library misses it. A stream runs its work in order and a host function holds
//!   back the work behind it until it returns, so one slot of each serves every op of the
//!   stream, and the cell is filled before a synchronisation of the stream returns.
//!
//! Pivots are written and read where the tile says (`RawPivots`, device memory): nothing of
//! them passes through the host here.

use crate::device::GpuDevice;
use crate::memory::{DeviceBuffer, PinnedBuffer};
use crate::runtime::{Copy2D, CopyKind, GpuRuntime, Workspace};
use crate::stream::GpuStream;
use hetblas_core::fault::FaultOp;
use hetblas_core::{Buffer, Error, InfoCell, Queue, Result};
use std::sync::{Arc, Mutex};

/// The solver side of one compute stream.
pub(crate) struct SolverState<A: GpuRuntime> {
    stream: A::Stream,
    handle: A::Solver,
    work: Option<DeviceBuffer<A>>,
    dev_info: DeviceBuffer<A>,
    host_info: PinnedBuffer<A>,
    /// The diagonal of the last Cholesky factor, for its NaN check (grown as needed).
    host_diag: Option<PinnedBuffer<A>>,
    ctx: Arc<A::Context>,
}

/// A Cholesky factor's diagonal to check for a NaN pivot: `n` entries of `dtype`, `pitch`
/// bytes apart from `addr` in device memory.
pub(crate) struct Diagonal {
    pub addr: u64,
    pub pitch: usize,
    pub n: usize,
    pub dtype: hetblas_core::DType,
}

// SAFETY: the handles are used by one thread at a time (the state sits behind a Mutex); the
// runtimes' handles may move between threads.
unsafe impl<A: GpuRuntime> Send for SolverState<A> {}

/// The solver states of a device's compute streams (index for index), each made on first use.
pub(crate) type Solvers<A> = Vec<Mutex<Option<SolverState<A>>>>;

impl<A: GpuRuntime> SolverState<A> {
    fn new(device: &GpuDevice<A>, stream: &GpuStream<A>) -> Result<Self> {
        let ctx = stream.context().clone();
        A::bind(&ctx)?;
        let dev_info = DeviceBuffer::new(&ctx, hetblas_core::Device::space(device), 8)?;
        let host_info = PinnedBuffer::new(&ctx, 8)?;
        // SAFETY: a live stream of the current device, which outlives the handle (the device
        // drops its solvers before its streams, and the state synchronises first).
        let handle = unsafe { A::solver_create(&ctx, stream.raw()) }?;
        Ok(SolverState {
            stream: stream.raw(),
            handle,
            work: None,
            dev_info,
            host_info,
            host_diag: None,
            ctx,
        })
    }

    pub(crate) fn handle(&self) -> A::Solver {
        self.handle
    }

    /// A workspace of at least `bytes`; a smaller one is replaced once the stream has
    /// finished every op that may use it.
    fn workspace(&mut self, space: hetblas_core::MemorySpace, bytes: usize) -> Result<Workspace> {
        if bytes == 0 {
            return Ok(Workspace { addr: 0, bytes: 0 });
        }
        if self.work.as_ref().is_none_or(|w| w.len() < bytes) {
            // SAFETY: a live stream.
            unsafe { A::stream_synchronize(self.stream) }?;
            self.work = None;
            self.work = Some(DeviceBuffer::new(&self.ctx, space, bytes)?);
        }
        let w = self
            .work
            .as_ref()
            .ok_or_else(|| Error::internal("no solver workspace"))?;
        Ok(Workspace {
            addr: w.addr(),
            bytes: w.len(),
        })
    }

    /// Behind the op just issued: its `info` copied to the host slot, then into `cell`. With
    /// `diagonal` (a Cholesky factor's), `info = 0` becomes the first NaN pivot's column when
    /// there is one, as LAPACK reports it ([`hetblas_core::first_nan_pivot`]: a library may
    /// carry a NaN pivot on instead of stopping).
    fn deliver_info(&mut self, cell: &Arc<InfoCell>, diagonal: Option<Diagonal>) -> Result<()> {
        let copy = Copy2D {
            src: self.dev_info.addr(),
            src_pitch: 4,
            dst: self.host_info.addr(),
            dst_pitch: 4,
            width: 4,
            height: 1,
            kind: CopyKind::DeviceToHost,
        };
        // SAFETY: both slots live as long as the state, which synchronises the stream before
        // it goes.
        unsafe { A::copy_2d_async(&copy, self.stream) }?;
        let diag = match diagonal {
            Some(d) => Some(self.copy_diagonal(&d)?),
            None => None,
        };
        let (cell, slot) = (cell.clone(), self.host_info.addr());
        let job = Box::new(move || {
            // SAFETY: the host slot is page-locked memory of the state (alive, see above),
            // written by the copy just before in stream order; read-only here.
            let mut info = unsafe { (slot as *const i32).read_volatile() } as i64;
            if let (0, Some((addr, n, dtype))) = (info, diag) {
                // SAFETY: the diagonal's host copy holds n entries, written just before in
                // stream order, alive as the state is.
                info = unsafe { hetblas_core::first_nan_pivot(addr, 1, n, dtype) }.unwrap_or(0);
            }
            cell.set(info);
        });
        // SAFETY: a live stream; the job touches only the slot and the cell it owns.
        unsafe { A::launch_host_fn(self.stream, job) }
    }
}

impl<A: GpuRuntime> SolverState<A> {
    /// Copies the diagonal `d` into the host buffer (grown, once the stream is done with the
    /// old one, when too small) in stream order; returns where it lands.
    fn copy_diagonal(&mut self, d: &Diagonal) -> Result<(u64, usize, hetblas_core::DType)> {
        let size = d.dtype.size();
        let bytes = d.n * size;
        if self.host_diag.as_ref().is_none_or(|b| b.len() < bytes) {
            // SAFETY: a live stream.
            unsafe { A::stream_synchronize(self.stream) }?;
            self.host_diag = None;
            self.host_diag = Some(PinnedBuffer::new(&self.ctx, bytes)?);
        }
        let host = self
            .host_diag
            .as_ref()
            .ok_or_else(|| Error::internal("no diagonal buffer"))?
            .addr();
        let copy = Copy2D {
            src: d.addr,
            src_pitch: d.pitch,
            dst: host,
            dst_pitch: size,
            width: size,
            height: d.n,
            kind: CopyKind::DeviceToHost,
        };
        // SAFETY: the diagonal lies inside the caller's tile (alive until the stream has run
        // the op and this copy); the host buffer is the state's, large enough.
        unsafe { A::copy_2d_async(&copy, self.stream) }?;
        Ok((host, d.n, d.dtype))
    }
}

impl<A: GpuRuntime> Drop for SolverState<A> {
    fn drop(&mut self) {
        let _caller = crate::current::CurrentGuard::<A>::save();
        if A::bind(&self.ctx).is_ok() {
            // SAFETY: the stream is live (the device drops solvers before streams); waiting
            // for it ends every use of the handle and the buffers.
            let _ = unsafe { A::stream_synchronize(self.stream) };
            // SAFETY: created once in `new`, destroyed once here.
            unsafe { A::solver_destroy(self.handle) };
        }
    }
}

impl<A: GpuRuntime> GpuDevice<A> {
    /// Runs `call` with the solver state of `queue`'s stream (made on first use), locked, the
    /// device's context bound, after the fault injector had its say.
    pub(crate) fn with_solver<R>(
        &self,
        queue: &Arc<dyn Queue>,
        call: impl FnOnce(&mut SolverState<A>) -> Result<R>,
    ) -> Result<R> {
        let i = self.compute_index(queue)?;
        let stream = &self.streams[i];
        let mut slot = self.solvers[i].lock().unwrap_or_else(|p| p.into_inner());
        A::bind(stream.context())?;
        if slot.is_none() {
            *slot = Some(SolverState::new(self, stream)?);
        }
        let state = slot
            .as_mut()
            .ok_or_else(|| Error::internal("solver state"))?;
        self.faults.check(FaultOp::Kernel)?;
        call(state)
    }

    /// Issues an op that reports `info`: its workspace found, the op issued, `info` delivered
    /// (checked against the NaN pivots of `diagonal` when given).
    pub(crate) fn issue_with_info(
        &self,
        queue: &Arc<dyn Queue>,
        cell: &Arc<InfoCell>,
        diagonal: Option<Diagonal>,
        workspace: impl FnOnce(A::Solver) -> Result<usize>,
        issue: impl FnOnce(A::Solver, Workspace, u64) -> Result<()>,
    ) -> Result<()> {
        let space = hetblas_core::Device::space(self);
        self.with_solver(queue, |s| {
            let bytes = workspace(s.handle)?;
            let work = s.workspace(space, bytes)?;
            issue(s.handle, work, s.dev_info.addr())?;
            s.deliver_info(cell, diagonal)
        })
    }
}
