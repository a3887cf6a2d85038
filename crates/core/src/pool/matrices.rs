//! Device matrices: allocation, upload, download, and the blocking copies they use.

use super::DevicePool;
use crate::error::{Error, Result};
use crate::matrix::{DeviceMatrix, MatIn, MatOut};
use crate::memory::{BorrowedBuffer, HostAccess, RawTile};
use crate::operand::{MatMut, MatRef};
use crate::scalar::Scalar;
use std::marker::PhantomData;

impl DevicePool {
    /// An uninitialised `rows x cols` matrix on device `idx` (packed, `ld = rows`).
    ///
    /// # Errors
    /// `InvalidInput` for a bad index or a size that overflows; `OutOfMemory` naming the device.
    pub fn alloc_matrix<T: Scalar>(
        &self,
        idx: usize,
        rows: usize,
        cols: usize,
    ) -> Result<DeviceMatrix<T>> {
        let _thread = self.keep_thread_contexts();
        let device = self.device(idx)?.clone();
        let bytes = rows
            .checked_mul(cols)
            .and_then(|e| e.checked_mul(T::DTYPE.size()))
            .ok_or_else(|| Error::InvalidInput(format!("matrix {rows}x{cols} too large")))?;
        let buffer = device
            .allocate(bytes.max(T::DTYPE.size()))
            .map_err(|e| e.on_device(&device.info().label()))?;
        Ok(DeviceMatrix {
            device,
            buffer,
            rows,
            cols,
            ld: rows.max(1),
            _t: PhantomData,
        })
    }

    /// The index of the device whose own memory `addr` is (see [`Device::owns_address`]), if
    /// any: host memory, and memory of no device of this pool, give `None`.
    ///
    /// [`Device::owns_address`]: crate::device::Device::owns_address
    pub fn device_owning(&self, addr: u64) -> Option<usize> {
        self.devices.iter().position(|d| d.owns_address(addr))
    }

    /// The caller's `rows x cols` matrix (leading dimension `ld`) at `addr` in device `idx`'s
    /// memory, as a [`DeviceMatrix`] for GEMM operands. Dropping it frees nothing.
    ///
    /// # Errors
    /// `InvalidInput` for a bad index, `ld < rows`, or a size that overflows.
    ///
    /// # Safety
    /// - `addr` is memory of device `idx` (as [`DevicePool::device_owning`] says), aligned for
    ///   `T`;
    /// - the `(cols - 1) * ld + rows` elements from `addr` are allocated, and hold initialised
    ///   values of `T` where the matrix is read;
    /// - the memory is not freed, and nothing else writes it (or, for an output, reads it)
    ///   while the matrix is in use, that is until the calls given it have returned.
    pub unsafe fn borrow_matrix<T: Scalar>(
        &self,
        idx: usize,
        addr: u64,
        rows: usize,
        cols: usize,
        ld: usize,
    ) -> Result<DeviceMatrix<T>> {
        let device = self.device(idx)?.clone();
        if ld < rows.max(1) {
            return Err(Error::InvalidInput(format!(
                "leading dimension {ld} < {rows} rows"
            )));
        }
        let elems = if rows == 0 || cols == 0 {
            Some(0)
        } else {
            (cols - 1).checked_mul(ld).and_then(|e| e.checked_add(rows))
        };
        let bytes = elems
            .and_then(|e| e.checked_mul(T::DTYPE.size()))
            .ok_or_else(|| Error::InvalidInput(format!("matrix {rows}x{cols} too large")))?;
        let buffer = Box::new(BorrowedBuffer::new(device.space(), addr, bytes));
        Ok(DeviceMatrix {
            device,
            buffer,
            rows,
            cols,
            ld,
            _t: PhantomData,
        })
    }

    /// Copies a host matrix to device `idx`.
    pub fn upload<T: Scalar>(&self, idx: usize, host: MatRef<'_, T>) -> Result<DeviceMatrix<T>> {
        let _thread = self.keep_thread_contexts();
        let m = self.alloc_matrix::<T>(idx, host.rows(), host.cols())?;
        self.copy_blocking(MatIn::Host(host).raw(), m.raw())?;
        Ok(m)
    }

