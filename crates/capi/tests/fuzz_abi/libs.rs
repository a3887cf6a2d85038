//! The libraries a case calls, and the error handlers that record what they report.
//!
//! - libhetblas.so, the library under test;
//! - Debian's reference BLAS (`libblas3`: `blas/libblas.so.3`, LP64, with the reference CBLAS)
//!   and its ILP64 build (`libblas64-3`: `blas64/libblas64.so.3`, the same symbols with 64-bit
//!   integers): the oracle for which calls are invalid and what `xerbla` reports;
//! - the host BLAS (OpenBLAS), which libhetblas.so forwards to: the oracle for the values.
//!
//! The handlers (`xerbla_`, `xerbla_64_`, `cblas_xerbla`) are a small C library compiled here
//! and loaded first, globally: libhetblas.so looks its handler up at the global scope, and the
//! reference libraries call theirs through the PLT, so the global definition wins over the
//! reference's own (which would print and STOP the program). Every other library is loaded
//! locally, so their BLAS symbols never interpose on each other.

use super::common::lib_dir;
use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LOCAL, RTLD_NOW};
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The handlers: each counts, and the first report of a call (name, parameter, which handler)
/// is kept (the reference CBLAS reports a bad option and then passes it on to its Fortran
/// routine, which reports it again).
/// The ILP64 reference calls `xerbla_` with a 64-bit INFO; reading its low 32 bits (x86-64 is
/// little-endian) gives the parameter number, which is small.
const HANDLERS_C: &str = r#"
#include <stdint.h>
#include <string.h>
char fz_name[64]; long long fz_info; int fz_calls; int fz_kind;
static void keep(const char *s, size_t len, long long info, int kind) {
    if (fz_calls++ > 0) return; /* the first report is the call's */
    size_t n = len < sizeof fz_name - 1 ? len : sizeof fz_name - 1;
    memcpy(fz_name, s, n); fz_name[n] = 0;
    while (n > 0 && fz_name[n - 1] == ' ') fz_name[--n] = 0;
    fz_info = info; fz_kind = kind;
}
void xerbla_(const char *s, const int *info, size_t len) { keep(s, len, *info, 1); }
void xerbla_64_(const char *s, const int64_t *info, size_t len) { keep(s, len, *info, 2); }
void cblas_xerbla(int info, const char *rout, const char *form, ...) {
    (void)form; keep(rout, strlen(rout), info, 3);
}
"#;

/// Which handler a report came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// `xerbla_` (Fortran, 32-bit INFO; the reference ILP64 library's too).
    Xerbla,
    /// `xerbla_64_` (hetblas's ILP64 entries).
    Xerbla64,
    /// `cblas_xerbla`.
    Cblas,
}

/// What the handlers saw during one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub calls: i32,
    pub name: String,
    pub info: i64,
    pub handler: Option<Handler>,
}

pub struct Libs {
    pub hetblas: Library,
    handlers: Library,
    /// The reference BLAS, LP64 and ILP64 (`None` where not installed).
    pub reference: Option<Library>,
    pub reference64: Option<Library>,
    /// The host BLAS libhetblas.so forwards to (`None` where not installed).
    pub host: Option<Library>,
}

/// Debian's reference BLAS libraries (the packages `libblas3` and `libblas64-3`).
pub const REFERENCE: &str = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3";
pub const REFERENCE64: &str = "/usr/lib/x86_64-linux-gnu/blas64/libblas64.so.3";

pub fn libs() -> &'static Libs {
    static L: OnceLock<Libs> = OnceLock::new();
    L.get_or_init(|| {
        // The build's scratch directory, or the system's where the test runs from a bundle
        // built on another machine.
        let tmp = Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
            .filter(|d| d.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        let src = tmp.join("fuzz_abi_handlers.c");
        let so = tmp.join("libfuzz_abi_handlers.so");
        std::fs::write(&src, HANDLERS_C).expect("write the handlers' source");
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&so)
            .arg(&src)
            .output()
            .expect("the system C compiler `cc`");
        assert!(
            out.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // SAFETY: loading libraries whose initialisers are plain C and Rust statics. The
        // handlers go first and globally (see the module documentation).
        unsafe {
            let handlers = Library::open(Some(&so), RTLD_NOW | RTLD_GLOBAL).expect("handlers");
            let local = |p: &str| Library::open(Some(p), RTLD_NOW | RTLD_LOCAL).ok();
            let hetblas =
                Library::open(Some(lib_dir().join("libhetblas.so")), RTLD_NOW | RTLD_LOCAL)
                    .expect("libhetblas.so");
            Libs {
                hetblas,
                handlers,
                reference: local(REFERENCE),
                reference64: local(REFERENCE64),
                host: local("libopenblas.so.0"),
            }
        }
    })
}

/// The handlers' record since the last call; resets it.
pub fn take_report() -> Report {
    let h = &libs().handlers;
    // SAFETY: the four globals of HANDLERS_C, with their C types; one test thread at a time
    // calls the libraries (the tests that do hold `serial()`).
    unsafe {
        let calls = *h.get::<*mut c_int>(b"fz_calls").unwrap();
        let info = *h.get::<*mut i64>(b"fz_info").unwrap();
        let kind = *h.get::<*mut c_int>(b"fz_kind").unwrap();
        let name = *h.get::<*mut c_char>(b"fz_name").unwrap();
        let r = Report {
            calls: *calls,
            name: std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned(),
            info: *info,
            handler: match *kind {
                1 => Some(Handler::Xerbla),
                2 => Some(Handler::Xerbla64),
                3 => Some(Handler::Cblas),
                _ => None,
            },
        };
        *calls = 0;
        *name = 0;
        *info = 0;
        *kind = 0;
        r
    }
}

/// The address of `name` in `lib`, or `None`.
pub fn addr(lib: &Library, name: &str) -> Option<*const c_void> {
    // SAFETY: only the address is taken; callers call it with the routine's C prototype.
    unsafe { lib.get::<*const c_void>(name.as_bytes()) }
        .ok()
        .map(|s| s.into_raw() as *const c_void)
}

thread_local! {
    static PREFIX: std::cell::Cell<&'static str> = const { std::cell::Cell::new("") };
}

/// The name prefixes of libhetblas.so's entry families: the reference names, and the renamed
/// family of pip's NumPy and SciPy wheels (`scipy_dgemm_`, `scipy_cblas_dgemm64_`), whose
/// entries must behave as the reference names' do.
pub const PREFIXES: [&str; 2] = ["", "scipy_"];

/// Runs `f` with libhetblas.so's entries looked up under `prefix` (one of [`PREFIXES`]).
pub fn with_prefix<R>(prefix: &'static str, f: impl FnOnce() -> R) -> R {
    let old = PREFIX.with(|p| p.replace(prefix));
    let r = f();
    PREFIX.with(|p| p.set(old));
    r
}

/// The prefix in force ([`with_prefix`]).
pub fn prefix() -> &'static str {
    PREFIX.with(|p| p.get())
}

/// libhetblas.so's entry `name` (a reference name) under the prefix in force.
pub fn hetblas_addr(name: &str) -> Option<*const c_void> {
    addr(&libs().hetblas, &format!("{}{name}", prefix()))
}

/// One test at a time calls the libraries (the handlers' record is global).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static M: std::sync::Mutex<()> = std::sync::Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `HETBLAS_REQUIRE` (a comma-separated list) names `what`.
pub fn required(what: &str) -> bool {
    std::env::var("HETBLAS_REQUIRE")
        .is_ok_and(|v| v.split(',').any(|x| x.trim().eq_ignore_ascii_case(what)))
}
