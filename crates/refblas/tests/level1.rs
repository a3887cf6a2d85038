//! Level 1 routines against an f64 / Complex64 reference, for every type, with negative and
//! zero increments and the reference's quick returns.

mod common;

use common::*;
use hetblas_refblas as rb;
use hetblas_refblas::num_complex::Complex;
use hetblas_refblas::{Real, Scalar};

const NS: [usize; 4] = [0, 1, 5, 13];
const INCS: [(i64, i64); 4] = [(1, 1), (2, -1), (-3, 2), (-1, -2)];

fn vector_ops_case<T: Scalar>() {
    let mut rng = rng(11);
    for n in NS {
        for (incx, incy) in INCS {
            let ctx = format!("{} n={n} incs={incx},{incy}", type_name::<T>());
            let ni = n as i64;
            for alpha in scalars::<T>() {
                // AXPY: alpha == 0 reads nothing.
                let mut x = Vector::<T>::random(&mut rng, n, incx, nan());
                if alpha.is_zero() {
                    x.fill(nan());
                }
                let mut y = Vector::<T>::random(&mut rng, n, incy, sentinel());
                let y0 = y.clone();
                // SAFETY: x and y hold n entries at their increments.
                unsafe { rb::axpy(ni, alpha, x.data.as_ptr(), incx, y.data.as_mut_ptr(), incy) };
                for i in 0..n {
                    let want = if alpha.is_zero() {
                        y0.cget(i)
                    } else {
                        c(alpha) * x.cget(i) + y0.cget(i)
                    };
                    assert_close(y.cget(i), want, bound::<T>(1, 1.0), &format!("axpy {ctx}"));
                }
                assert!(y.gaps_untouched(), "axpy {ctx}");

                // SCAL and RSCAL: nothing happens for incx <= 0.
                let mut x = Vector::<T>::random(&mut rng, n, incx, sentinel());
                let x0 = x.clone();
                // SAFETY: x holds n entries at its increment.
                unsafe { rb::scal(ni, alpha, x.data.as_mut_ptr(), incx) };
                let ar = alpha.re();
                let mut xr = x0.clone();
                // SAFETY: as above.
                unsafe { rb::rscal(ni, ar, xr.data.as_mut_ptr(), incx) };
                for i in 0..n {
                    let (want, wantr) = if incx <= 0 {
                        (x0.cget(i), x0.cget(i))
                    } else {
                        (c(alpha) * x0.cget(i), x0.cget(i) * ar.to_c64().re)
                    };
                    assert_close(x.cget(i), want, bound::<T>(1, 1.0), &format!("scal {ctx}"));
                    assert_close(
                        xr.cget(i),
                        wantr,
                        bound::<T>(1, 1.0),
                        &format!("rscal {ctx}"),
                    );
                }
                assert!(x.gaps_untouched() && xr.gaps_untouched(), "scal {ctx}");
            }

            // COPY and SWAP.
            let x: Vector<T> = Vector::<T>::random(&mut rng, n, incx, sentinel());
            let mut y = Vector::<T>::random(&mut rng, n, incy, sentinel());
            // SAFETY: x and y hold n entries at their increments.
            unsafe { rb::copy(ni, x.data.as_ptr(), incx, y.data.as_mut_ptr(), incy) };
            for i in 0..n {
                assert_eq!(y.get(i), x.get(i), "copy {ctx}");
            }
            assert!(y.gaps_untouched(), "copy {ctx}");
            let (mut x, mut y) = (
                Vector::<T>::random(&mut rng, n, incx, sentinel()),
                Vector::<T>::random(&mut rng, n, incy, sentinel()),
            );
            let (x0, y0) = (x.clone(), y.clone());
            // SAFETY: as above.
            unsafe { rb::swap(ni, x.data.as_mut_ptr(), incx, y.data.as_mut_ptr(), incy) };
            for i in 0..n {
                assert_eq!((x.get(i), y.get(i)), (y0.get(i), x0.get(i)), "swap {ctx}");
            }
            assert!(x.gaps_untouched() && y.gaps_untouched(), "swap {ctx}");

            // DOTU, DOTC.
            let x = Vector::<T>::random(&mut rng, n, incx, nan());
            let y = Vector::<T>::random(&mut rng, n, incy, nan());
            // SAFETY: as above.
            let (du, dc) = unsafe {
                (
                    rb::dotu(ni, x.data.as_ptr(), incx, y.data.as_ptr(), incy),
                    rb::dotc(ni, x.data.as_ptr(), incx, y.data.as_ptr(), incy),
                )
            };
            let want_u: C64 = (0..n).map(|i| x.cget(i) * y.cget(i)).sum();
            let want_c: C64 = (0..n).map(|i| x.cget(i).conj() * y.cget(i)).sum();
            assert_close(
                c(du),
                want_u,
                bound::<T>(n, n as f64),
                &format!("dotu {ctx}"),
            );
            assert_close(
                c(dc),
                want_c,
                bound::<T>(n, n as f64),
                &format!("dotc {ctx}"),
            );

            // NRM2, ASUM, IAMAX: incx <= 0 rules.
            let x: Vector<T> = Vector::<T>::random(&mut rng, n, incx, nan());
            // SAFETY: x holds n entries at its increment.
            let (nrm, asum, imax) = unsafe {
                (
                    rb::nrm2(ni, x.data.as_ptr(), incx),
                    rb::asum(ni, x.data.as_ptr(), incx),
                    rb::iamax(ni, x.data.as_ptr(), incx),
                )
            };
            let want_nrm = (0..n).map(|i| x.cget(i).norm_sqr()).sum::<f64>().sqrt();
            let want_asum: f64 = if incx <= 0 {
                0.0
            } else {
                (0..n).map(|i| x.cget(i).l1_norm()).sum()
            };
            assert_close(
                nrm.to_c64(),
                C64::new(want_nrm, 0.0),
                bound::<T>(2 * n, 1.0),
                &format!("nrm2 {ctx}"),
            );
            assert_close(
                asum.to_c64(),
                C64::new(want_asum, 0.0),
                bound::<T>(2 * n, n as f64),
                &format!("asum {ctx}"),
            );
            let want_imax = if n == 0 || incx <= 0 {
                0
            } else {
                // The first index of the largest |re| + |im| (as computed in T).
                let mut best = 0;
                for i in 1..n {
                    if x.get(i).abs1() > x.get(best).abs1() {
                        best = i;
                    }
                }
                best as i64 + 1
            };
            assert_eq!(imax, want_imax, "iamax {ctx}");
        }
    }
}

