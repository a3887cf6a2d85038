//! Level 1: vector operations.
//!
//! Every routine follows the reference BLAS: `n <= 0` returns at once; a negative increment walks
//! the vector from its end (the pointer names the element of lowest address); NRM2, ASUM, IAMAX
//! and SCAL return at once (0) when `incx <= 0`.
//!
//! # Safety (every `unsafe fn` here)
//! - Each vector argument with `n > 0` points to `1 + (n-1)*|inc|` initialised elements (one
//!   element when `inc == 0`), readable, and writable when the routine writes it.
//! - A vector the routine writes does not overlap any other vector argument.

use crate::scalar::{Real, Scalar};
use crate::strided::{slice, slice_mut, vec_len, Stride};

/// The slice and addressing of a vector argument read by the routine.
///
/// # Safety
/// As in the module's Safety section, with `n > 0`.
unsafe fn vin<'a, T>(n: usize, x: *const T, inc: i64) -> (&'a [T], Stride) {
    let inc = inc as isize;
    // SAFETY: the caller provides `1 + (n-1)*|inc|` readable elements at `x`.
    (unsafe { slice(x, vec_len(n, inc)) }, Stride::new(n, inc))
}

/// The slice and addressing of a vector argument written by the routine.
///
/// # Safety
/// As in the module's Safety section, with `n > 0`.
unsafe fn vout<'a, T>(n: usize, x: *mut T, inc: i64) -> (&'a mut [T], Stride) {
    let inc = inc as isize;
    // SAFETY: the caller provides `1 + (n-1)*|inc|` writable elements at `x`, aliased by nothing.
    (
        unsafe { slice_mut(x, vec_len(n, inc)) },
        Stride::new(n, inc),
    )
}

/// AXPY: `y := alpha*x + y` (returns at once when `alpha == 0`).
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn axpy<T: Scalar>(n: i64, alpha: T, x: *const T, incx: i64, y: *mut T, incy: i64) {
    if n <= 0 || alpha.is_zero() {
        return;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let ((x, sx), (y, sy)) = unsafe { (vin(n, x, incx), vout(n, y, incy)) };
    for i in 0..n {
        y[sy.at(i)] += alpha * x[sx.at(i)];
    }
}

/// SCAL: `x := alpha*x`; nothing is done when `incx <= 0`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn scal<T: Scalar>(n: i64, alpha: T, x: *mut T, incx: i64) {
    if n <= 0 || incx <= 0 {
        return;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let (x, sx) = unsafe { vout(n, x, incx) };
    for i in 0..n {
        x[sx.at(i)] *= alpha;
    }
}

/// CSSCAL / ZDSCAL: `x := alpha*x` with a real `alpha`; nothing is done when `incx <= 0`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn rscal<T: Scalar>(n: i64, alpha: T::Real, x: *mut T, incx: i64) {
    if n <= 0 || incx <= 0 {
        return;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let (x, sx) = unsafe { vout(n, x, incx) };
    for i in 0..n {
        let v = &mut x[sx.at(i)];
        *v = v.mul_real(alpha);
    }
}

/// COPY: `y := x`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn copy<T: Scalar>(n: i64, x: *const T, incx: i64, y: *mut T, incy: i64) {
    if n <= 0 {
        return;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let ((x, sx), (y, sy)) = unsafe { (vin(n, x, incx), vout(n, y, incy)) };
    for i in 0..n {
        y[sy.at(i)] = x[sx.at(i)];
    }
}

/// SWAP: `x <-> y`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn swap<T: Scalar>(n: i64, x: *mut T, incx: i64, y: *mut T, incy: i64) {
    if n <= 0 {
        return;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let ((x, sx), (y, sy)) = unsafe { (vout(n, x, incx), vout(n, y, incy)) };
    for i in 0..n {
        std::mem::swap(&mut x[sx.at(i)], &mut y[sy.at(i)]);
    }
}

/// DOTU: `sum x_i * y_i` (DOT for a real type); 0 when `n <= 0`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn dotu<T: Scalar>(n: i64, x: *const T, incx: i64, y: *const T, incy: i64) -> T {
    let mut acc = T::zero();
    if n <= 0 {
        return acc;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let ((x, sx), (y, sy)) = unsafe { (vin(n, x, incx), vin(n, y, incy)) };
    for i in 0..n {
        acc += x[sx.at(i)] * y[sy.at(i)];
    }
    acc
}

/// DOTC: `sum conj(x_i) * y_i` (DOT for a real type); 0 when `n <= 0`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn dotc<T: Scalar>(n: i64, x: *const T, incx: i64, y: *const T, incy: i64) -> T {
    let mut acc = T::zero();
    if n <= 0 {
        return acc;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let ((x, sx), (y, sy)) = unsafe { (vin(n, x, incx), vin(n, y, incy)) };
    for i in 0..n {
        acc += x[sx.at(i)].conj() * y[sy.at(i)];
    }
    acc
}

/// SDOT / DDOT: `sum x_i * y_i`, accumulated in the type's own precision; 0 when `n <= 0`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn dot<R: Real>(n: i64, x: *const R, incx: i64, y: *const R, incy: i64) -> R {
    // SAFETY: the same contract.
    unsafe { dotu(n, x, incx, y, incy) }
}

