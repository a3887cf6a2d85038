//! The element and integer types as the fuzzer needs them, its seeded generator, and the
//! random arguments of one call.

use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use std::ffi::c_int;

/// Seeded xorshift: the same seed gives the same cases on every machine.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    /// A matrix or vector entry: magnitude in [0.5, 1), random sign (never zero, so every
    /// entry read shows in the result, and a triangular solve's growth stays below 3 per row).
    pub fn entry(&mut self) -> f64 {
        let m = 0.5 + (self.next() >> 11) as f64 / (1u64 << 54) as f64;
        if self.next() & 1 == 0 {
            m
        } else {
            -m
        }
    }
}

/// The four element types.
pub trait El: Copy + PartialEq + std::fmt::Debug + 'static {
    /// The symbol prefix ('s', 'd', 'c', 'z').
    const P: char;
    const EPS: f64;
    /// The real type of the precision.
    type Re: Copy + std::fmt::Debug + Into<f64> + 'static;
    /// How CBLAS passes alpha and beta: by value (real), by address (complex).
    type Arg: Copy;
    fn make(re: f64, im: f64) -> Self;
    fn re(x: f64) -> Self::Re;
    fn c(self) -> C64;
    fn same_bits(self, o: Self) -> bool;
    fn arg(x: &Self) -> Self::Arg;
    /// The value a CBLAS scalar argument passes.
    ///
    /// # Safety
    /// For a complex type, `a` points to a valid value.
    unsafe fn from_arg(a: Self::Arg) -> Self;
}

macro_rules! real_el {
    ($T:ty, $p:literal) => {
        impl El for $T {
            const P: char = $p;
            const EPS: f64 = <$T>::EPSILON as f64;
            type Re = $T;
            type Arg = $T;
            fn make(re: f64, _im: f64) -> Self {
                re as $T
            }
            fn re(x: f64) -> $T {
                x as $T
            }
            fn c(self) -> C64 {
                C64::new(self as f64, 0.0)
            }
            fn same_bits(self, o: Self) -> bool {
                self.to_bits() == o.to_bits()
            }
            fn arg(x: &Self) -> $T {
                *x
            }
            unsafe fn from_arg(a: $T) -> $T {
                a
            }
        }
    };
}
macro_rules! complex_el {
    ($T:ty, $R:ty, $p:literal) => {
        impl El for $T {
            const P: char = $p;
            const EPS: f64 = <$R>::EPSILON as f64;
            type Re = $R;
            type Arg = *const $T;
            fn make(re: f64, im: f64) -> Self {
                <$T>::new(re as $R, im as $R)
            }
            fn re(x: f64) -> $R {
                x as $R
            }
            fn c(self) -> C64 {
                C64::new(self.re as f64, self.im as f64)
            }
            fn same_bits(self, o: Self) -> bool {
                self.re.to_bits() == o.re.to_bits() && self.im.to_bits() == o.im.to_bits()
            }
            fn arg(x: &Self) -> *const $T {
                x
            }
            unsafe fn from_arg(a: *const $T) -> $T {
                // SAFETY: the caller's: `a` points to a valid value.
                unsafe { *a }
            }
        }
    };
}
real_el!(f32, 's');
real_el!(f64, 'd');
complex_el!(C32, f32, 'c');
complex_el!(C64, f64, 'z');

/// The integer widths of the entries (LP64 i32, ILP64 i64).
pub trait Int: Copy + std::fmt::Debug + Into<i64> + 'static {
    fn of(v: i64) -> Self;
}
impl Int for i32 {
    fn of(v: i64) -> Self {
        v as i32
    }
}
impl Int for i64 {
    fn of(v: i64) -> Self {
        v
    }
}

/// The entry points of one routine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `dgemm_`
    Fortran,
    /// `dgemm_64_`
    Fortran64,
    /// `cblas_dgemm`
    Cblas,
    /// `cblas_dgemm64_`
    Cblas64,
}
impl Api {
    pub const ALL: [Api; 4] = [Api::Fortran, Api::Fortran64, Api::Cblas, Api::Cblas64];
    pub fn wide(self) -> bool {
        matches!(self, Api::Fortran64 | Api::Cblas64)
    }
    pub fn cblas(self) -> bool {
        matches!(self, Api::Cblas | Api::Cblas64)
    }
}

