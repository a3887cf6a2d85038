//! Level 1 plane rotations: ROT (real, and CSROT/ZDROT), ROTG (real and complex), ROTM, ROTMG.
//!
//! # Safety (every `unsafe fn` here)
//! - `x` and `y` with `n > 0` point to `1 + (n-1)*|inc|` initialised, writable elements each, and
//!   do not overlap.

use num_complex::Complex;

use crate::scalar::{Real, Scalar};
use crate::strided::{slice_mut, vec_len, Stride};

/// ROT (and CSROT / ZDROT for complex `T`): applies the real rotation
/// `x_i := c*x_i + s*y_i`, `y_i := c*y_i - s*x_i`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn rot<T: Scalar>(
    n: i64,
    x: *mut T,
    incx: i64,
    y: *mut T,
    incy: i64,
    c: T::Real,
    s: T::Real,
) {
    if n <= 0 {
        return;
    }
    let n = n as usize;
    let (incx, incy) = (incx as isize, incy as isize);
    // SAFETY: the caller's contract (module Safety section).
    let x = unsafe { slice_mut(x, vec_len(n, incx)) };
    // SAFETY: as above; `y` does not overlap `x`.
    let y = unsafe { slice_mut(y, vec_len(n, incy)) };
    let (sx, sy) = (Stride::new(n, incx), Stride::new(n, incy));
    for i in 0..n {
        let (xi, yi) = (x[sx.at(i)], y[sy.at(i)]);
        x[sx.at(i)] = xi.mul_real(c) + yi.mul_real(s);
        y[sy.at(i)] = yi.mul_real(c) - xi.mul_real(s);
    }
}

/// SROTG / DROTG: constructs the Givens rotation with `[c s; -s c] [a; b] = [r; 0]`; on return
/// `a` holds `r` and `b` the reconstruction value `z`.
pub fn rotg<R: Real>(a: &mut R, b: &mut R, c: &mut R, s: &mut R) {
    let _ = (a, b, c, s);
    unimplemented!()
}

/// CROTG / ZROTG: constructs the complex Givens rotation with real `c` and complex `s` such that
/// `[c s; -conj(s) c] [a; b] = [r; 0]`; on return `a` holds `r`.
pub fn rotg_complex<R: Real>(a: &mut Complex<R>, b: Complex<R>, c: &mut R, s: &mut Complex<R>)
where
    Complex<R>: Scalar<Real = R>,
{
    let _ = (a, b, c, s);
    unimplemented!()
}

/// ROTM: applies the modified Givens transformation `H` given by `param` (flag, h11, h21, h12,
/// h22) to the pairs `(x_i, y_i)`.
///
/// # Safety
/// See the module's Safety section; `param` points to 5 readable elements.
pub unsafe fn rotm<R: Real>(n: i64, x: *mut R, incx: i64, y: *mut R, incy: i64, param: *const R) {
    let _ = (n, x, incx, y, incy, param);
    unimplemented!()
}

/// ROTMG: constructs the modified Givens transformation that zeroes the second component of
/// `(sqrt(d1)*x1, sqrt(d2)*y1)`; updates `d1`, `d2`, `x1` and writes `param`.
pub fn rotmg<R: Real>(d1: &mut R, d2: &mut R, x1: &mut R, y1: R, param: &mut [R; 5]) {
    let _ = (d1, d2, x1, y1, param);
    unimplemented!()
}
