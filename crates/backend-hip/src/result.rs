//! The checked layer over `sys`: one error-mapping helper ([`check`], as wgpu-hal's
//! `map_host_device_oom_err`), library presence and initialisation ([`init`]), the per-thread
//! current device ([`Context::bind`], [`current_device`]), and a `Result`-returning wrapper for
//! every runtime call the safe types make. Everything above this file speaks
//! `hetblas_core::Error`.

use crate::sys::{self, blas_status as st, err, HipError, HipEvent, HipMemcpyKind, HipStream};
use crate::sys::{HipblasStatus, LoadError};
use hetblas_core::{Error, Result};
use std::ffi::{c_char, c_int, c_void, CStr};

/// The reason given when the runtime library is absent.
pub const NO_RUNTIME: &str = "HIP runtime (libamdhip64.so) not found";
/// The reason given when hipBLAS is absent.
pub const NO_HIPBLAS: &str =
    "hipBLAS (libhipblas.so) not found; set HETBLAS_HIP_LIB_DIR or LD_LIBRARY_PATH";

fn unavailable(reason: impl Into<String>) -> Error {
    Error::Unavailable {
        backend: "hip",
        reason: reason.into(),
    }
}

/// The loaded runtime, or `Unavailable` (calls made before or without a successful [`init`]
/// fail cleanly instead of crashing).
pub fn api() -> Result<&'static sys::HipApi> {
    sys::hip().map_err(|e| match e {
        LoadError::NotFound => unavailable(NO_RUNTIME),
        LoadError::Unusable(why) => unavailable(format!("HIP runtime unusable: {why}")),
    })
}

/// The loaded hipBLAS, or `Unavailable`.
pub fn blas_api() -> Result<&'static sys::BlasApi> {
    sys::hipblas().map_err(|e| match e {
        LoadError::NotFound => unavailable(NO_HIPBLAS),
        LoadError::Unusable(why) => unavailable(format!("hipBLAS unusable: {why}")),
    })
}

