//! Element types. f32 and f64 today; the enum leaves room for complex and half precision, which
//! kernels refuse through `Kernel::supports` until they implement them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The element type of an operand, as the planner and the kernels see it (type-erased).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    F32,
    F64,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// The BLAS prefix letter (s, d).
    pub const fn blas_prefix(self) -> char {
        match self {
            DType::F32 => 's',
            DType::F64 => 'd',
        }
    }

    /// Unit roundoff of the type (half the machine epsilon).
    pub fn unit_roundoff(self) -> f64 {
        match self {
            DType::F32 => f32::EPSILON as f64 / 2.0,
            DType::F64 => f64::EPSILON / 2.0,
        }
    }

    pub const ALL: [DType; 2] = [DType::F32, DType::F64];
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
        })
    }
}

impl std::str::FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "s" | "single" | "float" => Ok(DType::F32),
            "f64" | "d" | "double" => Ok(DType::F64),
            other => Err(format!("unknown dtype {other:?} (expected f32 or f64)")),
        }
    }
}

/// A scalar value of some dtype (alpha, beta), type-erased for kernels behind trait objects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarValue {
    F32(f32),
    F64(f64),
}

impl ScalarValue {
    pub fn dtype(self) -> DType {
        match self {
            ScalarValue::F32(_) => DType::F32,
            ScalarValue::F64(_) => DType::F64,
        }
    }
    pub fn is_zero(self) -> bool {
        match self {
            ScalarValue::F32(v) => v == 0.0,
            ScalarValue::F64(v) => v == 0.0,
        }
    }
    pub fn is_one(self) -> bool {
        match self {
            ScalarValue::F32(v) => v == 1.0,
            ScalarValue::F64(v) => v == 1.0,
        }
    }
    pub fn as_f64(self) -> f64 {
        match self {
            ScalarValue::F32(v) => v as f64,
            ScalarValue::F64(v) => v,
        }
    }
    /// The value `v` in dtype `dtype`.
    pub fn of(dtype: DType, v: f64) -> Self {
        match dtype {
            DType::F32 => ScalarValue::F32(v as f32),
            DType::F64 => ScalarValue::F64(v),
        }
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
}

/// A BLAS element type usable in host views and device matrices.
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
    + 'static
{
    const DTYPE: DType;
    fn to_value(self) -> ScalarValue;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

impl Scalar for f32 {
    const DTYPE: DType = DType::F32;
    fn to_value(self) -> ScalarValue {
        ScalarValue::F32(self)
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Scalar for f64 {
    const DTYPE: DType = DType::F64;
    fn to_value(self) -> ScalarValue {
        ScalarValue::F64(self)
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}
