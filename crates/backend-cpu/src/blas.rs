//! Host BLAS: a CBLAS library loaded at run time (OpenBLAS first, then BLIS, then any library
//! exporting `cblas_dgemm`), or the pure-Rust `gemm` crate when none is found. Nothing is linked
//! at build time, so the same binary runs with or without a system BLAS. Complex GEMM
//! (`cblas_cgemm` / `cblas_zgemm`, scalars by pointer) comes from the same library, or from the
//! `gemm` crate's complex path when the library lacks it.

use hetblas_core::scalar::{c32, c64};
use hetblas_core::{Error, Result, Trans};
use libloading::Library;
use std::path::PathBuf;

/// Column-major GEMM on host memory, in f32, f64, c32 and c64. `Trans::C` conjugates the
/// complex operands (and equals `T` in the real methods).
pub trait HostBlas: Send + Sync {
    /// "OpenBLAS 0.3.21 (libopenblas.so.0)", "pure-Rust gemm".
    fn describe(&self) -> &str;
    /// Short identifier: "openblas", "blis", "cblas", "rust".
    fn kind(&self) -> &'static str;
    /// Sets the number of threads the library uses (where it can be set at run time).
    fn set_threads(&self, _threads: usize) {}
    /// The shared library it calls (its file name or path), for the host LAPACK to look in it
    /// first; `None` for the pure-Rust fallback.
    fn library(&self) -> Option<&str> {
        None
    }
    /// TRSM or TRMM on a host tile, B in place (the Rust reference unless overridden).
    ///
    /// # Safety
    /// `op.a` and `op.b` are valid host memory of their shapes, `b` writable and not
    /// overlapping `a`.
    unsafe fn tri(
        &self,
        routine: hetblas_core::problem::TriRoutine,
        op: &hetblas_core::TriTile,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { crate::tri::rust_tri(routine, op) }
    }
    /// # Safety
    /// `a`, `b`, `c` point to column-major matrices of the shapes BLAS derives from the other
    /// arguments with the given leading dimensions (ld >= max(1, rows)), `c` valid for writes and
    /// not aliasing `a` or `b`; with `beta == 0`, `c` need not be initialised.
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    unsafe fn dgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: f64,
        a: *const f64,
        lda: usize,
        b: *const f64,
        ldb: usize,
        beta: f64,
        c: *mut f64,
        ldc: usize,
    ) -> Result<()>;
    /// # Safety
    /// As [`HostBlas::dgemm`].
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    unsafe fn sgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: f32,
        a: *const f32,
        lda: usize,
        b: *const f32,
        ldb: usize,
        beta: f32,
        c: *mut f32,
        ldc: usize,
    ) -> Result<()>;
    /// # Safety
    /// As [`HostBlas::dgemm`].
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    unsafe fn cgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: c32,
        a: *const c32,
        lda: usize,
        b: *const c32,
        ldb: usize,
        beta: c32,
        c: *mut c32,
        ldc: usize,
    ) -> Result<()>;
    /// # Safety
    /// As [`HostBlas::dgemm`].
    #[allow(clippy::too_many_arguments)] // the BLAS argument list
    unsafe fn zgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: c64,
        a: *const c64,
        lda: usize,
        b: *const c64,
        ldb: usize,
        beta: c64,
        c: *mut c64,
        ldc: usize,
    ) -> Result<()>;
}

const CBLAS_COL_MAJOR: i32 = 102;
const CBLAS_NO_TRANS: i32 = 111;
const CBLAS_TRANS: i32 = 112;
const CBLAS_CONJ_TRANS: i32 = 113;

/// `cblas_cgemm` / `cblas_zgemm`: alpha, beta and the matrices through `void *` (the complex
/// scalars by pointer).
type CblasComplexGemm = unsafe extern "C" fn(
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    *const std::ffi::c_void,
    *const std::ffi::c_void,
    i32,
    *const std::ffi::c_void,
    i32,
    *const std::ffi::c_void,
    *mut std::ffi::c_void,
    i32,
);