#[test]
fn vector_ops_every_type_and_increment() {
    for_each_type!(vector_ops_case);
}

#[test]
fn zero_increments_follow_the_reference() {
    let x = [3.0f64, -4.0, 100.0];
    let mut y = [1.0f64, 2.0, 3.0];
    // SAFETY: incx == 0 reads x[0] only; y holds 3 entries.
    unsafe { rb::axpy(3, 2.0, x.as_ptr(), 0, y.as_mut_ptr(), 1) };
    assert_eq!(y, [7.0, 8.0, 9.0]);
    // SAFETY: incx == 0 reads x[0] only.
    unsafe {
        // The current reference's nrm2.f90 reads x_1 n times; ASUM, IAMAX, SCAL return at once.
        assert_eq!(rb::nrm2(4, x.as_ptr(), 0), 6.0);
        assert_eq!(rb::asum(3, x.as_ptr(), 0), 0.0);
        assert_eq!(rb::iamax(3, x.as_ptr(), 0), 0);
        assert_eq!(rb::iamax(3, x.as_ptr(), -1), 0);
        assert_eq!(rb::iamax(0, x.as_ptr(), 1), 0);
        assert_eq!(rb::iamax(3, x.as_ptr(), 1), 3);
        assert_eq!(rb::nrm2(-1, x.as_ptr(), 1), 0.0);
    }
    let mut z = [1.0f32, 2.0];
    // SAFETY: incx <= 0: nothing is read or written.
    unsafe { rb::scal(2, 5.0, z.as_mut_ptr(), -1) };
    assert_eq!(z, [1.0, 2.0]);
    // A tie goes to the first; complex entries compare by |re| + |im|.
    let w = [
        Complex::new(1.0f64, -1.5),
        Complex::new(-3.0, 0.0),
        Complex::new(0.5, 2.5),
        Complex::new(2.9, 0.0),
    ];
    // SAFETY: w holds 4 entries.
    assert_eq!(unsafe { rb::iamax(4, w.as_ptr(), 1) }, 2);
    assert_eq!(rb::cabs1(Complex::new(-1.5f32, 2.0)), 3.5);
    assert_eq!(rb::cabs1(-2.0f64), 2.0);
}

