//! Whether an address lies in the shared object this crate was linked into: a host library
//! whose routine is ours (the hetblas drop-in registered under a system library's name) must
//! not be called by hetblas, or a call would come back into itself.

use std::ffi::c_void;

/// Whether `addr` (a function of some loaded object) is in the same object as this code.
pub fn is_ours(addr: usize) -> bool {
    let own = is_ours as fn(usize) -> bool as usize;
    match (object_base(addr), object_base(own)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The load address of the object holding `addr`, if the loader knows one.
fn object_base(addr: usize) -> Option<usize> {
    // SAFETY: Dl_info is plain data (pointers and integers), valid when zeroed.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and writes `info`.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 {
        return None;
    }
    Some(info.dli_fbase as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_code_is_ours_and_libc_is_not() {
        assert!(is_ours(object_base as fn(usize) -> Option<usize> as usize));
        assert!(!is_ours(libc::malloc as *const () as usize));
    }
}
