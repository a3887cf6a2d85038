//! Element types: f32, f64 and the complex `c32` / `c64` (num-complex's `Complex32` /
//! `Complex64`). Everything dtype-specific the pipeline needs is a method of [`DType`].

use serde::{Deserialize, Serialize};
use std::fmt;

pub use num_complex::{Complex32, Complex64};

/// Single-precision complex, as BLAS's `c` routines take it (two f32, real part first).
#[allow(non_camel_case_types)] // the BLAS name of the type, as the gemm crate spells it too
pub type c32 = Complex32;
/// Double-precision complex, as BLAS's `z` routines take it (two f64, real part first).
#[allow(non_camel_case_types)] // as above
pub type c64 = Complex64;

/// The element type of an operand, as the planner and the kernels see it (type-erased).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    F32,
    F64,
    C32,
    C64,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 | DType::C32 => 8,
            DType::C64 => 16,
        }
    }

    /// The BLAS prefix letter (s, d, c, z).
    pub const fn blas_prefix(self) -> char {
        match self {
            DType::F32 => 's',
            DType::F64 => 'd',
            DType::C32 => 'c',
            DType::C64 => 'z',
        }
    }

    /// Whether the type is complex (then `Trans::C` conjugates).
    pub const fn is_complex(self) -> bool {
        matches!(self, DType::C32 | DType::C64)
    }

    /// The real type of the same precision (itself for a real type).
    pub const fn real(self) -> DType {
        match self {
            DType::F32 | DType::C32 => DType::F32,
            DType::F64 | DType::C64 => DType::F64,
        }
    }

    /// Real flops of one multiply-add: 2, or 8 for a complex one (4 multiplies, 4 adds).
    pub const fn flops_per_fma(self) -> f64 {
        if self.is_complex() {
            8.0
        } else {
            2.0
        }
    }

    /// Real flops of an `m x n x k` GEMM in this type.
    pub fn gemm_flops(self, m: usize, n: usize, k: usize) -> f64 {
        self.flops_per_fma() * m as f64 * n as f64 * k as f64
    }

    /// Unit roundoff of the type (half the machine epsilon of its real parts).
    pub fn unit_roundoff(self) -> f64 {
        match self.real() {
            DType::F32 => f32::EPSILON as f64 / 2.0,
            _ => f64::EPSILON / 2.0,
        }
    }

    pub const ALL: [DType; 4] = [DType::F32, DType::F64, DType::C32, DType::C64];
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C32 => "c32",
            DType::C64 => "c64",
        })
    }
}

impl std::str::FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "s" | "single" | "float" => Ok(DType::F32),
            "f64" | "d" | "double" => Ok(DType::F64),
            "c32" | "c" | "complex" | "complex32" => Ok(DType::C32),
            "c64" | "z" | "complex64" => Ok(DType::C64),
            other => Err(format!(
                "unknown dtype {other:?} (expected f32, f64, c32 or c64)"
            )),
        }
    }
}

/// A scalar value of some dtype (alpha, beta), type-erased for kernels behind trait objects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarValue {
    F32(f32),
    F64(f64),
    C32(c32),
    C64(c64),
}

