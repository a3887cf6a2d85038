//! The scalar types the routines are generic over: f32, f64, Complex32, Complex64.

use std::fmt::Debug;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

use num_complex::{Complex, Complex64};

/// A BLAS element type: a real (`f32`, `f64`) or a complex (`Complex32`, `Complex64`) number.
pub trait Scalar:
    Copy
    + Send
    + Sync
    + Debug
    + PartialEq
    + Default
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
{
    /// The real type of the same precision.
    type Real: Real;
    /// Whether the type is complex (decides which `trans` characters SYRK/SYR2K accept).
    const IS_COMPLEX: bool;
    /// 0.
    fn zero() -> Self;
    /// 1.
    fn one() -> Self;
    /// The real number `r` as this type.
    fn from_real(r: Self::Real) -> Self;
    /// The real part.
    fn re(self) -> Self::Real;
    /// The imaginary part (0 for a real type).
    fn im(self) -> Self::Real;
    /// The complex conjugate (the value itself for a real type).
    fn conj(self) -> Self;
    /// `|re| + |im|`: the reference BLAS's CABS1 (`|x|` for a real type).
    fn abs1(self) -> Self::Real;
    /// `self * r` for a real `r`.
    fn mul_real(self, r: Self::Real) -> Self;
    /// The value widened to `Complex64` (tests and f64 references use it).
    fn to_c64(self) -> Complex64;
    /// The value rounded from `Complex64` (the imaginary part is dropped for a real type).
    fn from_c64(z: Complex64) -> Self;
    /// Whether the value is exactly zero.
    fn is_zero(self) -> bool {
        self == Self::zero()
    }
}

/// A real BLAS element type: `f32` or `f64`.
pub trait Real: Scalar<Real = Self> + PartialOrd {
    /// The smallest positive normal number (LAPACK's SAFMIN for these types).
    const SAFMIN: Self;
    /// 1 / SAFMIN.
    const SAFMAX: Self;
    /// Blue's thresholds and scalings for NRM2 (as the reference's nrm2.f90 derives them from
    /// the type's exponent range): values below TSML are scaled up by SSML, values above TBIG
    /// down by SBIG.
    const TSML: Self;
    /// See TSML.
    const TBIG: Self;
    /// See TSML.
    const SSML: Self;
    /// See TSML.
    const SBIG: Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// The absolute value.
    fn abs(self) -> Self;
    /// The larger of the two (the other one when one is NaN).
    fn max(self, other: Self) -> Self;
    /// The smaller of the two (the other one when one is NaN).
    fn min(self, other: Self) -> Self;
    /// `|self|` with the sign of `sign` (Fortran's SIGN).
    fn copysign(self, sign: Self) -> Self;
    /// The value as f64.
    fn to_f64(self) -> f64;
    /// The value rounded from f64.
    fn from_f64(x: f64) -> Self;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
}

macro_rules! real_impl {
    ($t:ty, $tsml:expr, $tbig:expr, $ssml:expr, $sbig:expr) => {
        impl Scalar for $t {
            type Real = $t;
            const IS_COMPLEX: bool = false;
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn from_real(r: Self) -> Self {
                r
            }
            fn re(self) -> Self {
                self
            }
            fn im(self) -> Self {
                0.0
            }
            fn conj(self) -> Self {
                self
            }
            fn abs1(self) -> Self {
                <$t>::abs(self)
            }
            fn mul_real(self, r: Self) -> Self {
                self * r
            }
            fn to_c64(self) -> Complex64 {
                Complex64::new(self as f64, 0.0)
            }
            fn from_c64(z: Complex64) -> Self {
                z.re as $t
            }
        }

        impl Real for $t {
            const SAFMIN: Self = <$t>::MIN_POSITIVE;
            const SAFMAX: Self = 1.0 / <$t>::MIN_POSITIVE;
            const TSML: Self = $tsml;
            const TBIG: Self = $tbig;
            const SSML: Self = $ssml;
            const SBIG: Self = $sbig;
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
            fn min(self, other: Self) -> Self {
                <$t>::min(self, other)
            }
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }

        impl Scalar for Complex<$t> {
            type Real = $t;
            const IS_COMPLEX: bool = true;
            fn zero() -> Self {
                Complex::new(0.0, 0.0)
            }
            fn one() -> Self {
                Complex::new(1.0, 0.0)
            }
            fn from_real(r: $t) -> Self {
                Complex::new(r, 0.0)
            }
            fn re(self) -> $t {
                self.re
            }
            fn im(self) -> $t {
                self.im
            }
            fn conj(self) -> Self {
                Complex::new(self.re, -self.im)
            }
            fn abs1(self) -> $t {
                self.re.abs() + self.im.abs()
            }
            fn mul_real(self, r: $t) -> Self {
                Complex::new(self.re * r, self.im * r)
            }
            fn to_c64(self) -> Complex64 {
                Complex64::new(self.re as f64, self.im as f64)
            }
            fn from_c64(z: Complex64) -> Self {
                Complex::new(z.re as $t, z.im as $t)
            }
        }
    };
}

// tsml = 2^ceil((minexp-1)/2), tbig = 2^floor((maxexp-digits+1)/2),
// ssml = 2^-floor((minexp-digits)/2), sbig = 2^-ceil((maxexp+digits-1)/2), with Fortran's
// MINEXPONENT/MAXEXPONENT/DIGITS: f32 (-125, 128, 24), f64 (-1021, 1024, 53).
real_impl!(
    f32,
    pow2_f32(-63),
    pow2_f32(52),
    pow2_f32(75),
    pow2_f32(-76)
);
real_impl!(
    f64,
    pow2_f64(-511),
    pow2_f64(486),
    pow2_f64(537),
    pow2_f64(-538)
);

/// 2^e as a normal f32 (`-126 <= e <= 127`).
const fn pow2_f32(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// 2^e as a normal f64 (`-1022 <= e <= 1023`).
const fn pow2_f64(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}
