//! Raw BLAS operands turned into slices once, at a routine's entry, so that the arithmetic below
//! is safe, bounds-checked indexing. All index arithmetic is in `usize` / `isize`: an operand of
//! more than 2^31 elements is indexed correctly.

/// Number of elements a strided vector of `n` entries spans: `1 + (n-1)*|inc|` (0 for `n == 0`).
pub(crate) fn vec_len(n: usize, inc: isize) -> usize {
    if n == 0 {
        0
    } else {
        1 + (n - 1) * inc.unsigned_abs()
    }
}

/// A strided vector's addressing: entry `i` is at `start + i*inc`; a negative increment starts
/// from the end, as the reference BLAS does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stride {
    start: isize,
    inc: isize,
}

impl Stride {
    pub(crate) fn new(n: usize, inc: isize) -> Stride {
        let start = if inc < 0 && n > 0 {
            (n as isize - 1) * -inc
        } else {
            0
        };
        Stride { start, inc }
    }

    /// Slice index of entry `i`.
    #[inline(always)]
    pub(crate) fn at(self, i: usize) -> usize {
        (self.start + i as isize * self.inc) as usize
    }
}

/// Number of elements a column-major `rows x cols` matrix with leading dimension `ld` spans.
pub(crate) fn mat_len(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (cols - 1) * ld + rows
    }
}

/// The `len` elements at `p` as a slice (empty, and `p` unused, when `len == 0`).
///
/// # Safety
/// When `len > 0`, `p` points to `len` initialised elements, readable for `'a`, that nothing
/// writes during `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `len` readable elements at `p`, not written during 'a.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

/// The `len` elements at `p` as a mutable slice (empty, and `p` unused, when `len == 0`).
///
/// # Safety
/// When `len > 0`, `p` points to `len` initialised elements, readable and writable for `'a`, that
/// nothing else reads or writes during `'a`.
pub(crate) unsafe fn slice_mut<'a, T>(p: *mut T, len: usize) -> &'a mut [T] {
    if len == 0 {
        &mut []
    } else {
        // SAFETY: the caller guarantees `len` elements at `p`, used by nothing else during 'a.
        unsafe { std::slice::from_raw_parts_mut(p, len) }
    }
}

/// `max(1, x)`, the reference's bound on leading dimensions.
pub(crate) fn max1(x: i64) -> i64 {
    x.max(1)
}

/// `c := beta*c` over the `len` entries of column slice `c`, writing zeros without reading when
/// `beta == 0` (the reference's rule: NaN in C does not survive `beta == 0`).
pub(crate) fn scale_by_beta<T: crate::Scalar>(c: &mut [T], beta: T) {
    if beta.is_zero() {
        c.fill(T::zero());
    } else if beta != T::one() {
        for v in c {
            *v *= beta;
        }
    }
}
