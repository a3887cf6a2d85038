//! TRSM and TRMM tiles on host memory: the CBLAS library's `cblas_?trsm` / `cblas_?trmm` when it
//! has them, else the reference BLAS in Rust (hetblas-refblas, blocked through the `gemm` crate).

use hetblas_core::kernel::TriTile;
use hetblas_core::problem::triangular::{Diag, Side, TriRoutine, Uplo};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{Result, ScalarValue, Trans};
use libloading::Library;
use std::ffi::c_void;

/// Runs the tile with the Rust reference BLAS.
///
/// # Safety
/// `op.a` and `op.b` are valid host memory of their shapes (`op.check()` passed), `b`
/// writable and not overlapping `a`.
pub unsafe fn rust_tri(routine: TriRoutine, op: &TriTile) -> Result<()> {
    op.check()?;
    let o = op.opts;
    let side = o.side.as_char() as u8;
    let uplo = o.uplo.as_char() as u8;
    let transa = o.transa.as_char() as u8;
    let diag = o.diag.as_char() as u8;
    let (m, n) = (op.m as i64, op.n as i64);
    let (lda, ldb) = (op.a.ld as i64, op.b.ld as i64);
    macro_rules! call {
        ($t:ty, $alpha:expr) => {{
            let (a, b) = (op.a.addr as *const $t, op.b.addr as *mut $t);
            // SAFETY: forwarded caller contract; the arguments passed TriTile::check, which
            // is the reference's argument check for a valid call.
            unsafe {
                match routine {
                    TriRoutine::Trsm => hetblas_refblas::trsm::<$t>(
                        side, uplo, transa, diag, m, n, $alpha, a, lda, b, ldb,
                    ),
                    TriRoutine::Trmm => hetblas_refblas::trmm::<$t>(
                        side, uplo, transa, diag, m, n, $alpha, a, lda, b, ldb,
                    ),
                }
            }
        }};
    }
    match op.alpha {
        ScalarValue::F32(x) => call!(f32, x),
        ScalarValue::F64(x) => call!(f64, x),
        ScalarValue::C32(x) => call!(c32, x),
        ScalarValue::C64(x) => call!(c64, x),
    }
    Ok(())
}

/// `cblas_dtrsm`-shaped: order, side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb.
type RealTri<T> =
    unsafe extern "C" fn(i32, i32, i32, i32, i32, i32, i32, T, *const T, i32, *mut T, i32);
/// The complex ones: alpha by pointer.
type ComplexTri = unsafe extern "C" fn(
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    *const c_void,
    *const c_void,
    i32,
    *mut c_void,
    i32,
);

/// The CBLAS triangular routines a library exports (each optional).
#[derive(Default, Clone, Copy)]
pub struct CblasTri {
    strsm: Option<RealTri<f32>>,
    dtrsm: Option<RealTri<f64>>,
    ctrsm: Option<ComplexTri>,
    ztrsm: Option<ComplexTri>,
    strmm: Option<RealTri<f32>>,
    dtrmm: Option<RealTri<f64>>,
    ctrmm: Option<ComplexTri>,
    ztrmm: Option<ComplexTri>,
}

impl CblasTri {
    /// Resolves what `lib` has.
    pub fn load(lib: &Library) -> CblasTri {
        macro_rules! sym {
            ($t:ty, $name:literal) => {
                // SAFETY: the CBLAS prototypes of the triangular routines (int = i32, enums as
                // int, complex scalars and matrices through void *).
                unsafe { lib.get::<$t>($name) }.ok().map(|s| *s)
            };
        }
        CblasTri {
            strsm: sym!(RealTri<f32>, b"cblas_strsm\0"),
            dtrsm: sym!(RealTri<f64>, b"cblas_dtrsm\0"),
            ctrsm: sym!(ComplexTri, b"cblas_ctrsm\0"),
            ztrsm: sym!(ComplexTri, b"cblas_ztrsm\0"),
            strmm: sym!(RealTri<f32>, b"cblas_strmm\0"),
            dtrmm: sym!(RealTri<f64>, b"cblas_dtrmm\0"),
            ctrmm: sym!(ComplexTri, b"cblas_ctrmm\0"),
            ztrmm: sym!(ComplexTri, b"cblas_ztrmm\0"),
        }
    }

    /// Runs the tile through the library, or the Rust reference where it lacks the routine.
    ///
    /// # Safety
    /// As [`rust_tri`].
    pub unsafe fn run(&self, routine: TriRoutine, op: &TriTile) -> Result<()> {
        if !op.check_i32("cpu")? {
            return Ok(());
        }
        let o = op.opts;
        let args = (
            102, // CblasColMajor
            match o.side {
                Side::Left => 141,
                Side::Right => 142,
            },
            match o.uplo {
                Uplo::Upper => 121,
                Uplo::Lower => 122,
            },
            match o.transa {
                Trans::N => 111,
                Trans::T => 112,
                Trans::C => 113,
            },
            match o.diag {
                Diag::NonUnit => 131,
                Diag::Unit => 132,
            },
            op.m as i32,
            op.n as i32,
        );
        let (lda, ldb) = (op.a.ld as i32, op.b.ld as i32);
        let trsm = routine == TriRoutine::Trsm;
        // Real and complex routines take the same list; complex ones take alpha by pointer
        // and the matrices as `void *` (`$t` = c_void).
        macro_rules! call {
            ($f:expr, $alpha:expr, $t:ty) => {{
                // SAFETY: forwarded caller contract; dimensions fit in int (check_i32); a
                // complex alpha points to a local that outlives the call.
                unsafe {
                    $f(
                        args.0,
                        args.1,
                        args.2,
                        args.3,
                        args.4,
                        args.5,
                        args.6,
                        $alpha,
                        op.a.addr as *const $t,
                        lda,
                        op.b.addr as *mut $t,
                        ldb,
                    )
                };
                Ok(())
            }};
        }
        macro_rules! real {
            ($f:expr, $t:ty, $alpha:expr) => {
                call!($f, $alpha, $t)
            };
        }
        macro_rules! complex {
            ($f:expr, $alpha:expr) => {{
                let alpha = $alpha;
                call!($f, std::ptr::from_ref(&alpha).cast(), c_void)
            }};
        }
        let pick = |t: Option<ComplexTri>, m: Option<ComplexTri>| if trsm { t } else { m };
        match op.alpha {
            ScalarValue::F32(x) => {
                if let Some(f) = if trsm { self.strsm } else { self.strmm } {
                    return real!(f, f32, x);
                }
            }
            ScalarValue::F64(x) => {
                if let Some(f) = if trsm { self.dtrsm } else { self.dtrmm } {
                    return real!(f, f64, x);
                }
            }
            ScalarValue::C32(x) => {
                if let Some(f) = pick(self.ctrsm, self.ctrmm) {
                    return complex!(f, x);
                }
            }
            ScalarValue::C64(x) => {
                if let Some(f) = pick(self.ztrsm, self.ztrmm) {
                    return complex!(f, x);
                }
            }
        }
        // SAFETY: forwarded caller contract.
        unsafe { rust_tri(routine, op) }
    }
}
