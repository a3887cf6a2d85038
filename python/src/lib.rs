//! # hetblas._native: the Python package's native module
//!
//! The thin layer between Python arrays and the hetblas [`Runtime`](hetblas::Runtime). The
//! public API is the Python package (`python/hetblas/`): it chooses and allocates outputs in
//! the caller's array type, synchronises the producers of device arrays, wraps reports in
//! dataclasses and writes traces. This module:
//! - holds the process's one Runtime ([`runtime`]), discovered on first use;
//! - reads operands ([`operand`]): NumPy arrays through the `numpy` crate, any other array
//!   through DLPack ([`dlpack`]: CuPy arrays, PyTorch tensors, on the host or a device), and
//!   its own [`device_array::DeviceArray`]; each becomes a column-major view of its memory, on
//!   the host or borrowed where it lives on a device (`Runtime::borrow_matrix`), never copied;
//! - runs the routines ([`routines`], the factorizations in [`factor`]) with the GIL released, so that calls from several
//!   threads run side by side;
//! - answers questions ([`questions`]): devices, backends, the profile, predictions,
//!   calibration with a progress callback.
//!
//! Errors become Python exceptions with the library's own message ([`errors`]).

mod device_array;
mod dlpack;
mod errors;
mod factor;
mod operand;
mod questions;
mod report;
mod routines;
mod runtime;

use pyo3::prelude::*;

/// The native module `hetblas._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("HetblasError", py.get_type::<errors::HetblasError>())?;
    m.add("DeviceError", py.get_type::<errors::DeviceError>())?;
    m.add_class::<device_array::DeviceArray>()?;
    m.add_function(wrap_pyfunction!(runtime::init, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::started, m)?)?;
    m.add_function(wrap_pyfunction!(routines::gemm, m)?)?;
    m.add_function(wrap_pyfunction!(routines::sym, m)?)?;
    m.add_function(wrap_pyfunction!(routines::tri, m)?)?;
    m.add_function(wrap_pyfunction!(factor::factor, m)?)?;
    m.add_function(wrap_pyfunction!(operand::locate, m)?)?;
    m.add_function(wrap_pyfunction!(device_array::to_device, m)?)?;
    m.add_function(wrap_pyfunction!(device_array::empty, m)?)?;
    m.add_function(wrap_pyfunction!(questions::devices, m)?)?;
    m.add_function(wrap_pyfunction!(questions::backends, m)?)?;
    m.add_function(wrap_pyfunction!(questions::profile_status, m)?)?;
    m.add_function(wrap_pyfunction!(questions::profile_path, m)?)?;
    m.add_function(wrap_pyfunction!(questions::predict, m)?)?;
    m.add_function(wrap_pyfunction!(questions::calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(questions::failed_devices, m)?)?;
    m.add_function(wrap_pyfunction!(questions::reprobe, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
