//! Operands that are GPU memory, passed by pointer (a program using CUDA may hand device
//! pointers to BLAS, as cuBLAS users do). hetblas must not read them on the host.
//!
//! What is done today: a GEMM that passes the offload rule checks its three pointers with
//! `cuPointerGetAttribute` when the program has loaded the CUDA driver (found with
//! `RTLD_NOLOAD`: hetblas never loads it for this, so a program without CUDA pays one failed
//! lookup per large call and nothing else). A device operand is reported and the call is not
//! performed, rather than read on the host (which would crash or read garbage): the Runtime
//! does not yet accept device memory it did not allocate. HIP pointers are not detected (the
//! layout of `hipPointerAttribute_t` differs between HIP releases).

use std::ffi::{c_int, c_void};

/// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`.
const MEMORY_TYPE: c_int = 2;
/// `CU_MEMORYTYPE_DEVICE`.
const DEVICE: u32 = 2;
/// `CU_POINTER_ATTRIBUTE_IS_MANAGED`: managed memory is host-accessible.
const IS_MANAGED: c_int = 8;

type PointerGetAttribute = unsafe extern "C" fn(*mut c_void, c_int, u64) -> c_int;

/// `cuPointerGetAttribute` if the process has loaded the CUDA driver.
fn driver() -> Option<PointerGetAttribute> {
    // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded; nothing is run.
    let h = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if h.is_null() {
        return None;
    }
    // SAFETY: a valid handle and a NUL-terminated name.
    let f = unsafe { libc::dlsym(h, c"cuPointerGetAttribute".as_ptr()) };
    // SAFETY: drops the reference the NOLOAD open took; the library stays loaded (the program
    // holds its own reference).
    unsafe { libc::dlclose(h) };
    if f.is_null() {
        None
    } else {
        // SAFETY: the CUDA driver's `CUresult cuPointerGetAttribute(void *data,
        // CUpointer_attribute attribute, CUdeviceptr ptr)`.
        Some(unsafe { std::mem::transmute::<*mut c_void, PointerGetAttribute>(f) })
    }
}

/// The first of `ptrs` (named) that is CUDA device memory, not managed.
pub fn first_device_operand(ptrs: &[(&'static str, usize)]) -> Option<&'static str> {
    let get = driver()?;
    ptrs.iter().find_map(|&(name, p)| {
        let mut kind: u32 = 0;
        // SAFETY: `kind` is a valid out-parameter of the attribute's size (an unsigned int);
        // the driver only inspects the address.
        let r = unsafe { get((&mut kind as *mut u32).cast(), MEMORY_TYPE, p as u64) };
        if r != 0 || kind != DEVICE {
            return None;
        }
        let mut managed: c_int = 0;
        // SAFETY: as above, with an int-sized out-parameter.
        let r = unsafe { get((&mut managed as *mut c_int).cast(), IS_MANAGED, p as u64) };
        (r != 0 || managed == 0).then_some(name)
    })
}