#[test]
fn mixed_precision_dots() {
    let mut rng = rng(12);
    for (n, incx, incy) in [(0, 1, 1), (7, 1, 1), (9, -2, 3)] {
        let x = Vector::<f32>::random(&mut rng, n, incx, f32::NAN);
        let y = Vector::<f32>::random(&mut rng, n, incy, f32::NAN);
        let exact: f64 = (0..n).map(|i| x.get(i) as f64 * y.get(i) as f64).sum();
        // SAFETY: x and y hold n entries at their increments.
        let (d, s, plain) = unsafe {
            (
                rb::dsdot(n as i64, x.data.as_ptr(), incx, y.data.as_ptr(), incy),
                rb::sdsdot(n as i64, 0.25, x.data.as_ptr(), incx, y.data.as_ptr(), incy),
                rb::dot(n as i64, x.data.as_ptr(), incx, y.data.as_ptr(), incy),
            )
        };
        // Products of f32 are exact in f64: DSDOT differs from the exact sum by f64 rounding.
        assert!((d - exact).abs() <= 1e-14 * (n as f64 + 1.0), "dsdot n={n}");
        let sum_from_sb = (0..n).fold(0.25f64, |acc, i| acc + x.get(i) as f64 * y.get(i) as f64);
        assert_eq!(s, sum_from_sb as f32, "sdsdot n={n}");
        assert!(
            (plain as f64 - exact).abs() <= 1e-5 * (n as f64 + 1.0),
            "sdot n={n}"
        );
        // DDOT on the same values widened: exact products, f64 rounding of the sum.
        let xd: Vec<f64> = x.data.iter().map(|&v| v as f64).collect();
        let yd: Vec<f64> = y.data.iter().map(|&v| v as f64).collect();
        // SAFETY: the widened copies have the layout of x and y.
        let ddot = unsafe { rb::dot(n as i64, xd.as_ptr(), incx, yd.as_ptr(), incy) };
        assert!(
            (ddot - exact).abs() <= 1e-14 * (n as f64 + 1.0),
            "ddot n={n}"
        );
    }
}

#[test]
fn nrm2_neither_overflows_nor_underflows() {
    let big = [3e300f64, 4e300];
    let tiny = [3e-300f64, 4e-300];
    let mixed = [3e300f64, 1.0, 4e300];
    let bigf = [3e30f32, 4e30];
    let cbig = [Complex::new(3e300f64, 4e300)];
    let infs = [f64::INFINITY, 1.0, f64::INFINITY];
    let nans = [1.0f64, f64::NAN, 2.0];
    // SAFETY: each array holds the n entries passed.
    unsafe {
        assert!((rb::nrm2(2, big.as_ptr(), 1) / 5e300 - 1.0).abs() < 1e-15);
        assert!((rb::nrm2(2, tiny.as_ptr(), 1) / 5e-300 - 1.0).abs() < 1e-15);
        assert!((rb::nrm2(3, mixed.as_ptr(), 1) / 5e300 - 1.0).abs() < 1e-15);
        assert!((rb::nrm2(2, bigf.as_ptr(), 1) / 5e30 - 1.0).abs() < 1e-6);
        assert!((rb::nrm2(1, cbig.as_ptr(), 1) / 5e300 - 1.0).abs() < 1e-15);
        assert_eq!(rb::nrm2(3, infs.as_ptr(), 1), f64::INFINITY);
        assert!(rb::nrm2(3, nans.as_ptr(), 1).is_nan());
        assert!((rb::nrm2(2, big.as_ptr(), -1) / 5e300 - 1.0).abs() < 1e-15);
    }
}

