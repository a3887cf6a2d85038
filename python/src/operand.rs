//! Python arrays as BLAS operands: where their memory is, its element type, and the
//! column-major view of it that BLAS takes.
//!
//! An array is accepted when one of its dimensions is contiguous and the other steps by at
//! least its extent (what BLAS's leading dimension can express, as ndarray's `is_blas_2d`
//! says): C-ordered arrays, Fortran-ordered ones, and such views of larger ones (`a[:, :k]`,
//! `a.T`). A C-ordered `m x n` array is read as the column-major `n x m` matrix it is in
//! memory, its transpose; the routines turn that into a transposition flag, never a copy.
//! Other arrays (a step inside both dimensions, negative strides) are refused with the copy
//! to make named, since copying a large array behind the caller's back is what hetblas exists
//! to avoid.

use crate::device_array::DeviceArray;
use crate::dlpack;
use crate::errors::{type_error, value};
use hetblas::{DType, Runtime};
use numpy::prelude::*;
use numpy::{dtype, PyUntypedArray};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Where an operand's memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Host,
    /// A device of the Runtime (its index).
    Device(usize),
}

/// An array read for a call: what it is, where, and what keeps it valid.
pub struct Operand {
    /// The argument's name in messages ("a", "b", "out").
    pub name: &'static str,
    pub dtype: DType,
    /// The shape the caller sees.
    pub rows: usize,
    pub cols: usize,
    /// Strides in elements.
    pub row_stride: i64,
    pub col_stride: i64,
    /// Address of element (0, 0).
    pub addr: u64,
    pub place: Place,
    pub writable: bool,
    /// What the caller's library calls the array's type, for messages.
    pub kind: &'static str,
    /// A DLPack capsule to release after the call (its destructor gives the tensor back).
    _capsule: Option<Py<PyAny>>,
}

/// The column-major matrix an operand is in memory: the array itself (`t == false`) or its
/// transpose (`t == true`, a C-ordered array).
#[derive(Clone, Copy, Debug)]
pub struct Stored {
    pub addr: u64,
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
    pub t: bool,
    pub place: Place,
}

impl Stored {
    /// Elements from the first to the last that the matrix spans.
    pub fn span(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.cols - 1) * self.ld + self.rows
        }
    }
}

/// The element type's NumPy name.
pub fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::C32 => "complex64",
        DType::C64 => "complex128",
    }
}

const SUPPORTED: &str = "float32, float64, complex64 or complex128";

impl Operand {
    /// Reads `obj`: a NumPy array, a hetblas DeviceArray, or any array with `__dlpack__`.
    pub fn read(rt: &Runtime, obj: &Bound<'_, PyAny>, name: &'static str) -> PyResult<Operand> {
        if let Ok(d) = obj.cast::<DeviceArray>() {
            return Ok(d.get().operand(name));
        }
        if let Ok(arr) = obj.cast::<PyUntypedArray>() {
            return numpy_operand(arr, name);
        }
        if obj.hasattr("__dlpack__")? {
            return dlpack_operand(rt, obj, name);
        }
        Err(type_error(format!(
            "{name}: expected a NumPy array or an array with __dlpack__ (CuPy, PyTorch, ...), \
             got {}",
            obj.get_type().name()?
        )))
    }

