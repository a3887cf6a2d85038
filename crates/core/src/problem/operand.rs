//! Column-major operand views over host memory, as BLAS defines them. Constructors check every
//! bound, so a view that exists is valid; the raw-pointer constructors are `unsafe`.

use super::blas_flags::blas_flag;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use std::marker::PhantomData;

blas_flag! {
    /// How an operand enters the product: as stored, transposed, or conjugate-transposed (`C`,
    /// which equals `T` for real types and is accepted as such).
    Trans { N = b'N', T = b'T', C = b'C' } parse "transpose", "N, T or C"
}

impl Trans {
    /// Whether the stored matrix is transposed before use (T and C, for every dtype).
    pub fn is_transposed(self) -> bool {
        !matches!(self, Trans::N)
    }
    /// Whether the elements are conjugated (C) when the dtype is complex.
    pub fn is_conjugated(self) -> bool {
        matches!(self, Trans::C)
    }
    /// What a kernel of `dtype` receives: `C` stays `C` for complex types (conjugate
    /// transpose), and becomes `T` for real ones.
    pub fn for_dtype(self, dtype: crate::scalar::DType) -> Trans {
        match self {
            Trans::C if !dtype.is_complex() => Trans::T,
            t => t,
        }
    }
    /// (rows, cols) of the stored matrix for an operand used as `rows_op x cols_op`.
    pub fn stored_shape(self, rows_op: usize, cols_op: usize) -> (usize, usize) {
        if self.is_transposed() {
            (cols_op, rows_op)
        } else {
            (rows_op, cols_op)
        }
    }
}

/// The number of elements a column-major `rows x cols` matrix with leading dimension `ld` spans.
pub fn required_len(rows: usize, cols: usize, ld: usize) -> Result<usize> {
    if ld < rows.max(1) {
        return Err(Error::InvalidInput(format!(
            "leading dimension {ld} is smaller than max(1, rows = {rows})"
        )));
    }
    if rows == 0 || cols == 0 {
        return Ok(0);
    }
    (cols - 1)
        .checked_mul(ld)
        .and_then(|x| x.checked_add(rows))
        .ok_or_else(|| Error::InvalidInput(format!("matrix {rows}x{cols} ld {ld} overflows usize")))
}

/// Checks that a `rows x cols` matrix with leading dimension `ld` fits in a slice of `len`
/// elements (a view's constructor).
fn fits(len: usize, rows: usize, cols: usize, ld: usize) -> Result<()> {
    let need = required_len(rows, cols, ld)?;
    if need > len {
        return Err(Error::InvalidInput(format!(
            "matrix {rows}x{cols} with ld {ld} needs {need} elements, the slice has {len}"
        )));
    }
    Ok(())
}

/// An immutable column-major view of a host matrix.
#[derive(Debug, Clone, Copy)]
pub struct MatRef<'a, T> {
    ptr: *const T,
    rows: usize,
    cols: usize,
    ld: usize,
    _life: PhantomData<&'a [T]>,
}

// SAFETY: a MatRef is a shared borrow of `[T]`; sharing it across threads is sharing `&[T]`.
unsafe impl<T: Sync> Send for MatRef<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for MatRef<'_, T> {}

impl<'a, T: Scalar> MatRef<'a, T> {
    /// A view of `rows x cols` elements of `data`, column-major with leading dimension `ld`.
    ///
    /// # Errors
    /// `InvalidInput` when `ld < max(1, rows)` or the matrix does not fit in `data`.
    pub fn new(data: &'a [T], rows: usize, cols: usize, ld: usize) -> Result<Self> {
        fits(data.len(), rows, cols, ld)?;
        // SAFETY: `fits` checked the extent, and `data` stays borrowed for 'a.
        Ok(unsafe { Self::from_raw_parts(data.as_ptr(), rows, cols, ld) })
    }

    /// A view of a packed matrix (`ld = rows`).
    pub fn packed(data: &'a [T], rows: usize, cols: usize) -> Result<Self> {
        Self::new(data, rows, cols, rows.max(1))
    }