type CblasDgemm = unsafe extern "C" fn(
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    f64,
    *const f64,
    i32,
    *const f64,
    i32,
    f64,
    *mut f64,
    i32,
);
type CblasSgemm = unsafe extern "C" fn(
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    f32,
    *const f32,
    i32,
    *const f32,
    i32,
    f32,
    *mut f32,
    i32,
);
type GetConfig = unsafe extern "C" fn() -> *const std::os::raw::c_char;
type GetThreads = unsafe extern "C" fn() -> i32;
type SetThreads = unsafe extern "C" fn(i32);

/// A CBLAS library opened with libloading.
pub struct Cblas {
    _lib: Library,
    dgemm: CblasDgemm,
    sgemm: CblasSgemm,
    /// `None` when the library lacks them: complex products then go to [`RustGemm`].
    cgemm: Option<CblasComplexGemm>,
    zgemm: Option<CblasComplexGemm>,
    complex_fallback: RustGemm,
    kind: &'static str,
    describe: String,
    path: String,
    set_threads: Option<SetThreads>,
    tri: crate::tri::CblasTri,
}

/// Library names tried, in order, when `HETBLAS_CBLAS` is not set.
pub const CBLAS_CANDIDATES: &[&str] = &[
    "libopenblas.so.0",
    "libopenblas.so",
    "libblis.so.4",
    "libblis.so.3",
    "libblis.so",
    "libcblas.so.3",
    "libcblas.so",
    "libblas.so.3",
    "libblas.so",
];

/// What the loader said: libloading's own message is only "dlopen failed", the reason
/// (`dlerror`: no such file, wrong ELF class, undefined symbol) is its source.
fn load_error(e: &libloading::Error) -> String {
    use std::error::Error as _;
    e.source().map_or_else(|| e.to_string(), |s| s.to_string())
}

impl Cblas {
    /// Opens `path` (a file name searched by the dynamic loader, or a path) and resolves
    /// `cblas_dgemm` / `cblas_sgemm`.
    pub fn open(path: &str) -> Result<Cblas> {
        // SAFETY: loading a shared library runs its initialisers; we only load BLAS libraries
        // the user or the system named, which is what every BLAS consumer does.
        let lib = unsafe { Library::new(path) }.map_err(|e| {
            // dlerror names the file itself, mostly.
            let why = load_error(&e);
            unavailable(match why.contains(path) {
                true => why,
                false => format!("{path}: {why}"),
            })
        })?;
        // SAFETY: the symbol types are the CBLAS prototypes (int = i32 on LP64 BLAS builds).
        let dgemm: CblasDgemm = unsafe { lib.get::<CblasDgemm>(b"cblas_dgemm\0") }
            .map(|s| *s)
            .map_err(|e| unavailable(format!("{path} has no cblas_dgemm: {}", load_error(&e))))?;
        // SAFETY: as above.
        let sgemm: CblasSgemm = unsafe { lib.get::<CblasSgemm>(b"cblas_sgemm\0") }
            .map(|s| *s)
            .map_err(|e| unavailable(format!("{path} has no cblas_sgemm: {}", load_error(&e))))?;
        // SAFETY: the CBLAS prototypes of cblas_cgemm / cblas_zgemm (void * for the complex
        // scalars and matrices, int = i32).
        let cgemm = unsafe { lib.get::<CblasComplexGemm>(b"cblas_cgemm\0") }
            .ok()
            .map(|s| *s);
        // SAFETY: as above.
        let zgemm = unsafe { lib.get::<CblasComplexGemm>(b"cblas_zgemm\0") }
            .ok()
            .map(|s| *s);
        let (kind, mut describe) = if path.contains("openblas") {
            ("openblas", "OpenBLAS".to_string())
        } else if path.contains("blis") {
            ("blis", "BLIS".to_string())
        } else {
            ("cblas", "CBLAS".to_string())
        };
        // SAFETY: openblas_get_config takes nothing and returns a static NUL-terminated string.
        if let Ok(f) = unsafe { lib.get::<GetConfig>(b"openblas_get_config\0") } {
            // SAFETY: see above; the pointer is checked for null.
            let p = unsafe { f() };
            if !p.is_null() {
                // SAFETY: a static C string owned by the library, alive while `lib` is.
                let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy();
                describe = s.trim().to_string();
            }
        }
        // SAFETY: openblas_get_num_threads takes nothing and returns an int.
        if let Ok(f) = unsafe { lib.get::<GetThreads>(b"openblas_get_num_threads\0") } {
            // SAFETY: see above.
            let t = unsafe { f() };
            describe = format!("{describe}, {t} threads");
        }
        // SAFETY: openblas_set_num_threads takes an int and returns nothing.
        let set_threads = unsafe { lib.get::<SetThreads>(b"openblas_set_num_threads\0") }
            .ok()
            .map(|f| *f);
        Ok(Cblas {
            tri: crate::tri::CblasTri::load(&lib),
            set_threads,
            dgemm,
            sgemm,
            cgemm,
            zgemm,
            complex_fallback: RustGemm::new(0),
            kind,
            describe: format!("{describe} ({path})"),
            path: path.to_string(),
            _lib: lib,
        })
    }