    /// The column-major matrix this array is in memory.
    pub fn stored(&self) -> PyResult<Stored> {
        let (r, c) = (self.rows, self.cols);
        let (rs, cs) = (self.row_stride, self.col_stride);
        let make = |rows: usize, cols: usize, ld: usize, t: bool| Stored {
            addr: self.addr,
            rows,
            cols,
            ld,
            t,
            place: self.place,
        };
        if r == 0 || c == 0 {
            return Ok(make(r, c, r.max(1), false));
        }
        let fits = |stride: i64, extent: usize| stride >= extent as i64;
        // Columns contiguous: the array itself, leading dimension the column stride.
        if (rs == 1 || r == 1) && (c == 1 || fits(cs, r)) {
            let ld = if c == 1 { r } else { cs as usize };
            return Ok(make(r, c, ld.max(r), false));
        }
        // Rows contiguous: its transpose, leading dimension the row stride.
        if (cs == 1 || c == 1) && (r == 1 || fits(rs, c)) {
            let ld = if r == 1 { c } else { rs as usize };
            return Ok(make(c, r, ld.max(c), true));
        }
        let size = self.dtype.size() as i64;
        let why = if rs < 0 || cs < 0 {
            "negative strides (a reversed view such as a[::-1])"
        } else {
            "neither its rows nor its columns are contiguous (a view with a step such as \
             a[:, ::2])"
        };
        Err(value(format!(
            "{}: strides ({}, {}) bytes: {why}; BLAS needs one contiguous dimension: pass a \
             copy (numpy.ascontiguousarray({0}) or the same in your array library)",
            self.name,
            rs * size,
            cs * size
        )))
    }

    /// Fails unless the array can be written.
    pub fn check_writable(&self) -> PyResult<()> {
        if self.writable {
            Ok(())
        } else {
            Err(value(format!(
                "{}: the array is read-only; pass a writable output",
                self.name
            )))
        }
    }

    /// Fails when `self` (an output) shares memory with `input`.
    pub fn check_apart(&self, input: &Operand) -> PyResult<()> {
        let (Ok(o), Ok(i)) = (self.stored(), input.stored()) else {
            return Ok(()); // refused elsewhere with its own message
        };
        let size = self.dtype.size() as u64;
        let (os, is) = (o.span() as u64 * size, i.span() as u64 * size);
        if os == 0 || is == 0 {
            return Ok(());
        }
        if o.addr < i.addr + is && i.addr < o.addr + os {
            return Err(value(format!(
                "{} shares memory with {}: the output must not overlap an input (pass a \
                 separate output, or a copy of the input)",
                self.name, input.name
            )));
        }
        Ok(())
    }

    /// A matrix of the Runtime's own in device memory (a `DeviceArray`).
    pub fn device_owned(
        name: &'static str,
        dtype: DType,
        (rows, cols): (usize, usize),
        (row_stride, col_stride): (i64, i64),
        addr: u64,
        place: Place,
    ) -> Operand {
        Operand {
            name,
            dtype,
            rows,
            cols,
            row_stride,
            col_stride,
            addr,
            place,
            writable: true,
            kind: "hetblas.DeviceArray",
            _capsule: None,
        }
    }

    /// The shape as `(rows, cols)` text.
    pub fn shape_text(&self) -> String {
        format!("({}, {})", self.rows, self.cols)
    }
}

/// The element type of a NumPy array, if hetblas computes in it.
fn numpy_dtype(arr: &Bound<'_, PyUntypedArray>) -> Option<DType> {
    let py = arr.py();
    let d = arr.dtype();
    if d.is_equiv_to(&dtype::<f64>(py)) {
        Some(DType::F64)
    } else if d.is_equiv_to(&dtype::<f32>(py)) {
        Some(DType::F32)
    } else if d.is_equiv_to(&dtype::<num_complex::Complex64>(py)) {
        Some(DType::C64)
    } else if d.is_equiv_to(&dtype::<num_complex::Complex32>(py)) {
        Some(DType::C32)
    } else {
        None
    }
}

fn check_2d(name: &str, shape: &[usize]) -> PyResult<(usize, usize)> {
    match shape {
        [r, c] => Ok((*r, *c)),
        _ => Err(value(format!(
            "{name}: expected a 2-D array, got {}-D with shape {shape:?}",
            shape.len()
        ))),
    }
}

