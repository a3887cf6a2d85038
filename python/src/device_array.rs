//! `hetblas.DeviceArray`: a matrix hetblas allocated in a device's memory
//! (`Runtime::upload` / `alloc_matrix`), kept there between calls, read back with `numpy()`,
//! and handed to other libraries without a copy through DLPack (`torch.from_dlpack(d)`,
//! `cupy.from_dlpack(d)` for CUDA and HIP devices).
//!
//! It is a column-major matrix; `d.T` is its transpose, a view of the same memory, which is
//! how a C-ordered NumPy array is uploaded without reordering its elements.

use crate::dlpack;
use crate::errors::{to_py, value};
use crate::operand::{dtype_name, Operand, Place};
use hetblas::{c32, c64, DType, DeviceMatrix, MatMut, MatRef, Runtime, Scalar};
use numpy::{dtype, PyArray2, PyArrayDescr, PyArrayMethods};
use pyo3::prelude::*;
use std::sync::Arc;

/// A device matrix of any element type.
enum AnyMatrix {
    F32(DeviceMatrix<f32>),
    F64(DeviceMatrix<f64>),
    C32(DeviceMatrix<c32>),
    C64(DeviceMatrix<c64>),
}

/// Runs `$body` with `$m` bound to the typed matrix and `$t` to its element type.
macro_rules! with_matrix {
    ($any:expr, $m:ident, $t:ident, $body:expr) => {
        match $any {
            AnyMatrix::F32($m) => {
                type $t = f32;
                $body
            }
            AnyMatrix::F64($m) => {
                type $t = f64;
                $body
            }
            AnyMatrix::C32($m) => {
                type $t = c32;
                $body
            }
            AnyMatrix::C64($m) => {
                type $t = c64;
                $body
            }
        }
    };
}

impl AnyMatrix {
    fn raw(&self) -> (u64, usize, usize, usize, DType) {
        with_matrix!(self, m, T, {
            let r = m.raw();
            (r.addr, m.rows(), m.cols(), m.ld(), <T as Scalar>::DTYPE)
        })
    }
}

/// A matrix in a device's memory, made by `hetblas.to_device` or `hetblas.empty`, or returned
/// by a routine whose operands were there. `numpy()` copies it to the host; `__dlpack__`
/// lends it to CuPy or PyTorch (CUDA and HIP devices) without a copy.
#[pyclass(module = "hetblas._native", frozen)]
pub struct DeviceArray {
    mat: Arc<AnyMatrix>,
    /// The Runtime's index of the device.
    device: usize,
    /// Its label ("cuda:0").
    label: String,
    /// DLPack's name for the device.
    dl_device: (i32, i32),
    /// The array is the transpose of the stored column-major matrix.
    t: bool,
}

impl DeviceArray {
    /// The shape the caller sees and its strides in elements.
    fn view(&self) -> ((usize, usize), (i64, i64)) {
        let (_, rows, cols, ld, _) = self.mat.raw();
        if self.t {
            ((cols, rows), (ld as i64, 1))
        } else {
            ((rows, cols), (1, ld as i64))
        }
    }

    /// The array as an operand of a call.
    pub fn operand(&self, name: &'static str) -> Operand {
        let (addr, _, _, _, dt) = self.mat.raw();
        let ((rows, cols), (rs, cs)) = self.view();
        Operand::device_owned(
            name,
            dt,
            (rows, cols),
            (rs, cs),
            addr,
            Place::Device(self.device),
        )
    }

    fn new(rt: &Runtime, mat: AnyMatrix, device: usize, t: bool) -> DeviceArray {
        let info = rt.devices()[device].info().clone();
        let dl_type = match info.backend.as_str() {
            "cuda" => dlpack::device_type::CUDA,
            "hip" => dlpack::device_type::ROCM,
            "cpu" => dlpack::device_type::CPU,
            _ => dlpack::device_type::EXT_DEV,
        };
        DeviceArray {
            mat: Arc::new(mat),
            device,
            label: info.label(),
            dl_device: (dl_type, info.index as i32),
            t,
        }
    }
}