    /// Copies a device matrix back into a host view of the same shape.
    pub fn download<T: Scalar>(&self, m: &DeviceMatrix<T>, mut host: MatMut<'_, T>) -> Result<()> {
        let _thread = self.keep_thread_contexts();
        if (host.rows(), host.cols()) != (m.rows(), m.cols()) {
            return Err(Error::InvalidInput(format!(
                "download of a {}x{} matrix into a {}x{} view",
                m.rows(),
                m.cols(),
                host.rows(),
                host.cols()
            )));
        }
        self.copy_blocking(m.raw(), MatOut::Host(host.rb_mut()).raw())
    }

    /// A copy between any two spaces of the pool, waiting for completion.
    pub(super) fn copy_blocking(&self, src: RawTile, dst: RawTile) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        if src.space.is_host() && dst.space.is_host() {
            // A matrix of a device computing in host memory (the CPU): a plain copy.
            if (src.rows, src.cols, src.dtype) != (dst.rows, dst.cols, dst.dtype) {
                return Err(Error::internal(
                    "host copy between tiles of different shapes",
                ));
            }
            let col = src.rows * src.dtype.size();
            for j in 0..src.cols {
                let at = |t: &RawTile| t.addr + (j * t.ld * t.dtype.size()) as u64;
                // SAFETY: both tiles are host memory of the caller's views or of a
                // DeviceMatrix, alive for this call; each column is `col` bytes inside its
                // tile (checked by the views' constructors), and the two are distinct buffers
                // (a shared view and a mutable one cannot alias).
                unsafe {
                    std::ptr::copy(at(&src) as *const u8, at(&dst) as *mut u8, col);
                }
            }
            return Ok(());
        }
        if src.space == dst.space {
            return Err(Error::Unsupported {
                device: format!("{:?}", src.space),
                detail: "copy within one space".into(),
            });
        }
        let users: Vec<_> = self
            .devices
            .iter()
            .filter(|d| d.space() == src.space || d.space() == dst.space)
            .cloned()
            .collect();
        let regions = super::host_regions(&[(src, HostAccess::Read), (dst, HostAccess::ReadWrite)]);
        let _call = self.enter(&users, &regions, dst.is_contiguous())?;
        self.copy_entered(src, dst)
    }

    /// A copy between spaces with a link, inside an entry ([`DevicePool::enter`]) the caller
    /// holds for the host regions it touches: [`DevicePool::copy_blocking`] without entering.
    pub(super) fn copy_entered(&self, src: RawTile, dst: RawTile) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        let link = self
            .link(src.space, dst.space)
            .ok_or_else(|| Error::Unsupported {
                device: format!("{:?}", dst.space),
                detail: format!("no link {:?}->{:?}", src.space, dst.space),
            })?;
        link.copy(&src, &dst)?;
        link.queue().synchronize()
    }

    /// Makes a host buffer ready for every accelerator's DMA engine now (page-locked once), so
    /// that calls on views inside it find it registered: for buffers many calls read
    /// piecewise. Waits for the calls in flight. Undo with [`DevicePool::release_host`].
    pub fn prepare_host<T>(&self, buffer: &[T], access: HostAccess) -> Result<()> {
        let (addr, bytes) = (buffer.as_ptr() as u64, std::mem::size_of_val(buffer));
        if bytes == 0 {
            return Ok(());
        }
        let _thread = self.keep_thread_contexts();
        let _alone = self.alone();
        for d in self.devices.iter().filter(|d| !d.space().is_host()) {
            d.prepare_host(addr, bytes, access)
                .map_err(|e| e.on_device(&d.info().label()))?;
        }
        Ok(())
    }

    /// Releases what the devices keep for a host buffer between calls (page-locked
    /// registrations). Call it before freeing a large buffer passed to hetblas: a stale
    /// registration occupies GPU driver address space, and other CUDA code may trip over it.
    pub fn release_host<T>(&self, buffer: &[T]) -> Result<()> {
        let _thread = self.keep_thread_contexts();
        let _alone = self.alone();
        for d in &self.devices {
            d.release_host(buffer.as_ptr() as u64, std::mem::size_of_val(buffer))?;
        }
        Ok(())
    }
}