/// The runtime's name and message for a status ("hipErrorNoDevice", "no ROCm-capable device
/// is detected"), or the number when the runtime cannot say.
pub fn describe(r: HipError) -> (String, String) {
    let Ok(hip) = api() else {
        return (format!("hipError {r}"), String::new());
    };
    let s = |p: *const c_char| {
        if p.is_null() {
            format!("hipError {r}")
        } else {
            // SAFETY: the runtime returns static NUL-terminated strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    // SAFETY: both calls take any status value and return a static string (or null).
    let (name, msg) = unsafe { ((hip.hipGetErrorName)(r), (hip.hipGetErrorString)(r)) };
    (s(name), s(msg))
}

/// Maps a runtime status to `Ok` or a typed error carrying HIP's code, name and message.
pub fn check(r: HipError, call: &str) -> Result<()> {
    if r == err::SUCCESS {
        return Ok(());
    }
    Err(hip_error(r, call))
}

/// The typed error for a failed runtime call. Out-of-memory and device loss get their own
/// variants (what a caller can act on); the rest are `Backend` errors.
pub fn hip_error(r: HipError, call: &str) -> Error {
    let (name, message) = describe(r);
    match r {
        err::OUT_OF_MEMORY => Error::OutOfMemory {
            device: "hip".into(),
            detail: format!("{call}: {message}"),
        },
        err::ECC_NOT_CORRECTABLE
        | err::LAUNCH_FAILURE
        | err::ILLEGAL_ADDRESS
        | err::LAUNCH_TIME_OUT
        | err::CONTEXT_IS_DESTROYED => Error::DeviceLost {
            device: "hip".into(),
            detail: format!("{call}: {name}: {message}"),
        },
        _ => Error::Backend {
            backend: "hip",
            call: call.into(),
            code: r as i64,
            name,
            message,
        },
    }
}

/// What [`init`] found.
#[derive(Debug, Clone)]
pub struct Libraries {
    /// Number of HIP devices the runtime sees.
    pub device_count: i32,
    /// `hipRuntimeGetVersion` (HIP_VERSION: major * 10^7 + minor * 10^5 + patch).
    pub runtime_version: i32,
    /// `hipDriverGetVersion`.
    pub driver_version: i32,
    pub runtime_path: String,
    pub blas_path: String,
}

/// "6.2.41133" for a HIP_VERSION number; the plain number for anything else.
pub fn format_version(v: i32) -> String {
    if v >= 10_000_000 {
        format!("{}.{}.{}", v / 10_000_000, v / 100_000 % 100, v % 100_000)
    } else {
        v.to_string()
    }
}

/// Loads the runtime, initialises it, counts the devices and loads hipBLAS.
///
/// # Errors
/// `Unavailable` with the reason: library not found or unusable, no HIP device (with the
/// runtime's error name), hipBLAS not found.
pub fn init() -> Result<Libraries> {
    let hip = api()?;
    let no_device = |call: &str, r: HipError| {
        let (name, msg) = describe(r);
        // HIP 5.x answers hipGetErrorString with the name itself; say it once.
        let what = if msg.is_empty() || msg == name {
            name
        } else {
            format!("{name}: {msg}")
        };
        // ROCm reaches AMD GPUs through the amdgpu kernel driver's /dev/kfd; say so when it
        // is missing (the usual cause on a machine without an AMD GPU, or a container that
        // was not given the device), unless the runtime is the user's own (the CUDA shim).
        let from_user_dir = crate::sys::user_lib_dir()
            .is_some_and(|d| std::path::Path::new(&hip.path).starts_with(d));
        let hint = if cfg!(target_os = "linux")
            && !from_user_dir
            && !std::path::Path::new("/dev/kfd").exists()
        {
            "; /dev/kfd is absent"
        } else {
            ""
        };
        unavailable(format!("no HIP device ({call}: {what}{hint})"))
    };
    // SAFETY: hipInit takes flags (0) and may be called any number of times.
    let r = unsafe { (hip.hipInit)(0) };
    if r != err::SUCCESS {
        return Err(no_device("hipInit", r));
    }
    let mut count: c_int = 0;
    // SAFETY: writes one int.
    let r = unsafe { (hip.hipGetDeviceCount)(&mut count) };
    if r != err::SUCCESS {
        return Err(no_device("hipGetDeviceCount", r));
    }
    if count <= 0 {
        return Err(unavailable("no HIP device (hipGetDeviceCount found 0)"));
    }
    let blas = blas_api()?;
    let (mut runtime_version, mut driver_version) = (0, 0);
    check(
        // SAFETY: writes one int.
        unsafe { (hip.hipRuntimeGetVersion)(&mut runtime_version) },
        "hipRuntimeGetVersion",
    )?;
    check(
        // SAFETY: writes one int.
        unsafe { (hip.hipDriverGetVersion)(&mut driver_version) },
        "hipDriverGetVersion",
    )?;
    Ok(Libraries {
        device_count: count,
        runtime_version,
        driver_version,
        runtime_path: hip.path.clone(),
        blas_path: blas.path.clone(),
    })
}

/// One HIP device. HIP has no explicit contexts: each thread has a current device, set with
/// hipSetDevice, and allocations, streams, events and hipBLAS handles belong to the device
/// current when they are created. [`Context::bind`] sets it every time: other code in the
/// process (the CUDA backend, the CUDA runtime under a HIP-on-CUDA layer) may change it.
#[derive(Debug)]
pub struct Context {
    pub ordinal: c_int,
}

impl Context {
    pub fn new(ordinal: c_int) -> Context {
        Context { ordinal }
    }

    /// Makes the device current on this thread.
    pub fn bind(&self) -> Result<()> {
        set_device(self.ordinal)
    }

    /// (free, total) bytes of device memory.
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        self.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two sizes for the current device.
        let r = unsafe { (api()?.hipMemGetInfo)(&mut free, &mut total) };
        check(r, "hipMemGetInfo")?;
        Ok((free, total))
    }

    pub fn attribute(&self, attr: sys::HipDeviceAttribute) -> Result<i32> {
        let mut v = 0;
        // SAFETY: writes one int.
        let r = unsafe { (api()?.hipDeviceGetAttribute)(&mut v, attr, self.ordinal) };
        check(r, "hipDeviceGetAttribute")?;
        Ok(v)
    }

    pub fn name(&self) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: writes at most 256 bytes, NUL-terminated.
        let r = unsafe { (api()?.hipDeviceGetName)(buf.as_mut_ptr(), 256, self.ordinal) };
        check(r, "hipDeviceGetName")?;
        buf[255] = 0;
        // SAFETY: NUL-terminated (forced above).
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    pub fn total_mem(&self) -> Result<usize> {
        let mut total = 0usize;
        // SAFETY: writes one size.
        let r = unsafe { (api()?.hipDeviceTotalMem)(&mut total, self.ordinal) };
        check(r, "hipDeviceTotalMem")?;
        Ok(total)
    }

    /// Whether this device can read and write `peer`'s memory directly.
    pub fn can_access_peer(&self, peer: &Context) -> Result<bool> {
        let mut can = 0;
        // SAFETY: writes one int.
        let r = unsafe { (api()?.hipDeviceCanAccessPeer)(&mut can, self.ordinal, peer.ordinal) };
        check(r, "hipDeviceCanAccessPeer")?;
        Ok(can != 0)
    }

    /// Lets this device access `peer`'s memory ("already enabled" is success).
    pub fn enable_peer_access(&self, peer: &Context) -> Result<()> {
        self.bind()?;
        // SAFETY: enables access from the current device (self) to `peer`.
        let r = unsafe { (api()?.hipDeviceEnablePeerAccess)(peer.ordinal, 0) };
        if r == err::PEER_ACCESS_ALREADY_ENABLED {
            return Ok(());
        }
        check(r, "hipDeviceEnablePeerAccess")
    }
}

/// The calling thread's current device. HIP has no "none": a thread that never set one has
/// device 0.
pub fn current_device() -> Result<c_int> {
    let mut d: c_int = 0;
    // SAFETY: writes one int.
    check(unsafe { (api()?.hipGetDevice)(&mut d) }, "hipGetDevice")?;
    Ok(d)
}

/// Makes device `ordinal` current on the calling thread (an ordinal out of range is an error
/// status, not undefined behaviour).
pub fn set_device(ordinal: c_int) -> Result<()> {
    // SAFETY: sets this thread's current device, taking any int.
    check(unsafe { (api()?.hipSetDevice)(ordinal) }, "hipSetDevice")
}

// Checked wrappers for the calls the safe types make. Those that take raw addresses are
// `unsafe fn`s; the caller states why the memory is valid.

/// hipMalloc on the current device.
pub fn malloc(bytes: usize) -> Result<*mut c_void> {
    let mut p = std::ptr::null_mut();
    // SAFETY: writes one pointer; the caller owns (and frees) the allocation.
    check(unsafe { (api()?.hipMalloc)(&mut p, bytes) }, "hipMalloc")?;
    Ok(p)
}

/// # Safety
/// `p` came from [`malloc`] and is freed once, with no queued operation still using it.
pub unsafe fn free(p: *mut c_void) -> Result<()> {
    // SAFETY: caller contract.
    check(unsafe { (api()?.hipFree)(p) }, "hipFree")
}

/// hipHostMalloc (page-locked, portable: every device can DMA it).
pub fn host_malloc(bytes: usize) -> Result<*mut c_void> {
    let mut p = std::ptr::null_mut();
    let r = {
        let hip = api()?;
        // SAFETY: writes one pointer; the caller owns (and frees) the allocation.
        unsafe { (hip.hipHostMalloc)(&mut p, bytes, sys::flags::HOST_MALLOC_PORTABLE) }
    };
    check(r, "hipHostMalloc")?;
    Ok(p)
}

/// # Safety
/// `p` came from [`host_malloc`] and is freed once, with no queued operation still using it.
pub unsafe fn host_free(p: *mut c_void) -> Result<()> {
    // SAFETY: caller contract.
    check(unsafe { (api()?.hipHostFree)(p) }, "hipHostFree")
}

/// hipHostRegister, portable and mapped. Returns the raw status: the caller distinguishes
/// "already registered" and "out of memory" from other failures.
///
/// # Safety
/// `[p, p + bytes)` is mapped host memory that stays mapped while registered.
pub unsafe fn host_register(p: *mut c_void, bytes: usize) -> Result<HipError> {
    let f = sys::flags::HOST_REGISTER_PORTABLE | sys::flags::HOST_REGISTER_MAPPED;
    // SAFETY: caller contract.
    Ok(unsafe { (api()?.hipHostRegister)(p, bytes, f) })
}

/// # Safety
/// `p` is the start of a range registered with [`host_register`]; no copy through it is in
/// flight.
pub unsafe fn host_unregister(p: *mut c_void) -> Result<()> {
    // SAFETY: caller contract.
    check(
        unsafe { (api()?.hipHostUnregister)(p) },
        "hipHostUnregister",
    )
}

/// The device address of registered host memory at `addr`, or the runtime's refusal (not
/// registered).
pub fn host_device_pointer(addr: u64) -> Result<u64> {
    let mut d = std::ptr::null_mut();
    // SAFETY: only looks the address up in the runtime's registration table (the memory is
    // not accessed); writes one pointer.
    let r = unsafe { (api()?.hipHostGetDevicePointer)(&mut d, addr as *mut c_void, 0) };
    check(r, "hipHostGetDevicePointer")?;
    Ok(d as u64)
}

/// The ordinal of the device whose own memory `addr` is, or `None` (host memory, managed
/// memory, an address the runtime does not know, or a runtime without
/// `hipPointerGetAttributes`).
pub fn device_of_address(addr: u64) -> Option<i32> {
    static VERSION: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    let hip = api().ok()?;
    let get = hip.hipPointerGetAttributes?;
    let version = *VERSION.get_or_init(|| {
        let mut v = 0;
        // SAFETY: writes one int.
        let r = unsafe { (hip.hipRuntimeGetVersion)(&mut v) };
        if r == sys::err::SUCCESS {
            v
        } else {
            0
        }
    });
    let device = if version >= sys::memory_type::HIP6_VERSION {
        sys::memory_type::DEVICE_HIP6
    } else {
        sys::memory_type::DEVICE_HIP5
    };
    let mut a = sys::HipPointerAttribute {
        memory_type: -1,
        device: -1,
        device_pointer: std::ptr::null_mut(),
        host_pointer: std::ptr::null_mut(),
        is_managed: 0,
        allocation_flags: 0,
    };
    // SAFETY: writes one `hipPointerAttribute_t`; only looks the address up (HIP 5 fails with
    // hipErrorInvalidValue on memory it does not know, HIP 6 answers "unregistered").
    let r = unsafe { get(&mut a, addr as *const c_void) };
    (r == sys::err::SUCCESS && a.memory_type == device && a.is_managed == 0 && a.device >= 0)
        .then_some(a.device)
}

/// A non-blocking stream on the current device.
pub fn stream_create() -> Result<HipStream> {
    let mut s = std::ptr::null_mut();
    let r = {
        let hip = api()?;
        // SAFETY: writes one handle; the caller destroys it.
        unsafe { (hip.hipStreamCreateWithFlags)(&mut s, sys::flags::STREAM_NON_BLOCKING) }
    };
    check(r, "hipStreamCreateWithFlags")?;
    Ok(s)
}

/// # Safety
/// `s` is a live stream, destroyed once.
pub unsafe fn stream_destroy(s: HipStream) -> Result<()> {
    // SAFETY: caller contract.
    check(unsafe { (api()?.hipStreamDestroy)(s) }, "hipStreamDestroy")
}

/// # Safety
/// `s` is a live stream.
pub unsafe fn stream_synchronize(s: HipStream) -> Result<()> {
    // SAFETY: caller contract.
    check(
        unsafe { (api()?.hipStreamSynchronize)(s) },
        "hipStreamSynchronize",
    )
}

/// # Safety
/// `s` and `e` are live.
pub unsafe fn stream_wait_event(s: HipStream, e: HipEvent) -> Result<()> {
    // SAFETY: caller contract.
    check(
        unsafe { (api()?.hipStreamWaitEvent)(s, e, 0) },
        "hipStreamWaitEvent",
    )
}

/// An event on the current device (`timed`: with timestamps).
pub fn event_create(timed: bool) -> Result<HipEvent> {
    let f = if timed {
        sys::flags::EVENT_DEFAULT
    } else {
        sys::flags::EVENT_DISABLE_TIMING
    };
    let mut e = std::ptr::null_mut();
    // SAFETY: writes one handle; the caller destroys it.
    let r = unsafe { (api()?.hipEventCreateWithFlags)(&mut e, f) };
    check(r, "hipEventCreateWithFlags")?;
    Ok(e)
}

/// # Safety
/// `e` and `s` are live and belong to the current device.
pub unsafe fn event_record(e: HipEvent, s: HipStream) -> Result<()> {
    // SAFETY: caller contract.
    check(unsafe { (api()?.hipEventRecord)(e, s) }, "hipEventRecord")
}

/// # Safety
/// `e` is live.
pub unsafe fn event_synchronize(e: HipEvent) -> Result<()> {
    // SAFETY: caller contract.
    check(
        unsafe { (api()?.hipEventSynchronize)(e) },
        "hipEventSynchronize",
    )
}

/// Whether the work before `e` is done.
///
/// # Safety
/// `e` is live.
pub unsafe fn event_query(e: HipEvent) -> Result<bool> {
    // SAFETY: caller contract.
    let r = unsafe { (api()?.hipEventQuery)(e) };
    if r == err::NOT_READY {
        return Ok(false);
    }
    check(r, "hipEventQuery")?;
    Ok(true)
}

/// Milliseconds from `start` to `end`.
///
/// # Safety
/// Both are live timing events of one device.
pub unsafe fn event_elapsed_ms(start: HipEvent, end: HipEvent) -> Result<f32> {
    let mut ms = 0f32;
    // SAFETY: caller contract; writes one float.
    let r = unsafe { (api()?.hipEventElapsedTime)(&mut ms, start, end) };
    check(r, "hipEventElapsedTime")?;
    Ok(ms)
}

/// # Safety
/// `e` is live and destroyed once.
pub unsafe fn event_destroy(e: HipEvent) -> Result<()> {
    // SAFETY: caller contract.
    check(unsafe { (api()?.hipEventDestroy)(e) }, "hipEventDestroy")
}

/// A 2D copy of `height` columns of `width` bytes, asynchronous on `s`.
///
/// # Safety
/// Both ranges are valid for the copy (pitches >= width) in the memory `kind` names, and
/// stay valid until `s` has executed it.
#[allow(
    clippy::too_many_arguments,
    reason = "the C prototype, argument for argument"
)]
pub unsafe fn memcpy_2d_async(
    dst: *mut c_void,
    dpitch: usize,
    src: *const c_void,
    spitch: usize,
    width: usize,
    height: usize,
    kind: HipMemcpyKind,
    s: HipStream,
) -> Result<()> {
    let hip = api()?;
    // SAFETY: caller contract.
    let r = unsafe { (hip.hipMemcpy2DAsync)(dst, dpitch, src, spitch, width, height, kind, s) };
    check(r, "hipMemcpy2DAsync")
}