    /// The library path or name it was opened from.
    pub fn path(&self) -> &str {
        &self.path
    }
}

fn unavailable(reason: String) -> Error {
    Error::Unavailable {
        backend: "cblas",
        reason,
    }
}

/// The CBLAS transpose code. `C` is passed as CBLAS_CONJ_TRANS, which real routines treat as
/// a transpose (as CBLAS specifies).
fn cblas_trans(t: Trans) -> i32 {
    match t {
        Trans::N => CBLAS_NO_TRANS,
        Trans::T => CBLAS_TRANS,
        Trans::C => CBLAS_CONJ_TRANS,
    }
}

fn int(x: usize, what: &str) -> Result<i32> {
    i32::try_from(x).map_err(|_| Error::Unsupported {
        device: "cpu".into(),
        detail: format!("{what} = {x} exceeds the 32-bit CBLAS interface"),
    })
}

macro_rules! cblas_call {
    ($self:ident, $f:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident, $alpha:ident,
     $a:ident, $lda:ident, $b:ident, $ldb:ident, $beta:ident, $c:ident, $ldc:ident) => {{
        let args = (
            int($m, "m")?,
            int($n, "n")?,
            int($k, "k")?,
            int($lda, "lda")?,
            int($ldb, "ldb")?,
            int($ldc, "ldc")?,
        );
        // SAFETY: the caller upholds the BLAS contract (see HostBlas); arguments fit in int.
        unsafe {
            ($self.$f)(
                CBLAS_COL_MAJOR,
                cblas_trans($ta),
                cblas_trans($tb),
                args.0,
                args.1,
                args.2,
                $alpha,
                $a,
                args.3,
                $b,
                args.4,
                $beta,
                $c,
                args.5,
            )
        };
        Ok(())
    }};
}

/// A complex CBLAS call: alpha and beta by pointer; the library's routine `$f`, or the
/// pure-Rust fallback's `$fallback` when the library lacks it.
macro_rules! cblas_complex_call {
    ($self:ident, $f:ident, $fallback:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident,
     $alpha:ident, $a:ident, $lda:ident, $b:ident, $ldb:ident, $beta:ident, $c:ident,
     $ldc:ident) => {{
        let Some(f) = $self.$f else {
            // SAFETY: forwarded caller contract.
            return unsafe {
                $self.complex_fallback.$fallback(
                    $ta, $tb, $m, $n, $k, $alpha, $a, $lda, $b, $ldb, $beta, $c, $ldc,
                )
            };
        };
        let args = (
            int($m, "m")?,
            int($n, "n")?,
            int($k, "k")?,
            int($lda, "lda")?,
            int($ldb, "ldb")?,
            int($ldc, "ldc")?,
        );
        // SAFETY: the caller upholds the BLAS contract (see HostBlas); arguments fit in int;
        // alpha and beta are locals that outlive the call, of the routine's complex type.
        unsafe {
            f(
                CBLAS_COL_MAJOR,
                cblas_trans($ta),
                cblas_trans($tb),
                args.0,
                args.1,
                args.2,
                std::ptr::from_ref(&$alpha).cast(),
                $a.cast(),
                args.3,
                $b.cast(),
                args.4,
                std::ptr::from_ref(&$beta).cast(),
                $c.cast(),
                args.5,
            )
        };
        Ok(())
    }};
}

