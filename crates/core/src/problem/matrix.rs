//! Device-resident matrices and the operand forms GEMM accepts: a host view or a matrix that
//! lives in a device's memory. Any mix of the two is a valid placement of (A, B, C).

use crate::device::Device;
use crate::memory::{Buffer, MemorySpace, RawTile};
use crate::operand::{MatMut, MatRef};
use crate::scalar::Scalar;
use std::marker::PhantomData;
use std::sync::Arc;

/// A column-major matrix in a device's memory, created by [`crate::pool::DevicePool`]
/// (`alloc_matrix`, `upload`) and read back with `download`, or memory of the caller's lent
/// for a call (`borrow_matrix`): dropping a borrowed matrix frees nothing.
#[derive(Debug)]
pub struct DeviceMatrix<T> {
    pub(crate) device: Arc<dyn Device>,
    pub(crate) buffer: Box<dyn Buffer>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) ld: usize,
    pub(crate) _t: PhantomData<T>,
}

impl<T: Scalar> DeviceMatrix<T> {
    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    pub fn ld(&self) -> usize {
        self.ld
    }
    pub fn space(&self) -> MemorySpace {
        self.buffer.space()
    }
    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }
    /// The whole matrix as a raw tile.
    pub fn raw(&self) -> RawTile {
        RawTile {
            space: self.buffer.space(),
            addr: self.buffer.addr(),
            rows: self.rows,
            cols: self.cols,
            ld: self.ld,
            dtype: T::DTYPE,
        }
    }
}

/// A GEMM input: a host view or a device matrix.
#[derive(Debug, Clone, Copy)]
pub enum MatIn<'a, T> {
    Host(MatRef<'a, T>),
    Device(&'a DeviceMatrix<T>),
}

/// The GEMM output C: a host view or a device matrix.
#[derive(Debug)]
pub enum MatOut<'a, T> {
    Host(MatMut<'a, T>),
    Device(&'a mut DeviceMatrix<T>),
}

impl<'a, T> From<MatRef<'a, T>> for MatIn<'a, T> {
    fn from(m: MatRef<'a, T>) -> Self {
        MatIn::Host(m)
    }
}
impl<'a, T> From<&'a DeviceMatrix<T>> for MatIn<'a, T> {
    fn from(m: &'a DeviceMatrix<T>) -> Self {
        MatIn::Device(m)
    }
}
impl<'a, T> From<MatMut<'a, T>> for MatOut<'a, T> {
    fn from(m: MatMut<'a, T>) -> Self {
        MatOut::Host(m)
    }
}
impl<'a, T> From<&'a mut DeviceMatrix<T>> for MatOut<'a, T> {
    fn from(m: &'a mut DeviceMatrix<T>) -> Self {
        MatOut::Device(m)
    }
}

impl<T: Scalar> MatIn<'_, T> {
    pub fn rows(&self) -> usize {
        self.raw().rows
    }
    pub fn cols(&self) -> usize {
        self.raw().cols
    }
    pub fn raw(&self) -> RawTile {
        match self {
            MatIn::Host(m) => host_tile(m.as_ptr(), m.rows(), m.cols(), m.ld()),
            MatIn::Device(m) => m.raw(),
        }
    }
}

impl<T: Scalar> MatOut<'_, T> {
    pub fn rows(&self) -> usize {
        self.tile().rows
    }
    pub fn cols(&self) -> usize {
        self.tile().cols
    }
    /// The matrix as a raw tile, to be written.
    pub fn raw(&mut self) -> RawTile {
        self.tile()
    }
    fn tile(&self) -> RawTile {
        match self {
            MatOut::Host(m) => host_tile(m.as_ptr(), m.rows(), m.cols(), m.ld()),
            MatOut::Device(m) => m.raw(),
        }
    }
}

/// The host matrix at `ptr` as a raw tile.
fn host_tile<T: Scalar>(ptr: *const T, rows: usize, cols: usize, ld: usize) -> RawTile {
    RawTile {
        space: MemorySpace::HOST,
        addr: ptr as u64,
        rows,
        cols,
        ld,
        dtype: T::DTYPE,
    }
}