fn rot_case<T: Scalar>() {
    let mut rng = rng(13);
    let (cr, sr) = (T::Real::from_f64(0.6), T::Real::from_f64(0.8));
    for n in NS {
        for (incx, incy) in INCS {
            let ctx = format!("rot {} n={n} incs={incx},{incy}", type_name::<T>());
            let (mut x, mut y): (Vector<T>, Vector<T>) = (
                Vector::<T>::random(&mut rng, n, incx, sentinel()),
                Vector::<T>::random(&mut rng, n, incy, sentinel()),
            );
            let (x0, y0) = (x.clone(), y.clone());
            // SAFETY: x and y hold n entries at their increments.
            unsafe {
                rb::rot(
                    n as i64,
                    x.data.as_mut_ptr(),
                    incx,
                    y.data.as_mut_ptr(),
                    incy,
                    cr,
                    sr,
                )
            };
            for i in 0..n {
                let (xi, yi) = (x0.cget(i), y0.cget(i));
                assert_close(x.cget(i), xi * 0.6 + yi * 0.8, bound::<T>(2, 1.0), &ctx);
                assert_close(y.cget(i), yi * 0.6 - xi * 0.8, bound::<T>(2, 1.0), &ctx);
            }
            assert!(x.gaps_untouched() && y.gaps_untouched(), "{ctx}");
        }
    }
}

#[test]
fn rot_every_type_and_increment() {
    for_each_type!(rot_case);
}

fn rotg_real_case<R: Real>() {
    let f = R::from_f64;
    let e = eps::<R>() * 8.0;
    for (a0, b0) in [
        (0.3, 0.4),
        (-4.0, 3.0),
        (3.0, -4.0),
        (0.0, 2.0),
        (2.0, 0.0),
        (0.0, 0.0),
        (1e30, 2e30),
        (-1e-30, 1e-31),
    ] {
        let ctx = format!("rotg {} a={a0} b={b0}", type_name::<R>());
        let (mut a, mut b, mut cc, mut s) = (f(a0), f(b0), R::zero(), R::zero());
        rb::rotg(&mut a, &mut b, &mut cc, &mut s);
        let (r, z, cc, s) = (a.to_f64(), b.to_f64(), cc.to_f64(), s.to_f64());
        let scale = a0.abs().max(b0.abs()).max(1e-300);
        assert!((cc * a0 + s * b0 - r).abs() <= e * scale, "{ctx}: r");
        assert!((-s * a0 + cc * b0).abs() <= e * scale, "{ctx}: zero");
        if a0 != 0.0 || b0 != 0.0 {
            assert!((cc * cc + s * s - 1.0).abs() <= e, "{ctx}: c^2 + s^2");
        }
        // r has the sign of the larger of a and b; z reconstructs (c, s).
        let roe = if a0.abs() > b0.abs() { a0 } else { b0 };
        if roe != 0.0 {
            assert_eq!(r.signum(), roe.signum(), "{ctx}: sign of r");
        }
        let want_z = if b0 == 0.0 {
            0.0
        } else if a0 == 0.0 {
            1.0
        } else if a0.abs() > b0.abs() {
            s
        } else if cc != 0.0 {
            1.0 / cc
        } else {
            1.0
        };
        assert!(
            (z - want_z).abs() <= e * want_z.abs().max(1.0),
            "{ctx}: z {z} want {want_z}"
        );
    }
}

#[test]
fn rotg_real() {
    rotg_real_case::<f32>();
    rotg_real_case::<f64>();
}