/// What an argument is, which says how it is generated and passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// CBLAS layout (CBLAS entries only; the Fortran ones have none).
    Order,
    /// Option characters (Fortran `char *`, CBLAS enumerations).
    Trans,
    Uplo,
    Diag,
    Side,
    /// m, n, k: negative, zero or small.
    Dim,
    /// kl, ku, or the k of a band matrix.
    Band,
    /// A leading dimension.
    Ld,
    /// A vector increment.
    Inc,
    /// A scalar of the routine's type (CBLAS: by value if real, by address if complex).
    Scalar,
    /// A real scalar (by value in CBLAS).
    Real,
    /// An array read.
    In,
    /// An array written.
    Out,
    /// ROTM's PARAM: an array read whose first entry is the flag (-2, -1, 0 or 1).
    Param,
}

/// One argument's value.
#[derive(Debug, Clone, Copy)]
pub enum Val<T> {
    /// An option character (CBLAS: mapped to its enumeration; any other value is invalid).
    Char(u8),
    /// CBLAS layout.
    Order(c_int),
    Int(i64),
    Scalar(T),
    Real(f64),
    /// The index of a buffer.
    Buf(usize),
}

/// Elements in every buffer: more than any valid call of the generated sizes reads
/// (dimensions <= 5, leading dimensions <= 9, |increments| <= 3, band widths <= 2).
pub const BUF: usize = 64;

/// The CBLAS enumeration of an option character: upper and lower case alike (CBLAS has no
/// case), anything else an invalid value.
pub fn cblas_enum(kind: Kind, c: u8) -> c_int {
    match (kind, c.to_ascii_uppercase()) {
        (Kind::Trans, b'N') => 111,
        (Kind::Trans, b'T') => 112,
        (Kind::Trans, b'C') => 113,
        (Kind::Uplo, b'U') => 121,
        (Kind::Uplo, b'L') => 122,
        (Kind::Diag, b'N') => 131,
        (Kind::Diag, b'U') => 132,
        (Kind::Side, b'L') => 141,
        (Kind::Side, b'R') => 142,
        _ => 110 + c as c_int % 7 * 9,
    }
}

/// The random arguments of one call, with their buffers.
#[derive(Debug, Clone)]
pub struct Args<T> {
    pub kinds: Vec<Kind>,
    pub vals: Vec<Val<T>>,
    pub bufs: Vec<Vec<T>>,
}

fn scalar<T: El>(rng: &mut Rng) -> T {
    match rng.below(12) {
        0 | 1 => T::make(0.0, 0.0),
        2 | 3 => T::make(1.0, 0.0),
        4 => T::make(-1.0, 0.0),
        5 => T::make(f64::NAN, 0.0),
        6 => T::make(0.0, rng.unit()),
        _ => T::make(rng.unit(), rng.unit()),
    }
}

fn real(rng: &mut Rng) -> f64 {
    match rng.below(10) {
        0 | 1 => 0.0,
        2 | 3 => 1.0,
        4 => f64::NAN,
        _ => rng.unit(),
    }
}

