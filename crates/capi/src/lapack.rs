//! The LAPACK entry points hetblas routes (the factorizations and the solves on them:
//! `?potrf`, `?getrf`, `?potrs`, `?getrs`, `?posv`, `?gesv` in S, D, C, Z), under every name
//! family: `dgetrf_`, `dgetrf_64_`, and the pip wheels' `scipy_dgetrf_` and `scipy_dgetrf_64_`
//! (`numpy.linalg.solve` calls `scipy_dgesv_64_`, `scipy.linalg.lu_factor` `scipy_dgetrf_`).
//!
//! Each entry asks its routine's hook ([`crate::factor`]) first; a call the hook does not take
//! goes, untouched, to the routine it replaced: the same name's other definition
//! ([`crate::loaded::original`]: the program's `liblapack.so.3` for R and Octave, the wheel's
//! own OpenBLAS for the `scipy_` names), else the reference names' host BLAS library when it
//! has LAPACK (OpenBLAS does), else `liblapack.so.3` (`_64_` names: `libopenblas64.so.0`)
//! loaded for the purpose. Its BLAS calls by name come back to hetblas's BLAS entries (a
//! `liblapack.so.3`'s do: R's and Octave's solves reach the devices; the wheels' OpenBLAS
//! binds its own calls, so their LAPACK runs whole in the wheel until a hook takes it). A process in
//! which no library defines the routine cannot have called it before hetblas was there; it
//! stops with a message, as the loader would have for a missing symbol.
//!
//! Other LAPACK routines are not exported: they run in the program's LAPACK as before, and
//! their BLAS calls reach hetblas. `LAPACKE_*` (the C interface) needs no entries of its own:
//! liblapacke and OpenBLAS's LAPACKE call the Fortran routines, which a preloaded hetblas
//! takes.

use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use std::ffi::c_char;
use std::sync::OnceLock;

/// Libraries tried for a routine no loaded library defines, by the name's integer width.
const FALLBACK_LP64: [&str; 2] = ["liblapack.so.3", "libopenblas.so.0"];
const FALLBACK_ILP64: [&str; 2] = ["libopenblas64.so.0", "libopenblas64_.so.0"];

/// The address of the routine `name` replaced (see the module documentation), looked for once
/// per name and kept in `cell`.
pub fn original(cell: &OnceLock<usize>, name: &str) -> usize {
    *cell.get_or_init(|| {
        let found = crate::loaded::original(name)
            .map(|f| (f.addr, f.path))
            .or_else(|| {
                let h = crate::host::host()?;
                h.symbol(name).map(|a| (a, h.path.clone()))
            })
            .or_else(|| {
                let libs = if name.ends_with("_64_") {
                    &FALLBACK_ILP64
                } else {
                    &FALLBACK_LP64
                };
                libs.iter().find_map(|l| open_for(l, name))
            });
        match found {
            Some((addr, path)) => {
                if crate::offload::verbose() {
                    eprintln!("hetblas: {name}: forwarded to {path}");
                }
                addr
            }
            None => {
                eprintln!(
                    "hetblas: {name}: no LAPACK library besides hetblas defines it (tried the \
                     loaded libraries, the host BLAS and {}); stopping",
                    if name.ends_with("_64_") {
                        FALLBACK_ILP64.join(", ")
                    } else {
                        FALLBACK_LP64.join(", ")
                    }
                );
                std::process::abort()
            }
        }
    })
}

/// `name` in library `lib`, loaded (and kept) for it.
fn open_for(lib: &str, name: &str) -> Option<(usize, String)> {
    // SAFETY: loading a LAPACK library runs its initialisers, as any LAPACK user does.
    let l = unsafe { libloading::os::unix::Library::open(Some(lib), libc::RTLD_NOW) }.ok()?;
    let sym = format!("{name}\0");
    // SAFETY: only the address is taken; it is called with the routine's prototype.
    let addr = unsafe { l.get::<*const ()>(sym.as_bytes()) }
        .ok()
        .map(|s| s.into_raw() as usize)
        .filter(|&a| a != 0 && !crate::xerbla::is_ours(a))?;
    std::mem::forget(l); // kept loaded: its address is called for the process' life
    Some((addr, crate::loaded::object_path(addr)))
}