impl HostBlas for Cblas {
    fn describe(&self) -> &str {
        &self.describe
    }
    fn kind(&self) -> &'static str {
        self.kind
    }
    fn library(&self) -> Option<&str> {
        Some(&self.path)
    }
    fn set_threads(&self, threads: usize) {
        if let Some(f) = self.set_threads {
            // SAFETY: openblas_set_num_threads(int) may be called at any time between calls.
            unsafe { f(threads.clamp(1, i32::MAX as usize) as i32) };
        }
    }
    unsafe fn tri(
        &self,
        routine: hetblas_core::problem::TriRoutine,
        op: &hetblas_core::TriTile,
    ) -> Result<()> {
        // SAFETY: forwarded caller contract.
        unsafe { self.tri.run(routine, op) }
    }
    unsafe fn dgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: f64,
        a: *const f64,
        lda: usize,
        b: *const f64,
        ldb: usize,
        beta: f64,
        c: *mut f64,
        ldc: usize,
    ) -> Result<()> {
        cblas_call!(self, dgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    }
    unsafe fn sgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: f32,
        a: *const f32,
        lda: usize,
        b: *const f32,
        ldb: usize,
        beta: f32,
        c: *mut f32,
        ldc: usize,
    ) -> Result<()> {
        cblas_call!(self, sgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    }
    unsafe fn cgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: c32,
        a: *const c32,
        lda: usize,
        b: *const c32,
        ldb: usize,
        beta: c32,
        c: *mut c32,
        ldc: usize,
    ) -> Result<()> {
        cblas_complex_call!(
            self, cgemm, cgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc
        )
    }
    unsafe fn zgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: c64,
        a: *const c64,
        lda: usize,
        b: *const c64,
        ldb: usize,
        beta: c64,
        c: *mut c64,
        ldc: usize,
    ) -> Result<()> {
        cblas_complex_call!(
            self, zgemm, zgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc
        )
    }
}

/// The embedded fallback: the pure-Rust `gemm` crate (no system library needed).
pub struct RustGemm {
    threads: usize,
    describe: String,
}

impl RustGemm {
    /// `threads` = 0 uses every core.
    pub fn new(threads: usize) -> RustGemm {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        RustGemm {
            threads,
            describe: format!("pure-Rust gemm crate, {threads} threads"),
        }
    }

    fn parallelism(&self) -> gemm::Parallelism {
        if self.threads > 1 {
            gemm::Parallelism::Rayon(self.threads)
        } else {
            gemm::Parallelism::None
        }
    }
}

/// Strides (col stride, row stride) of op(X) for a stored column-major X.
fn op_strides(t: Trans, ld: usize) -> (isize, isize) {
    if t.is_transposed() {
        (1, ld as isize)
    } else {
        (ld as isize, 1)
    }
}

macro_rules! rust_gemm_call {
    ($self:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident, $alpha:ident, $a:ident,
     $lda:ident, $b:ident, $ldb:ident, $beta:ident, $c:ident, $ldc:ident, $zero:expr) => {{
        let (acs, ars) = op_strides($ta, $lda);
        let (bcs, brs) = op_strides($tb, $ldb);
        // SAFETY: the caller upholds the BLAS contract; the gemm crate computes
        // dst = alpha*dst + beta*lhs*rhs, so BLAS beta goes to its alpha and BLAS alpha to its
        // beta; read_dst = false when BLAS beta == 0, so C is never read then. `C` conjugates
        // an operand (conj_lhs / conj_rhs; the flags are ignored for real types).
        unsafe {
            gemm::gemm(
                $m,
                $n,
                $k,
                $c,
                $ldc as isize,
                1,
                $beta != $zero,
                $a,
                acs,
                ars,
                $b,
                bcs,
                brs,
                $beta,
                $alpha,
                false,
                $ta.is_conjugated(),
                $tb.is_conjugated(),
                $self.parallelism(),
            )
        };
        Ok(())
    }};
}

