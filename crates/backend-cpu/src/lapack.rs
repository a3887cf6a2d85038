//! Host LAPACK: the factorization tiles (`?potrf`, `?getrf`, `?laswp`) on host memory, through a
//! LAPACK library loaded at run time, or the pure-Rust fallback ([`crate::lapack_rust`], faer)
//! when none is found. Nothing is linked at build time, as for the host BLAS.
//!
//! Which library: the host BLAS's own library first when it exports LAPACK (OpenBLAS does:
//! `dpotrf_` in `libopenblas.so.0`, sharing its threads), then [`LAPACK_CANDIDATES`] (Debian's
//! `liblapack.so.3`: the reference LAPACK, or OpenBLAS's through the alternatives), then faer.
//! A BLAS that is the pure-Rust fallback gets the pure-Rust LAPACK. Routines a library lacks for
//! a dtype go to the fallback one by one, as complex GEMM does.
//!
//! The library is opened with `RTLD_DEEPBIND`: a reference LAPACK calls `dgemm_` by name, and
//! in a process where the hetblas drop-in exports `dgemm_`, that name must still reach the
//! LAPACK's own BLAS (a panel that re-entered hetblas from inside hetblas would deadlock or
//! recurse). A library that is hetblas itself (the drop-in registered as `liblapack.so.3`) is
//! refused for the same reason.
//!
//! The calls use the Fortran ABI of LP64 LAPACK: every argument by reference, `int` = `i32`,
//! and the hidden length of the `uplo` character appended (gfortran's convention; C
//! implementations ignore it). Arguments are checked before the call, so `xerbla_` is never
//! reached; a dimension beyond 32 bits goes to the fallback.

use crate::lapack_rust::RustLapack;
use hetblas_core::{first_nan_pivot, Error, GetrfTile, LaswpTile, PotrfTile, Result, ScalarValue};
use libloading::os::unix::Library;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// The factorization tiles on host memory, in f32, f64, c32 and c64.
pub trait HostLapack: Send + Sync {
    /// "OpenBLAS 0.3.21 (libopenblas.so.0)", "pure-Rust faer".
    fn describe(&self) -> &str;
    /// Short identifier: "openblas", "lapack", "rust".
    fn kind(&self) -> &'static str;
    /// Sets the threads of an implementation that has its own setting (the Rust fallback; a
    /// loaded library follows the host BLAS's threads).
    fn set_threads(&self, _threads: usize) {}
    /// `?potrf` on the tile; returns LAPACK's `info` (`>= 0`).
    ///
    /// # Safety
    /// `op.a` is valid, writable host memory of its shape (`op.check()` passed), which
    /// nothing else uses during the call.
    unsafe fn potrf(&self, op: &PotrfTile) -> Result<i64>;
    /// `?getrf` on the panel, pivots into `op.ipiv`; returns LAPACK's `info` (`>= 0`).
    ///
    /// # Safety
    /// As [`HostLapack::potrf`], and `op.ipiv` is valid, writable host memory of `len` `i32`s
    /// outside `op.a`.
    unsafe fn getrf(&self, op: &GetrfTile) -> Result<i64>;
    /// `?laswp` on the tile.
    ///
    /// # Safety
    /// As [`HostLapack::potrf`], and when `k1 <= k2`, `op.ipiv` is valid host memory of `len`
    /// `i32`s whose entries `k1 - 1 .. k2` are row numbers of `op.a` (see [`check_pivots`]).
    unsafe fn laswp(&self, op: &LaswpTile) -> Result<()>;
}

/// Checks that the pivots a LASWP reads name rows of its tile: an out-of-range pivot would
/// make every LAPACK write outside the tile.
///
/// # Safety
/// When `op.k1 <= op.k2`, `op.ipiv` is valid host memory of at least `op.k2` `i32`s.
pub unsafe fn check_pivots(op: &LaswpTile) -> Result<()> {
    if !op.has_work() {
        return Ok(());
    }
    // SAFETY: caller contract; check() bounded k2 by len.
    let ipiv = unsafe { std::slice::from_raw_parts(op.ipiv.addr as *const i32, op.k2) };
    for (i, &p) in ipiv.iter().enumerate().skip(op.k1 - 1) {
        if p < 1 || p as usize > op.a.rows {
            return Err(Error::internal(format!(
                "laswp: pivot {} of row {} is not a row of the {}-row tile",
                p,
                i + 1,
                op.a.rows
            )));
        }
    }
    Ok(())
}

/// Library names tried, in order, after the host BLAS's own library.
pub const LAPACK_CANDIDATES: &[&str] = &["liblapack.so.3", "liblapack.so"];

/// `?potrf_(uplo, n, a, lda, info, uplo_len)`.
type Potrf =
    unsafe extern "C" fn(*const c_char, *const c_int, *mut c_void, *const c_int, *mut c_int, usize);