/// The type of an argument of a LAPACK entry with element `$T` and integer `$I`.
macro_rules! lty {
    (c, $T:ty, $I:ty) => { *const c_char };
    (i, $T:ty, $I:ty) => { *const $I };
    (o, $T:ty, $I:ty) => { *mut $I };
    (a, $T:ty, $I:ty) => { *mut $T };
    (p, $T:ty, $I:ty) => { *const $T };
    (w, $T:ty, $I:ty) => { *mut $I };
    (r, $T:ty, $I:ty) => { *const $I };
}

/// One LAPACK routine's entries: `name [symbol type, ...] (kind arg, ...)` with kinds `c` a
/// character, `i` an integer read, `o` `info`, `a` an array read and written, `p` an array
/// read, `w` / `r` the pivots written / read.
macro_rules! lapack {
    (@entry $name:ident, $export:ident, $T:ty, $I:ty, $fam:ident; ($($k:ident $a:ident),*)) => {
        #[doc = concat!("LAPACK `", stringify!($export), "`: the hook, else the routine it \
            replaced.")]
        ///
        /// # Safety
        /// LAPACK's contract.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)] // reason: the LAPACK routine's own argument list
        pub unsafe extern "C" fn $export($($a: lty!($k, $T, $I)),*) {
            static ORIGINAL: OnceLock<usize> = OnceLock::new();
            crate::abi::entry_lapack(crate::family::Family::$fam, stringify!($export), || {
                // SAFETY: the caller's arguments, passed on as they came (LAPACK's contract).
                let pending = match unsafe { crate::factor::$name::<$T, $I>($($a),*) } {
                    crate::route::Outcome::Done => return,
                    crate::route::Outcome::Host(pending) => pending,
                };
                let addr = original(&ORIGINAL, stringify!($export));
                // SAFETY: `addr` is the routine of this very name in another library: the
                // same prototype, plus gfortran's hidden character lengths (1 each; routines
                // with fewer character arguments ignore the rest).
                let f = unsafe {
                    std::mem::transmute::<
                        usize,
                        unsafe extern "C" fn($(lty!($k, $T, $I)),*, usize, usize) -> (),
                    >(addr)
                };
                // A call the routing left to the host: its time is measured for it (the
                // routine's lookup above is not).
                crate::measured::Pending::timed(pending, || {
                    // SAFETY: as above, with the caller's arguments.
                    unsafe { f($($a),*, 1, 1) }
                });
            })
        }
    };
    ($name:ident [$($sym:ident $T:ty),+] $args:tt) => {
        paste::paste! { $(
            lapack!(@entry $name, [<$sym _>], $T, crate::abi::LpInt, Reference; $args);
            #[cfg(not(feature = "ilp64"))]
            lapack!(@entry $name, [<$sym _64_>], $T, i64, Reference; $args);
            lapack!(@entry $name, [<scipy_ $sym _>], $T, i32, ScipyLp64; $args);
            lapack!(@entry $name, [<scipy_ $sym _64_>], $T, i64, ScipyIlp64; $args);
        )+ }
    };
}

lapack!(potrf [spotrf f32, dpotrf f64, cpotrf C32, zpotrf C64]
    (c uplo, i n, a a, i lda, o info));
lapack!(getrf [sgetrf f32, dgetrf f64, cgetrf C32, zgetrf C64]
    (i m, i n, a a, i lda, w ipiv, o info));
lapack!(potrs [spotrs f32, dpotrs f64, cpotrs C32, zpotrs C64]
    (c uplo, i n, i nrhs, p a, i lda, a b, i ldb, o info));
lapack!(getrs [sgetrs f32, dgetrs f64, cgetrs C32, zgetrs C64]
    (c trans, i n, i nrhs, p a, i lda, r ipiv, a b, i ldb, o info));
lapack!(posv [sposv f32, dposv f64, cposv C32, zposv C64]
    (c uplo, i n, i nrhs, a a, i lda, a b, i ldb, o info));
lapack!(gesv [sgesv f32, dgesv f64, cgesv C32, zgesv C64]
    (i n, i nrhs, a a, i lda, w ipiv, a b, i ldb, o info));
