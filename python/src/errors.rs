//! hetblas errors as Python exceptions: bad arguments are `ValueError` / `TypeError`, memory
//! exhaustion `MemoryError`, everything the devices or backends report a [`HetblasError`]
//! (a `RuntimeError`), device failures its subclass [`DeviceError`]. The message is the
//! library's own.

use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::{create_exception, PyErr};

create_exception!(
    _native,
    HetblasError,
    PyRuntimeError,
    "An error hetblas reports: a backend, the profile, a device."
);
create_exception!(
    _native,
    DeviceError,
    HetblasError,
    "A device failed during the call (kernel or copy error, device lost)."
);

/// The Python exception for a hetblas error.
pub fn to_py(e: hetblas::Error) -> PyErr {
    use hetblas::Error as E;
    match e {
        E::InvalidArgument { .. } | E::InvalidInput(_) => PyValueError::new_err(e.to_string()),
        E::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        E::Backend { .. } | E::DeviceLost { .. } => DeviceError::new_err(e.to_string()),
        other => HetblasError::new_err(other.to_string()),
    }
}

/// `ValueError(msg)`.
pub fn value(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// `TypeError(msg)`.
pub fn type_error(msg: impl Into<String>) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(msg.into())
}