/// `?getrf_(m, n, a, lda, ipiv, info)`.
type Getrf = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *mut c_void,
    *const c_int,
    *mut c_int,
    *mut c_int,
);
/// `?laswp_(n, a, lda, k1, k2, ipiv, incx)`.
type Laswp = unsafe extern "C" fn(
    *const c_int,
    *mut c_void,
    *const c_int,
    *const c_int,
    *const c_int,
    *const c_int,
    *const c_int,
);

/// One routine in the four dtypes (S, D, C, Z), each optional.
#[derive(Clone, Copy)]
struct PerType<F> {
    s: Option<F>,
    d: Option<F>,
    c: Option<F>,
    z: Option<F>,
}

impl<F: Copy> PerType<F> {
    fn load(lib: &Library, routine: &str) -> PerType<F> {
        let get = |t: char| {
            let name = format!("{t}{routine}_\0");
            // SAFETY: the symbol, when present, is the LP64 Fortran LAPACK routine whose
            // prototype `F` spells; the library outlives the pointer (kept in FortranLapack).
            unsafe { lib.get::<F>(name.as_bytes()) }.ok().map(|s| *s)
        };
        PerType {
            s: get('s'),
            d: get('d'),
            c: get('c'),
            z: get('z'),
        }
    }

    fn of(&self, v: &ScalarValue) -> Option<F> {
        match v {
            ScalarValue::F32(_) => self.s,
            ScalarValue::F64(_) => self.d,
            ScalarValue::C32(_) => self.c,
            ScalarValue::C64(_) => self.z,
        }
    }

    fn complete(&self) -> bool {
        self.s.is_some() && self.d.is_some() && self.c.is_some() && self.z.is_some()
    }
}

/// A LAPACK library opened with DEEPBIND; what it lacks goes to the Rust fallback.
pub struct FortranLapack {
    potrf: PerType<Potrf>,
    getrf: PerType<Getrf>,
    laswp: PerType<Laswp>,
    fallback: RustLapack,
    kind: &'static str,
    describe: String,
    _lib: Library,
}

impl FortranLapack {
    /// Opens `path` (a file name searched by the dynamic loader, or a path) and resolves the
    /// routines; refuses a library without `dpotrf_`, `dgetrf_` and `dlaswp_`, and hetblas
    /// itself.
    pub fn open(path: &str) -> Result<FortranLapack> {
        // RTLD_DEEPBIND: the library's own references bind to it and its dependencies first
        // (see the module's documentation). Its value on Linux (glibc and musl).
        const RTLD_DEEPBIND: c_int = 0x8;
        let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL;
        // SAFETY: loading a LAPACK library runs its initialisers, which is what any LAPACK
        // user does; the name is one the system's library list or the host BLAS gave.
        let lib = unsafe { Library::open(Some(path), flags | RTLD_DEEPBIND) }
            .map_err(|e| unavailable(format!("{path}: {e}")))?;
        let potrf = PerType::<Potrf>::load(&lib, "potrf");
        let getrf = PerType::<Getrf>::load(&lib, "getrf");
        let laswp = PerType::<Laswp>::load(&lib, "laswp");
        let (Some(dpotrf), Some(_), Some(_)) = (potrf.d, getrf.d, laswp.d) else {
            return Err(unavailable(format!(
                "{path} has no LAPACK (dpotrf_, dgetrf_, dlaswp_)"
            )));
        };
        if crate::same_object::is_ours(dpotrf as usize) {
            return Err(unavailable(format!("{path} is hetblas itself")));
        }
        let kind = if path.contains("openblas") {
            "openblas"
        } else {
            "lapack"
        };
        let partial = if potrf.complete() && getrf.complete() && laswp.complete() {
            ""
        } else {
            "; some types through faer"
        };
        Ok(FortranLapack {
            potrf,
            getrf,
            laswp,
            fallback: RustLapack::new(0),
            kind,
            describe: format!("{} ({path}{partial})", library_name(kind)),
            _lib: lib,
        })
    }
}

fn library_name(kind: &str) -> &'static str {
    match kind {
        "openblas" => "OpenBLAS's LAPACK",
        _ => "LAPACK",
    }
}

fn unavailable(reason: String) -> Error {
    Error::Unavailable {
        backend: "lapack",
        reason,
    }
}

/// A dimension as a LAPACK `int`, or `None` beyond 32 bits (the call then goes to faer).
fn int(x: usize) -> Option<c_int> {
    c_int::try_from(x).ok()
}

