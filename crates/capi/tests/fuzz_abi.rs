//! Fuzzing the C ABI of libhetblas.so in-process: the library is loaded with `dlopen` and its
//! symbols are called with seeded random arguments over the whole argument space of each
//! routine covered: valid and invalid option characters and enumerations, negative, zero and
//! small dimensions (and, through the 64-bit integer entries, dimensions beyond 32 bits),
//! leading dimensions below, at and above their minimum, alpha and beta 0, 1 and random, NaN
//! in C.
//!
//! - GEMM (S, D, C, Z) through `?gemm_` (LP64), `?gemm_64_` (ILP64), `cblas_?gemm` and
//!   `cblas_?gemm64_`, column- and row-major: every invalid call must reach the program's
//!   handler (`xerbla_`, `xerbla_64_`, `cblas_xerbla`, defined by a small C library that the
//!   test loads first, globally) once, with the reference's routine name and parameter number
//!   (hetblas-refblas's checks, in the reference's order; CBLAS numbering: the enumerations
//!   first, then the Fortran number plus one, of the transposed call in row-major), and leave
//!   C as it was; every valid call must leave C within the dtype's error bound of an
//!   f64-accumulated reference, and bit-identical where the math is (quick returns: m or n 0,
//!   or alpha or k 0 with beta 1), with the padding rows of C untouched.
//! - AXPY (S, D, C, Z) through `?axpy_`, `?axpy_64_` and `cblas_?axpy`, which pass through to
//!   the host BLAS: bit-identical to calling the host BLAS (OpenBLAS) directly.
//!
//! More than 100,000 cases; 0 wrong, 0 panics (a panic in the library is caught at its entry
//! and would show as a wrong or unreported case).

mod common;

use common::lib_dir;
use hetblas_refblas::gemm_check;
use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LOCAL, RTLD_NOW};
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The program's error handlers: they record the last report (name, parameter) and count.
const HANDLERS_C: &str = r#"
#include <stdint.h>
#include <string.h>
char fz_name[64]; long long fz_info; int fz_calls;
static void keep(const char *s, size_t len, long long info) {
    size_t n = len < sizeof fz_name - 1 ? len : sizeof fz_name - 1;
    memcpy(fz_name, s, n); fz_name[n] = 0;
    while (n > 0 && fz_name[n - 1] == ' ') fz_name[--n] = 0;
    fz_info = info; fz_calls++;
}
void xerbla_(const char *s, const int *info, size_t len) { keep(s, len, *info); }
void xerbla_64_(const char *s, const int64_t *info, size_t len) { keep(s, len, *info); }
void cblas_xerbla(int info, const char *rout, const char *form, ...) {
    (void)form; keep(rout, strlen(rout), info);
}
"#;

struct Libs {
    hetblas: Library,
    handlers: Library,
    host: Option<Library>,
}

fn libs() -> &'static Libs {
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
        // handlers go first and globally, so that the library's look-up finds them.
        unsafe {
            let handlers = Library::open(Some(&so), RTLD_NOW | RTLD_GLOBAL).expect("handlers");
            let hetblas =
                Library::open(Some(lib_dir().join("libhetblas.so")), RTLD_NOW | RTLD_LOCAL)
                    .expect("libhetblas.so");
            let host = Library::open(Some("libopenblas.so.0"), RTLD_NOW | RTLD_LOCAL).ok();
            Libs {
                hetblas,
                handlers,
                host,
            }
        }
    })
}

/// The handler's record: (calls, name, parameter). Resets it.
fn take_report() -> (i32, String, i64) {
    let h = &libs().handlers;
    // SAFETY: the three globals of HANDLERS_C, with their C types; the test is single-threaded
    // in its use of them (one test function calls the library).
    unsafe {
        let calls = *h.get::<*mut c_int>(b"fz_calls").unwrap();
        let info = *h.get::<*mut i64>(b"fz_info").unwrap();
        let name = *h.get::<*mut c_char>(b"fz_name").unwrap();
        let r = (
            *calls,
            std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned(),
            *info,
        );
        *calls = 0;
        *name = 0;
        *info = 0;
        r
    }
}

