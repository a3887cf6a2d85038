//! Finding a symbol's other definition among the libraries already loaded: the one a call
//! under that name would have reached without hetblas.
//!
//! A preloaded libhetblas.so comes first in every lookup, so `dlsym` by global name finds
//! hetblas itself. The definition it replaced is looked for in order:
//! 1. `dlsym(RTLD_NEXT, name)`: the next definition in the global scope (a program or library
//!    linked against `liblapack.so.3`, as R and Octave are);
//! 2. every loaded object, each through its own handle (`dlopen` with `RTLD_NOLOAD`, which loads
//!    and runs nothing): libraries a program loaded with `RTLD_LOCAL`, outside the global scope,
//!    such as the OpenBLAS a pip wheel bundles (Python loads extension modules that way).
//!
//! A definition inside hetblas itself ([`crate::xerbla::is_ours`]) is never taken.

use libloading::os::unix::Library;
use std::ffi::{c_int, c_void, CStr, CString};

/// A symbol's address and the library it was found in (kept open for the process' life).
pub struct Found {
    pub addr: usize,
    /// The file of the object that defines it.
    pub path: String,
    /// A handle of that object, to look its other symbols up (`None` for `RTLD_NEXT` hits).
    pub lib: Option<Library>,
}

/// The file of the object holding `addr` (for messages); "" when unknown.
pub fn object_path(addr: usize) -> String {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    let found = unsafe { libc::dladdr(addr as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return String::new();
    }
    // SAFETY: the loader's own NUL-terminated file name, alive while the object is loaded.
    unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned()
}

/// The next definition of `name` in the global scope after hetblas, if any.
pub fn next(name: &CStr) -> Option<usize> {
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only reads the loader's tables.
    let a = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    (a != 0 && !crate::xerbla::is_ours(a)).then_some(a)
}

/// The file names of every loaded object (the program itself, with an empty name, left out).
pub fn objects() -> Vec<String> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, out: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid `dl_phdr_info` and our `Vec<String>` back.
        let (info, out) = unsafe { (&*info, &mut *(out as *mut Vec<String>)) };
        if !info.dlpi_name.is_null() {
            // SAFETY: the loader's NUL-terminated name, valid during the callback.
            let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy();
            if !name.is_empty() {
                out.push(name.into_owned());
            }
        }
        0
    }
    let mut out: Vec<String> = Vec::new();
    // SAFETY: the callback only reads the info it is given and pushes into `out`, which lives
    // across the call.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Vec<String> as *mut c_void) };
    out
}

/// The loaded object (other than hetblas) that defines `name`, searched through each one's own
/// handle, in load order.
pub fn defining(name: &str) -> Option<Found> {
    let sym = CString::new(name).ok()?;
    objects().into_iter().find_map(|path| {
        let flags = libc::RTLD_LAZY | libc::RTLD_NOLOAD;
        // SAFETY: RTLD_NOLOAD returns a handle of an object already loaded, or fails; nothing
        // is loaded or initialised.
        let lib = unsafe { Library::open(Some(&path), flags) }.ok()?;
        // SAFETY: only the address is taken; it is called later with the prototype of the
        // routine of that name.
        let addr = unsafe { lib.get::<*const ()>(sym.as_bytes_with_nul()) }
            .ok()
            .map(|s| s.into_raw() as usize)
            .filter(|&a| a != 0 && !crate::xerbla::is_ours(a))?;
        Some(Found {
            addr,
            path: object_path(addr),
            lib: Some(lib),
        })
    })
}

/// The definition `name` had before hetblas: [`next`], else [`defining`].
pub fn original(name: &str) -> Option<Found> {
    let sym = CString::new(name).ok()?;
    if let Some(addr) = next(&sym) {
        return Some(Found {
            addr,
            path: object_path(addr),
            lib: None,
        });
    }
    defining(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_library_is_found_among_the_loaded_objects() {
        assert!(
            objects().iter().any(|o| o.contains("libc.so")),
            "{:?}",
            objects()
        );
        let f = defining("getpid").expect("libc defines getpid");
        assert!(f.path.contains("libc.so"), "{}", f.path);
        // SAFETY: dlsym with RTLD_DEFAULT only reads the loader's tables.
        let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"getpid".as_ptr()) } as usize;
        assert_eq!(original("getpid").map(|f| f.addr), Some(global));
        assert!(defining("hetblas_no_such_symbol_").is_none());
    }
}
