//! The routines on Python arrays: GEMM, the symmetric and Hermitian ones, TRSM/TRMM.
//!
//! Each reads its operands ([`Operand`]), checks them in the caller's terms (shapes as the
//! arrays have them, dtypes, a writable output that overlaps no input), turns the call into
//! the one on the column-major matrices the arrays are in memory (a C-ordered array is the
//! transpose of its memory: flags flip, nothing is copied), and runs it with the GIL released.
//!
//! Device operands are lent to the Runtime where they are (`borrow_matrix`); unless the caller
//! names the devices, a call with a device operand runs on the accelerators only, so that no
//! device operand is copied to the host for the CPU to take a share.

use crate::errors::{to_py, type_error, value};
use crate::operand::{dtype_name, Operand, Place, Stored};
use crate::report;
use hetblas::{
    c32, c64, DType, DeviceMatrix, Diag, GemmOptions, MatIn, MatMut, MatOut, MatRef, Runtime,
    Scalar, Side, SymOp, TriCallOptions, TriOptions, TriRoutine, Uplo,
};
use num_complex::Complex64;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Runs `$body` with `$t` the Rust element type of `$dtype`.
macro_rules! dispatch {
    ($dtype:expr, $t:ident, $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
            DType::C32 => {
                type $t = c32;
                $body
            }
            DType::C64 => {
                type $t = c64;
                $body
            }
        }
    };
}
pub(crate) use dispatch;

fn trans(t: bool) -> hetblas::Trans {
    if t {
        hetblas::Trans::T
    } else {
        hetblas::Trans::N
    }
}

pub(crate) fn uplo(lower: bool) -> Uplo {
    if lower {
        Uplo::Lower
    } else {
        Uplo::Upper
    }
}

/// Holds a device operand lent for the call (dropping it frees nothing).
pub(crate) type Held<T> = Option<DeviceMatrix<T>>;

/// Lends a stored operand's device memory, if it is on a device.
pub(crate) fn hold<T: Scalar>(rt: &Runtime, s: &Stored) -> hetblas::Result<Held<T>> {
    match s.place {
        Place::Host => Ok(None),
        Place::Device(d) => {
            // SAFETY: `s.addr` is memory of device `d` (the Runtime said so when the operand
            // was read) spanning the matrix (read from the array itself); the caller's array
            // object holds it for the whole call, and the overlap check kept outputs apart
            // from inputs.
            unsafe { rt.borrow_matrix::<T>(d, s.addr, s.rows, s.cols, s.ld) }.map(Some)
        }
    }
}

/// The input view of a stored operand (`held` its lent device matrix, if any).
fn input<'a, T: Scalar>(s: &Stored, held: &'a Held<T>) -> MatIn<'a, T> {
    match held {
        Some(m) => MatIn::Device(m),
        None => {
            // SAFETY: host memory of the caller's array, `(cols - 1) * ld + rows` elements
            // (read from the array), alive for the call, not written by it (outputs overlap
            // no input).
            MatIn::Host(unsafe { MatRef::from_raw_parts(s.addr as *const T, s.rows, s.cols, s.ld) })
        }
    }
}

/// The output view of a stored operand.
pub(crate) fn output<'a, T: Scalar>(s: &Stored, held: &'a mut Held<T>) -> MatOut<'a, T> {
    match held {
        Some(m) => MatOut::Device(m),
        None => {
            // SAFETY: as `input`; the array is writable and no input overlaps it (checked).
            MatOut::Host(unsafe { MatMut::from_raw_parts(s.addr as *mut T, s.rows, s.cols, s.ld) })
        }
    }
}

/// All operands in one dtype, or a TypeError naming them.
fn same_dtype(ops: &[&Operand]) -> PyResult<DType> {
    let d = ops[0].dtype;
    if let Some(o) = ops.iter().find(|o| o.dtype != d) {
        return Err(type_error(format!(
            "{} is {} and {} is {}: hetblas computes in one dtype; convert one first \
             (x.astype(...))",
            ops[0].name,
            dtype_name(d),
            o.name,
            dtype_name(o.dtype)
        )));
    }
    Ok(d)
}

/// A scalar for `dtype`: complex values only for complex types.
fn scalar_ok(name: &str, v: Complex64, dtype: DType) -> PyResult<()> {
    let complex = matches!(dtype, DType::C32 | DType::C64);
    if !complex && v.im != 0.0 {
        return Err(type_error(format!(
            "{name} = {v} is complex but the arrays are {}",
            dtype_name(dtype)
        )));
    }
    Ok(())
}

