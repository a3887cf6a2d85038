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
/// `a` holds `r` and `b` the reconstruction value `z`. The current reference's algorithm: `r`
/// carries the sign of the larger of `a` and `b`, and is computed with scaling so that it neither
/// overflows nor underflows.
pub fn rotg<R: Real>(a: &mut R, b: &mut R, c: &mut R, s: &mut R) {
    let (zero, one) = (R::zero(), R::one());
    let (anorm, bnorm) = (a.abs(), b.abs());
    if bnorm == zero {
        *c = one;
        *s = zero;
        *b = zero;
    } else if anorm == zero {
        *c = zero;
        *s = one;
        *a = *b;
        *b = one;
    } else {
        let scl = R::SAFMAX.min(R::SAFMIN.max(anorm).max(bnorm));
        let sigma = if anorm > bnorm {
            one.copysign(*a)
        } else {
            one.copysign(*b)
        };
        let (as_, bs) = (*a / scl, *b / scl);
        let r = sigma * (scl * (as_ * as_ + bs * bs).sqrt());
        *c = *a / r;
        *s = *b / r;
        let z = if anorm > bnorm {
            *s
        } else if *c != zero {
            one / *c
        } else {
            one
        };
        *a = r;
        *b = z;
    }
}

/// CROTG / ZROTG: constructs the complex Givens rotation with real `c` and complex `s` such that
/// `[c s; -conj(s) c] [a; b] = [r; 0]`; on return `a` holds `r`. The current reference's
/// algorithm (unscaled when every magnitude is safe, scaled otherwise).
pub fn rotg_complex<R: Real>(a: &mut Complex<R>, b: Complex<R>, c: &mut R, s: &mut Complex<R>)
where
    Complex<R>: Scalar<Real = R>,
{
    let (zero, one) = (R::zero(), R::one());
    let two = one + one;
    let four = two + two;
    let czero = Complex::new(zero, zero);
    let (safmin, safmax) = (R::SAFMIN, R::SAFMAX);
    let rtmin = safmin.sqrt();
    let abssq = |z: Complex<R>| z.re * z.re + z.im * z.im;
    let f = *a;
    let g = b;
    let r;
    if g == czero {
        *c = one;
        *s = czero;
        r = f;
    } else if f == czero {
        *c = zero;
        if g.re == zero {
            let d = g.im.abs();
            *s = g.conj().mul_real(one / d);
            r = Complex::new(d, zero);
        } else if g.im == zero {
            let d = g.re.abs();
            *s = g.conj().mul_real(one / d);
            r = Complex::new(d, zero);
        } else {
            let g1 = g.re.abs().max(g.im.abs());
            let rtmax = (safmax / two).sqrt();
            if g1 > rtmin && g1 < rtmax {
                let d = abssq(g).sqrt();
                *s = g.conj().mul_real(one / d);
                r = Complex::new(d, zero);
            } else {
                let u = safmax.min(safmin.max(g1));
                let gs = g.mul_real(one / u);
                let d = abssq(gs).sqrt();
                *s = gs.conj().mul_real(one / d);
                r = Complex::new(d * u, zero);
            }
        }
    } else {
        let f1 = f.re.abs().max(f.im.abs());
        let g1 = g.re.abs().max(g.im.abs());
        let rtmax = (safmax / four).sqrt();
        // Unscaled when both are safe; otherwise scaled by u (and f separately by v when f is
        // tiny next to g), with w = v/u undoing the difference in c.
        let (fs, gs, u, w, f2, h2);
        if f1 > rtmin && f1 < rtmax && g1 > rtmin && g1 < rtmax {
            fs = f;
            gs = g;
            u = one;
            w = one;
            f2 = abssq(f);
            h2 = f2 + abssq(g);
        } else {
            u = safmax.min(safmin.max(f1).max(g1));
            gs = g.mul_real(one / u);
            let g2 = abssq(gs);
            if f1 / u < rtmin {
                let v = safmax.min(safmin.max(f1));
                w = v / u;
                fs = f.mul_real(one / v);
                f2 = abssq(fs);
                h2 = f2 * w * w + g2;
            } else {
                w = one;
                fs = f.mul_real(one / u);
                f2 = abssq(fs);
                h2 = f2 + g2;
            }
        }
        let (cc, rr, ss);
        if f2 >= h2 * safmin {
            cc = (f2 / h2).sqrt();
            rr = fs.mul_real(one / cc);
            let rtmax2 = rtmax * two;
            ss = if f2 > rtmin && h2 < rtmax2 {
                gs.conj() * fs.mul_real(one / (f2 * h2).sqrt())
            } else {
                gs.conj() * rr.mul_real(one / h2)
            };
        } else {
            let d = (f2 * h2).sqrt();
            cc = f2 / d;
            rr = if cc >= safmin {
                fs.mul_real(one / cc)
            } else {
                fs.mul_real(h2 / d)
            };
            ss = gs.conj() * fs.mul_real(one / d);
        }
        *c = cc * w;
        *s = ss;
        r = rr.mul_real(u);
    }
    *a = r;
}