#[pymethods]
impl DeviceArray {
    /// `(rows, cols)`.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        self.view().0
    }

    /// Number of dimensions (always 2).
    #[getter]
    fn ndim(&self) -> usize {
        2
    }

    /// The element type, as a NumPy dtype.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> Bound<'py, PyArrayDescr> {
        with_matrix!(&*self.mat, _m, T, dtype::<T>(py))
    }

    /// The Runtime's index of the device holding the array (see `hetblas.devices()`).
    #[getter]
    fn device(&self) -> usize {
        self.device
    }

    /// The device's label ("cuda:0", "emulated:1").
    #[getter]
    fn device_label(&self) -> &str {
        &self.label
    }

    /// The transpose: a view of the same memory.
    #[getter]
    #[allow(non_snake_case)] // reason: NumPy's name for the transpose
    fn T(&self) -> DeviceArray {
        DeviceArray {
            mat: self.mat.clone(),
            device: self.device,
            label: self.label.clone(),
            dl_device: self.dl_device,
            t: !self.t,
        }
    }

    /// A copy in host memory, as a NumPy array (Fortran- or C-ordered as the device matrix is).
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rt = crate::runtime::get(py)?;
        let (_, rows, cols, _, _) = self.mat.raw();
        let mat = self.mat.clone();
        // A Fortran-ordered (rows, cols) array is the column-major rows x cols matrix; a
        // C-ordered (cols, rows) one is too, read as the transpose.
        let shape = if self.t { [cols, rows] } else { [rows, cols] };
        with_matrix!(&*mat, m, T, {
            let out = PyArray2::<T>::zeros(py, shape, !self.t);
            let addr = out.data() as usize;
            py.detach(|| {
                // SAFETY: `out` is a new array of rows * cols elements that nothing else
                // references while the GIL is released here.
                let view =
                    unsafe { MatMut::from_raw_parts(addr as *mut T, rows, cols, rows.max(1)) };
                rt.download(m, view)
            })
            .map_err(to_py)?;
            Ok(out.into_any())
        })
    }

    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(value(
                "a DeviceArray is in device memory: a host array is always a copy",
            ));
        }
        let a = self.numpy(py)?;
        match dtype {
            Some(d) => a.call_method1("astype", (d,)),
            None => Ok(a),
        }
    }

    /// DLPack: the array lent without a copy (its memory stays valid while the consumer's
    /// array lives). hetblas's calls are synchronous, so there is nothing to wait for.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        slf: &Bound<'_, Self>,
        stream: Option<Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let _ = stream;
        let this = slf.get();
        if let Some(d) = dl_device {
            if d != this.dl_device {
                return Err(pyo3::exceptions::PyBufferError::new_err(format!(
                    "the array is on {}; dl_device {d:?} would need a copy (use .numpy())",
                    this.label
                )));
            }
        }
        if copy == Some(true) {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "copy=True is not supported; use .numpy() for a host copy",
            ));
        }
        let (addr, _, _, _, dt) = this.mat.raw();
        let ((rows, cols), (rs, cs)) = this.view();
        let e = dlpack::Export {
            owner: slf.clone().into_any().unbind(),
            data: addr,
            device_type: this.dl_device.0,
            device_id: this.dl_device.1,
            dtype: dt,
            shape: [rows as i64, cols as i64],
            strides: [rs, cs],
        };
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        dlpack::export(slf.py(), e, versioned)
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        self.dl_device
    }

    fn __repr__(&self) -> String {
        let (_, _, _, _, dt) = self.mat.raw();
        let (r, c) = self.view().0;
        format!(
            "DeviceArray(shape=({r}, {c}), dtype={}, device={})",
            dtype_name(dt),
            self.label
        )
    }
}

/// Copies a host array (NumPy, or any DLPack array in host memory) to a new matrix on device
/// `device`; returns the DeviceArray.
#[pyfunction]
pub fn to_device(py: Python<'_>, array: &Bound<'_, PyAny>, device: usize) -> PyResult<DeviceArray> {
    let rt = crate::runtime::get(py)?;
    check_device(rt, device)?;
    let op = Operand::read(rt, array, "array")?;
    if op.place != Place::Host {
        return Err(value(
            "array: to_device copies host arrays; this one is already in a device's memory",
        ));
    }
    let s = op.stored()?;
    let (addr, rows, cols, ld) = (s.addr as usize, s.rows, s.cols, s.ld);
    let mat = py
        .detach(|| -> hetblas::Result<AnyMatrix> {
            macro_rules! up {
                ($t:ty, $v:ident) => {{
                    // SAFETY: the caller's array spans `(cols - 1) * ld + rows` elements from
                    // `addr` (read from the array itself) and stays alive: `array` is held.
                    let view = unsafe { MatRef::from_raw_parts(addr as *const $t, rows, cols, ld) };
                    Ok(AnyMatrix::$v(rt.upload::<$t>(device, view)?))
                }};
            }
            match op.dtype {
                DType::F32 => up!(f32, F32),
                DType::F64 => up!(f64, F64),
                DType::C32 => up!(c32, C32),
                DType::C64 => up!(c64, C64),
            }
        })
        .map_err(to_py)?;
    Ok(DeviceArray::new(rt, mat, device, s.t))
}

/// An uninitialised `rows x cols` DeviceArray on `device` (Fortran order, or C order: the
/// transpose of a column-major `cols x rows` matrix).
#[pyfunction]
#[pyo3(signature = (rows, cols, dtype, device, order="F"))]
pub fn empty(
    py: Python<'_>,
    rows: usize,
    cols: usize,
    dtype: &str,
    device: usize,
    order: &str,
) -> PyResult<DeviceArray> {
    let rt = crate::runtime::get(py)?;
    check_device(rt, device)?;
    let t = match order {
        "F" => false,
        "C" => true,
        other => return Err(value(format!("order {other:?}: 'C' or 'F'"))),
    };
    let (r, c) = if t { (cols, rows) } else { (rows, cols) };
    let dt = parse_dtype(dtype)?;
    let mat = py
        .detach(|| -> hetblas::Result<AnyMatrix> {
            Ok(match dt {
                DType::F32 => AnyMatrix::F32(rt.alloc_matrix(device, r, c)?),
                DType::F64 => AnyMatrix::F64(rt.alloc_matrix(device, r, c)?),
                DType::C32 => AnyMatrix::C32(rt.alloc_matrix(device, r, c)?),
                DType::C64 => AnyMatrix::C64(rt.alloc_matrix(device, r, c)?),
            })
        })
        .map_err(to_py)?;
    Ok(DeviceArray::new(rt, mat, device, t))
}

/// The element type named as NumPy names it.
pub fn parse_dtype(name: &str) -> PyResult<DType> {
    match name {
        "float32" => Ok(DType::F32),
        "float64" => Ok(DType::F64),
        "complex64" => Ok(DType::C32),
        "complex128" => Ok(DType::C64),
        other => Err(crate::errors::type_error(format!(
            "dtype {other} is not supported (float32, float64, complex64 or complex128)"
        ))),
    }
}

fn check_device(rt: &Runtime, device: usize) -> PyResult<()> {
    if device >= rt.devices().len() {
        return Err(value(format!(
            "device {device}: there are {} devices (see hetblas.devices())",
            rt.devices().len()
        )));
    }
    Ok(())
}
