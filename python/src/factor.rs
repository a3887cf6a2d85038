//! The factorizations on Python arrays: Cholesky (POTRF) and LU with partial pivoting
//! (GETRF), in place on a Fortran-ordered matrix where it lives (the Python layer passes a
//! copy unless the caller allowed overwriting). The solves are composed in Python from these
//! and TRSM, so that a right-hand side on a device stays there.

use crate::errors::{to_py, value};
use crate::operand::{Operand, Place};
use crate::routines::{device_choice, dispatch, hold, output, uplo};
use hetblas::{c32, c64, DType, FactorOptions, FactorReport};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `routine` "potrf" (the `lower` or upper triangle of `a` becomes its Cholesky factor) or
/// "getrf" (`a` becomes L and U, the pivots 1-based in the report's "ipiv"); `a` square for
/// POTRF, Fortran-ordered, writable. The report's "info" is LAPACK's.
#[pyfunction]
#[pyo3(signature = (routine, a, lower, devices=None, trace=false))]
pub fn factor<'py>(
    py: Python<'py>,
    routine: &str,
    a: &Bound<'py, PyAny>,
    lower: bool,
    devices: Option<Vec<usize>>,
    trace: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let rt = crate::runtime::get(py)?;
    let lu = match routine {
        "potrf" => false,
        "getrf" => true,
        other => return Err(value(format!("unknown routine {other}"))),
    };
    let a = Operand::read(rt, a, "a")?;
    if !lu && a.rows != a.cols {
        return Err(value(format!(
            "cholesky: a has shape {}: it must be square",
            a.shape_text()
        )));
    }
    a.check_writable()?;
    let sa = a.stored()?;
    // A row-major matrix is its transpose in memory; the Python layer passes Fortran copies.
    if sa.t && sa.rows > 1 && sa.cols > 1 {
        return Err(value(
            "the factorizations work on Fortran-ordered arrays (hetblas.cholesky and \
             hetblas.lu_factor make such a copy unless overwrite_a=True)",
        ));
    }
    let (m, n) = (a.rows, a.cols);
    let mut opts = FactorOptions::default().trace(trace);
    opts.devices = device_choice(rt, &[&a], devices)?;
    let mut ipiv = vec![0i32; if lu { m.min(n) } else { 0 }];
    let r: FactorReport = py
        .detach(|| {
            dispatch!(a.dtype, T, {
                let mut ha = hold::<T>(rt, &sa)?;
                if lu {
                    rt.getrf(output(&sa, &mut ha), &mut ipiv, &opts)
                } else {
                    rt.potrf(uplo(lower), output(&sa, &mut ha), &opts)
                }
            })
        })
        .map_err(to_py)?;
    // Bytes between the host and the devices: all of them when A is on the host.
    crate::report::factor(py, &r, ipiv, sa.place == Place::Host)
}
