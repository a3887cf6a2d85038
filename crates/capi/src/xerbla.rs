//! Reporting bad arguments: `xerbla_` (Fortran entries) and `cblas_xerbla` (CBLAS entries),
//! found at the global scope so that a program's own handler is the one called, as the
//! reference BLAS's test programs require. hetblas exports default handlers that print the
//! reference's message to stderr and return (like OpenBLAS: a drop-in must not end a program
//! that its previous BLAS let live).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// The integer type of an entry point selects its handler: `xerbla_` (i32) or `xerbla_64_`.
pub trait XerblaInt: Copy {
    /// The handler's symbol.
    const SYMBOL: &'static CStr;
    /// Converts a parameter number.
    fn from_info(info: i32) -> Self;
}
impl XerblaInt for i32 {
    const SYMBOL: &'static CStr = c"xerbla_";
    fn from_info(info: i32) -> Self {
        info
    }
}
impl XerblaInt for i64 {
    #[cfg(not(feature = "ilp64"))]
    const SYMBOL: &'static CStr = c"xerbla_64_";
    #[cfg(feature = "ilp64")]
    const SYMBOL: &'static CStr = c"xerbla_";
    fn from_info(info: i32) -> Self {
        info as i64
    }
}

/// Looks `name` up at the global scope (the program first, then preloaded libraries, then the
/// rest, in the dynamic linker's order).
fn global(name: &CStr) -> usize {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads the loader's tables.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

/// The base address of the object (executable or library) that holds `addr`.
fn object_base(addr: usize) -> usize {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    let found = unsafe { libc::dladdr(addr as *const c_void, &mut info) };
    if found == 0 {
        0
    } else {
        info.dli_fbase as usize
    }
}

/// Whether `addr` lies in hetblas itself. (Comparing with the address of our own exported
/// function would not do: inside a shared library that address is itself interposed, so it
/// is the program's function when the program defines one.)
pub fn is_ours(addr: usize) -> bool {
    static OWN: OnceLock<usize> = OnceLock::new();
    let own = *OWN.get_or_init(|| object_base(object_base as *const () as usize));
    object_base(addr) == own
}

fn handler<I: XerblaInt>() -> usize {
    static LP: OnceLock<usize> = OnceLock::new();
    static ILP: OnceLock<usize> = OnceLock::new();
    let cell = if std::mem::size_of::<I>() == 4 {
        &LP
    } else {
        &ILP
    };
    *cell.get_or_init(|| global(I::SYMBOL))
}

/// Reports parameter `info` of Fortran routine `name` ("DGEMM") as the reference does.
pub fn report<I: XerblaInt>(name: &str, info: i32) {
    // The reference passes the name as CHARACTER*6 ('DGEMM '), blank-padded.
    let padded = format!("{name:<6}");
    let addr = handler::<I>();
    if addr == 0 || is_ours(addr) {
        print_reference(name, info);
        return;
    }
    type Xerbla<I> = unsafe extern "C" fn(*const c_char, *const I, usize);
    // SAFETY: the symbol is the program's XERBLA (SUBROUTINE XERBLA(SRNAME, INFO) with the
    // gfortran hidden length), found by name; it reads `padded.len()` characters and one int.
    let f: Xerbla<I> = unsafe { std::mem::transmute::<usize, Xerbla<I>>(addr) };
    let info = I::from_info(info);
    // SAFETY: as above; both pointers are valid for the call.
    unsafe { f(padded.as_ptr().cast(), &info, padded.len()) };
}

fn print_reference(name: &str, info: i32) {
    eprintln!(" ** On entry to {name} parameter number {info:2} had an illegal value");
}

/// Reports parameter `info` of CBLAS routine `name` ("cblas_dgemm"). `row_major` tells the
/// default handler to undo the reference's row-major renumbering, `swaps` (the routine's
/// `swap(..)` on its `cblas!` line; see [`unswap`]).
pub fn report_cblas(name: &str, info: i32, row_major: bool, swaps: &[(i32, i32)]) {
    static H: OnceLock<usize> = OnceLock::new();
    let addr = *H.get_or_init(|| global(c"cblas_xerbla"));
    let cname = std::ffi::CString::new(name).unwrap_or_default();
    if addr == 0 || is_ours(addr) {
        let info = if row_major { unswap(swaps, info) } else { info };
        print_cblas(info, name);
        return;
    }
    // A program built for 64-bit CBLAS integers (the `ilp64` library) declares
    // `cblas_xerbla(int64_t info, ...)`.
    #[cfg(not(feature = "ilp64"))]
    type Info = c_int;
    #[cfg(feature = "ilp64")]
    type Info = i64;
    type CblasXerbla = unsafe extern "C" fn(Info, *const c_char, *const c_char, ...);
    // SAFETY: the program's `void cblas_xerbla(CBLAS_INT info, const char *rout, const char
    // *form, ...)`, found by name.
    let f: CblasXerbla = unsafe { std::mem::transmute::<usize, CblasXerbla>(addr) };
    // SAFETY: valid C strings; the format has no conversions.
    unsafe { f(Info::from(info), cname.as_ptr(), c"".as_ptr()) };
}

fn print_cblas(info: i32, name: &str) {
    eprintln!("Parameter {info} to routine {name} was incorrect");
}

/// The reference CBLAS numbers a row-major call's errors as the column-major Fortran routine
/// it calls sees them (plus one), with some arguments swapped; its `cblas_xerbla` swaps them
/// back when `RowMajorStrg` is set. hetblas reports the reference's numbers (programs' handlers,
/// such as the CBLAS test programs', expect them), and its default handler undoes the swap:
/// `swaps` are the routine's exchanged pairs, from its `cblas!` line (GEMM: 4 and 5, 9 and 11).
pub fn unswap(swaps: &[(i32, i32)], info: i32) -> i32 {
    for &(a, b) in swaps {
        if info == a {
            return b;
        }
        if info == b {
            return a;
        }
    }
    info
}

/// Reference CBLAS's flag, read by a program's `cblas_xerbla` to renumber a row-major call's
/// errors. hetblas reports final numbers, so it stays 0. It is exported because programs built
/// against the reference CBLAS (its test programs) refer to it, and a host BLAS that lacks it
/// (OpenBLAS) would leave them with an undefined symbol.
#[allow(non_upper_case_globals)] // the reference CBLAS's exported name
#[no_mangle]
pub static RowMajorStrg: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Reference CBLAS's other exported flag (set while a CBLAS routine runs); always 0 here.
#[allow(non_upper_case_globals)] // the reference CBLAS's exported name
#[no_mangle]
pub static CBLAS_CallFromC: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The default Fortran error handler: prints the reference BLAS's message and returns.
///
/// # Safety
/// `srname` points to `len` readable bytes (or is null) and `info` to an int (or is null).
#[no_mangle]
pub unsafe extern "C" fn xerbla_(srname: *const c_char, info: *const i32, len: usize) {
    crate::abi::guard("xerbla_", || {
        // SAFETY: per the contract above.
        let (name, info) = unsafe { read_args(srname, len, info.as_ref().copied().unwrap_or(0)) };
        print_reference(&name, info);
    })
}

/// The default handler of the ILP64 entries (`xerbla_64_`).
///
/// # Safety
/// As [`xerbla_`], with a 64-bit `info`.
#[no_mangle]
pub unsafe extern "C" fn xerbla_64_(srname: *const c_char, info: *const i64, len: usize) {
    crate::abi::guard("xerbla_64_", || {
        // SAFETY: per the contract above.
        let i = unsafe { info.as_ref().copied().unwrap_or(0) } as i32;
        // SAFETY: per the contract above.
        let (name, info) = unsafe { read_args(srname, len, i) };
        print_reference(&name, info);
    })
}

/// # Safety
/// `srname` is null or points to `len` readable bytes (at most 32 are read).
unsafe fn read_args(srname: *const c_char, len: usize, info: i32) -> (String, i32) {
    if srname.is_null() {
        return (String::new(), info);
    }
    // SAFETY: the caller provides `len` bytes; a length of 0 or one above 32 (a caller without
    // the hidden length) is read as 6, the reference's CHARACTER*6.
    let len = if len == 0 || len > 32 { 6 } else { len };
    // SAFETY: see above.
    let bytes = unsafe { std::slice::from_raw_parts(srname.cast::<u8>(), len) };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(len);
    let name = String::from_utf8_lossy(&bytes[..end])
        .trim_end()
        .to_string();
    (name, info)
}

/// The default CBLAS error handler (the reference's message; it returns).
///
/// # Safety
/// `rout` is null or a C string.
#[no_mangle]
pub unsafe extern "C" fn cblas_xerbla(info: c_int, rout: *const c_char, _form: *const c_void) {
    crate::abi::guard("cblas_xerbla", || {
        let name = if rout.is_null() {
            String::new()
        } else {
            // SAFETY: a C string per the contract.
            unsafe { CStr::from_ptr(rout) }
                .to_string_lossy()
                .into_owned()
        };
        print_cblas(info, &name);
    })
}

/// The reference BLAS's LSAME: whether two characters are equal regardless of case (LAPACK
/// built against a libblas.so.3 calls it there).
///
/// # Safety
/// Both pointers point to a readable character.
#[no_mangle]
pub unsafe extern "C" fn lsame_(ca: *const c_char, cb: *const c_char) -> c_int {
    // SAFETY: per the contract above.
    let (a, b) = unsafe { (*ca as u8, *cb as u8) };
    c_int::from(a.eq_ignore_ascii_case(&b))
}

/// The reference BLAS's XERBLA_ARRAY: XERBLA for callers holding the name as a character
/// array of `srname_len` elements (C callers of LAPACK).
///
/// # Safety
/// `srname` points to `*srname_len` readable bytes; `srname_len` and `info` are valid.
#[no_mangle]
pub unsafe extern "C" fn xerbla_array_(
    srname: *const c_char,
    srname_len: *const i32,
    info: *const i32,
) {
    crate::abi::guard("xerbla_array_", || {
        // SAFETY: per the contract above.
        let (len, info) = unsafe { ((*srname_len).clamp(0, 32) as usize, *info) };
        let bytes: &[u8] = if len == 0 || srname.is_null() {
            &[]
        } else {
            // SAFETY: `len` readable bytes.
            unsafe { std::slice::from_raw_parts(srname.cast::<u8>(), len) }
        };
        let name = String::from_utf8_lossy(bytes).trim_end().to_string();
        report::<i32>(&name, info);
    })
}

#[cfg(test)]
mod tests {
    /// `unswap` as the default handler applies it to the routine `name`.
    fn unswap(name: &str, info: i32) -> i32 {
        let mut decls = crate::cblas::DECLS.iter().flat_map(|line| line.iter());
        let swaps = decls.find(|d| d.name == name).map(|d| d.swaps);
        super::unswap(
            swaps.unwrap_or_else(|| panic!("{name} is not on a cblas! line")),
            info,
        )
    }

    #[test]
    fn unswap_undoes_the_reference_row_major_numbering() {
        // Row-major cblas_dgemm with a bad M is reported by the reference as 5 (N's place in
        // the column-major call it makes); its handler shows 4.
        assert_eq!(unswap("cblas_dgemm", 5), 4);
        assert_eq!(unswap("cblas_dgemm", 11), 9);
        assert_eq!(unswap("cblas_dgemm", 14), 14);
        assert_eq!(unswap("cblas_dgemmtr", 9), 11);
        assert_eq!(unswap("cblas_zgemmt", 11), 9);
        assert_eq!(unswap("cblas_sgemmt", 5), 5);
        assert_eq!(unswap("cblas_cgemmtr", 4), 4);
        assert_eq!(unswap("cblas_zgerc", 8), 6);
        assert_eq!(unswap("cblas_zher2", 6), 8);
        assert_eq!(unswap("cblas_zher2k", 6), 6);
        assert_eq!(unswap("cblas_strsm", 7), 6);
        assert_eq!(unswap("cblas_ssyrk", 4), 4);
    }
}