/// The devices a call may use: the caller's, or, with a device operand, the accelerators
/// (so that no device operand is copied to the host for the CPU).
pub(crate) fn device_choice(
    rt: &Runtime,
    ops: &[&Operand],
    devices: Option<Vec<usize>>,
) -> PyResult<Option<Vec<usize>>> {
    let n = rt.devices().len();
    if let Some(list) = &devices {
        if let Some(bad) = list.iter().find(|&&d| d >= n) {
            return Err(value(format!(
                "devices: {bad} is not a device index (there are {n}; see hetblas.devices())"
            )));
        }
        if list.is_empty() {
            return Err(value("devices: an empty list"));
        }
        return Ok(devices);
    }
    if ops.iter().any(|o| o.place != Place::Host) {
        let accelerators: Vec<usize> = rt
            .devices()
            .iter()
            .enumerate()
            .filter(|(_, d)| d.info().kind != hetblas_core::DeviceKind::Cpu)
            .map(|(i, _)| i)
            .collect();
        if !accelerators.is_empty() {
            return Ok(Some(accelerators));
        }
    }
    Ok(None)
}

/// `out = alpha * a @ b + beta * out` on 2-D arrays of one dtype, anywhere; returns the report.
#[pyfunction]
#[pyo3(signature = (a, b, out, alpha, beta, devices=None, trace=false))]
#[allow(clippy::too_many_arguments)] // reason: the routine's arguments and the options
pub fn gemm<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    alpha: Complex64,
    beta: Complex64,
    devices: Option<Vec<usize>>,
    trace: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let rt = crate::runtime::get(py)?;
    let a = Operand::read(rt, a, "a")?;
    let b = Operand::read(rt, b, "b")?;
    let c = Operand::read(rt, out, "out")?;
    let dtype = same_dtype(&[&a, &b, &c])?;
    if a.cols != b.rows {
        return Err(value(format!(
            "matmul: a has shape {} and b {}: a's columns ({}) must equal b's rows ({})",
            a.shape_text(),
            b.shape_text(),
            a.cols,
            b.rows
        )));
    }
    if (c.rows, c.cols) != (a.rows, b.cols) {
        return Err(value(format!(
            "matmul: out has shape {}; a @ b is ({}, {})",
            c.shape_text(),
            a.rows,
            b.cols
        )));
    }
    c.check_writable()?;
    c.check_apart(&a)?;
    c.check_apart(&b)?;
    scalar_ok("alpha", alpha, dtype)?;
    scalar_ok("beta", beta, dtype)?;
    let (sa, sb, sc) = (a.stored()?, b.stored()?, c.stored()?);
    let opts = GemmOptions::default()
        .device_list(device_choice(rt, &[&a, &b, &c], devices)?)
        .trace(trace);
    // C row-major is C^T = B^T A^T in memory: the operands swap and their flags flip.
    let (x, y, tx, ty) = if sc.t {
        (sb, sa, !sb.t, !sa.t)
    } else {
        (sa, sb, sa.t, sb.t)
    };
    let r = py
        .detach(|| {
            dispatch!(dtype, T, {
                let (hx, hy, mut hc) =
                    (hold::<T>(rt, &x)?, hold::<T>(rt, &y)?, hold::<T>(rt, &sc)?);
                rt.gemm_with(
                    trans(tx),
                    trans(ty),
                    T::from_c64(alpha),
                    input(&x, &hx),
                    input(&y, &hy),
                    T::from_c64(beta),
                    output(&sc, &mut hc),
                    &opts,
                )
            })
        })
        .map_err(to_py)?;
    report::gemm(py, rt, &r)
}