fn numpy_operand(arr: &Bound<'_, PyUntypedArray>, name: &'static str) -> PyResult<Operand> {
    let (rows, cols) = check_2d(name, arr.shape())?;
    let dtype = numpy_dtype(arr).ok_or_else(|| {
        type_error(format!(
            "{name}: dtype {} is not supported ({SUPPORTED}, native byte order)",
            arr.dtype()
        ))
    })?;
    let size = dtype.size() as isize;
    let strides = arr.strides();
    if strides.iter().any(|s| s % size != 0) {
        return Err(value(format!(
            "{name}: strides {strides:?} are not whole elements of {} bytes",
            size
        )));
    }
    if !arr.is_aligned() {
        return Err(value(format!("{name}: the array's data is not aligned")));
    }
    // SAFETY: the fields of the live array object `arr` holds (the GIL is held); read, not
    // kept.
    let (data, flags) = unsafe {
        let f = numpy::npyffi::objects::_PyArray_GET_ITEM_DATA(arr.as_array_ptr());
        ((*f).data as u64, (*f).flags)
    };
    Ok(Operand {
        name,
        dtype,
        rows,
        cols,
        row_stride: (strides[0] / size) as i64,
        col_stride: (strides[1] / size) as i64,
        addr: data,
        place: Place::Host,
        writable: flags & numpy::npyffi::NPY_ARRAY_WRITEABLE != 0,
        kind: "numpy.ndarray",
        _capsule: None,
    })
}

/// The Runtime device a DLPack device `(type, id)` is, when the Runtime has it.
pub fn runtime_device(rt: &Runtime, device_type: i32, device_id: i32) -> Option<usize> {
    let backend = match device_type {
        dlpack::device_type::CUDA => "cuda",
        dlpack::device_type::ROCM => "hip",
        dlpack::device_type::EXT_DEV => "emulated",
        _ => return None,
    };
    rt.devices().iter().position(|d| {
        let i = d.info();
        i.backend == backend && i.index as i64 == device_id as i64
    })
}

fn dlpack_operand(rt: &Runtime, obj: &Bound<'_, PyAny>, name: &'static str) -> PyResult<Operand> {
    let t = dlpack::import(obj)?;
    let shape: Vec<usize> = t
        .shape
        .iter()
        .map(|&s| usize::try_from(s).map_err(|_| value(format!("{name}: negative dimension"))))
        .collect::<PyResult<_>>()?;
    let (rows, cols) = check_2d(name, &shape)?;
    let dtype = t
        .dtype
        .clone()
        .map_err(|d| type_error(format!("{name}: dtype {d} is not supported ({SUPPORTED})")))?;
    let empty = rows == 0 || cols == 0;
    let place = if t.device_type == dlpack::device_type::CPU {
        Place::Host
    } else {
        // The Runtime says which of its devices owns the memory; an empty array may have no
        // memory, and is placed on the device its library names.
        match rt.device_owning(t.data) {
            Some(i) => Place::Device(i),
            None if empty => runtime_device(rt, t.device_type, t.device_id)
                .map(Place::Device)
                .unwrap_or(Place::Host),
            None if dlpack::host_accessible(t.device_type) => Place::Host,
            None => {
                let labels: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
                return Err(value(format!(
                    "{name}: the array is on {}:{}, which is not a device of this hetblas \
                     runtime (its devices: {}; see hetblas.devices() and \
                     hetblas.backends())",
                    dlpack::device_type_name(t.device_type),
                    t.device_id,
                    labels.join(", ")
                )));
            }
        }
    };
    Ok(Operand {
        name,
        dtype,
        rows,
        cols,
        row_stride: t.strides[0],
        col_stride: t.strides[1],
        addr: t.data,
        place,
        writable: !t.read_only,
        kind: "DLPack array",
        _capsule: Some(t.capsule),
    })
}

/// Where an array is and what it holds, for the Python layer's choice of the output:
/// `{"device": None or a device index, "dtype": "float64", "shape": (r, c)}`.
#[pyfunction]
pub fn locate<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let rt = crate::runtime::get(py)?;
    let op = Operand::read(rt, obj, "array")?;
    let d = PyDict::new(py);
    d.set_item(
        "device",
        match op.place {
            Place::Host => None,
            Place::Device(i) => Some(i),
        },
    )?;
    d.set_item("dtype", dtype_name(op.dtype))?;
    d.set_item("shape", (op.rows, op.cols))?;
    d.set_item("writable", op.writable)?;
    Ok(d)
}
