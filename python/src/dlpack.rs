//! DLPack, the array exchange protocol of the Python array libraries (CuPy, PyTorch, JAX,
//! NumPy): the C structures of its header (`dlpack.h`, versions 0.x and 1.x), reading a
//! producer's capsule ([`import`]) and making one for a [`crate::device_array::DeviceArray`]
//! ([`export`]).
//!
//! Importing keeps the capsule unconsumed until the call ends and then drops it: the
//! producer's capsule destructor releases the tensor (the protocol's rule for a capsule that
//! was not renamed "used_dltensor"), and the array object the caller holds keeps the memory
//! alive meanwhile.

use crate::errors::{type_error, value};
use hetblas::DType;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ffi::{c_void, CStr};

/// `DLDeviceType` values hetblas meets.
pub mod device_type {
    pub const CPU: i32 = 1;
    pub const CUDA: i32 = 2;
    pub const CUDA_HOST: i32 = 3;
    pub const ROCM: i32 = 10;
    pub const ROCM_HOST: i32 = 11;
    /// "Reserved extension device": hetblas's emulated devices (host memory that only hetblas
    /// treats as a device's).
    pub const EXT_DEV: i32 = 12;
    pub const CUDA_MANAGED: i32 = 13;
}

/// Whether memory of this device type can be read by the host as it is.
pub fn host_accessible(t: i32) -> bool {
    matches!(
        t,
        device_type::CPU
            | device_type::CUDA_HOST
            | device_type::ROCM_HOST
            | device_type::CUDA_MANAGED
    )
}

/// The name DLPack and the array libraries give a device type.
pub fn device_type_name(t: i32) -> String {
    match t {
        device_type::CPU => "cpu".into(),
        device_type::CUDA => "cuda".into(),
        device_type::CUDA_HOST => "cuda_host".into(),
        device_type::ROCM => "rocm".into(),
        device_type::ROCM_HOST => "rocm_host".into(),
        device_type::EXT_DEV => "hetblas-emulated".into(),
        device_type::CUDA_MANAGED => "cuda_managed".into(),
        other => format!("dlpack-device-type-{other}"),
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const FLAG_READ_ONLY: u64 = 1;
const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const CODE_FLOAT: u8 = 2;
const CODE_COMPLEX: u8 = 5;

/// What a producer's capsule says of its array.
pub struct Imported {
    /// The capsule, kept until the call ends (its destructor releases the tensor).
    pub capsule: Py<PyAny>,
    pub device_type: i32,
    pub device_id: i32,
    /// The element type, or a description of the unsupported one.
    pub dtype: Result<DType, String>,
    pub shape: Vec<i64>,
    /// Strides in elements (row-major packed when the producer gave none).
    pub strides: Vec<i64>,
    /// Address of the first element.
    pub data: u64,
    pub read_only: bool,
}

/// Asks `obj` for its DLPack capsule (a versioned one where the producer has it) and reads it.
pub fn import(obj: &Bound<'_, PyAny>) -> PyResult<Imported> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("max_version", PyTuple::new(py, [1u32, 0])?)?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        // Producers older than DLPack 1.0 take no max_version.
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
            obj.call_method0("__dlpack__")?
        }
        Err(e) => return Err(e),
    };
    let cap = capsule.as_ptr();
    // SAFETY: `cap` is a live object (held by `capsule`); PyCapsule_GetName only reads it and
    // returns NULL (with an exception set) for a non-capsule.
    let name = unsafe { ffi::PyCapsule_GetName(cap) };
    if name.is_null() {
        return Err(
            PyErr::take(py).unwrap_or_else(|| type_error("__dlpack__ did not return a capsule"))
        );
    }
    // SAFETY: a capsule's name is a NUL-terminated string that lives as long as the capsule.
    let name = unsafe { CStr::from_ptr(name) };
    let (tensor, read_only): (*const DLTensor, bool) = if name == VERSIONED {
        // SAFETY: the name says the pointer is a DLManagedTensorVersioned (the protocol).
        let p = unsafe { ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr()) }
            as *const DLManagedTensorVersioned;
        if p.is_null() {
            return Err(PyErr::take(py).unwrap_or_else(|| value("empty DLPack capsule")));
        }
        // SAFETY: `p` is the producer's live tensor for as long as the capsule is unconsumed.
        let m = unsafe { &*p };
        if m.version.major != 1 {
            return Err(type_error(format!(
                "DLPack version {}.{} is not supported (1.x)",
                m.version.major, m.version.minor
            )));
        }
        (&m.dl_tensor, m.flags & FLAG_READ_ONLY != 0)
    } else if name == LEGACY {
        // SAFETY: as above, for the unversioned structure the name "dltensor" announces.
        let p =
            unsafe { ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()) } as *const DLManagedTensor;
        if p.is_null() {
            return Err(PyErr::take(py).unwrap_or_else(|| value("empty DLPack capsule")));
        }
        // SAFETY: as above.
        (unsafe { &(*p).dl_tensor }, false)
    } else {
        return Err(type_error(format!(
            "__dlpack__ returned a capsule named {name:?} (a used or foreign one)"
        )));
    };
    // SAFETY: a live DLTensor of the capsule (above).
    let t = unsafe { &*tensor };
    let ndim = usize::try_from(t.ndim).map_err(|_| value("DLPack tensor with negative ndim"))?;
    let read = |p: *const i64| -> Vec<i64> {
        if p.is_null() || ndim == 0 {
            return Vec::new();
        }
        // SAFETY: the protocol makes shape and (when not NULL) strides arrays of ndim values.
        unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec()
    };
    let shape = read(t.shape);
    let strides = if t.strides.is_null() {
        // Row-major packed.
        let mut s = vec![1i64; ndim];
        for i in (0..ndim.saturating_sub(1)).rev() {
            s[i] = s[i + 1] * shape[i + 1].max(1);
        }
        s
    } else {
        read(t.strides)
    };
    let dt = t.dtype;
    let dtype = match (dt.code, dt.bits, dt.lanes) {
        (CODE_FLOAT, 32, 1) => Ok(DType::F32),
        (CODE_FLOAT, 64, 1) => Ok(DType::F64),
        (CODE_COMPLEX, 64, 1) => Ok(DType::C32),
        (CODE_COMPLEX, 128, 1) => Ok(DType::C64),
        (code, bits, lanes) => Err(format!(
            "{}{bits}{}",
            match code {
                0 => "int",
                1 => "uint",
                2 => "float",
                4 => "bfloat",
                5 => "complex",
                6 => "bool",
                _ => "dlpack-code-",
            },
            if lanes == 1 {
                String::new()
            } else {
                format!("x{lanes}")
            }
        )),
    };
    Ok(Imported {
        device_type: t.device.device_type,
        device_id: t.device.device_id,
        dtype,
        shape,
        strides,
        data: (t.data as u64).wrapping_add(t.byte_offset),
        read_only,
        capsule: capsule.unbind(),
    })
}