/// A synchronous 2D copy (on the current device's null stream).
///
/// # Safety
/// As [`memcpy_2d_async`], for the duration of the call.
pub unsafe fn memcpy_2d(
    dst: *mut c_void,
    dpitch: usize,
    src: *const c_void,
    spitch: usize,
    width: usize,
    height: usize,
    kind: HipMemcpyKind,
) -> Result<()> {
    let hip = api()?;
    // SAFETY: caller contract.
    let r = unsafe { (hip.hipMemcpy2D)(dst, dpitch, src, spitch, width, height, kind) };
    check(r, "hipMemcpy2D")
}

/// A linear copy, asynchronous on `s`.
///
/// # Safety
/// As [`memcpy_2d_async`].
pub unsafe fn memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: HipMemcpyKind,
    s: HipStream,
) -> Result<()> {
    // SAFETY: caller contract.
    let r = unsafe { (api()?.hipMemcpyAsync)(dst, src, bytes, kind, s) };
    check(r, "hipMemcpyAsync")
}

/// A linear copy between the memories of two devices, asynchronous on `s`.
///
/// # Safety
/// As [`memcpy_2d_async`], `dst` on device `dst_dev` and `src` on `src_dev`.
pub unsafe fn memcpy_peer_async(
    dst: *mut c_void,
    dst_dev: c_int,
    src: *const c_void,
    src_dev: c_int,
    bytes: usize,
    s: HipStream,
) -> Result<()> {
    // SAFETY: caller contract.
    let r = unsafe { (api()?.hipMemcpyPeerAsync)(dst, dst_dev, src, src_dev, bytes, s) };
    check(r, "hipMemcpyPeerAsync")
}