/// SDSDOT: `sb + sum x_i * y_i`, accumulated in f64 from `sb` and rounded to f32 (`sb` when
/// `n <= 0`).
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn sdsdot(n: i64, sb: f32, x: *const f32, incx: i64, y: *const f32, incy: i64) -> f32 {
    // SAFETY: the same contract.
    unsafe { dot_in_f64(sb as f64, n, x, incx, y, incy) as f32 }
}

/// DSDOT: `sum x_i * y_i` of f32 vectors, accumulated and returned in f64; 0 when `n <= 0`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn dsdot(n: i64, x: *const f32, incx: i64, y: *const f32, incy: i64) -> f64 {
    // SAFETY: the same contract.
    unsafe { dot_in_f64(0.0, n, x, incx, y, incy) }
}

/// `init + sum x_i * y_i` of f32 vectors, accumulated in f64 in the reference's order.
///
/// # Safety
/// See the module's Safety section.
unsafe fn dot_in_f64(init: f64, n: i64, x: *const f32, incx: i64, y: *const f32, incy: i64) -> f64 {
    let mut acc = init;
    if n <= 0 {
        return acc;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let ((x, sx), (y, sy)) = unsafe { (vin(n, x, incx), vin(n, y, incy)) };
    for i in 0..n {
        acc += x[sx.at(i)] as f64 * y[sy.at(i)] as f64;
    }
    acc
}

/// NRM2: the Euclidean norm `sqrt(sum |x_i|^2)`, computed without overflow or underflow (Blue's
/// three accumulators, as the reference's nrm2.f90); 0 when `n <= 0`. As in the current
/// reference, a negative `incx` walks from the end and `incx == 0` reads `x_1` n times.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn nrm2<T: Scalar>(n: i64, x: *const T, incx: i64) -> T::Real {
    let zero = T::Real::zero();
    let one = T::Real::one();
    if n <= 0 {
        return zero;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let (x, sx) = unsafe { vin(n, x, incx) };
    let (tsml, tbig, ssml, sbig) = (T::Real::TSML, T::Real::TBIG, T::Real::SSML, T::Real::SBIG);
    let (mut asml, mut amed, mut abig) = (zero, zero, zero);
    let mut notbig = true;
    let mut add = |ax: T::Real| {
        if ax > tbig {
            abig += (ax * sbig) * (ax * sbig);
            notbig = false;
        } else if ax < tsml {
            if notbig {
                asml += (ax * ssml) * (ax * ssml);
            }
        } else {
            // NaN lands here and makes the sum NaN.
            amed += ax * ax;
        }
    };
    for i in 0..n {
        let v = x[sx.at(i)];
        add(v.re().abs());
        if T::IS_COMPLEX {
            add(v.im().abs());
        }
    }
    let (scl, sumsq);
    if abig > zero {
        if amed > zero || amed.is_nan() {
            abig += (amed * sbig) * sbig;
        }
        scl = one / sbig;
        sumsq = abig;
    } else if asml > zero {
        if amed > zero || amed.is_nan() {
            let amed = amed.sqrt();
            let asml = asml.sqrt() / ssml;
            let (ymin, ymax) = if asml > amed {
                (amed, asml)
            } else {
                (asml, amed)
            };
            scl = one;
            sumsq = ymax * ymax * (one + (ymin / ymax) * (ymin / ymax));
        } else {
            scl = one / ssml;
            sumsq = asml;
        }
    } else {
        scl = one;
        sumsq = amed;
    }
    scl * sumsq.sqrt()
}

/// ASUM: `sum |re x_i| + |im x_i|` (SCASUM / DZASUM semantics; `sum |x_i|` for a real type); 0
/// when `n <= 0` or `incx <= 0`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn asum<T: Scalar>(n: i64, x: *const T, incx: i64) -> T::Real {
    let mut acc = T::Real::zero();
    if n <= 0 || incx <= 0 {
        return acc;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let (x, sx) = unsafe { vin(n, x, incx) };
    for i in 0..n {
        acc += x[sx.at(i)].abs1();
    }
    acc
}

/// IAMAX: the 1-based index of the first entry of largest `abs1` (`|re| + |im|`); 0 when `n < 1`
/// or `incx < 1`.
///
/// # Safety
/// See the module's Safety section.
pub unsafe fn iamax<T: Scalar>(n: i64, x: *const T, incx: i64) -> i64 {
    if n < 1 || incx < 1 {
        return 0;
    }
    let n = n as usize;
    // SAFETY: the caller's contract (module Safety section).
    let (x, sx) = unsafe { vin(n, x, incx) };
    let mut best = 0usize;
    let mut max = x[sx.at(0)].abs1();
    for i in 1..n {
        let v = x[sx.at(i)].abs1();
        if v > max {
            best = i;
            max = v;
        }
    }
    best as i64 + 1
}

/// SCABS1 / DCABS1: `|re z| + |im z|`.
pub fn cabs1<T: Scalar>(z: T) -> T::Real {
    z.abs1()
}