    /// # Safety
    /// - `ptr` points to `(cols - 1) * ld + rows` initialized elements (or any pointer if the
    ///   matrix is empty), valid for reads for `'a` and not written through another path for `'a`;
    /// - `ld >= max(1, rows)`.
    pub unsafe fn from_raw_parts(ptr: *const T, rows: usize, cols: usize, ld: usize) -> Self {
        MatRef {
            ptr,
            rows,
            cols,
            ld,
            _life: PhantomData,
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    pub fn ld(&self) -> usize {
        self.ld
    }
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// Element (i, j). Panics when out of range, like slice indexing.
    pub fn get(&self, i: usize, j: usize) -> T {
        assert!(
            i < self.rows && j < self.cols,
            "index ({i}, {j}) out of range"
        );
        // SAFETY: (i, j) is in range and the constructor checked the extent.
        unsafe { *self.ptr.add(i + j * self.ld) }
    }
}

/// A mutable column-major view of a host matrix.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    ptr: *mut T,
    rows: usize,
    cols: usize,
    ld: usize,
    _life: PhantomData<&'a mut [T]>,
}

// SAFETY: a MatMut is a unique borrow of `[T]`; moving it to another thread moves `&mut [T]`.
unsafe impl<T: Send> Send for MatMut<'_, T> {}
// SAFETY: shared access to a MatMut only gives out shared reads.
unsafe impl<T: Sync> Sync for MatMut<'_, T> {}

impl<'a, T: Scalar> MatMut<'a, T> {
    /// A mutable view; see [`MatRef::new`].
    pub fn new(data: &'a mut [T], rows: usize, cols: usize, ld: usize) -> Result<Self> {
        fits(data.len(), rows, cols, ld)?;
        // SAFETY: `fits` checked the extent, and `data` stays borrowed mutably for 'a.
        Ok(unsafe { Self::from_raw_parts(data.as_mut_ptr(), rows, cols, ld) })
    }

    pub fn packed(data: &'a mut [T], rows: usize, cols: usize) -> Result<Self> {
        Self::new(data, rows, cols, rows.max(1))
    }

    /// # Safety
    /// As [`MatRef::from_raw_parts`], and the memory is valid for writes and not accessed through
    /// any other path for `'a`.
    pub unsafe fn from_raw_parts(ptr: *mut T, rows: usize, cols: usize, ld: usize) -> Self {
        MatMut {
            ptr,
            rows,
            cols,
            ld,
            _life: PhantomData,
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    pub fn ld(&self) -> usize {
        self.ld
    }
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }

    /// A shorter-lived mutable view of the same matrix.
    pub fn rb_mut(&mut self) -> MatMut<'_, T> {
        // SAFETY: the same matrix, reborrowed from `self` for a shorter lifetime.
        unsafe { MatMut::from_raw_parts(self.ptr, self.rows, self.cols, self.ld) }
    }

    /// A shared view of the same matrix.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        // SAFETY: the same matrix, borrowed shared from `self` for a shorter lifetime.
        unsafe { MatRef::from_raw_parts(self.ptr, self.rows, self.cols, self.ld) }
    }

    pub fn get(&self, i: usize, j: usize) -> T {
        self.as_ref().get(i, j)
    }

    pub fn set(&mut self, i: usize, j: usize, v: T) {
        assert!(
            i < self.rows && j < self.cols,
            "index ({i}, {j}) out of range"
        );
        // SAFETY: (i, j) is in range and the constructor checked the extent.
        unsafe { *self.ptr.add(i + j * self.ld) = v }
    }

    /// Column `j` as a mutable slice.
    pub fn col_mut(&mut self, j: usize) -> &mut [T] {
        assert!(j < self.cols, "column {j} out of range");
        // SAFETY: column j is inside the checked extent and we hold the unique borrow.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(j * self.ld), self.rows) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_constructors() {
        let v = vec![1.0f64; 10];
        assert!(MatRef::new(&v, 3, 3, 3).is_ok());
        assert!(MatRef::new(&v, 3, 3, 4).is_err()); // 2*4+3 = 11 > 10
        assert!(MatRef::new(&v, 3, 3, 2).is_err());
        assert!(MatRef::new(&v, 4, 3, 4).is_err());
        assert!(MatRef::new(&v, 0, 5, 1).is_ok());
        assert!(MatRef::new(&v, 0, 5, 0).is_err());
        assert!(MatRef::new(&v, usize::MAX, 3, usize::MAX).is_err());
        assert_eq!(required_len(3, 3, 4).unwrap(), 11);
    }

    #[test]
    fn trans_chars() {
        assert_eq!(Trans::from_blas_char(b'n'), Some(Trans::N));
        assert_eq!(Trans::from_blas_char(b'C'), Some(Trans::C));
        assert_eq!(Trans::from_blas_char(b'x'), None);
        assert_eq!(Trans::T.stored_shape(2, 5), (5, 2));
        assert_eq!(Trans::C.stored_shape(2, 5), (5, 2));
        use crate::scalar::DType;
        assert_eq!(Trans::C.for_dtype(DType::F64), Trans::T);
        assert_eq!(Trans::C.for_dtype(DType::C32), Trans::C);
        assert_eq!(Trans::T.for_dtype(DType::C64), Trans::T);
    }
}