use hetblas_gpu::run_host_job as run_host_fn;
pub use hetblas_gpu::HostJob;

unsafe extern "C" fn run_stream_callback(_s: HipStream, status: HipError, user: *mut c_void) {
    // SAFETY: `user` is the Box<HostJob> leaked by `launch_host_fn`, consumed once here.
    let job = unsafe { Box::from_raw(user as *mut HostJob) };
    // After a failed operation the stream reports the error at its next synchronisation; the
    // job (a staging copy-out) would only copy garbage, so it is dropped.
    if status == err::SUCCESS {
        job();
    }
}

/// Runs `job` on the host once everything issued to `s` before it is done
/// (hipLaunchHostFunc; hipStreamAddCallback on runtimes that lack it). The job must not call
/// the HIP runtime.
///
/// # Safety
/// `s` is a live stream; whatever `job` touches stays valid until it has run.
pub unsafe fn launch_host_fn(s: HipStream, job: HostJob) -> Result<()> {
    let hip = api()?;
    let user = Box::into_raw(Box::new(job)) as *mut c_void;
    let r = match (hip.hipLaunchHostFunc, hip.hipStreamAddCallback) {
        // SAFETY: the callback consumes the box exactly once, in stream order.
        (Some(f), _) => unsafe { f(s, run_host_fn, user) },
        // SAFETY: as above.
        (None, Some(f)) => unsafe { f(s, run_stream_callback, user, 0) },
        (None, None) => err::UNKNOWN, // excluded at load time
    };
    if r != err::SUCCESS {
        // SAFETY: the callback was not enqueued, so the box is still ours.
        drop(unsafe { Box::from_raw(user as *mut HostJob) });
    }
    check(r, "hipLaunchHostFunc")
}