impl<T: El> Args<T> {
    /// Random arguments for a routine whose arguments are `kinds` (CBLAS order, with
    /// [`Kind::Order`]; the Fortran entries skip it). Most calls are valid; each kind of
    /// argument is sometimes wrong: option characters in lower case (valid) and junk,
    /// negative and zero sizes (in the ILP64 entries also below -2^32, whose low 32 bits are
    /// 0), short leading dimensions, zero and negative increments, NaN scalars, NaN in the
    /// output arrays.
    pub fn random(rng: &mut Rng, kinds: &[Kind], api: Api) -> Args<T> {
        let wide = api.wide();
        let mut vals = Vec::with_capacity(kinds.len());
        let mut bufs = Vec::new();
        let mut max_dim = 1i64;
        for &k in kinds {
            let v = match k {
                Kind::Order => Val::Order(match rng.below(16) {
                    0 => rng.pick(&[0, 103, 111]),
                    r => [101, 102][r % 2],
                }),
                Kind::Trans | Kind::Uplo | Kind::Diag | Kind::Side => {
                    let valid: &[u8] = match k {
                        Kind::Trans => b"NTCntc",
                        Kind::Uplo => b"ULul",
                        Kind::Diag => b"NUnu",
                        _ => b"LRlr",
                    };
                    Val::Char(if rng.below(12) == 0 {
                        rng.pick(b"X x0?")
                    } else {
                        rng.pick(valid)
                    })
                }
                Kind::Dim => Val::Int(match rng.below(24) {
                    0 if wide => -(1 << 33),
                    0 | 1 => -1,
                    2 => -7,
                    3 | 4 => 0,
                    r => [1, 2, 3, 4, 5][r % 5],
                }),
                Kind::Band => Val::Int(match rng.below(16) {
                    0 if wide => -(1 << 33),
                    0 | 1 => -1,
                    r => [0, 1, 2][r % 3],
                }),
                Kind::Ld => Val::Int(0), // set below, once the sizes are known
                Kind::Inc => Val::Int(match rng.below(14) {
                    0 => 0,
                    1 => -1,
                    2 => -2,
                    3 => -3,
                    4 => 2,
                    5 => 3,
                    _ => 1,
                }),
                Kind::Scalar => Val::Scalar(scalar(rng)),
                Kind::Real => Val::Real(real(rng)),
                Kind::In | Kind::Out | Kind::Param => {
                    let mut b: Vec<T> = (0..BUF)
                        .map(|_| T::make(rng.entry(), rng.entry()))
                        .collect();
                    if k == Kind::Param {
                        b[0] = T::make(rng.pick(&[-2.0, -1.0, 0.0, 1.0]), 0.0);
                    } else if k == Kind::Out && rng.below(4) == 0 {
                        // beta = 0 must not read these; any other call propagates them.
                        for _ in 0..3 {
                            b[rng.below(12)] = T::make(f64::NAN, f64::NAN);
                        }
                    }
                    bufs.push(b);
                    Val::Buf(bufs.len() - 1)
                }
            };
            if let (Kind::Dim, Val::Int(x)) = (k, v) {
                max_dim = max_dim.max(x);
            }
            vals.push(v);
        }
        // Leading dimensions: mostly at least every size (so valid), sometimes short.
        let bands: i64 = kinds
            .iter()
            .zip(&vals)
            .filter(|(k, _)| **k == Kind::Band)
            .map(|(_, v)| match v {
                Val::Int(x) => (*x).max(0),
                _ => 0,
            })
            .sum();
        let enough = max_dim.max(bands + 1);
        for (k, v) in kinds.iter().zip(vals.iter_mut()) {
            if *k == Kind::Ld {
                *v = Val::Int(match rng.below(12) {
                    0 if wide => -(1 << 33),
                    0 => -1,
                    1 => 0,
                    2 => 1,
                    3 => enough - 1,
                    r => enough + [0, 0, 1, 2][r % 4],
                });
            }
        }
        // Debian's reference CBLAS (3.11) conjugates copies of the vectors of a row-major
        // complex Level 2 call before the checks, in loops that never end for a size of 0 or
        // less (cblas_cgemv(RowMajor, ConjTrans, M = -1 or 0, ...) hangs) and that walk
        // before the vector for a negative increment; and it calls the Fortran routine with
        // the copy's increment, 1, so it accepts an increment of 0 there. In those calls the
        // sizes and increments stay positive and the other integers non-negative (the
        // Fortran and column-major calls of the same routines keep them all).
        let row_major = vals.iter().any(|v| matches!(v, Val::Order(101)));
        let level2 = kinds.contains(&Kind::Order) && kinds.contains(&Kind::Inc);
        if api.cblas() && T::P >= 'c' && row_major && level2 {
            for (k, v) in kinds.iter().zip(vals.iter_mut()) {
                if let Val::Int(x) = v {
                    *x = match k {
                        Kind::Dim => x.abs().clamp(1, 5),
                        // The copy has increment 1: the reference accepts 0 there.
                        Kind::Inc => x.abs().clamp(1, 3),
                        _ => x.abs().min(9),
                    };
                }
            }
        }
        Args {
            kinds: kinds.to_vec(),
            vals,
            bufs,
        }
    }
}