fn rotg_complex_case<R: Real>()
where
    Complex<R>: Scalar<Real = R>,
{
    let e = eps::<R>() * 16.0;
    let big = if std::mem::size_of::<R>() == 4 {
        1e35
    } else {
        1e300
    };
    let small = if std::mem::size_of::<R>() == 4 {
        1e-35
    } else {
        1e-300
    };
    let cases = [
        (C64::new(0.3, -0.2), C64::new(0.4, 0.5)),
        (C64::new(0.0, 0.0), C64::new(0.4, 0.5)),
        (C64::new(0.0, 0.0), C64::new(0.0, -2.0)),
        (C64::new(0.0, 0.0), C64::new(3.0, 0.0)),
        (C64::new(1.0, 2.0), C64::new(0.0, 0.0)),
        (C64::new(big, big), C64::new(big, -big)),
        (C64::new(small, 0.0), C64::new(0.0, small)),
        (C64::new(small, small), C64::new(1.0, 1.0)),
        (C64::new(0.0, 0.0), C64::new(big, big)),
    ];
    for (a0, b0) in cases {
        let ctx = format!("rotg_complex {} a={a0} b={b0}", type_name::<R>());
        let mut a = Complex::<R>::from_c64(a0);
        let b = Complex::<R>::from_c64(b0);
        let (a0, b0) = (c(a), c(b));
        let (mut cc, mut s) = (R::zero(), Complex::<R>::zero());
        rb::rotg_complex(&mut a, b, &mut cc, &mut s);
        let (r, cc, s) = (c(a), cc.to_f64(), c(s));
        let scale = a0.norm().max(b0.norm());
        assert!((a0 * cc + s * b0 - r).norm() <= e * scale, "{ctx}: r = {r}");
        assert!(
            (-s.conj() * a0 + b0 * cc).norm() <= e * scale,
            "{ctx}: zero"
        );
        assert!(
            (cc * cc + s.norm_sqr() - 1.0).abs() <= e,
            "{ctx}: c^2 + |s|^2"
        );
        assert!(cc >= 0.0, "{ctx}: c >= 0");
    }
}

#[test]
fn rotg_complex_both_precisions() {
    rotg_complex_case::<f32>();
    rotg_complex_case::<f64>();
}

/// The matrix H that ROTM applies, from `param`.
fn h_of(p: &[f64; 5]) -> [[f64; 2]; 2] {
    let flag = p[0];
    if flag == -2.0 {
        [[1.0, 0.0], [0.0, 1.0]]
    } else if flag < 0.0 {
        [[p[1], p[3]], [p[2], p[4]]]
    } else if flag == 0.0 {
        [[1.0, p[3]], [p[2], 1.0]]
    } else {
        [[p[1], 1.0], [-1.0, p[4]]]
    }
}

#[test]
fn rotm_every_flag_and_increment() {
    let mut rng = rng(14);
    for flag in [-2.0, -1.0, 0.0, 1.0] {
        let p = [flag, 0.5, -0.25, 1.5, 2.0];
        let h = h_of(&p);
        for (incx, incy) in INCS {
            for n in NS {
                let (mut x, mut y) = (
                    Vector::<f64>::random(&mut rng, n, incx, sentinel()),
                    Vector::<f64>::random(&mut rng, n, incy, sentinel()),
                );
                let (x0, y0) = (x.clone(), y.clone());
                // SAFETY: x and y hold n entries at their increments, p holds 5.
                unsafe {
                    rb::rotm(
                        n as i64,
                        x.data.as_mut_ptr(),
                        incx,
                        y.data.as_mut_ptr(),
                        incy,
                        p.as_ptr(),
                    )
                };
                for i in 0..n {
                    let (w, z) = (x0.get(i), y0.get(i));
                    assert!(
                        (x.get(i) - (h[0][0] * w + h[0][1] * z)).abs() < 1e-14,
                        "rotm flag={flag}"
                    );
                    assert!(
                        (y.get(i) - (h[1][0] * w + h[1][1] * z)).abs() < 1e-14,
                        "rotm flag={flag}"
                    );
                }
                assert!(x.gaps_untouched() && y.gaps_untouched());
            }
        }
    }
    // f32 too, through the same generic code.
    let p = [-1.0f32, 0.5, -0.25, 1.5, 2.0];
    let (mut x, mut y) = ([1.0f32, 2.0], [3.0f32, 4.0]);
    // SAFETY: x and y hold 2 entries, p 5.
    unsafe { rb::rotm(2, x.as_mut_ptr(), 1, y.as_mut_ptr(), 1, p.as_ptr()) };
    assert_eq!((x, y), ([5.0, 7.0], [5.75, 7.5]));
}