/// What an exported tensor keeps alive: the object owning the memory, and the shape and strides
/// its DLTensor points to.
struct ExportCtx {
    _owner: Py<PyAny>,
    shape: [i64; 2],
    strides: [i64; 2],
}

/// An array to export: its memory stays valid while `owner` lives.
pub struct Export {
    pub owner: Py<PyAny>,
    pub data: u64,
    pub device_type: i32,
    pub device_id: i32,
    pub dtype: DType,
    pub shape: [i64; 2],
    pub strides: [i64; 2],
}

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::F32 => (CODE_FLOAT, 32),
        DType::F64 => (CODE_FLOAT, 64),
        DType::C32 => (CODE_COMPLEX, 64),
        DType::C64 => (CODE_COMPLEX, 128),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    // SAFETY: `m` and its context were made by `export` with Box::into_raw, and the protocol
    // calls the deleter once.
    unsafe {
        drop(Box::from_raw((*m).manager_ctx as *mut ExportCtx));
        drop(Box::from_raw(m));
    }
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: as `delete_legacy`.
    unsafe {
        drop(Box::from_raw((*m).manager_ctx as *mut ExportCtx));
        drop(Box::from_raw(m));
    }
}

/// Destructor of an exported capsule: a capsule nobody consumed (still named as made)
/// releases its tensor; a consumed one ("used_dltensor") belongs to the consumer.
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with the dying capsule; IsValid sets no error, and the pointer
    // under each name is the structure `export` stored under it.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let p =
                ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            delete_versioned(p);
        } else if ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()) as *mut DLManagedTensor;
            delete_legacy(p);
        }
    }
}

/// A DLPack capsule for `e` (versioned when the consumer accepts DLPack 1.x).
pub fn export(py: Python<'_>, e: Export, versioned: bool) -> PyResult<Py<PyAny>> {
    let ctx = Box::into_raw(Box::new(ExportCtx {
        _owner: e.owner,
        shape: e.shape,
        strides: e.strides,
    }));
    // SAFETY: `ctx` was just made and lives until a deleter frees it.
    let (shape, strides) = unsafe { ((*ctx).shape.as_mut_ptr(), (*ctx).strides.as_mut_ptr()) };
    let tensor = DLTensor {
        data: e.data as *mut c_void,
        device: DLDevice {
            device_type: e.device_type,
            device_id: e.device_id,
        },
        ndim: 2,
        dtype: dl_dtype(e.dtype),
        shape,
        strides,
        byte_offset: 0,
    };
    let (ptr, name): (*mut c_void, &CStr) = if versioned {
        let m = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: ctx as *mut c_void,
            deleter: Some(delete_versioned),
            flags: 0,
            dl_tensor: tensor,
        });
        (Box::into_raw(m) as *mut c_void, VERSIONED)
    } else {
        let m = Box::new(DLManagedTensor {
            dl_tensor: tensor,
            manager_ctx: ctx as *mut c_void,
            deleter: Some(delete_legacy),
        });
        (Box::into_raw(m) as *mut c_void, LEGACY)
    };
    // SAFETY: `ptr` is a tensor made above, `name` a static string, the destructor matches.
    let cap = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if cap.is_null() {
        // SAFETY: the capsule was not made: nobody else holds the tensor.
        unsafe {
            if versioned {
                delete_versioned(ptr as *mut DLManagedTensorVersioned);
            } else {
                delete_legacy(ptr as *mut DLManagedTensor);
            }
        }
        return Err(PyErr::take(py).unwrap_or_else(|| value("PyCapsule_New failed")));
    }
    // SAFETY: a new reference returned by PyCapsule_New.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}