/// The status's name and a short description (hipBLAS's own `hipblasStatusToString` gives the
/// name when the library has it).
fn describe_blas(s: HipblasStatus) -> (String, String) {
    let (name, msg) = match s {
        st::SUCCESS => ("HIPBLAS_STATUS_SUCCESS", "success"),
        st::NOT_INITIALIZED => ("HIPBLAS_STATUS_NOT_INITIALIZED", "library not initialized"),
        st::ALLOC_FAILED => ("HIPBLAS_STATUS_ALLOC_FAILED", "resource allocation failed"),
        st::INVALID_VALUE => ("HIPBLAS_STATUS_INVALID_VALUE", "unsupported value passed"),
        st::MAPPING_ERROR => (
            "HIPBLAS_STATUS_MAPPING_ERROR",
            "access to GPU memory failed",
        ),
        st::EXECUTION_FAILED => ("HIPBLAS_STATUS_EXECUTION_FAILED", "GPU program failed"),
        st::INTERNAL_ERROR => ("HIPBLAS_STATUS_INTERNAL_ERROR", "internal operation failed"),
        st::NOT_SUPPORTED => ("HIPBLAS_STATUS_NOT_SUPPORTED", "function not implemented"),
        st::ARCH_MISMATCH => ("HIPBLAS_STATUS_ARCH_MISMATCH", "architecture mismatch"),
        st::HANDLE_IS_NULLPTR => ("HIPBLAS_STATUS_HANDLE_IS_NULLPTR", "handle is null"),
        st::INVALID_ENUM => ("HIPBLAS_STATUS_INVALID_ENUM", "unsupported enum value"),
        st::UNKNOWN => (
            "HIPBLAS_STATUS_UNKNOWN",
            "back-end returned an unknown status",
        ),
        _ => ("", "unknown status"),
    };
    let mut name = name.to_string();
    if let Some(f) = blas_api().ok().and_then(|b| b.hipblasStatusToString) {
        // SAFETY: takes any status value and returns a static string (or null).
        let p = unsafe { f(s) };
        if !p.is_null() {
            // SAFETY: NUL-terminated static string.
            name = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        }
    }
    if name.is_empty() {
        name = format!("hipblasStatus {s}");
    }
    (name, msg.to_string())
}