#[test]
fn rotmg_zeroes_the_second_component() {
    rotmg_cases::<f64>(1e-12);
    rotmg_cases::<f32>(1e-5);
    rotmg_special_cases();
}

/// The property cases in precision R, checked in f64 with relative tolerance `tol`.
fn rotmg_cases<R: Real>(tol: f64) {
    // (d1, d2, x1, y1), covering flag 0, flag 1, the rescaling loops, d1 < 0 and p2 == 0.
    let cases = [
        (0.5, 0.25, 1.0, 0.3),
        (0.2, 0.9, 0.1, 2.0),
        (1e-9, 1.0, 1.0, 1e-3),
        (1e9, 1.0, 1.0, 1e-3),
        (1.0, 1e9, 1e-3, 1.0),
        (1.0, 1e-9, 2.0, 1.0),
        (4.0, -2.0, 1.0, 1.0),
    ];
    for (d1_0, d2_0, x1_0, y1) in cases {
        let ctx = format!(
            "rotmg {} d1={d1_0} d2={d2_0} x1={x1_0} y1={y1}",
            type_name::<R>()
        );
        let f = R::from_f64;
        // The inputs as R holds them.
        let (d1_0, d2_0, x1_0, y1) = (
            f(d1_0).to_f64(),
            f(d2_0).to_f64(),
            f(x1_0).to_f64(),
            f(y1).to_f64(),
        );
        let (mut d1r, mut d2r, mut x1r) = (f(d1_0), f(d2_0), f(x1_0));
        let mut pr = [f(9.0); 5];
        rb::rotmg(&mut d1r, &mut d2r, &mut x1r, f(y1), &mut pr);
        let (d1, d2, x1) = (d1r.to_f64(), d2r.to_f64(), x1r.to_f64());
        let p = pr.map(|v| v.to_f64());
        let h = h_of(&p);
        // H (x1, y1) = (x1', 0).
        let hx = h[0][0] * x1_0 + h[0][1] * y1;
        let hy = h[1][0] * x1_0 + h[1][1] * y1;
        assert!(
            hy.abs() <= tol * x1_0.abs().max(y1.abs()),
            "{ctx}: second component {hy}"
        );
        assert!((hx - x1).abs() <= tol * x1.abs(), "{ctx}: x1 {x1} vs {hx}");
        // H^T D' H = D: the scaled rotation is orthogonal.
        for (r, cc) in [(0, 0), (0, 1), (1, 1)] {
            let v = h[0][r] * d1 * h[0][cc] + h[1][r] * d2 * h[1][cc];
            let want = if r != cc {
                0.0
            } else if r == 0 {
                d1_0
            } else {
                d2_0
            };
            assert!(
                (v - want).abs() <= tol * d1_0.max(d2_0),
                "{ctx}: (H^T D' H)({r},{cc}) = {v}"
            );
        }
        // d1 and d2 are within the reference's scaling window afterwards.
        for d in [d1, d2] {
            assert!(
                d == 0.0 || (5.9e-8..=1.68e7).contains(&d.abs()),
                "{ctx}: d = {d} not rescaled"
            );
        }
    }
}

fn rotmg_special_cases() {
    // d1 < 0: everything zeroed, flag -1.
    let (mut d1, mut d2, mut x1) = (-1.0f64, 2.0, 3.0);
    let mut p = [9.0; 5];
    rb::rotmg(&mut d1, &mut d2, &mut x1, 1.0, &mut p);
    assert_eq!((d1, d2, x1, p), (0.0, 0.0, 0.0, [-1.0, 0.0, 0.0, 0.0, 0.0]));
    // d2*y1 == 0: flag -2, the rest untouched.
    let (mut d1, mut d2, mut x1) = (1.0f32, 0.0, 3.0);
    let mut p = [9.0f32; 5];
    rb::rotmg(&mut d1, &mut d2, &mut x1, 1.0, &mut p);
    assert_eq!((d1, d2, x1, p), (1.0, 0.0, 3.0, [-2.0, 9.0, 9.0, 9.0, 9.0]));
}