impl ScalarValue {
    pub fn dtype(self) -> DType {
        match self {
            ScalarValue::F32(_) => DType::F32,
            ScalarValue::F64(_) => DType::F64,
            ScalarValue::C32(_) => DType::C32,
            ScalarValue::C64(_) => DType::C64,
        }
    }
    pub fn is_zero(self) -> bool {
        self.as_c64() == c64::new(0.0, 0.0)
    }
    /// The value widened to `c64` (exact for every dtype).
    pub fn as_c64(self) -> c64 {
        match self {
            ScalarValue::F32(v) => c64::new(v as f64, 0.0),
            ScalarValue::F64(v) => c64::new(v, 0.0),
            ScalarValue::C32(v) => c64::new(v.re as f64, v.im as f64),
            ScalarValue::C64(v) => v,
        }
    }
    /// The real part, widened to f64.
    pub fn as_f64(self) -> f64 {
        self.as_c64().re
    }
    /// The value `v` in dtype `dtype` (the imaginary part dropped for a real dtype).
    pub fn of_c64(dtype: DType, v: c64) -> Self {
        match dtype {
            DType::F32 => ScalarValue::F32(v.re as f32),
            DType::F64 => ScalarValue::F64(v.re),
            DType::C32 => ScalarValue::C32(c32::new(v.re as f32, v.im as f32)),
            DType::C64 => ScalarValue::C64(v),
        }
    }
    /// The real value `v` in dtype `dtype`.
    pub fn of(dtype: DType, v: f64) -> Self {
        Self::of_c64(dtype, c64::new(v, 0.0))
    }
    pub fn zero(dtype: DType) -> Self {
        Self::of(dtype, 0.0)
    }
    pub fn one(dtype: DType) -> Self {
        Self::of(dtype, 1.0)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for super::c32 {}
    impl Sealed for super::c64 {}
}

/// A BLAS element type usable in host views and device matrices: f32, f64, [`c32`], [`c64`].
pub trait Scalar:
    sealed::Sealed
    + Copy
    + Send
    + Sync
    + PartialEq
    + fmt::Debug
    + fmt::Display
    + Default
    + std::ops::Mul<Output = Self>
    + std::ops::Add<Output = Self>
    + 'static
{
    const DTYPE: DType;
    fn to_value(self) -> ScalarValue;
    /// The real part, widened to f64.
    fn to_f64(self) -> f64 {
        self.to_c64().re
    }
    /// The real number `v` in this type.
    fn from_f64(v: f64) -> Self {
        Self::from_c64(c64::new(v, 0.0))
    }
    /// The value widened to `c64` (exact).
    fn to_c64(self) -> c64;
    /// The value rounded from `c64` (the imaginary part dropped for a real type).
    fn from_c64(v: c64) -> Self;
    /// The complex conjugate (the value itself for a real type).
    fn conj(self) -> Self {
        self
    }
    /// Whether the value is NaN (either part, for a complex type).
    fn is_nan(self) -> bool {
        self.to_c64().is_nan()
    }
}

impl Scalar for f32 {
    const DTYPE: DType = DType::F32;
    fn to_value(self) -> ScalarValue {
        ScalarValue::F32(self)
    }
    fn to_c64(self) -> c64 {
        c64::new(self as f64, 0.0)
    }
    fn from_c64(v: c64) -> Self {
        v.re as f32
    }
}

impl Scalar for f64 {
    const DTYPE: DType = DType::F64;
    fn to_value(self) -> ScalarValue {
        ScalarValue::F64(self)
    }
    fn to_c64(self) -> c64 {
        c64::new(self, 0.0)
    }
    fn from_c64(v: c64) -> Self {
        v.re
    }
}

impl Scalar for c32 {
    const DTYPE: DType = DType::C32;
    fn to_value(self) -> ScalarValue {
        ScalarValue::C32(self)
    }
    fn to_c64(self) -> c64 {
        c64::new(self.re as f64, self.im as f64)
    }
    fn from_c64(v: c64) -> Self {
        c32::new(v.re as f32, v.im as f32)
    }
    fn conj(self) -> Self {
        num_complex::Complex::conj(&self)
    }
}

impl Scalar for c64 {
    const DTYPE: DType = DType::C64;
    fn to_value(self) -> ScalarValue {
        ScalarValue::C64(self)
    }
    fn to_c64(self) -> c64 {
        self
    }
    fn from_c64(v: c64) -> Self {
        v
    }
    fn conj(self) -> Self {
        num_complex::Complex::conj(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_properties() {
        assert_eq!(
            DType::ALL.map(DType::size),
            [4, 8, 8, 16],
            "complex elements are two reals"
        );
        assert_eq!(DType::ALL.map(DType::blas_prefix), ['s', 'd', 'c', 'z']);
        assert_eq!(DType::C64.gemm_flops(2, 3, 4), 8.0 * 24.0);
        assert_eq!(DType::F64.gemm_flops(2, 3, 4), 2.0 * 24.0);
        assert_eq!(DType::C32.unit_roundoff(), DType::F32.unit_roundoff());
        for d in DType::ALL {
            assert_eq!(d.to_string().parse::<DType>(), Ok(d));
        }
        assert_eq!("z".parse::<DType>(), Ok(DType::C64));
    }

    #[test]
    fn values_round_trip() {
        let z = c64::new(1.5, -2.0);
        assert_eq!(ScalarValue::of_c64(DType::C64, z), ScalarValue::C64(z));
        assert_eq!(ScalarValue::of_c64(DType::C32, z).as_c64(), z);
        assert_eq!(ScalarValue::of_c64(DType::F64, z), ScalarValue::F64(1.5));
        assert_eq!(ScalarValue::one(DType::C32).as_c64(), c64::new(1.0, 0.0));
        assert!(!ScalarValue::C64(c64::new(0.0, 1.0)).is_zero());
        assert_eq!(Scalar::conj(z), c64::new(1.5, 2.0));
        assert_eq!(<c32 as Scalar>::from_c64(z).to_c64(), z);
        assert!(c32::new(0.0, f32::NAN).is_nan());
    }
}