/// The symmetric and Hermitian routines: `routine` is syrk, herk, syr2k, her2k, symm or hemm
/// (see the Python functions of the same names for the arguments).
#[pyfunction]
#[pyo3(signature = (routine, a, b, out, alpha, beta, lower, trans_, side_left, devices=None, trace=false))]
#[allow(clippy::too_many_arguments)] // reason: the routines' arguments and the options
pub fn sym<'py>(
    py: Python<'py>,
    routine: &str,
    a: &Bound<'py, PyAny>,
    b: Option<&Bound<'py, PyAny>>,
    out: &Bound<'py, PyAny>,
    alpha: Complex64,
    beta: Complex64,
    lower: bool,
    trans_: bool,
    side_left: bool,
    devices: Option<Vec<usize>>,
    trace: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let rt = crate::runtime::get(py)?;
    let a = Operand::read(rt, a, "a")?;
    let b = b.map(|b| Operand::read(rt, b, "b")).transpose()?;
    let c = Operand::read(rt, out, "out")?;
    let two = matches!(routine, "syr2k" | "her2k");
    let multiply = matches!(routine, "symm" | "hemm");
    let herm = routine.starts_with('h');
    if !matches!(
        routine,
        "syrk" | "herk" | "syr2k" | "her2k" | "symm" | "hemm"
    ) {
        return Err(value(format!("unknown routine {routine}")));
    }
    let b = match (b, two || multiply) {
        (Some(b), true) => Some(b),
        (None, false) => None,
        (None, true) => return Err(value(format!("{routine} needs b"))),
        (Some(_), false) => return Err(value(format!("{routine} takes no b"))),
    };
    let mut ops = vec![&a, &c];
    if let Some(b) = &b {
        ops.insert(1, b);
    }
    let dtype = same_dtype(&ops)?;
    let complex = matches!(dtype, DType::C32 | DType::C64);
    if herm && !complex {
        return Err(type_error(format!(
            "{routine} is for complex arrays; for {} use {}",
            dtype_name(dtype),
            match routine {
                "herk" => "syrk",
                "her2k" => "syr2k",
                _ => "symm",
            }
        )));
    }
    scalar_ok("alpha", alpha, dtype)?;
    scalar_ok("beta", beta, dtype)?;
    // HERK and HER2K scale C by a real beta (HEMM's is complex, as ZHEMM's).
    if matches!(routine, "herk" | "her2k") && beta.im != 0.0 {
        return Err(type_error(format!("{routine}: beta must be real")));
    }
    if routine == "herk" && alpha.im != 0.0 {
        return Err(type_error("herk: alpha must be real"));
    }
    // Shapes, in the caller's terms.
    if multiply {
        let b = b.as_ref().expect("checked above");
        let (m, n) = (c.rows, c.cols);
        let k = if side_left { m } else { n };
        if (a.rows, a.cols) != (k, k) {
            return Err(value(format!(
                "{routine}: a has shape {}; with side='{}' and out {} it must be ({k}, {k})",
                a.shape_text(),
                if side_left { "left" } else { "right" },
                c.shape_text()
            )));
        }
        if (b.rows, b.cols) != (m, n) {
            return Err(value(format!(
                "{routine}: b has shape {} and out {}: they must be equal",
                b.shape_text(),
                c.shape_text()
            )));
        }
    } else {
        let n = c.rows;
        if c.cols != n {
            return Err(value(format!(
                "{routine}: out has shape {}; it must be square",
                c.shape_text()
            )));
        }
        // op(A) is n x k: A itself, or its transpose with trans.
        let (an, _) = if trans_ {
            (a.cols, a.rows)
        } else {
            (a.rows, a.cols)
        };
        if an != n {
            return Err(value(format!(
                "{routine}: a has shape {} and out {}: {} must have {n} {}",
                a.shape_text(),
                c.shape_text(),
                if trans_ { "a.T" } else { "a" },
                "rows"
            )));
        }
        if let Some(b) = &b {
            if (b.rows, b.cols) != (a.rows, a.cols) {
                return Err(value(format!(
                    "{routine}: b has shape {} and a {}: they must be equal",
                    b.shape_text(),
                    a.shape_text()
                )));
            }
        }
    }
    c.check_writable()?;
    c.check_apart(&a)?;
    if let Some(b) = &b {
        c.check_apart(b)?;
    }
    let sa = a.stored()?;
    let sb = b.as_ref().map(Operand::stored).transpose()?;
    let sc = c.stored()?;
    let same_order = |names: &str| {
        value(format!(
            "{routine} on complex arrays needs {names} in one memory order (all C- or all \
             Fortran-ordered): the other order would be a conjugate, which BLAS cannot read \
             in place; pass copies in one order"
        ))
    };
    let ck = |tb: bool| {
        if herm {
            hetblas::Trans::C
        } else {
            hetblas::Trans::T
        }
        .pick(tb)
    };
    let mut alpha_s = alpha;
    let op = if multiply {
        let sb = sb.expect("checked above");
        // C^T = B^T A^T: the side flips with C's order; A (symmetric or Hermitian: its
        // transpose is itself or its conjugate, stored in the other triangle) keeps its values.
        if sb.t != sc.t {
            return Err(value(format!(
                "{routine}: b and out must be in one memory order (both C- or both \
                 Fortran-ordered)"
            )));
        }
        if herm && sa.t != sc.t {
            return Err(same_order("a, b and out"));
        }
        SymOp::Multiply {
            side: if side_left != sc.t {
                Side::Left
            } else {
                Side::Right
            },
            uplo: uplo(lower != sa.t),
            herm,
        }
    } else {
        // A row-major A is A^T in memory: op flips; C's triangle flips with its order.
        if let Some(sb) = &sb {
            if sb.t != sa.t {
                return Err(value(format!(
                    "{routine}: a and b must be in one memory order (both C- or both \
                     Fortran-ordered)"
                )));
            }
        }
        if herm && sa.t != sc.t {
            return Err(same_order(if two { "a, b and out" } else { "a and out" }));
        }
        if herm && sc.t {
            // In memory C^T = conj(C): the products conjugate, and so does alpha.
            alpha_s = alpha.conj();
        }
        SymOp::Rank {
            uplo: uplo(lower != sc.t),
            trans: ck(trans_ != sa.t),
            two,
            herm,
        }
    };
    let opts = GemmOptions::default()
        .device_list(device_choice(rt, &ops, devices)?)
        .trace(trace);
    let r = py
        .detach(|| {
            dispatch!(dtype, T, {
                let ha = hold::<T>(rt, &sa)?;
                let hb = match &sb {
                    Some(s) => hold::<T>(rt, s)?,
                    None => None,
                };
                let mut hc = hold::<T>(rt, &sc)?;
                let b_in = sb.as_ref().map(|s| input(s, &hb));
                rt.sym_with(
                    op,
                    T::from_c64(alpha_s),
                    input(&sa, &ha),
                    b_in,
                    T::from_c64(beta),
                    output(&sc, &mut hc),
                    &opts,
                )
            })
        })
        .map_err(to_py)?;
    report::gemm(py, rt, &r)
}