/// Maps a hipBLAS status to a typed error with the library's name and message.
pub fn check_blas(s: HipblasStatus, call: &str) -> Result<()> {
    if s == st::SUCCESS {
        return Ok(());
    }
    let (name, message) = describe_blas(s);
    if s == st::ALLOC_FAILED {
        return Err(Error::OutOfMemory {
            device: "hip".into(),
            detail: format!("{call}: {message}"),
        });
    }
    Err(Error::Backend {
        backend: "hipblas",
        call: call.into(),
        code: s as i64,
        name,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_like_hip() {
        assert_eq!(format_version(50221153), "5.2.21153");
        assert_eq!(format_version(60241133), "6.2.41133");
        assert_eq!(format_version(13000), "13000");
    }

    #[test]
    fn statuses_have_names() {
        // Without the library the built-in table answers.
        if blas_api().is_err() {
            assert_eq!(
                describe_blas(st::ALLOC_FAILED).0,
                "HIPBLAS_STATUS_ALLOC_FAILED"
            );
            assert_eq!(describe_blas(42).0, "hipblasStatus 42");
        }
        assert!(matches!(
            check_blas(st::ALLOC_FAILED, "hipblasDgemm"),
            Err(Error::OutOfMemory { .. })
        ));
        assert!(matches!(
            check_blas(st::INVALID_VALUE, "hipblasDgemm"),
            Err(Error::Backend { code: 3, .. })
        ));
        assert!(check_blas(st::SUCCESS, "hipblasDgemm").is_ok());
    }
}