/// ROTM: applies the modified Givens transformation `H` given by `param` (flag, h11, h21, h12,
/// h22) to the pairs `(x_i, y_i)`: flag -1 uses all four entries, 0 takes h11 = h22 = 1, 1 takes
/// h21 = -1 and h12 = 1, -2 is the identity.
///
/// # Safety
/// See the module's Safety section; `param` points to 5 readable elements.
pub unsafe fn rotm<R: Real>(n: i64, x: *mut R, incx: i64, y: *mut R, incy: i64, param: *const R) {
    let one = R::one();
    let two = one + one;
    // SAFETY: the caller provides 5 readable elements at `param`.
    let p = unsafe { std::slice::from_raw_parts(param, 5) };
    let flag = p[0];
    if n <= 0 || flag + two == R::zero() {
        return;
    }
    let (h11, h21, h12, h22) = if flag < R::zero() {
        (p[1], p[2], p[3], p[4])
    } else if flag == R::zero() {
        (one, p[2], p[3], one)
    } else {
        (p[1], -one, one, p[4])
    };
    let n = n as usize;
    let (incx, incy) = (incx as isize, incy as isize);
    // SAFETY: the caller's contract (module Safety section).
    let x = unsafe { slice_mut(x, vec_len(n, incx)) };
    // SAFETY: as above; `y` does not overlap `x`.
    let y = unsafe { slice_mut(y, vec_len(n, incy)) };
    let (sx, sy) = (Stride::new(n, incx), Stride::new(n, incy));
    for i in 0..n {
        let (w, z) = (x[sx.at(i)], y[sy.at(i)]);
        x[sx.at(i)] = w * h11 + z * h12;
        y[sy.at(i)] = w * h21 + z * h22;
    }
}

/// ROTMG: constructs the modified Givens transformation `H` that zeroes the second component of
/// `(sqrt(d1)*x1, sqrt(d2)*y1)`; updates `d1`, `d2`, `x1` and writes `param` (flag, h11, h21,
/// h12, h22; the entries the flag implies are left as they were), rescaling by 4096 to keep `d1`
/// and `d2` within `[4096^-2, 4096^2]`, as the reference does.
///
/// One deliberate difference: the reference's rescaling loops set h21 = -1 and h12 = 1 on every
/// pass whose flag is not 0, also when H is already explicit (a second pass, or the d2 loop after
/// the d1 loop), which discards the scaled entries; here H is made explicit once, so H stays the
/// transformation whenever more than one rescaling is needed. With a single rescaling (all the
/// reference's test cases) the results are the same.
pub fn rotmg<R: Real>(d1: &mut R, d2: &mut R, x1: &mut R, y1: R, param: &mut [R; 5]) {
    let (zero, one) = (R::zero(), R::one());
    let gam = R::from_f64(4096.0);
    let gamsq = R::from_f64(16_777_216.0);
    let rgamsq = R::from_f64(5.960_464_5e-8);
    let (mut h11, mut h12, mut h21, mut h22) = (zero, zero, zero, zero);
    let mut flag;
    let zero_all = |d1: &mut R, d2: &mut R, x1: &mut R| {
        *d1 = zero;
        *d2 = zero;
        *x1 = zero;
    };
    if *d1 < zero {
        flag = -one;
        zero_all(d1, d2, x1);
    } else {
        let p2 = *d2 * y1;
        if p2 == zero {
            param[0] = -(one + one);
            return;
        }
        let p1 = *d1 * *x1;
        let q2 = p2 * y1;
        let q1 = p1 * *x1;
        if q1.abs() > q2.abs() {
            h21 = -y1 / *x1;
            h12 = p2 / p1;
            let u = one - h12 * h21;
            if u > zero {
                flag = zero;
                *d1 /= u;
                *d2 /= u;
                *x1 *= u;
            } else {
                // Only reachable through rounding in edge cases (the reference keeps it too).
                flag = -one;
                (h11, h12, h21, h22) = (zero, zero, zero, zero);
                zero_all(d1, d2, x1);
            }
        } else if q2 < zero {
            flag = -one;
            (h11, h12, h21, h22) = (zero, zero, zero, zero);
            zero_all(d1, d2, x1);
        } else {
            flag = one;
            h11 = p1 / p2;
            h22 = *x1 / y1;
            let u = one + h11 * h22;
            let temp = *d2 / u;
            *d2 = *d1 / u;
            *d1 = temp;
            *x1 = y1 * u;
        }
        // Make H explicit (flag -1) before it is first rescaled; an explicit H is kept.
        let explicit = |flag: &mut R, h11: &mut R, h12: &mut R, h21: &mut R, h22: &mut R| {
            if *flag == zero {
                *h11 = one;
                *h22 = one;
            } else if *flag > zero {
                *h21 = -one;
                *h12 = one;
            }
            *flag = -one;
        };
        if *d1 != zero {
            while *d1 <= rgamsq || *d1 >= gamsq {
                explicit(&mut flag, &mut h11, &mut h12, &mut h21, &mut h22);
                if *d1 <= rgamsq {
                    *d1 *= gam * gam;
                    *x1 /= gam;
                    h11 /= gam;
                    h12 /= gam;
                } else {
                    *d1 /= gam * gam;
                    *x1 *= gam;
                    h11 *= gam;
                    h12 *= gam;
                }
            }
        }
        if *d2 != zero {
            while d2.abs() <= rgamsq || d2.abs() >= gamsq {
                explicit(&mut flag, &mut h11, &mut h12, &mut h21, &mut h22);
                if d2.abs() <= rgamsq {
                    *d2 *= gam * gam;
                    h21 /= gam;
                    h22 /= gam;
                } else {
                    *d2 /= gam * gam;
                    h21 *= gam;
                    h22 *= gam;
                }
            }
        }
    }
    if flag < zero {
        param[1] = h11;
        param[2] = h21;
        param[3] = h12;
        param[4] = h22;
    } else if flag == zero {
        param[2] = h21;
        param[3] = h12;
    } else {
        param[1] = h11;
        param[4] = h22;
    }
    param[0] = flag;
}