/// `Trans::N` unless `t`, else `self`.
trait Pick {
    fn pick(self, t: bool) -> hetblas::Trans;
}

impl Pick for hetblas::Trans {
    fn pick(self, t: bool) -> hetblas::Trans {
        if t {
            self
        } else {
            hetblas::Trans::N
        }
    }
}

/// TRSM (`routine` "trsm": b := alpha op(a)^-1 b, or b op(a)^-1 on the right) and TRMM
/// ("trmm": b := alpha op(a) b, or b op(a)), b overwritten; `trans` is "N", "T" or "C".
#[pyfunction]
#[pyo3(signature = (routine, a, b, alpha, side_left, lower, trans_, unit_diagonal, devices=None, trace=false))]
#[allow(clippy::too_many_arguments)] // reason: the routines' arguments and the options
pub fn tri<'py>(
    py: Python<'py>,
    routine: &str,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    alpha: Complex64,
    side_left: bool,
    lower: bool,
    trans_: &str,
    unit_diagonal: bool,
    devices: Option<Vec<usize>>,
    trace: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let rt = crate::runtime::get(py)?;
    let which = match routine {
        "trsm" => TriRoutine::Trsm,
        "trmm" => TriRoutine::Trmm,
        other => return Err(value(format!("unknown routine {other}"))),
    };
    let a = Operand::read(rt, a, "a")?;
    let b = Operand::read(rt, b, "b")?;
    let dtype = same_dtype(&[&a, &b])?;
    scalar_ok("alpha", alpha, dtype)?;
    let complex = matches!(dtype, DType::C32 | DType::C64);
    let op = match trans_ {
        "N" => hetblas::Trans::N,
        "T" => hetblas::Trans::T,
        "C" if complex => hetblas::Trans::C,
        "C" => hetblas::Trans::T,
        other => return Err(value(format!("trans {other:?}: 'N', 'T' or 'C'"))),
    };
    let k = if side_left { b.rows } else { b.cols };
    if (a.rows, a.cols) != (k, k) {
        return Err(value(format!(
            "{routine}: a has shape {} and b {}: with side='{}' a must be ({k}, {k})",
            a.shape_text(),
            b.shape_text(),
            if side_left { "left" } else { "right" }
        )));
    }
    b.check_writable()?;
    b.check_apart(&a)?;
    let (sa, sb) = (a.stored()?, b.stored()?);
    // B row-major is B^T in memory: X^T = B^T op(A)^-T, the side flips and op(A) transposes;
    // A row-major is A^T in memory: its triangle flips and op transposes again.
    let op_s = if sa.t == sb.t {
        op
    } else {
        match op {
            hetblas::Trans::N => hetblas::Trans::T,
            hetblas::Trans::T => hetblas::Trans::N,
            hetblas::Trans::C => {
                return Err(value(format!(
                    "{routine} with trans='C' on complex arrays needs a and b in one memory \
                     order (both C- or both Fortran-ordered): pass copies in one order"
                )))
            }
        }
    };
    let opts = TriOptions {
        side: if side_left != sb.t {
            Side::Left
        } else {
            Side::Right
        },
        uplo: uplo(lower != sa.t),
        transa: op_s,
        diag: if unit_diagonal {
            Diag::Unit
        } else {
            Diag::NonUnit
        },
    };
    let call = TriCallOptions::default()
        .device_list(device_choice(rt, &[&a, &b], devices)?)
        .trace(trace);
    let r = py
        .detach(|| {
            dispatch!(dtype, T, {
                let ha = hold::<T>(rt, &sa)?;
                let mut hb = hold::<T>(rt, &sb)?;
                rt.tri_with(
                    which,
                    opts,
                    T::from_c64(alpha),
                    input(&sa, &ha),
                    output(&sb, &mut hb),
                    &call,
                )
            })
        })
        .map_err(to_py)?;
    report::tri(py, &r)
}