fn sym<T: Copy>(lib: &Library, name: &str) -> T {
    // SAFETY: the caller names the symbol's C type as T.
    unsafe {
        *lib.get::<T>(name.as_bytes())
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// Seeded xorshift.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// The element types, as the test needs them.
trait El: Copy + PartialEq + std::fmt::Debug + 'static {
    const P: char;
    const EPS: f64;
    fn make(re: f64, im: f64) -> Self;
    fn c(self) -> C64;
    fn same_bits(self, o: Self) -> bool;
    /// CBLAS passes real scalars by value and complex ones by address: the scalar argument.
    type Arg: Copy;
    fn arg(x: &Self) -> Self::Arg;
    #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
    unsafe fn cblas_gemm<I: Copy>(
        f: *const c_void,
        o: c_int,
        ta: c_int,
        tb: c_int,
        m: I,
        n: I,
        k: I,
        alpha: &Self,
        a: *const Self,
        lda: I,
        b: *const Self,
        ldb: I,
        beta: &Self,
        c: *mut Self,
        ldc: I,
    ) {
        type F<I, T, S> = unsafe extern "C" fn(
            c_int,
            c_int,
            c_int,
            I,
            I,
            I,
            S,
            *const T,
            I,
            *const T,
            I,
            S,
            *mut T,
            I,
        );
        // SAFETY: `f` is cblas_?gemm of this type and integer width.
        unsafe {
            let f: F<I, Self, Self::Arg> = std::mem::transmute(f);
            let (alpha, beta) = (Self::arg(alpha), Self::arg(beta));
            f(o, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
        }
    }
    unsafe fn cblas_axpy(
        f: *const c_void,
        n: c_int,
        alpha: &Self,
        x: *const Self,
        incx: c_int,
        y: *mut Self,
        incy: c_int,
    ) {
        type F<T, S> = unsafe extern "C" fn(c_int, S, *const T, c_int, *mut T, c_int);
        // SAFETY: `f` is cblas_?axpy of this type.
        unsafe {
            let f: F<Self, Self::Arg> = std::mem::transmute(f);
            f(n, Self::arg(alpha), x, incx, y, incy)
        }
    }
}

macro_rules! real_el {
    ($T:ty, $p:literal, $eps:expr) => {
        impl El for $T {
            const P: char = $p;
            const EPS: f64 = $eps;
            fn make(re: f64, _im: f64) -> Self {
                re as $T
            }
            fn c(self) -> C64 {
                C64::new(self as f64, 0.0)
            }
            fn same_bits(self, o: Self) -> bool {
                self.to_bits() == o.to_bits()
            }
            type Arg = $T;
            fn arg(x: &Self) -> $T {
                *x
            }
        }
    };
}
macro_rules! complex_el {
    ($T:ty, $R:ty, $p:literal, $eps:expr) => {
        impl El for $T {
            const P: char = $p;
            const EPS: f64 = $eps;
            fn make(re: f64, im: f64) -> Self {
                <$T>::new(re as $R, im as $R)
            }
            fn c(self) -> C64 {
                C64::new(self.re as f64, self.im as f64)
            }
            fn same_bits(self, o: Self) -> bool {
                self.re.to_bits() == o.re.to_bits() && self.im.to_bits() == o.im.to_bits()
            }
            type Arg = *const $T;
            fn arg(x: &Self) -> *const $T {
                x
            }
        }
    };
}
real_el!(f32, 's', f32::EPSILON as f64);
real_el!(f64, 'd', f64::EPSILON);
complex_el!(C32, f32, 'c', f32::EPSILON as f64);
complex_el!(C64, f64, 'z', f64::EPSILON);

/// The integer widths of the entries.
trait Int: Copy + std::fmt::Debug {
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

const BUF: usize = 160;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Api {
    Fortran32,
    Fortran64,
    Cblas32,
    Cblas64,
}

/// What a case was, for its message.
#[allow(dead_code)] // reason: read through Debug only
#[derive(Debug)]
struct GemmCase<T> {
    api: Api,
    /// CBLAS layout (101 row, 102 column, other invalid); Fortran: column.
    layout: c_int,
    ta: u8,
    tb: u8,
    m: i64,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
    alpha: T,
    beta: T,
}

fn cblas_trans(t: u8) -> c_int {
    match t {
        b'N' | b'n' => 111,
        b'T' | b't' => 112,
        b'C' | b'c' => 113,
        _ => 110,
    }
}

/// Column-major GEMM reference, f64-accumulated, with its elementwise error bound; writes
/// nothing, returns (value, bound) per entry of the m x n C.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
fn gemm_ref<T: El>(
    ta: u8,
    tb: u8,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &[T],
    lda: usize,
    b: &[T],
    ldb: usize,
    beta: T,
    c: &[T],
    ldc: usize,
) -> Vec<(C64, f64)> {
    let op = |t: u8, x: &[T], ld: usize, r: usize, s: usize| -> C64 {
        match t.to_ascii_uppercase() {
            b'N' => x[r + s * ld].c(),
            b'T' => x[s + r * ld].c(),
            _ => x[s + r * ld].c().conj(),
        }
    };
    let (al, be) = (alpha.c(), beta.c());
    let mut out = Vec::with_capacity(m * n);
    for j in 0..n {
        for i in 0..m {
            let (mut s, mut mag) = (C64::new(0.0, 0.0), 0.0);
            for l in 0..k {
                let p = op(ta, a, lda, i, l) * op(tb, b, ldb, l, j);
                s += p;
                mag += p.norm();
            }
            // beta 0: C is not read (NaN there does not survive).
            let c0 = if be == C64::new(0.0, 0.0) {
                C64::new(0.0, 0.0)
            } else {
                c[i + j * ldc].c()
            };
            let v = al * s + be * c0;
            let bound = 4.0 * (k as f64 + 2.0) * T::EPS * (al.norm() * mag + be.norm() * c0.norm())
                + f64::MIN_POSITIVE;
            out.push((v, bound));
        }
    }
    out
}

/// One GEMM case through `api`; `Err` describes a wrong outcome.
/// `Ok(true)` for an invalid call reported as it should be.
fn gemm_case<T: El>(rng: &mut Rng, api: Api) -> Result<bool, String> {
    let wide = matches!(api, Api::Fortran64 | Api::Cblas64);
    let dims: &[i64] = if wide {
        &[-(1 << 33), -1, 0, 1, 2, 3, 4, 5, 7]
    } else {
        &[-7, -1, 0, 1, 2, 3, 4, 5, 7]
    };
    let trans = [b'N', b'T', b'C', b'n', b't', b'c', b'X'];
    let (m, n, k) = (rng.pick(dims), rng.pick(dims), rng.pick(dims));
    let (ta, tb) = if rng.below(8) == 0 {
        (rng.pick(&trans), rng.pick(&trans))
    } else {
        (rng.pick(&trans[..6]), rng.pick(&trans[..6]))
    };
    let layout = match api {
        Api::Fortran32 | Api::Fortran64 => 102,
        _ => rng.pick(&[101, 102, 101, 102, 101, 102, 101, 102, 0]),
    };
    let row = layout == 101;
    // In row-major the column-major call is the transposed one: (tb, ta, n, m, ...).
    let (fm, fn_) = if row { (n, m) } else { (m, n) };
    let (fa_t, fb_t) = if row { (tb, ta) } else { (ta, tb) };
    let min_ld = |t: u8, r: i64, s: i64| if t.eq_ignore_ascii_case(&b'N') { r } else { s }.max(1);
    // Minimum leading dimensions of A and B as the caller stores them.
    let (a_rows, b_rows) = if row {
        (min_ld(ta, k, m), min_ld(tb, n, k))
    } else {
        (min_ld(ta, m, k), min_ld(tb, k, n))
    };
    let c_rows = if row { n.max(1) } else { m.max(1) };
    let mut ld = |min: i64| match rng.below(10) {
        0 => min - 1,
        1 => 0,
        2 | 3 => min + 2,
        _ => min,
    };
    let (lda, ldb, ldc) = (ld(a_rows), ld(b_rows), ld(c_rows));
    let scalar = |rng: &mut Rng| match rng.below(5) {
        0 => T::make(0.0, 0.0),
        1 => T::make(1.0, 0.0),
        _ => T::make(rng.unit(), rng.unit()),
    };
    let (alpha, beta) = (scalar(rng), scalar(rng));
    let case = GemmCase {
        api,
        layout,
        ta,
        tb,
        m,
        n,
        k,
        lda,
        ldb,
        ldc,
        alpha,
        beta,
    };

    // The expected report: (name, parameter), or none.
    let name = format!("{}GEMM", T::P.to_ascii_uppercase());
    let fortran = |ta, tb, m, n, k, lda, ldb, ldc| gemm_check(ta, tb, m, n, k, lda, ldb, ldc);
    let expected: Option<(String, i64)> = match api {
        Api::Fortran32 | Api::Fortran64 => {
            let p = fortran(ta, tb, m, n, k, lda, ldb, ldc);
            (p != 0).then(|| (name.clone(), p as i64))
        }
        Api::Cblas32 | Api::Cblas64 => {
            let cname = format!("cblas_{}gemm", T::P);
            let p = if layout != 101 && layout != 102 {
                1
            } else if cblas_trans(ta) == 110 {
                2
            } else if cblas_trans(tb) == 110 {
                3
            } else {
                let ca = |t: u8| t.to_ascii_uppercase();
                let p = if row {
                    fortran(ca(tb), ca(ta), n, m, k, ldb, lda, ldc)
                } else {
                    fortran(ca(ta), ca(tb), m, n, k, lda, ldb, ldc)
                };
                if p == 0 {
                    0
                } else {
                    p + 1
                }
            };
            (p != 0).then_some((cname, p as i64))
        }
    };
    // A valid call reads only within these; an invalid one reads nothing.
    if expected.is_none() {
        let need = |ld: i64, cols: i64| (ld * (cols.max(1) - 1) + ld) as usize;
        let (a_cols, b_cols) = if row {
            (a_cols_row(ta, m, k), a_cols_row(tb, k, n))
        } else {
            (a_cols_col(ta, m, k), a_cols_col(tb, k, n))
        };
        assert!(
            need(lda, a_cols) <= BUF
                && need(ldb, b_cols) <= BUF
                && need(ldc, if row { m } else { n }) <= BUF,
            "buffers too small for {case:?}"
        );
    }
    let fill =
        |rng: &mut Rng| -> Vec<T> { (0..BUF).map(|_| T::make(rng.unit(), rng.unit())).collect() };
    let (a, b) = (fill(rng), fill(rng));
    let mut c0 = fill(rng);
    if rng.below(4) == 0 {
        c0[0] = T::make(f64::NAN, f64::NAN);
    }
    let mut c = c0.clone();
    let lib = &libs().hetblas;
    let p = T::P;
    // SAFETY: each symbol is called with its C signature and buffers of BUF elements, enough
    // for every valid shape generated (checked above).
    unsafe {
        match api {
            Api::Fortran32 | Api::Fortran64 => {
                macro_rules! call {
                    ($I:ty, $suffix:literal) => {{
                        type F<I, T> = unsafe extern "C" fn(
                            *const u8,
                            *const u8,
                            *const I,
                            *const I,
                            *const I,
                            *const T,
                            *const T,
                            *const I,
                            *const T,
                            *const I,
                            *const T,
                            *mut T,
                            *const I,
                            usize,
                            usize,
                        );
                        let f: F<$I, T> = sym(lib, &format!("{p}gemm{}", $suffix));
                        let (m, n, k, lda, ldb, ldc) = (
                            <$I>::of(m),
                            <$I>::of(n),
                            <$I>::of(k),
                            <$I>::of(lda),
                            <$I>::of(ldb),
                            <$I>::of(ldc),
                        );
                        f(
                            &ta,
                            &tb,
                            &m,
                            &n,
                            &k,
                            &alpha,
                            a.as_ptr(),
                            &lda,
                            b.as_ptr(),
                            &ldb,
                            &beta,
                            c.as_mut_ptr(),
                            &ldc,
                            1,
                            1,
                        )
                    }};
                }
                if api == Api::Fortran32 {
                    call!(i32, "_")
                } else {
                    call!(i64, "_64_")
                }
            }
            Api::Cblas32 => {
                let f: *const c_void = sym(lib, &format!("cblas_{p}gemm"));
                T::cblas_gemm::<i32>(
                    f,
                    layout,
                    cblas_trans(ta),
                    cblas_trans(tb),
                    m as i32,
                    n as i32,
                    k as i32,
                    &alpha,
                    a.as_ptr(),
                    lda as i32,
                    b.as_ptr(),
                    ldb as i32,
                    &beta,
                    c.as_mut_ptr(),
                    ldc as i32,
                )
            }
            Api::Cblas64 => {
                let f: *const c_void = sym(lib, &format!("cblas_{p}gemm64_"));
                T::cblas_gemm::<i64>(
                    f,
                    layout,
                    cblas_trans(ta),
                    cblas_trans(tb),
                    m,
                    n,
                    k,
                    &alpha,
                    a.as_ptr(),
                    lda,
                    b.as_ptr(),
                    ldb,
                    &beta,
                    c.as_mut_ptr(),
                    ldc,
                )
            }
        }
    }
    let (calls, got_name, got_info) = take_report();
    let untouched = |c: &[T]| c.iter().zip(&c0).all(|(x, y)| x.same_bits(*y));
    match expected {
        Some((want_name, want_info)) => {
            if calls != 1 || got_name != want_name || got_info != want_info {
                return Err(format!(
                    "{case:?}: expected one report {want_name} {want_info}, got {calls} (last {got_name} {got_info})"
                ));
            }
            if !untouched(&c) {
                return Err(format!("{case:?}: an invalid call wrote C"));
            }
            return Ok(true);
        }
        None => {
            if calls != 0 {
                return Err(format!(
                    "{case:?}: a valid call reported {got_name} {got_info}"
                ));
            }
            let (fm, fn_, fk) = (fm as usize, fn_ as usize, k as usize);
            let (fa, fb, flda, fldb) = if row {
                (&b, &a, ldb, lda)
            } else {
                (&a, &b, lda, ldb)
            };
            let zero = T::make(0.0, 0.0);
            let one = T::make(1.0, 0.0);
            let quick = fm == 0 || fn_ == 0 || ((alpha == zero || fk == 0) && beta == one);
            if quick {
                if !untouched(&c) {
                    return Err(format!("{case:?}: a quick return changed C"));
                }
                return Ok(false);
            }
            let want = gemm_ref(
                fa_t,
                fb_t,
                fm,
                fn_,
                fk,
                alpha,
                fa,
                flda as usize,
                fb,
                fldb as usize,
                beta,
                &c0,
                ldc as usize,
            );
            let ldc = ldc as usize;
            for (x, (&got, &orig)) in c.iter().zip(&c0).enumerate() {
                let (i, j) = (x % ldc, x / ldc);
                if i < fm && j < fn_ {
                    let (v, bound) = want[i + j * fm];
                    let g = got.c();
                    let ok = if v.re.is_finite() && v.im.is_finite() {
                        (g - v).norm() <= bound
                    } else {
                        // NaN in C with beta != 0 propagates.
                        g.re.is_nan() || g.im.is_nan() || g == v
                    };
                    if !ok {
                        return Err(format!(
                            "{case:?}: C({i}, {j}) = {g}, expected {v} +- {bound:e}"
                        ));
                    }
                } else if !got.same_bits(orig) {
                    return Err(format!(
                        "{case:?}: C({i}, {j}) outside the matrix was written"
                    ));
                }
            }
        }
    }
    Ok(false)
}

fn a_cols_col(t: u8, r: i64, s: i64) -> i64 {
    if t.eq_ignore_ascii_case(&b'N') {
        s
    } else {
        r
    }
}
fn a_cols_row(t: u8, r: i64, s: i64) -> i64 {
    if t.eq_ignore_ascii_case(&b'N') {
        r
    } else {
        s
    }
}

/// One AXPY case: the library against the host BLAS, bit for bit (the whole y buffer).
fn axpy_case<T: El>(rng: &mut Rng, api: Api, host: &Library) -> Result<(), String> {
    let n = rng.pick(&[-3i64, -1, 0, 1, 2, 3, 5, 8, 13]);
    let incs = [-3i64, -2, -1, 1, 1, 2, 3];
    let (incx, incy) = (rng.pick(&incs), rng.pick(&incs));
    let alpha = match rng.below(5) {
        0 => T::make(0.0, 0.0),
        1 => T::make(1.0, 0.0),
        _ => T::make(rng.unit(), rng.unit()),
    };
    let x: Vec<T> = (0..64).map(|_| T::make(rng.unit(), rng.unit())).collect();
    let y0: Vec<T> = (0..64).map(|_| T::make(rng.unit(), rng.unit())).collect();
    let (mut y, mut want) = (y0.clone(), y0.clone());
    let p = T::P;
    type F<I, T> = unsafe extern "C" fn(*const I, *const T, *const T, *const I, *mut T, *const I);
    let lib = &libs().hetblas;
    // SAFETY: ?axpy_ with its Fortran signature; 64 elements hold n = 13 at |inc| <= 3.
    unsafe {
        let h: F<i32, T> = sym(host, &format!("{p}axpy_"));
        let (n32, ix, iy) = (n as i32, incx as i32, incy as i32);
        h(&n32, &alpha, x.as_ptr(), &ix, want.as_mut_ptr(), &iy);
        match api {
            Api::Fortran32 => {
                let f: F<i32, T> = sym(lib, &format!("{p}axpy_"));
                f(&n32, &alpha, x.as_ptr(), &ix, y.as_mut_ptr(), &iy)
            }
            Api::Fortran64 => {
                let f: F<i64, T> = sym(lib, &format!("{p}axpy_64_"));
                f(&n, &alpha, x.as_ptr(), &incx, y.as_mut_ptr(), &incy)
            }
            Api::Cblas32 | Api::Cblas64 => {
                let f: *const c_void = sym(lib, &format!("cblas_{p}axpy"));
                T::cblas_axpy(f, n32, &alpha, x.as_ptr(), ix, y.as_mut_ptr(), iy)
            }
        }
    }
    let (calls, ..) = take_report();
    if calls != 0 {
        return Err(format!("{p}axpy {api:?} n {n} reported an error"));
    }
    match y.iter().zip(&want).position(|(a, b)| !a.same_bits(*b)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{p}axpy {api:?} n {n} incx {incx} incy {incy} alpha {alpha:?}: y[{i}] = {:?}, host BLAS {:?}",
            y[i], want[i]
        )),
    }
}

fn require_openblas() -> bool {
    std::env::var("HETBLAS_REQUIRE").is_ok_and(|v| v.split(',').any(|x| x.trim() == "openblas"))
}

#[test]
fn the_c_abi_over_its_argument_space() {
    let apis = [Api::Fortran32, Api::Fortran64, Api::Cblas32, Api::Cblas64];
    let (mut cases, mut invalid, mut wrong) = (0usize, 0usize, Vec::new());
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let per = 5_000;
    for api in apis {
        for p in 0..4 {
            for _ in 0..per {
                let r = match p {
                    0 => gemm_case::<f32>(&mut rng, api),
                    1 => gemm_case::<f64>(&mut rng, api),
                    2 => gemm_case::<C32>(&mut rng, api),
                    _ => gemm_case::<C64>(&mut rng, api),
                };
                cases += 1;
                match r {
                    Ok(true) => invalid += 1,
                    Ok(false) => {}
                    Err(e) => wrong.push(e),
                }
            }
        }
    }
    match &libs().host {
        Some(host) => {
            for api in [Api::Fortran32, Api::Fortran64, Api::Cblas32] {
                for p in 0..4 {
                    for _ in 0..2_000 {
                        let r = match p {
                            0 => axpy_case::<f32>(&mut rng, api, host),
                            1 => axpy_case::<f64>(&mut rng, api, host),
                            2 => axpy_case::<C32>(&mut rng, api, host),
                            _ => axpy_case::<C64>(&mut rng, api, host),
                        };
                        cases += 1;
                        if let Err(e) = r {
                            wrong.push(e);
                        }
                    }
                }
            }
        }
        None => {
            assert!(
                !require_openblas(),
                "HETBLAS_REQUIRE=openblas but libopenblas.so.0 is not loadable"
            );
            eprintln!("no libopenblas.so.0: the pass-through (bit-identical) cases are skipped");
        }
    }
    eprintln!(
        "{cases} cases ({invalid} invalid GEMM calls), {} wrong",
        wrong.len()
    );
    // About a third of the generated GEMM calls are invalid (each kind of argument wrong).
    assert!(invalid > 10_000, "{invalid} invalid calls");
    assert!(
        wrong.is_empty(),
        "{} wrong of {cases}; first: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
    assert!(cases >= 100_000 || libs().host.is_none(), "{cases} cases");
}