impl HostBlas for RustGemm {
    fn describe(&self) -> &str {
        &self.describe
    }
    fn kind(&self) -> &'static str {
        "rust"
    }
    unsafe fn dgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: f64,
        a: *const f64,
        lda: usize,
        b: *const f64,
        ldb: usize,
        beta: f64,
        c: *mut f64,
        ldc: usize,
    ) -> Result<()> {
        rust_gemm_call!(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, 0.0)
    }
    unsafe fn sgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: f32,
        a: *const f32,
        lda: usize,
        b: *const f32,
        ldb: usize,
        beta: f32,
        c: *mut f32,
        ldc: usize,
    ) -> Result<()> {
        rust_gemm_call!(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, 0.0)
    }
    unsafe fn cgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: c32,
        a: *const c32,
        lda: usize,
        b: *const c32,
        ldb: usize,
        beta: c32,
        c: *mut c32,
        ldc: usize,
    ) -> Result<()> {
        let zero = c32::new(0.0, 0.0);
        rust_gemm_call!(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, zero)
    }
    unsafe fn zgemm(
        &self,
        ta: Trans,
        tb: Trans,
        m: usize,
        n: usize,
        k: usize,
        alpha: c64,
        a: *const c64,
        lda: usize,
        b: *const c64,
        ldb: usize,
        beta: c64,
        c: *mut c64,
        ldc: usize,
    ) -> Result<()> {
        let zero = c64::new(0.0, 0.0);
        rust_gemm_call!(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, zero)
    }
}

/// Which host BLAS to use, and why.
pub struct BlasChoice {
    pub blas: std::sync::Arc<dyn HostBlas>,
    /// Libraries tried and why each was not taken (empty when the first one worked).
    pub tried: Vec<String>,
}

/// Which host BLAS to load: a setting (`HETBLAS_CBLAS`, which the `hetblas` crate reads).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BlasLibrary {
    /// The first of [`CBLAS_CANDIDATES`] that loads, else the pure-Rust GEMM.
    #[default]
    Search,
    /// The pure-Rust GEMM, whatever is installed (`HETBLAS_CBLAS=rust`).
    Rust,
    /// This library, and no other (`HETBLAS_CBLAS=/path/lib.so`).
    Path(std::path::PathBuf),
}

/// Picks the host BLAS `library` says: a named library must load (the user asked for it: an
/// error says why it did not); the search takes the first of [`CBLAS_CANDIDATES`] that loads,
/// else the pure-Rust fallback.
///
/// # Errors
/// `Unavailable` when the named library cannot be loaded or is not a CBLAS.
pub fn choose_blas(library: &BlasLibrary) -> Result<BlasChoice> {
    match library {
        BlasLibrary::Rust => {
            return Ok(BlasChoice {
                blas: std::sync::Arc::new(RustGemm::new(0)),
                tried: vec!["HETBLAS_CBLAS=rust: fallback forced".into()],
            })
        }
        BlasLibrary::Path(p) => {
            let lib = Cblas::open(&p.to_string_lossy())?;
            return Ok(BlasChoice {
                blas: std::sync::Arc::new(lib),
                tried: vec![],
            });
        }
        BlasLibrary::Search => {}
    }
    let mut tried = Vec::new();
    for name in CBLAS_CANDIDATES {
        match Cblas::open(name) {
            Ok(lib) => {
                return Ok(BlasChoice {
                    blas: std::sync::Arc::new(lib),
                    tried,
                })
            }
            Err(e) => tried.push(match e {
                Error::Unavailable { reason, .. } => reason,
                other => other.to_string(),
            }),
        }
    }
    Ok(BlasChoice {
        blas: std::sync::Arc::new(RustGemm::new(0)),
        tried,
    })
}

/// Where a CBLAS library would be looked for (for messages).
pub fn search_note() -> String {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(p) = std::env::var("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    format!(
        "searched {} via the dynamic loader{}",
        CBLAS_CANDIDATES.join(", "),
        if dirs.is_empty() {
            String::new()
        } else {
            format!(" (LD_LIBRARY_PATH: {dirs:?})")
        }
    )
}
