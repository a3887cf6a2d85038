//! Test helpers: random operands with padding, an f64 / Complex64 reference arithmetic, and
//! comparisons with per-type error bounds.
#![allow(dead_code)] // reason: each test file uses a different subset of the helpers

use hetblas_refblas::num_complex::{Complex32, Complex64};
use hetblas_refblas::Scalar;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

pub type C64 = Complex64;

/// A value no routine computes: padding of outputs is filled with it and must survive.
pub const SENTINEL: f64 = 777.0;

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Unit roundoff of T's precision.
pub fn eps<T: Scalar>() -> f64 {
    if std::mem::size_of::<T::Real>() == 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

pub fn c<T: Scalar>(x: T) -> C64 {
    x.to_c64()
}

/// A random value with real and imaginary parts in (-1, 1) (imaginary dropped for real T).
pub fn rand_scalar<T: Scalar>(rng: &mut StdRng) -> T {
    T::from_c64(C64::new(
        rng.random_range(-1.0..1.0),
        rng.random_range(-1.0..1.0),
    ))
}

pub fn nan<T: Scalar>() -> T {
    T::from_c64(C64::new(f64::NAN, f64::NAN))
}

pub fn sentinel<T: Scalar>() -> T {
    T::from_c64(C64::new(SENTINEL, -SENTINEL))
}

pub fn is_sentinel<T: Scalar>(x: T) -> bool {
    x == sentinel::<T>()
}

/// The scalars tests use for alpha/beta: 0, 1, and a general value.
pub fn scalars<T: Scalar>() -> [T; 3] {
    [T::zero(), T::one(), T::from_c64(C64::new(0.7, -0.4))]
}

/// The complex conjugate, or the value itself, in the reference arithmetic.
pub fn cj(z: C64, conj: bool) -> C64 {
    if conj {
        z.conj()
    } else {
        z
    }
}

/// A column-major matrix with `ld > rows` (the padding rows hold `pad`).
#[derive(Clone, Debug)]
pub struct Mat<T> {
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
    pub data: Vec<T>,
}

impl<T: Scalar> Mat<T> {
    /// Random entries; padding rows (ld = rows + 2) filled with `pad`.
    pub fn random(rng: &mut StdRng, rows: usize, cols: usize, pad: T) -> Mat<T> {
        let ld = rows.max(1) + 2;
        let mut data = vec![pad; ld * cols.max(1)];
        for j in 0..cols {
            for i in 0..rows {
                data[i + j * ld] = rand_scalar(rng);
            }
        }
        Mat {
            rows,
            cols,
            ld,
            data,
        }
    }

    pub fn get(&self, i: usize, j: usize) -> T {
        self.data[i + j * self.ld]
    }

    pub fn set(&mut self, i: usize, j: usize, v: T) {
        self.data[i + j * self.ld] = v;
    }

    pub fn cget(&self, i: usize, j: usize) -> C64 {
        self.get(i, j).to_c64()
    }

    /// Every entry (not the padding) set to `v`.
    pub fn fill(&mut self, v: T) {
        for j in 0..self.cols {
            for i in 0..self.rows {
                self.set(i, j, v);
            }
        }
    }

    pub fn ld_i64(&self) -> i64 {
        self.ld as i64
    }
}

/// A strided vector: entry i at `start + i*inc`, a negative increment starting from the end;
/// the gaps hold `pad`.
#[derive(Clone, Debug)]
pub struct Vector<T> {
    pub n: usize,
    pub inc: i64,
    pub data: Vec<T>,
}

impl<T: Scalar> Vector<T> {
    pub fn random(rng: &mut StdRng, n: usize, inc: i64, pad: T) -> Vector<T> {
        let len = if n == 0 {
            1
        } else {
            1 + (n - 1) * inc.unsigned_abs() as usize
        };
        let mut v = Vector {
            n,
            inc,
            data: vec![pad; len],
        };
        for i in 0..n {
            let x = rand_scalar(rng);
            v.set(i, x);
        }
        v
    }

    fn at(&self, i: usize) -> usize {
        if self.inc >= 0 {
            i * self.inc as usize
        } else {
            (self.n - 1 - i) * self.inc.unsigned_abs() as usize
        }
    }

    pub fn get(&self, i: usize) -> T {
        self.data[self.at(i)]
    }

    pub fn cget(&self, i: usize) -> C64 {
        self.get(i).to_c64()
    }

    pub fn set(&mut self, i: usize, v: T) {
        let k = self.at(i);
        self.data[k] = v;
    }

    pub fn fill(&mut self, v: T) {
        for i in 0..self.n {
            self.set(i, v);
        }
    }

    /// Whether every gap still holds the sentinel.
    pub fn gaps_untouched(&self) -> bool {
        let step = self.inc.unsigned_abs() as usize;
        self.data
            .iter()
            .enumerate()
            .all(|(k, &x)| (step != 0 && k % step == 0) || is_sentinel(x))
    }
}

/// Asserts `|got - want| <= bound` (and that neither is NaN unless both are).
#[track_caller]
pub fn assert_close(got: C64, want: C64, bound: f64, ctx: &str) {
    let err = (got - want).norm();
    assert!(
        err <= bound,
        "{ctx}: got {got}, want {want}, error {err:e} > bound {bound:e}"
    );
}

/// The error bound of a sum of `terms` products of values of magnitude <= `size`, in T.
pub fn bound<T: Scalar>(terms: usize, size: f64) -> f64 {
    eps::<T>() * 8.0 * (terms as f64 + 2.0) * size.max(1.0)
}

/// Asserts the padding rows of an output matrix hold the sentinel.
#[track_caller]
pub fn assert_padding<T: Scalar>(m: &Mat<T>, ctx: &str) {
    for j in 0..m.cols {
        for i in m.rows..m.ld {
            assert!(
                is_sentinel(m.get(i, j)),
                "{ctx}: padding ({i}, {j}) overwritten"
            );
        }
    }
}

/// Runs `f` for each of the four scalar types.
#[macro_export]
macro_rules! for_each_type {
    ($f:ident) => {{
        $f::<f32>();
        $f::<f64>();
        $f::<hetblas_refblas::num_complex::Complex32>();
        $f::<hetblas_refblas::num_complex::Complex64>();
    }};
}

pub fn type_name<T: Scalar>() -> &'static str {
    let name = std::any::type_name::<T>();
    if name.contains("f32") && name.contains("Complex") {
        "c32"
    } else if name.contains("Complex") {
        "c64"
    } else if name.contains("f32") {
        "f32"
    } else {
        "f64"
    }
}

/// Silences the unused import of Complex32 in files that use only part of this module.
pub type Unused = Complex32;