impl HostLapack for FortranLapack {
    fn describe(&self) -> &str {
        &self.describe
    }
    fn kind(&self) -> &'static str {
        self.kind
    }
    unsafe fn potrf(&self, op: &PotrfTile) -> Result<i64> {
        op.check()?;
        let probe = ScalarValue::zero(op.dtype());
        let (Some(f), Some(n), Some(lda)) = (self.potrf.of(&probe), int(op.n()), int(op.a.ld))
        else {
            // SAFETY: forwarded caller contract.
            return unsafe { self.fallback.potrf(op) };
        };
        if n == 0 {
            return Ok(0);
        }
        let uplo = op.uplo.as_char() as c_char;
        let mut info: c_int = 0;
        // SAFETY: forwarded caller contract; every argument is a valid pointer for the call,
        // the arguments passed PotrfTile::check (what LAPACK checks), so xerbla is not reached.
        unsafe { f(&uplo, &n, op.a.addr as *mut c_void, &lda, &mut info, 1) };
        match lapack_info(info, "potrf")? {
            // LAPACK stops at a NaN pivot; OpenBLAS carries it on (see first_nan_pivot).
            // SAFETY: the diagonal lies inside the tile (caller contract).
            0 => Ok(
                unsafe { first_nan_pivot(op.a.addr, op.a.ld + 1, op.n(), op.dtype()) }.unwrap_or(0),
            ),
            info => Ok(info),
        }
    }
    unsafe fn getrf(&self, op: &GetrfTile) -> Result<i64> {
        op.check()?;
        let probe = ScalarValue::zero(op.dtype());
        let (Some(f), Some(m), Some(n), Some(lda)) = (
            self.getrf.of(&probe),
            int(op.a.rows),
            int(op.a.cols),
            int(op.a.ld),
        ) else {
            // SAFETY: forwarded caller contract.
            return unsafe { self.fallback.getrf(op) };
        };
        if m == 0 || n == 0 {
            return Ok(0);
        }
        let mut info: c_int = 0;
        // SAFETY: forwarded caller contract; GetrfTile::check matched ipiv's length to
        // min(m, n), which is what getrf writes.
        unsafe {
            f(
                &m,
                &n,
                op.a.addr as *mut c_void,
                &lda,
                op.ipiv.addr as *mut c_int,
                &mut info,
            )
        };
        lapack_info(info, "getrf")
    }
    unsafe fn laswp(&self, op: &LaswpTile) -> Result<()> {
        op.check()?;
        if !op.has_work() {
            return Ok(());
        }
        // SAFETY: forwarded caller contract.
        unsafe { check_pivots(op) }?;
        let probe = ScalarValue::zero(op.dtype());
        let (Some(f), Some(n), Some(lda), Some(k1), Some(k2)) = (
            self.laswp.of(&probe),
            int(op.a.cols),
            int(op.a.ld),
            int(op.k1),
            int(op.k2),
        ) else {
            // SAFETY: forwarded caller contract.
            return unsafe { self.fallback.laswp(op) };
        };
        let incx: c_int = 1;
        // SAFETY: forwarded caller contract; the pivots were checked to name rows of the tile.
        unsafe {
            f(
                &n,
                op.a.addr as *mut c_void,
                &lda,
                &k1,
                &k2,
                op.ipiv.addr as *const c_int,
                &incx,
            )
        };
        Ok(())
    }
}

/// LAPACK's `info` as the op's result: a negative one (a bad argument) cannot follow a checked
/// tile, so it is an internal error naming the parameter.
fn lapack_info(info: c_int, routine: &str) -> Result<i64> {
    if info < 0 {
        return Err(Error::internal(format!(
            "host {routine} rejected argument {} of a checked tile",
            -info
        )));
    }
    Ok(info as i64)
}

/// Which host LAPACK to use, and why.
pub struct LapackChoice {
    pub lapack: Arc<dyn HostLapack>,
    /// Libraries tried and why each was not taken (empty when the first one worked).
    pub tried: Vec<String>,
}

/// Picks the host LAPACK for a CPU computing with `blas`: the BLAS's own library when it
/// exports LAPACK, else the first of [`LAPACK_CANDIDATES`] that loads, else the pure-Rust
/// fallback; a pure-Rust BLAS gets the pure-Rust LAPACK.
pub fn choose_lapack(blas: &dyn crate::HostBlas) -> LapackChoice {
    let rust = |tried| LapackChoice {
        lapack: Arc::new(RustLapack::new(0)),
        tried,
    };
    let Some(own) = blas.library() else {
        return rust(vec![format!(
            "{}: the pure-Rust LAPACK with it",
            blas.describe()
        )]);
    };
    let mut tried = Vec::new();
    for name in std::iter::once(own).chain(LAPACK_CANDIDATES.iter().copied()) {
        match FortranLapack::open(name) {
            Ok(lib) => {
                return LapackChoice {
                    lapack: Arc::new(lib),
                    tried,
                }
            }
            Err(e) => tried.push(match e {
                Error::Unavailable { reason, .. } => reason,
                other => other.to_string(),
            }),
        }
    }
    rust(tried)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_info_is_an_internal_error() {
        assert_eq!(lapack_info(0, "potrf").unwrap(), 0);
        assert_eq!(lapack_info(3, "potrf").unwrap(), 3);
        let e = lapack_info(-4, "getrf").unwrap_err().to_string();
        assert!(e.contains("argument 4"), "{e}");
    }

    #[test]
    fn a_library_without_lapack_is_refused() {
        // The C library is always there and has no LAPACK.
        let e = FortranLapack::open("libc.so.6")
            .err()
            .expect("libc is no LAPACK");
        assert!(e.to_string().contains("no LAPACK"), "{e}");
        assert!(FortranLapack::open("libhetblas-no-such-library.so").is_err());
    }
}
